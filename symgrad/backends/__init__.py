"""The back end: what a graph becomes, in stages (as JAX stages ``Traced -> Lowered ->
Compiled`` and SymPy prints: a target is a printer subclass plus a table).

* :mod:`.interpreter` — ``evaluate``: runs each op's NumPy implementation (its stanza);
* :mod:`.request` — the :class:`~.request.Request` of ``to_source``/``compile``/the CLI,
  resolved once, and :func:`~.request.lower` running the compile passes on it once;
* :mod:`.printers` — one printer per kind of target (NumPy, scalar ``math``, the array API
  with JAX and torch as variants), over :mod:`.naming`, :mod:`.literals`, :mod:`.docstring`;
* :mod:`.target` — the targets of ``backend=``: each names its printer;
* the tables, keyed by op name, of :class:`~.template.Template`: :mod:`.numpy_table`,
  :mod:`.math_table`, :mod:`.array_api_table` (helpers in :mod:`.array_api_helpers`),
  :mod:`.jax_table`, :mod:`.torch_table`;
* :mod:`.source` — ``to_source``; :mod:`.compiled` — ``compile`` and ``scipy_functions``
  (:mod:`.array_compiled` loads the array targets); :mod:`.linearized` — ``linearize``.
* :mod:`.dask` — a loss summed over data rows, run chunk by chunk on Dask (``symgrad.dask``;
  imported on first use only, as it imports Dask).

:data:`TABLES` lists every emitter's table; a registry-driven test checks that each has an
entry for every op (``None`` says "no form here" explicitly; a missing key is a bug).
"""

from .compiled import compile, scipy_functions  # noqa: A004
from .interpreter import evaluate
from .linearized import linearize
from .math_table import MATH
from .numpy_table import NUMPY
from .source import to_source
from .target import TARGETS

TABLES = {"numpy": NUMPY, "math": MATH, **{k: t.table for k, t in TARGETS.items()}}

__all__ = ["TABLES", "compile", "evaluate", "linearize", "scipy_functions", "to_source"]
