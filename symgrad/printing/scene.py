"""What a picture of a graph shows, and where: the model every drawing renders.

A :class:`Scene` (:mod:`.model`) holds boxes and edges with their places (:mod:`.layout`);
this module builds it from a graph. The matplotlib drawing (:mod:`.draw`), the Graphviz
text (:mod:`.dot`) and the HTML page (:mod:`.html`) all render the same scene, so they
agree on what a student sees:

* the forward graph on the left and the derivative subgraph B on the right, mirrored as in
  Goodfellow et al., Fig. 6.10: the adjoint ``P_i`` of forward node ``u_i`` sits in the same
  row as ``u_i``; forward values flow down, adjoints flow up;
* Collins' numbering, the same as ``sg.explain``: inputs ``u1 ... ul`` first, then the other
  forward nodes; ``P_i`` is the adjoint of ``u_i``; the other nodes of B are ``B1, B2, ...``;
* each box shows its definition in those labels (``u3 = u1 + u2``); constants are written
  into their user's definition instead of being drawn;
* a dotted link labelled ``∂f/∂u_i`` joins each forward node to its adjoint; when the adjoint
  *is* a forward node (hash-consing shares it: in ``sin(x) * y`` the adjoint of ``y`` is
  ``sin(x)``), B shows a "shared" box ``P_i = u_j`` that points at that node;
* forward mode's tangents sit on B's side too, each tangent ``T_i`` of ``u_i`` in ``u_i``'s
  row, joined to it by a dotted link labelled ``u̇_i`` (its directional derivative);
* big graphs are summarised: chains of single-input single-user nodes collapse into one box
  (and their part of B into another); a picture of more than :data:`SCENE_LIMIT` boxes is
  refused with a hint.

Lengths are in inches (the matplotlib figure's units; SVG multiplies them by 72).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..base.describe import describe
from ..base.errors import ArgumentError, LimitError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY, RESULT
from ..ir.text import infix, select, tangent_pairs, type_text
from ..ir.values import exact, exact_str
from .explain import definition, numbering
from .layout import place_boxes
from .model import Box, Edge, Scene

COLLAPSE_AT = 60  # boxes above which collapse="auto" collapses chains
CHAIN_MIN = 3  # the shortest chain that becomes one box
SCENE_LIMIT = 400  # the most boxes a picture shows
TEXT_LIMIT = 30  # characters of a definition shown in a box


# -- building the scene ---------------------------------------------------------------------


def build_scene(exprs: Graph | Expr | Sequence[Expr], title: str | None = None,
                collapse: bool | str = "auto") -> Scene:
    """The laid-out picture of ``exprs`` (a Graph, an Expr or a list of Exprs).

    ``collapse``: True, False or ``"auto"`` (collapse chains when there are more than
    :data:`COLLAPSE_AT` boxes). Raises :class:`~symgrad.errors.LimitError` above
    :data:`SCENE_LIMIT` boxes.

    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> u4 = u2 * (u1 + u2)
    >>> s = build_scene([u4, *sg.grad(u4, [u1, u2])])
    >>> sorted(b.label for b in s.boxes.values())
    ['P1', 'P2', 'P3', 'P4', 'u1', 'u2', 'u3', 'u4']
    >>> s.crossings()
    0
    """
    collapse = exact(collapse)
    if type(collapse) not in (bool, str) or collapse not in (True, False, "auto"):
        raise ArgumentError(f"collapse must be True, False or 'auto', got {describe(collapse)}")
    if title is not None:
        title = exact_str(title, "title")  # a str subclass's methods never run
    graph, ids, outputs = select(exprs)
    ids = _with_seeds(graph, ids)
    boxes, edges = _boxes(graph, ids, outputs)
    hidden = 0
    if collapse is True or (collapse == "auto" and len(boxes) > COLLAPSE_AT):
        boxes, edges, hidden = _collapse(boxes, edges)
    if len(boxes) > SCENE_LIMIT:
        raise LimitError(
            f"this graph has {len(ids):,} nodes, {len(boxes):,} boxes after collapsing chains; "
            f"a picture shows at most {SCENE_LIMIT}. Draw a part of it (a subexpression, or "
            "the gradient of one variable), or read it as text: sg.listing(exprs)"
        )
    head, sub = _titles(graph, outputs, boxes, title)
    scene = Scene(graph, boxes, edges, head, sub, hidden)
    place_boxes(scene)
    return scene


def _with_seeds(graph: Graph, ids: list[int]) -> list[int]:
    """``ids`` and the constant adjoints (seeds, zeros) of the forward nodes among them:
    ``P_n = 1`` is part of B even when no output uses it."""
    chosen = set(ids)
    nodes = graph.nodes
    extra = {a for _, table in _adjoint_tables(graph) for f, a in table.items()
             if f in chosen and a not in chosen and nodes[a].is_const
             and nodes[a].role == "adjoint"}
    return sorted(chosen | extra) if extra else ids


def _titles(graph: Graph, outputs: list[int], boxes: dict[str, Box], title: str | None
            ) -> tuple[str, str]:
    has_b = any(b.side == "B" for b in boxes.values())
    forward_outs = [o for o in outputs if graph.nodes[o].role == "forward"]
    if title is None:
        if forward_outs:
            text = infix(Expr(graph, forward_outs[0]))
            title = "f = " + (text if len(text) <= 70 else text[:67] + "...")
        else:
            title = "derivative graph"
    sub = ("forward graph (left, values flow down) and its derivative subgraph B "
           "(right, adjoints flow up)" if has_b else "forward graph (values flow down)")
    kinds = {b.kind for b in boxes.values()}
    if "tangent" in kinds and "adjoint" not in kinds:
        sub = ("forward graph (left, values flow down) and its tangents (right, forward "
               "mode: tangents flow down with the values)")
    return title, sub


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _adjoint_tables(graph: Graph) -> list[tuple[int, dict[int, int]]]:
    """``(transform number, adjoint_of)`` for every transform, earliest first."""
    tables = [(k, t.adjoint_of) for k, t in enumerate(graph.transforms)]
    return tables or [(0, graph.adjoint_of)]


def _boxes(graph: Graph, ids: list[int], outputs: list[int]) -> tuple[dict, list]:
    nodes = graph.nodes
    chosen = set(ids)
    forward = [i for i in ids if nodes[i].role == "forward"]
    labels = numbering(graph, forward)
    # P labels: the adjoint of u_k is P_k (primes for later transforms of the same node).
    p_labels: dict[int, list[str]] = {}
    anchor_of: dict[int, list[int]] = {}  # adjoint node -> forward nodes it is the adjoint of
    seen: dict[int, int] = {}
    for _, table in _adjoint_tables(graph):
        for f, a in table.items():
            if f not in chosen or a not in chosen or anchor_of.get(a, []).count(f):
                continue
            base = labels.get(f)
            prime = "′" * seen.get(f, 0)
            seen[f] = seen.get(f, 0) + 1
            text = f"P{prime}{base[1:]}" if base else None
            anchor_of.setdefault(a, []).append(f)
            p_labels.setdefault(a, []).append(text or f"P[{f}]")
    t_of: dict[int, int] = {}  # tangent node -> the node it is the tangent of
    for f, t in tangent_pairs(graph):
        if f in chosen and t in chosen and nodes[t].role == "tangent":
            t_of.setdefault(t, f)
    drawn = [i for i in ids if (not nodes[i].is_const and not nodes[i].is_call) or
             (i in p_labels and nodes[i].role == "adjoint") or i in t_of]
    # a call with several results is drawn as its results (each reads the call's operands)
    result_of = {nodes[i].args[0]: i for i in reversed(drawn) if nodes[i].op == RESULT}
    b_count = 0
    names: dict[int, str] = dict(labels)
    for i in drawn:
        if i in names:
            continue
        if i in p_labels and nodes[i].role == "adjoint":
            names[i] = _primary(p_labels[i], anchor_of[i], labels)
        elif i in t_of:
            base = names.get(t_of[i], "")
            names[i] = f"T{base[1:]}" if base[:1] == "u" else f"T[{base or t_of[i]}]"
        else:
            b_count += 1
            names[i] = f"B{b_count}"
    for a, fs in anchor_of.items():  # P[...] labels of adjoints of B nodes, now named
        p_labels[a] = [p if not p.startswith("P[") else f"P[{names.get(f, f)}]"
                       for p, f in zip(p_labels[a], fs)]
    names_all = names
    names = {i: t for i, t in names.items() if not nodes[i].is_const}  # constants: literals
    outs = set(outputs)
    boxes: dict[str, Box] = {}
    for i in drawn:
        if i in t_of:
            boxes[f"n{i}"] = _tangent_box(graph, i, t_of[i], names, i in outs, names_all)
            continue
        boxes[f"n{i}"] = _node_box(graph, i, names, p_labels, anchor_of, i in outs,
                                   names_all)
    edges: list[Edge] = []
    for key, box in boxes.items():  # built by a call's rule: anchored at its first result
        call = int(box.origin[1:]) if box.origin else -1
        if call in result_of:
            boxes[key] = replace(box, origin=f"n{result_of[call]}")
    for i in drawn:
        dst = boxes[f"n{i}"]
        operands = nodes[nodes[i].args[0]].args if nodes[i].op == RESULT else nodes[i].args
        for a in dict.fromkeys(operands):
            src = boxes.get(f"n{a}")
            if src is None or nodes[a].is_const:
                continue  # a constant (even a seed): written into the definition
            kind = ("operand" if src.side == dst.side == "forward"
                    else "b-operand" if src.side == dst.side == "B" else "cross")
            edges.append(Edge(src.key, dst.key, kind))
    for t, f in t_of.items():
        if f"n{f}" in boxes:
            flabel = names_all.get(f, "?")  # u_i, as in the boxes (not the variable's name)
            edges.append(Edge(f"n{f}", f"n{t}", "link", f"{flabel[:1]}\u0307{flabel[1:]}"))
    for a, fs in anchor_of.items():
        shared = nodes[a].role == "forward"
        for f, p in zip(fs, p_labels[a]):
            src = boxes.get(f"n{f}")
            if src is None:
                continue
            if shared:  # the adjoint is a forward node (or a constant): a marker in B
                key = f"s{f}_{a}"
                what = names.get(a) or definition(graph, a, names)
                boxes[key] = Box(key, "shared", p, [f"{p} = {_clip(what)}",
                                                    "the same node" if a in names else
                                                    "a constant"], anchor=src.key)
                target = key
            else:
                target = f"n{a}"
            edges.append(Edge(src.key, target, "link", f"∂f/∂{names_all.get(f, '?')}"))
    edges += _chain_edges(graph, chosen, boxes, edges)
    _idiom_notes(graph, chosen, boxes, names_all)
    return boxes, edges


def _adjoint_key(graph: Graph, boxes: dict[str, Box], f: int, a: int) -> str | None:
    """The box showing ``a``, the adjoint of ``f``: its node's, or a shared marker."""
    key = f"s{f}_{a}" if graph.nodes[a].role == "forward" else f"n{a}"
    return key if key in boxes else None


