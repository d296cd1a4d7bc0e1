"""``sg.stats``: what an expression costs, before and after each pass ``compile`` runs.

For each step — the graph as built, then with traced loops rolled (the ``rolling`` stage of
:mod:`symgrad.passes.registry`, with ``fast_math=True`` the ``loops`` stage; a row only when
something rolled), then after each pass of the ``compile`` stage in turn (cumulative, as
that stage applies them; with ``fast_math=True`` the ``fast_math`` stage) — the number of
nodes, of lines the emitted function would have, the histogram of ops, the number of loops
(``scan`` calls), and the cost model's estimated flops and bytes written
(:mod:`symgrad.passes.cost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..backends.boundary import exact_flag
from ..base.errors import SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ops.loops import loop_calls
from ..passes.context import Context
from ..passes.cost import cost
from ..passes.pipeline import compile_stages, run_stage
from ..passes.rebuild import rebuild
from ..passes.registry import query


@dataclass
class Stage:
    """One row of :class:`Stats`."""

    name: str
    nodes: int
    lines: int
    flops: int
    bytes: int
    ops: dict[str, int]
    loops: int = 0  # scan calls (a traced Python loop rolled into one counts once)


class Stats:
    """The stages of :func:`stats`: ``rows`` (a list of :class:`Stage`), ``before`` (as
    built) and ``after`` (the last stage); ``str()`` gives a table."""

    def __init__(self, rows: list[Stage], backend: str | None = None,
                 kernels: list[tuple[str, list[str]]] | None = None,
                 numpy_ops: dict[str, int] | None = None,
                 numpy_why: dict[str, str] | None = None) -> None:
        self.rows = rows
        self.backend = backend
        self.kernels = kernels or []  # compiled loops and their ops (backend="numba")
        self.numpy_ops = numpy_ops or {}  # op -> lines the NumPy driver runs (numba)
        self.numpy_why = numpy_why or {}  # op -> why NumPy runs it (numba)

    @property
    def before(self) -> Stage:
        return self.rows[0]

    @property
    def after(self) -> Stage:
        return self.rows[-1]

    def __str__(self) -> str:
        head = ("stage", "nodes", "lines", "flops", "bytes", "loops")
        body = [(r.name, f"{r.nodes:,}", f"{r.lines:,}", f"{r.flops:,}", f"{r.bytes:,}",
                 f"{r.loops:,}") for r in self.rows]
        widths = [max(len(h), *(len(b[k]) for b in body)) for k, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) if k == 0 else h.rjust(w)
                           for k, (h, w) in enumerate(zip(head, widths)))]
        lines += ["  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                            for k, (c, w) in enumerate(zip(row, widths))) for row in body]
        top = sorted(self.after.ops.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
        lines.append("ops after: " + ", ".join(f"{op} {n}" for op, n in top))
        if self.backend == "numba" or self.kernels or self.numpy_ops:  # a compiling target
            fused = sum(len(ops) for _, ops in self.kernels)
            calls = ", ".join(f"{op} {n}" + (f" ({self.numpy_why[op]})" if op in self.numpy_why
                                              else "")
                              for op, n in self.numpy_ops.items()) or "none"
            k = len(self.kernels)
            lines.append(f"{self.backend}: {k} compiled function{'' if k == 1 else 's'} holding "
                         f"{fused} ops; NumPy calls in the driver: {calls}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


def _stage(name: str, graph: Graph, ids: list[int]) -> Stage:
    c = cost(ids, graph)
    nodes = graph.nodes
    inline = sum(1 for i in graph.ancestors(ids)
                 if nodes[i].is_var or (nodes[i].is_const and nodes[i].shape == ()))
    return Stage(name, c.nodes, c.nodes - inline, c.flops, c.bytes, dict(c.ops),
                 loop_calls(graph, ids))


def stats(exprs: Expr | Sequence[Expr], fast_math: bool = False,
          backend: str | None = None) -> Stats:
    """Nodes, emitted lines, op histogram and estimated flops/bytes of ``exprs``: as
    built, then after each pass ``compile`` runs on them. With ``backend="numba"`` also
    what that backend would compile (``kernels``: each loop and its ops) and what its
    driver leaves to NumPy (``numpy_ops``), from the printed module (nothing is compiled).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(100,))
    >>> f = sg.sum(x * 100.0 + 100.0 * x)       # the same product, written twice
    >>> s = sg.stats([f, sg.grad(f, x)])
    >>> s.before.flops, s.after.flops     # 100*x and x*100 are one product, computed once
    (400, 300)
    >>> [r.name for r in s.rows][:2]
    ['as built', 'constant_folding']
    >>> h = sg.var("h")
    >>> for _ in range(50):                     # a Python loop: rolled into one scan
    ...     h = sg.sin(h) * h + sg.cos(h)
    >>> s = sg.stats(h)
    >>> [(r.name, r.loops) for r in s.rows][:2], s.before.nodes > 10 * s.after.nodes
    ([('as built', 0), ('loops rolled', 1)], True)
    >>> W = sg.var("W", shape=(3, 3))
    >>> print(str(sg.stats(sg.sum(sg.tanh(W @ x[:3]) * 2.0), backend="numba")).splitlines()[-1])
    numba: 1 compiled function holding 5 ops; NumPy calls in the driver: none
    """
    outs = [exprs] if isinstance(exprs, Expr) else \
        list(exprs) if isinstance(exprs, (list, tuple)) else []
    if not outs or not all(isinstance(e, Expr) for e in outs):
        raise SymgradError("stats needs an Expr or a non-empty list of Exprs")
    fast_math = exact_flag(fast_math, "fast_math")
    graph = max((e.graph for e in outs), key=len)
    ids = [graph.find(e) for e in outs]
    rows = [_stage("as built", graph, ids)]
    loops, rewrites = compile_stages(True, fast_math)[:2]
    graph, rolled = run_stage(loops, graph, ids, Context())
    if rolled != ids:
        ids = rolled
        rows.append(_stage("loops rolled" + (", reduced" if fast_math else ""), graph, ids))
    chain = query(rewrites)
    for k, p in enumerate(chain, start=1):
        new, new_ids = rebuild(graph, ids, chain[:k], chain[:k])
        rows.append(_stage(p.name, new, new_ids))
    if backend is None:
        return Stats(rows)
    return Stats(rows, *_backend_plan(outs, fast_math, backend))


def _backend_plan(outs: list[Expr], fast_math: bool, backend: Any) -> tuple:
    """``(name, kernels, numpy_ops, numpy_why)`` of the module ``backend`` would print for
    ``outs`` (empty for a backend that compiles no code of its own)."""
    from ..backends.stages import lower, request

    low = lower(request(outs, backend=backend, fast_math=fast_math))
    printer = low.request.target.printer(low)
    printer.module()
    kernels, numpy_ops, numpy_why = printer.stats() or ([], {}, {})
    return low.request.target.name, kernels, numpy_ops, numpy_why


def summary(exprs: Any) -> str:
    """One line: the before/after of :func:`stats` (for ``symgrad source --stats``)."""
    s = stats(exprs)
    b, a = s.before, s.after
    return (f"symgrad stats: {b.nodes:,} -> {a.nodes:,} nodes, {b.lines:,} -> {a.lines:,} "
            f"lines, {b.flops:,} -> {a.flops:,} flops (estimated), {b.bytes:,} -> "
            f"{a.bytes:,} bytes written")
