"""The array API backend's table: how each op is written against the array API standard.

Entries are :class:`~symgrad.backends.template.Template` objects, like the NumPy table's,
whose text calls the namespace ``xp`` (the emitted function binds it from its inputs with
``array_api_compat.array_namespace``, or to a fixed library for the ``jax`` and ``torch``
backends). Ops the standard lacks call the standard-only helpers of
:mod:`symgrad.backends.targets.array_api.helpers`, written once at the top of the module. Every op
of the registry has an entry (a test fails if one is missing); ``None`` would mark an op
that cannot be written here, and :data:`UNSUPPORTED` says why (empty: every op can be).

>>> ARRAY_API["sin"].render(["x"], {})
'xp.sin(x)'
"""

from __future__ import annotations

import math

from ....ops.indexing import split_parts
from ...template import Template
from ..numpy.table import scalar_source
from . import complex_order as co
from . import helpers as h
from .sparse import SPARSE
from .sparse import UNSUPPORTED as SPARSE_UNSUPPORTED

T = Template



def _custom_results(names: list[str], attrs: dict) -> str:
    """A custom rule's call: the tuple of its results, its first operands."""
    return "(" + ", ".join(names[:attrs["rule"].n_out]) + ",)"



SOLVERS = ("optimize", "solver_info", "ivp", "ivp_adjoint")
SOLVER_UNSUPPORTED: dict[str, str] = dict.fromkeys(
    SOLVERS, "a SciPy solver's call (symgrad.scipy.optimize / integrate) runs SciPy on NumPy "
    "arrays")
SOLVER_UNSUPPORTED.update(dict.fromkeys(
    ("while_loop", "while_vjp"), "sg.while_loop's trip count is a run-time value, run by a "
    "Python loop on NumPy arrays (JAX and PyTorch need a static bound for reverse mode): "
    "pass max_steps= to sg.while_loop (a bounded loop every target writes) or compile for "
    "the NumPy target"))
UNSUPPORTED: dict[str, str] = {**SPARSE_UNSUPPORTED, **SOLVER_UNSUPPORTED}
"""Ops this backend cannot write, with the reason (the sparse solves, SciPy's solvers)."""

SORTING = ("partition", "argpartition", "searchsorted")
COMPLEX_UNSUPPORTED: dict[str, str] = dict.fromkeys(
    SORTING, "the array API standard leaves the order of complex values unspecified, and "
    "symgrad writes NumPy's (COMPLEX_ORDER) for sort, argsort and the comparisons only")
"""Ops this backend cannot write for complex operands, with the reason."""

DEVICE = "dev"
"""The name the emitted functions bind to their inputs' device (``_sg_xp_device`` of them;
``None`` without array inputs): every array the code creates is made there."""
ON_DEVICE = f"device={DEVICE}"


def number_source(v) -> str:
    """Exact source of one number without NumPy: ``math.inf``, ``-0.0``, ``5e-324``."""
    if v is None or isinstance(v, str):
        return repr(v)
    return scalar_source(v, "math")


def _key_entry(e, names) -> str:
    if e is None or isinstance(e, str):
        return "None" if e is None else next(names)
    if not isinstance(e, slice):
        return str(int(e))
    items = [e.start, e.stop] + ([] if e.step is None else [e.step])
    return f"slice({', '.join('None' if p is None else str(int(p)) for p in items)})"


def key_tuple(key: tuple, names: list[str], batch: int) -> str:
    """A key as a tuple expression: ``(slice(None), slice(1, None), None, i)``."""
    it = iter(names)
    parts = ["slice(None)"] * batch + [_key_entry(e, it) for e in key]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _index(names: list[str], attrs: dict) -> str:
    key = key_tuple(attrs["key"], names[1:], attrs["batch"])
    reverse = any(isinstance(e, slice) and (e.step or 1) < 0 for e in attrs["key"])
    if len(names) == 1 and not reverse:  # slices, integers, None: the standard's indexing
        return f"{names[0]}[{key}]"
    return f"_sg_xp_index(xp, {names[0]}, {key})"


