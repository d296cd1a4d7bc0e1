"""The loop op ``scan``: ``jax.lax.scan``'s meaning, with a traced body of its own.

One scan is one call; each of its results is a node of its own, selected by attribute
``out`` (the other attributes and the operands are the same, so the nodes of one call are
found by hash-consing). With ``nc`` carries and ``ny`` per-step results the parts are:

* ``out < nc``: the final carry ``out``;
* ``nc <= out < nc + ny``: per-step result ``out - nc``, stacked (``(length,) + shape``);
* ``nc + ny <= out``: the carry *entering* each step, stacked (what reverse mode reads).

Operands: the ``nc`` initial carries, the ``xs`` scanned arrays (leading axis ``length``),
then the values the body captured. Attributes: ``body`` (a :class:`~symgrad.ir.body.Body`),
``carries``, ``xs``, ``length``, ``reverse``, ``out``.

Derivatives are scans too, built from the body's own derivative graphs: forward mode scans
primal and tangent together; reverse mode scans the body's VJP backwards over the stored
carries, the adjoints of the captured values summed in its carry. So ``hvp`` and Hessians
compose.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (c * x, None), 1.0, length=3)   # x**3
>>> sg.evaluate([c, sg.grad(c, x)], {"x": 2.0})
[8.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..ir.body import Body, trace
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, is_float

_SIG = sig("*operands", body=None, carries=0, xs=0, length=0, reverse=False, out=0)


def _layout(attrs: dict) -> tuple[Body, int, int, int]:
    body = attrs["body"]
    nc, nx = attrs["carries"], attrs["xs"]
    return body, nc, nx, len(body.outputs) - nc


def _infer(shapes, dtypes, attrs):
    body, nc, nx, ny = _layout(attrs)
    if not isinstance(body, Body):
        raise ShapeError("scan: body must be a traced loop body (use sg.scan)")
    length, out = attrs["length"], attrs["out"]
    want = body.avals()
    if len(shapes) != len(want):
        raise ShapeError(f"scan: the body takes {len(want)} operands, got {len(shapes)}")
    for k, ((s, d), (ws, wd)) in enumerate(zip(zip(shapes, dtypes), want)):
        if nc <= k < nc + nx:
            ws = (length, *ws)
        if s != ws or d != wd:
            raise ShapeError(f"scan: operand {k} has shape {fmt(s)} {d}, the body needs "
                             f"{fmt(ws)} {wd}")
    results = body.avals(body.outputs)
    if not 0 <= out < 2 * nc + ny:
        raise ShapeError(f"scan: no result {out} (it has {2 * nc + ny})")
    if out < nc:
        return results[out]
    if out < nc + ny:
        s, d = results[out]
        return (length, *s), d
    s, d = want[out - nc - ny]
    return (length, *s), d


# -- evaluation ---------------------------------------------------------------------------

def _sg_scan(*arrays, body, carries, xs, length, reverse, out, _memo=[]):  # noqa: B006
    """Result ``out`` of the scan; the last few calls are remembered with the bytes of their
    operands, so the several results of one scan run its loop once."""
    key = (id(body), carries, xs, length, reverse) + tuple(
        (a.shape, a.dtype.str, a.tobytes()) for a in map(np.asarray, arrays))
    found = [r for b, k, r in tuple(_memo) if b is body and k == key]
    if found:
        results = found[0]
    else:
        results = run_scan(body, carries, xs, length, reverse, arrays)
        _memo.insert(0, (body, key, results))
        del _memo[4:]
    return results[out].copy()


def run_scan(body: Body, nc: int, nx: int, length: int, reverse: bool,
             arrays: Sequence[Any]) -> list[np.ndarray]:
    """Every result of a scan over ``arrays`` (the operands), by running the body."""
    arrays = [np.asarray(a) for a in arrays]
    carry = arrays[:nc]
    xs, consts = arrays[nc:nc + nx], arrays[nc + nx:]
    ny = len(body.outputs) - nc
    ys = [np.empty((length, *s), d) for s, d in body.avals(body.outputs[nc:])]
    stored = [np.empty((length, *s), d) for s, d in body.avals()[:nc]]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    with np.errstate(all="ignore"):
        for t in steps:
            for j in range(nc):
                stored[j][t] = carry[j]
            res = body.run([*carry, *(x[t] for x in xs), *consts])
            carry = res[:nc]
            for j in range(ny):
                ys[j][t] = res[nc + j]
    return [*(np.array(c) for c in carry), *ys, *stored]


# -- building -----------------------------------------------------------------------------

def scan_nodes(graph: Graph, body: Body, nc: int, nx: int, length: int, reverse: bool,
               operands: Sequence[Expr], parts: Sequence[int]) -> list[Expr]:
    """The nodes of results ``parts`` of one scan, built in ``graph`` (operands of other
    graphs are imported into it)."""
    attrs = {"body": body, "carries": nc, "xs": nx, "length": length, "reverse": reverse}
    ids = tuple(graph.find(e) for e in operands)
    return [Expr(graph, graph.add(SCAN, ids, {**attrs, "out": k})) for k in parts]


def _zeros(shape: tuple, dtype: str) -> Expr:
    return F.broadcast_to(F.zeros((), dtype=dtype), shape)


def _to_front(x: Expr, axis: int) -> Expr:
    """Axis ``axis`` of ``x`` moved first (the step axis, behind ``axis`` batch axes)."""
    if axis == 0:
        return x
    perm = (axis, *range(axis), *range(axis + 1, x.ndim))
    return F.transpose(x, perm)


def _from_front(x: Expr, axis: int) -> Expr:
    if axis == 0:
        return x
    perm = (*range(1, axis + 1), 0, *range(axis + 1, x.ndim))
    return F.transpose(x, perm)


# -- reverse mode -------------------------------------------------------------------------

def _vjp_body(body: Body, nc: int, nx: int, batch: tuple, seeded: tuple, wrt_x: tuple,
              wrt_k: tuple) -> tuple[Body, list[int]]:
    """The backward step: carries ``(cbar of float carries..., kbar of wrt_k...)``, per
    step ``(carry-in..., x..., seeds...)``, then the captured values ``k``; results the
    new carries and ``xbar`` of ``wrt_x``. ``seeded``: ``("y", j)`` / ``("stored", j)``."""
    key = ("vjp", nc, nx, batch, seeded, wrt_x, wrt_k)
    found = body.derived.get(key)
    if found is not None:
        return found
    from ..passes import sum_contributions
    from ..transforms.reverse import _backprop, adjoint_rewriting

    avals = body.avals()
    nk = len(avals) - nc - nx
    outs = body.avals(body.outputs)
    fc = [j for j in range(nc) if is_float(avals[j][1])]
    seeds = [outs[nc + j] if kind == "y" else avals[j] for kind, j in seeded]
    ins = ([(batch + avals[j][0], avals[j][1]) for j in fc]
           + [(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in wrt_k]
           + avals[:nc + nx] + [(batch + s, d) for s, d in seeds] + avals[nc + nx:])

    def step(*v: Expr) -> list[Expr]:
        cbar, v = v[:len(fc)], v[len(fc):]
        kbar, v = v[:len(wrt_k)], v[len(wrt_k):]
        primal, v = v[:nc + nx], v[nc + nx:]
        sbar, k = v[:len(seeded)], v[len(seeded):]
        res = body.inline([*primal, *k])
        pairs = [(res[j], g) for j, g in zip(fc, cbar)]
        pairs += [(res[nc + j], g) for (kind, j), g in zip(seeded, sbar) if kind == "y"]
        wrt = [primal[j] for j in fc] + [primal[nc + i] for i in wrt_x] + [k[c] for c in wrt_k]
        adj = _multi_vjp(pairs, wrt, _backprop, adjoint_rewriting, sum_contributions)
        new_c = []
        for j, a in zip(fc, adj):
            extra = [g for (kind, jj), g in zip(seeded, sbar) if kind == "stored" and jj == j]
            terms = [t for t in (a, *extra) if t is not None]
            new_c.append(sum(terms[1:], terms[0]) if terms else _zeros(batch + avals[j][0],
                                                                      avals[j][1]))
        adj_x = adj[len(fc):len(fc) + len(wrt_x)]
        adj_k = adj[len(fc) + len(wrt_x):]
        new_k = [kb if a is None else kb + a for kb, a in zip(kbar, adj_k)]
        xbar = [_zeros(batch + avals[nc + i][0], avals[nc + i][1]) if a is None else a
                for i, a in zip(wrt_x, adj_x)]
        return [*new_c, *new_k, *xbar]

    vbody, captured = trace(step, ins)
    found = (vbody, captured)
    body.derived[key] = found
    return found


def _multi_vjp(pairs, wrt, backprop, rewriting, total) -> list[Expr | None]:
    """The adjoints of ``wrt`` for seeds ``pairs`` [(result, seed)], one reverse pass."""
    if not pairs or not wrt:
        return [None] * len(wrt)
    graph = pairs[0][0].graph
    with rewriting(graph, True):
        record = backprop(pairs[0][0], wrt, pairs[0][1], total, also=pairs[1:])
    return [None if record.adjoint_of.get(w.node) is None
            else Expr(graph, record.adjoint_of[w.node]) for w in wrt]


def _backprop(n, g):
    body, nc, nx, ny = _layout(n.attrs)
    length, reverse, out = n.attrs["length"], n.attrs["reverse"], n.attrs["out"]
    args = n.args
    nb = g.ndim - n.out.ndim
    batch = g.shape[:nb]
    avals = body.avals()
    consts = range(nc + nx, len(args))
    wrt_x = tuple(i for i in range(nx) if n.needs(nc + i) and is_float(avals[nc + i][1]))
    wrt_k = tuple(c - nc - nx for c in consts if n.needs(c) and is_float(avals[c][1]))
    fc = [j for j in range(nc) if is_float(avals[j][1])]
    if out < nc:
        seeded: tuple = ()
    else:
        seeded = (("y", out - nc),) if out < nc + ny else (("stored", out - nc - ny),)
    vbody, captured = _vjp_body(body, nc, nx, batch, seeded, wrt_x, wrt_k)
    stored = scan_nodes(n.graph, body, nc, nx, length, reverse, args, range(nc + ny, 2 * nc + ny))
    init = [g if j == out else _zeros(batch + avals[j][0], avals[j][1]) for j in fc]
    init += [_zeros(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in wrt_k]
    steps = [*stored, *args[nc:nc + nx]] + ([_to_front(g, nb)] if seeded else [])
    operands = [*init, *steps, *args[nc + nx:], *captured]
    m = len(init)
    res = scan_nodes(n.graph, vbody, m, len(steps), length, not reverse, operands,
                     range(m + len(wrt_x)))
    contrib: list = [None] * len(args)
    for j, r in zip(fc, res):
        if n.needs(j):
            contrib[j] = r
    for c, r in zip(wrt_k, res[len(fc):m]):
        contrib[nc + nx + c] = r
    for i, r in zip(wrt_x, res[m:]):
        contrib[nc + i] = _from_front(r, nb)
    return tuple(contrib)


# -- forward mode -------------------------------------------------------------------------

def _closure(body: Body, nc: int, given: set[int]) -> set[int]:
    """Body inputs with a tangent: ``given``, and every carry whose new value depends on
    one (repeated: a carry can feed another)."""
    graph = body.graph
    order = graph.ancestors(body.outputs)
    live = set(given)
    while True:
        reached = graph.descendants([body.inputs[i] for i in live], order)
        more = {j for j in range(nc) if body.outputs[j] in reached
                and is_float(graph.nodes[body.inputs[j]].dtype)} - live
        if not more:
            return live
        live |= more


def _jvp_body(body: Body, nc: int, nx: int, batch: tuple, live: tuple
              ) -> tuple[Body, list[Any], list[int], list[int]]:
    """The step of primal and tangent: carries ``(c..., cdot of live carries)``, per step
    ``(x..., xdot of live xs)``, then ``(k..., kdot of live ks)``; results ``(c'..., c'dot,
    y..., ydot of the ys that have one)``. Also returns which carries and ys have tangents."""
    key = ("jvp", nc, nx, batch, live)
    found = body.derived.get(key)
    if found is not None:
        return found
    from ..transforms.forward import _tangents
    from ..transforms.reverse import adjoint_rewriting

    avals = body.avals()
    graph = body.graph
    ny = len(body.outputs) - nc
    reached = graph.descendants([body.inputs[i] for i in live], graph.ancestors(body.outputs))
    tc = [j for j in range(nc) if j in live]
    ty = [j for j in range(ny) if body.outputs[nc + j] in reached
          and is_float(graph.nodes[body.outputs[nc + j]].dtype)]
    groups = [range(nc), range(nc, nc + nx), range(nc + nx, len(avals))]
    ins: list = []
    for grp in groups:
        ins += [avals[i] for i in grp] + [(batch + avals[i][0], avals[i][1])
                                          for i in grp if i in live]

    def step(*v: Expr) -> list[Expr]:
        primal, dots, pos = [], [], 0
        for grp in groups:
            primal += v[pos:pos + len(grp)]
            pos += len(grp)
            k = sum(1 for i in grp if i in live)
            dots += v[pos:pos + k]
            pos += k
        res = body.inline(primal)
        wrt = [primal[i] for i in sorted(live)]
        outs = [res[j] for j in tc] + [res[nc + j] for j in ty]
        tan: list = [None] * len(outs)
        if outs and wrt:
            g = outs[0].graph
            with adjoint_rewriting(g, True):
                rec = _tangents(outs, wrt, dots)
            tan = [rec.tangent_of.get(o.node) for o in outs]
            tan = [None if t is None else Expr(g, t) for t in tan]
        shapes = [avals[j] for j in tc] + body.avals([body.outputs[nc + j] for j in ty])
        tan = [_zeros(batch + s, d) if t is None else t for t, (s, d) in zip(tan, shapes)]
        return [*res[:nc], *tan[:len(tc)], *res[nc:], *tan[len(tc):]]

    jbody, captured = trace(step, ins)
    found = (jbody, captured, tc, ty)
    body.derived[key] = found
    return found


def _forward(n, t):
    body, nc, nx, ny = _layout(n.attrs)
    length, reverse, out = n.attrs["length"], n.attrs["reverse"], n.attrs["out"]
    args = n.args
    given = {i for i, tk in enumerate(t) if tk is not None}
    if not given:
        return None
    i0 = min(given)
    nb = t[i0].ndim - args[i0].ndim
    batch = t[i0].shape[:nb]
    live = tuple(sorted(_closure(body, nc, given)))
    jbody, captured, tc, ty = _jvp_body(body, nc, nx, batch, live)
    avals = body.avals()

    def dot(i: int) -> Expr:
        if t[i] is not None:
            return _to_front(t[i], nb) if nc <= i < nc + nx else t[i]
        return _zeros(batch + avals[i][0], avals[i][1])

    groups = [range(nc), range(nc, nc + nx), range(nc + nx, len(args))]
    operands: list = []
    for grp in groups:
        operands += [args[i] for i in grp] + [dot(i) for i in grp if i in live]
    operands += captured
    mc = nc + len(tc)
    if out < nc:
        if out not in tc:
            return None
        part = nc + tc.index(out)
    elif out < nc + ny:
        if out - nc not in ty:
            return None
        part = mc + ny + ty.index(out - nc)
    else:
        j = out - nc - ny
        if j not in tc:
            return None
        part = mc + ny + len(ty) + nc + tc.index(j)
    nxs = nx + sum(1 for i in groups[1] if i in live)
    (r,) = scan_nodes(n.graph, jbody, mc, nxs, length, reverse, operands, [part])
    return r if out < nc else _from_front(r, nb)


SCAN = register(Op(
    name="scan", signature=_SIG, infer=_infer, impl=_sg_scan, backprop=_backprop,
    forward=_forward, public=False, domain=None,
    doc="one result of a loop over a traced body (jax.lax.scan's meaning; see sg.scan)",
))

__all__ = ["SCAN", "run_scan", "scan_nodes"]
