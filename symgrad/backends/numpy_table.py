"""The NumPy source backend's table: how each op is written in emitted NumPy code.

An entry is a :class:`Template` (:mod:`.template`): a ``str.format`` pattern over operand
names ``{0} {1}`` and attributes (``{axis!r}``), or a callable ``(names, attrs) -> str``;
with the NumPy-only helper functions (``_sg_*``) the text calls, which the printer writes
once at the top of a module. The helpers are the interpreter's own kernels (from
:mod:`symgrad.ops`), so the emitted code and ``evaluate`` cannot disagree. The leaves
(``var``, ``const``) are written by the printer itself. Every other op of the registry has
an entry: a test fails if one is missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ops.decompositions import _sg_band, _sg_lstsq_residuals, _sg_part
from ..ops.indexing import _sg_index_add, _sg_scatter_sum, key_source, split_parts
from ..ops.reductions import _sg_log_softmax, _sg_logsumexp, _sg_softmax
from ..ops.sorting import _sg_partition
from .template import Template

NUMPY_TYPE = {"float64": "np.float64", "float32": "np.float32", "int64": "np.int64",
              "int32": "np.int32", "bool": "np.bool_"}


def scalar_source(v, module: str = "np") -> str:
    """Exact Python/NumPy source for one number: ``np.inf``, ``-0.0``, ``5e-324``, ...
    (``module`` names where ``inf`` and ``nan`` come from: ``np`` or ``math``)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    v = float(v)
    if math.isnan(v):
        return f"{module}.nan"
    if math.isinf(v):
        return f"{module}.inf" if v > 0 else f"-{module}.inf"
    return repr(v)


def constant_source(value: np.ndarray) -> str:
    """Source that rebuilds a small constant exactly (dtype and shape included)."""
    if value.ndim == 0 and value.dtype in (np.float64, np.int64, np.bool_):
        return scalar_source(value.item())
    items = ", ".join(scalar_source(v) for v in value.ravel().tolist())
    text = f"np.array([{items}], dtype={NUMPY_TYPE[value.dtype.name]})"
    return text if value.ndim == 1 else f"{text}.reshape({value.shape!r})"


def _batched(fn: str, names: list[str], attrs: dict) -> str:
    x, b, shape = names[0], attrs["batch"], attrs["shape"]
    return f"np.{fn}({x}, {shape!r})" if b == 0 else f"np.{fn}({x}, {x}.shape[:{b}] + {shape!r})"


def _einsum(names: list[str], attrs: dict) -> str:
    optimize = ", optimize=True" if len(names) >= 3 else ""
    return f"np.einsum({attrs['spec']!r}, {', '.join(names)}{optimize})"


def _join(fn: str) -> Callable[[list[str], dict], str]:
    return lambda names, attrs: f"np.{fn}([{', '.join(names)}], axis={int(attrs['axis'])})"


def _index(names: list[str], attrs: dict) -> str:
    return f"{names[0]}[{key_source(attrs['key'], names[1:], attrs['batch'])}]"


def _index_add(names: list[str], attrs: dict) -> str:
    g, batch, shape = names[0], attrs["batch"], attrs["shape"]
    size = repr(shape) if batch == 0 else f"np.shape({g})[:{batch}] + {shape!r}"
    key = key_source(attrs["key"], names[1:], batch)
    return f"_sg_index_add({g}, np.s_[{key}], {size}, {attrs['accumulate']!r})"


def _scatter_sum(names: list[str], attrs: dict) -> str:
    batch, shape, parts = attrs["batch"], attrs["shape"], attrs["parts"]
    pieces = split_parts(names, parts)
    size = repr(shape) if batch == 0 else f"np.shape({pieces[0][0]})[:{batch}] + {shape!r}"
    items = ", ".join(f"({g}, np.s_[{key_source(key, list(dyn), batch)}], {acc!r})"
                      for (g, dyn), (key, _, acc) in zip(pieces, parts))
    return f"_sg_scatter_sum({size}, ({items},))"


def _part(fn: str, index: int, rest: str = "") -> Template:
    """Result ``index`` of ``np.linalg.<fn>``, through the kernel that calls it once for
    all the nodes of one decomposition."""
    tail = f", {rest}" if rest else ""
    return Template(f"_sg_part(np.linalg.{fn}, {index}, {{0}}{tail})", (_sg_part,))


