"""Loops in emitted code: each ``scan`` becomes one module-level function ``_sg_loopN``
whose body is printed once, and the results of the scan one assignment calling it.

* NumPy (``Printer.loop_style == "numpy"``): a ``for`` loop over the steps with the step's
  statements inline; per-step results and the carries reverse mode reads are written into
  preallocated arrays; with ``scalars="math"``, an all-scalar step runs over Python floats
  first (NumPy's version where ``math`` raises), the per-step results one loop stacks only
  for other loops to scan passed as Python lists (:meth:`LoopEmitter._list_ok`) and a value
  one line uses once written into that line (:func:`_fused`).
* JAX (``"jax"``): ``jax.lax.scan`` of a nested step function (a traced loop, compiled once
  by ``jax.jit``).
* The array API and torch (``"arrays"``): a ``for`` loop collecting the per-step results in
  lists, stacked at the end.

A printer (:mod:`symgrad.backends.printer`) holds one :class:`LoopEmitter` and calls
it at three points: :meth:`LoopEmitter.arrange` (the results of one scan made consecutive,
so one statement can assign them all), :meth:`LoopEmitter.statement` (that statement) and
:meth:`LoopEmitter.definitions` (the loop functions, written before the module's functions).
A step is printed by a printer of the same kind over the body's graph, so nested loops,
constants and every op's template work inside a loop as they do outside.

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

import re
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from ..base.errors import SymgradError
from ..ir.body import Body
from ..ops.loops import as_ys
from .targets.numpy.table import NUMPY_TYPE

__all__ = ["LoopEmitter", "LoopSpec", "body_ops", "is_loop", "nested_printer", "numpy_loop",
           "optimized_body", "printed_step"]


def is_loop(node: Any) -> bool:
    """Whether ``node`` is one result of a loop (it holds a traced body)."""
    return isinstance(node.attrs.get("body"), Body) if node.attrs else False


def body_ops(graph: Any, ids: list[int]) -> list[str]:
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


def _bodies(node: Any) -> list[Body]:
    """The bodies a node holds: a loop's step, a solver's callbacks."""
    return [v for v in node.attrs.values() if isinstance(v, Body)] if node.attrs else []


def _call_key(node: Any) -> tuple:
    attrs = node.attrs
    return (node.args, attrs["body"], attrs["carries"], attrs["xs"], attrs["length"],
            attrs["reverse"])


class LoopEmitter:
    """The loops of one printer (``root``: the emitter of the printer whose module holds
    the loop functions; nested printers share it)."""

    def __init__(self, printer: Any, root: LoopEmitter | None = None) -> None:
        self.printer = printer
        self.root = root or self
        self.functions: dict[tuple, str] = {}  # (call key, parts) -> function name
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
        args = [pr._operand(a, n, names, strong=True) for a in n.args]
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
        """Whether loop result ``j`` (stacked over the steps) may be a Python list when the
        loop runs over Python floats: every use of it, in every function of the module, is
        a scanned operand (an xs) of another loop, and no function returns it. A loop
        function takes such an operand as a list or an array (the same float64 values), so
        the stacked floats skip a list -> array -> list round trip."""
        if not _passes_lists(self.printer):
            return False
        found = self._list_uses
        if found is None:
            found = self._list_uses = _xs_only(self.printer)
        return j in found

    def _function_for(self, n: Any, parts: tuple, pr: Any, lists: tuple = ()
                      ) -> tuple[str, list[str]]:
        """The name of the loop function of scan ``n`` returning ``parts`` (printed on first
        use; those in ``lists`` as Python lists from its version over floats), and its
        body's statements (they say what the function takes besides)."""
        key = (_call_key(n)[1:], parts, type(pr), lists)
        found = self.functions.get(key)
        if found is None:
            n, parts, lists = _residuals_as_ys(n, parts, lists)
            name = self._fresh(pr)
            made = pr.loop_function(self, name, n, parts)  # a printer's own loops (Numba)
            lines, stmts = (made if made is not None
                            else self._render(name, n, parts, pr, lists))
            found = self.functions[key] = (name, stmts)
            self.lines += ["", "", *lines]
        return found

    def _fresh(self, pr: Any) -> str:
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

    def _render(self, name: str, n: Any, parts: tuple, pr: Any, lists: tuple = ()
                ) -> tuple[list[str], list[str]]:
        body = optimized_body(n.attrs["body"], pr.lowered.request)
        sub = nested_printer(pr.loop_printer(), pr, body, self.root)
        spec, stmts, order = printed_step(sub, body, n, parts)
        nc, nx = spec.nc, spec.nx
        signature = spec.params[:nc] + spec.xs + spec.params[nc + nx:]
        render = {"jax": _jax, "numpy": numpy_loop, "arrays": _arrays}[pr.loop_style]
        if render is numpy_loop:
            render = partial(numpy_loop, lists=lists)
        head = call(f"def {name}(", [*pr.part_params(stmts), *signature], "):", "")
        doc = f'    """scan: {spec.length} steps of the body below (symgrad)."""'
        lines = [*head, doc]
        fast = _scalar_step(sub, sub.state.plans[0], order, set(body.outputs))
        if fast is not None:  # the step over Python floats with math; NumPy if it raises
            mstmts, mresults = fast
            mspec = LoopSpec(body, nc, nx, spec.length, spec.reverse, parts, spec.params,
                             spec.xs, mresults)
            before = [*call(f"def {name}_math(", signature, "):", ""),
                      f'    """{name} over Python floats with math."""', "    import math",
                      "", *_math(mspec, mstmts, lists), "", ""]
            args = ([f"float({c})" for c in signature[:nc]]
                    + [f"({x} if type({x}) is list else {x}.tolist())" for x in spec.xs]
                    + [f"float({k})" for k in signature[nc + nx:]])
            lines = before + lines + ["    try:", *call(f"return {name}_math(", args, ")",
                                                      "        "),
                                      "    except (ArithmeticError, ValueError):",
                                      "        pass  # the NumPy version below gives inf/nan"]
        if _passes_lists(pr):  # a scanned operand may come as a list (_list_ok)
            lines += _from_lists(spec)
        return [*lines, *render(spec, stmts)], stmts


