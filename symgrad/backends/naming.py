"""Names in emitted code: which user names may be emitted as they are, and unique fresh
names for everything else (``dx``, then ``dx_1``, ...).

>>> n = Namer(["x"])
>>> n.fresh("x"), n.fresh("dx"), n.fresh("dx"), n.counter("t", 1)
('x_1', 'dx', 'dx_1', ('t1', 2))
"""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import SymgradError
from ..ir.graph import Graph
from ..ir.text import adjoint_pairs, tangent_pairs
from .template import Template, helpers_of

if TYPE_CHECKING:
    from .request import Function

__all__ = ["Namer", "Plan", "check_function_name", "is_safe_name", "plan", "sanitize"]

_BUILTINS = frozenset(dir(builtins))
_SOFT_KEYWORDS = frozenset(getattr(keyword, "softkwlist", ())) | {"_", "case", "match", "type"}
_RESERVED = frozenset({"np", "numpy", "math", "_numpy_math"})


def is_safe_name(name: Any) -> bool:
    """Whether ``name`` can be emitted as-is: an identifier that shadows nothing we use.

    >>> [is_safe_name(n) for n in ("W", "x_1", "sum", "lambda", "np", "__x", "a-b")]
    [True, True, False, False, False, False, False]
    """
    return (
        isinstance(name, str)
        and name.isidentifier()
        and unicodedata.normalize("NFKC", name) == name
        and not keyword.iskeyword(name)
        and name not in _SOFT_KEYWORDS
        and name not in _BUILTINS
        and name not in _RESERVED
        and not name.startswith("__")
    )


def sanitize(name: Any) -> str:
    """A safe base for a user name: the name itself, or its word characters (``x_1`` style)."""
    if is_safe_name(name):
        return name
    text = name if isinstance(name, str) else "v"
    text = re.sub(r"[^0-9A-Za-z_]", "_", text)[:64].strip("_")
    if not text or text[0].isdigit():
        text = "v_" + text if text else "v"
    return text


class Namer:
    """Hands out unique safe names: ``fresh("dx")`` gives ``dx``, then ``dx_1``, ..."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        self.taken: set[str] = set(taken)

    def fresh(self, base: str) -> str:
        cand, k = base, 0
        while cand in self.taken or not is_safe_name(cand):
            k += 1
            cand = f"{base}_{k}"
        self.taken.add(cand)
        return cand

    def counter(self, prefix: str, start: int) -> tuple[str, int]:
        k = start
        while f"{prefix}{k}" in self.taken:
            k += 1
        self.taken.add(f"{prefix}{k}")
        return f"{prefix}{k}", k + 1


def check_function_name(name: Any) -> None:
    """Raise unless ``name`` can name a generated function (safe, not private)."""
    if not is_safe_name(name) or (isinstance(name, str) and name.startswith("_")):
        raise SymgradError(
            f"function name {name!r} cannot be used: give a Python identifier that is not a "
            "keyword, a builtin, 'np'/'numpy', or private (leading underscore)"
        )


# -- one function's names ---------------------------------------------------------------


@dataclass
class Plan:
    """Everything needed to render one function: what to compute and what to call it."""

    name: str
    params: list[int]
    outputs: list[int]
    single: bool
    order: list[int]  # ancestors of the outputs, in id order
    names: dict[int, str]
    aliases: dict[int, str] = field(default_factory=dict)  # output variable -> adjoint name
    alias_of: dict[int, int] = field(default_factory=dict)  # output variable -> its forward
    adjoint_for: dict[int, int] = field(default_factory=dict)  # adjoint node -> forward node
    tangent_for: dict[int, int] = field(default_factory=dict)  # tangent node -> its node


def plan(graph: Graph, fn: Function, table: dict[str, Template | None],
         reserved: Sequence[str] = ()) -> Plan:
    """The plan of function ``fn`` over ``graph``: the nodes it computes and every name, none
    of them one of ``reserved`` or a name ``table``'s templates bind themselves."""
    nodes = graph.nodes
    outs = list(fn.outputs)
    order = graph.ancestors(outs)
    params = [graph.variables[name] for name in fn.inputs]
    # Forward nodes named in the comments of adjoint lines get names too (maybe no line).
    emitted = set(order)
    pairs = [(f, a) for f, a in adjoint_pairs(graph) if a in emitted]
    extra = [nodes[i].origin for i in order if nodes[i].origin is not None]
    named = graph.ancestors([*outs, *extra, *(f for f, _ in pairs)])
    out = Plan(fn.name, params, outs, fn.single, order, {})
    for f, a in pairs:  # the earliest transform names an adjoint first; variables win
        prev = out.adjoint_for.get(a)
        if prev is None or (nodes[f].is_var and not nodes[prev].is_var):
            out.adjoint_for[a] = f
    for f, t in tangent_pairs(graph):  # forward mode: the earliest transform names first
        if t in emitted and t != f and nodes[t].role == "tangent":
            out.tangent_for.setdefault(t, f)
    taken = [*_template_bound_names(graph, order, table), *reserved]
    _assign_names(graph, out, named, list(fn.output_names or ()), taken)
    return out


