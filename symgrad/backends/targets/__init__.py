"""The targets of ``backend=``: one folder each, and one line each in :data:`TARGETS`.

* :mod:`.numpy` — ``"numpy"`` (the default): :class:`~.numpy.printer.NumpyPrinter` and its
  all-scalar variant over Python floats (``scalars="math"``);
* :mod:`.array_api` — ``"array_api"``, ``"jax"`` and ``"torch"``: one printer with two thin
  variants, and the loader that keeps inputs on their library;
* :mod:`.numba` — ``"numba"``: the NumPy printer whose fused regions and loops are
  compiled by Numba;
* :mod:`.c` — ``"c"``: the Numba target's kernels written in C99, compiled by the system
  C compiler and loaded with ``ctypes``.

Adding a target is one folder and one line:

1. ``targets/<name>/printer.py``: a :class:`~symgrad.backends.printer.Printer` subclass
   (or a subclass of a target's printer) with its ``table`` — op name ->
   :class:`~symgrad.backends.template.Template`, ``None`` where the target has no form —
   and the :data:`~symgrad.backends.printer.HOOKS` that differ: how a literal and a
   module constant are written, the module's header, how a loop looks
   (``render_loop``, over a :class:`~symgrad.backends.loops.LoopSpec`);
2. ``targets/<name>/target.py``: its :class:`~symgrad.backends.target.Target` — the
   printer, the header lines, the libraries, ``unsupported`` (why an op has no form), and
   where loading differs from running the text as a module, a subclass overriding
   :meth:`~symgrad.backends.target.Target.load` / :meth:`~symgrad.backends.target.Target.wrap`;
3. one line in :data:`TARGETS` below.

Nothing outside the folder names the target: the stages, the printer base, the loop
emitter and ``compile`` ask the target and its printer, never which one it is.
``tests/backends/test_target.py`` defines a whole target in the test file this way.

>>> list(TARGETS)
['numpy', 'array_api', 'jax', 'torch', 'numba', 'c']
>>> target("numba").printer.__name__
'NumbaPrinter'
>>> target("cupy")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgrad.errors.BackendError: unknown backend 'cupy'; the backends are 'numpy', ...
"""

from __future__ import annotations

from typing import Any

from ...base.errors import BackendError
from ...ir.values import describe, exact_str
from ..target import Target
from .array_api.target import ARRAY_API, JAX, TORCH
from .c.target import C
from .numba.target import NUMBA
from .numpy.target import NUMPY

__all__ = ["TARGETS", "target"]

TARGETS: dict[str, Target] = {t.name: t for t in (
    NUMPY,
    ARRAY_API,
    JAX,
    TORCH,
    NUMBA,
    C,
)}


def target(name: Any) -> Target:
    """The target called ``name`` (an exact ``str``), or a :class:`BackendError` listing
    the valid names."""
    valid = ", ".join(repr(k) for k in TARGETS)
    if not isinstance(name, str):
        raise BackendError(f"backend must be a string, one of {valid}; got {describe(name)}")
    name = exact_str(name, "backend")
    if name not in TARGETS:
        raise BackendError(f"unknown backend {name!r}; the backends are {valid}")
    return TARGETS[name]
