"""``symgrad.numpy``: NumPy's namespace with NumPy's meanings, for tracing NumPy code.

Write a function against a namespace parameter and hand it this module::

    import symgrad as sg, symgrad.numpy as snp

    def nll(W, X, y, np):                       # ordinary NumPy code
        z = X @ W
        return np.mean(np.logaddexp(0.0, z) - y * z)

    W = sg.var("W", shape=(3,))
    f = nll(W, X, y, np=snp)                    # an Expr: differentiate, compile, ...

Every name means what it means in NumPy: ``snp.var`` is the variance (``sg.var`` is the
variable constructor), ``snp.linalg.solve``, ``snp.newaxis``, ``snp.pi``, ``snp.float64``.
On data (no symbolic operand) a call computes NumPy's value, so data and optimiser code
runs unchanged after ``import symgrad.numpy as np`` (see :mod:`symgrad.numpy.eager`).
Plain ``numpy`` works too when the inputs are symgrad Exprs (the array protocols route
``np.sin(x)``, ``np.linalg.solve(A, b)`` here). What symgrad does not trace (``nonzero``,
``unique``, in-place writes) raises :class:`~symgrad.errors.UnsupportedError` saying what to
use instead.

>>> import symgrad as sg, symgrad.numpy as snp
>>> x = sg.var("x", shape=(3,))
>>> sg.evaluate(snp.std(x), {"x": [1.0, 2.0, 3.0]}) ** 2
0.6666666666666666
"""

from __future__ import annotations

import sys as _sys
import types as _types
from typing import Any as _Any

import numpy as _np

from .. import frontend as _frontend
from .. import ops as _ops  # noqa: F401  (the ops, before their NumPy names are made)
from ..base.errors import UnsupportedError as _UnsupportedError
from ..frontend.functions import traced_names as _traced_names
from ..ir.expr import NAMESPACE as _NAMESPACE
from ..ir.expr import function as _function
from ..ir.op import ALIASES as _ALIASES
from ..ir.op import REGISTRY as _REGISTRY
from ..ir.op import UNSUPPORTED as _UNSUPPORTED
from .eager import eager as _eager

_frontend.numpy_functions.register_ufuncs()
# Expr.__array_namespace__ answers this module (the IR imports nothing above it)
_NAMESPACE["numpy"] = _sys.modules[__name__]

# constants, types and helpers that are NumPy's own (nothing to trace)
pi, e, inf, nan, newaxis, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, None, _np.euler_gamma
# NumPy's own scalar types, the same objects (``x.dtype.type is np.float32`` holds); on an
# expression they cannot cast (a NumPy scalar type converts its argument): use x.astype(...)
float64, float32, int64, int32, bool_ = _np.float64, _np.float32, _np.int64, _np.int32, _np.bool_
double, single, int_, intp, floating, integer = (_np.double, _np.single, _np.int_, _np.intp,
                                                 _np.floating, _np.integer)
dtype, finfo, iinfo, errstate, ndarray = _np.dtype, _np.finfo, _np.iinfo, _np.errstate, _np.ndarray
broadcast_shapes, result_type, can_cast = _np.broadcast_shapes, _np.result_type, _np.can_cast
globals()["bool"] = _np.bool_
r_, c_ = _frontend.numpy_extra.r_, _frontend.numpy_extra.c_


_EAGER: dict[str, _Any] = {}


# NumPy 2's spellings of the array API (np.atan2 is np.arctan2)
_NUMPY2 = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
           "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}


def _public(name: str) -> _Any:
    """The function NumPy calls ``name``, computing values on data (None: not covered)."""
    found = _EAGER.get(name)
    if found is None:
        fn = _function(_NUMPY2.get(name, name))
        if fn is None:
            return None
        found = _EAGER[name] = _eager(name, fn)
    return found


class _Namespace(_types.ModuleType):
    """``symgrad.numpy.linalg`` and ``symgrad.numpy.fft``: the functions NumPy names
    ``linalg.*`` and ``fft.*``."""

    def __getattr__(self, name: str) -> _Any:
        space = self.__name__.rsplit('.', 1)[-1]
        fn = _public(f"{space}.{name}")
        if fn is None:
            raise AttributeError(_missing(f"{space}.{name}"))
        return fn

    def __dir__(self) -> list[str]:
        prefix = self.__name__.rsplit(".", 1)[-1] + "."
        return sorted(n[len(prefix):] for n in _traced_names() if n.startswith(prefix))


def _missing(name: str) -> str:
    hint = _UNSUPPORTED.get(name, "it is not covered yet (dir(symgrad.numpy) lists what is)")
    return f"symgrad.numpy has no {name!r}: {hint}"


linalg = _Namespace(f"{__name__}.linalg")
_sys.modules[linalg.__name__] = linalg
fft = _Namespace(f"{__name__}.fft")
_sys.modules[fft.__name__] = fft