def _chain_edges(graph: Graph, chosen: set[int], boxes: dict[str, Box],
                 edges: list[Edge]) -> list[Edge]:
    """``P_j → P_i`` for each step of the chain rule ``P_i = Σ_j P_j J(i→j)`` that the graph
    holds no edge for: ``P_j`` a constant (the seed ``1.0``, folded into its users) or a
    shared forward node. ``j`` runs over the users of ``u_i`` and the node whose rule built
    ``P_i`` (an idiom's root); not those that pass no gradient (``floor``)."""
    nodes = graph.nodes
    users: dict[int, list[int]] = {}
    for i in sorted(chosen):
        op = REGISTRY.get(nodes[i].op)
        if op is None or not op.differentiable:
            continue
        for a in dict.fromkeys(nodes[i].args):
            users.setdefault(a, []).append(i)
    have = {(e.src, e.dst) for e in edges}
    out: list[Edge] = []
    for _, table in _adjoint_tables(graph):
        for f, a in table.items():
            pi = _adjoint_key(graph, boxes, f, a) if f in chosen and a in chosen else None
            if pi is None:
                continue
            feeders = list(users.get(f, ()))
            if nodes[a].role == "adjoint" and nodes[a].origin not in (None, f):
                feeders.append(nodes[a].origin)
            for j in dict.fromkeys(feeders):
                b = table.get(j)
                pj = None if b is None or b not in chosen else _adjoint_key(graph, boxes, j, b)
                if pj is None or pj == pi or (pj, pi) in have:
                    continue
                if nodes[b].is_const or boxes[pj].kind == "shared":
                    have.add((pj, pi))
                    out.append(Edge(pj, pi, "chain"))
    return out


