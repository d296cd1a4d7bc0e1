"""The derivative rules of ``while_loop`` (:mod:`symgrad.ops.while_loop`), set on the op from
here (:func:`~symgrad.ir.op.define_rules`).

* Reverse mode: the loop's call recording its tape (the value's call with ``tape``: one
  run for both), and one ``while_vjp`` call given that tape, the trip count, the initial
  carries and captured values and the seeds; its backward step is the step's VJP (traced
  once per batch shape and set of captured values asked, remembered by the step body). The
  sweep recomputes carries from the snapshots the forward loop stored (online and binomial
  checkpointing, :mod:`symgrad.ops.while_loop`).
* Forward mode: a ``while_loop`` of primal and tangent carries (the scan's JVP step, with
  no scanned operands), stopped by the same condition on the primal carries.
* A ``while_vjp`` is not differentiated again: a second derivative of a ``while_loop`` is
  refused with a :class:`~symgrad.errors.DifferentiationError` (forward mode over forward
  mode works: ``sg.jvp`` of ``sg.jvp``).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> y = sg.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, sg.sin(c[1]) * x), (0, x))[1]
>>> g, t = sg.grad(y, x), sg.jvp(y, x, 1.0)
>>> h = 1e-6
>>> fd = (sg.evaluate(y, {"x": 0.7 + h}) - sg.evaluate(y, {"x": 0.7 - h})) / (2 * h)
>>> [abs(float(sg.evaluate(d, {"x": 0.7})) - fd) < 1e-8 for d in (g, t)]
[True, True]
"""

from __future__ import annotations

from typing import Any

from ..base.errors import DifferentiationError
from ..ir.body import Body
from ..ir.expr import Expr
from ..ir.op import define_rules
from ..ir.shapes import is_float
from ..ops.while_loop import row_reads, while_call, while_vjp_call
from .implicit import closed, zeros
from .loop_steps import jvp_step, multi_vjp, tangent_closure


def vjp_body(body: Body, nc: int, batch: tuple, wrt_k: tuple[int, ...]) -> Body:
    """The backward step of loop step ``body`` (``nc`` carries): inputs the carries, the
    captured values, then the cotangents (batch axes ``batch`` first) of the new float
    carries; results those of the float carries entering the step, then those of the
    captured values ``wrt_k`` (indices among them), then the index of each of those the step
    reads one row of (:func:`row_reads`): its result is that row's cotangent."""
    rows = row_reads(body, nc, wrt_k)

    def build() -> Body:
        avals = body.avals()
        fc = [j for j in range(nc) if is_float(avals[j][1])]
        seeds = [(batch + avals[j][0], avals[j][1]) for j in fc]
        nodes = body.graph.nodes
        outs = seeds + [(batch + (nodes[rows[i]].shape if i in rows else avals[nc + i][0]),
                         avals[nc + i][1]) for i in wrt_k]

        def fn(*v: Any) -> list:
            c, k, cbar = v[:nc], v[nc:len(avals)], v[len(avals):]
            graph, memo = body.inline_map([*c, *k])
            res = [Expr(graph, memo[o]) for o in body.outputs]
            wrt = [c[j] for j in fc] + [Expr(graph, memo[rows[i]]) if i in rows else k[i]
                                        for i in wrt_k]
            adj = multi_vjp([(res[j], g) for j, g in zip(fc, cbar)], wrt)
            at = [Expr(graph, memo[nodes[rows[i]].args[1]]) for i in wrt_k if i in rows]
            return [zeros(s, d) if a is None else a for a, (s, d) in zip(adj, outs)] + at

        return closed(fn, avals + seeds)

    return body.memo(("while_vjp", nc, batch, wrt_k), build)


