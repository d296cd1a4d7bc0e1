"""The scalar backend's table: how each op is written over Python floats with ``math``.

Used by ``to_source(..., scalars="math")`` for functions whose every value is a scalar. An
entry is a :class:`~symgrad.backends.template.Template` over Python floats, or ``None``
where the op has no scalar form (the function is then emitted with NumPy instead). A
template may raise where NumPy would return inf or NaN (``math.exp(1000)``); the emitted
code then reruns the same body over NumPy scalars with :func:`fallback_names`, derived from
this table: every ``math.<name>`` a template calls, bound to NumPy's function of the same
meaning. The leaves (``var``, ``const``) are written by the emitter itself.
"""

from __future__ import annotations

import re

import numpy as np

from ...template import Template

# ``math`` functions whose NumPy ufunc has another name
# (``pow`` -> ``float_power``: ``power`` takes its ``sqrt`` path for an exponent of 0.5,
# ``math.pow`` and ``float_power`` do not; the power template writes that branch itself)
_NUMPY_NAME = {"pow": "float_power"}
_MATH_CALL = re.compile(r"\bmath\.([a-z0-9_]+)\(")


def _fn(name: str) -> Template:
    return Template(f"math.{name}({{0}})")


T = Template


def _custom_results(names: list[str], attrs: dict) -> str:
    """A custom rule's call: the tuple of its results, its first operands."""
    return "(" + ", ".join(names[:attrs["rule"].n_out]) + ",)"
MATH: dict[str, Template | None] = {
    # elementwise
    "add": T("{0} + {1}"), "subtract": T("{0} - {1}"), "multiply": T("{0} * {1}"),
    "divide": T("{0} / {1}"), "negative": T("-{0}"),
    "power": T("(math.sqrt({0}) if {1} == 0.5 else math.pow({0}, {1}))"),
    "square": T("{0} * {0}"), "maximum": None, "minimum": None,  # NaN rules differ from max()
    "exp": _fn("exp"), "log": _fn("log"), "log1p": _fn("log1p"), "expm1": _fn("expm1"),
    "sqrt": _fn("sqrt"), "sin": _fn("sin"), "cos": _fn("cos"), "tan": _fn("tan"),
    "tanh": _fn("tanh"),
    "sinh": _fn("sinh"),
    "cosh": _fn("cosh"),
    "sigmoid": T("1.0 / (1.0 + math.exp(-{0}))"),
    "softplus": T("math.log1p(math.exp(-abs({0}))) + max({0}, 0.0)"),
    # relu(-0.0) and sign(-0.0) are +0.0 as in NumPy; NaN stays NaN
    "relu": T("(0.0 if {0} <= 0.0 else {0})"), "abs": T("abs({0})"),
    "sign": T("(1.0 if {0} > 0 else -1.0 if {0} < 0 else abs({0}))"),
    "stop_gradient": T("{0}"),
    # complex numbers (ops/complex.py): arrays only for now
    **dict.fromkeys(("real", "imag", "conj", "angle", "fftn", "rfftn", "irfft")),
    # a custom derivative's call: its results are its first operands (ops/custom.py)
    "custom_vjp_call": T(_custom_results),
    "custom_jvp_call": T(_custom_results),
    # a projection: written as the name its call's statement assigns (never this text)
    "result": T("{0}[{index}]"),
    "less": T("{0} < {1}"), "less_equal": T("{0} <= {1}"), "greater": T("{0} > {1}"),
    "greater_equal": T("{0} >= {1}"), "equal": T("{0} == {1}"), "not_equal": T("{0} != {1}"),
    "where": T("({1} if {0} else {2})"),
    # more elementwise functions (ops/functions.py)
    "arcsin": _fn("asin"), "arccos": _fn("acos"), "arctan": _fn("atan"),
    "arcsinh": _fn("asinh"), "arccosh": _fn("acosh"), "arctanh": _fn("atanh"),
    "exp2": T("2.0 ** {0}"), "log2": _fn("log2"), "log10": _fn("log10"),
    "cbrt": None,  # math.cbrt needs Python 3.11
    "reciprocal": T("1.0 / {0}"), "deg2rad": _fn("radians"), "rad2deg": _fn("degrees"),
    # math.floor & co return ints: the sign of a zero result is the operand's (-0.0 -> -0.0)
    "floor": T("math.copysign(float(math.floor({0})), {0})"),
    "ceil": T("math.copysign(float(math.ceil({0})), {0})"),
    "trunc": T("math.copysign(float(math.trunc({0})), {0})"), "rint": None, "round": None,
    "isnan": _fn("isnan"), "isinf": _fn("isinf"), "isfinite": _fn("isfinite"),
    "signbit": T("math.copysign(1.0, {0}) < 0.0"), "logical_not": T("(not {0})"),
    "logical_and": T("({0} and {1})"), "logical_or": T("({0} or {1})"),
    "logical_xor": T("((not {0}) != (not {1}))"),
    "arctan2": T("math.atan2({0}, {1})"), "hypot": T("math.hypot({0}, {1})"),
    "logaddexp": None, "logaddexp2": None, "mod": T("{0} % {1}"),
    "fmod": T("math.fmod({0}, {1})"), "floor_divide": T("{0} // {1}"), "fmax": None,
    "fmin": None, "copysign": T("math.copysign({0}, {1})"),
    "float_power": T("math.pow({0}, {1})"), "heaviside": None, "astype": None,
    # scipy.special (ops/special.py): math's erf and erfc (ndtr as SciPy computes it, through
    # erfc); the others have no math form or raise where SciPy returns inf (lgamma at poles)
    "erf": _fn("erf"), "erfc": _fn("erfc"),
    "ndtr": T("0.5 * math.erfc({0} * -0.7071067811865476)"),
    **dict.fromkeys((
        "erfinv", "erfcinv", "erfcx", "ndtri", "log_ndtr", "logit", "gamma", "gammaln",
        "digamma", "polygamma", "betaln", "xlogy", "xlog1py", "i0", "i1", "i0e", "i1e", "sinc",
        "gammainc", "gammaincc", "betainc", "stdtr",
        "j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e",
        "jv", "yv", "yn", "iv", "ive", "kv", "kve",
        "expm", "sqrtm", "lu_factor", "lu_pivots", "lu_permutation", "convolution",
    )),
    # no scalar form: arrays, axes or helpers
    **dict.fromkeys((
        "sum", "mean", "max", "min", "logsumexp", "softmax", "log_softmax", "matmul", "dot",
        "outer", "transpose", "matrix_transpose", "einsum", "reshape", "broadcast_to",
        "expand_dims", "squeeze", "concatenate", "stack", "index", "index_add", "scatter_sum",
        "take", "zeros_like", "ones_like", "eye", "zeros", "ones", "full", "arange", "linspace",
        "prod", "all", "any", "cumsum", "cumprod", "argmax", "argmin", "sort", "argsort",
        "partition", "argpartition", "searchsorted",
    )),
    # -- numpy.linalg (ops/numpy_linalg.py): no scalar forms --
    **dict.fromkeys((
        "band", "inv", "det", "slogdet", "solve", "cholesky", "eigh", "eig", "eigvals",
        "eigvalsh", "svd", "svdvals", "pinv", "lstsq",
        "qr", "matrix_power", "multi_dot",
        "trace", "norm", "matrix_rank",
    )),
    "scan": None,  # a loop is array code (backends/loops.py)
    # sparse matrices (ops/sparse.py): arrays only
    **dict.fromkeys(("sparse_matmul", "sparse_sample", "sparse_gather", "sparse_scatter",
                     "sparse_solve", "sparse_iterative", "sparse_iterative_info")),
    # solvers (ops/solvers.py): SciPy's calls on arrays; an implicit function's value is its
    # first operand
    **dict.fromkeys(("optimize", "solver_info", "ivp", "ivp_adjoint", "while_loop",
                     "while_vjp")),
    "custom_root": T("{0}"), "custom_linear_solve": T("{0}"),
}


