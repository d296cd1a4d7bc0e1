"""Scans compiled by Numba: each loop of a ``backend="numba"`` module one ``numba.njit``
function.

The NumPy target writes a scan as a function ``_sg_loopN`` running a ``for`` over the
steps with the step's statements inline (:mod:`..numpy.loops`). Here the same function — the
``for``, the carries, the per-step slices of the xs, the stacked ys, the carries reverse
mode stores, ``reverse=True`` — is compiled whole as ``_sg_loopN_jit``: nopython, one
thread, NumPy's floating-point error model, cached on disk, an explicit signature from
the step's static shapes and dtypes (arrays read only, of any layout). Each op of the step
is written by :class:`StepPrinter` in the form :func:`.table.loop_form` gives it
(a 0-d value is a Numba scalar, an array a Numba array); a scan inside the step is a call
of its own compiled function. ``_sg_loopN`` stays a small Python function: it passes the
scalars in as the step's dtypes and gives NumPy scalars back, so the driver reads the
same values as from the NumPy loop.

Where an op of the step (or of a loop nested in it) has no form inside a compiled loop,
the scan is the NumPy target's loop and the module's statistics say so: ``scan`` and the
ops that lack a form count among the NumPy calls (``sg.stats(..., backend="numba")``).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=100)
>>> src = sg.to_source(c, backend="numba")
>>> print(src[src.index("@_jit((numba"):src.index("def f(")].strip())
@_jit((numba.float64, numba.float64))
def _sg_loop1_jit(c0, k1):
    \"\"\"scan: 100 steps of the body below, compiled by Numba (symgrad).\"\"\"
    for _t in range(100):
        t1 = np.sin(c0)
        t2 = t1 * k1
        c0 = t2
    return (c0,)
<BLANKLINE>
<BLANKLINE>
def _sg_loop1(c0, k1):
    \"\"\"scan: _sg_loop1_jit, NumPy's scalar types in and out.\"\"\"
    _r = _sg_loop1_jit(np.float64(c0), np.float64(k1))
    return (np.float64(_r[0]),)
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ....base.errors import SymgradError
from ....ir.body import Body
from ....ir.op import RESULT
from ...lines import call
from ...loops import LoopSpec, carry_moves, is_loop
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from . import fusion
from . import source as nb
from .nests import Site, is_view
from .table import NUMBA, array_form, loop_form, scalar_form, why_not

if TYPE_CHECKING:
    from ...loops import LoopEmitter
    from ...printer import ModuleState, Printer
    from ...stages import Lowered

__all__ = ["StepPrinter", "compiled_loop", "lacking", "loop_ops", "missing"]

_CAST = frozenset({"float32", "int32"})  # Numba promotes these beside a float64 literal


def missing(body: Body, lowered: Lowered) -> list[str]:
    """The ops of ``body`` (a step as the module prints it) and of the loops nested in it
    (as ``lowered`` emits them) that have no form inside a compiled loop, one entry per
    node (:func:`.table.why_not`); a dtype Numba is not given here counts as its node's op
    too."""
    return [op for op, _ in lacking(body, lowered)]


def lacking(body: Body, lowered: Lowered,
            also: Callable[[Any], str | None] | None = None) -> list[tuple[str, str]]:
    """``(op, why)`` of each node of ``body`` and its nested loops' bodies without a form
    inside a compiled loop; then, in the same walk, each other node ``also`` refuses (a
    target reusing these forms, with refusals of its own)."""
    out: list[tuple[str, str]] = []
    extra: list[tuple[str, str]] = []
    stack, seen = [body], set()
    while stack:
        b = stack.pop()
        if id(b) in seen:
            continue
        seen.add(id(b))
        nodes = b.graph.nodes
        if any(nd.is_const and nd.shape != () for nd in nodes):
            out.append(("const", "a folded array constant: no place in a step"))
        for n in nodes:
            if is_loop(n):
                stack.append(lowered.optimized(n.attrs["body"]))
                continue
            if also is not None and (why := also(n)) is not None:
                extra.append((n.op, why))
            if n.op == RESULT or n.is_var and n.dtype in nb.NUMBA_TYPE:
                continue  # a name its call assigns; an input
            if bad := [d for d in _dtypes(n) if d not in nb.NUMBA_TYPE]:
                out.append((n.op, f"dtype {bad[0]}: not compiled"))
            elif not n.is_const and loop_form(n, nodes) is None:
                out.append((n.op, why_not(n, nodes) or "no form inside compiled code"))
    return out + extra


def _dtypes(n: Any) -> list[str]:
    """The dtypes of node ``n``'s results (a call's, or its one)."""
    return [d for _, d in n.dtype] if n.is_call else [n.dtype]


def loop_ops(body: Body, lowered: Lowered) -> list[str]:
    """The ops a compiled loop over step ``body`` computes (its step's and its nested
    loops', in order)."""
    out: list[str] = []
    stack = [body]
    while stack:
        b = stack.pop()
        for n in b.graph.nodes:
            if is_loop(n):
                stack.append(lowered.optimized(n.attrs["body"]))
            elif not (n.is_var or n.is_const or n.op == RESULT):
                out.append(n.op)
    return out


class StepPrinter(NumpyPrinter):
    """The body of a compiled function: a scan's step, or a kernel of straight-line code.
    Each chain of elementwise ops on arrays is one loop nest (:mod:`.fusion`, inline), a
    0-d value a scalar expression, every other op the lines of its array form
    (:func:`.table.array_form`); no ``del`` (Numba frees arrays itself); nested scans
    compiled too."""

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        super().__init__(lowered, state, loops)
        self._locals = 0  # fresh local names so far (loop indices, accumulators)

    def scalar_loops(self) -> bool:
        return False

    def step_printer(self, body: Body) -> type[Printer]:
        return StepPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        if missing(spec.body, self.lowered):  # the enclosing loop's check covers this one
            raise SymgradError(f"a loop nested in a compiled loop has no Numba form ({name})")
        return compiled_loop(name, spec, stmts, wrapper=False)

    def fresh(self, prefix: str) -> str:
        """A local name no plan name takes (``_sg3i``)."""
        self._locals += 1
        return f"_sg{self._locals}{prefix}"

    def statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                   comments: bool = True) -> list[str]:
        """The lines of ``body``: fused loops, scalar lines, array forms, loop calls."""
        nodes = self.graph.nodes
        regions = {r.root: r for r in fusion.plan(nodes, body, outputs, NUMBA, keep=_on_arrays)}
        hidden = {m for r in regions.values() for m in r.members if m != r.root}
        readers: dict[int, list[int]] = {}
        for i in body:
            for a in nodes[i].args:
                readers.setdefault(a, []).append(i)
        lines: list[str] = []
        run: list[int] = []  # consecutive scalar lines and loop calls (a scan's results)
        group: list[fusion.Region] = []  # consecutive regions sharing one loop nest

        def flush() -> None:
            if len(group) == 1:
                lines.extend(self._region(group[0], names))
            elif group:
                inside = {m for r in group for m in r.members}
                lines.extend(self._region(fusion.merge(nodes, group, lambda m: m in outputs or any(
                    u not in inside for u in readers.get(m, ()))), names))
            group.clear()

        for i in [*body, None]:
            form = None
            if i is not None and i not in regions:
                if i in hidden:
                    continue
                n = nodes[i]
                if (n.is_var or n.is_const or is_loop(n) or n.op == RESULT
                        or not _arrays(n, nodes)):
                    run.append(i)
                    continue
                form = array_form(n, nodes)
                if form is None:
                    raise SymgradError(f"op {n.op!r} has no form inside compiled code: "
                                       f"{why_not(n, nodes)}")
            if i is not None and form is None and not run and group and fusion.mergeable(
                    group, regions[i]):
                group.append(regions[i])  # the same nest as the regions before it
                continue
            flush()
            lines += super().statements(run, names, outputs, comments)
            run = []
            if i is None:
                break
            if form is not None:
                n = nodes[i]
                site = Site(n, nodes, [self.operand(a, n, names) for a in n.args],
                            names.get(i, "_"), self.fresh, self._outs(i, names))
                lines += ["    " + line for line in form(site)]
            else:
                group.append(regions[i])
        return [ln for ln in lines if not ln.lstrip().startswith("del ")]

    def _outs(self, i: int, names: dict[int, str]) -> list[str | None] | None:
        """The names call ``i``'s results get (None: nothing reads it); None for a node
        that is no call."""
        if not self.graph.nodes[i].is_call:
            return None
        return [None if t == "_" else t for t in self.targets(i, names).rstrip(",").split(", ")]

    def _region(self, r: fusion.Region, names: dict[int, str]) -> list[str]:
        nodes = self.graph.nodes
        ins = [self.operand(a, nodes[r.root], names) for a in r.inputs]
        return ["    " + line for line in nb.loop(
            nodes, r, ins, [names[m] for m in (r.root, *r.extras)])]

    def op_text(self, n: Any, names: dict[int, str]) -> str:
        """A 0-d value of 0-d operands: its scalar form."""
        nodes = self.graph.nodes
        src = scalar_form(n, nodes)
        if src is None:
            raise SymgradError(f"op {n.op!r} has no form inside compiled code: "
                               f"{why_not(n, nodes)}")
        text = src.render([self.operand(a, n, names) for a in n.args], n.attrs)
        if n.dtype not in _CAST:
            return text
        return f"{NUMPY_TYPE[n.dtype]}({text})"  # 2.0 beside a float32 is a float64 in Numba

    def literal(self, value: Any, others: list[str], strong: bool) -> str:
        text = super().literal(value, others, strong)
        if value.dtype.kind in "fi" and set(others) == {"float32"} and "np." not in text:
            return f"np.float32({text})"  # NumPy's weak literal: the float32 beside it
        return text


