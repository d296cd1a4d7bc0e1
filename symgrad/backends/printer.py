"""The base printer: one module of straight-line functions over one lowered graph.

A printer writes one assignment per node of each function's outputs' ancestors, in id
order (a topological order), so every forward value is computed once and reused by the
adjoint lines; names come from the function's :class:`~symgrad.backends.plan.Plan`;
every adjoint (tangent) line carries a comment naming the forward line it differentiates;
large temporaries are released with ``del`` after their last use; a long function is
split into parts (:mod:`symgrad.backends.layout`). The text depends only on the graph: no
set order, no hash seed, no addresses.

A target's printer is a subclass that sets :attr:`Printer.table` and overrides some of
the hooks in :data:`HOOKS` (how a constant, the module's header, a function's first lines,
a loop look), as SymPy's printers and tinygrad's renderers do; it never branches on which
target it is, and nothing else of this class is meant to be overridden.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..base.errors import BackendError, SymgradError
from ..base.memory import gc_paused
from ..base.progress import start
from ..ir.body import Body
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import RESULT
from ..ir.shapes import is_complex
from . import layout
from .docstring import docstring
from .lines import call, del_lines, fit, moves, releases, stores
from .literals import LINE, data_helpers, data_source
from .loops import LoopEmitter, LoopSpec, body_ops, is_loop
from .naming import Namer
from .plan import Plan, plan
from .template import Template, helpers_of

if TYPE_CHECKING:
    from .stages import Function, Lowered
    from .target import Target

__all__ = ["HOOKS", "RENDER", "ModuleState", "Printer"]


def _render(pr: Printer, template: Template, texts: list[str], attrs: dict) -> str:
    return template.render(texts, attrs)


RENDER: list[Callable[[Printer, Template, list[str], dict], str]] = [_render]
"""How a node's template becomes its text (``RENDER[0]``): :mod:`.callbacks` installs its
own, which prints a solver's callbacks as module functions (the printer imports none of it)."""

#: The methods a target's printer overrides, by what they shape (each documented below).
HOOKS = (
    # the module
    "header", "constant_lines", "helpers", "hoists", "derived_lines", "finish", "reserved",
    "stats",
    # one function
    "function", "def_params", "part_params", "part_args", "prologue", "doc",
    "scalar_functions",
    # lines and values
    "statements", "op_text", "literal", "const_text", "copy_text", "strong_literal",
    "helpers_take_arrays", "no_source",
    # loops (see symgrad.backends.loops)
    "render_loop", "step_printer", "scalar_loops", "lists_between_loops",
)


@dataclass
class ModuleState:
    """What every printer of one module shares: the functions' plans, the hoisted array
    constants' names, the inlined 0-d constants and the names of generated helpers."""

    graph: Graph
    plans: list[Plan]
    shown: dict[int, Expr]  # output id -> the Expr its docstring line prints
    constants: list[tuple[str, Any]]  # public module constants (a sparse pattern)
    consts: dict[int, str] = field(default_factory=dict)  # hoisted array constant -> name
    derived: list[int] = field(default_factory=list)  # hoisted constant-only ops, in id order
    inlined: set[int] = field(default_factory=set)  # 0-d constants written as literals
    helper_names: set[str] = field(default_factory=set)  # generated helpers (bodies, parts)
    data: dict[tuple, str] = field(default_factory=dict)  # module data (a pattern) -> name


