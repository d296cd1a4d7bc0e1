"""Loops in emitted code: each ``scan`` becomes one module-level function ``_sg_loopN``
whose body is printed once, and the results of the scan one assignment calling it.

A printer (:mod:`symgrad.backends.printer`) holds one :class:`LoopEmitter` and calls it at
three points: :meth:`LoopEmitter.arrange` (the results of one scan made consecutive, so one
statement can assign them all), :meth:`LoopEmitter.statement` (that statement) and
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
from ..ops.loops import as_ys
from .lines import call

if TYPE_CHECKING:
    from ..ir.graph import Node
    from .printer import Printer

__all__ = ["LoopEmitter", "LoopSpec", "append", "body_ops", "carry_moves", "indent", "is_loop",
           "printed_bodies", "set_item"]


def is_loop(node: Node) -> bool:
    """Whether ``node`` is one result of a loop (it holds a traced body)."""
    return isinstance(node.attrs.get("body"), Body) if node.attrs else False


def body_ops(graph: Graph, ids: list[int]) -> list[str]:
    """The ops of the bodies of the loops among nodes ``ids`` of ``graph``, nested loops'
    included (what the module's helpers and imports must cover besides its own lines)."""
    out: list[str] = []
    stack = [graph.nodes[i].attrs["body"] for i in ids if is_loop(graph.nodes[i])]
    seen: set[int] = set()
    while stack:
        body = stack.pop()
        if id(body) in seen:
            continue
        seen.add(id(body))
        nodes = body.graph.nodes
        out += [n.op for n in nodes]
        stack += [n.attrs["body"] for n in nodes if is_loop(n)]
    return out


def _call_key(node: Node | _Scan) -> tuple:
    attrs = node.attrs
    return (node.args, attrs["body"], attrs["carries"], attrs["xs"], attrs["length"],
            attrs["reverse"])


def printed_bodies(graph: Graph) -> list[Body]:
    """The step bodies the loop functions of ``graph``'s scans print: each call's body with
    the residuals among its results as further ys (what :func:`symgrad.backends.stages.lower`
    optimises once, before printing)."""
    calls: dict[tuple, set[int]] = {}
    for n in graph.nodes:
        if is_loop(n):
            calls.setdefault(_call_key(n), set()).add(n.attrs["out"])
    return [as_ys(key[1], key[2], sorted(parts))[0] for key, parts in calls.items()]


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

    # -- the results of one scan consecutive ------------------------------------------------

    def arrange(self, body: list[int]) -> list[int]:
        """``body`` with each scan's results right after its first one (valid: they all
        depend on the same operands only)."""
        nodes = self.printer.graph.nodes
        groups: dict[tuple, list[int]] = {}
        for i in body:
            if is_loop(nodes[i]):
                groups.setdefault(_call_key(nodes[i]), []).append(i)
        if not groups:
            return body
        out, placed = [], set()
        for i in body:
            if i in placed:
                continue
            if is_loop(nodes[i]):
                members = groups[_call_key(nodes[i])]
                out += members
                placed.update(members)
            else:
                out.append(i)
        return out

    # -- one statement for the results of one scan -----------------------------------------

    def statement(self, i: int, names: dict[int, str], body: list[int]) -> list[str] | None:
        """The lines for node ``i`` if it is a loop result (None otherwise): the call of
        its loop function at the first result of the scan in ``body``, nothing at the
        others."""
        pr = self.printer
        nodes = pr.graph.nodes
        n = nodes[i]
        if not is_loop(n):
            return None
        members = self.members(i, body)
        if members[0] != i:
            return []
        parts = sorted({nodes[j].attrs["out"] for j in members})
        lists = tuple(nodes[j].attrs["out"] for j in members if self._list_ok(j))
        fname, stmts = self.root._function_for(n, tuple(parts), pr, tuple(sorted(lists)))
        args = [pr.operand(a, n, names, strong=True) for a in n.args]
        by_part = {nodes[j].attrs["out"]: names[j] for j in members}
        targets = [by_part[p] for p in parts]
        lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
        return call(f"{lhs} = {fname}(", [*pr.part_args(stmts), *args], ")")

    def members(self, i: int, body: list[int]) -> list[int]:
        """The results of the scan call of loop result ``i`` among ``body``, in order
        (``[i]`` if it is not there): what one statement assigns."""
        nodes = self.printer.graph.nodes
        key = _call_key(nodes[i])
        found = [j for j in body if is_loop(nodes[j]) and _call_key(nodes[j]) == key]
        return found if i in found else [i]

    # -- the loop functions ----------------------------------------------------------------

    def definitions(self) -> list[str]:
        """The loop functions' text, for the module's top level (empty if no loops)."""
        return list(self.lines)

    def _list_ok(self, j: int) -> bool:
        """Whether loop result ``j`` (stacked over the steps) may be a Python list: the
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
        key = (_call_key(n)[1:], parts, type(pr), lists)
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


def _residuals_as_ys(n: Node, parts: tuple, lists: tuple) -> tuple[Node | _Scan, tuple, tuple]:
    """Scan ``n`` returning ``parts`` as a scan whose body has the residuals among them
    as further ys (:func:`symgrad.ops.loops.as_ys`), with its parts and ``lists``."""
    nc = n.attrs["carries"]
    body, new = as_ys(n.attrs["body"], nc, parts)
    if body is n.attrs["body"]:
        return n, parts, lists
    renamed = dict(zip(parts, new))
    return (_Scan({**n.attrs, "body": body}), new,
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
    order = sub.loops.arrange(order)
    stmts = sub.statements(order, names, outputs, comments=False)
    results = [names.get(o) or sub.expr(o, names) for o in body.outputs]
    spec = LoopSpec(body, nc, nx, n.attrs["length"], n.attrs["reverse"], parts, params, xs,
                    results, order)
    return spec, stmts


def _xs_only(pr: Printer) -> set[int]:
    """The loop results of ``pr``'s module that no function returns and whose every use is
    a scanned operand (an xs) of a loop."""
    nodes = pr.graph.nodes
    ok: set[int] = set()
    bad: set[int] = set()
    for p in pr.state.plans:
        bad.update(p.outputs)
        for i in p.order:
            n = nodes[i]
            if is_loop(n):
                ok.add(i)
                nc, nx = n.attrs["carries"], n.attrs["xs"]
                bad.update(a for k, a in enumerate(n.args) if not nc <= k < nc + nx)
            else:
                bad.update(n.args)
    return {i for i in ok if i not in bad and nodes[i].attrs["out"] >= nodes[i].attrs["carries"]}


class LoopSpec:
    """What a printer's ``render_loop`` reads of one loop: the step ``body`` (as emitted),
    its ``nc`` carries, ``nx`` scanned operands and ``ny`` per-step results, the scan's
    ``length`` and direction, the results ``parts`` the function returns (numbered as the
    scan's: carries, ys, stored carries), the step's parameter names (``params``: the
    carries, the xs, the captured values), the names of the scanned arrays (``xs``), the
    step's results as text (``results``) and the order of its lines (``order``)."""

    def __init__(self, body: Body, nc: int, nx: int, length: int, reverse: bool,
                 parts: tuple, params: list[str], xs: list[str], results: list[str],
                 order: Sequence[int] = ()) -> None:
        self.body, self.nc, self.nx, self.length, self.reverse = body, nc, nx, length, reverse
        self.parts, self.params, self.xs, self.results = parts, params, xs, results
        self.order = list(order)
        self.ny = len(body.outputs) - nc
        self.carries = params[:nc]
        self.x_names = params[nc:nc + nx]
        self.signature = params[:nc] + xs + params[nc + nx:]  # the loop function's

    def kind(self, part: int) -> tuple[str, int]:
        """``("carry" | "y" | "stored", j)``: what result ``part`` is, and which one."""
        if part < self.nc:
            return "carry", part
        if part < self.nc + self.ny:
            return "y", part - self.nc
        return "stored", part - self.nc - self.ny

    def aval(self, part: int) -> tuple[tuple, str]:
        """The shape and dtype of one step's value of result ``part``."""
        kind, j = self.kind(part)
        if kind == "y":
            shape, dtype = self.body.avals([self.body.outputs[self.nc + j]])[0]
        else:
            shape, dtype = self.body.avals()[j]
        return shape, dtype

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