def _arrays(n: Any, nodes: Any) -> bool:
    """Whether node ``n`` or an operand of it is an array (else it is a scalar line)."""
    return n.shape != () or any(nodes[a].shape != () for a in n.args) or n.op not in NUMBA


def _on_arrays(nodes: Any, r: fusion.Region) -> bool:
    """Inside compiled code every elementwise op on arrays is a loop (Numba compiles a
    scalar loop faster than an array expression, and allocates once per chain)."""
    return r.shape != ()


def _param_type(shape: tuple, dtype: str, layout: str) -> str:
    t = nb.NUMBA_TYPE[dtype]
    return (f"_A({t}, {len(shape)}{', ' + repr(layout) if layout != 'A' else ''})" if shape
            else t)


def compiled_loop(name: str, spec: LoopSpec, stmts: list[str], wrapper: bool) -> list[str]:
    """The compiled loop function ``name`` of ``spec`` (with ``wrapper``, ``name_jit`` and
    the Python function ``name`` calling it), over its step's lines ``stmts``."""
    nc, nx = spec.nc, spec.nx
    avals = spec.body.avals()
    lay = "C" if wrapper else "A"  # the wrapper passes contiguous arrays (BLAS reads them)
    types = [_param_type(s, d, lay) for s, d in avals[:nc]]
    types += [_param_type((1, *s), d, lay) for s, d in avals[nc:nc + nx]]
    types += [_param_type(s, d, lay) for s, d in avals[nc + nx:]]
    signature = spec.signature
    jit = f"{name}_jit" if wrapper else name
    spec = _own_carries(spec)
    lines = [*call("@_jit((", types, ",))" if len(types) == 1 else "))", ""),
             *call(f"def {jit}(", signature, "):", ""),
             f'    """scan: {spec.length} steps of the body below, compiled by Numba '
             '(symgrad)."""',
             # an array carry comes back to the caller: a writable array of its own (the
             # read-only input type would make every carry read-only)
             *(f"    {c} = {c}.copy()" for c, (s, _) in zip(spec.carries, avals) if s),
             *_loop(spec, stmts)]
    if wrapper:
        lines += ["", "", *_wrapper(name, jit, spec, signature, types)]
    return lines


