"""The Numba backend's tables: how each op is written inside compiled code.

``backend="numba"`` emits a NumPy driver (the NumPy target's code) whose compiled parts —
kernels of straight-line code and whole loops — are ``numba.njit`` functions. Inside one:

* an elementwise op has a **scalar form** (:data:`NUMBA`, :func:`scalar_form`): a
  :class:`~symgrad.backends.template.Template` over scalars (the element of each operand,
  typed as the graph says), or a function of the node giving one (a SciPy special
  function's C kernel for the node's dtypes, ``round``'s decimals, ``astype``'s pair of
  dtypes). It is one line of a fused loop (:mod:`.source`), or of a 0-d value;
* every other op has an **array form** (:func:`array_form`): the lines of loop nests,
  BLAS/LAPACK calls or Numba's own NumPy functions that compute it (:mod:`.nests`,
  :mod:`.linalg`).

What has neither is the short list :data:`NOT_COMPILED` (op -> why), and a few attribute
cases :func:`why_not` names; such a node runs as NumPy's call in the driver, and a loop
whose step holds one runs as the NumPy target's loop. Tests pin the list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...template import Template
from ..numpy.table import NUMPY, NUMPY_TYPE, scalar_source
from . import special
from .linalg import LINALG_FORMS, linalg_form_missing
from .nests import FORMS, Site

T = Template

# elementwise ops whose element is NumPy's own ufunc on a scalar (Numba implements those
# ufuncs for scalars with NumPy's semantics: NaN propagation, signed zeros, inf)
_UFUNC = (
    "square", "maximum", "minimum", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos",
    "tan", "tanh", "sinh", "cosh", "abs", "sign", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "exp2", "log2", "log10", "cbrt", "reciprocal", "deg2rad", "rad2deg",
    "floor", "ceil", "rint", "trunc", "isnan", "isinf", "isfinite", "signbit", "logical_not",
    "arctan2", "hypot", "logaddexp", "logaddexp2", "fmod", "floor_divide", "fmax", "fmin",
    "copysign", "float_power", "heaviside", "logical_and", "logical_or", "logical_xor", "mod",
    "add", "subtract", "multiply", "divide", "power", "negative", "less", "less_equal",
    "greater", "greater_equal", "equal", "not_equal", "sigmoid", "softplus", "relu",
)

NOT_COMPILED: dict[str, str] = {
    **dict.fromkeys(("partition", "argpartition"),
                    "the order NumPy's introselect leaves the other elements in is its own "
                    "(Numba's quickselect leaves another)"),
    "expm": "SciPy's expm (scaling and squaring with Pade approximants) has no Numba form",
    **dict.fromkeys(("lu_factor", "lu_pivots", "lu_permutation"),
                    "SciPy's LAPACK getrf (its pivots) has no Numba form"),
    "scan": "a loop: compiled whole as one function of its own (loops.py), not inside a "
            "kernel of straight-line code",
}
"""The ops without a compiled form, and why: their nodes are NumPy's (SciPy's) calls."""

NUMBA: dict[str, Template | Callable[[Any, Any], Template | None] | None] = {
    **{name: NUMPY[name] for name in _UFUNC},
    # the scalar forms where NumPy's array template does not read as a scalar expression
    "sigmoid": T("1.0 / (1.0 + np.exp(-{0}))"),
    "softplus": T("np.logaddexp(0.0, {0})"),
    "relu": T("np.maximum({0}, 0)"),
    "where": T("({1} if {0} else {2})"),
    # Numba has no np.heaviside: NumPy's definition (NaN stays NaN; 0 below, h at zero)
    "heaviside": T("(np.nan if np.isnan({0}) else 0.0 if {0} < 0 else {1} if {0} == 0 else 1.0)"),
    "mod": T("np.remainder({0}, {1})"),
    "stop_gradient": T("{0}"),
}


def _sinc(n: Any, nodes: Any) -> Template:
    """NumPy's sinc: sin(y) / y with y = pi * x (x = 0 taken as 1e-20), in x's dtype."""
    pi = "np.pi" if n.dtype == "float64" else f"{NUMPY_TYPE[n.dtype]}(np.pi)"
    y = f"({pi} * ({{0}} if {{0}} != 0 else {NUMPY_TYPE[n.dtype]}(1e-20)))"
    return T(f"np.sin({y}) / {y}")


def _round(n: Any, nodes: Any) -> Template | None:
    """NumPy's round: rint(x * 10**d) / 10**d (d >= 0), rint(x / 10**-d) * 10**-d, the
    factor a float of x's dtype; integers are their own round for d >= 0."""
    d = int(n.attrs["decimals"])
    if n.dtype not in _FLOATS:
        return T("{0}") if d >= 0 else None
    f = scalar_source(10.0 ** abs(d))
    f = f if n.dtype == "float64" else f"{NUMPY_TYPE[n.dtype]}({f})"
    return T(f"np.rint({{0}} * {f}) / {f}" if d >= 0 else f"np.rint({{0}} / {f}) * {f}")


