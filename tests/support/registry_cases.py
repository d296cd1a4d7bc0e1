"""Test cases generated from the op registry, shared by the registry-driven test files.

Per op: its ``examples(rng)`` if it has them; otherwise (elementwise ops) random values in
its ``domain`` over broadcasting shape families, every combination for its operands. A call
with several results (``eigh``, ``scan``) gives one case per result: the case's Expr is that
result's projection, its reference that entry of the op's ``impl``.

Complex cases (:func:`complex_cases`), for every op that takes complex values (its
``complex`` field is True): its examples holding complex arrays if it has some; else its
real examples with every float operand made complex, and (two or more float operands) with
the first one complex and the others real; elementwise ops: values whose real part is in
the op's domain and whose imaginary part is up to a quarter of its width, complex and mixed
with real operands.
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

    @property
    def complex(self) -> bool:
        """Whether an operand is complex, or the result (a conversion to complex, a Fourier
        transform of real values)."""
        if any(np.iscomplexobj(a) for a in self.arrays):
            return True
        value = impl(self)[1]
        values = value if isinstance(value, (tuple, list)) else (value,)
        return any(np.iscomplexobj(v) for v in values)

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
                if case.complex:
                    continue
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



_PAIRS = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (3, 4))]


def _complex_sample(op: Op, param: str, shape, rng, kind: str) -> np.ndarray:
    """A real operand (``kind`` "r"), or a complex one whose real part is in the op's
    domain and whose imaginary part is within a quarter of its width."""
    x = _sample(op, param, shape, rng)
    if kind == "r" or x.dtype == bool:
        return x
    lo, hi = op.domain
    return x + 1j * rng.uniform(-(hi - lo) / 4, (hi - lo) / 4, size=shape)


def _made_complex(arrays: list, which, rng) -> list:
    """The float64 operands among ``arrays`` at positions ``which`` made complex."""
    out = []
    for k, a in enumerate(arrays):
        if a.dtype.kind == "f" and k in which:
            a = a + 1j * rng.uniform(-1.0, 1.0, size=a.shape).astype(a.dtype)
        out.append(a)
    return out


def complex_cases(families) -> list:
    """One ``pytest.param(Case)`` per complex case of every op taking complex values (and
    each example of an op with a complex result: ``rfftn``), ids ``<op>-complex-<example>``."""
    out = []
    for name, op in sorted(REGISTRY.items()):
        if op.arity == 0 or (op.complex is not True and op.examples is None):
            continue
        rng = np.random.default_rng(zlib.crc32(f"complex {name}".encode()))
        if op.examples is not None:
            cases = [Case(op, [np.asarray(a) for a in arrays], dict(attrs))
                     for arrays, attrs in op.examples(rng)]
            own = [c for c in cases if c.complex]
            for k, case in enumerate(own):
                results = _results(case)
                if results is None:
                    out.append(pytest.param(case, id=f"{name}-complex-example{k}"))
                for j in results or ():
                    out.append(pytest.param(Case(op, case.arrays, case.attrs, j),
                                            id=f"{name}-complex-example{k}-result{j}"))
            if own or op.complex is not True:  # a real op with a complex result: its own
                continue
            for k, case in enumerate(cases):
                floats = [j for j, a in enumerate(case.arrays) if a.dtype.kind == "f"]
                variants = [("", floats)] + ([("mixed", floats[:1])] if len(floats) > 1 else [])
                for tag, which in variants:
                    c = Case(op, _made_complex(case.arrays, set(which), rng), case.attrs)
                    if c.complex:
                        out.append(pytest.param(c, id=f"{name}-complex{tag}-example{k}"))
        elif op.arity in (1, 2, 3) and op.domain is not None:
            shapes = ([(s,) for s in families] if op.arity == 1 else _PAIRS if op.arity == 2
                      else [((3, 4),) + p for p in _PAIRS])
            kinds = {1: ["c"], 2: ["cc", "cr", "rc"], 3: ["rcc", "rcr", "rrc"]}[op.arity]
            for shape in shapes:
                for kind in kinds:
                    arrays = [_complex_sample(op, p.name, s, rng, k) for p, s, k in
                              zip(op.signature.params, shape, kind)]
                    label = "-".join(fmt(s).replace(" ", "") for s in shape)
                    out.append(pytest.param(Case(op, arrays, {}),
                                            id=f"{name}-complex-{kind}-{label}"))
    return out
