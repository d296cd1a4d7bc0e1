"""The back end: what a graph becomes, in stages (as JAX stages ``Traced -> Lowered ->
Compiled`` and SymPy prints: a target is a printer subclass plus a table).

* :mod:`.interpreter` — ``evaluate``: runs each op's NumPy implementation (its stanza);
* :mod:`.stages` — the :class:`~.stages.Request` of ``to_source``/``compile``/the CLI,
  resolved once, and :func:`~.stages.lower` running the compile passes on it once;
* :mod:`.printer` — the base :class:`~.printer.Printer` and its hooks, over :mod:`.plan`
  (what each function computes and the names), :mod:`.naming`, :mod:`.literals`,
  :mod:`.docstring`, :mod:`.lines`; :mod:`.loops` — a scan's loop function;
* :mod:`.target` — a :class:`~.target.Target`: its printer, its module's header and how
  its modules load; :mod:`.targets` — one folder per target (``numpy``, ``array_api``
  with JAX and torch as variants, ``numba``): its printer, its tables keyed by op name of
  :class:`~.template.Template`, its :class:`~.target.Target`; the registry ``TARGETS``;
* :mod:`.source` — ``to_source``; :mod:`.compiled` — ``compile``; :mod:`.loaded` — a
  module run from its text and :class:`~.loaded.CompiledFunction`;
  :mod:`.scipy_functions` — ``scipy_functions``; :mod:`.linearized` — ``linearize``.
* :mod:`.dask` — a loss summed over data rows, run chunk by chunk on Dask (``symgrad.dask``;
  imported on first use only, as it imports Dask).

:data:`TABLES` lists every emitter's table; a registry-driven test checks that each has an
entry for every op (``None`` says "no form here" explicitly; a missing key is a bug).
"""

from . import callbacks  # noqa: F401  (registration: a solver's callbacks in emitted code)
from .compiled import compile  # noqa: A004
from .interpreter import evaluate
from .linearized import linearize
from .scipy_functions import scipy_functions
from .source import to_source
from .targets import TARGETS
from .targets.numpy.math_table import MATH
from .targets.numpy.table import NUMPY

TABLES = {"numpy": NUMPY, "math": MATH, **{k: t.table for k, t in TARGETS.items()}}

__all__ = ["TABLES", "compile", "evaluate", "linearize", "scipy_functions", "to_source"]
