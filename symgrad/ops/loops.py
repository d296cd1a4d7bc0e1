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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import ShapeError
from ..ir.body import Body, scan_nodes
from ..ir.expr import Expr, F
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt, is_float
from ..ir.values import freeze

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

# The step's own derivative bodies, built by the transforms (they run reverse and forward
# mode on the body graph): filled by :mod:`symgrad.transforms.loops` when it is imported.
DERIVED: dict[str, Callable[..., Any]] = {}


def _derived(kind: str) -> Callable[..., Any]:
    if kind not in DERIVED:
        from importlib import import_module

        import_module("symgrad.transforms")  # registers the builders
    return DERIVED[kind]


def _backprop(n, g):
    """Contributions for adjoints ``g``: a dict ``{result node: adjoint}`` (the results of
    one call with an adjoint, :attr:`~symgrad.ir.op.Op.joint`) or one adjoint of ``n``."""
    body, nc, nx, ny = _layout(n.attrs)
    length, reverse = n.attrs["length"], n.attrs["reverse"]
    nodes = n.graph.nodes
    seeds = {nodes[m].attrs["out"]: gm for m, gm in (g.items() if isinstance(g, dict)
                                                     else [(n.data.id, g)])}
    some = next(iter(seeds))
    nb = seeds[some].ndim - _part_ndim(n, some)
    batch = seeds[some].shape[:nb]
    args = n.args
    avals = body.avals()
    consts = range(nc + nx, len(args))
    wrt_x = tuple(i for i in range(nx) if n.needs(nc + i) and is_float(avals[nc + i][1]))
    wrt_k = tuple(c - nc - nx for c in consts if n.needs(c) and is_float(avals[c][1]))
    fc = [j for j in range(nc) if is_float(avals[j][1])]
    later = sorted(p for p in seeds if p >= nc)
    seeded = tuple(("y", p - nc) if p < nc + ny else ("stored", p - nc - ny) for p in later)
    vbody, captured = _derived("vjp")(body, nc, nx, batch, seeded, wrt_x, wrt_k)
    stored = scan_nodes(n.graph, body, nc, nx, length, reverse, args,
                        range(nc + ny, 2 * nc + ny))
    init = [seeds[j] if j in seeds else _zeros(batch + avals[j][0], avals[j][1]) for j in fc]
    init += [_zeros(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in wrt_k]
    steps = [*stored, *args[nc:nc + nx], *(_to_front(seeds[p], nb) for p in later)]
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


def _part_ndim(n, part: int) -> int:
    """The number of axes of result ``part`` of the scan ``n``."""
    body, nc, _, ny = _layout(n.attrs)
    if part < nc:
        return len(body.avals()[part][0])
    if part < nc + ny:
        return 1 + len(body.avals([body.outputs[part]])[0][0])
    return 1 + len(body.avals()[part - nc - ny][0])


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
    jbody, captured, tc, ty = _derived("jvp")(body, nc, nx, batch, live)
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


def _examples(rng) -> list:
    from ..ir.body import trace

    def step(c, x, k):  # a carry, a per-step input, a captured value
        return [F.sin(c) * x + 0.5 * c * k, c * x - k]

    body, _ = trace(step, [((3,), "float64"), ((3,), "float64"), ((3,), "float64")])
    c, xs, k = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (4, 3)), rng.uniform(0.5, 1.5, 3)
    attrs = {"body": body, "carries": 1, "xs": 1, "length": 4}
    return [([c, xs, k], {**attrs, "out": 0}), ([c, xs, k], {**attrs, "out": 1}),
            ([c, xs, k], {**attrs, "out": 2, "reverse": True})]


def loop_calls(graph, ids) -> int:
    """How many loops (``scan`` calls, the results of one call counted once) the nodes
    ``ids`` and their ancestors hold (loops inside loop bodies not counted)."""
    calls = set()
    for i in graph.ancestors(ids):
        n = graph.nodes[i]
        if n.op == "scan":
            calls.add((n.args, freeze({k: v for k, v in n.attrs.items() if k != "out"})))
    return len(calls)


SCAN = register(Op(
    name="scan", signature=_SIG, infer=_infer, impl=_sg_scan, backprop=_backprop,
    forward=_forward, public=False, domain=None, examples=_examples, joint="out",
    doc="one result of a loop over a traced body (jax.lax.scan's meaning; see sg.scan)",
))

__all__ = ["SCAN", "loop_calls", "run_scan"]
