"""Loops in emitted code: each ``scan`` becomes one module-level function ``_sg_loopN``
whose body is printed once, and the scan call (one node, several results) one assignment
calling it, which names the results the function uses.

A printer (:mod:`symgrad.backends.printer`) holds one :class:`LoopEmitter` and calls it at
two points: :meth:`LoopEmitter.statement` (the statement of a scan call) and
:meth:`LoopEmitter.definitions` (the loop functions, written before the module's functions).

The emitter prints a loop's step with a printer nested over the step's body (of the class
the printer's ``step_printer`` names, over the body as :func:`~symgrad.backends.stages.lower`
optimised it), so nested loops, constants and every op's template work inside a loop as
they do outside. How the loop around the step looks is the printer's own
(``render_loop``, given a :class:`LoopSpec`): NumPy writes a ``for`` loop into preallocated
arrays (and a version over Python floats), JAX ``jax.lax.scan``, the array API a ``for``
loop stacking lists, Numba a compiled function.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=100)
>>> src = sg.to_source(c, scalars="numpy")
>>> print(src[src.index("def _sg_loop1"):src.index("def f(")].strip())
def _sg_loop1(c0, k1):
    ...
    for _t in range(100):
        t1 = np.sin(c0)
        t2 = t1 * k1
        c0 = t2
    return (c0,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..ir.body import Body
from ..ir.graph import Graph
from ..ir.op import RESULT
from ..ops.loops import ScanParts
from .lines import call

if TYPE_CHECKING:
    from ..ir.graph import Node
    from .printer import Printer

__all__ = ["LoopEmitter", "LoopSpec", "append", "body_ops", "carry_moves", "indent", "is_loop",
           "printed_bodies", "results_in", "set_item"]


def is_loop(node: Node) -> bool:
    """Whether ``node`` is a loop call (it holds a traced body)."""
    return isinstance(node.attrs.get("body"), Body) if node.attrs else False


def results_in(nodes: Sequence[Node], call: int, body: Sequence[int]) -> dict[int, int]:
    """``{result index: projection}`` of call ``call`` among node ids ``body``."""
    return {nodes[j].attrs["index"]: j for j in body
            if nodes[j].op == RESULT and nodes[j].args[0] == call}


def body_ops(graph: Graph, ids: list[int]) -> list[str]:
    """The ops of the bodies of the loops (and solver callbacks) among nodes ``ids`` of
    ``graph``, nested ones included (what the module's helpers and imports must cover
    besides its own lines)."""
    out: list[str] = []
    stack = [b for i in ids for b in _bodies(graph.nodes[i])]
    seen: set[int] = set()
    while stack:
        body = stack.pop()
        if id(body) in seen:
            continue
        seen.add(id(body))
        nodes = body.graph.nodes
        out += [n.op for n in nodes]
        stack += [b for n in nodes for b in _bodies(n)]
    return out


def _bodies(node: Node) -> list[Body]:
    """The bodies a node holds: a loop's step, a solver's callbacks."""
    return [v for v in node.attrs.values() if isinstance(v, Body)] if node.attrs else []


def _call_key(node: Node | _Scan) -> tuple:
    attrs = node.attrs
    return (attrs["body"], attrs["carries"], attrs["xs"], attrs["length"], attrs["reverse"],
            attrs["stacked"])


def printed_bodies(graph: Graph) -> list[Body]:
    """The step bodies the loop functions of ``graph``'s scans print: each call's body with
    the residuals among its results as further ys (what :func:`symgrad.backends.stages.lower`
    optimises once, before printing)."""
    calls = {_call_key(n): n for n in graph.nodes if is_loop(n)}
    return [_residuals_as_ys(n, (), ())[0].attrs["body"] for n in calls.values()]


class LoopEmitter:
    """The loops of one printer (``root``: the emitter of the printer whose module holds
    the loop functions; nested printers share it)."""

    def __init__(self, printer: Printer, root: LoopEmitter | None = None) -> None:
        self.printer = printer
        self.root = root or self
        self.functions: dict[tuple, tuple[str, list[str]]] = {}  # key -> name, statements
        self.lines: list[str] = []  # the loop functions' text
        self.count = 0
        self._list_uses: set[int] | None = None  # loop results only ever scanned (_xs_only)

    # -- one statement for a scan call ----------------------------------------------------

    def statement(self, i: int, names: dict[int, str], body: list[int]) -> list[str] | None:
        """The lines of node ``i`` if it is a loop call (None otherwise): the call of its
        loop function, returning the results ``body`` reads (their projections' names)."""
        pr = self.printer
        nodes = pr.graph.nodes
        n = nodes[i]
        if not is_loop(n):
            return None
        found = results_in(nodes, i, body)
        parts = sorted(found)
        lists = tuple(p for p in parts if self._list_ok(found[p]))
        fname, stmts = self.root._function_for(n, tuple(parts), pr, lists)
        args = [pr.operand(a, n, names, strong=True) for a in n.args]
        targets = [names[found[p]] for p in parts]
        lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
        return call(f"{lhs} = {fname}(", [*pr.part_args(stmts), *args], ")")

    # -- the loop functions ----------------------------------------------------------------

    def definitions(self) -> list[str]:
        """The loop functions' text, for the module's top level (empty if no loops)."""
        return list(self.lines)

    def _list_ok(self, j: int) -> bool:
        """Whether loop result ``j`` (a projection, stacked over the steps) may be a Python
        list: the
        printer passes stacked floats between loops as lists
        (:meth:`~symgrad.backends.printer.Printer.lists_between_loops`), every use of it,
        in every function of the module, is a scanned operand (an xs) of another loop,
        and no function returns it. A loop function takes such an operand as a list or an
        array (the same float64 values), so the stacked floats skip a list -> array ->
        list round trip."""
        if not self.printer.lists_between_loops():
            return False
        found = self._list_uses
        if found is None:
            found = self._list_uses = _xs_only(self.printer)
        return j in found

    def _function_for(self, n: Node, parts: tuple, pr: Printer, lists: tuple = ()
                      ) -> tuple[str, list[str]]:
        """The name of the loop function of scan ``n`` returning ``parts`` (printed on first
        use; those in ``lists`` as Python lists), and its step's statements (they say what
        the function takes besides)."""
        key = (_call_key(n), parts, type(pr), lists)
        found = self.functions.get(key)
        if found is None:
            n, parts, lists = _residuals_as_ys(n, parts, lists)
            name = self._fresh(pr)
            sub = pr.nested(n.attrs["body"])
            spec, stmts = _printed_step(sub, n, parts)
            lines = pr.render_loop(name, spec, stmts, sub, lists)
            found = self.functions[key] = (name, stmts)
            self.lines += ["", "", *lines]
        return found

    def _fresh(self, pr: Printer) -> str:
        """The next loop function name no function's own names shadow (a variable may be
        called ``_sg_loop1``)."""
        taken = set(self.printer.state.helper_names)
        for p in [*self.printer.state.plans, *pr.state.plans]:
            taken.update(p.names.values(), p.aliases.values(), [p.name])
        while True:
            self.count += 1
            name = f"_sg_loop{self.count}"
            helpers = (name, f"{name}_math", f"{name}_jit")
            if not taken.intersection(helpers):
                self.printer.state.helper_names.update(helpers)
                return name


class _Scan:
    """A scan's attributes seen with another body (what the loop printers read of it)."""

    def __init__(self, attrs: dict) -> None:
        self.attrs = attrs


def _residuals_as_ys(n: Node | _Scan, parts: tuple, lists: tuple
                     ) -> tuple[Node | _Scan, tuple, tuple]:
    """Scan ``n`` returning ``parts`` as the loop printers see it (:class:`LoopSpec`): its
    residuals as further ys (after its own), the stored carries after those; with its
    parts and ``lists`` renumbered so."""
    layout = ScanParts.of(n.attrs)
    if not layout.stacked:
        return n, parts, lists
    residuals = [k for k in range(len(layout)) if layout.kind(k)[0] == "residual"]
    body = layout.body.with_outputs([layout.node(k) for k in residuals])
    printed = LoopSpec.layout_of(body, layout.carries, layout.length)

    def where(k: int) -> int:
        kind, j = layout.kind(k)
        if kind == "residual":
            kind, j = "y", layout.ys + residuals.index(k)
        return printed.index(kind, j)

    renamed = {p: where(p) for p in parts}
    return (_Scan({**n.attrs, "body": body, "stacked": ()}), tuple(renamed[p] for p in parts),
            tuple(sorted(renamed[p] for p in lists)))


def _printed_step(sub: Printer, n: Node | _Scan, parts: tuple) -> tuple[LoopSpec, list[str]]:
    """The step of scan ``n`` printed by ``sub`` (a printer nested over its body): the
    loop's :class:`LoopSpec` for results ``parts``, and the step's statements."""
    body = sub.lowered.body
    assert body is not None, "a nested printer prints one step of a loop body"
    (plan,) = sub.state.plans
    nc, nx = n.attrs["carries"], n.attrs["xs"]
    names = plan.names
    params = [names[v] for v in body.inputs]
    xs = [f"_x{k}" for k in range(nx)]
    outputs = set(body.outputs)
    nodes = body.graph.nodes
    order = [i for i in plan.order if not (nodes[i].is_var or (nodes[i].is_const
                                                                and i not in outputs))]
    stmts = sub.statements(order, names, outputs, comments=False)
    results = [names.get(o) or sub.expr(o, names) for o in body.outputs]
    spec = LoopSpec(body, nc, nx, n.attrs["length"], n.attrs["reverse"], parts, params, xs,
                    results, order)
    return spec, stmts


def _xs_only(pr: Printer) -> set[int]:
    """The stacked loop results (projections) of ``pr``'s module that no function returns
    and whose every use is a scanned operand (an xs) of a loop."""
    nodes = pr.graph.nodes
    ok: set[int] = set()
    bad: set[int] = set()
    for p in pr.state.plans:
        bad.update(p.outputs)
        for i in p.order:
            n = nodes[i]
            if n.op == RESULT and is_loop(nodes[n.args[0]]):
                if n.attrs["index"] >= nodes[n.args[0]].attrs["carries"]:
                    ok.add(i)
            elif is_loop(n):
                nc, nx = n.attrs["carries"], n.attrs["xs"]
                bad.update(a for k, a in enumerate(n.args) if not nc <= k < nc + nx)
            else:
                bad.update(n.args)
    return ok - bad


class LoopSpec:
    """What a printer's ``render_loop`` reads of one loop: the step ``body`` (as emitted),
    its ``nc`` carries, ``nx`` scanned operands and ``ny`` per-step results, the scan's
    ``length`` and direction, the results ``parts`` the function returns (numbered as
    :meth:`layout_of` says: carries, ys, stored carries), the step's parameter names
    (``params``: the carries, the xs, the captured values), the names of the scanned arrays
    (``xs``), the step's results as text (``results``) and the order of its lines
    (``order``)."""

    def __init__(self, body: Body, nc: int, nx: int, length: int, reverse: bool,
                 parts: tuple, params: list[str], xs: list[str], results: list[str],
                 order: Sequence[int] = ()) -> None:
        self.body, self.nc, self.nx, self.length, self.reverse = body, nc, nx, length, reverse
        self.parts, self.params, self.xs, self.results = parts, params, xs, results
        self.order = list(order)
        self.ny = len(body.outputs) - nc
        self.layout = self.layout_of(body, nc, length)
        self.carries = params[:nc]
        self.x_names = params[nc:nc + nx]
        self.signature = params[:nc] + xs + params[nc + nx:]  # the loop function's

    @staticmethod
    def layout_of(body: Body, nc: int, length: int) -> ScanParts:
        """The results of a printed loop: final carries, ys, then every carry entering
        each step (stored at the step's start)."""
        return ScanParts(body, nc, length, body.inputs[:nc])

    def kind(self, part: int) -> tuple[str, int]:
        """``("carry" | "y" | "stored", j)``: what result ``part`` is, and which one."""
        return self.layout.kind(part)

    def aval(self, part: int) -> tuple[tuple, str]:
        """The shape and dtype of one step's value of result ``part``."""
        return self.body.avals([self.layout.node(part)])[0]

    def steps(self) -> str:
        """The ``range`` of the step index, in the scan's direction."""
        return (f"range({self.length - 1}, -1, -1)" if self.reverse
                else f"range({self.length})")

    def head(self, name: str, extra: Sequence[str] = ()) -> list[str]:
        """The ``def`` line of loop function ``name`` (taking ``extra`` first) and its
        docstring."""
        return [*call(f"def {name}(", [*extra, *self.signature], "):", ""),
                f'    """scan: {self.length} steps of the body below (symgrad)."""']

    def buffers(self, make: Callable[[int], str]) -> tuple[list[str], dict, dict]:
        """One buffer per stacked y (``_y<j>``) and stored carry (``_s<j>``), each
        ``make(part)``; their lines and names (``j -> name``, ys then stored carries)."""
        lines, ys, stored = [], {}, {}
        for p in self.parts:
            kind, j = self.kind(p)
            if kind != "carry":
                name = f"_y{j}" if kind == "y" else f"_s{j}"
                (ys if kind == "y" else stored)[j] = name
                lines.append(f"    {name} = {make(p)}")
        return lines, ys, stored

    def for_loop(self, stmts: list[str], ys: dict, stored: dict,
                 store: Callable[[str, str], str], index: str) -> list[str]:
        """The ``for`` statement: store the carries entering the step, take the step's xs
        at ``index``, run the step, store its ys, move the carries on."""
        loop = [f"        {store(name, self.carries[j])}" for j, name in stored.items()]
        loop += [f"        {x} = {xs}[{index}]" for x, xs in zip(self.x_names, self.xs)]
        loop += indent(stmts)
        loop += [f"        {store(name, self.results[self.nc + j])}" for j, name in ys.items()]
        loop += carry_moves(self.carries, self.results[:self.nc], "        ")
        return [f"    for _t in {self.steps()}:", *(loop or ["        pass"])]

    def returned(self, ys: dict, stored: dict, carries: Sequence[str] | None = None) -> str:
        """``return (...)`` of the parts: the ``carries`` (default: the step's carry
        names), the stacked ys and the stored carries by their buffers' names."""
        carries = self.carries if carries is None else carries
        out = []
        for p in self.parts:
            kind, j = self.kind(p)
            out.append(carries[j] if kind == "carry" else ys[j] if kind == "y" else stored[j])
        return f"    return ({', '.join(out)}{',' if len(out) == 1 else ''})"


def indent(lines: list[str]) -> list[str]:
    """``lines`` one level deeper (blank lines kept blank)."""
    return ["    " + line if line else line for line in lines]


def carry_moves(targets: list[str], values: list[str], lead: str) -> list[str]:
    """One assignment moving ``values`` into ``targets`` (those that differ), or none."""
    pairs = [(t, v) for t, v in zip(targets, values) if t != v]
    if not pairs:
        return []
    return [f"{lead}{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}"]


def set_item(name: str, value: str) -> str:
    """``name[_t] = value``: a step's value written into a preallocated buffer."""
    return f"{name}[_t] = {value}"


def append(name: str, value: str) -> str:
    """``name.append(value)``: a step's value appended to a list."""
    return f"{name}.append({value})"
