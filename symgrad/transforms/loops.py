"""The derivative bodies of a loop step (for the ``scan`` op's rules,
:mod:`symgrad.ops.loops`): the step's VJP and JVP, each traced as a body of its own with
the transforms of this folder run on the step's graph.

A derived body is cached on the step body (``body.derived``), keyed by what was asked:
the batch axes of the seeds, which results are seeded, which inputs need adjoints.
"""

from __future__ import annotations

from typing import Any

from ..ir.body import Body, trace
from ..ir.expr import Expr
from ..ir.shapes import is_float
from ..ops.loops import DERIVED, _zeros
from ..passes import sum_contributions
from .forward import _tangents
from .reverse import _backprop, adjoint_rewriting


def _vjp_body(body: Body, nc: int, nx: int, batch: tuple, seeded: tuple, wrt_x: tuple,
              wrt_k: tuple) -> tuple[Body, list[int]]:
    """The backward step: carries ``(cbar of float carries..., kbar of wrt_k...)``, per
    step ``(carry-in..., x..., seeds...)``, then the captured values ``k``; results the
    new carries and ``xbar`` of ``wrt_x``. ``seeded``: ``("y", j)`` / ``("stored", j)``."""
    key = ("vjp", nc, nx, batch, seeded, wrt_x, wrt_k)
    found = body.derived.get(key)
    if found is not None:
        return found
    avals = body.avals()
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
        adj = _multi_vjp(pairs, wrt)
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


def _multi_vjp(pairs: list[tuple[Expr, Expr]], wrt: list[Expr]) -> list[Expr | None]:
    """The adjoints of ``wrt`` for seeds ``pairs`` [(result, seed)], one reverse pass."""
    if not pairs or not wrt:
        return [None] * len(wrt)
    graph = pairs[0][0].graph
    with adjoint_rewriting(graph, True):
        record = _backprop(pairs[0][0], wrt, pairs[0][1], sum_contributions, also=pairs[1:])
    return [None if record.adjoint_of.get(w.node) is None
            else Expr(graph, record.adjoint_of[w.node]) for w in wrt]


def _jvp_body(body: Body, nc: int, nx: int, batch: tuple, live: tuple
              ) -> tuple[Body, list[Any], list[int], list[int]]:
    """The step of primal and tangent: carries ``(c..., cdot of live carries)``, per step
    ``(x..., xdot of live xs)``, then ``(k..., kdot of live ks)``; results ``(c'..., c'dot,
    y..., ydot of the ys that have one)``. Also returns which carries and ys have tangents."""
    key = ("jvp", nc, nx, batch, live)
    found = body.derived.get(key)
    if found is not None:
        return found
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


DERIVED.update(vjp=_vjp_body, jvp=_jvp_body)
