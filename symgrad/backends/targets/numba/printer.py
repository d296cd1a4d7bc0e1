"""The Numba printer: the NumPy function, each kernel one call to a compiled function.

:class:`NumbaPrinter` prints what :class:`~.numpy.NumpyPrinter` prints (one line per
node, the same names), except that each *kernel* — a run of consecutive lines that all
have a compiled form, where the cost model (:mod:`.costs`) says one call beats their
NumPy calls (:func:`.fusion.segments`) — is one line calling a ``numba.njit`` function
printed before the functions, its body printed by :class:`.loops.StepPrinter` (fused
loop nests, reductions, indexing, products, linalg: the forms of a compiled loop step),
over C-contiguous arrays (LLVM vectorizes unit-stride loops): the driver passes an array
no kernel made through ``np.ascontiguousarray``.
The driver's table is NumPy's; the kernels' is :data:`.table.NUMBA`. A scan is one
compiled function of its own (:mod:`.loops`), or the NumPy target's loop where its step
has an op Numba cannot run there; so is a while loop and its reverse sweep
(:mod:`.while_loops`). A big view that only BLAS-bound products read leaves its kernel as
NumPy's view (:func:`.costs.view_better`). Each NumPy call left is counted with its
reason (:meth:`NumbaPrinter.stats`).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(8,))
>>> src = sg.to_source(sg.sum(sg.tanh(x) * x), backend="numba")
>>> [ln.strip() for ln in src.splitlines() if "_f_kernel(" in ln]
['def _f_kernel(x):', 't3 = _f_kernel(np.ascontiguousarray(x))  # compiled: 3 ops']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....ir.body import Body
from ....ir.op import RESULT
from ... import layout
from ...lines import call, del_lines
from ...loops import LoopSpec, is_loop, results_in
from ...plan import Plan
from ...printer import ModuleState, Printer
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from . import fusion, special, table, while_loops
from . import source as nb
from .costs import numpy_better, view_better
from .loops import StepPrinter, compiled_loop, lacking, loop_ops, missing
from .nests import is_view
from .table import NUMBA, why_not

if TYPE_CHECKING:
    from ...loops import LoopEmitter
    from ...stages import Lowered

__all__ = ["CALL_KEPT", "NumbaPrinter"]

# views of a C-contiguous operand that are C-contiguous: a kernel returns them for nothing
_CONTIGUOUS_VIEWS = frozenset({"reshape", "squeeze", "expand_dims", "stop_gradient",
                               "custom_vjp_call", "custom_jvp_call"})
CALL_KEPT = ("a kernel does not pay: one LAPACK call of several results, NumPy's in the "
             "driver (the same LAPACK; compiled inside a loop's step)")


class NumbaPrinter(NumpyPrinter):
    """NumPy source whose compiled parts call ``numba.njit`` kernels (see the module)."""

    loop_table = NUMBA

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        super().__init__(lowered, state, loops)
        self.kernels: list[str] = []
        self.fused: list[tuple[str, list[str]]] = []  # (kernel, its ops)
        self.numpy_counts: dict[str, int] = {}  # op -> lines the driver runs with NumPy
        self.numpy_why: dict[str, str] = {}  # op -> why NumPy runs it (the first reason)
        self._current: Plan | None = None
        self._fuse = True
        self._body: StepPrinter | None = None  # prints the kernels' bodies
        self._contiguous: set[int] = set()  # arrays a kernel made (C-contiguous, its own)
        self._readers: dict[int, list[int]] = {}  # node -> the lines reading it
        self._whiles: dict[tuple, str] = {}  # while loop or sweep -> its compiled name
        self._solver = False  # printing the text of a node with callbacks (not a while's)

    def scalar_functions(self) -> bool:
        return False  # scalar code is compiled loops too

    def lists_between_loops(self) -> bool:
        return False

    def step_printer(self, body: Body) -> type[Printer]:
        # the step of a loop Numba cannot compile runs on NumPy; so do a solver's callbacks
        # (SciPy calls them from Python: loop nests there would run uncompiled)
        if self._solver or missing(body, self.lowered):
            return NumpyPrinter
        return StepPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """A scan compiled whole by Numba (:mod:`.loops`), or the NumPy loop where an op of
        its step has no form there: counted among the NumPy calls, with the reason."""
        lacks = lacking(spec.body, self.lowered)
        if lacks:
            op, why = lacks[0]
            self._numpy("scan", f"its step holds {op}: {why}")
            for op, why in lacks:
                self._numpy(op, why)
            return super().render_loop(name, spec, stmts, step, lists)
        self.fused.append((name, loop_ops(spec.body, self.lowered)))
        return compiled_loop(name, spec, stmts, wrapper=True)

    def finish(self, out: list[str], code: list[str]) -> str:
        k = len(self.header())
        kernels = [line for kernel in self.kernels for line in ("", "", *kernel.split("\n"))]
        # SciPy's special functions the compiled code calls, bound before it compiles
        text = "\n".join(kernels + out)
        bound = special.binding_lines(text) + table.binding_lines(text)
        out[k:k] = bound + kernels
        return super().finish(out, code)

    def function(self, p: Plan) -> tuple[list[str], list[str]]:
        nodes = self.graph.nodes
        body = [i for i in p.order if not (nodes[i].is_var or nodes[i].is_const)]
        self._fuse = len(body) <= layout.PART_LINES  # parts: values cross them by name
        self._current = p
        return super().function(p)

    def statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                    comments: bool = True) -> list[str]:
        """The function's lines: each kernel (a run of lines that compile, where one call
        pays) one call, the others NumPy's lines."""
        nodes = self.graph.nodes
        kernels: list[fusion.Segment] = []
        reasons: dict[int, str] = {}
        self._readers = {}
        for i in body:
            for a in dict.fromkeys(nodes[i].args):
                self._readers.setdefault(a, []).append(i)
        if self._fuse:
            kernels, reasons = fusion.segments(nodes, body, outputs, self._why_numpy,
                                               self._loose)
            fusion.recompute(nodes, kernels, outputs, self._readers, NUMBA)
        first = {seg.line: seg for seg in kernels}
        inside = {m for seg in kernels for m in seg.members}
        reads: dict[int, Any] = {}  # line (its last node) -> what it reads
        made: set[int] = set()
        order: list[tuple[int, fusion.Segment | None]] = []
        for i in body:
            if i in first:
                seg = first[i]
                reads[seg.members[-1]] = seg.inputs
                made.update(seg.outputs)
                order.append((seg.members[-1], seg))
            elif i not in inside:
                reads[i] = nodes[i].args
                made.add(i)
                order.append((i, None))
        dead_after = nb.releases(nodes, reads, made, outputs)
        lines: list[str] = []
        lines_of = list(reads)
        for i, seg in order:
            if seg is not None:
                lines += self._kernel(seg, names)
            elif nodes[i].op != RESULT:  # a projection: named by its call's statement
                self._count(i, reasons.get(i))
                group = [i, *results_in(nodes, i, lines_of).values()] if nodes[i].is_call \
                    else [i]
                keep = outputs | {*group, *(a for j in group for a in nodes[j].args)}
                lines += super().statements(group, names, keep, comments)
            lines += del_lines([names[a] for a in dead_after.get(i, ())
                                if names[a] != names.get(i)])
        return lines

    def _why_numpy(self, n: Any) -> str | None:
        """Why node ``n`` is NumPy's call rather than compiled code (None: it compiles)."""
        nodes = self.graph.nodes
        if n.is_var or n.is_const:
            return "a leaf"
        if is_loop(n):
            return "a loop: a compiled function of its own"
        if n.is_call or n.op == RESULT:
            return why_not(n, nodes) or CALL_KEPT
        bad = [d for d in (n.dtype, *(nodes[a].dtype for a in n.args)) if d not in nb.NUMBA_TYPE]
        if bad:
            return f"dtype {bad[0]}: not compiled"
        return why_not(n, nodes) or numpy_better(n, nodes)

    def _loose(self, n: Any) -> str | None:
        """Why a view that no later line of its kernel reads is better NumPy's call (the
        kernel would return a copy of it: a transpose, a broadcast, a strided slice)."""
        nodes = self.graph.nodes
        if not n.shape or not is_view(n, nodes) or n.op in _CONTIGUOUS_VIEWS:
            return None
        return view_better(n, [nodes[r] for r in self._readers.get(n.id, ())], nodes)

    def _while_bodies(self, n: Any) -> list[Body] | None:
        """The callbacks of while loop (or sweep) ``n``, where each op of them compiles
        (else None: NumPy's callbacks)."""
        keys = ("body_fun", "vjp_fun") if "vjp_fun" in n.attrs else ("cond_fun", "body_fun")
        bodies = [n.attrs[k] for k in keys]
        if any(missing(self.lowered.optimized(b), self.lowered) for b in bodies):
            return None
        return bodies

    def op_text(self, n: Any, names: dict[int, str]) -> str:
        """A node's text; a while loop whose condition and step compile calls its compiled
        loop (:mod:`.while_loops`), its sweep the compiled step and product."""
        if not while_loops.is_while(n):
            self._solver = any(isinstance(v, Body) for v in (n.attrs or {}).values())
            try:
                return super().op_text(n, names)
            finally:
                self._solver = False
        text = super().op_text(n, names)
        if (bodies := self._while_bodies(n)) is None:
            return text
        fns = while_loops.callback_names(text)
        lines = self.loops.root.lines
        for fn in fns:
            k = next(k for k, ln in enumerate(lines) if ln.startswith(f"def {fn}("))
            if lines[k - 1] != "@_jit":
                lines.insert(k, "@_jit")
        if "vjp_fun" in n.attrs:  # the sweep
            return self._sweep(n, text, fns)
        name, new = self._fresh_while(("loop", n.id))
        if new:
            body = self.lowered.optimized(bodies[1])
            nc, nk = n.attrs["carries"], n.attrs["body_args"]
            nq = len(n.args) - nc - nk
            self.kernels.append("\n".join(while_loops.loop_functions(
                name, fns[0], fns[1], body.avals()[:nc], nk, nq)))
            self.fused.append((name, loop_ops(body, self.lowered)))
        return text.replace("_sg_while(", f"{name}(", 1)

    def _helper(self, name: str, lines: list[str]) -> None:
        """Module helper ``name`` (``lines``), printed once before the functions."""
        if name not in self.state.helper_names:
            self.state.helper_names.add(name)
            self.kernels.append("\n".join(lines))

    def _fresh_while(self, key: tuple) -> tuple[str, bool]:
        """The name of the compiled loop or sweep ``key``, and whether it is new."""
        name = self._whiles.get(key)
        if name is not None:
            return name, False
        k = len(self._whiles) + 1
        while f"_sg_while{k}" in self.state.helper_names:
            k += 1
        name = self._whiles[key] = f"_sg_while{k}"
        self.state.helper_names.add(name)
        return name, True

    def _sweep(self, n: Any, text: str, fns: list[str]) -> str:
        """A while loop's reverse sweep over its compiled step and product: a compiled
        sweep (:func:`.while_loops.sweep_functions`), or NumPy's run-time sweep calling
        them where the product gives one row's cotangent at a time (``rows``)."""
        if n.attrs.get("rows"):
            self._helper("_sg_scalars", while_loops.SCALARS)
            head = f"_sg_while_vjp({fns[0]}, {fns[1]}, "
            return text.replace(head, f"_sg_while_vjp(_sg_scalars({fns[0]}), "
                                      f"_sg_scalars({fns[1]}), ", 1)
        name, new = self._fresh_while(("sweep", n.id))
        if new:
            self._helper("_sg_split", while_loops.SPLIT)
            body = self.lowered.optimized(n.attrs["body_fun"])
            vjp = self.lowered.optimized(n.attrs["vjp_fun"])
            nc, nk = n.attrs["carries"], n.attrs["body_args"]
            nf = len(n.args) - bool(n.attrs.get("taped")) - 1 - nc - nk
            self.kernels.append("\n".join(while_loops.sweep_functions(
                name, fns[0], fns[1], body.avals()[:nc], nk, list(n.attrs["avals"]), nf,
                len(vjp.outputs) == 1)))
            self.fused.append((name, loop_ops(vjp, self.lowered)))
        return text.replace("_sg_while_vjp(", f"{name}(", 1)

    def _numpy(self, op: str, why: str | None) -> None:
        self.numpy_counts[op] = self.numpy_counts.get(op, 0) + 1
        if why is not None:
            self.numpy_why.setdefault(op, why)

    def _count(self, i: int, why: str | None) -> None:
        n = self.graph.nodes[i]
        if while_loops.is_while(n) and self._while_bodies(n) is not None:
            return  # compiled: op_text counts it
        if not (n.is_var or n.is_const or is_loop(n) or n.op == RESULT):  # a loop: counted
            self._numpy(n.op, why)  # by render_loop; a projection is a name

    def _kernel(self, seg: fusion.Segment, names: dict[int, str]) -> list[str]:
        """Segment ``seg`` as a kernel (kept in :attr:`kernels`, its body printed by
        :class:`.loops.StepPrinter` under the function's own names) and the driver's
        call of it."""
        nodes = self.graph.nodes
        assert self._current is not None
        if self._body is None:
            self._body = StepPrinter(self.lowered, self.state, self.loops.root)
        kname = self.helper_name(self._current, "kernel")
        local = dict(self._current.names)
        local.update({a: self.state.consts[a] for a in seg.inputs if a in self.state.consts})
        params, args, types = [], [], []
        for a in seg.inputs:
            n = nodes[a]
            params.append(local[a])
            text = self.operand(a, n, names)
            # C-contiguous arrays: LLVM vectorizes the nests' unit-stride loops (not those
            # over an array of any layout)
            args.append(text if a in self._contiguous else
                        f"np.ascontiguousarray({text})" if n.shape
                        else f"{NUMPY_TYPE[n.dtype]}({text})")
            types.append(f"_A({nb.NUMBA_TYPE[n.dtype]}, {len(n.shape)}, 'C')" if n.shape
                         else nb.NUMBA_TYPE[n.dtype])
        body = self._body.statements(seg.members, local, set(seg.outputs), comments=False)
        # a view is returned as an array of its own: NumPy's products after the kernel read
        # C-contiguous operands (BLAS), and so does the next kernel
        rets = [f"np.ascontiguousarray({local[m]})" if nodes[m].shape and is_view(nodes[m], nodes)
                else local[m] for m in seg.outputs]
        ret = [f"    return {rets[0]}"] if len(rets) == 1 else call("return (", rets, ")")
        head = call("@_jit((", types, ",))" if len(types) == 1 else "))", "")
        self.kernels.append("\n".join([*head, *call(f"def {kname}(", params, "):", ""),
                                       *body, *ret]))
        ops = [nodes[m].op for m in seg.members]
        self.fused.append((kname, ops))
        self._contiguous.update(seg.outputs)
        held = [names[m] for m in seg.outputs]
        out = call(f"{', '.join(held)} = {kname}(", args, ")")
        out[0] += f"  # compiled: {len(ops)} ops" if len(out[0]) < 80 else ""
        out += [f"    {h} = {NUMPY_TYPE[nodes[m].dtype]}({h})"
                for h, m in zip(held, seg.outputs) if not nodes[m].shape]
        return out

    def stats(self) -> tuple[list[tuple[str, list[str]]], dict[str, int], dict[str, str]]:
        """What :meth:`module` compiled (each kernel and its ops), what it left to NumPy
        (op -> lines) and why (op -> the first reason)."""
        counts = dict(sorted(self.numpy_counts.items()))
        return self.fused, counts, {op: self.numpy_why[op] for op in counts
                                    if op in self.numpy_why}
