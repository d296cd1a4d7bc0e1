"""``to_sympy`` of expressions with loops: a ``scan`` unrolled for its concrete length.

A scan's final carry becomes the sympy expression of its recurrence run ``length`` times
(``scan(lambda c, x: (c * x, c), 1.0, xs)`` of length 3 is ``xs[0]*xs[1]*xs[2]``); row
``t`` of a scanned array variable ``xs`` is ``xs[t]`` (a sympy ``Indexed``); the stacked
per-step results are a list of per-step expressions, given back as a sympy ``Array`` when
they are the translated expression itself (a stacked value inside a formula has no sympy
form). As for arrays everywhere in :mod:`.sympy_io`, an expression of array values
describes each element.

Unrolling writes out ``length`` copies of the step: the work (steps times step nodes, nested
loops multiplied) and the tree of the result (a shared subexpression once per use) must fit
``sg.limits.print_tree_nodes``; past it a LimitError says to use ``sg.latex``, which prints
the loop as its recurrence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.errors import SymgradError
from ..ir.body import Body
from ..ir.graph import Graph
from ..ir.limits import exceeded, limits
from ..ir.op import REGISTRY, RESULT
from .sympy_forms import number, symbol, sympy_form


@dataclass
class Stacked:
    """A value stacked along a new leading axis, one sympy expression per step (and the
    tree size of each)."""

    items: list
    sizes: list[int]


@dataclass
class Budget:
    """The work of one ``to_sympy`` call, checked against ``sg.limits.print_tree_nodes``:
    the tree size of every expression it builds, summed (sympy's own work on a product or
    sum grows with the size of its operands: a product of T factors built a factor at a
    time costs it about T**2/2)."""

    what: str
    work: int = 0
    cap: int = field(default_factory=lambda: limits.print_tree_nodes)

    def check(self, more: int, length: int) -> None:
        """Before a loop of ``length`` steps of ``more`` nodes in all is unrolled."""
        if self.work + more > self.cap:
            raise self.over(f"unrolling a loop of {length:,} steps writes more than "
                            f"{self.cap:,} nodes")

    def size(self, n: int) -> int:
        """The tree size ``n`` of an expression just built, spent."""
        self.work += n
        if self.work > self.cap:
            raise self.over(f"the unrolled loops write more than {self.cap:,} nodes (the "
                            "expressions of every step, each counted as a tree)")
        return n

    def over(self, why: str):
        return exceeded("print_tree_nodes", f"{self.what}: {why}; sg.latex(expr) prints a "
                        "loop as its recurrence (or translate a shorter loop)")


class Translation:
    """One graph translated node by node into ``done`` (sympy values, or :class:`Stacked`
    for stacked loop results) with their tree sizes; loops unrolled."""

    def __init__(self, sp, graph: Graph, budget: Budget) -> None:
        self.sp, self.graph, self.budget = sp, graph, budget
        self.done: dict[int, Any] = {}
        self.sizes: dict[int, int] = {}
        self.calls: dict[int, list] = {}  # a scan call -> its results

    def run(self, order: list[int]) -> None:
        nodes, done, sizes = self.graph.nodes, self.done, self.sizes
        for i in order:
            if i in done:
                continue
            n = nodes[i]
            if n.is_var:
                done[i], sizes[i] = symbol(self.sp, n.name, n.dtype), 1
            elif n.is_const:
                if n.shape == ():  # an array constant translates only as a loop's rows
                    done[i], sizes[i] = number(self.sp, n.attrs["value"], i), 1
            elif isinstance(n.attrs.get("body"), Body):  # a loop: every result, unrolled
                self.calls[i] = self._unroll(n)
            elif n.op == RESULT and n.args[0] in self.calls:  # one of them
                done[i], sizes[i] = self.calls[n.args[0]][n.attrs["index"]]
            else:
                for a in n.args:
                    if a not in done:
                        number(self.sp, nodes[a].attrs["value"], a)  # its error
                    if isinstance(done[a], Stacked):
                        raise SymgradError(
                            f"{self.budget.what}: the stacked per-step results of a scan "
                            f"(shape {nodes[a].shape}) have no sympy form inside an "
                            f"expression; translate them alone (a sympy Array of the steps)"
                            " or use sg.latex")
                done[i] = sympy_form(self.sp, REGISTRY[n.op], [done[a] for a in n.args],
                                     n.attrs, self.budget.what)
                sizes[i] = self.budget.size(1 + sum(sizes[a] for a in n.args))

    # loops

    def _unroll(self, n: Any) -> list[tuple[Any, int]]:
        """Every result of the scan call ``n`` (:class:`~symgrad.ops.loops.ScanParts`):
        final carries, stacked ys, then the stacked values of its ``stacked`` nodes."""
        body, attrs = n.attrs["body"], n.attrs
        nc, nx, length = attrs["carries"], attrs["xs"], attrs["length"]
        per_step = [*body.outputs[nc:], *attrs["stacked"]]
        steps = body.graph.ancestors([*body.outputs, *attrs["stacked"]])
        carries = [(self._plain(a), self.sizes[a]) for a in n.args[:nc]]
        captured = [(self._plain(a), self.sizes[a]) for a in n.args[nc + nx:]]
        stacks: list[list] = [[None] * length for _ in per_step]
        self.budget.check(length * len(steps), length)
        for t in (range(length - 1, -1, -1) if attrs["reverse"] else range(length)):
            xs = [self._row(a, t) for a in n.args[nc:nc + nx]]
            inner = Translation(self.sp, body.graph, self.budget)
            for node, value in zip(body.inputs, [*carries, *xs, *captured]):
                inner.done[node], inner.sizes[node] = value
            inner.run(steps)
            carries = [(inner.done[o], inner.sizes[o]) for o in body.outputs[:nc]]
            for k, node in enumerate(per_step):
                stacks[k][t] = inner.done[node], inner.sizes[node]
        return [*carries, *(_stack(s) for s in stacks)]

    def _plain(self, a: int) -> Any:
        if a not in self.done:
            number(self.sp, self.graph.nodes[a].attrs["value"], a)  # its error
        if isinstance(self.done[a], Stacked):
            raise SymgradError(f"{self.budget.what}: a loop that uses the stacked results of "
                               "another loop whole has no sympy form; use sg.latex")
        return self.done[a]

    def _row(self, a: int, t: int) -> tuple[Any, int]:
        """Row ``t`` of the scanned operand ``a``, and its tree size."""
        node = self.graph.nodes[a]
        if node.is_const:
            return number(self.sp, node.attrs["value"][t], a), 1
        value = self.done[a]
        if isinstance(value, Stacked):
            return value.items[t], value.sizes[t]
        return self._indexed(a, t), self.sizes[a]

    def _indexed(self, a: int, t: int) -> Any:
        """Row ``t`` of an expression of array variables of its shape: each variable ``v``
        read as ``v[t]`` (valid elementwise; other array variables are refused)."""
        sp, graph, shape = self.sp, self.graph, self.graph.nodes[a].shape
        subs = {}
        for v in graph.ancestors([a]):
            node = graph.nodes[v]
            if not node.is_var or node.shape == ():
                continue
            if node.shape != shape:
                raise SymgradError(
                    f"{self.budget.what}: a loop scans an expression of shape {shape} that "
                    f"uses the array '{node.name}' of shape {node.shape}; only elementwise "
                    "expressions of arrays of its shape translate (scan a variable instead)")
            symbol = self.done[v]
            subs[symbol] = sp.IndexedBase(symbol, **symbol.assumptions0)[t]
        return self.done[a].xreplace(subs)


def _stack(steps: list[tuple[Any, int]]) -> tuple[Stacked, int]:
    items = [v for v, _ in steps]
    sizes = [s for _, s in steps]
    return Stacked(items, sizes), sum(sizes)


def unrolled(sp, graph: Graph, order: list[int], root: int) -> Any:
    """``to_sympy`` of a graph with loops (``order``: the ancestors of ``root``): each
    unrolled; stacked per-step results at the root are a sympy Array."""
    t = Translation(sp, graph, Budget("to_sympy"))
    t.run(order)
    value = t.done[root]
    return sp.Array(value.items) if isinstance(value, Stacked) else value


__all__ = ["Budget", "Stacked", "Translation", "unrolled"]