def _scatter(names: list[str], attrs: dict) -> str:
    key = key_tuple(attrs["key"], names[1:], 0)
    return (f"_sg_xp_scatter(xp, {attrs['shape']!r}, {attrs['batch']!r}, "
            f"(({names[0]}, {key}),))")


def _scatter_sum(names: list[str], attrs: dict) -> str:
    items = ", ".join(f"({g}, {key_tuple(key, list(dyn), 0)})" for (g, dyn), (key, _, _)
                      in zip(split_parts(names, attrs["parts"]), attrs["parts"]))
    return f"_sg_xp_scatter(xp, {attrs['shape']!r}, {attrs['batch']!r}, ({items},))"


_SCATTER = (h._sg_xp_scatter, h._sg_xp_index, h._sg_xp_add_at, h._sg_xp_device)


def _batched(fn: str) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        x, b, shape = names[0], attrs["batch"], attrs["shape"]
        if b == 0:
            return f"xp.{fn}({x}, {shape!r})"
        return f"xp.{fn}({x}, tuple({x}.shape[:{b}]) + {shape!r})"
    return T(text)


def _join(fn: str) -> Template:
    return T(lambda names, attrs: f"xp.{fn}([{', '.join(names)}], axis={int(attrs['axis'])})")


def _helper(fn, *more) -> Template:
    """``_sg_xp_<name>(xp, {0}, {1}, ..., attrs...)``."""
    def text(names: list[str], attrs: dict, _fn=fn) -> str:
        return f"{_fn.__name__}(xp, {', '.join(names)})"
    return T(text, (fn, *more))


def _with(fn, attrs_text: str, *more) -> Template:
    """A helper call with the operands and the formatted ``attrs_text``."""
    def text(names: list[str], attrs: dict) -> str:
        return f"{fn.__name__}(xp, {', '.join(names)}, {attrs_text.format(**attrs)})"
    return T(text, (fn, *more))


def _eigh(values_only: bool) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        sym = f"_sg_xp_sym(xp, {names[0]}, {attrs['UPLO']!r})"
        return f"xp.linalg.eigvalsh({sym})" if values_only else f"xp.linalg.eigh({sym})"
    return T(text, (h._sg_xp_sym,))


def _svd(names: list[str], attrs: dict) -> str:
    if attrs["compute_uv"]:
        return f"xp.linalg.svd({names[0]}, full_matrices={attrs['full_matrices']!r})"
    return f"(xp.linalg.svdvals({names[0]}),)"


def _qr(names: list[str], attrs: dict) -> str:
    if attrs["mode"] == "r":
        return f"(xp.linalg.qr({names[0]}, mode='reduced')[1],)"
    return f"xp.linalg.qr({names[0]}, mode={attrs['mode']!r})"


def _norm(names: list[str], attrs: dict) -> str:
    order = attrs["ord"]
    text = repr(order) if order is None or isinstance(order, str) else number_source(order)
    return f"_sg_xp_norm(xp, {names[0]}, {text}, {attrs['axis']!r}, {attrs['keepdims']!r})"


def _matrix_rank(names: list[str], attrs: dict) -> str:
    tol, rtol = attrs["tol"], attrs["rtol"]
    return (f"_sg_xp_matrix_rank(xp, {names[0]}, "
            f"{'None' if tol is None else number_source(tol)}, "
            f"{'None' if rtol is None else number_source(rtol)})")


def _filled(fn: str, fill: bool) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        middle = f"{number_source(attrs['fill_value'])}, " if fill else ""
        return f"xp.{fn}({attrs['shape']!r}, {middle}dtype=xp.{attrs['dtype']}, {ON_DEVICE})"
    return T(text)


def _transpose(names: list[str], attrs: dict) -> str:
    axes = attrs["axes"]
    if axes is None:
        return f"xp.permute_dims({names[0]}, tuple(range({names[0]}.ndim))[::-1])"
    return f"xp.permute_dims({names[0]}, {tuple(a % len(axes) for a in axes)!r})"