def _loop(s: LoopSpec, stmts: list[str]) -> list[str]:
    """The loop over the steps (as the NumPy target's, :func:`..numpy.loops.numpy_loop`),
    each stacked value stored element by element: Numba compiles an array assigned to a
    slice with a shape check whose error message alone takes seconds to compile."""
    def make(p: int) -> str:
        shape, dtype = s.aval(p)
        return f"np.empty({(s.length, *shape)!r}, dtype={NUMPY_TYPE[dtype]})"

    lines, ys, stored = s.buffers(make)
    shapes = {}
    for p in s.parts:
        kind, j = s.kind(p)
        if kind != "carry":
            shapes[(ys if kind == "y" else stored)[j]] = s.aval(p)[0]
    loop: list[str] = []
    for j, name in stored.items():
        loop += put(name, "_t", s.carries[j], shapes[name], "        ")
    loop += [f"        {x} = {xs}[_t]" for x, xs in zip(s.x_names, s.xs)]
    loop += ["    " + line if line else line for line in stmts]
    for j, name in ys.items():
        loop += put(name, "_t", s.results[s.nc + j], shapes[name], "        ")
    loop += carry_moves(s.carries, s.results[:s.nc], "        ")
    return [*lines, f"    for _t in {s.steps()}:", *(loop or ["        pass"]),
            s.returned(ys, stored)]


