"""Constants and constant-makers: ``const``, ``zeros_like``, ``ones_like``, ``eye``, ``zeros``,
``ones``, ``full``, ``arange``, ``linspace``. (Variables are the IR's other leaf: ``Graph.var``
makes them; they are not an op.)"""

from __future__ import annotations

import math

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError
from ..ir.op import Op, register, sig
from ..ir.shapes import DTYPES, check_int

register(Op(
    name="const", signature=sig("=value", value=None),
    infer=lambda s, d, a: (a["value"].shape, a["value"].dtype.name),
    impl=lambda value: value, differentiable=False, domain=None, public=False,
    doc="a constant array",
))
register(Op(
    name="zeros_like", infer=lambda s, d, a: (s[0], d[0]), impl=np.zeros_like,
    differentiable=False, doc="zeros of x's shape and dtype (no gradient flows through)",
))
register(Op(
    name="ones_like", infer=lambda s, d, a: (s[0], d[0]), impl=np.ones_like,
    differentiable=False, doc="ones of x's shape and dtype (no gradient flows through)",
))


def _eye_prepare(shapes, dtypes, attrs):
    n = check_int("eye", "N", attrs["N"])
    m = n if attrs["M"] is None else check_int("eye", "M", attrs["M"])
    k = check_int("eye", "k", attrs["k"], lo=-(1 << 31))
    return {"N": n, "M": m, "k": k, "dtype": _dtype_name("eye", attrs["dtype"])}


register(Op(
    name="eye", signature=sig("=N", "=M", "=k", N=None, M=None, k=0, dtype=None,
                              strings=("dtype",)),
    prepare=_eye_prepare, infer=lambda s, d, a: ((a["N"], a["M"]), a["dtype"]),
    impl=lambda N, M, k, dtype: np.eye(N, M, k, dtype=dtype), differentiable=False,
    domain=None, aliases=("identity",),
    examples=lambda rng: [([], {"N": 3}), ([], {"N": 2, "M": 4, "k": 1, "dtype": "int64"})],
    doc="the N x M matrix with ones on diagonal k (identity(N) is eye(N))",
))


def _filled_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        out = dict(attrs)
        shape = attrs["shape"]
        dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
        if not isinstance(dims, (tuple, list)):
            raise ShapeError(f"{name}: shape must be an int or a tuple of ints, got "
                             f"{describe(shape)}")
        out["shape"] = tuple(check_int(name, "a dimension", d) for d in dims)
        out["dtype"] = _dtype_name(name, attrs.get("dtype"))
        if "fill_value" in attrs:
            v = attrs["fill_value"]
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                raise ShapeError(f"{name}: fill_value must be a number, got {describe(v)}")
            out["fill_value"] = float(v) if out["dtype"].startswith("float") else int(v)
        return out

    return prepare


def _dtype_name(op: str, dtype) -> str:
    try:
        name = np.dtype(dtype if dtype is not None else "float64").name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ShapeError(f"{op}: dtype must be one of {', '.join(DTYPES)}, got {describe(dtype)}")
    return name


def _filled(name: str, value_doc: str, **extra) -> None:
    spec = ("=shape", "=fill_value") if extra else ("=shape",)
    register(Op(
        name=name, signature=sig(*spec, shape=None, **extra, dtype=None, strings=("dtype",)),
        prepare=_filled_prepare(name), infer=lambda s, d, a: (a["shape"], a["dtype"]),
        impl=getattr(np, name), differentiable=False, domain=None,
        doc=f"a new array of the given shape {value_doc}",
        examples=lambda rng: [([], {"shape": (2, 3), **{k: 2.5 for k in extra}}),
                              ([], {"shape": 4, **{k: -1 for k in extra}})],
    ))


_filled("zeros", "filled with 0")
_filled("ones", "filled with 1")
_filled("full", "filled with fill_value", fill_value=None)


def _number(op: str, what: str, value) -> int | float:
    """A bound or step: an exact Python int or float (NumPy scalars accepted)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ShapeError(f"{op}: {what} must be a number, got {describe(value)}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    v = float(value)
    if not math.isfinite(v):
        raise ShapeError(f"{op}: {what} must be finite, got {describe(v)}")
    return v


def _arange_prepare(shapes, dtypes, attrs):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:
        start, stop = 0, start
    start, stop = _number("arange", "start", start), _number("arange", "stop", stop)
    step = _number("arange", "step", 1 if step is None else step)
    if step == 0:
        raise ShapeError("arange: step cannot be zero")
    ints = all(isinstance(v, int) for v in (start, stop, step))
    dtype = _dtype_name("arange", attrs["dtype"] or ("int64" if ints else "float64"))
    return {"start": start, "stop": stop, "step": step, "dtype": dtype}


def _arange_length(start, stop, step) -> int:
    """NumPy's length: ceil((stop - start) / step), at least 0."""
    if all(isinstance(v, int) for v in (start, stop, step)):
        return max(0, -((start - stop) // step))
    return max(0, math.ceil((stop - start) / step))


def _arange_infer(shapes, dtypes, attrs):
    n = _arange_length(attrs["start"], attrs["stop"], attrs["step"])
    return (check_int("arange", "the length", n),), attrs["dtype"]


register(Op(
    name="arange", signature=sig("=start", "=stop", "=step", start=0, stop=None, step=None,
                                 dtype=None, strings=("dtype",)),
    prepare=_arange_prepare, infer=_arange_infer,
    impl=lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype),
    differentiable=False, domain=None,
    doc="evenly spaced values in [start, stop) (arange(stop) counts from 0), as NumPy's",
    examples=lambda rng: [([], {"start": 5}), ([], {"start": 1, "stop": 10, "step": 3}),
                          ([], {"start": 0.5, "stop": 2.0, "step": 0.3}),
                          ([], {"start": 3, "stop": -2, "step": -1, "dtype": "float64"})],
))


def _linspace_prepare(shapes, dtypes, attrs):
    num = check_int("linspace", "num", attrs["num"])
    if not isinstance(attrs["endpoint"], (bool, np.bool_)):
        raise ShapeError(f"linspace: endpoint must be True or False, got {attrs['endpoint']!r}")
    return {"start": _number("linspace", "start", attrs["start"]),
            "stop": _number("linspace", "stop", attrs["stop"]), "num": num,
            "endpoint": bool(attrs["endpoint"]),
            "dtype": _dtype_name("linspace", attrs["dtype"])}


register(Op(
    name="linspace", signature=sig("=start", "=stop", "=num", start=None, stop=None, num=50,
                                   endpoint=True, dtype=None, strings=("dtype",)),
    prepare=_linspace_prepare, infer=lambda s, d, a: ((a["num"],), a["dtype"]),
    impl=lambda start, stop, num, endpoint, dtype: np.linspace(start, stop, num,
                                                                endpoint=endpoint, dtype=dtype),
    differentiable=False, domain=None,
    doc="num evenly spaced numbers from start to stop (numbers; symgrad.numpy.linspace also "
        "takes expressions)",
    examples=lambda rng: [([], {"start": 0.0, "stop": 1.0, "num": 5}),
                          ([], {"start": -1, "stop": 2, "num": 4, "endpoint": False})],
))