class _Scan:
    """A scan's attributes seen with another body (what the loop printers read of it)."""

    def __init__(self, attrs: dict) -> None:
        self.attrs = attrs


def _residuals_as_ys(n: Any, parts: tuple, lists: tuple) -> tuple[Any, tuple, tuple]:
    """Scan ``n`` returning ``parts`` as a scan whose body has the residuals among them
    as further ys (:func:`symgrad.ops.loops.as_ys`), with its parts and ``lists``."""
    nc = n.attrs["carries"]
    body, new = as_ys(n.attrs["body"], nc, parts)
    if body is n.attrs["body"]:
        return n, parts, lists
    renamed = dict(zip(parts, new))
    return (_Scan({**n.attrs, "body": body}), new,
            tuple(sorted(renamed[p] for p in lists)))


def printed_step(sub: Any, body: Body, n: Any, parts: tuple
                 ) -> tuple[LoopSpec, list[str], list[int]]:
    """The step ``body`` of scan ``n`` printed by ``sub`` (a printer nested over it,
    :func:`nested_printer`): the loop's :class:`LoopSpec` for results ``parts``, the step's
    statements and their order."""
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
    stmts = sub._statements(order, names, outputs, comments=False)
    results = [names.get(o) or sub._expr(o, names) for o in body.outputs]
    spec = LoopSpec(body, nc, nx, n.attrs["length"], n.attrs["reverse"], parts, params, xs,
                    results)
    return spec, stmts, order