def _svd_values(names: list[str], attrs: dict) -> str:
    a, full, herm = names[0], attrs["full_matrices"], attrs["hermitian"]
    if attrs["compute_uv"]:
        return f"_sg_part(np.linalg.svd, 1, {a}, {full!r}, True, {herm!r})"
    return f"np.linalg.svd({a}, {full!r}, False, {herm!r})"


def _norm(names: list[str], attrs: dict) -> str:
    order = attrs["ord"]
    text = repr(order) if order is None or isinstance(order, str) else scalar_source(order)
    return f"np.linalg.norm({names[0]}, {text}, {attrs['axis']!r}, {attrs['keepdims']!r})"


def _filled(fn: str, fill: bool) -> Template:
    middle = "{fill_value!r}, " if fill else ""
    return Template(f"np.{fn}({{shape!r}}, {middle}dtype=np.{{dtype}})")


T = Template
NUMPY: dict[str, Template] = {
    # elementwise
    "add": T("{0} + {1}"), "subtract": T("{0} - {1}"), "multiply": T("{0} * {1}"),
    "divide": T("{0} / {1}"), "power": T("{0} ** {1}"), "negative": T("-{0}"),
    "square": T("np.square({0})"), "maximum": T("np.maximum({0}, {1})"),
    "minimum": T("np.minimum({0}, {1})"),
    "exp": T("np.exp({0})"), "log": T("np.log({0})"), "log1p": T("np.log1p({0})"),
    "expm1": T("np.expm1({0})"), "sqrt": T("np.sqrt({0})"), "sin": T("np.sin({0})"),
    "cos": T("np.cos({0})"), "tan": T("np.tan({0})"), "tanh": T("np.tanh({0})"),
    "sinh": T("np.sinh({0})"),
    "cosh": T("np.cosh({0})"),
    "sigmoid": T("1.0 / (1.0 + np.exp(-{0}))"),
    "softplus": T("np.logaddexp(0.0, {0})"), "relu": T("np.maximum({0}, 0)"),
    "abs": T("np.abs({0})"), "sign": T("np.sign({0})"),
    "less": T("{0} < {1}"), "less_equal": T("{0} <= {1}"), "greater": T("{0} > {1}"),
    "greater_equal": T("{0} >= {1}"), "equal": T("{0} == {1}"), "not_equal": T("{0} != {1}"),
    "where": T("np.where({0}, {1}, {2})"),
    # more elementwise functions (ops/functions.py)
    **{name: T(f"np.{name}({{0}})") for name in (
        "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10",
        "cbrt", "reciprocal", "deg2rad", "rad2deg", "floor", "ceil", "rint", "trunc", "isnan",
        "isinf", "isfinite", "signbit", "logical_not")},
    **{name: T(f"np.{name}({{0}}, {{1}})") for name in (
        "arctan2", "hypot", "logaddexp", "logaddexp2", "fmod", "floor_divide", "fmax", "fmin",
        "copysign", "float_power", "heaviside", "logical_and", "logical_or", "logical_xor")},
    "mod": T("np.remainder({0}, {1})"), "round": T("np.round({0}, {decimals!r})"),
    "astype": T("{0}.astype(np.{dtype})"),
    # reductions
    # np.sum, np.max and np.min call these reductions: the same result, without the wrapper
    "sum": T("np.add.reduce({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "mean": T("np.mean({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "max": T("np.maximum.reduce({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "min": T("np.minimum.reduce({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "logsumexp": T("_sg_logsumexp({0}, {axis!r}, {keepdims!r})", (_sg_logsumexp,)),
    "softmax": T("_sg_softmax({0}, {axis!r})", (_sg_softmax,)),
    "log_softmax": T("_sg_log_softmax({0}, {axis!r})", (_sg_log_softmax,)),
    "prod": T("np.prod({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "all": T("np.all({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "any": T("np.any({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "cumsum": T("np.cumsum({0}, axis={axis!r})"), "cumprod": T("np.cumprod({0}, axis={axis!r})"),
    "argmax": T("np.argmax({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "argmin": T("np.argmin({0}, axis={axis!r}, keepdims={keepdims!r})"),
    "sort": T("np.sort({0}, axis={axis!r})"), "argsort": T("np.argsort({0}, axis={axis!r})"),
    "partition": T("_sg_partition({0}, {kth!r}, {axis!r})", (_sg_partition,)),
    "argpartition": T("np.argpartition({0}, {kth!r}, axis={axis!r})"),
    "searchsorted": T("np.searchsorted({0}, {1}, side={side!r}).astype(np.int64)"),
    # linear algebra
    "matmul": T("{0} @ {1}"), "dot": T("np.dot({0}, {1})"),
    "outer": T("np.multiply.outer({0}, {1})"),  # np.outer's products, without its wrapper
    "transpose": T("np.transpose({0}, {axes!r})"),
    "matrix_transpose": T("np.swapaxes({0}, -1, -2)"), "einsum": T(_einsum),
    # shaping
    "reshape": T(lambda names, attrs: _batched("reshape", names, attrs)),
    "broadcast_to": T(lambda names, attrs: _batched("broadcast_to", names, attrs)),
    "expand_dims": T("np.expand_dims({0}, {axis!r})"),
    "squeeze": T("np.squeeze({0}, axis={axis!r})"),
    "concatenate": T(_join("concatenate")), "stack": T(_join("stack")),
    # indexing
    "index": T(_index), "index_add": T(_index_add, (_sg_index_add,)),
    "scatter_sum": T(_scatter_sum, (_sg_scatter_sum,)),
    "take": T("np.take({0}, {1}, axis={axis!r})"),
    # constant-makers
    "zeros_like": T("np.zeros_like({0})"), "ones_like": T("np.ones_like({0})"),
    "eye": T("np.eye({N!r}, {M!r}, {k!r}, dtype=np.{dtype})"), "zeros": _filled("zeros", False),
    "ones": _filled("ones", False), "full": _filled("full", True),
    "arange": T("np.arange({start!r}, {stop!r}, {step!r}, dtype=np.{dtype})"),
    "linspace": T("np.linspace({start!r}, {stop!r}, {num!r}, endpoint={endpoint!r}, "
                  "dtype=np.{dtype})"),
    # -- numpy.linalg (ops/decompositions.py) --
    "band": T("_sg_band({0}, {lo!r}, {hi!r}, {diagonal!r})", (_sg_band,)),
    "inv": T("np.linalg.inv({0})"), "det": T("np.linalg.det({0})"),
    "slogdet": _part("slogdet", 1), "slogdet_sign": _part("slogdet", 0),
    "solve": T("np.linalg.solve({0}, {1})"),
    "cholesky": T("np.linalg.cholesky({0}, upper={upper!r})"),
    "eigh": _part("eigh", 0, "{UPLO!r}"), "eigh_vectors": _part("eigh", 1, "{UPLO!r}"),
    "eigvalsh": T("np.linalg.eigvalsh({0}, {UPLO!r})"),
    "svd": T(_svd_values, (_sg_part,)),
    "svd_u": _part("svd", 0, "{full_matrices!r}, True, {hermitian!r}"),
    "svd_vh": _part("svd", 2, "{full_matrices!r}, True, {hermitian!r}"),
    "svdvals": T("np.linalg.svdvals({0})"),
    "pinv": T("np.linalg.pinv({0}, rcond={rcond!r}, hermitian={hermitian!r})"),
    "lstsq": _part("lstsq", 0, "{1}, {rcond!r}"),
    "lstsq_residuals": T("_sg_lstsq_residuals({0}, {1}, {rcond!r})",
                         (_sg_lstsq_residuals, _sg_part)),
    "lstsq_rank": _part("lstsq", 2, "{1}, {rcond!r}"),
    "lstsq_sv": _part("lstsq", 3, "{1}, {rcond!r}"),
    "qr": T(lambda names, attrs: f"np.linalg.qr({names[0]}, 'r')" if attrs["mode"] == "r"
            else f"_sg_part(np.linalg.qr, 1, {names[0]}, {attrs['mode']!r})", (_sg_part,)),
    "qr_q": _part("qr", 0, "{mode!r}"),
    "matrix_power": T("np.linalg.matrix_power({0}, {n!r})"),
    "multi_dot": T(lambda names, attrs: f"np.linalg.multi_dot([{', '.join(names)}])"),
    "trace": T("np.trace({0}, {offset!r}, {axis1!r}, {axis2!r})"),
    "norm": T(_norm),
    "matrix_rank": T("np.asarray(np.linalg.matrix_rank({0}, {tol!r}, {hermitian!r}, "
                     "rtol={rtol!r}), dtype=np.int64)"),
}
