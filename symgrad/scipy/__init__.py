"""``symgrad.scipy``: SciPy's functions on symbolic values, with SciPy's names and meanings.

``symgrad.scipy.special`` (error functions, the normal CDF and its logarithm, gamma family,
``logsumexp``, ...), ``symgrad.scipy.stats`` (``norm``, ``t``, ``multivariate_normal``,
``gamma``, ``beta``) and ``symgrad.scipy.linalg`` (``solve_triangular``, ``cho_solve``, ...):
code written against ``scipy`` traces when its imports name these modules instead, as with
``autograd.scipy`` and ``jax.scipy``. SciPy's special-function ufuncs applied to an Expr
(``scipy.special.erf(x)``) are routed here by the array protocol.

>>> import symgrad as sg
>>> from symgrad.scipy import special
>>> float(sg.evaluate(special.erf(sg.var("x")), {"x": 0.0}))
0.0
"""

from . import linalg, special, stats  # special registers the scipy.special names

__all__ = ["linalg", "special", "stats"]
