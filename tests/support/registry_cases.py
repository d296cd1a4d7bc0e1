"""Test cases generated from the op registry, shared by the registry-driven test files.

Per op: its ``examples(rng)`` if it has them; otherwise (elementwise ops) random values in
its ``domain`` over broadcasting shape families, every combination for its operands.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from itertools import product

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.expr import build
from symgrad.ir.shapes import fmt
from symgrad.ops import REGISTRY, Op

_CONDITION_PARAMS = {"condition", "cond", "c"}  # elementwise operands that are boolean


@dataclass
class Case:
    op: Op
    arrays: list
    attrs: dict

    def build(self):
        """The op applied to one variable per operand (``a0``, ``a1``, ...), and inputs."""
        names = [f"a{k}" for k in range(len(self.arrays))]
        xs = [sg.var(n, a.shape, a.dtype.name) for n, a in zip(names, self.arrays)]
        out = build(self.op, xs, {**self.op.attrs, **self.attrs})
        return out, xs, dict(zip(names, self.arrays))


def _sample(op: Op, param: str, shape, rng) -> np.ndarray:
    if param in _CONDITION_PARAMS:
        return rng.random(shape) < 0.5 if shape else np.bool_(rng.random() < 0.5)
    lo, hi = op.domain
    return np.asarray(rng.uniform(lo, hi, size=shape), dtype=np.float64)


def registry_cases(families) -> list:
    """One ``pytest.param(Case)`` per example of every op, ids ``<op>-<example>``."""
    out = []
    for name, op in sorted(REGISTRY.items()):
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        if op.examples is not None:
            for k, (arrays, attrs) in enumerate(op.examples(rng)):
                case = Case(op, [np.asarray(a) for a in arrays], dict(attrs))
                out.append(pytest.param(case, id=f"{name}-example{k}"))
        elif op.arity in (1, 2, 3) and op.domain is not None:
            for shapes in product(families, repeat=op.arity):
                arrays = [_sample(op, p.name, s, rng) for p, s in zip(op.signature.params, shapes)]
                label = "-".join(fmt(s).replace(" ", "") for s in shapes)
                out.append(pytest.param(Case(op, arrays, {}), id=f"{name}-{label}"))
    return out


def impl(case: Case):
    """The op's prepared attributes and its ``impl`` on the case's arrays. (The built node
    may be another op's when the stanza folds, so its attrs are not used here.)"""
    op = case.op
    attrs = {**op.attrs, **case.attrs}
    if op.prepare is not None:
        shapes = tuple(a.shape for a in case.arrays)
        attrs = op.prepare(shapes, tuple(a.dtype.name for a in case.arrays), attrs)
    with np.errstate(all="ignore"):
        return attrs, op.impl(*case.arrays, **attrs)