def _flat_if_none(x: str, axis) -> tuple[str, int]:
    """NumPy's ``axis=None``: the flattened array, along its one axis."""
    return (f"xp.reshape({x}, (-1,))", -1) if axis is None else (x, axis)


def _sorting(fn: str, extra: str) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        x, axis = _flat_if_none(names[0], attrs["axis"])
        return f"xp.{fn}({x}, axis={axis!r}{extra})"
    return T(text)


def _cumulative(fn: str) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        x, axis = _flat_if_none(names[0], attrs["axis"])
        return f"xp.cumulative_{fn}({x}, axis={axis!r})"
    return T(text)


def _reduce(fn: str) -> Template:
    return T(f"xp.{fn}({{0}}, axis={{axis!r}}, keepdims={{keepdims!r}})")


SPECIAL_UNARY = ("erf", "erfc", "erfinv", "erfcinv", "erfcx", "ndtr", "ndtri", "log_ndtr",
                 "logit", "gamma", "gammaln", "digamma", "i0", "i1", "i0e", "i1e")
SPECIAL_BINARY = ("betaln", "xlogy", "xlog1py", "gammainc", "gammaincc")
SPECIAL_TERNARY = ("betainc",)
# Bessel functions JAX has none of: SciPy's through _sg_xp_special (host, or a callback)
BESSEL_UNARY = ("j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e")
BESSEL_BINARY = ("jv", "yv", "yn", "iv", "ive", "kv", "kve")


_HOST = (h._sg_xp_host, h._sg_xp_device)  # SciPy on host copies, results on the device
_SPECIAL_HELPERS = (h._sg_xp_special, h._sg_xp_callback, *_HOST)


def _special(name: str, arity: int = 1) -> Template:
    """SciPy's ``name`` through :func:`~.array_api_helpers._sg_xp_special`."""
    args = "".join(f", {{{k}}}" for k in range(arity))
    return T(f"_sg_xp_special(xp, {name!r}{args})", _SPECIAL_HELPERS)


_RENAMED = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "rint": "round"}