_BINDERS = re.compile(r"\blambda\b|:=|\bfor\b")


def _template_bound_names(graph: Graph, order: list[int], table: dict) -> list[str]:
    """Names the op templates bind themselves (``lambda z: ...``, comprehension variables).

    No variable or temporary may take one: inside the template it would be captured.
    """
    bound = {fn.__name__ for fn in helpers_of(table, (graph.nodes[i].op for i in order))}
    seen: set[tuple] = set()
    for i in order:
        n = graph.nodes[i]
        if n.is_var or n.is_const:
            continue
        src = table[n.op]
        key = (n.op, len(n.args))
        if isinstance(src.text, str) and key in seen:
            continue
        seen.add(key)
        text = src.render([f"_SGPROBE{k}_" for k in range(len(n.args))], n.attrs)
        if not _BINDERS.search(text):
            continue
        import ast

        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
    return sorted(bound)


def _assign_names(graph: Graph, plan: Plan, named: list[int], labels: list[str],
                  taken: list[str]) -> None:
    """Fill ``plan.names`` (every named node) and ``plan.aliases`` (outputs that are inputs)."""
    nodes, params, outputs = graph.nodes, plan.params, set(plan.outputs)
    namer = Namer(taken)
    names = plan.names
    for i in params + [i for i in named if nodes[i].is_var]:
        if i not in names:
            names[i] = namer.fresh(sanitize(nodes[i].name))
    for i, label in zip(plan.outputs, labels):  # requested output names come next
        if nodes[i].is_var and i not in plan.aliases:
            plan.aliases[i] = namer.fresh(sanitize(label))
        elif not nodes[i].is_var and i not in names:
            names[i] = namer.fresh(sanitize(label))
    adjoint_for = plan.adjoint_for
    k = 1
    first = [i for i in plan.outputs if adjoint_for.get(i) in names]  # outputs named dx first
    for i in first + named:
        n = nodes[i]
        if n.is_var or (n.is_const and i not in outputs) or i in names:
            continue
        f = adjoint_for.get(i)
        tf = plan.tangent_for.get(i)
        if f is not None and f in names:
            names[i] = namer.fresh(("d" if nodes[f].is_var else "d_") + names[f])
        elif tf is not None and tf in names:
            names[i] = namer.fresh(names[tf] + "_dot")
        else:
            names[i], k = namer.counter("t", k)
    for i in sorted(outputs):
        f = adjoint_for.get(i)
        if nodes[i].is_var and f is not None and f in names and i not in plan.aliases:
            plan.aliases[i] = namer.fresh(("d" if nodes[f].is_var else "d_") + names[f])
            plan.alias_of[i] = f