def put(buffer: str, at: str, value: str, shape: tuple, lead: str) -> list[str]:
    """``buffer[at] = value`` (``value`` of ``shape``), element by element."""
    if not shape:
        return [f"{lead}{buffer}[{at}] = {value}"]
    idx = [f"_sgp{d}" for d in range(len(shape))]
    out = [f"{lead}{'    ' * d}for {i} in range({n}):" for d, (i, n) in enumerate(zip(idx, shape))]
    key = ", ".join(idx)
    return out + [f"{lead}{'    ' * len(shape)}{buffer}[{at}, {key}] = {value}[{key}]"]


def _own_carries(spec: LoopSpec) -> LoopSpec:
    """``spec`` whose array carries are each step's own arrays: a new carry that is an
    input of the step (read only) or a view (of another layout, or read only) is copied,
    so the carry keeps one type across the steps."""
    nodes = spec.body.graph.nodes
    inputs = set(spec.body.inputs)
    results = list(spec.results)
    for k, o in enumerate(spec.body.outputs[:spec.nc]):
        n = nodes[o]
        if n.shape and (o in inputs and results[k] != spec.carries[k] or is_view(n, nodes)):
            results[k] = f"{results[k]}.copy()"
    if results == spec.results:
        return spec
    out = copy.copy(spec)
    out.results = results
    return out


def _wrapper(name: str, jit: str, s: LoopSpec, signature: list[str], types: list[str]
             ) -> list[str]:
    """``name``: calls ``jit`` with the scalars as the step's dtypes, returns NumPy
    scalars (Numba returns Python's)."""
    avals = s.body.avals()
    dtypes = [d for _, d in avals[:s.nc]] + [None] * s.nx + [d for _, d in avals[s.nc + s.nx:]]
    args = [f"np.ascontiguousarray({p})" if t.startswith("_A(") else f"{NUMPY_TYPE[d]}({p})"
            for p, t, d in zip(signature, types, dtypes)]
    out = []
    for k, p in enumerate(s.parts):
        shape, dtype = s.aval(p)
        out.append(f"_r[{k}]" if shape or s.kind(p)[0] != "carry"
                   else f"{NUMPY_TYPE[dtype]}(_r[{k}])")
    return [*call(f"def {name}(", signature, "):", ""),
            f'    """scan: {jit}, NumPy\'s scalar types in and out."""',
            *call(f"_r = {jit}(", args, ")"),
            *call("return (", out, ",)" if len(out) == 1 else ")")]
