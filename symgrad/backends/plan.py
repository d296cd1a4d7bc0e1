"""What one emitted function computes and what each value is called: its :class:`Plan`.

:func:`plan` lists the nodes a function computes (its outputs' ancestors, in id order) and
names each one: the user's variables as they are (made safe), requested output names,
derivatives by what they are (``dx``, ``hess_x``, ``jac_x``, ``hvp_x``, ``x_dot``), an
adjoint of a named value ``d_<name>``, and ``t1, t2, ...`` for the rest; no name is one a
template binds or calls itself.

>>> import symgrad as sg
>>> from symgrad.backends.stages import lower, request
>>> from symgrad.backends.targets.numpy.table import NUMPY
>>> x = sg.var("x")
>>> low = lower(request([sg.sin(x), sg.grad(sg.sin(x), x)]))
>>> p = plan(low.graph, low.functions[0], NUMPY)
>>> sorted(p.names.values())
['dx', 'value', 'x']
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ir.graph import Graph
from ..ir.op import RESULT
from ..ir.text import adjoint_pairs, tangent_pairs
from .docstring import Derivative, derivatives
from .naming import Namer, sanitize
from .template import Template, helpers_of, imports_of

if TYPE_CHECKING:
    from .stages import Function

__all__ = ["Plan", "plan"]


@dataclass
class Plan:
    """Everything needed to render one function: what to compute and what to call it."""

    name: str
    params: list[int]
    outputs: list[int]
    single: bool
    order: list[int]  # ancestors of the outputs, in id order (a call's results after it)
    names: dict[int, str]
    aliases: dict[int, str] = field(default_factory=dict)  # output variable -> adjoint name
    alias_of: dict[int, int] = field(default_factory=dict)  # output variable -> its forward
    adjoint_for: dict[int, int] = field(default_factory=dict)  # adjoint node -> forward node
    tangent_for: dict[int, int] = field(default_factory=dict)  # tangent node -> its node
    derivatives: dict[int, Derivative] = field(default_factory=dict)  # what each one is
    notes: tuple[str | None, ...] = ()  # what each output is, where the caller says
    shared: set[tuple] = field(default_factory=set)  # role names several expressions share


def plan(graph: Graph, fn: Function, table: dict[str, Template | None],
         reserved: Sequence[str] = (), known: dict[int, Derivative] | None = None,
         hoisted: frozenset[int] = frozenset()) -> Plan:
    """The plan of function ``fn`` over ``graph``: the nodes it computes and every name, none
    of them one of ``reserved`` or a name ``table``'s templates bind themselves; ``known``
    says which outputs are derivatives where ``graph``'s records do not; ``hoisted`` nodes
    are computed at module level (no name here unless an output)."""
    nodes = graph.nodes
    outs = list(fn.outputs)
    order = graph.grouped(graph.ancestors(outs))  # a call's results after it: one statement
    params = [graph.variables[name] for name in fn.inputs]
    emitted = set(order)
    pairs = [(f, a) for f, a in adjoint_pairs(graph) if a in emitted]
    named = order  # only lines of this function have names (comments cite no other)
    out = Plan(fn.name, params, outs, fn.single, order, {}, notes=fn.notes)
    out.derivatives = {i: d for i, d in derivatives(graph).items() if i in emitted}
    out.derivatives.update({i: d for i, d in (known or {}).items() if i in emitted})
    for f, a in pairs:  # the earliest transform names an adjoint first; variables win
        prev = out.adjoint_for.get(a)
        if prev is None or (nodes[f].is_var and not nodes[prev].is_var):
            out.adjoint_for[a] = f
    for f, t in tangent_pairs(graph):  # forward mode: the earliest transform names first
        if t in emitted and t != f and nodes[t].role == "tangent":
            out.tangent_for.setdefault(t, f)
    taken = [*_template_bound_names(graph, order, table), *reserved, "_"]  # "_": unused results
    _assign_names(graph, out, [i for i in named if i not in hoisted or i in outs],
                  list(fn.output_names or ()), taken)
    return out


_BINDERS = re.compile(r"\blambda\b|:=|\bfor\b")


def _template_bound_names(graph: Graph, order: list[int], table: dict) -> list[str]:
    """Names the op templates bind themselves (``lambda z: ...``, comprehension variables),
    call (helpers) or import (``scipy``).

    No variable or temporary may take one: inside the template it would be captured.
    """
    ops = {graph.nodes[i].op for i in order}
    bound = {fn.__name__ for fn in helpers_of(table, ops)}
    bound.update(m.split(".")[0] for m in imports_of(table, ops))  # ``scipy`` of scipy.special
    seen: set[tuple] = set()
    for i in order:
        n = graph.nodes[i]
        if n.is_var or n.is_const or n.op == RESULT:  # a projection: a name, no template
            continue
        src = table[n.op]
        key = (n.op, len(n.args))
        if isinstance(src.text, str) and key in seen:
            continue
        seen.add(key)
        text = src.render([f"_SGPROBE{k}_" for k in range(len(n.args))], n.attrs)
        if not _BINDERS.search(text):
            continue
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
    primal = [i for i in dict.fromkeys(plan.outputs) if i not in names and not nodes[i].is_var
              and i not in plan.derivatives
              and any(d.of == i for d in plan.derivatives.values())]
    for i in primal:  # the values whose derivatives the function also returns
        names[i] = namer.fresh("value")
    plan.shared = _shared_roles(plan)
    adjoint_for = plan.adjoint_for
    k = 1
    first = [i for i in plan.outputs if adjoint_for.get(i) in names]  # outputs named dx first
    for i in first + named:
        n = nodes[i]
        if n.is_var or (n.is_const and i not in outputs) or n.is_call or i in names:
            continue  # a call's statement assigns its results' names
        f = adjoint_for.get(i) if n.role != "forward" else None  # a forward value the
        tf = plan.tangent_for.get(i)  # backprop reuses (exp' = exp) is named as one: t
        role = _role_name(plan, i)
        if role is not None:
            names[i] = namer.fresh(role)
        elif f is not None and f in names:
            names[i] = namer.fresh(("d" if nodes[f].is_var else "d_") + names[f])
        elif tf is not None and tf in names:
            names[i] = namer.fresh(names[tf] + "_dot")
        else:
            names[i], k = namer.counter("t", k)
    for i in sorted(outputs):
        f = adjoint_for.get(i)
        if nodes[i].is_var and f is not None and f in names and i not in plan.aliases:
            role = _role_name(plan, i)
            plan.aliases[i] = namer.fresh(role or ("d" if nodes[f].is_var else "d_") + names[f])
            plan.alias_of[i] = f


def _role_key(d: Derivative) -> tuple:
    """What a derivative's role name says of it (all but the expression differentiated)."""
    if d.kind in ("gradient", "hessian") and len(d.chain) > 2:
        return ("order", d.chain)
    return (d.kind, d.var, d.first)