def _idiom_notes(graph: Graph, chosen: set[int], boxes: dict[str, Box],
                 labels: dict[int, str]) -> None:
    """A note box in B beside the forward nodes inside an idiom (``1/(1+exp(-x))``): reverse
    mode differentiated the idiom's root by the idiom's rule, so they have no adjoint."""
    from ..passes.idioms import recognised

    nodes = graph.nodes
    for _, table in _adjoint_tables(graph):
        for o in table:
            if f"n{o}" not in boxes or f"note{o}" in boxes or nodes[o].role != "forward":
                continue
            covered, inputs = _inside(graph, o, table, chosen)
            name = recognised(graph, o) if covered and inputs else None
            if name is None:
                continue
            inner = sorted(covered)
            shown = [labels[i] for i in inner if i in labels]
            span = shown[0] if len(shown) == 1 else (
                f"{shown[0]} … {shown[-1]}" if len(shown) > 3 else ", ".join(shown))
            to = ", ".join("P" + labels[i][1:] for i in inputs if i in labels)
            lines = [f"{_clip(span, 22)}: no adjoint", f"{name} idiom at {labels[o]}:",
                     _clip(f"P{labels[o][1:]} → {to} in one step", 28)]
            boxes[f"note{o}"] = Box(f"note{o}", "note", f"{name} idiom", lines,
                                    anchor=f"n{inner[len(inner) // 2]}")


