"""The derivative rules of ``scan`` (:mod:`symgrad.ops.loops`), set on the op from here
(:func:`~symgrad.ir.op.define_rules`), beside the step builders they call
(:mod:`.loop_steps`), as JAX registers ``scan_p``'s JVP and transpose in the file that
defines them.

* Reverse mode: ``backprop`` is asked once per scan call with the adjoints of its results.
  It asks the step's VJP (:func:`~.loop_steps.vjp_step`) which per-step values it reads,
  builds the forward call whose ``stacked`` nodes include them (the stored carries and the
  residuals: one call, the interpreter and the compile pipeline run it for the primal's
  results too), and scans the VJP backwards over them; a captured value's adjoint that is a
  sum of per-step matrix products is one product of their stacks after the loop.
* Forward mode: one scan of primal and tangent (:func:`~.loop_steps.jvp_step`) gives the
  tangent of every result of the call, stacked values included.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(2,))
>>> c, ys = sg.scan(lambda c, _: (c * x, c), x, length=3)
>>> sg.evaluate(sg.grad(sg.sum(c) + sg.sum(ys), x), {"x": [1.0, 2.0]})
array([10., 49.])
"""

from __future__ import annotations

from typing import Any

from ..ir.body import scan_call
from ..ir.expr import Expr, F
from ..ir.op import define_rules
from ..ir.shapes import is_float
from ..ops.loops import ScanParts
from .loop_steps import jvp_step, tangent_closure, vjp_step, zeros


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

_SEEDED = {"y": "y", "stored": "stored", "residual": "saved"}  # result kind -> vjp_step's


