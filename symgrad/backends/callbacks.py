"""Callbacks in emitted code: the traced functions a solver op hands SciPy (its ``fun``,
``jac``, ``hess`` attributes, :mod:`symgrad.ops.solvers`) become module-level functions
``_sg_fnN(x, *theta)``, and the op's template reads their names where its attributes held
the bodies.

A callback is printed once per module (per body and printer class) by a printer of the
kind its loops use, over the body's graph: every op's template works in it as in the
function around it. Its array constants are module constants, built once at import.

>>> import symgrad as sg
>>> import symgrad.scipy.optimize as sopt
>>> p = sg.var("p")
>>> x = sopt.brentq(lambda x: x ** 3 - p, 0.0, 10.0)
>>> src = sg.to_source(x)
>>> print(src[src.index("def _sg_fn"):src.index("def f(")].strip())
def _sg_fn1(c0, k1):
    \"\"\"A solver's callback (symgrad).\"\"\"
    t1 = c0 ** 3
    t2 = t1 - k1
    return t2
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..ir.body import Body
from ..ops.solvers import stacked_scalars
from .printer import RENDER, ModuleState
from .stages import Function, Lowered

__all__ = ["function_name", "render"]


def render(pr: Any, template: Any, texts: list[str], attrs: dict) -> str:
    """A node's text by ``template`` (its ``attrs``): each callback body the text names
    becomes the name of a module-level function (printed into the module on first use)."""
    keys = [k for k, v in (attrs or {}).items() if k != "body" and isinstance(v, Body)]
    if not keys:
        return template.render(texts, attrs)
    marks = {k: f"_SGCALLBACK{i}_" for i, k in enumerate(keys)}  # none a prefix of another
    text = template.render(texts, {**attrs, **marks})
    if not isinstance(text, str):
        return text
    for k, mark in marks.items():
        if mark in text:
            text = text.replace(mark, function_name(pr, attrs[k]))
    return text


def function_name(pr: Any, body: Body) -> str:
    """The module-level function computing ``body``'s one result from its inputs."""
    root = pr.loops.root
    key = ("callback", body, type(pr))
    found = root.functions.get(key)
    if found is None:
        name = _fresh(root.printer.state)
        lines = _render(pr, root, name, pr.lowered.optimized(body))
        found = root.functions[key] = (name, [])
        root.lines += ["", "", *lines]
    return found[0]


def _fresh(state: Any) -> str:
    taken = set(state.helper_names)
    for p in state.plans:
        taken.update(p.names.values(), p.aliases.values(), [p.name])
    k = 1
    while f"_sg_fn{k}" in taken:
        k += 1
    state.helper_names.add(f"_sg_fn{k}")
    return f"_sg_fn{k}"


def _render(pr: Any, root: Any, name: str, body: Body) -> list[str]:
    sub = _printer(pr, root, body)
    (plan,) = sub.state.plans
    names = plan.names
    nodes = body.graph.nodes
    if len(body.outputs) > 1:  # a loop's step (ops/while_loop.py): the tuple of its results
        return _render_tuple(sub, name, body)
    (out,) = body.outputs
    listed = _scalars_stacked(nodes, nodes[out])
    outputs = set() if listed else {out}
    order = [i for i in plan.order if not (nodes[i].is_var or (
        (nodes[i].is_const or i in sub.state.consts) and i not in outputs))
        and not (listed and i == out)]
    stmts = sub.statements(order, names, outputs | set(nodes[out].args if listed else ()),
                           comments=False)
    if listed:  # SciPy makes the array of the list itself (what a user's callback returns)
        result = "[" + ", ".join(sub.operand(a, nodes[out], names) for a in nodes[out].args) + "]"
    else:
        result = names.get(out) or sub.expr(out, names)
    params = [names[v] for v in body.inputs]
    return [f"def {name}({', '.join(params)}):", '    """A solver\'s callback (symgrad)."""',
            *stmts, f"    return {result}"]


def _render_tuple(sub: Any, name: str, body: Body) -> list[str]:
    (plan,) = sub.state.plans
    names = plan.names
    nodes = body.graph.nodes
    outputs = set(body.outputs)
    order = [i for i in plan.order if not (nodes[i].is_var or (
        (nodes[i].is_const or i in sub.state.consts) and i not in outputs))]
    stmts = sub.statements(order, names, outputs, comments=False)
    results = [names.get(o) or sub.expr(o, names) for o in body.outputs]
    params = [names[v] for v in body.inputs]
    return [f"def {name}({', '.join(params)}):", '    """A loop\'s step (symgrad)."""',
            *stmts, f"    return ({', '.join(results)})"]


def _scalars_stacked(nodes: Any, n: Any) -> bool:
    """Whether ``n`` stacks float64 scalars into a vector (returned as a list: ``np.stack``
    of scalars costs ten times the array SciPy builds from the list, the same values)."""
    return (stacked_scalars(nodes, n) and n.dtype == "float64"
            and all(nodes[a].dtype == "float64" for a in n.args))


def _printer(pr: Any, root: Any, body: Body) -> Any:
    """A printer of ``pr``'s step kind for ``body`` (as emitted) as one function; the
    body's array constants named as module constants of ``root``'s module."""
    graph, nodes = body.graph, body.graph.nodes
    ins = tuple(nodes[v].name for v in body.inputs)
    fn = Function("callback", tuple(body.outputs), ins, True)
    lowered = Lowered(replace(pr.lowered.request, graph=graph, functions=(fn,)), graph, (fn,),
                      {}, bodies=pr.lowered.bodies, body=body)
    state = ModuleState(graph, [], {}, [])
    sub = pr.step_printer(body)(lowered, state, root)
    module = root.printer.state
    for nd in nodes:
        if nd.is_const and nd.shape != ():
            cname = f"_sg_k{len(module.constants) + 1}"
            module.constants.append((cname, nd.attrs["value"]))
            module.helper_names.add(cname)
            state.consts[nd.id] = cname
    state.plans.append(sub.plan_of(fn, frozenset(state.consts)))
    state.inlined = {nd.id for nd in nodes if nd.is_const and nd.shape == ()}
    return sub


RENDER[0] = render