class Printer:
    """Prints a :class:`~symgrad.backends.stages.Lowered` stage as a module's text (or, for
    the stage of one loop step, that step's lines: see :meth:`nested`).

    Subclasses set :attr:`table` and override the :data:`HOOKS`; :meth:`module` is the text.
    """

    table: ClassVar[dict[str, Template | None]] = {}  # op -> how it is written (None: no form)

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        self.lowered = lowered
        self.target: Target = lowered.request.target
        self.graph = lowered.graph
        self.state = state if state is not None else self._state(lowered)
        self._literals: dict[tuple, str] = {}
        self._probes: dict[tuple, list[bool]] = {}
        self._comments: dict[tuple, list[str]] = {}
        self._names_of: dict[int, set[str]] = {}
        self._others_of: dict[int, list[str]] = {}  # node -> its operands' dtypes (_others)
        self._results: dict[int, dict[int, int]] | None = None  # call -> index -> projection
        # the scans: one loop function each, shared by nested printers (``loops``: the root's)
        self.loops = LoopEmitter(self, loops)

    def nested(self, body: Body) -> Printer:
        """A printer for one step of loop body ``body`` (:meth:`step_printer`'s class, over
        the step's stage :meth:`~symgrad.backends.stages.Lowered.step`), sharing this
        module's loop functions."""
        step = self.lowered.step(body)
        return self.step_printer(step.body)(step, None, self.loops.root)

    # -- the module ---------------------------------------------------------------------

    def module(self) -> str:
        """The module's text: header, constants, helpers, one function per request."""
        with gc_paused():
            # the functions first: they (and their loops) say what the header imports and
            # which helpers they call
            functions = [self.function(p) for p in self.state.plans]
            out = self.header()
            out += self.constant_lines()
            for fn in self.helpers():
                out += ["", "", *helper_source(fn)]
            out += self.derived_lines()  # after the helpers: they may call them
            code = self.loops.definitions()  # the loop functions, before the others
            out += code
            for lines, body in functions:
                out += ["", "", *lines]
                code += body
            return self.finish(out, code)

    def header(self) -> list[str]:
        """The module's first lines: its comment and imports."""
        return list(self.target.header)

    def constant_lines(self) -> list[str]:
        """The module-level constants: hoisted arrays, then the public constants."""
        raise NotImplementedError

    def data_lines(self) -> list[str]:
        """The module data (sparse patterns, :func:`is_data`) as module constants, after
        the helper their text calls: for :meth:`constant_lines`."""
        data = self.state.data
        out = [ln for fn in data_helpers(list(data)) for ln in ["", "", *helper_source(fn)]]
        out += ["", ""] if out else [""] if data else []
        return out + [fit(f"{name} = {data_source(value)}") for value, name in data.items()]

    def helpers(self) -> list[Callable]:
        """The helper functions the module's templates call, sorted by name."""
        return helpers_of(self.table, self.module_ops())

    def hoists(self) -> bool:
        """Whether array values computed from constants alone are computed once, at module
        level (after the helpers), instead of on every call."""
        return False

    def derived_lines(self) -> list[str]:
        """The module-level lines of the hoisted constant-only values."""
        return []

    def finish(self, out: list[str], code: list[str]) -> str:
        """The module's text from its lines (``code``: the functions' lines without their
        docstrings)."""
        return "\n".join(out) + "\n"

    # -- hooks for one function ---------------------------------------------------------

    def def_params(self, params: list[str]) -> list[str]:
        """The parameters of the function's ``def`` line."""
        return params

    def part_params(self, code: list[str]) -> list[str]:
        """The parameters a long function's parts take besides the shared list (``code``:
        the function's lines)."""
        return []

    def part_args(self, code: list[str]) -> list[str]:
        """The arguments the function passes its parts besides the shared list."""
        return self.part_params(code)

    def prologue(self, params: list[str], code: list[str]) -> list[str]:
        """Lines before the body (after the docstring), given the body's ``code``."""
        return []

    def doc(self, p: Plan) -> list[str]:
        """The function's docstring lines."""
        return docstring(self.graph, p, self.state.shown, self.target.label)

    # -- hooks for one value ------------------------------------------------------------

    def literal(self, value: np.ndarray, others: list[str], strong: bool) -> str:
        """A 0-d constant as a literal beside operands of dtypes ``others``."""
        raise NotImplementedError

    def const_text(self, i: int) -> str:
        """Hoisted array constant ``i`` as an operand."""
        return self.state.consts[i]

    def copy_text(self, expr: str) -> str:
        """A fresh copy of a hoisted constant (an output must never be the shared one)."""
        raise NotImplementedError

    def strong_literal(self, a: int, user: Any) -> bool:
        """Whether 0-d constant ``a`` must be written as an array where ``user`` reads it."""
        return False

    def helpers_take_arrays(self, probe: str) -> bool:
        """Whether the template text ``probe`` calls a helper that takes only arrays."""
        return False

    def reserved(self) -> list[str]:
        """Names no variable or temporary may take (the module's imports)."""
        return []

    def scalar_functions(self) -> bool:
        """Whether a function whose every value is a float scalar is written over Python
        floats with ``math`` (NumPy with ``scalars="math"``)."""
        return False

    def stats(self) -> tuple[list[tuple[str, list[str]]], dict[str, int], dict[str, str]] | None:
        """After :meth:`module`: what the module compiled into code of its own (each
        function and its ops), what it left to NumPy (op -> lines) and why (op -> reason);
        None where the target compiles nothing (every target but Numba)."""
        return None

    # -- hooks for loops (see symgrad.backends.loops) -------------------------------------

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """The lines of loop function ``name`` (module level): ``spec`` says what the loop
        is, ``stmts`` are its step's lines printed by ``step`` (the nested printer), the
        results ``lists`` may be returned as Python lists (:meth:`lists_between_loops`)."""
        raise BackendError(f"backend {self.target.name!r} cannot emit loops: its printer "
                           f"{type(self).__name__} has no render_loop")

    def step_printer(self, body: Body) -> type[Printer]:
        """The printer class of the steps of loops over ``body`` (as emitted)."""
        return type(self)

    def scalar_loops(self) -> bool:
        """Whether an all-scalar loop step is also written over Python floats (``math``)."""
        return False

    def lists_between_loops(self) -> bool:
        """Whether the per-step results one loop stacks only for other loops to scan are
        passed between them as Python lists (see :mod:`symgrad.backends.loops`)."""
        return False

    def no_source(self, op: str, i: int) -> None:
        """Raise: op ``op`` (node ``i``) cannot be written for this target, and why."""
        why = self.target.unsupported.get(op) or "it has no template in this backend's table"
        raise BackendError(f"op {op!r} (node {i}) cannot be emitted for backend "
                           f"{self.target.name!r}: {why}; use backend='numpy' for this "
                           "expression")

    # -- planning -----------------------------------------------------------------------

    def _state(self, lowered: Lowered) -> ModuleState:
        graph, nodes = lowered.graph, lowered.graph.nodes
        if lowered.body is not None:  # one loop step: its constants are 0-d, written inline
            state = ModuleState(graph, [], {}, [])
            state.plans.append(self.plan_of(lowered.functions[0]))
            state.inlined = {nd.id for nd in nodes if nd.is_const}
            return state
        derived = self._derived(lowered)
        plans: list[Plan] = []
        for fn in lowered.functions:
            if any(p.name == fn.name for p in plans):
                raise SymgradError(f"two generated functions named {fn.name!r}")
            plans.append(self.plan_of(fn, frozenset(derived)))
        state = ModuleState(graph, plans, dict(lowered.shown), list(lowered.request.constants))
        ids = {i for p in plans for i in p.order if nodes[i].is_const}
        namer = Namer([p.name for p in plans])
        for p in plans:
            namer.taken.update(p.names.values())
        k = 1
        for i in sorted(ids):
            if nodes[i].shape != ():
                state.consts[i], k = namer.counter("_c", k)
        for i in derived:
            state.consts[i], k = namer.counter("_c", k)
        for value in module_data(graph, [i for p in plans for i in p.order] + derived):
            state.data[value], k = namer.counter("_c", k)
        state.derived = derived
        state.inlined = {i for i in ids if nodes[i].shape == ()}
        return state

    def _derived(self, lowered: Lowered) -> list[int]:
        """The array values of the functions computed from constants alone (no variable
        among their ancestors), if this printer hoists them: in id order."""
        if not self.hoists():
            return []
        graph, nodes = lowered.graph, lowered.graph.nodes
        order = graph.ancestors([i for fn in lowered.functions for i in fn.outputs])
        constant = {i for i in order if nodes[i].is_const}
        out = []
        for i in order:  # a chain of arrays only: a 0-d value is no module constant here
            n = nodes[i]
            if (n.args and n.shape != () and self.table.get(n.op) is not None
                    and all(a in constant for a in n.args)):
                constant.add(i)
                out.append(i)
        return out

    def plan_of(self, fn: Function, hoisted: frozenset[int] = frozenset()) -> Plan:
        """The :class:`~.plan.Plan` of function ``fn`` (``hoisted``: nodes computed at
        module level); :meth:`no_source` for an op this printer has no form for."""
        nodes = self.graph.nodes
        for i in self.graph.ancestors(list(fn.outputs)):
            n = nodes[i]  # (a projection is a name its call's statement assigns: no form)
            if not (n.is_var or n.is_const or n.op == RESULT) and self.table.get(n.op) is None:
                self.no_source(n.op, i)
            if n.op in self.target.complex_unsupported and any(
                    is_complex(str(nodes[a].dtype)) for a in n.args):
                raise BackendError(
                    f"op {n.op!r} (node {i}) of complex values cannot be emitted for backend "
                    f"{self.target.name!r}: {self.target.complex_unsupported[n.op]}; use "
                    "backend='numpy' (or 'numba') for this expression")
        return plan(self.graph, fn, self.table, self.reserved(), self.lowered.derivatives,
                    hoisted)

    def module_ops(self) -> list[str]:
        """The ops of every line of the module, loop bodies included."""
        nodes = self.graph.nodes
        ids = [i for p in self.state.plans for i in p.order]
        return [nodes[i].op for i in ids] + body_ops(self.graph, ids)

    def hoisted(self) -> list[int]:
        """The array constants (leaves) the module holds, in id order."""
        nodes = self.graph.nodes
        return sorted(i for i in self.state.consts if nodes[i].is_const)

    # -- one function -------------------------------------------------------------------

    def function(self, p: Plan) -> tuple[list[str], list[str]]:
        """The function's lines, and the same without its docstring."""
        return self.function_lines(p, p.name, self.doc(p))

    def function_lines(self, p: Plan, fname: str, doc: list[str]) -> tuple[list[str], list[str]]:
        """The lines of ``def fname`` computing ``p`` (a long function: its parts too, each
        a function of its own before it; see :mod:`.layout`), and the same without ``doc``."""
        nodes, names = self.graph.nodes, p.names
        outputs = set(p.outputs)
        consts = self.state.consts
        body = [i for i in p.order if not (nodes[i].is_var or (
            (nodes[i].is_const or i in consts) and i not in outputs))]
        big = len(body) > layout.REGISTERS_FROM
        if big:
            names = dict(names)
            fixed = {i: names[i] for i in body if i in outputs}
            names.update(layout.registers(nodes, body, fixed, set(names.values())))
        params = [names[i] for i in p.params]
        results = [p.aliases.get(i) or names.get(i) or self.expr(i, names) for i in p.outputs]
        tail = [self._line(f"    {alias} = {names[i]}", nodes[i], names, p.alias_of.get(i))
                for i, alias in sorted(p.aliases.items())]
        ret = results[0] if p.single else ", ".join(results) + ("," if len(results) == 1 else "")
        tail.append(f"    return {ret}" if p.single or len(results) > 1 else f"    return ({ret})")
        if len(body) <= layout.PART_LINES:
            code = self.statements(body, names, outputs, comments=not big)
            head = self._head(fname, params, doc, code + tail)
            lines = [fit(line) for line in head + code + tail]
        else:
            lines = [fit(line) for line in self._parts(p, body, names, params, outputs, fname,
                                                        doc, tail) + tail]
        docs = set(doc)
        return lines, [ln for ln in lines if ln not in docs]

    def _head(self, fname: str, params: list[str], doc: list[str], code: list[str]
              ) -> list[str]:
        """The ``def`` line, the docstring and the prologue of a function with ``code``."""
        return [*call(f"def {fname}(", self.def_params(params), "):", ""), *doc,
                *self.prologue(params, code)]

    def _parts(self, p: Plan, body: list[int], names: dict[int, str], params: list[str],
               outputs: set[int], fname: str, doc: list[str], tail: list[str]) -> list[str]:
        """A long function as parts sharing one list of the values that cross them."""
        nodes = self.graph.nodes
        pieces, slots = layout.parts(nodes, body, p.params, [i for i in p.outputs
                                                             if i not in p.aliases])
        # what a part hands on is live to its end: never released before its store
        codes = [self.statements(part.lines, names, outputs | {i for i, _ in part.stores},
                                 comments=False) for part in pieces]
        code = [line for c in codes for line in c] + tail
        shared = Namer(list(names.values()) + params).fresh("_v")
        before: list[str] = []
        calls = [f"    {shared} = [None] * {len(slots)}"]
        calls += stores(shared, [(i, slots[i]) for i in p.params if i in slots], names)
        part_params, part_args = self.part_params(code), self.part_args(code)
        for k, (part, part_code) in enumerate(zip(pieces, codes), start=1):
            part_name = self.helper_name(p, f"part{k}")
            before += [f"def {part_name}({', '.join([shared, *part_params])}):"]
            before += moves([(names[i], f"{shared}[{s}]") for i, s in part.loads])
            before += part_code
            before += stores(shared, part.stores, names) + ["", ""]
            calls.append(f"    {part_name}({', '.join([shared, *part_args])})")
        calls += moves([(names[i], f"{shared}[{slots[i]}]") for i in dict.fromkeys(p.outputs)
                        if i in slots and i not in p.aliases])
        return before + self._head(fname, params, doc, code) + calls

    def helper_name(self, p: Plan, kind: str) -> str:
        """A fresh name for a helper of function ``p`` (``_f_scalar``, ``_f_part1``)."""
        state = self.state

        def taken(name: str) -> bool:
            return (name in state.helper_names or name in self._plan_names(p)
                    or any(q.name == name for q in state.plans))

        name, k = f"_{p.name}_{kind}", 1
        while taken(name):
            name, k = f"_{p.name}_{kind}_{k}", k + 1
        state.helper_names.add(name)
        return name

    def _plan_names(self, p: Plan) -> set[str]:
        found = self._names_of.get(id(p))
        if found is None:
            found = self._names_of[id(p)] = set(p.names.values())
        return found

    def statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                    comments: bool = True) -> list[str]:
        """One assignment per node of ``body``; ``del`` after the last use of big arrays."""
        nodes = self.graph.nodes
        dead_after = releases(nodes, body, outputs, self.state.consts)
        lines = []
        progress = start("emit source", total=len(body))
        for i in body:
            progress.update()
            n = nodes[i]
            if n.op == RESULT:  # a name its call's statement assigns
                continue
            loop = self.loops.statement(i, names, body)  # a scan: its loop function's call
            if loop is not None:
                lines += loop
            else:
                expr = self.expr(i, names)
                if i in self.state.consts:  # never hand out the shared constant
                    expr = self.copy_text(expr)
                code = f"    {self.targets(i, names)} = {expr}"
                lines.append(self._line(code, n, names) if comments else code)
            dead = [names[a] for a in dead_after.get(i, ()) if names[a] != names.get(i)]
            lines += del_lines(dead)
        progress.close()
        return lines

    def targets(self, i: int, names: dict[int, str]) -> str:
        """What node ``i``'s statement assigns: its name, or for a call with several
        results its results' names (``_`` for a result this function does not read)."""
        n = self.graph.nodes[i]
        if not n.is_call:
            return names[i]
        if self._results is None:
            self._results = {}
            for m in self.graph.nodes:
                if m.op == RESULT:
                    self._results.setdefault(m.args[0], {})[m.attrs["index"]] = m.id
        found = self._results.get(i, {})
        items = [names.get(found.get(k, -1), "_") for k in range(len(n.dtype))]
        return ", ".join(items) + ("," if len(items) == 1 else "")

    # -- one node -----------------------------------------------------------------------

    def expr(self, i: int, names: dict[int, str]) -> str:
        n = self.graph.nodes[i]
        if n.is_var or n.op == RESULT:  # a projection: the name its call assigned
            return names[i]
        if i in self.state.consts:
            return self.const_text(i)
        if n.is_const:
            return self.literal(n.attrs["value"], [], False)
        return self.op_text(n, names)

    def op_text(self, n: Any, names: dict[int, str]) -> str:
        """Node ``n`` (an op) as its template writes it over its operands."""
        src = self.table[n.op]
        texts = [self.operand(a, n, names) for a in n.args]
        if any(k in self.state.inlined for k in n.args):
            texts = self._typed_scalars(n, src, texts)
        # module data and a solver's callbacks: by the names of what the module holds
        text = RENDER[0](self, src, texts, self._data_names(n.attrs))
        if not isinstance(text, str) or "\n" in text:
            raise SymgradError(f"op {n.op!r} has a source template that gives no one-line text")
        return text

    def operand(self, a: int, user: Any, names: dict[int, str], strong: bool = False) -> str:
        """Operand ``a`` of node ``user``: its name, or the constant written out (typed if
        ``strong``)."""
        name = names.get(a)
        if name is not None and a not in self.state.inlined:
            return name
        if a in self.state.consts:
            return self.const_text(a)
        nodes = self.graph.nodes
        strong = strong or self.strong_literal(a, user)
        others = self._others(a, user)
        key = (a, tuple(others), strong)
        text = self._literals.get(key)
        if text is None:
            text = self._literals[key] = self.literal(nodes[a].attrs["value"], others, strong)
        return text

    def _data_names(self, attrs: dict) -> dict:
        """``attrs`` with each module data value (:func:`is_data`) replaced by the name of
        the module constant holding it (the module's: loop bodies share their root's)."""
        if not any(is_data(v) for v in attrs.values()):
            return attrs
        held = self.loops.root.printer.state.data
        try:
            return {k: held[v] if is_data(v) else v for k, v in attrs.items()}
        except KeyError:
            raise SymgradError("module data of a node no function of the module computes "
                               "(a sparse pattern): it cannot be emitted") from None

    def _typed_scalars(self, n: Any, src: Template, texts: list[str]) -> list[str]:
        """Inline constants the template uses as arrays (``{0}.dtype``, ``{0}[i]``) as typed
        scalars (``np.float64(1.0)``), which have those attributes; plain literals do not."""
        key = (n.op, len(texts)) if isinstance(src.text, str) else None
        used = self._probes.get(key) if key else None
        if used is None:
            probe = src.render([f"_SGPROBE{k}_" for k in range(len(texts))], n.attrs)
            found = {int(k) for k in _AS_ARRAY.findall(probe)}  # one scan of the text
            used = [k in found for k in range(len(texts))]
            if self.helpers_take_arrays(probe):
                used = [True] * len(texts)
            if key:
                self._probes[key] = used
        out = list(texts)
        nodes = self.graph.nodes
        for k, a in enumerate(n.args):
            if a in self.state.inlined and used[k]:
                out[k] = self.literal(nodes[a].attrs["value"], self._others(a, n), True)
        return out

    def _others(self, a: int, user: Any) -> list[str]:
        """The dtypes of ``user``'s operands beside 0-d constant ``a`` that decide how it is
        typed, once each, sorted (promotion reads only which dtypes there are): another
        0-d literal is weak too, so it is left out. Kept per ``user``: a sum of 10^5 terms
        asks once, not once per term."""
        found = self._others_of.get(user.id)
        if found is None:
            nodes = self.graph.nodes
            found = self._others_of[user.id] = sorted(
                {nodes[b].dtype for b in user.args
                 if not (nodes[b].is_const and nodes[b].shape == ())})
        return found

    # -- provenance comments ------------------------------------------------------------

    def _line(self, code: str, n: Any, names: dict[int, str], of: int | None = None) -> str:
        """``code`` plus, for an adjoint line, ``# backprop of: <forward line>`` (shortened);
        for a tangent line (forward mode), ``# tangent of: <forward line>``."""
        if of is None and (n.role == "forward" or n.origin is None):
            return code
        o = self.graph.nodes[n.origin if of is None else of]
        target = self.targets(o.id, names) if o.is_call else names.get(o.id)
        if not target or not target.strip(", _"):
            return code  # no line of this function computes it: nothing to cite
        mark = "tangent of" if of is None and n.role == "tangent" else "backprop of"
        for what in self._forward_texts(o, target, names):
            line = f"{code}  # {mark}: {what}"
            if len(line) <= LINE:
                return line
        return f"{code}  # {mark}: {target}"

    def _forward_texts(self, o: Any, target: str, names: dict[int, str]) -> list[str]:
        """Ways to name forward node ``o`` in a comment, longest first."""
        if o.is_var:
            return [f"{target} (input)"]
        if o.is_const:
            return [target]
        key = (id(names), o.id)
        texts = self._comments.get(key)
        nodes, consts = self.graph.nodes, self.state.consts
        unnamed = {a for a in o.args if nodes[a].is_const and nodes[a].shape != ()
                   and a not in consts}  # an array constant this module does not hold
        if texts is None and unnamed:
            texts = [target]  # (another gradient's origin)
        if texts is None:
            args = ", ".join(names.get(a) or self.expr(a, names) for a in o.args)
            full = self.expr(o.id, names)
            texts = [f"{target} = {full}"] if len(full) <= 48 else []
            texts.append(f"{target} = {o.op}({args})")
            self._comments[key] = texts
        return texts