def while_backprop(n: Any, g: tuple) -> tuple:
    """The contributions to the operands of ``while_loop`` call ``n`` for the adjoints
    ``g`` of its results: one ``while_vjp`` call."""
    attrs = n.attrs
    body, nc, kb = attrs["body_fun"], attrs["carries"], attrs["body_args"]
    args = n.args
    avals = body.avals()
    fc = [j for j in range(nc) if is_float(avals[j][1])]
    seeded = [j for j in fc if g[j] is not None]
    if not seeded:
        return (None,) * len(args)
    j0 = seeded[0]
    batch = g[j0].shape[:g[j0].ndim - len(avals[j0][0])]
    wrt_k = tuple(i for i in range(kb) if n.needs(nc + i) and is_float(avals[nc + i][1]))
    vbody = vjp_body(body, nc, batch, wrt_k)
    seeds = [g[j] if g[j] is not None else zeros(batch + avals[j][0], avals[j][1])
             for j in fc]
    # the same loop recording its tape: one run with the value's (passes/calls.py)
    taped = while_call(n.graph, attrs["cond_fun"], body, nc, args, attrs["snapshots"],
                       tape=True)
    rows = row_reads(body, nc, wrt_k)
    res = while_vjp_call(n.graph, body, vbody, nc,
                         [taped[nc + 1], taped[nc], *args[:nc + kb], *seeds],
                         attrs["snapshots"], taped=True,
                         rows=tuple(len(fc) + wrt_k.index(i) for i in rows), batch=batch,
                         avals=[(batch + avals[j][0], avals[j][1]) for j in fc]
                         + [(batch + avals[nc + i][0], avals[nc + i][1]) for i in wrt_k])
    contrib: list = [None] * len(args)
    for j, r in zip(fc, res):
        if n.needs(j):
            contrib[j] = r
    for i, r in zip(wrt_k, res[len(fc):]):
        contrib[nc + i] = r
    return tuple(contrib)


def _live(body: Body, nc: int, given: set[int]) -> tuple[int, ...]:
    return tuple(sorted(tangent_closure(body, nc, given)))


def while_forward(n: Any, t: tuple) -> tuple | None:
    """The tangents of the results of ``while_loop`` call ``n`` for tangents ``t`` of its
    operands: a ``while_loop`` carrying primal and tangent, stopped by ``cond_fun`` on the
    primal carries."""
    attrs = n.attrs
    cond, body, nc, kb = (attrs["cond_fun"], attrs["body_fun"], attrs["carries"],
                          attrs["body_args"])
    args = n.args
    avals = body.avals()
    given = {i for i, tk in enumerate(t[:nc + kb]) if tk is not None
             and is_float(avals[i][1])}
    if not given:
        return None
    i0 = min(given)
    batch = t[i0].shape[:t[i0].ndim - args[i0].ndim]
    live = _live(body, nc, given)
    jbody, captured, tc, _ = jvp_step(body, nc, 0, batch, live)
    m = nc + len(tc)
    jcond = _cond_on(cond, nc, jbody.avals()[nc:m])

    def dot(i: int) -> Any:
        return t[i] if t[i] is not None else zeros(batch + avals[i][0], avals[i][1])

    operands = [*args[:nc], *(dot(j) for j in tc), *args[nc:nc + kb],
                *(dot(i) for i in live if i >= nc), *captured, *args[nc + kb:]]
    res = while_call(n.graph, jcond, jbody, m, operands, attrs["snapshots"])
    return (*(res[nc + tc.index(j)] if j in tc else None for j in range(nc)), None,
            *[None] * len(attrs["tape"]))  # the trip count and the tape have none


def _cond_on(cond: Body, nc: int, extra: list) -> Body:
    """``cond`` reading the first ``nc`` of its carries, with carries of ``extra`` avals
    after them (the tangents) that it ignores."""
    def build() -> Body:
        avals = cond.avals()
        return closed(lambda *v: cond.inline([*v[:nc], *v[nc + len(extra):]]),
                      [*avals[:nc], *extra, *avals[nc:]])

    return cond.memo(("while_jvp_cond", nc, tuple(extra)), build)


def _refuse(n: Any, *_: Any) -> Any:
    raise DifferentiationError(
        "while_loop: a second derivative (the derivative of the reverse sweep) is not "
        "supported. Use forward mode for the inner derivative (sg.jvp, sg.jacfwd: its "
        "reverse mode works), or bound the loop: sg.while_loop(..., max_steps=N) is a scan "
        "that differentiates to any order")


define_rules("while_loop", backprop=while_backprop, forward=while_forward)
define_rules("while_vjp", backprop=_refuse, forward=_refuse)

__all__ = ["vjp_body", "while_backprop", "while_forward"]
