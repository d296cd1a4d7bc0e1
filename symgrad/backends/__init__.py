"""The back end: what a graph becomes. One table per target, keyed by op name.

* :mod:`.interpreter` — ``evaluate``: runs each op's NumPy implementation (its stanza);
* :mod:`.source` — ``to_source``: the emitter of standalone source, for any target;
* :mod:`.target` — the targets of ``to_source(..., backend=...)``: ``numpy``, ``array_api``
  (:mod:`.array_api_table`, helpers in :mod:`.array_api_helpers`), ``jax``
  (:mod:`.jax_table`), ``torch`` (:mod:`.torch_table`); :mod:`.array_compiled` loads them;
* :mod:`.math_table` — the scalar ``math`` form used by ``to_source(..., scalars="math")``;
* :mod:`.compiled` — ``compile`` and ``scipy_functions``: the emitted source, loaded;
* :mod:`.linearized` — ``linearize``: the value at a point and the emitted map ``v -> J v``.

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
