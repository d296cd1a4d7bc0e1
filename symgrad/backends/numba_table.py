"""The Numba backend's table: how each op is written inside a fused, compiled loop.

``backend="numba"`` emits a NumPy driver (the NumPy target's code) in which fused regions
(:mod:`.fusion`) are calls to small ``numba.njit`` kernels: explicit loops over the region's
static shape whose body computes one element of every op of the region. An entry here is a
:class:`~symgrad.backends.numpy_table.Template` over **scalars** (the element of each
operand, already typed as the graph says), or ``None``: the op has no scalar form and is
written by the driver with NumPy's call (matrix products and decompositions are BLAS/LAPACK
either way; reductions other than the ``sum`` a region ends with, shaping and indexing move
data rather than compute it). :data:`NOT_FUSED` says why for each ``None``; a test pins the
set.
"""

from __future__ import annotations

from .numpy_table import NUMPY
from .template import Template

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
        "band", "inv", "det", "slogdet", "slogdet_sign", "solve", "cholesky", "eigh",
        "eigh_vectors", "eigvalsh", "svd", "svd_u", "svd_vh", "svdvals", "pinv", "lstsq",
        "lstsq_residuals", "lstsq_rank", "lstsq_sv", "qr", "qr_q", "norm", "matrix_rank"),
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
    "scan": "a loop: the driver calls its loop function (backends/loops.py)",
    "stop_gradient": "no arithmetic: the driver passes its operand on",
    **dict.fromkeys(("custom_vjp_call", "custom_jvp_call"),
                    "a custom rule's call: its value is its first operand (no arithmetic)"),
    "round": "np.round's decimals= has no scalar form in Numba that rounds like NumPy's",
    "astype": "a conversion: NumPy's call (float-to-int casts of NaN/inf are undefined in LLVM)",
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
    "mod": T("np.remainder({0}, {1})"),
    **dict.fromkeys(NOT_FUSED),
}