_INT_BOUNDS = {"int64": 2 ** 63, "int32": 2 ** 31}


def _astype(n: Any, nodes: Any) -> Template | None:
    """A conversion, as NumPy's on x86-64: float to int truncates, NaN, inf and values out
    of range give the most negative int (LLVM leaves those undefined, so they are tested);
    to bool is ``!= 0``; int to int wraps."""
    src, dst = nodes[n.args[0]].dtype, n.dtype
    if src == dst:
        return T("{0}")
    if dst == "bool":
        return T("({0} != 0)")
    if src in _FLOATS and dst in _INT_BOUNDS:
        if not _X86:
            return None
        b = _INT_BOUNDS[dst]
        return T(f"({NUMPY_TYPE[dst]}({{0}}) if {-float(b)!r} <= {{0}} < {float(b)!r} "
                 f"else {NUMPY_TYPE[dst]}({-b}))")
    return T(f"{NUMPY_TYPE[dst]}({{0}})")


_X86 = __import__("platform").machine().lower() in ("x86_64", "amd64")
_FLOATS = frozenset({"float64", "float32"})

NUMBA.update({"sinc": _sinc, "round": _round, "astype": _astype,
              **dict.fromkeys(special.SPECIAL, special.scalar_form)})


def scalar_form(n: Any, nodes: Any) -> Template | None:
    """The scalar form of elementwise node ``n`` (of graph ``nodes``), or None.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> e = sg.round(x, 2)
    >>> scalar_form(e.graph.nodes[e.node], e.graph.nodes).render(["v"], {})
    'np.rint(v * 100.0) / 100.0'
    """
    form = NUMBA.get(n.op)
    return form(n, nodes) if callable(form) else form


# -- everything else: array forms ------------------------------------------------------------

ARRAY_FORMS: dict[str, Callable[[Site], list[str]]] = {**FORMS, **LINALG_FORMS}


def why_not(n: Any, nodes: Any) -> str | None:
    """Why node ``n`` has no compiled form (None: it has one)."""
    if n.op in NOT_COMPILED:
        return NOT_COMPILED[n.op]
    if n.op in NUMBA:
        return None if scalar_form(n, nodes) is not None else _SCALAR_WHY.get(
            n.op, "no scalar form for these dtypes")
    if n.op not in ARRAY_FORMS:
        return "a user op (symgrad.extend): its NumPy implementation runs in the driver"
    return linalg_form_missing(n) if n.op in LINALG_FORMS else None


_SCALAR_WHY = {
    "round": "round of integers to negative decimals: NumPy's own integer rounding",
    "astype": "a float-to-int conversion off x86-64 (NumPy's result is the platform's)",
}


def array_form(n: Any, nodes: Any) -> Callable[[Site], list[str]] | None:
    """The array form of node ``n`` (its lines inside compiled code), or None."""
    if why_not(n, nodes) is not None:
        return None
    return ARRAY_FORMS.get(n.op)
