"""Leaves and constant-makers: ``var``, ``const``, ``zeros_like``, ``ones_like``, ``eye``."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
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


def _filled_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        out = dict(attrs)
        shape = attrs["shape"]
        dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
        if not isinstance(dims, (tuple, list)):
            raise ShapeError(f"{name}: shape must be an int or a tuple of ints, got {shape!r}")
        out["shape"] = tuple(check_int(name, "a dimension", d) for d in dims)
        out["dtype"] = _dtype_name(name, attrs.get("dtype"))
        if "fill_value" in attrs:
            v = attrs["fill_value"]
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                raise ShapeError(f"{name}: fill_value must be a number, got {v!r}")
            out["fill_value"] = float(v) if out["dtype"].startswith("float") else int(v)
        return out

    return prepare


def _dtype_name(op: str, dtype) -> str:
    name = np.dtype(dtype if dtype is not None else "float64").name
    if name not in _NUMPY_DTYPE:
        raise ShapeError(f"{op}: dtype must be one of {', '.join(_NUMPY_DTYPE)}, got {dtype!r}")
    return name


def _filled(name: str, value_doc: str, **extra) -> None:
    params = ("=shape", "=fill_value") if "fill_value" in extra else ("=shape",)
    fill = "{fill_value!r}, " if "fill_value" in extra else ""
    register(Op(
        name=name, arity=0, params=params, attrs={"shape": None, **extra, "dtype": None},
        prepare=_filled_prepare(name), infer=lambda s, d, a: (a["shape"], a["dtype"]),
        impl=getattr(np, name), source=f"np.{name}({{shape!r}}, {fill}dtype=np.{{dtype}})",
        differentiable=False, domain=None, doc=f"a new array of the given shape {value_doc}",
        examples=lambda rng: [([], {"shape": (2, 3), **{k: 2.5 for k in extra}}),
                              ([], {"shape": 4, **{k: -1 for k in extra}})],
    ))


_filled("zeros", "filled with 0")
_filled("ones", "filled with 1")
_filled("full", "filled with fill_value", fill_value=None)


def _arange_infer(shapes, dtypes, attrs):
    return (check_int("arange", "stop", attrs["stop"]),), "int64"


register(Op(
    name="arange", arity=0, params=("=stop",), attrs={"stop": None}, infer=_arange_infer,
    impl=lambda stop: np.arange(stop, dtype=np.int64), source="np.arange({stop!r})",
    differentiable=False, domain=None, doc="the integers 0, 1, ..., stop - 1 (int64)",
    examples=lambda rng: [([], {"stop": 5})],
))
