"""The Numba backend's table: how each op is written inside a fused, compiled loop.

``backend="numba"`` emits a NumPy driver (the NumPy target's code) in which fused regions
(:mod:`.fusion`) are calls to small ``numba.njit`` kernels: explicit loops over the region's
static shape whose body computes one element of every op of the region. An entry here is a
:class:`~symgrad.backends.targets.numpy.table.Template` over **scalars** (the element of each
operand, already typed as the graph says), or ``None``: the op has no scalar form and is
written by the driver with NumPy's call (matrix products and decompositions are BLAS/LAPACK
either way; reductions other than the ``sum`` a region ends with, shaping and indexing move
data rather than compute it). :data:`NOT_FUSED` says why for each ``None``; a test pins the
set. An :class:`Exact` entry is NumPy's value for results of its dtypes only (integer
remainders and powers trap or wrap in compiled code where NumPy gives 0 or raises): for
other results the op stays NumPy's call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....ir.shapes import FLOATS
from ...template import Template
from ..numpy.table import NUMPY

T = Template
_FLOAT_RESULTS = frozenset({"float64", "float32"})


@dataclass(frozen=True)
class Exact(Template):
    """A scalar form that gives NumPy's values for results of ``dtypes`` only."""

    dtypes: frozenset[str] = _FLOAT_RESULTS


def fuses(n: Any) -> bool:
    """Whether op node ``n``'s entry computes NumPy's value for its result dtype."""
    form = NUMBA.get(n.op)
    return form is not None and (not isinstance(form, Exact) or n.dtype in form.dtypes)

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

NOT_FUSED: dict[str, str] = {
    **dict.fromkeys((
        "sum", "mean", "max", "min", "prod", "all", "any", "logsumexp", "softmax",
        "log_softmax", "cumsum", "cumprod", "argmax", "argmin"),
        "a reduction: NumPy's call (a region ending in a full or partial sum fuses it)"),
    **dict.fromkeys(("sort", "argsort", "partition", "argpartition", "searchsorted"),
                    "sorting: NumPy's call"),
    **dict.fromkeys(("matmul", "dot", "outer", "einsum", "multi_dot", "matrix_power", "trace"),
                    "a product: BLAS through NumPy's call"),
    **dict.fromkeys((
        "transpose", "matrix_transpose", "reshape", "broadcast_to", "expand_dims", "squeeze",
        "concatenate", "stack", "index", "index_add", "scatter_sum", "take"),
        "shaping or indexing: NumPy's call (views, no arithmetic)"),
    **dict.fromkeys(("zeros_like", "ones_like", "eye", "zeros", "ones", "full", "arange",
                     "linspace"), "a constant-maker: NumPy's call"),
    **dict.fromkeys((
        "band", "inv", "det", "slogdet", "solve", "cholesky", "eigh",
        "eigvalsh", "svd", "svdvals", "pinv", "lstsq",
        "qr", "norm", "matrix_rank"),
        "a decomposition: LAPACK through NumPy's call"),
    **dict.fromkeys((
        "erf", "erfc", "erfcinv", "erfcx", "erfinv", "ndtr", "ndtri", "log_ndtr", "logit",
        "gamma", "gammaln", "digamma", "polygamma", "betaln", "xlogy", "xlog1py", "i0", "i0e",
        "i1", "i1e", "gammainc", "gammaincc", "betainc", "stdtr", "j0", "j1", "y0", "y1",
        "k0", "k1", "k0e", "k1e", "jv", "yv", "yn", "iv", "ive", "kv", "kve"),
        "a SciPy special function: scipy.special's call in the driver (Numba cannot call "
        "SciPy's ufuncs)"),
    "convolution": "a convolution: SciPy's (or JAX's) call in the driver",
    **dict.fromkeys(("expm", "lu_factor", "lu_permutation", "lu_pivots"),
                    "a matrix function: SciPy's (LAPACK) call in the driver"),
    "sinc": "np.sinc's call in the driver (its value at 0 has no one-line scalar form here)",
    "scan": "a loop: compiled whole as one function of its own where every op of its step "
            "has a loop_form (backends/targets/numba/loops.py), else the NumPy target's loop",
    "stop_gradient": "no arithmetic: the driver passes its operand on",
    "result": "a projection: the name its call's statement assigns (no line of its own)",
    **dict.fromkeys(("custom_vjp_call", "custom_jvp_call"),
                    "a custom rule's call: its value is its first operand (no arithmetic)"),
    **dict.fromkeys(("optimize", "solver_info", "ivp", "ivp_adjoint"),
                    "a SciPy solver's call in the driver (its callbacks are NumPy functions)"),
    **dict.fromkeys(("while_loop", "while_vjp"),
                    "a while loop's run-time loop in the driver (its step is a NumPy function)"),
    **dict.fromkeys(("custom_root", "custom_linear_solve"),
                    "an implicit function's value: its first operand (no arithmetic)"),
    "round": "np.round's decimals= has no scalar form in Numba that rounds like NumPy's",
    "floor_divide": "NumPy's call: Numba's floor division rounds otherwise at an infinite "
                    "divisor (floor_divide(-1.0, inf) is -1.0) and traps at INT64_MIN // -1",
    "astype": "a conversion: NumPy's call (float-to-int casts of NaN/inf are undefined in LLVM)",
    **dict.fromkeys(("sparse_matmul", "sparse_sample", "sparse_gather", "sparse_scatter",
                     "sparse_solve", "sparse_iterative", "sparse_iterative_info"),
                    "a sparse matrix: SciPy's sparse call in the driver (compiled sparse "
                    "kernels, SuperLU and the Krylov solvers)"),
}

