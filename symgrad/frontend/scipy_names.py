"""SciPy's own names in a traced function: while ``sg.grad(fun)`` (or any function
transform) traces ``fun``, the SciPy objects its globals and closed-over cells hold, and
those of the user's helpers it calls, are read as their ``symgrad.scipy`` counterparts
(:mod:`symgrad.frontend.capture` asks :func:`counterpart`). So code written with
``from scipy.stats import norm``, ``import scipy.linalg``, ``scipy.integrate.solve_ivp``
traces with no change to its imports.

* a SciPy function or object symgrad has (``scipy.stats.norm``,
  ``scipy.linalg.solve_triangular``, ``scipy.optimize.root``) becomes symgrad's, and a
  bound method of one (``cdf = norm.cdf``) symgrad's method;
* a SciPy module (``scipy``, ``scipy.stats`` ...) becomes a module that gives symgrad's
  function where it has one and SciPy's otherwise; a function symgrad lacks is SciPy's own,
  whose call on a symbolic value raises the error naming what symgrad covers.

The counterparts are registered by :mod:`symgrad.scipy` (the layer above), and looked up
only when SciPy itself is imported.

>>> import numpy as np, scipy.stats, symgrad as sg
>>> def tail(x):
...     return scipy.stats.norm.logsf(x)
>>> round(float(sg.grad(tail)(1.0)), 10)                 # -pdf(1) / sf(1)
-1.5251352762
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["counterpart", "register"]

_MODULES: dict[str, types.ModuleType] = {}  # "stats" -> symgrad.scipy.stats
_STATE: dict[str, Any] = {}  # the table, built once SciPy is imported


def register(name: str, module: types.ModuleType) -> None:
    """Make ``module`` (``symgrad.scipy.<name>``) the counterpart of ``scipy.<name>``
    (``name`` dotted for a submodule: ``"sparse.linalg"``)."""
    _MODULES[name] = module
    _STATE.clear()


class _SciPyModule(types.ModuleType):
    """A SciPy module as a traced function sees it: symgrad's function where it has one,
    SciPy's otherwise (a submodule: the same kind of module)."""

    def __init__(self, real: types.ModuleType, ours: types.ModuleType | None) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real, self._ours = real, ours

    def __getattr__(self, name: str) -> Any:
        ours = self._ours
        if ours is not None and name in getattr(ours, "__all__", ()):
            return getattr(ours, name)
        value = getattr(self._real, name)
        if isinstance(value, types.ModuleType):
            return _module(value)
        return value

    def __repr__(self) -> str:
        return f"<module {self._real.__name__!r} (traced: symgrad.scipy where it has it)>"


def _module(real: types.ModuleType) -> Any:
    table = _table()
    found = table["modules"].get(id(real))
    if found is None:
        ours = _MODULES.get(real.__name__.partition(".")[2])  # "sparse.linalg"
        found = table["modules"][id(real)] = _SciPyModule(real, ours)
    return found


def _table() -> dict[str, Any]:
    """``{"objects": {id of a SciPy object: symgrad's}, "modules": {...}}``, built on first
    use after SciPy is imported."""
    if _STATE:
        return _STATE
    objects: dict[int, Any] = {}
    for name, ours in _MODULES.items():
        real = sys.modules.get(f"scipy.{name}")
        if real is None:
            try:
                real = __import__(f"scipy.{name}", fromlist=["_"])
            except ImportError:
                continue
        for attr in getattr(ours, "__all__", ()):
            theirs = getattr(real, attr, None)
            if theirs is not None and not isinstance(theirs, (int, float, str, type(None))):
                objects[id(theirs)] = (theirs, getattr(ours, attr))
    _STATE.update(objects=objects, modules={})
    return _STATE


def counterpart(value: Any) -> Any:
    """symgrad's counterpart of the SciPy object ``value``, or None (not SciPy's, or SciPy
    not imported)."""
    if "scipy" not in sys.modules:
        return None
    if isinstance(value, types.ModuleType):
        name = value.__name__
        return _module(value) if name == "scipy" or name.startswith("scipy.") else None
    if not _scipy_kind(value):
        return None
    found = _table()["objects"].get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    owner = getattr(value, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        ours = counterpart(owner)
        name = getattr(value, "__name__", None)
        if ours is not None and name and hasattr(ours, name):
            return getattr(ours, name)
    return None


def _scipy_kind(value: Any) -> bool:
    """Whether ``value`` is SciPy's (its type, or the function's module, is SciPy's)."""
    for mod in (getattr(value, "__module__", None), getattr(type(value), "__module__", None)):
        if isinstance(mod, str) and (mod == "scipy" or mod.startswith("scipy.")):
            return True
    owner = getattr(value, "__self__", None)
    return owner is not None and _scipy_kind(owner)