def _shared_roles(plan: Plan) -> set[tuple]:
    """The role keys that derivatives of different expressions share in this function
    (``dx`` of ``value`` and ``dx`` of ``value_1``): their names say which expression."""
    roots: dict[tuple, set[int | None]] = {}
    for d in plan.derivatives.values():
        roots.setdefault(_role_key(d), set()).add(d.root if d.chain else d.of)
    return {key for key, of in roots.items() if len(of) > 1}


def _role_name(plan: Plan, i: int) -> str | None:
    """The name of derivative node ``i`` that says what it is: ``dx`` for a gradient (only),
    ``jac_x``, ``vjp_x``, ``hess_a_b`` for a Hessian block (the gradient of ``a``
    differentiated by ``b``), ``d3_x`` / ``d3_a_a_b`` for a gradient of a Hessian (and so
    on: ``d<order>_`` and the variables in the order differentiated, one where all are the
    same), ``hvp_x`` for a Hessian-vector product, ``<name>_dot`` for the tangent of a value
    this function computes, ``jvp`` for another's; else None. Where the function holds the
    same derivative of several expressions, the name says which: ``dvalue_dx``,
    ``dvalue_1_dx``, ``jac_loss_x``, ``hess_value_1_x``."""
    d = plan.derivatives.get(i)
    names = plan.names
    if d is None:
        return None
    of = d.root if d.chain else d.of
    which = names.get(of) if _role_key(d) in plan.shared else None
    if d.kind in ("gradient", "hessian") and len(d.chain) > 2:
        if any(v not in names for v in d.chain):
            return None
        chain = [names[v] for v in d.chain]
        chain = chain[:1] if len(set(chain)) == 1 else chain
        return "_".join((f"d{len(d.chain)}", *([which] if which else []), *chain))
    if d.kind == "gradient":
        if d.var not in names:
            return None
        return f"d{which}_d{names[d.var]}" if which else f"d{names[d.var]}"
    prefix = [which] if which else []
    if d.kind in ("jacobian", "vjp") and d.var in names:
        return "_".join(("jac" if d.kind == "jacobian" else "vjp", *prefix, names[d.var]))
    if d.kind == "hessian" and d.first in names and d.var in names:
        pair = (names[d.first],) if d.first == d.var else (names[d.first], names[d.var])
        return "_".join(("hess", *prefix, *pair))
    if d.kind == "hvp" and d.first in names:
        return "_".join(("hvp", *prefix, names[d.first]))
    if d.kind == "tangent":  # of a value this function computes, or else "jvp"
        return f"{names[d.of]}_dot" if d.of in names else "jvp"
    return None