NUMBA: dict[str, Template | None] = {
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
    **dict.fromkeys(NOT_FUSED),
}


# -- inside a compiled loop ------------------------------------------------------------------
# A scan's step compiled as one numba.njit function (backends/targets/numba/loops.py) runs every op
# on the step's own values: a 0-d value is a Numba scalar (the scalar forms above), an array
# a Numba array (NumPy's call where Numba implements it with NumPy's semantics).

_ARRAY_ELEMENTWISE = frozenset(_UFUNC) - {"heaviside", "floor_divide"}  # see NOT_FUSED
_PASS = frozenset({"stop_gradient", "custom_vjp_call", "custom_jvp_call"})  # no arithmetic
_FULL = {"sum": "np.sum", "mean": "np.mean", "max": "np.max", "min": "np.min"}
_ONE_AXIS = {"sum": "np.sum"}  # of these, Numba's takes axis=


def _index_form(n: Any, nodes: Any) -> Template | None:
    """Basic indexing by literal ints and slices (always in bounds: the key was checked
    against the static shape); a traced index or ``None`` has no form (Numba does not
    check bounds)."""
    key = n.attrs["key"]
    if len(n.args) != 1 or any(e is None or isinstance(e, str) for e in key):
        return None
    return NUMPY["index"]


def _reduction_form(n: Any, nodes: Any) -> Template | None:
    x = nodes[n.args[0]]
    axis, keep = n.attrs.get("axis"), n.attrs.get("keepdims")
    if keep or x.dtype not in FLOATS:
        return None
    if n.shape == ():
        return T(f"{_FULL[n.op]}({{0}})")
    one = _ONE_AXIS.get(n.op)
    if one is not None and axis is not None and len(axis) == 1:
        return T(f"{one}({{0}}, axis={axis[0] % len(x.shape)})")
    return None


def _blas(n: Any, nodes: Any) -> bool:
    """Operands BLAS takes: vectors or matrices of one floating dtype."""
    a, b = (nodes[k] for k in n.args)
    return (a.dtype == b.dtype and a.dtype in FLOATS and 1 <= len(a.shape) <= 2
            and 1 <= len(b.shape) <= 2)


def _dot_form(n: Any, nodes: Any) -> Template | None:
    return T("np.dot({0}, {1})") if _blas(n, nodes) else None


def _outer_form(n: Any, nodes: Any) -> Template | None:
    vectors = _blas(n, nodes) and all(len(nodes[k].shape) == 1 for k in n.args)
    # a broadcast product: Numba compiles np.outer much more slowly
    return T("{0}[:, None] * {1}") if vectors else None


def _transpose_form(n: Any, nodes: Any) -> Template | None:
    return T("{0}.T") if len(n.shape) == 2 else None


def _where_form(n: Any, nodes: Any) -> Template | None:
    return NUMPY["where"] if all(nodes[a].shape == n.shape for a in n.args) else None


def _concatenate_form(n: Any, nodes: Any) -> Template | None:
    axis = int(n.attrs["axis"]) % len(n.shape)
    return T(lambda names, attrs: f"np.concatenate(({', '.join(names)},), axis={axis})")


_ARRAY_FORMS: dict[str, Callable[[Any, Any], Template | None]] = {
    "index": _index_form, "where": _where_form, "concatenate": _concatenate_form,
    **dict.fromkeys(_FULL, _reduction_form),
    **dict.fromkeys(("matmul", "dot"), _dot_form), "outer": _outer_form,
    **dict.fromkeys(("transpose", "matrix_transpose"), _transpose_form),
}


def loop_form(n: Any, nodes: Any) -> Template | None:
    """How op node ``n`` (of graph ``nodes``) is written in a compiled loop's step: the
    scalar form where it and its operands are 0-d, else its array form; ``None`` where it
    has none there (the loop then runs on NumPy).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> e = sg.sum(sg.sin(x))
    >>> nodes = e.graph.nodes
    >>> loop_form(nodes[e.node], nodes).render(["t1"], nodes[e.node].attrs)
    'np.sum(t1)'
    """
    if n.op in _PASS:
        return NUMPY[n.op]
    form = NUMBA.get(n.op)
    if isinstance(form, Exact):
        return form if n.dtype in form.dtypes else None  # arrays too: Numba's own ufunc
    if n.shape == () and all(nodes[a].shape == () for a in n.args):
        return form
    if n.op in _ARRAY_ELEMENTWISE:
        return NUMPY[n.op]
    make = _ARRAY_FORMS.get(n.op)
    return make(n, nodes) if make is not None else None
