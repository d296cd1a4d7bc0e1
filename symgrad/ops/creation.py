"""Constants and constant-makers: ``const``, ``zeros_like``, ``ones_like``, ``eye``, ``zeros``,
``ones``, ``full``, ``arange``. (Variables are the IR's other leaf: ``Graph.var`` makes them,
they are not an op.)"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
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


def _eye_infer(shapes, dtypes, attrs):
    n = check_int("eye", "N", attrs["N"])
    m = n if attrs["M"] is None else check_int("eye", "M", attrs["M"])
    return (n, m), "float64"


register(Op(
    name="eye", signature=sig("=N", "=M", N=None, M=None), infer=_eye_infer,
    impl=lambda N, M: np.eye(N, M), differentiable=False, domain=None,
    doc="the N x M identity matrix",
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
    try:
        name = np.dtype(dtype if dtype is not None else "float64").name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ShapeError(f"{op}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
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


def _arange_infer(shapes, dtypes, attrs):
    return (check_int("arange", "stop", attrs["stop"]),), "int64"


register(Op(
    name="arange", signature=sig("=stop", stop=None), infer=_arange_infer,
    impl=lambda stop: np.arange(stop, dtype=np.int64), differentiable=False, domain=None,
    doc="the integers 0, 1, ..., stop - 1 (int64)",
    examples=lambda rng: [([], {"stop": 5})],
))