def optimized_body(body: Body, req: Any) -> Body:
    """``body`` rebuilt through the passes the request runs on the function around it
    (the compile passes; with ``fast_math`` the others too, so ``t - t`` in a step's VJP
    goes), kept on the body."""
    if not req.optimize:
        return body
    arrays = req.target.sums_as_sums
    key = ("optimized", req.fast_math, arrays)
    found = body.derived.get(key)
    if found is None:
        from ..passes import pipeline

        new, (outs,) = pipeline.optimize(body.graph, [list(body.outputs)], req.fast_math,
                                         arrays)
        nodes = body.graph.nodes
        ins = [new.variables[nodes[v].name] for v in body.inputs]
        folded = any(nd.is_const and nd.shape != () for nd in new.nodes)
        # a folded array constant has no place in a step (its constants are operands)
        found = body.derived[key] = body if folded else Body(new, ins, outs, body.n_in)
    return found


def nested_printer(cls: type, pr: Any, body: Body, root: LoopEmitter) -> Any:
    """A printer of class ``cls`` for one step of ``body`` (a function ``step`` from the
    body's inputs to its outputs), sharing the module's loop functions through ``root``."""
    from .printer import ModuleState
    from .stages import Function, Lowered

    graph, nodes = body.graph, body.graph.nodes
    if any(nd.is_const and nd.shape != () for nd in nodes):
        raise SymgradError("a loop body holds an array constant; it cannot be emitted")
    ins = tuple(nodes[v].name for v in body.inputs)
    fn = Function("step", tuple(body.outputs), ins, False)
    req = replace(pr.lowered.request, graph=graph, functions=(fn,))
    lowered = Lowered(req, graph, (fn,), {})
    state = ModuleState(graph, [], {}, [])
    sub = cls(lowered, state, root)
    state.plans.append(sub._plan(fn))
    state.inlined = {nd.id for nd in nodes if nd.is_const}
    return sub


def _passes_lists(pr: Any) -> bool:
    """Whether loop functions may pass stacked floats as Python lists (see
    :meth:`LoopEmitter._list_ok`): NumPy modules with ``scalars="math"``, the NumPy printer
    itself (a subclass that compiles its loops opts out by not being it)."""
    from .targets.numpy.printer import NumpyPrinter

    return type(pr) is NumpyPrinter and pr.loop_style == "numpy" and pr.scalar_loops()


def _xs_only(pr: Any) -> set[int]:
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


def _scalar_step(sub: Any, plan: Any, order: list[int], outputs: set[int]
                 ) -> tuple[list[str], list[str]] | None:
    """The step's statements and results over Python floats with ``math`` (None unless
    the module writes ``scalars="math"`` NumPy code and every value of the step is a
    float scalar)."""
    from .targets.numpy.printer import ScalarMathPrinter

    if not sub.scalar_loops():
        return None
    fast = ScalarMathPrinter(sub.lowered, sub.state)
    if not fast.accepts(plan):
        return None
    names = dict(plan.names)
    stmts = _fused(fast, order, names, outputs)
    return stmts, [names.get(o) or fast._expr(o, names) for o in plan.outputs]


INLINE = 60  # the longest value text written into the one line that uses it


def _fused(pr: Any, order: list[int], names: dict[int, str], outputs: set[int]) -> list[str]:
    """The step's statements over floats, a value that one later line uses once written
    into that line, parenthesised (``names`` updated with those texts): the same
    operations in the same order on Python floats, so the same values, with fewer
    stores and loads per step."""
    nodes = pr.graph.nodes
    user: dict[int, int | None] = {}
    for i in order:
        for a in nodes[i].args:
            user[a] = i if a not in user else None
    lines = []
    for i in order:
        expr = pr._expr(i, names)
        j = user.get(i)
        if (j is not None and i not in outputs and i not in pr.state.inlined
                and len(expr) <= INLINE and _mentions_once(pr, nodes[j], i)):
            names[i] = expr if _called(expr) else f"({expr})"
        else:
            lines.append(f"    {names[i]} = {expr}")
    return lines


