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
whose step holds one runs as the NumPy target's loop. Tests pin the list. An
:class:`Exact` scalar form is NumPy's value for results of its dtypes only (integer
remainders and powers trap or wrap in compiled code where NumPy gives 0 or raises): for
other results the op stays NumPy's call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....ir.op import RESULT
from ....ir.shapes import FLOATS, is_complex
from ...template import Template
from ..numpy.table import NUMPY, NUMPY_TYPE, scalar_source
from . import special
from .linalg import LINALG_FORMS, linalg_form_missing
from .nests import FORMS, Site

T = Template


@dataclass(frozen=True)
class Exact(Template):
    """A scalar form that gives NumPy's values for results of ``dtypes`` only."""

    dtypes: frozenset[str] = frozenset(FLOATS)

# elementwise ops whose element is NumPy's own ufunc on a scalar (Numba implements those
# ufuncs for scalars with NumPy's semantics: NaN propagation, signed zeros, inf)
_UFUNC = (
    "square", "maximum", "minimum", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos",
    "tan", "tanh", "sinh", "cosh", "abs", "sign", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "exp2", "log2", "log10", "cbrt", "reciprocal", "deg2rad", "rad2deg",
    "floor", "ceil", "rint", "trunc", "isnan", "isinf", "isfinite", "signbit", "logical_not",
    "arctan2", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin",
    "copysign", "float_power", "heaviside", "logical_and", "logical_or", "logical_xor",
    "add", "subtract", "multiply", "divide", "negative", "less", "less_equal",
    "greater", "greater_equal", "equal", "not_equal", "sigmoid", "softplus", "relu",
)

NOT_COMPILED: dict[str, str] = {
    **dict.fromkeys(("partition", "argpartition"),
                    "the order NumPy's introselect leaves the other elements in is its own "
                    "(Numba's quickselect leaves another)"),
    "expm": "SciPy's expm (scaling and squaring with Pade approximants) has no Numba form",
    "sqrtm": "SciPy's sqrtm (the Schur method) has no Numba form",
    **dict.fromkeys(("fftn", "rfftn", "irfft"), "Numba has no FFT: NumPy's in the driver"),
    **dict.fromkeys(("eig", "eigvals"), "Numba's eig refuses a real matrix with complex "
                    "eigenvalues: NumPy's in the driver"),
    **dict.fromkeys(("lu_factor", "lu_pivots", "lu_permutation"),
                    "SciPy's LAPACK getrf (its pivots) has no Numba form"),
    "scan": "a loop: compiled whole as one function of its own (loops.py), not inside a "
            "kernel of straight-line code",
    RESULT: "a projection: the name its call's statement assigns (no line of its own)",
    **dict.fromkeys(("optimize", "solver_info", "ivp", "ivp_adjoint"),
                    "a SciPy solver's call in the driver (its callbacks are NumPy functions)"),
    **dict.fromkeys(("while_loop", "while_vjp"),
                    "a while loop's run-time loop in the driver: compiled as a loop function "
                    "of its own where its condition and step compile (while_loops.py), else "
                    "over NumPy functions"),
    **dict.fromkeys(("custom_root", "custom_linear_solve"),
                    "an implicit function's call: the driver's (its solver runs there)"),
    **dict.fromkeys(("sparse_matmul", "sparse_sample", "sparse_gather", "sparse_scatter",
                     "sparse_solve", "sparse_iterative", "sparse_iterative_info"),
                    "a sparse matrix: SciPy's sparse call in the driver (compiled sparse "
                    "kernels, SuperLU and the Krylov solvers)"),
}
"""The ops without a compiled form, and why: their nodes are NumPy's (SciPy's) calls."""
COMPLEX_IN_DRIVER: dict[str, str] = dict.fromkeys(
    ("max", "min", "argmax", "argmin", "less", "less_equal", "greater", "greater_equal"),
    "Numba has no order of complex scalars: NumPy's lexicographic one in the driver")
"""The ops whose complex operands have no compiled form (their nodes are NumPy's calls)."""
NOT_FUSED = NOT_COMPILED  # the name the benchmarks' census of NumPy calls reads

NUMBA: dict[str, Template | Callable[[Any, Any], Template | None] | None] = {
    **{name: NUMPY[name] for name in _UFUNC},
    # the scalar forms where NumPy's array template does not read as a scalar expression
    "sigmoid": T("1.0 / (1.0 + np.exp(-{0}))"),
    "softplus": T("np.logaddexp(0.0, {0})"),
    "relu": T("np.maximum({0}, 0)"),
    "where": T("({1} if {0} else {2})"),
    # Numba has no np.heaviside: NumPy's definition (NaN stays NaN; 0 below, h at zero)
    "heaviside": T("(np.nan if np.isnan({0}) else 0.0 if {0} < 0 else {1} if {0} == 0 else 1.0)"),
    # integer remainders trap at INT_MIN % -1 and wrap where NumPy gives 0 (x % 0), integer
    # powers give garbage for negative exponents where NumPy raises: floats only
    "mod": Exact("np.remainder({0}, {1})"),
    "power": Exact(NUMPY["power"].text),
    # C's fmod keeps the dividend's sign (fmod(-0.0, inf) is -0.0), Numba's loses it
    "fmod": Exact("(np.fmod({0}, {1}) if np.fmod({0}, {1}) != 0 else np.copysign(0.0, {0}))"),
    # complex numbers (ops/complex.py): Numba's complex scalars
    "real": T("{0}.real"), "imag": T("{0}.imag"), "conj": T("np.conjugate({0})"),
    "angle": T("np.angle({0})"),
    # Numba's floor division rounds otherwise at an infinite divisor (floor_divide(-1.0,
    # inf) is -1.0) and traps at INT64_MIN // -1: NumPy's algorithm (_sg_floordiv), float64
    "floor_divide": Exact("_sg_floordiv({0}, {1})", dtypes=frozenset({"float64"})),
    "stop_gradient": T("{0}"),
}