def _inside(graph: Graph, root: int, table: dict[int, int], chosen: set[int],
            limit: int = 64) -> tuple[set[int], list[int]]:
    """The forward nodes between ``root`` and the nodes with adjoints it reaches back to
    (those inputs), walking back through nodes without an adjoint (at most ``limit``)."""
    nodes = graph.nodes
    covered: set[int] = set()
    inputs: dict[int, None] = {}
    stack = [a for a in nodes[root].args]
    while stack and len(covered) < limit:
        i = stack.pop()
        n = nodes[i]
        if i not in chosen or n.is_const or n.role != "forward" or i in covered:
            continue
        if i in table:
            inputs[i] = None
        elif not n.is_var:
            covered.add(i)
            stack.extend(n.args)
    return covered, sorted(inputs)


def _tangent_box(graph: Graph, i: int, f: int, names, output: bool, names_all) -> Box:
    n = graph.nodes[i]
    text = "seed" if n.is_const else _clip(definition(graph, i, names))
    lines = [f"{names_all[i]} = {text}"]
    if n.shape:
        lines.append(type_text(n.shape, n.dtype))
    return Box(f"n{i}", "tangent", names_all[i], lines, node=i, op=n.op, output=output,
               anchor=f"n{f}", origin=None if n.origin is None else f"n{n.origin}")


def _primary(ps: list[str], fs: list[int], labels: dict[int, str]) -> str:
    """The label an adjoint node goes by: that of the forward node computed last."""
    best = max(range(len(fs)), key=lambda k: fs[k])
    return ps[best]


def _node_box(graph: Graph, i: int, names, p_labels, anchor_of, output: bool,
              names_all: dict[int, str]) -> Box:
    n = graph.nodes[i]
    shape = type_text(n.shape, n.dtype) if n.shape else ""
    if n.role == "forward":
        kind = "input" if n.is_var else "forward"
        text = n.name if n.is_var else _clip(definition(graph, i, names))
        lines = [text if text == names_all[i] else f"{names_all[i]} = {text}"]
        if shape:
            lines.append(shape)
        return Box(f"n{i}", kind, names_all[i], lines, node=i, op=n.op, output=output)
    if i in p_labels:
        label = " = ".join(dict.fromkeys(p_labels[i]))
        fwd = anchor_of[i][max(range(len(anchor_of[i])), key=lambda k: anchor_of[i][k])]
        text = _clip(definition(graph, i, names))
        if n.is_const and fwd == n.origin:
            text += " (seed)"
        lines = [f"{_clip(label, 24)} = {text}"]
        if shape:
            lines.append(shape)
        return Box(f"n{i}", "adjoint", label, lines, node=i, op=n.op, output=output,
                   anchor=f"n{fwd}",
                   origin=None if n.origin is None else f"n{n.origin}")
    lines = [f"{names_all[i]} = {_clip(definition(graph, i, names))}"]
    if shape:
        lines.append(shape)
    return Box(f"n{i}", "intermediate", names_all[i], lines, node=i, op=n.op, output=output,
               origin=None if n.origin is None else f"n{n.origin}")