def _called(expr: str) -> bool:
    """Whether ``expr`` is one call ``name(...)`` (no parentheses needed around it)."""
    head, paren, _ = expr.partition("(")
    if not paren or not expr.endswith(")") or not head.replace(".", "").isidentifier():
        return False
    depth = 0
    for k in range(len(head), len(expr)):
        depth += (expr[k] == "(") - (expr[k] == ")")
        if depth == 0 and k < len(expr) - 1:
            return False
    return True


def _mentions_once(pr: Any, n: Any, a: int) -> bool:
    """Whether node ``n``'s template writes its operand ``a`` once (else writing ``a``'s
    text into it would compute ``a`` more than once)."""
    if a in pr.state.inlined or any(k in pr.state.inlined for k in n.args):
        return False
    marks = [f"\x01{k}\x02" for k in range(len(n.args))]
    text = pr.table[n.op].render(marks, n.attrs)
    return isinstance(text, str) and sum(text.count(marks[k])
                                         for k, b in enumerate(n.args) if b == a) == 1


class LoopSpec:
    """What the renderers need of one loop."""

    def __init__(self, body: Body, nc: int, nx: int, length: int, reverse: bool,
                 parts: tuple, params: list[str], xs: list[str], results: list[str]) -> None:
        self.body, self.nc, self.nx, self.length, self.reverse = body, nc, nx, length, reverse
        self.parts, self.params, self.xs, self.results = parts, params, xs, results
        self.ny = len(body.outputs) - nc
        self.carries = params[:nc]
        self.x_names = params[nc:nc + nx]

    def kind(self, part: int) -> tuple[str, int]:
        if part < self.nc:
            return "carry", part
        if part < self.nc + self.ny:
            return "y", part - self.nc
        return "stored", part - self.nc - self.ny

    def aval(self, part: int) -> tuple[tuple, str]:
        kind, j = self.kind(part)
        if kind == "y":
            shape, dtype = self.body.avals([self.body.outputs[self.nc + j]])[0]
        else:
            shape, dtype = self.body.avals()[j]
        return shape, dtype

    def steps(self) -> str:
        return (f"range({self.length - 1}, -1, -1)" if self.reverse
                else f"range({self.length})")


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


def _moves(targets: list[str], values: list[str], lead: str) -> list[str]:
    pairs = [(t, v) for t, v in zip(targets, values) if t != v]
    if not pairs:
        return []
    return [f"{lead}{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}"]


def _buffers(s: LoopSpec, make: Callable[[int], str]) -> tuple[list[str], dict, dict]:
    """One buffer per stacked y (``_y<j>``) and stored carry (``_s<j>``), each ``make(part)``;
    their lines and names."""
    lines, ys, stored = [], {}, {}
    for p in s.parts:
        kind, j = s.kind(p)
        if kind != "carry":
            name = f"_y{j}" if kind == "y" else f"_s{j}"
            (ys if kind == "y" else stored)[j] = name
            lines.append(f"    {name} = {make(p)}")
    return lines, ys, stored


def _loop(s: LoopSpec, stmts: list[str], ys: dict, stored: dict,
          store: Callable[[str, str], str], index: str) -> list[str]:
    """The ``for`` statement: store the carries entering the step, take the step's xs at
    ``index``, run the step, store its ys, move the carries on."""
    loop = [f"        {store(name, s.carries[j])}" for j, name in stored.items()]
    loop += [f"        {x} = {xs}[{index}]" for x, xs in zip(s.x_names, s.xs)]
    loop += _indent(stmts)
    loop += [f"        {store(name, s.results[s.nc + j])}" for j, name in ys.items()]
    loop += _moves(s.carries, s.results[:s.nc], "        ")
    return [f"    for _t in {s.steps()}:", *(loop or ["        pass"])]


def _set(name: str, value: str) -> str:
    return f"{name}[_t] = {value}"


