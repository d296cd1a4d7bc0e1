"""The Numba printer: the NumPy function, each fused region one call to a compiled loop.

:class:`NumbaPrinter` prints what :class:`~.numpy.NumpyPrinter` prints (one line per
node, the same names), except that the regions the fusion planner (:mod:`.fusion`) picks
in each function's body are one line each, calling a kernel printed before the functions
(:mod:`.source`: the loop nest, the module header, loading and the disk cache).
The driver's table is NumPy's; the loops' is :data:`.table.NUMBA`. A scan is one
compiled function of its own (:mod:`.loops`), or the NumPy target's loop where its
step has an op Numba cannot run there.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(8,))
>>> src = sg.to_source(sg.sum(sg.tanh(x) * x), backend="numba")
>>> [ln.strip() for ln in src.splitlines() if "_f_loop(" in ln]
['def _f_loop(a0):', 't3 = np.float64(_f_loop(x))  # fused loop: 3 ops']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....ir.body import Body
from ... import layout
from ...lines import del_lines
from ...loops import LoopSpec, is_loop
from ...plan import Plan
from ...printer import ModuleState, Printer
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from . import fusion, special
from . import source as nb
from .loops import StepPrinter, compiled_loop, loop_ops, missing
from .table import NUMBA

if TYPE_CHECKING:
    from ...loops import LoopEmitter
    from ...stages import Lowered

__all__ = ["NumbaPrinter"]


class NumbaPrinter(NumpyPrinter):
    """NumPy source whose fused regions call ``numba.njit`` kernels (see the module)."""

    loop_table = NUMBA

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        super().__init__(lowered, state, loops)
        self.kernels: list[str] = []
        self.fused: list[tuple[str, list[str]]] = []  # (kernel, its ops)
        self.numpy_counts: dict[str, int] = {}  # op -> lines the driver runs with NumPy
        self._current: Plan | None = None
        self._contiguous = False
        self._fuse = True

    def scalar_functions(self) -> bool:
        return False  # scalar code is compiled loops too

    def lists_between_loops(self) -> bool:
        return False

    def step_printer(self, body: Body) -> type[Printer]:
        # the step of a loop Numba cannot compile runs on NumPy
        return NumpyPrinter if missing(body, self.lowered) else StepPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """A scan compiled whole by Numba (:mod:`.loops`), or the NumPy loop where an op of
        its step has no form there: counted among the NumPy calls."""
        lacking = missing(spec.body, self.lowered)
        if lacking:
            for op in ["scan", *lacking]:
                self.numpy_counts[op] = self.numpy_counts.get(op, 0) + 1
            return super().render_loop(name, spec, stmts, step, lists)
        self.fused.append((name, loop_ops(spec.body, self.lowered)))
        return compiled_loop(name, spec, stmts, wrapper=True)

    def finish(self, out: list[str], code: list[str]) -> str:
        k = len(self.header())
        kernels = [line for kernel in self.kernels for line in ("", "", *kernel.split("\n"))]
        # SciPy's special functions the compiled code calls, bound before it compiles
        bound = special.binding_lines("\n".join(kernels + out))
        out[k:k] = bound + kernels
        return super().finish(out, code)

    def function(self, p: Plan) -> tuple[list[str], list[str]]:
        nodes, outputs = self.graph.nodes, set(p.outputs)
        body = [i for i in p.order if not (nodes[i].is_var or (nodes[i].is_const
                                                                and i not in outputs))]
        # long functions: registers (a region's members must be consecutive lines) and
        # parts (values cross parts by name: no fusion across them)
        self._contiguous = len(body) > layout.REGISTERS_FROM
        self._fuse = len(body) <= layout.PART_LINES
        self._current = p
        return super().function(p)

    def statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                    comments: bool = True) -> list[str]:
        nodes = self.graph.nodes
        regions = (fusion.plan(nodes, body, outputs, self.loop_table, self._contiguous)
                   if self._fuse else [])
        if not regions:
            for i in body:
                self._count(i)
            return super().statements(body, names, outputs, comments)
        roots = {r.root: r for r in regions}
        hidden = {m for r in regions for m in r.members if m != r.root}
        reads = {i: roots[i].inputs if i in roots else nodes[i].args for i in body
                 if i not in hidden}
        made = {*reads, *(m for r in regions for m in r.extras)}
        dead_after = nb.releases(nodes, reads, made, outputs)
        lines = []
        for i in reads:
            if i in roots:
                code, note = self._kernel(roots[i], names)
                first, *rest = f"    {code}".split("\n")
                lines.append(f"{first}  # {note}" if len(first) + len(note) < 96 else first)
                lines += rest
            else:
                self._count(i)
                # a scan's results: one call at the first (the loop runs once)
                group = self.loops.members(i, list(reads)) if is_loop(nodes[i]) else [i]
                if group[0] == i:
                    keep = outputs | {*group, *(a for j in group for a in nodes[j].args)}
                    lines += super().statements(group, names, keep, comments)
            lines += del_lines([names[a] for a in dead_after.get(i, ()) if names[a] != names[i]])
        return lines

    def _count(self, i: int) -> None:
        n = self.graph.nodes[i]
        if not (n.is_var or n.is_const or is_loop(n)):  # a loop: counted by render_loop
            self.numpy_counts[n.op] = self.numpy_counts.get(n.op, 0) + 1

    def _kernel(self, r: fusion.Region, names: dict[int, str]) -> tuple[str, str]:
        """The kernel of region ``r`` (kept in :attr:`kernels`) and the driver's call."""
        nodes = self.graph.nodes
        assert self._current is not None
        kname = self.helper_name(self._current, "loop")
        args, params = [], []
        for a in r.inputs:
            n = nodes[a]
            text = self.operand(a, nodes[r.root], names)
            args.append(text if n.shape else f"{NUMPY_TYPE[n.dtype]}({text})")
            params.append(f"_A({nb.NUMBA_TYPE[n.dtype]}, {len(n.shape)})" if n.shape
                          else nb.NUMBA_TYPE[n.dtype])
        root = nodes[r.root]
        held_ids = [r.root, *r.extras]
        rets = [nb.result_type(nodes[m]) for m in held_ids]
        head = [f"@_jit(_sig(({', '.join(rets)},), ({''.join(t + ', ' for t in params)})))"]
        if len(head[0]) > 100:
            head = ["@_jit(_sig((", *(f"    {t}," for t in rets), "), (",
                    *(f"    {t}," for t in params), ")))"]
        self.kernels.append("\n".join([*head, f"def {kname}({nb.names(len(params))}):",
                                       *nb.loop(nodes, r)]))
        ops = [nodes[m].op for m in r.members]
        self.fused.append((kname, ops))
        note = f"fused loop: {len(ops)} ops"
        call = f"{kname}({', '.join(args)})"
        held = [names[m] for m in held_ids]
        if len(held) == 1 and not root.shape:
            return f"{held[0]} = {NUMPY_TYPE[root.dtype]}({call})", note
        typed = [f"\n    {h} = {NUMPY_TYPE[nodes[m].dtype]}({h})"
                 for h, m in zip(held, held_ids) if not nodes[m].shape]
        return f"{', '.join(held)} = {call}" + "".join(typed), note

    def stats(self) -> tuple[list[tuple[str, list[str]]], dict[str, int]]:
        """What :meth:`module` compiled (each kernel and its ops) and what it left to NumPy
        (op -> lines)."""
        return self.fused, dict(sorted(self.numpy_counts.items()))