def scan_backprop(n, g: tuple) -> tuple:
    """The contributions to the operands of scan call ``n`` for ``g``, the adjoints of its
    results (None where a result has none)."""
    attrs = n.attrs
    parts = ScanParts.of(attrs)
    body, nc, nx = parts.body, parts.carries, attrs["xs"]
    length, reverse = attrs["length"], attrs["reverse"]
    seeds = {k: gk for k, gk in enumerate(g) if gk is not None}
    some = next(iter(seeds))
    nb = seeds[some].ndim - parts.ndim(some)
    batch = seeds[some].shape[:nb]
    args = n.args
    avals = body.avals()
    wrt_x = tuple(i for i in range(nx) if n.needs(nc + i) and is_float(avals[nc + i][1]))
    wrt_k = tuple(c - nc - nx for c in range(nc + nx, len(args))
                  if n.needs(c) and is_float(avals[c][1]))
    fc = [j for j in range(nc) if is_float(avals[j][1])]
    later = sorted(k for k in seeds if k >= nc)
    seeded = tuple((_SEEDED[kind], j) for kind, j in map(parts.kind, later))
    vbody, captured, plan = vjp_step(body, nc, nx, batch, seeded, wrt_x, wrt_k, length)
    forward, fparts = _forward_call(n, parts, plan, len(seeded))
    ys = {o: nc + i for i, o in reversed(list(enumerate(body.outputs[nc:])))}
    stored = [forward[fparts.index("stored", j)] if fparts.index("stored", j) is not None
              else zeros((length, *avals[j][0]), avals[j][1]) for j in range(nc)]
    # a residual that is a per-step result is that result's stack (not stacked twice)
    residuals = [forward[ys[r] if r in ys else fparts.index("residual", r)]
                 for r in plan.residuals]
    steps = [*stored, *args[nc:nc + nx], *(_to_front(seeds[p], nb) for p in later),
             *residuals]
    steps = [zeros(s.shape, s.dtype) if k in plan.unread else s for k, s in enumerate(steps)]
    init = [seeds[j] if j in seeds else zeros(batch + avals[j][0], avals[j][1]) for j in fc]
    init += [zeros(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in plan.carried]
    init += [forward[j] for j in plan.chained]
    operands = [*init, *steps, *args[nc + nx:], *captured]
    m = len(init)
    res = scan_call(n.graph, vbody, m, len(steps), length, not reverse, operands)
    contrib: list = [None] * len(args)
    for j, r in zip(fc, res):
        if n.needs(j):
            contrib[j] = r
    for c, r in zip(plan.carried, res[len(fc):m]):
        contrib[nc + nx + c] = r
    for i, r in zip(wrt_x, res[m:]):
        contrib[nc + i] = _from_front(r, nb)

    def stack(kind: str, j: int) -> Expr | tuple[Expr, Expr]:
        if kind == "next":
            c = plan.chained[j]
            return stored[c] if length == 0 else (stored[c], forward[c])
        return steps[j] if kind == "in" else res[m + j]

    for c, ref_a, ta, ref_b, tb in plan.products:
        term = _product(stack(*ref_a), ta, stack(*ref_b), tb, reverse)
        k = nc + nx + c
        contrib[k] = term if contrib[k] is None else contrib[k] + term
    return tuple(contrib)


def _forward_call(n, parts: ScanParts, plan: Any, seeded: int
                  ) -> tuple[tuple[Expr, ...], ScanParts]:
    """The forward call the backward scan reads: scan ``n`` with the stored carries and the
    residuals the VJP step reads among its ``stacked`` nodes (those it has asked already
    too, so a call is never a smaller copy of another), and its layout."""
    body, nc = parts.body, parts.carries
    ys = set(body.outputs[nc:])
    first = nc + n.attrs["xs"] + seeded  # the residuals' place among the step's operands
    want = set(parts.stacked)
    want.update(body.inputs[j] for j in range(nc)
                if j not in plan.unread or j in plan.chained)
    want.update(r for k, r in enumerate(plan.residuals)
                if r not in ys and first + k not in plan.unread)
    attrs = n.attrs
    forward = scan_call(n.graph, body, nc, attrs["xs"], attrs["length"], attrs["reverse"],
                        n.args, want)
    return forward, ScanParts(body, nc, attrs["length"], sorted(want))


def _product(a: Any, ta: bool, b: Any, tb: bool, reverse: bool) -> Expr:
    """``sum_t A_t @ B_t`` of the stacks ``a`` and ``b``. A pair ``(stored, final)``
    stands for the values a carry takes leaving each step: the stored carries shifted by
    one step, then the final carry; read as slices (:func:`_pieces`), not a new stack."""
    if not isinstance(a, tuple) and not isinstance(b, tuple):
        return _left(a, ta) @ _right(b, tb)
    (a1, a2), (b1, b2) = _pieces(a, reverse), _pieces(b, reverse)
    return _left(a1, ta) @ _right(b1, tb) + _left(a2, ta) @ _right(b2, tb)


def _pieces(s: Any, reverse: bool) -> tuple[Expr, Expr]:
    """Stack ``s`` (or a ``(stored, final)`` pair, :func:`_product`) as the steps but the
    one the loop runs last, and that one (a stack of one)."""
    if isinstance(s, tuple):
        stored, final = s
        last = F.reshape(final, (1, *final.shape))
        return (stored[:-1], last) if reverse else (stored[1:], last)
    return (s[1:], s[:1]) if reverse else (s[:-1], s[-1:])


def _left(s: Expr, transposed: bool) -> Expr:
    """The factors ``L_t`` stacked in ``s`` (``L_t = s[t]``, or its transpose where
    ``transposed``; a vector: a column) side by side: ``(m, length * k)``."""
    if s.ndim == 2:
        return F.matrix_transpose(s)
    t, k1, k2 = s.shape
    if transposed:
        return F.matrix_transpose(F.reshape(s, (t * k1, k2)))
    return F.reshape(F.transpose(s, (1, 0, 2)), (k1, t * k2))


def _right(s: Expr, transposed: bool) -> Expr:
    """The factors ``R_t`` stacked in ``s`` one under the other (a vector: a row):
    ``(length * k, n)``, so that ``_left(a) @ _right(b)`` is ``sum_t L_t @ R_t``."""
    if s.ndim == 2:
        return s
    t, k1, k2 = s.shape
    if transposed:
        return F.matrix_transpose(F.reshape(F.transpose(s, (1, 0, 2)), (k1, t * k2)))
    return F.reshape(s, (t * k1, k2))


# -- forward mode -------------------------------------------------------------------------

def scan_forward(n, t: tuple) -> tuple | None:
    """The tangents of every result of scan call ``n`` (None where zero) for tangents
    ``t`` of its operands: one scan of primal and tangent, whose body has the stacked
    nodes as further per-step results (:meth:`~symgrad.ops.loops.ScanParts.as_ys`)."""
    attrs = n.attrs
    parts = ScanParts.of(attrs)
    nc, nx, length, reverse = parts.carries, attrs["xs"], attrs["length"], attrs["reverse"]
    body = parts.as_ys()
    ny = len(body.outputs) - nc
    args = n.args
    given = {i for i, tk in enumerate(t) if tk is not None}
    if not given:
        return None
    i0 = min(given)
    nb = t[i0].ndim - args[i0].ndim
    batch = t[i0].shape[:nb]
    live = tuple(sorted(tangent_closure(body, nc, given)))
    jbody, captured, tc, ty = jvp_step(body, nc, nx, batch, live)
    avals = body.avals()

    def dot(i: int) -> Expr:
        if t[i] is not None:
            return _to_front(t[i], nb) if nc <= i < nc + nx else t[i]
        return zeros(batch + avals[i][0], avals[i][1])

    groups = [range(nc), range(nc, nc + nx), range(nc + nx, len(args))]
    operands: list = []
    for grp in groups:
        operands += [args[i] for i in grp] + [dot(i) for i in grp if i in live]
    operands += captured
    mc = nc + len(tc)
    nxs = nx + sum(1 for i in groups[1] if i in live)
    res = scan_call(n.graph, jbody, mc, nxs, length, reverse, operands)
    carries = [res[nc + tc.index(j)] if j in tc else None for j in range(nc)]
    stacks = [_from_front(res[mc + ny + ty.index(j)], nb) if j in ty else None
              for j in range(ny)]
    return (*carries, *stacks)


define_rules("scan", backprop=scan_backprop, forward=scan_forward)

__all__ = ["scan_backprop", "scan_forward"]
