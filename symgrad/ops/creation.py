"""Leaves and constant-makers: ``var``, ``const``, ``zeros_like``, ``ones_like``, ``eye``."""

from __future__ import annotations

import math

import numpy as np

from ..shapes import check_int
from .registry import Op, register

_NUMPY_DTYPE = {"float64": "np.float64", "float32": "np.float32", "int64": "np.int64",
                "int32": "np.int32", "bool": "np.bool_"}


def scalar_source(v) -> str:
    """Exact Python/NumPy source for one number: ``np.inf``, ``-0.0``, ``5e-324``, ..."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    v = float(v)
    if math.isnan(v):
        return "np.nan"
    if math.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(v)


def constant_source(value: np.ndarray) -> str:
    """Source that rebuilds ``value`` exactly (dtype and shape included)."""
    if value.ndim == 0 and value.dtype in (np.float64, np.int64, np.bool_):
        return scalar_source(value.item())
    items = ", ".join(scalar_source(v) for v in value.ravel().tolist())
    text = f"np.array([{items}], dtype={_NUMPY_DTYPE[value.dtype.name]})"
    return text if value.ndim == 1 else f"{text}.reshape({value.shape!r})"


register(Op(
    name="const", arity=0, params=("=value",), attrs={"value": None},
    infer=lambda s, d, a: (a["value"].shape, a["value"].dtype.name),
    impl=lambda value: value, source=lambda names, a: constant_source(a["value"]),
    differentiable=False, domain=None, public=False, doc="a constant array",
))
register(Op(
    name="var", arity=0, params=("=name",), attrs={"name": None},
    infer=lambda s, d, a: ((), "float64"),  # never called: variables are made by Graph.var
    impl=None, source=lambda names, a: a["name"], differentiable=False, domain=None,
    public=False, doc="an input variable",
))
register(Op(
    name="zeros_like", arity=1, infer=lambda s, d, a: (s[0], d[0]), impl=np.zeros_like,
    source="np.zeros_like({0})", differentiable=False, sympy=None,
    doc="zeros of x's shape and dtype (no gradient flows through)",
))
register(Op(
    name="ones_like", arity=1, infer=lambda s, d, a: (s[0], d[0]), impl=np.ones_like,
    source="np.ones_like({0})", differentiable=False,
    doc="ones of x's shape and dtype (no gradient flows through)",
))


def _eye_infer(shapes, dtypes, attrs):
    n = check_int("eye", "N", attrs["N"])
    m = n if attrs["M"] is None else check_int("eye", "M", attrs["M"])
    return (n, m), "float64"


register(Op(
    name="eye", arity=0, params=("=N", "=M"), attrs={"N": None, "M": None}, infer=_eye_infer,
    impl=lambda N, M: np.eye(N, M), source="np.eye({N!r}, {M!r})", differentiable=False,
    domain=None, doc="the N x M identity matrix",
))
