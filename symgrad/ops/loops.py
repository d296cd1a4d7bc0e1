"""The loop op ``scan``: ``jax.lax.scan``'s meaning, with a traced body of its own.

One scan is one call; each of its results is a node of its own, selected by attribute
``out`` (the other attributes and the operands are the same, so the nodes of one call are
found by hash-consing). With ``nc`` carries and ``ny`` per-step results the parts are:

* ``out < nc``: the final carry ``out``;
* ``nc <= out < nc + ny``: per-step result ``out - nc``, stacked (``(length,) + shape``);
* ``nc + ny <= out < 2 * nc + ny``: the carry *entering* each step, stacked (what reverse
  mode reads);
* ``2 * nc + ny <= out``: the value of the body's node ``out - 2 * nc - ny`` at each step,
  stacked: a *residual*, a value of the step that the reverse step reads instead of
  computing it again (:func:`saved_nodes`).

Operands: the ``nc`` initial carries, the ``xs`` scanned arrays (leading axis ``length``),
then the values the body captured. Attributes: ``body`` (a :class:`~symgrad.ir.body.Body`),
``carries``, ``xs``, ``length``, ``reverse``, ``out``.

Derivatives are scans too, built from the body's own derivative graphs: forward mode scans
primal and tangent together; reverse mode scans the body's VJP backwards over the stored
carries and residuals (the step's values its VJP reads that cost more than a flop per
element; the cheap ones it computes again from them), the adjoints of the captured values
summed in its carry, or, where a step's contribution is a product of per-step values
(``outer(dz, h)``, ``h.T @ dz``), as one matrix product of their stacks after the loop.
So ``hvp`` and Hessians compose.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (c * x, None), 1.0, length=3)   # x**3
>>> sg.evaluate([c, sg.grad(c, x)], {"x": 2.0})
[8.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

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
    base = 2 * nc + ny
    nodes = body.graph.nodes
    if not 0 <= out < base + len(nodes) or (out >= base and nodes[out - base].is_var):
        raise ShapeError(f"scan: no result {out} (results 0 to {base - 1}, then {base} + a "
                         "body node that is not an input)")
    if out >= base:
        s, d = body.avals([out - base])[0]
        return (length, *s), d
    if out < nc:
        return results[out]
    if out < nc + ny:
        s, d = results[out]
        return (length, *s), d
    s, d = want[out - nc - ny]
    return (length, *s), d


# -- evaluation ---------------------------------------------------------------------------

_MEMO: ContextVar[list | None] = ContextVar("symgrad_scan_memo", default=None)
MEMO_CALLS = 4  # the scan calls one evaluation remembers (the latest first)


@contextmanager
def one_evaluation() -> Iterator[None]:
    """Within it, the results of one scan call (the same body and attributes, the same
    operand *objects*) come from one run of its loop, whichever result is asked first.

    For a pass that never writes to a value in place while it runs (the interpreter's
    ``evaluate``): what it remembers is keyed by the operands' identity and dropped when
    the block ends, so an array the user changes in place between two evaluations is read
    again. Outside such a block every result runs the loop.

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", (2,))
    >>> c, ys = sg.scan(lambda c, _: (c * x, c), x, length=3)
    >>> v = np.array([1.0, 2.0])
    >>> [a.tolist() for a in sg.evaluate([c, ys], {"x": v})]
    [[1.0, 16.0], [[1.0, 2.0], [1.0, 4.0], [1.0, 8.0]]]
    """
    token = _MEMO.set([])
    try:
        yield
    finally:
        _MEMO.reset(token)


def _sg_scan(*arrays, body, carries, xs, length, reverse, out):
    """Result ``out`` of the scan. Within :func:`one_evaluation` the last few calls are
    remembered with their operand objects, so the several results of one scan run its loop
    once (stacking every residual reverse mode has asked of the body, :func:`saved_nodes`)."""
    base = carries + len(body.outputs)
    if out >= base:
        save_nodes(body, [out - base])
    saved = saved_nodes(body)
    key = (body, carries, xs, length, reverse, saved)
    memo = _MEMO.get()
    results = None if memo is None else next(
        (r for k, ops, r in memo if k == key and all(a is b for a, b in zip(ops, arrays))),
        None)
    if results is None:
        results = run_scan(body, carries, xs, length, reverse, arrays, saved)
        if memo is not None:  # the operands are kept: their ids are not reused meanwhile
            memo.insert(0, (key, arrays, results))
            del memo[MEMO_CALLS:]
    return results[out if out < base else base + saved.index(out - base)]


def run_scan(body: Body, nc: int, nx: int, length: int, reverse: bool,
             arrays: Sequence[Any], saved: Sequence[int] = ()) -> list[np.ndarray]:
    """Every result of a scan over ``arrays`` (the operands), by running the body: the
    final carries, the ys, the carries entering each step, then the values of the body's
    nodes ``saved`` at each step."""
    arrays = [np.asarray(a) for a in arrays]
    carry = arrays[:nc]
    xs, consts = arrays[nc:nc + nx], arrays[nc + nx:]
    ny = len(body.outputs) - nc
    body = body.with_outputs(saved)
    ys = [np.empty((length, *s), d) for s, d in body.avals(body.outputs[nc:])]
    stored = [np.empty((length, *s), d) for s, d in body.avals()[:nc]]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    with np.errstate(all="ignore"):
        for t in steps:
            for j in range(nc):
                stored[j][t] = carry[j]
            res = body.run([*carry, *(x[t] for x in xs), *consts])
            carry = res[:nc]
            for j in range(len(ys)):
                ys[j][t] = res[nc + j]
    return [*(np.array(c) for c in carry), *ys[:ny], *stored, *ys[ny:]]


def saved_nodes(body: Body) -> tuple[int, ...]:
    """The body's nodes whose per-step values reverse mode has asked to be stacked (scan
    results ``2 * nc + ny + node``), ascending: the residuals of its VJPs so far."""
    return tuple(sorted(body.derived.get("saved", ())))


def save_nodes(body: Body, ids: Sequence[int]) -> None:
    """Ask for the per-step values of the body's nodes ``ids`` (see :func:`saved_nodes`)."""
    body.derived.setdefault("saved", set()).update(ids)