def _cfn(name: str) -> Template:
    return Template(f"cmath.{name}({{0}})")


CMATH: dict[str, Template | None] = {
    # arithmetic, comparisons and selection: Python's complex operators
    **{name: MATH[name] for name in (
        "add", "subtract", "multiply", "divide", "negative", "square", "stop_gradient",
        "equal", "not_equal", "where", "reciprocal", "result", "custom_vjp_call",
        "custom_jvp_call")},
    "power": T("{0} ** {1}"), "exp2": T("2.0 ** {0}"),
    **{name: _cfn(name) for name in ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh",
                                     "cosh", "tanh", "log10")},
    "arcsin": _cfn("asin"), "arccos": _cfn("acos"), "arctan": _cfn("atan"),
    "arcsinh": _cfn("asinh"), "arccosh": _cfn("acosh"), "arctanh": _cfn("atanh"),
    "sigmoid": T("1.0 / (1.0 + cmath.exp(-{0}))"),
    # the parts (of a real operand too): Python's own, and cmath.phase for np.angle
    "abs": T("abs({0})"), "real": T("{0}.real"), "imag": T("{0}.imag"),
    "conj": T("{0}.conjugate()"), "angle": _cfn("phase"),
    "isnan": _cfn("isnan"), "isinf": _cfn("isinf"), "isfinite": _cfn("isfinite"),
}
"""The scalar forms over Python complex numbers with ``cmath``, for a node with a complex
operand or result (``scalars="math"``); an op missing here leaves the function NumPy's."""

_CMATH_NUMPY = {"phase": "np.angle"}


def cmath_fallback_names() -> dict[str, str]:
    """``{cmath name: NumPy's function}`` for every ``cmath.<name>(`` :data:`CMATH` calls
    (the fallback where ``cmath`` raises, as :func:`fallback_names` for ``math``).

    >>> cmath_fallback_names()["phase"], cmath_fallback_names()["asin"]
    ('np.angle', 'np.arcsin')
    """
    names: set[str] = set()
    for entry in CMATH.values():
        if entry is not None and isinstance(entry.text, str):
            names.update(_CMATH_CALL.findall(entry.text))
    return {n: _CMATH_NUMPY.get(n) or _fallback(_ARC.get(n, n)) for n in sorted(names)}


_CMATH_CALL = re.compile(r"\bcmath\.([a-z0-9_]+)\(")
_ARC = {f"a{f}": f"arc{f}" for f in ("sin", "cos", "tan", "sinh", "cosh", "tanh")}


def fallback_names(table: dict[str, Template | None] = MATH) -> dict[str, str]:
    """``{math name: source of its fallback}`` for every ``math.<name>(`` the table's
    templates call: NumPy's ufunc of the same meaning, or ``math``'s own function where
    NumPy has none (``math.erfc`` in a user's template).

    >>> fallback_names()["pow"], fallback_names()["exp"]
    ('np.float_power', 'np.exp')
    """
    names: set[str] = set()
    for entry in list(table.values()):  # a snapshot: defop may add entries meanwhile
        if entry is not None and isinstance(entry.text, str):
            names.update(_MATH_CALL.findall(entry.text))
    return {n: _fallback(n) for n in sorted(names)}


def _fallback(name: str) -> str:
    numpy = _NUMPY_NAME.get(name, name)
    return f"np.{numpy}" if isinstance(getattr(np, numpy, None), np.ufunc) else f"math.{name}"