ARRAY_API: dict[str, Template | None] = {
    # elementwise
    "add": T("{0} + {1}"), "subtract": T("{0} - {1}"), "multiply": T("{0} * {1}"),
    "divide": T("{0} / {1}"), "power": T("{0} ** {1}"), "negative": T("-{0}"),
    "maximum": T("xp.maximum({0}, {1})"), "minimum": T("xp.minimum({0}, {1})"),
    **{name: T(f"xp.{name}({{0}})") for name in (
        "square", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sinh",
        "cosh", "abs", "sign", "log2", "log10", "floor", "ceil", "trunc", "isnan", "isinf",
        "isfinite", "signbit", "logical_not")},
    **{name: T(f"xp.{alias}({{0}})") for name, alias in _RENAMED.items()},
    **{name: T(f"xp.{name}({{0}}, {{1}})") for name in (
        "hypot", "logaddexp", "floor_divide", "copysign", "logical_and", "logical_or",
        "logical_xor")},
    "arctan2": T("xp.atan2({0}, {1})"), "mod": T("xp.remainder({0}, {1})"),
    "stop_gradient": T("{0}"),
    # complex numbers (ops/complex.py); angle as NumPy computes it (the standard has none)
    "real": T("xp.real({0})"), "imag": T("xp.imag({0})"), "conj": T("xp.conj({0})"),
    "angle": T("xp.atan2(xp.imag({0}), xp.real({0}))"),
    # the Fourier transform (ops/fft.py): the standard's fft extension
    "fftn": T(lambda names, attrs: f"xp.fft.{'i' if attrs['inverse'] else ''}fftn("
              f"{names[0]}, axes={attrs['axes']!r}, norm={attrs['norm']!r})"),
    "rfftn": T("xp.fft.rfftn({0}, axes={axes!r}, norm={norm!r})"),
    # NumPy's irfft takes a real operand as complex; the standard's takes complex only
    "irfft": T("xp.fft.irfft(xp.astype({0}, xp.result_type({0}, xp.complex64)), n={n!r}, "
               "axis={axis!r}, norm={norm!r})"),
    # a custom derivative's call: its results are its first operands (ops/custom.py)
    "custom_vjp_call": T(_custom_results),
    "custom_jvp_call": T(_custom_results),
    # a projection: written as the name its call's statement assigns (never this text)
    "result": T("{0}[{index}]"),
    "sigmoid": T("1.0 / (1.0 + xp.exp(-{0}))"),
    "softplus": T("xp.logaddexp(xp.zeros_like({0}), {0})"),
    "relu": T("xp.maximum({0}, xp.zeros_like({0}))"),
    "less": T("{0} < {1}"), "less_equal": T("{0} <= {1}"), "greater": T("{0} > {1}"),
    "greater_equal": T("{0} >= {1}"), "equal": T("{0} == {1}"), "not_equal": T("{0} != {1}"),
    "where": T("xp.where({0}, {1}, {2})"),
    "exp2": T("2.0 ** {0}"), "reciprocal": T("1.0 / {0}"),
    "deg2rad": T(f"{{0}} * {math.pi / 180!r}"), "rad2deg": T(f"{{0}} * {180 / math.pi!r}"),
    "cbrt": _helper(h._sg_xp_cbrt), "logaddexp2": _helper(h._sg_xp_logaddexp2),
    "fmod": _helper(h._sg_xp_fmod),
    "fmax": T("xp.where(xp.isnan({1}), {0}, xp.where(xp.isnan({0}), {1}, "
              "xp.maximum({0}, {1})))"),
    "fmin": T("xp.where(xp.isnan({1}), {0}, xp.where(xp.isnan({0}), {1}, "
              "xp.minimum({0}, {1})))"),
    "float_power": T("xp.pow(xp.astype({0}, xp.float64), xp.astype({1}, xp.float64))"),
    "heaviside": T("xp.where(xp.isnan({0}), {0}, xp.where({0} < 0, xp.zeros_like({0}), "
                   "xp.where({0} > 0, xp.ones_like({0}), {1})))"),
    "round": _with(h._sg_xp_round, "{decimals!r}"),
    "astype": T("xp.astype({0}, xp.{dtype})"),
    # reductions
    "sum": _reduce("sum"), "mean": _reduce("mean"), "max": _reduce("max"),
    "min": _reduce("min"), "prod": _reduce("prod"), "all": _reduce("all"),
    "any": _reduce("any"), "argmax": _reduce("argmax"), "argmin": _reduce("argmin"),
    "logsumexp": _with(h._sg_xp_logsumexp, "{axis!r}, {keepdims!r}"),
    "softmax": _with(h._sg_xp_softmax, "{axis!r}"),
    "log_softmax": _with(h._sg_xp_log_softmax, "{axis!r}"),
    "cumsum": _cumulative("sum"), "cumprod": _cumulative("prod"),
    "sort": _sorting("sort", ""), "argsort": _sorting("argsort", ", stable=False"),
    "partition": _with(h._sg_xp_partition, "{kth!r}, {axis!r}", h._sg_xp_argpartition,
                       h._sg_xp_take_along),
    "argpartition": _with(h._sg_xp_argpartition, "{kth!r}, {axis!r}"),
    "searchsorted": T("xp.astype(xp.searchsorted({0}, {1}, side={side!r}), xp.int64)"),
    # linear algebra
    "matmul": T("{0} @ {1}"), "dot": _helper(h._sg_xp_dot), "outer": _helper(h._sg_xp_outer),
    "transpose": T(_transpose),
    "matrix_transpose": T("xp.matrix_transpose({0})"),
    "einsum": T(lambda names, attrs: f"_sg_xp_einsum(xp, {attrs['spec']!r}, {', '.join(names)})",
                (h._sg_xp_einsum, h._sg_xp_device)),
    # shaping
    "reshape": _batched("reshape"), "broadcast_to": _batched("broadcast_to"),
    "expand_dims": _with(h._sg_xp_expand_dims, "{axis!r}"),
    "squeeze": T("xp.squeeze({0}, axis={axis!r})"),
    "concatenate": _join("concat"), "stack": _join("stack"),
    # indexing
    "index": T(_index, (h._sg_xp_index, h._sg_xp_device)), "index_add": T(_scatter, _SCATTER),
    "scatter_sum": T(_scatter_sum, _SCATTER),
    "take": _with(h._sg_xp_take, "{axis!r}", h._sg_xp_device),
    # constant-makers
    "zeros_like": T("xp.zeros_like({0})"), "ones_like": T("xp.ones_like({0})"),
    "eye": T(f"xp.eye({{N!r}}, {{M!r}}, k={{k!r}}, dtype=xp.{{dtype}}, {ON_DEVICE})"),
    "zeros": _filled("zeros", False), "ones": _filled("ones", False),
    "full": _filled("full", True),
    "arange": T(lambda names, attrs: f"xp.arange({number_source(attrs['start'])}, "
                f"{number_source(attrs['stop'])}, {number_source(attrs['step'])}, "
                f"dtype=xp.{attrs['dtype']}, {ON_DEVICE})"),
    "linspace": T(lambda names, attrs: f"xp.linspace({number_source(attrs['start'])}, "
                  f"{number_source(attrs['stop'])}, {attrs['num']!r}, "
                  f"endpoint={attrs['endpoint']!r}, dtype=xp.{attrs['dtype']}, {ON_DEVICE})"),
    # linalg (the standard's extension)
    "band": _with(h._sg_xp_band, "{lo!r}, {hi!r}, {diagonal!r}", h._sg_xp_device),
    "inv": T("xp.linalg.inv({0})"), "det": T("xp.linalg.det({0})"),
    "slogdet": T("xp.linalg.slogdet({0})"),
    "solve": T("_sg_xp_solve(xp, {0}, {1})", (h._sg_xp_solve,)),
    "cholesky": T(lambda names, attrs: f"xp.linalg.cholesky(_sg_xp_sym(xp, {names[0]}, "
                                       f"{'U' if attrs['upper'] else 'L'!r}), "
                                       f"upper={attrs['upper']!r})", (h._sg_xp_sym,)),
    "eigh": _eigh(False), "eigvalsh": _eigh(True), "svd": T(_svd),
    # eig (ops/eig.py): not in the standard; the library's own (jnp, torch), made complex
    "eig": T("tuple(xp.astype(r, xp.result_type(r.dtype, xp.complex64)) "
             "for r in xp.linalg.eig({0}))"),
    "eigvals": T("(lambda w: xp.astype(w, xp.result_type(w.dtype, xp.complex64)))("
                 "xp.linalg.eigvals({0}))"),
    "svdvals": T("xp.linalg.svdvals({0})"),
    "pinv": T(lambda names, attrs: "xp.linalg.pinv({}, rtol={!r})".format(
        f"_sg_xp_sym(xp, {names[0]}, 'L')" if attrs["hermitian"] else names[0], attrs["rcond"]),
        (h._sg_xp_sym,)),
    "lstsq": T(lambda names, attrs: f"_sg_xp_lstsq(xp, {names[0]}, {names[1]}, "
                                    f"{number_source(attrs['rcond'])})", (h._sg_xp_lstsq,)),
    "qr": T(_qr),
    "matrix_power": T("xp.linalg.matrix_power({0}, {n!r})"),
    "multi_dot": T(lambda names, attrs: "(" + " @ ".join(names) + ")"),
    "trace": _with(h._sg_xp_trace, "{offset!r}, {axis1!r}, {axis2!r}"),
    "norm": T(_norm, (h._sg_xp_norm,)),
    "matrix_rank": T(_matrix_rank, (h._sg_xp_matrix_rank, h._sg_xp_device)),
    # -- scipy.special (ops/special.py): the standard has none; see _sg_xp_special --
    **{name: _special(name) for name in SPECIAL_UNARY},
    **{name: _special(name, 2) for name in SPECIAL_BINARY},
    **{name: _special(name, 3) for name in SPECIAL_TERNARY},
    **{name: _special(name) for name in BESSEL_UNARY},
    **{name: _special(name, 2) for name in BESSEL_BINARY},
    "polygamma": T("_sg_xp_special(xp, 'polygamma', {n!r}, {0})", _SPECIAL_HELPERS),
    "stdtr": T("_sg_xp_stdtr(xp, {0}, {1})", (h._sg_xp_stdtr, *_SPECIAL_HELPERS)),
    "sinc": T("xp.where({0} == 0, xp.ones_like({0}), xp.sin({0} * math.pi) / "
              "(xp.where({0} == 0, xp.ones_like({0}), {0}) * math.pi))"),
    # -- scipy.linalg (ops/matrix_functions.py): not in the standard; see _sg_xp_expm --
    "expm": T("_sg_xp_expm(xp, {0})", (h._sg_xp_expm, *_HOST)),
    "sqrtm": T("_sg_xp_sqrtm(xp, {0})", (h._sg_xp_sqrtm, *_HOST)),
    "lu_factor": T("_sg_xp_lu(xp, {0}, 0)", (h._sg_xp_lu, *_HOST)),
    "lu_pivots": T("_sg_xp_lu(xp, {0}, 1)", (h._sg_xp_lu, *_HOST)),
    "lu_permutation": T("_sg_xp_lu(xp, {0}, 2)", (h._sg_xp_lu, *_HOST)),
    # scipy.signal (ops/signal.py): JAX's convolve, else shifted products (h's docstring)
    "convolution": T("_sg_xp_convolution(xp, {0}, {1}, {modes!r})",
                     (h._sg_xp_convolution, h._sg_xp_device)),
    # loops: the call of the loop function that backends/loops.py writes
    "scan": T(lambda names, attrs: f"_sg_loop({', '.join(names)})"),
    # sparse matrices (ops/sparse.py): gathers and a scatter-add; no sparse solves
    **SPARSE,
    **dict.fromkeys((*SOLVERS, "while_loop", "while_vjp")),  # see UNSUPPORTED
    "custom_root": T("{0}"), "custom_linear_solve": T("{0}"),
}