# -- collapsing chains ----------------------------------------------------------------------


def _collapse(boxes: dict[str, Box], edges: list[Edge]) -> tuple[dict, list, int]:
    """Chains of forward boxes with one forward operand and one forward user become one
    group box; the B boxes made for them become one B group box."""
    preds: dict[str, list[str]] = {k: [] for k in boxes}
    succs: dict[str, list[str]] = {k: [] for k in boxes}
    for e in edges:
        if e.kind == "operand":
            preds[e.dst].append(e.src)
            succs[e.src].append(e.dst)

    def inner(k: str) -> bool:
        b = boxes[k]
        return (b.kind == "forward" and not b.output and len(preds[k]) == 1
                and len(succs[k]) == 1)

    group_of: dict[str, str] = {}
    groups: list[list[str]] = []
    for k in boxes:  # keys are in id order: a chain is met at its first member
        if not inner(k) or k in group_of or (preds[k] and inner(preds[k][0])
                                             and succs[preds[k][0]] == [k]):
            continue
        chain = [k]
        while succs[chain[-1]] and inner(succs[chain[-1]][0]) and \
                preds[succs[chain[-1]][0]] == [chain[-1]]:
            chain.append(succs[chain[-1]][0])
        if len(chain) >= CHAIN_MIN:
            g = f"g{len(groups)}"
            groups.append(chain)
            group_of.update((m, g) for m in chain)
    if not groups:
        return boxes, edges, 0
    members_b: dict[str, list[str]] = {}
    for k, b in boxes.items():
        if b.side != "B" or b.kind in ("group", "note"):
            continue
        home = group_of.get(b.anchor or "") or group_of.get(b.origin or "")
        if home is None or (b.anchor and b.anchor not in group_of):
            continue
        members_b.setdefault(home, []).append(k)
    out: dict[str, Box] = {}
    hidden = 0
    remap: dict[str, str] = {}
    for k, b in boxes.items():
        g = group_of.get(k)
        if g is None:
            bg = next((h for h, ms in members_b.items() if k in ms), None) \
                if b.side == "B" else None
            if bg is None:
                out[k] = b
                continue
            g = "b" + bg
        remap[k] = g
        if g not in out:
            out[g] = _group_box(g, boxes, groups, group_of, members_b)
            hidden += len(out[g].members)
    for b in out.values():  # a note beside a collapsed chain: beside its group
        if b.kind == "note":
            b.anchor = remap.get(b.anchor or "", b.anchor)
    new_edges: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        src, dst = remap.get(e.src, e.src), remap.get(e.dst, e.dst)
        if src == dst:
            continue
        key = (src, dst, e.kind)
        if key not in new_edges:
            label = e.label if src == e.src and dst == e.dst else ""
            new_edges[key] = Edge(src, dst, e.kind, label)
    return out, list(new_edges.values()), hidden


def _group_box(g: str, boxes, groups, group_of, members_b) -> Box:
    if g.startswith("b"):
        keys = members_b[g[1:]]
        anchor = g[1:]
    else:
        keys = groups[int(g[1:])]
        anchor = None
    inner = [boxes[k] for k in keys]
    ops = Counter(b.op or b.kind for b in inner)
    top = ", ".join(f"{op} ×{n}" for op, n in ops.most_common(3))
    named = [b.label for b in inner if b.kind != "intermediate"] or [inner[0].label]
    span = named[0] if len(named) == 1 else f"{named[0]} … {named[-1]}"
    nodes = [b.node for b in inner if b.node is not None]
    lines = [_clip(span, 28), _clip(f"{len(nodes)} nodes: {top}", 34)]
    return Box(g, "group", span, lines, members=nodes, anchor=anchor)


__all__ = ["build_scene", "SCENE_LIMIT", "COLLAPSE_AT"]