def is_data(value: Any) -> bool:
    """Whether an attribute value is *module data*: a tuple holding bytes (a sparse
    pattern's index arrays), written once per module as a constant whose name the
    templates receive in its place (never spliced into each line)."""
    return type(value) is tuple and any(type(e) is bytes for e in value)


def module_data(graph: Graph, ids: list[int]) -> list[tuple]:
    """The distinct module data values of nodes ``ids`` and of the loop bodies among them,
    in the order first met."""
    found: dict[tuple, None] = {}
    todo, seen = [(graph, ids)], set()
    while todo:
        g, order = todo.pop()
        for i in order:
            attrs = g.nodes[i].attrs
            for v in attrs.values():
                if is_data(v):
                    found.setdefault(v)
            body = attrs.get("body") if is_loop(g.nodes[i]) else None
            if body is not None and id(body) not in seen:
                seen.add(id(body))
                todo.append((body.graph, range(len(body.graph.nodes))))
    return list(found)


_AS_ARRAY = re.compile(r"_SGPROBE(\d+)_\s*[.\[(]")  # an operand used as an array: x.dtype


@functools.cache
def helper_source(fn: Callable) -> tuple[str, ...]:
    """The text of a helper function (read once: ``inspect`` is slow to import and run)."""
    import inspect

    return tuple(textwrap.dedent(inspect.getsource(fn)).rstrip().splitlines())
