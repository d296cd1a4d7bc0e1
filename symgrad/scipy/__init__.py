"""``symgrad.scipy``: SciPy's functions on symbolic values, with SciPy's names and meanings.

``symgrad.scipy.special`` (error functions, the normal CDF and its logarithm, gamma family,
Bessel functions, ``logsumexp``, ...), ``symgrad.scipy.stats`` (``norm``, ``t``,
``multivariate_normal``, ``gamma``, ``beta``), ``symgrad.scipy.linalg``
(``solve_triangular``, ``cho_solve``, ...) and ``symgrad.scipy.signal`` (``convolve``,
``correlate``, ...):
code written against ``scipy`` traces when its imports name these modules instead, as with
``autograd.scipy`` and ``jax.scipy``. SciPy's special-function ufuncs applied to an Expr
(``scipy.special.erf(x)``) are routed here by the array protocol.

>>> import symgrad as sg
>>> from symgrad.scipy import special
>>> float(sg.evaluate(special.erf(sg.var("x")), {"x": 0.0}))
0.0
"""

from . import linalg, signal, special, stats  # special registers the scipy.special names

__all__ = ["linalg", "signal", "special", "stats"]


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
        "functions, `expm`, the LU factors and the convolutions):",
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
    ]
    return "\n".join(lines) + "\n"


def _methods(dist: object) -> list[str]:
    return [m for m in dir(type(dist)) if not m.startswith("_") and m != "name"]
