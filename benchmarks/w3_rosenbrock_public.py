"""W3 as public code writes it: the Rosenbrock function of SciPy's optimisation tutorial,
with Python's built-in ``sum`` and ``** 2.0``::

    def rosen(x):
        return sum(100.0*(x[1:]-x[:-1]**2.0)**2.0 + (1-x[:-1])**2.0)

The same function as :mod:`.w3_rosenbrock` (whose hand-written NumPy gradient serves here
too), at n = 1000 (and n = 100). The built-in ``sum`` adds the n - 1 elements one by one:
symgrad traces n - 1 additions of indexed elements (its reductions pass makes them one
``sum``), JAX traces them as they come and PyTensor builds them as its graph.
"""

from __future__ import annotations

from .w3_rosenbrock import (  # noqa: F401 - the workload interface, shared with W3
    CONFIGS,
    DATA,
    PARAMS,
    SMOKE_CONFIG,
    inputs,
    numpy_forward,
    numpy_grad,
)

TITLE = "W3 Rosenbrock as SciPy's tutorial writes it (built-in sum)"


def rosen(x):
    """The Rosenbrock function, as the tutorial writes it."""
    return sum(100.0*(x[1:]-x[:-1]**2.0)**2.0 + (1-x[:-1])**2.0)


def symgrad_loss(cfg: dict):
    """(loss, params, data): :func:`rosen` traced on a symgrad variable."""
    import symgrad as sg

    x = sg.var("x", (cfg["n"],))
    return rosen(x), (x,), ()


def jax_loss(jax, cfg: dict):
    return lambda params, data: rosen(params[0])


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    x = pt.tensor("x", shape=(cfg["n"],))
    return rosen(x), (x,), ()
