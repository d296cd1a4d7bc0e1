"""The back end: what a graph becomes, in stages (as JAX stages ``Traced -> Lowered ->
Compiled`` and SymPy prints: a target is a printer subclass plus a table).

* :mod:`.interpreter` — ``evaluate``: runs each op's NumPy implementation (its stanza);
* :mod:`.stages` — the :class:`~.stages.Request` of ``to_source``/``compile``/the CLI,
  resolved once, and :func:`~.stages.lower` running the compile passes on it once;
* :mod:`.printer` — the base :class:`~.printer.Printer` and its hooks, over :mod:`.naming`,
  :mod:`.literals`, :mod:`.docstring`, :mod:`.lines`; :mod:`.loops` — a scan's loop function;
* :mod:`.targets` — one folder per target (``numpy``, ``array_api`` with JAX and torch as
  variants, ``numba``): its printer, its tables keyed by op name of
  :class:`~.template.Template`, what loads its modules;
* :mod:`.target` — the targets of ``backend=``: each names its printer;
* :mod:`.source` — ``to_source``; :mod:`.compiled` — ``compile`` and ``scipy_functions``;
  :mod:`.linearized` — ``linearize``.
* :mod:`.dask` — a loss summed over data rows, run chunk by chunk on Dask (``symgrad.dask``;
  imported on first use only, as it imports Dask).

:data:`TABLES` lists every emitter's table; a registry-driven test checks that each has an
entry for every op (``None`` says "no form here" explicitly; a missing key is a bug).
"""

from .compiled import compile, scipy_functions  # noqa: A004
from .interpreter import evaluate
from .linearized import linearize
from .source import to_source
from .target import TARGETS
from .targets.numpy.math_table import MATH
from .targets.numpy.table import NUMPY

TABLES = {"numpy": NUMPY, "math": MATH, **{k: t.table for k, t in TARGETS.items()}}

__all__ = ["TABLES", "compile", "evaluate", "linearize", "scipy_functions", "to_source"]
