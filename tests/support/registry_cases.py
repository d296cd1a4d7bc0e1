"""Test cases generated from the op registry, shared by the registry-driven test files.

Per op: its ``examples(rng)`` if it has them; otherwise (elementwise ops) random values in
its ``domain`` over broadcasting shape families, every combination for its operands. A call
with several results (``eigh``, ``scan``) gives one case per result: the case's Expr is that
result's projection, its reference that entry of the op's ``impl``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from itertools import product

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.expr import build, projections
from symgrad.ir.op import Results
from symgrad.ir.shapes import fmt
from symgrad.ops import REGISTRY, Op

_CONDITION_PARAMS = {"condition", "cond", "c"}  # elementwise operands that are boolean


@dataclass
class Case:
    op: Op
    arrays: list
    attrs: dict
    result: int | None = None  # which result of a call with several results

    def build(self):
        """The op applied to one variable per operand (``a0``, ``a1``, ...) (a call's result
        ``result``), and inputs."""
        names = [f"a{k}" for k in range(len(self.arrays))]
        xs = [sg.var(n, a.shape, a.dtype.name) for n, a in zip(names, self.arrays)]
        out = build(self.op, xs, {**self.op.attrs, **self.attrs})
        if self.result is not None:
            out = projections(out)[self.result]
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
                results = _results(case)
                if results is None:
                    out.append(pytest.param(case, id=f"{name}-example{k}"))
                for j in results or ():
                    case = Case(op, case.arrays, case.attrs, j)
                    out.append(pytest.param(case, id=f"{name}-example{k}-result{j}"))
        elif op.arity in (1, 2, 3) and op.domain is not None:
            for shapes in product(families, repeat=op.arity):
                arrays = [_sample(op, p.name, s, rng) for p, s in zip(op.signature.params, shapes)]
                label = "-".join(fmt(s).replace(" ", "") for s in shapes)
                out.append(pytest.param(Case(op, arrays, {}), id=f"{name}-{label}"))
    return out


def _results(case: Case) -> list[int] | None:
    """The results of the case's call that hold values (an empty one, lstsq's residuals
    of a wide matrix, is left out); None for a plain op."""
    attrs = _prepared(case)
    dtype = case.op.infer(tuple(a.shape for a in case.arrays),
                          tuple(a.dtype.name for a in case.arrays), attrs)[1]
    if type(dtype) is not Results:
        return None
    return [k for k, (shape, _) in enumerate(dtype) if 0 not in shape]


def _prepared(case: Case) -> dict:
    op = case.op
    attrs = {**op.attrs, **case.attrs}
    if op.prepare is not None:
        shapes = tuple(a.shape for a in case.arrays)
        attrs = op.prepare(shapes, tuple(a.dtype.name for a in case.arrays), attrs)
    return attrs


def impl(case: Case):
    """The op's prepared attributes and its ``impl`` on the case's arrays. (The built node
    may be another op's when the stanza folds, so its attrs are not used here.)"""
    attrs = _prepared(case)
    with np.errstate(all="ignore"):
        value = case.op.impl(*case.arrays, **attrs)
    return attrs, value if case.result is None else value[case.result]
