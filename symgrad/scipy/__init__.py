"""``symgrad.scipy``: SciPy's functions on symbolic values, with SciPy's names and meanings.

``symgrad.scipy.special`` (error functions, the normal CDF and its logarithm, gamma family,
Bessel functions, ``logsumexp``, ...), ``symgrad.scipy.stats`` (``norm``, ``t``,
``multivariate_normal``, ``gamma``, ``beta``), ``symgrad.scipy.fft`` (the transforms of
``numpy.fft`` with SciPy's signatures), ``symgrad.scipy.linalg``
(``solve_triangular``, ``cho_solve``, ...), ``symgrad.scipy.signal`` (``convolve``,
``correlate``, ...), ``symgrad.scipy.sparse`` (sparse matrices with symbolic values,
``.linalg``'s solvers), ``symgrad.scipy.optimize`` (``root``, ``minimize``, ... solved by
SciPy, differentiated implicitly) and ``symgrad.scipy.integrate`` (``solve_ivp``,
``odeint``, with sensitivities): code written against ``scipy`` traces when its imports
name these modules instead, as with ``autograd.scipy`` and ``jax.scipy``, and inside
``sg.grad(fun)`` and the other function transforms ``scipy``'s own names are read as these
(:mod:`symgrad.frontend.scipy_names`). SciPy's special-function ufuncs applied to an Expr
(``scipy.special.erf(x)``) are routed here by the array protocol.

>>> import symgrad as sg
>>> from symgrad.scipy import special
>>> float(sg.evaluate(special.erf(sg.var("x")), {"x": 0.0}))
0.0
"""

from ..frontend import scipy_names as _names
from . import fft, integrate, linalg, optimize, signal, sparse, special, stats  # special: ufuncs

__all__ = ["fft", "integrate", "linalg", "optimize", "signal", "sparse", "special", "stats"]

for _name in __all__:  # scipy.<name> read by a traced function means this module's
    _names.register(_name, globals()[_name])
_names.register("sparse.linalg", sparse.linalg)


def support_markdown() -> str:
    """The SciPy list of the docs' NumPy and SciPy support page (docs/guide/numpy.md), made
    from these modules (a test checks that the page holds exactly this text).

    >>> "solve_triangular" in support_markdown()
    True
    """
    dists = ", ".join(f"`{n}` ({', '.join(_methods(getattr(stats, n)))})" for n in stats.__all__)
    lines = [
        "SciPy's functions, as `symgrad.scipy.special`, `.stats`, `.linalg` and `.signal` "
        "(SciPy's names, signatures and meanings; SciPy is needed to evaluate the special "
        "functions, `expm`, `sqrtm`, the LU factors and the convolutions):",
        "",
        f"- **`scipy.special`** ({len(special.__all__)}; SciPy's ufuncs on an Expr route here): "
        + ", ".join(f"`{n}`" for n in special.__all__),
        f"- **`scipy.stats`** (built from ops; `scipy.stats.norm.cdf(x)` on an Expr names "
        f"`symgrad.scipy.stats.norm.cdf`): {dists}",
        f"- **`scipy.linalg`** ({len(linalg.__all__)}, from ops): "
        + ", ".join(f"`{n}`" for n in linalg.__all__),
        f"- **`scipy.signal`** ({len(signal.__all__)}, real arrays, every mode; "
        "`scipy.signal.convolve(x, ...)` on an Expr names `symgrad.scipy.signal.convolve`): "
        + ", ".join(f"`{n}`" for n in signal.__all__),
        "- **`scipy.sparse`** (symbolic values on a fixed pattern; SciPy's sparse matrices "
        "are operands too): " + ", ".join(f"`{n}`" for n in sparse.__all__ if n != "linalg")
        + "; **`.linalg`** (implicit gradients): "
        + ", ".join(f"`{n}`" for n in sparse.linalg.__all__ if n != "SuperLU"),
    ]
    return "\n".join(lines) + "\n"


def _methods(dist: object) -> list[str]:
    return [m for m in dir(type(dist)) if not m.startswith("_") and m != "name"]
