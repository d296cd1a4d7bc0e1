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

import re
from typing import TYPE_CHECKING, Any

from ....base.errors import SymgradError
from ....ir.body import Body
from ....ir.op import RESULT
from ...lines import call
from ...loops import LoopSpec, is_loop
from ..numpy.loops import numpy_loop
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from . import fusion
from . import source as nb
from .table import NUMBA, loop_form

if TYPE_CHECKING:
    from ...loops import LoopEmitter
    from ...printer import ModuleState, Printer
    from ...stages import Lowered

__all__ = ["StepPrinter", "compiled_loop", "loop_ops", "missing"]

_CAST = frozenset({"float32", "int32"})  # Numba promotes these beside a float64 literal
_NUMBER = re.compile(r"(?<![\w.])\d")  # a number in a form's own text (sigmoid's 1.0)


def missing(body: Body, lowered: Lowered) -> list[str]:
    """The ops of ``body`` (a step as the module prints it) and of the loops nested in it
    (as ``lowered`` emits them) that have no form inside a compiled loop, one entry per
    node; a dtype Numba is not given here counts as its node's op too."""
    out: list[str] = []
    stack, seen = [body], set()
    while stack:
        b = stack.pop()
        if id(b) in seen:
            continue
        seen.add(id(b))
        nodes = b.graph.nodes
        if any(nd.is_const and nd.shape != () for nd in nodes):
            out.append("const")  # a folded array constant: no place in a step
        for n in nodes:
            if is_loop(n):
                stack.append(lowered.optimized(n.attrs["body"]))
            elif n.op == RESULT:  # a name its call assigns
                continue
            elif n.is_call and loop_form(n, nodes) is None:
                out.append(n.op)
            elif not n.is_call and n.dtype not in nb.NUMBA_TYPE:
                out.append(n.op)
            elif not (n.is_var or n.is_const) and loop_form(n, nodes) is None:
                out.append(n.op)
    return out


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
    """The step of a compiled loop: each op in its :func:`.table.loop_form`, no ``del``
    (Numba frees arrays itself), nested scans compiled too."""

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        super().__init__(lowered, state, loops)
        self._regions = 0  # inline loops so far (their names: _l1i0, _l1v0, ...)

    def scalar_loops(self) -> bool:
        return False

    def step_printer(self, body: Body) -> type[Printer]:
        return StepPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        if missing(spec.body, self.lowered):  # the enclosing loop's check covers this one
            raise SymgradError(f"a loop nested in a compiled loop has no Numba form ({name})")
        return compiled_loop(name, spec, stmts, wrapper=False)

    def statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                   comments: bool = True) -> list[str]:
        """The step's lines; each chain of elementwise ops on arrays (a fused region,
        :mod:`.fusion`) one loop nest over its elements, inline: Numba compiles a scalar
        loop much faster than one array expression per op, and allocates once."""
        nodes = self.graph.nodes
        regions = {r.root: r for r in fusion.plan(nodes, body, outputs, NUMBA, keep=_worth)}
        hidden = {m for r in regions.values() for m in r.members if m != r.root}
        lines: list[str] = []
        run: list[int] = []  # consecutive lines without a region (a scan's results together)
        for i in [*body, None]:
            if i is not None and i not in regions:
                if i not in hidden:
                    run.append(i)
                continue
            lines += super().statements(run, names, outputs, comments)
            run = []
            if i is not None:
                lines += self._region(regions[i], names)
        return [ln for ln in lines if not ln.lstrip().startswith("del ")]

    def _region(self, r: fusion.Region, names: dict[int, str]) -> list[str]:
        nodes = self.graph.nodes
        self._regions += 1
        ins = [self.operand(a, nodes[r.root], names) for a in r.inputs]
        return nb.loop(nodes, r, ins, [names[m] for m in (r.root, *r.extras)],
                       tag=f"_l{self._regions}")

    def op_text(self, n: Any, names: dict[int, str]) -> str:
        nodes = self.graph.nodes
        src = loop_form(n, nodes)
        if src is None:
            raise SymgradError(f"op {n.op!r} has no form inside a compiled loop")
        text = src.render([self.operand(a, n, names) for a in n.args], n.attrs)
        if n.dtype not in _CAST:
            return text
        if n.shape == ():  # 2.0 beside a float32 is a float64 in Numba
            return f"{NUMPY_TYPE[n.dtype]}({text})"
        probe = src.render([f"_a{k}_" for k in range(len(n.args))], n.attrs)
        if _NUMBER.search(probe) or any(nodes[a].dtype != n.dtype for a in n.args):
            return f"({text}).astype({NUMPY_TYPE[n.dtype]})"  # a literal of the form's own
        return text

    def literal(self, value: Any, others: list[str], strong: bool) -> str:
        text = super().literal(value, others, strong)
        if value.dtype.kind in "fi" and set(others) == {"float32"} and "np." not in text:
            return f"np.float32({text})"  # NumPy's weak literal: the float32 beside it
        return text


def _worth(nodes: Any, r: fusion.Region) -> bool:
    """Inside a compiled loop every chain of two or more ops on arrays is worth a loop."""
    return len(r.members) >= 2 and r.shape != ()


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
    lines = [*call("@_jit((", types, ",))" if len(types) == 1 else "))", ""),
             *call(f"def {jit}(", signature, "):", ""),
             f'    """scan: {spec.length} steps of the body below, compiled by Numba '
             '(symgrad)."""',
             # an array carry comes back to the caller: a writable array of its own (the
             # read-only input type would make every carry read-only)
             *(f"    {c} = {c}.copy()" for c, (s, _) in zip(spec.carries, avals) if s),
             *numpy_loop(spec, stmts)]
    if wrapper:
        lines += ["", "", *_wrapper(name, jit, spec, signature, types)]
    return lines


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