_CLESS = (co._sg_xp_cless, co._sg_xp_cpair, h._sg_xp_device)
_CMAXIMUM = (co._sg_xp_cmaximum, co._sg_xp_cnan, *_CLESS)
_CPICK = (co._sg_xp_cflat, co._sg_xp_cpick, h._sg_xp_device)


def _cextreme(fn, largest: bool) -> Template:
    return T(f"{fn.__name__}(xp, {{0}}, {{axis!r}}, {{keepdims!r}}, {largest!r})", (fn, *_CPICK))


COMPLEX_ORDER: dict[str, Template] = {
    **{name: T(f"_sg_xp_cless(xp, {{0}}, {{1}}, {op!r})", _CLESS) for name, op in (
        ("less", "<"), ("less_equal", "<="), ("greater", ">"), ("greater_equal", ">="))},
    **{name: T(f"_sg_xp_cmaximum(xp, {{0}}, {{1}}, {op!r}, {skip!r})", _CMAXIMUM)
       for name, op, skip in (("maximum", ">=", False), ("minimum", "<=", False),
                              ("fmax", ">=", True), ("fmin", "<=", True))},
    "max": _cextreme(co._sg_xp_cmax, True), "min": _cextreme(co._sg_xp_cmax, False),
    "argmax": _cextreme(co._sg_xp_cargmax, True), "argmin": _cextreme(co._sg_xp_cargmax, False),
    "sort": T("_sg_xp_csort(xp, {0}, {axis!r})", (co._sg_xp_csort, co._sg_xp_cargsort)),
    "argsort": T("_sg_xp_cargsort(xp, {0}, {axis!r})", (co._sg_xp_cargsort,)),
}
"""The forms of the ordering ops for complex operands, NumPy's order in the standard's
functions on real and imaginary parts (the standard leaves complex order unspecified)."""