def _sinc(n: Any, nodes: Any) -> Template:
    """NumPy's sinc: sin(y) / y with y = pi * x (x = 0 taken as 1e-20), in x's dtype."""
    pi = "np.pi" if n.dtype == "float64" else f"{NUMPY_TYPE[n.dtype]}(np.pi)"
    y = f"({pi} * ({{0}} if {{0}} != 0 else {NUMPY_TYPE[n.dtype]}(1e-20)))"
    return T(f"np.sin({y}) / {y}")


def _divide(n: Any, nodes: Any) -> Template:
    """Division; a complex one as ``np.divide``: Numba's ``/`` on complex scalars raises
    ZeroDivisionError at a zero divisor whatever the error model, where ``np.divide`` is
    NumPy's algorithm (Smith's, an inf or NaN at zero) to the bit."""
    return T("np.divide({0}, {1})") if is_complex(str(n.dtype)) else NUMPY["divide"]


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

NUMBA.update({"divide": _divide, "sinc": _sinc, "round": _round, "astype": _astype,
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
    if isinstance(form, Exact):
        return form if n.dtype in form.dtypes else None
    return form(n, nodes) if callable(form) else form


def fuses(n: Any) -> bool:
    """Whether op node ``n``'s scalar form computes NumPy's value for its result dtype."""
    form = NUMBA.get(n.op)
    return form is not None and (not isinstance(form, Exact) or n.dtype in form.dtypes)


# -- everything else: array forms ------------------------------------------------------------

ARRAY_FORMS: dict[str, Callable[[Site], list[str]]] = {**FORMS, **LINALG_FORMS}


CALL_WHY = ("a user's call with several results (a custom rule): its NumPy function runs "
            "in the driver")


def why_not(n: Any, nodes: Any) -> str | None:
    """Why node ``n`` has no compiled form (None: it has one)."""
    if n.op in NOT_COMPILED:
        return NOT_COMPILED[n.op]
    if n.op in COMPLEX_IN_DRIVER and any(is_complex(str(nodes[a].dtype)) for a in n.args):
        return COMPLEX_IN_DRIVER[n.op]
    if n.is_call and n.op not in LINALG_FORMS:  # (a loop is a call too: NOT_COMPILED's)
        return CALL_WHY
    if n.op in NUMBA:
        return None if scalar_form(n, nodes) is not None else _SCALAR_WHY.get(
            n.op, "no scalar form for these dtypes")
    if n.op not in ARRAY_FORMS:
        return "a user op (symgrad.extend): its NumPy implementation runs in the driver"
    return linalg_form_missing(n, nodes) if n.op in LINALG_FORMS else None


_SCALAR_WHY = {
    **dict.fromkeys(("mod", "power", "fmod"),
                    "integer remainders and powers: NumPy's call (compiled ones trap at "
                    "INT64_MIN % -1, wrap at x % 0, give garbage for negative exponents)"),
    "floor_divide": "integer or float32 floor division: NumPy's call (compiled code traps at "
                    "INT64_MIN // -1; NumPy rounds float32 in float32)",
    "round": "round of integers to negative decimals: NumPy's own integer rounding",
    "astype": "a float-to-int conversion off x86-64 (NumPy's result is the platform's)",
}


def array_form(n: Any, nodes: Any) -> Callable[[Site], list[str]] | None:
    """The array form of node ``n`` (its lines inside compiled code), or None."""
    if why_not(n, nodes) is not None:
        return None
    return ARRAY_FORMS.get(n.op)


def loop_form(n: Any, nodes: Any) -> Template | Callable[[Site], list[str]] | None:
    """How node ``n`` is written inside compiled code (a loop's step, a kernel): its scalar
    form, else its array form; None where it has neither (:func:`why_not` says why).

    >>> import symgrad as sg
    >>> k = sg.var("k", dtype="int64")
    >>> e = k % 3
    >>> loop_form(e.graph.nodes[e.node], e.graph.nodes) is None
    True
    """
    if why_not(n, nodes) is not None:
        return None
    return scalar_form(n, nodes) or ARRAY_FORMS.get(n.op)


def _sg_floordiv(a, b):  # (copied into modules and compiled there: no annotations)
    """NumPy's floor division of two float64 (npy_divmod): fmod's remainder moved to the
    divisor's sign, the quotient rounded to the nearest integer below, zero signed."""
    mod = np.fmod(a, b)
    if b == 0:
        return a / b
    div = (a - mod) / b
    if mod != 0:
        if (b < 0) != (mod < 0):
            div -= 1.0
    if div != 0:
        fl = np.floor(div)
        if div - fl > 0.5:
            fl += 1.0
        return fl
    return np.copysign(0.0, a / b)


def binding_lines(source: str) -> list[str]:
    """The module-level lines defining the helpers of the table's forms ``source`` calls."""
    if "_sg_floordiv(" not in source:
        return []
    from ...printer import helper_source

    return ["", "", "@_jit", *helper_source(_sg_floordiv)]