def _append(name: str, value: str) -> str:
    return f"{name}.append({value})"


def numpy_loop(s: LoopSpec, stmts: list[str], lists: tuple = ()) -> list[str]:
    """The NumPy loop: stacked results written into preallocated arrays, those in
    ``lists`` that hold arrays (not 0-d values) appended to Python lists instead (a
    reference per step rather than a copy: another loop only reads them step by step)."""
    listed = {p for p in lists if s.aval(p)[0]}

    def make(p: int) -> str:
        shape, dtype = s.aval(p)
        return "[]" if p in listed else (f"np.empty({(s.length, *shape)!r}, "
                                         f"dtype={NUMPY_TYPE[dtype]})")

    lines, ys, stored = _buffers(s, make)
    names = {p: (ys if s.kind(p)[0] == "y" else stored)[s.kind(p)[1]] for p in listed}
    lines += _loop(s, stmts, ys, stored, lambda n, v: (
        _append(n, v) if n in names.values() else _set(n, v)), "_t")
    if s.reverse:
        lines += [f"    {names[p]}.reverse()" for p in sorted(listed)]
    return lines + [_return(s, ys, stored)]


def _math(s: LoopSpec, stmts: list[str], lists: tuple = ()) -> list[str]:
    """The loop over Python floats: the scanned operands iterated (no index), stacked
    results appended to lists, returned as NumPy arrays (those in ``lists`` as the lists
    themselves)."""
    lines, ys, stored = _buffers(s, lambda p: "[]")
    loop = [f"        {name}_append({s.carries[j]})" for j, name in stored.items()]
    body, results = _carry_in_place(s, _local_math(_indent(stmts), lines))
    loop += body
    loop += [f"        {name}_append({s.results[s.nc + j]})" for j, name in ys.items()]
    loop += _moves(s.carries, results, "        ")
    lines += [f"    {name}_append = {name}.append" for name in [*stored.values(), *ys.values()]]
    lines += [f"    for {_math_targets(s)} in {_math_steps(s)}:", *(loop or ["        pass"])]
    if s.reverse:
        lines += [f"    {name}.reverse()" for name in [*ys.values(), *stored.values()]]
    out = []
    for p in s.parts:
        kind, j = s.kind(p)
        typ = NUMPY_TYPE[s.aval(p)[1]]
        if kind == "carry":
            out.append(f"{typ}({s.carries[j]})")
        else:
            name = ys[j] if kind == "y" else stored[j]
            out.append(name if p in lists else f"np.array({name}, dtype={typ})")
    return lines + [f"    return ({', '.join(out)}{',' if len(out) == 1 else ''})"]


def _carry_in_place(s: LoopSpec, body: list[str]) -> tuple[list[str], list[str]]:
    """A single carry computed by the step's last line is assigned there (``c0 = ...``, not
    ``t4 = ...; c0 = t4``) when no per-step result reads either name after it."""
    results = list(s.results[:s.nc])
    if s.nc != 1 or not body or not INLINE:
        return body, results
    new, old = results[0], s.carries[0]
    head = f"        {new} = "
    later = s.results[s.nc:]
    if new == old or not body[-1].startswith(head) or new in later or old in later:
        return body, results
    return [*body[:-1], f"        {old} = " + body[-1][len(head):]], [old]


_MATH_CALL = re.compile(r"\bmath\.([a-z][a-z0-9_]*)\(")


def _local_math(body: list[str], before: list[str]) -> list[str]:
    """``math.cos(`` in the loop's lines as ``_m_cos(``, bound once before the loop (a local
    name instead of an attribute look-up per call: the same function, so the same bits)."""
    names: dict[str, None] = {}

    def local(m: re.Match) -> str:
        names[m.group(1)] = None
        return f"_m_{m.group(1)}("

    body = [_MATH_CALL.sub(local, line) for line in body]
    before += [f"    _m_{n} = math.{n}" for n in names]
    return body


