"""How the NumPy target writes a loop (:meth:`.printer.NumpyPrinter.render_loop`).

A ``for`` loop over the steps with the step's statements inline; per-step results and the
carries reverse mode reads are written into preallocated arrays. With ``scalars="math"``
an all-scalar step also runs over Python floats first (:func:`math_loop`; NumPy's version
where ``math`` raises), the per-step results one loop stacks only for other loops to scan
are passed as Python lists (see :meth:`~symgrad.backends.printer.Printer.lists_between_loops`)
and a value one line uses once is written into that line (:func:`fused`).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=3)
>>> src = sg.to_source(c)
>>> print(src[src.index("def _sg_loop1_math"):src.index("def _sg_loop1(")].strip())
def _sg_loop1_math(c0, k1):
    \"\"\"_sg_loop1 over Python floats with math.\"\"\"
    import math
<BLANKLINE>
    _m_sin = math.sin
    for _t in range(3):
        c0 = _m_sin(c0) * k1
    return (np.float64(c0),)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ....ir.op import RESULT
from ...lines import call
from ...loops import LoopSpec, carry_moves, indent, set_item
from .table import NUMPY_TYPE

if TYPE_CHECKING:
    from ...printer import Printer
    from .printer import ScalarMathPrinter

__all__ = ["INLINE", "from_lists", "math_function", "numpy_loop", "scalar_step"]

INLINE = 60  # the longest value text written into the one line that uses it


def numpy_loop(s: LoopSpec, stmts: list[str], lists: tuple = ()) -> list[str]:
    """The NumPy loop: stacked results written into preallocated arrays, those in
    ``lists`` that hold arrays (not 0-d values) appended to Python lists instead (a
    reference per step rather than a copy: another loop only reads them step by step)."""
    listed = {p for p in lists if s.aval(p)[0]}

    def make(p: int) -> str:
        shape, dtype = s.aval(p)
        return "[]" if p in listed else (f"np.empty({(s.length, *shape)!r}, "
                                         f"dtype={NUMPY_TYPE[dtype]})")

    lines, ys, stored = s.buffers(make)
    names = {p: (ys if s.kind(p)[0] == "y" else stored)[s.kind(p)[1]] for p in listed}
    lines += s.for_loop(stmts, ys, stored, lambda n, v: (
        f"{n}.append({v})" if n in names.values() else set_item(n, v)), "_t")
    if s.reverse:
        lines += [f"    {names[p]}.reverse()" for p in sorted(listed)]
    return lines + [s.returned(ys, stored)]


def math_function(name: str, s: LoopSpec, stmts: list[str], lists: tuple = ()
                  ) -> tuple[list[str], list[str]]:
    """``name_math``, the loop over Python floats (``stmts``: the step over floats, the
    results in ``s.results``), and the lines of ``name`` calling it first (its NumPy
    version runs where ``math`` raises)."""
    nc, nx = s.nc, s.nx
    signature = s.signature
    before = [*call(f"def {name}_math(", signature, "):", ""),
              f'    """{name} over Python floats with math."""', "    import math",
              "", *math_loop(s, stmts, lists), "", ""]
    args = ([f"float({c})" for c in signature[:nc]]
            + [f"({x} if type({x}) is list else {x}.tolist())" for x in s.xs]
            + [f"float({k})" for k in signature[nc + nx:]])
    first = ["    try:", *call(f"return {name}_math(", args, ")", "        "),
             "    except (ArithmeticError, ValueError):",
             "        pass  # the NumPy version below gives inf/nan"]
    return before, first


def math_loop(s: LoopSpec, stmts: list[str], lists: tuple = ()) -> list[str]:
    """The loop over Python floats: the scanned operands iterated (no index), stacked
    results appended to lists, returned as NumPy arrays (those in ``lists`` as the lists
    themselves)."""
    lines, ys, stored = s.buffers(lambda p: "[]")
    loop = [f"        {name}_append({s.carries[j]})" for j, name in stored.items()]
    body, results = _carry_in_place(s, _local_math(indent(stmts), lines))
    loop += body
    loop += [f"        {name}_append({s.results[s.nc + j]})" for j, name in ys.items()]
    loop += carry_moves(s.carries, results, "        ")
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


def scalar_step(fast: ScalarMathPrinter, s: LoopSpec) -> tuple[list[str], list[str]] | None:
    """The step's statements and results over Python floats with ``math``, printed by
    ``fast`` (over the step's plan and state): None unless every value of the step is a
    float scalar."""
    (plan,) = fast.state.plans
    if not fast.accepts(plan):
        return None
    names = dict(plan.names)
    stmts = fused(fast, s.order, names, set(s.body.outputs))
    return stmts, [names.get(o) or fast.expr(o, names) for o in plan.outputs]


def fused(pr: Printer, order: list[int], names: dict[int, str], outputs: set[int]
          ) -> list[str]:
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
        if nodes[i].op == RESULT:  # a name its call's statement assigns
            continue
        expr = pr.expr(i, names)
        if nodes[i].is_call:  # never written into a line: its statement names its results
            lines.append(f"    {pr.targets(i, names)} = {expr}")
            continue
        j = user.get(i)
        if (j is not None and i not in outputs and i not in pr.state.inlined
                and len(expr) <= INLINE and _mentions_once(pr, nodes[j], i)):
            names[i] = expr if _called(expr) else f"({expr})"
        else:
            lines.append(f"    {names[i]} = {expr}")
    return lines


def from_lists(s: LoopSpec) -> list[str]:
    """The NumPy version's first lines: a scanned operand passed as a list of floats made
    the array it stands for."""
    lines = []
    for x, v in zip(s.xs, s.body.inputs[s.nc:s.nc + s.nx]):
        shape, dtype = s.body.avals([v])[0]
        if shape == ():
            lines.append(f"    {x} = np.array({x}, dtype={NUMPY_TYPE[dtype]}) "
                         f"if type({x}) is list else {x}")
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


def _mentions_once(pr: Printer, n: Any, a: int) -> bool:
    """Whether node ``n``'s template writes its operand ``a`` once (else writing ``a``'s
    text into it would compute ``a`` more than once)."""
    if a in pr.state.inlined or any(k in pr.state.inlined for k in n.args):
        return False
    marks = [f"\x01{k}\x02" for k in range(len(n.args))]
    text = pr.table[n.op].render(marks, n.attrs)
    return isinstance(text, str) and sum(text.count(marks[k])
                                         for k, b in enumerate(n.args) if b == a) == 1


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
