"""The derivatives of a call with a custom rule (the ``custom_vjp_call`` and
``custom_jvp_call`` ops, :mod:`symgrad.ops.custom`), built from the user's rule:

* reverse mode of ``custom_vjp``: ``bwd(fwd(x)[1], g)``; forward mode: the transpose of
  ``bwd`` in ``g`` (refused when ``bwd`` is not linear in ``g``: JAX refuses it always);
* forward mode of ``custom_jvp``: ``jvp(x, t)``; reverse mode: its transpose in ``t``
  (refused when the rule is not linear in the tangents, as JAX does).

Seeds and tangents may carry leading batch axes (``jacrev``, ``jacfwd``, ``hessian``) while
a user's rule is written for one row: :func:`vmapped` maps it over them, in one vectorised
pass when the rule is affine in what is mapped (its forward-mode derivative, which batch
axes pass through, does not depend on it), else in a loop (a ``scan`` over the rows).
Transposition is a reverse pass over the rule's graph, traced as a body of its own
(:func:`symgrad.ir.body.trace`), whose seeds may carry batch axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError
from ..ir.body import Body, scan_call, trace
from ..ir.custom import CustomRule
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY, RESULT, define_rules
from ..ir.shapes import fmt, is_float
from .forward import tangents_inside
from .loop_steps import multi_vjp
from .reverse import adjoint_rewriting

Aval = tuple[tuple[int, ...], str]


def _zeros(graph: Graph, shape: tuple, dtype: str) -> Expr:
    zero = Expr(graph, graph.const(np.zeros((), dtype)))
    return zero if shape == () else F.broadcast_to(zero, shape)


def _in(graph: Graph, e: Any, shape: tuple, dtype: str) -> Expr:
    """A rule's value as an Expr of ``graph`` (None: zeros)."""
    if e is None:
        return _zeros(graph, shape, dtype)
    if not isinstance(e, Expr):
        e = Expr(graph, graph.const(np.asarray(e, dtype)))
    elif e.graph is not graph:
        e = Expr(graph, graph.find(e))
    return e if e.dtype == dtype else F.astype(e, dtype)


def _refuse_captured(rule: CustomRule, captured: Sequence[bool], how: str) -> None:
    if any(captured):
        raise DifferentiationError(
            f"{how} through {rule.name} (sg.custom_{rule.kind}): the function closes over a "
            "traced value that is being differentiated, and its rule gives no derivative "
            f"for it; pass that value to {rule.name} as an argument (its rule then returns "
            "its derivative)")


# -- reverse mode -------------------------------------------------------------------------

def custom_backprop(n, g: tuple) -> tuple:
    """The contributions to the operands of custom call ``n`` for ``g``, the adjoints of
    its results (None where a result has none): the rule's, never the primal's."""
    rule: CustomRule = n.attrs["rule"]
    graph = n.graph
    m, k = rule.n_out, rule.n_in
    ys, xs, caps = rule.parts(n.args)
    _refuse_captured(rule, [n.needs(m + k + j) and is_float(c.dtype)
                            for j, c in enumerate(caps)], "reverse mode")
    seeds = {j: gj for j, gj in enumerate(g) if gj is not None}
    some = next(iter(seeds))
    nb = seeds[some].ndim - ys[some].ndim
    batch = seeds[some].shape[:nb]
    wanted = [i for i in range(k) if n.needs(m + i) and is_float(xs[i].dtype)]
    contrib: list = [None] * len(n.args)
    if not wanted:
        return tuple(contrib)
    fy = [j for j in range(m) if is_float(ys[j].dtype)]
    cots = [seeds.get(j) for j in fy]
    if rule.kind == "vjp":
        res = rule.fwd(xs)

        def pull(*gs: Expr) -> list[Expr]:
            full: list = [None] * m
            for j, gj in zip(fy, gs):
                full[j] = gj
            home = gs[0].graph
            for j in range(m):
                if full[j] is None:
                    full[j] = _zeros(home, ys[j].shape, ys[j].dtype)
            out = rule.bwd(res, full)
            return [_in(home, out[i], xs[i].shape, xs[i].dtype) for i in wanted]

        cots = [_in(graph, c, batch + ys[j].shape, ys[j].dtype) for j, c in zip(fy, cots)]
        avals = [(ys[j].shape, ys[j].dtype) for j in fy]
        bars = pull(*cots) if nb == 0 else vmapped(pull, avals, cots, nb)
    else:
        def push(*ts: Expr) -> list[Expr]:
            return _push(rule, xs, ys, wanted, ts, fy)

        avals = [(xs[i].shape, xs[i].dtype) for i in wanted]
        bars = transposed(push, avals, cots, nb, batch, lambda: (
            f"reverse mode through {rule.name} (sg.custom_jvp) transposes its JVP rule, "
            "which must be linear in the tangents (as in JAX); it is not: write the rule "
            f"linear in the tangents, or define {rule.name} with sg.custom_vjp"))
    for i, b in zip(wanted, bars):
        contrib[m + i] = b
    return tuple(contrib)