def as_ys(body: Body, nc: int, parts: Sequence[int]) -> tuple[Body, tuple[int, ...]]:
    """A scan's results ``parts`` as results of a scan of the same operands whose body has
    the residuals among them as further per-step results (after its own ys): that body
    and the parts renumbered. The loop printers and forward mode see only ys."""
    ny = len(body.outputs) - nc
    base = 2 * nc + ny
    extra = tuple(sorted({p - base for p in parts if p >= base}))
    if not extra:
        return body, tuple(parts)
    k = len(extra)
    return body.with_outputs(extra), tuple(
        p if p < nc + ny else p + k if p < base else nc + ny + extra.index(p - base)
        for p in parts)


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

class VjpPlan(NamedTuple):
    """How the backward step built by :mod:`symgrad.transforms.loops` is fed and read.

    ``residuals``: the body's nodes whose per-step values it takes (after the seeds);
    ``carried``: the captured values (indices among them) whose adjoints its carry sums;
    ``factors``: how many stacked factors it gives after the ``xbar``; ``products``: one
    ``(captured index, ref_a, ta, ref_b, tb)`` per matrix product ``sum_t A_t @ B_t`` (a
    ref is ``("in", j)``: per-step operand ``j``, ``("out", j)``: per-step result ``j``, or
    ``("next", k)``: the values of carry ``chained[k]`` leaving each step);
    ``unread``: the per-step operands it never reads (passed as zeros); ``chained``: the
    carries whose final values start its carries after ``kbar``, each of which holds, at a
    step, a residual that is that carry's new value (the carry the forward loop stored
    for the step after; see ``_chained`` in :mod:`symgrad.transforms.loops`)."""

    residuals: tuple[int, ...]
    carried: tuple[int, ...]
    factors: int
    products: tuple
    unread: frozenset
    chained: tuple[int, ...] = ()


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
    base = 2 * nc + ny
    seeded = tuple(("y", p - nc) if p < nc + ny else ("stored", p - nc - ny) if p < base
                   else ("saved", p - base) for p in later)
    vbody, captured, plan = _derived("vjp")(body, nc, nx, batch, seeded, wrt_x, wrt_k, length)
    nr = len(plan.residuals)
    ys = {o: nc + i for i, o in reversed(list(enumerate(body.outputs[nc:])))}
    # a residual that is a per-step result is that result's stack (not stacked twice)
    parts = [*range(nc + ny, base), *(ys.get(r, base + r) for r in plan.residuals),
             *plan.chained]
    forward = scan_nodes(n.graph, body, nc, nx, length, reverse, args, parts)
    steps = [*forward[:nc], *args[nc:nc + nx], *(_to_front(seeds[p], nb) for p in later),
             *forward[nc:nc + nr]]
    steps = [_zeros(s.shape, s.dtype) if k in plan.unread else s for k, s in enumerate(steps)]
    init = [seeds[j] if j in seeds else _zeros(batch + avals[j][0], avals[j][1]) for j in fc]
    init += [_zeros(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in plan.carried]
    init += forward[nc + nr:]
    operands = [*init, *steps, *args[nc + nx:], *captured]
    m = len(init)
    res = scan_nodes(n.graph, vbody, m, len(steps), length, not reverse, operands,
                     range(m + len(wrt_x) + plan.factors))
    contrib: list = [None] * len(args)
    for j, r in zip(fc, res):
        if n.needs(j):
            contrib[j] = r
    for c, r in zip(plan.carried, res[len(fc):m]):
        contrib[nc + nx + c] = r
    for i, r in zip(wrt_x, res[m:]):
        contrib[nc + i] = _from_front(r, nb)
    stored = {j: forward[j] for j in plan.chained}
    finals = dict(zip(plan.chained, forward[nc + nr:]))

    def stack(kind: str, j: int) -> Expr | tuple[Expr, Expr]:
        if kind == "next":
            j = plan.chained[j]
            return stored[j] if length == 0 else (stored[j], finals[j])
        return steps[j] if kind == "in" else res[m + j]

    for c, ref_a, ta, ref_b, tb in plan.products:
        term = _product(stack(*ref_a), ta, stack(*ref_b), tb, reverse)
        k = nc + nx + c
        contrib[k] = term if contrib[k] is None else contrib[k] + term
    return tuple(contrib)


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


def product_terms(a: Expr) -> tuple[list[tuple[Expr, Expr, bool, Expr, bool]], list[Expr]]:
    """``a`` as a sum: its terms that are products of two matrices ``A @ B`` (``A`` or
    ``B`` perhaps a ``matrix_transpose``: ``(term, A, ta, B, tb)`` with the transposes taken
    off) or ``outer(a, b)`` (two vectors, flags False), and the other terms."""
    products, rest = [], []
    stack = [a]
    while stack:
        e = stack.pop()
        args = [Expr(e.graph, a) for a in e.data.args]
        if e.op == "add" and all(x.shape == e.shape for x in args):
            stack += reversed(args)
        elif e.op == "outer" and args[0].ndim == args[1].ndim == 1:
            products.append((e, args[0], False, args[1], False))
        elif e.op == "matmul" and args[0].ndim == args[1].ndim == 2:
            (x, tx), (y, ty) = (_untransposed(v) for v in args)
            products.append((e, x, tx, y, ty))
        else:
            rest.append(e)
    return products, rest


def _untransposed(e: Expr) -> tuple[Expr, bool]:
    return (Expr(e.graph, e.data.args[0]), True) if e.op == "matrix_transpose" else (e, False)


def _part_ndim(n, part: int) -> int:
    """The number of axes of result ``part`` of the scan ``n``."""
    body, nc, _, ny = _layout(n.attrs)
    if part < nc:
        return len(body.avals()[part][0])
    if part < nc + ny:
        return 1 + len(body.avals([body.outputs[part]])[0][0])
    if part < 2 * nc + ny:
        return 1 + len(body.avals()[part - nc - ny][0])
    return 1 + len(body.avals([part - 2 * nc - ny])[0][0])


# -- forward mode -------------------------------------------------------------------------

def _residuals_as_ys(body: Body, nc: int, ny: int, out: int) -> tuple[Body, int]:
    """The body with every residual asked of it as a further y, and result ``out``
    renumbered for it (:func:`as_ys`): the tangents of one scan's results, residuals
    included, come from one scan."""
    base = 2 * nc + ny
    if out >= base:
        save_nodes(body, [out - base])
    saved = saved_nodes(body)
    if not saved:
        return body, out
    body2, parts = as_ys(body, nc, [*(base + r for r in saved), out])
    return body2, parts[-1]


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
    body, out = _residuals_as_ys(body, nc, ny, out)
    ny = len(body.outputs) - nc
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

__all__ = ["SCAN", "VjpPlan", "as_ys", "loop_calls", "one_evaluation", "product_terms",
           "run_scan", "save_nodes", "saved_nodes"]