def _math_targets(s: LoopSpec) -> str:
    return ", ".join(s.x_names) if s.x_names else "_t"


def _math_steps(s: LoopSpec) -> str:
    """What the loop over floats iterates: the steps, or the scanned lists (as long as the
    scan; zipped, each reversed for a reverse scan)."""
    if not s.xs:
        return f"range({s.length})"
    xs = [f"reversed({x})" if s.reverse else x for x in s.xs]
    return xs[0] if len(xs) == 1 else f"zip({', '.join(xs)})"


def _from_lists(s: LoopSpec) -> list[str]:
    """The NumPy version's first lines: a scanned operand passed as a list of floats made
    the array it stands for."""
    lines = []
    for x, v in zip(s.xs, s.body.inputs[s.nc:s.nc + s.nx]):
        shape, dtype = s.body.avals([v])[0]
        if shape == ():
            lines.append(f"    {x} = np.array({x}, dtype={NUMPY_TYPE[dtype]}) "
                         f"if type({x}) is list else {x}")
    return lines


def _return(s: LoopSpec, ys: dict, stored: dict) -> str:
    out = []
    for p in s.parts:
        kind, j = s.kind(p)
        out.append(s.carries[j] if kind == "carry" else ys[j] if kind == "y" else stored[j])
    return f"    return ({', '.join(out)}{',' if len(out) == 1 else ''})"


def _arrays(s: LoopSpec, stmts: list[str]) -> list[str]:
    lines, ys, stored = _buffers(s, lambda p: "[]")
    lines += _loop(s, stmts, ys, stored, _append, "_t, ...")
    for p in s.parts:
        kind, j = s.kind(p)
        if kind == "carry":
            continue
        name = ys[j] if kind == "y" else stored[j]
        shape, dtype = s.aval(p)
        if s.reverse:
            lines.append(f"    {name}.reverse()")
        empty = f"xp.zeros({(0, *shape)!r}, dtype=xp.{dtype})"
        lines.append(f"    {name} = xp.stack({name}) if {name} else {empty}")
    return lines + [_return(s, ys, stored)]


def _jax(s: LoopSpec, stmts: list[str]) -> list[str]:
    ys = {j: f"_y{j}" for j in range(s.ny)}
    stored = {j: f"_s{j}" for j in range(s.nc)}

    def tup(items: list[str]) -> str:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    lines = ["    from jax import lax as _sg_lax", "", "    def _sg_step(_c, _x):"]
    if s.carries:
        lines.append(f"        {', '.join(s.carries)}, = _c")
    if s.x_names:
        lines.append(f"        {', '.join(s.x_names)}, = _x")
    lines += _indent(stmts)
    lines.append(f"        return {tup(s.results[:s.nc])}, "
                 f"{tup(s.results[s.nc:] + s.carries)}")
    lines.append("")
    final = [f"_f{j}" for j in range(s.nc)]
    avals = s.body.avals()
    init = [f"xp.asarray({c}, dtype=xp.{avals[j][1]})" for j, c in enumerate(s.carries)]
    lhs = f"{tup(final)}, {tup([ys[j] for j in range(s.ny)] + list(stored.values()))}"
    lines += call(f"{lhs} = _sg_lax.scan(", ["_sg_step", tup(init), tup(s.xs),
                                              f"length={s.length}", f"reverse={s.reverse}"],
                   ")", "    ")
    out = []
    for p in s.parts:
        kind, j = s.kind(p)
        out.append(final[j] if kind == "carry" else ys[j] if kind == "y" else stored[j])
    return lines + [f"    return {tup(out)}"]


def call(head: str, items: list[str], close: str, lead: str = "    ") -> list[str]:
    """:func:`symgrad.backends.lines.call` (imported on use: the printers import
    this module)."""
    from .lines import call as wrapped

    return wrapped(head, items, close, lead)