def _push(rule: CustomRule, xs: list[Expr], ys: list[Expr], given: list[int],
          ts: Sequence[Expr], fy: list[int]) -> list[Expr]:
    """The JVP rule's tangents of the float results, for tangents ``ts`` of inputs
    ``given`` (zeros for the others)."""
    home = ts[0].graph
    full = [_zeros(home, x.shape, x.dtype if is_float(x.dtype) else "float64") for x in xs]
    for i, t in zip(given, ts):
        full[i] = t
    out = rule.jvp(xs, full)
    return [_in(home, out[j], ys[j].shape, ys[j].dtype) for j in fy]


# -- forward mode -------------------------------------------------------------------------

def custom_forward(n, t) -> tuple | None:
    """The tangents of the results of custom call ``n`` (None where zero) for tangents
    ``t`` of its operands: the rule's."""
    rule: CustomRule = n.attrs["rule"]
    m, k = rule.n_out, rule.n_in
    ys, xs, caps = rule.parts(n.args)
    ty, tx, tc = rule.parts(t)
    _refuse_captured(rule, [tj is not None for tj in tc], "forward mode")
    given = [i for i in range(k) if tx[i] is not None and is_float(xs[i].dtype)]
    fy = [j for j in range(m) if is_float(ys[j].dtype)]
    if not given or not fy:
        return None
    nb = tx[given[0]].ndim - xs[given[0]].ndim
    batch = tx[given[0]].shape[:nb]
    values = [tx[i] for i in given]
    if rule.kind == "jvp":
        def push(*ts: Expr) -> list[Expr]:
            return _push(rule, xs, ys, given, ts, fy)

        avals = [(xs[i].shape, xs[i].dtype) for i in given]
        outs = push(*values) if nb == 0 else vmapped(push, avals, values, nb)
    else:
        res = rule.fwd(xs)

        def pull(*gs: Expr) -> list[Expr]:
            home = gs[0].graph
            full = [_zeros(home, y.shape, y.dtype) for y in ys]
            for j, gj in zip(fy, gs):
                full[j] = gj
            got = rule.bwd(res, full)
            return [_in(home, got[i], xs[i].shape, xs[i].dtype) for i in given]

        avals = [(ys[j].shape, ys[j].dtype) for j in fy]
        outs = transposed(pull, avals, values, nb, batch, lambda: (
            f"forward mode (jvp, jacfwd, hessian) through {rule.name} (sg.custom_vjp) "
            "transposes its bwd rule, which is not linear in the cotangent (JAX refuses "
            "forward mode through custom_vjp always): use reverse mode (sg.grad, "
            f"sg.jacrev, sg.jacrev(sg.jacrev(f)) for a Hessian), or define {rule.name} "
            "with sg.custom_jvp"))
    return tuple(outs[fy.index(j)] if j in fy else None for j in range(m))


# -- mapping a rule over batch axes, transposing a linear rule ------------------------------

def _depends(body: Body, inputs: range) -> bool:
    """Whether the body's results use any of its inputs ``inputs``."""
    used = set(body.graph.ancestors(list(body.outputs)))
    return any(body.inputs[i] in used for i in inputs)


def vmapped(fn: Callable[..., list[Expr]], avals: list[Aval], values: list[Expr],
            nb: int) -> list[Expr]:
    """``fn`` (written for one row: inputs of ``avals``) applied to every row of
    ``values`` (each with ``nb`` leading batch axes), stacked on those axes.

    Affine ``fn`` (``fn(t) = A t + b``): ``b + A t`` in one pass, ``A t`` by forward mode
    with the batched values as tangents (every rule accepts leading batch axes). Otherwise
    a ``scan`` over the rows (JAX's ``vmap`` of a rule, one row at a time)."""
    batch = values[0].shape[:nb]
    graph = values[0].graph
    values = [v if v.shape == batch + s else F.broadcast_to(v, batch + s)
              for v, (s, _) in zip(values, avals)]
    body, captured = trace(lambda *v: list(fn(*v)), avals)
    outs = body.avals(body.outputs)
    k = len(avals)

    def linear(*v: Expr) -> list[Expr]:
        ts, dots = list(v[:k]), list(v[k:])
        res = body.inline([*ts, *captured])
        home = ts[0].graph
        with adjoint_rewriting(home, True):
            rec = tangents_inside(res, ts, dots)
        tan = [rec.tangent_of.get(r.node) for r in res]
        return [_zeros(home, batch + s, d) if t is None else Expr(home, t)
                for t, (s, d) in zip(tan, outs)]

    lbody, lcaptured = trace(linear, [*avals, *[(batch + s, d) for s, d in avals]])
    zeros = [_zeros(graph, s, d) for s, d in avals]
    if not _depends(lbody, range(k)):
        moved = lbody.inline([*zeros, *values, *lcaptured])
        at_zero = body.inline([*zeros, *captured])
        return [a + b for a, b in zip(at_zero, moved)]
    rows = math.prod(batch)
    flat = [F.reshape(v, (rows, *s)) for v, (s, _) in zip(values, avals)]
    stacked = scan_call(graph, body, 0, k, rows, False, [*flat, *captured])
    return [F.reshape(y, batch + s) for y, (s, _) in zip(stacked, outs)]