def __getattr__(name: str) -> _Any:
    fn = _public(name) if "." not in name else None
    if fn is None:
        raise AttributeError(_missing(name))
    return fn


def __dir__() -> list[str]:
    return sorted({*globals(), *(n for n in _traced_names() if "." not in n)})


random = _np.random  # NumPy's generators, for data code (draws are numbers, never traced)

for _name in [*_traced_names(), *_NUMPY2]:
    if "." not in _name and not _name.startswith("_"):
        globals()[_name] = _public(_name)

UnsupportedError = _UnsupportedError
del _name


# -- what is covered, for people (the docs' "NumPy and SciPy support" page holds this text) -----

# NumPy functions users reach for, beyond what symgrad covers: the gaps are listed by name.
COMMON = (
    "abs absolute add all allclose amax amin any append arange arccos arccosh arcsin arcsinh "
    "arctan arctan2 arctanh argmax argmin argpartition argsort argwhere around array "
    "array_split asarray atleast_1d atleast_2d atleast_3d average block broadcast_arrays "
    "broadcast_to cbrt ceil clip column_stack concatenate convolve copy corrcoef cos cosh "
    "count_nonzero cov cross cumprod cumsum deg2rad degrees diag diagflat diagonal diff divide "
    "dot dsplit dstack einsum empty empty_like equal exp exp2 expand_dims expm1 eye fabs fix "
    "flatnonzero flip fliplr flipud float_power floor floor_divide fmax fmin fmod full "
    "full_like gradient greater greater_equal heaviside hsplit hstack hypot identity imag inner "
    "interp isclose isfinite isinf isnan kron linspace log log10 log1p log2 logaddexp "
    "logaddexp2 logical_and logical_not logical_or logical_xor logspace matmul max maximum "
    "mean median meshgrid min minimum mod moveaxis multiply nan_to_num nanmax nanmean nanmin "
    "nansum negative nonzero ones ones_like outer pad partition percentile polyval positive "
    "power prod ptp quantile rad2deg radians ravel real reciprocal remainder repeat reshape "
    "rint roll rollaxis rot90 round searchsorted select sign signbit sin sinh sort split sqrt "
    "square squeeze stack std subtract sum swapaxes take take_along_axis tan tanh tensordot "
    "tile trace transpose trapezoid tril triu trunc unique var vdot vsplit vstack where "
    "zeros zeros_like linalg.cholesky linalg.det linalg.eigh linalg.eigvalsh linalg.inv "
    "linalg.lstsq linalg.matrix_power linalg.multi_dot linalg.norm linalg.pinv linalg.qr "
    "linalg.slogdet linalg.solve linalg.svd linalg.eig linalg.eigvals linalg.matrix_rank "
    "linalg.cond"
).split()


def support_markdown() -> str:
    """The "What is covered" list of the docs' NumPy support page (docs/guide/numpy.md), made
    from the registry (a test checks that the page holds exactly this text).

    >>> "linalg" in support_markdown() and "var" in support_markdown()
    True
    """
    names = [n for n in _traced_names() if not n.startswith("_") and _builtin(n)]
    numpy_names = [n for n in names if _is_numpy(n)]
    ufuncs = [n for n in numpy_names if isinstance(getattr(_np, n, None), _np.ufunc)]
    lin = [n for n in numpy_names if n.startswith("linalg.")]
    rest = [n for n in numpy_names if n not in ufuncs and n not in lin]
    extra = [n for n in names if not _is_numpy(n) and "." not in n]
    missing = [n for n in COMMON if n not in names]
    lines = [
        f"`symgrad.numpy` covers {len(numpy_names)} of NumPy's functions (names and meanings as "
        "NumPy's, keywords included), each differentiable where NumPy's function is: "
        f"{len(ufuncs)} ufuncs, {len(lin)} `numpy.linalg` functions and {len(rest)} others. "
        "The same names work through the array protocols (`np.sin(x)` on an Expr), in "
        "`sg.parse` text and, except `var` (the variable constructor), as `sg.<name>`.",
        "",
        "- **ufuncs:** " + ", ".join(f"`{n}`" for n in ufuncs),
        "- **`numpy.linalg`:** " + ", ".join(f"`{n[7:]}`" for n in lin),
        "- **other functions:** " + ", ".join(f"`{n}`" for n in rest),
        "- **beyond NumPy:** " + ", ".join(f"`{n}`" for n in extra),
        "",
        "Not covered, of the common ones:" if missing else "Every common function is covered.",
    ]
    for n in missing:
        lines.append(f"- `{n}`: " + _UNSUPPORTED.get(n, "not yet"))
    return "\n".join(lines) + "\n"


def _builtin(name: str) -> bool:
    op = _REGISTRY.get(_ALIASES.get(name, name))
    return op is None or op.builtin


def _is_numpy(name: str) -> bool:
    space, _, attr = name.rpartition(".")
    owner = _np.linalg if space == "linalg" else _np if not space else None
    return owner is not None and callable(getattr(owner, attr, None))