def transposed(fn: Callable[..., list[Expr]], avals: list[Aval], cots: list[Expr | None],
               nb: int, batch: tuple, refusal: Callable[[], str]) -> list[Expr]:
    """The transpose of the linear ``fn`` (inputs of ``avals``) applied to ``cots`` (one
    per result of ``fn``, None for zero, each with ``nb`` leading batch axes ``batch``):
    a reverse pass over ``fn``'s graph. A ``fn`` that is not linear is refused with
    ``refusal()``'s message."""
    graph = next(c.graph for c in cots if c is not None)
    body, captured = trace(lambda *v: list(fn(*v)), avals)
    outs = body.avals(body.outputs)
    pick = [j for j, c in enumerate(cots) if c is not None and is_float(outs[j][1])]
    k = len(avals)
    if not pick:
        return [_zeros(graph, batch + s, d) for s, d in avals]

    def pull(*v: Expr) -> list[Expr]:
        ts, cs = list(v[:k]), list(v[k:])
        res = body.inline([*ts, *captured])
        home = ts[0].graph
        adj = multi_vjp([(res[j], c) for j, c in zip(pick, cs)], ts)
        return [_zeros(home, batch + s, d) if a is None else a for a, (s, d) in zip(adj, avals)]

    tbody, tcaptured = trace(pull, [*avals, *[(batch + outs[j][0], outs[j][1]) for j in pick]])
    if _depends(tbody, range(k)):
        raise DifferentiationError(refusal())
    zeros = [_zeros(graph, s, d) for s, d in avals]
    seeds = []
    for j in pick:
        c = cots[j]
        want = batch + outs[j][0]
        if c.shape != want:
            raise DifferentiationError(f"a custom rule's seed has shape {fmt(c.shape)}, "
                                       f"expected {fmt(want)}")
        seeds.append(c)
    return tbody.inline([*zeros, *seeds, *tcaptured])


# -- what the next transform sees -----------------------------------------------------------

def as_differentiated(outputs: Sequence[Expr], wrt: Sequence[Expr]) -> list[Expr]:
    """A transform's results as the next transform sees them: each custom call that
    depends on ``wrt`` (the calls the transform differentiated by their rule) replaced by
    its rule's primal (``fwd``'s output, the JVP rule's primal output).

    This is JAX's meaning: a rule is used by the innermost transform through the call, and
    outer transforms differentiate the rule's code (``clip_gradient``'s ``fwd`` returns
    ``x``: grad of grad sees ``x``, not a second clipping). A rule whose primal calls the
    function itself (``fwd = lambda x: (f(x), ...)``) keeps the call, and its rule, there.
    Nothing changes without custom calls."""
    if not outputs or not wrt:
        return list(outputs)
    graph = outputs[0].graph
    ids = [graph.find(o) for o in outputs]
    order = graph.ancestors(ids)
    nodes = graph.nodes
    calls = {i for i in order if isinstance(nodes[i].attrs.get("rule"), CustomRule)}
    if not calls:
        return list(outputs)
    on_path = graph.descendants([graph.find(w) for w in wrt], order)
    memo: dict[int, int] = {}
    primals: dict[tuple, list] = {}
    for i in order:
        n = nodes[i]
        call = n.args[0] if n.op == RESULT else None
        if call in calls and call in on_path:
            c = nodes[call]
            rule = c.attrs["rule"]
            args = tuple(memo.get(a, a) for a in c.args)
            got = primals.get((args, rule))
            if got is None:
                _, xs, _ = rule.parts([Expr(graph, a) for a in args])
                got = primals[(args, rule)] = rule.primal(xs)
            memo[i] = _in(graph, got[n.attrs["index"]], n.shape, n.dtype).node
        elif i not in calls and any(a in memo for a in n.args):
            memo[i] = graph.add(REGISTRY[n.op], tuple(memo.get(a, a) for a in n.args),
                                n.attrs)
    return [Expr(graph, memo.get(i, i)) for i in ids]


for _name in ("custom_vjp_call", "custom_jvp_call"):
    define_rules(_name, backprop=custom_backprop, forward=custom_forward)

__all__ = ["as_differentiated", "custom_backprop", "custom_forward", "transposed", "vmapped"]
