"""The derivative bodies of a loop step (for the ``scan`` op's rules,
:mod:`symgrad.transforms.loops`): the step's VJP and JVP, each traced as a body of its own
with the transforms of this folder run on the step's graph.

A derived body is remembered by the step body (:meth:`~symgrad.ir.body.Body.memo`), keyed
by what was asked: the batch axes of the seeds, which results are seeded, which inputs need
adjoints.

The backward step reads the forward step's *residuals* rather than computing them again:
of the forward values its adjoint code reads, those that vary by step and cost more than a
flop per element (``exp``, ``tanh``, a division, a reduction, a matrix product; the cost
model of :mod:`symgrad.passes.cost`); a cheaper one (``1 + e``, a slice) is computed again
from its operands, chosen by the same rule. The forward scan stacks them (its call's
``stacked`` nodes, :class:`~symgrad.ops.loops.ScanParts`). A captured value's adjoint that
is a sum of products of per-step values (``outer(dz, h)``, ``h.T @ dz``: a weight read by
every step) is not summed in the backward loop's carry: the loop gives the factors stacked
and one matrix product sums them after it, unless the stacks it adds would pass
:data:`STACK_ELEMENTS` elements (then the carry sums them step by step, in memory the size
of the value).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ..base.errors import SymgradError
from ..ir.body import Body, trace
from ..ir.expr import TRACES, Expr, F
from ..ir.op import REGISTRY, RESULT
from ..ir.shapes import is_float
from ..ops.products import product_terms
from ..passes.adjoint_cleanup import sum_contributions
from ..passes.cost import node_cost
from .forward import tangents_inside
from .reverse import adjoint_rewriting, backprop_inside

STACK_ELEMENTS = 1 << 22  # the most elements of stacked factors a loop adds (32 MiB f64)


class VjpPlan(NamedTuple):
    """How the backward step of :func:`vjp_step` is fed and read.

    ``residuals``: the body's nodes whose per-step values it takes (after the seeds);
    ``carried``: the captured values (indices among them) whose adjoints its carry sums;
    ``factors``: how many stacked factors it gives after the ``xbar``; ``products``: one
    ``(captured index, ref_a, ta, ref_b, tb)`` per matrix product ``sum_t A_t @ B_t`` (a
    ref is ``("in", j)``: per-step operand ``j``, ``("out", j)``: per-step result ``j``, or
    ``("next", k)``: the values of carry ``chained[k]`` leaving each step);
    ``unread``: the per-step operands it never reads (passed as zeros); ``chained``: the
    carries whose final values start its carries after ``kbar``, each of which holds, at a
    step, a residual that is that carry's new value (the carry the forward loop stored
    for the step after; see :func:`_chained`)."""

    residuals: tuple[int, ...]
    carried: tuple[int, ...]
    factors: int
    products: tuple
    unread: frozenset
    chained: tuple[int, ...] = ()


def zeros(shape: tuple, dtype: str) -> Expr:
    """Zeros of ``shape`` and ``dtype`` (a broadcast 0-d constant)."""
    return F.broadcast_to(F.zeros((), dtype=dtype), shape)


def vjp_step(body: Body, nc: int, nx: int, batch: tuple, seeded: tuple, wrt_x: tuple,
              wrt_k: tuple, length: int) -> tuple[Body, list[Any], VjpPlan]:
    """The backward step: carries ``(cbar of float carries..., kbar of plan.carried...)``,
    per step ``(carry-in..., x..., seeds..., residuals...)``, then the captured values
    ``k``; results the new carries, ``xbar`` of ``wrt_x``, then the stacked factors of the
    captured values' adjoints (:class:`VjpPlan`). ``seeded``:
    ``("y", j)`` / ``("stored", j)`` / ``("saved", node)``.

    Built twice: once to see which of the step's values the backward part reads
    (:func:`_residuals`) and which adjoints are sums of products, then with those values
    as per-step operands in place of the forward nodes that computed them."""
    key = ("vjp", nc, nx, batch, seeded, wrt_x, wrt_k, length)
    return body.memo(key, lambda: _vjp_build(body, nc, nx, batch, seeded, wrt_x, wrt_k,
                                             length))


def _vjp_build(body: Body, nc: int, nx: int, batch: tuple, seeded: tuple, wrt_x: tuple,
               wrt_k: tuple, length: int) -> tuple[Body, list[Any], VjpPlan]:
    step = _Step(body, nc, nx, batch, seeded, wrt_x, wrt_k, length)
    trace(step.plan, step.inputs((), (), ()))
    vbody, captured = trace(step.build, step.inputs(step.residuals, step.carried,
                                                     step.chained))
    factors = {ref[1] for p in step.products for ref in (p[1], p[3]) if ref[0] == "in"}
    first = len(step.fc) + len(step.carried) + len(step.chained)
    unread = frozenset(j for j in range(nc + nx + len(seeded) + len(step.residuals))
                       if j not in factors and _unread(vbody, first + j))
    plan = VjpPlan(step.residuals, step.carried, step.factors, tuple(step.products),
                   unread, tuple(j for _, j in step.chained))
    return vbody, captured, plan


class _Step:
    """The backward step of one body, for :func:`vjp_step`."""

    def __init__(self, body: Body, nc: int, nx: int, batch: tuple, seeded: tuple,
                 wrt_x: tuple, wrt_k: tuple, length: int) -> None:
        self.body, self.nc, self.nx, self.batch = body, nc, nx, batch
        self.seeded, self.wrt_x, self.wrt_k, self.length = seeded, wrt_x, wrt_k, length
        avals = body.avals()
        self.fc = [j for j in range(nc) if is_float(avals[j][1])]
        self.residuals: tuple[int, ...] = ()
        self.chained: tuple[tuple[int, int], ...] = ()  # (node, carry): read from a carry
        self.carried: tuple[int, ...] = wrt_k
        self.factors = 0
        self.products: list[tuple] = []

    def inputs(self, residuals: tuple, carried: tuple, chained: tuple) -> list:
        body, nc, nx, batch = self.body, self.nc, self.nx, self.batch
        avals = body.avals()
        outs = body.avals(body.outputs)
        seeds = [outs[nc + j] if kind == "y" else avals[j] if kind == "stored"
                 else body.avals([j])[0] for kind, j in self.seeded]
        return ([(batch + avals[j][0], avals[j][1]) for j in self.fc]
                + [(batch + avals[nc + nx + c][0], avals[nc + nx + c][1]) for c in carried]
                + [avals[j] for _, j in chained] + avals[:nc + nx]
                + [(batch + s, d) for s, d in seeds] + body.avals(residuals) + avals[nc + nx:])

    def _adjoints(self, cbar: tuple, primal: tuple, sbar: tuple, k: tuple
                  ) -> tuple[dict, list, list]:
        """The forward step inlined (body node -> node) and the adjoints of the carries
        (summed with the stored seeds), of ``wrt_x`` and of ``wrt_k`` (None: none)."""
        body, nc, fc, batch = self.body, self.nc, self.fc, self.batch
        avals = body.avals()
        graph, memo = body.inline_map([*primal, *k])
        res = [Expr(graph, memo[o]) for o in body.outputs]
        pairs = [(res[j], g) for j, g in zip(fc, cbar)]
        for (kind, j), g in zip(self.seeded, sbar):
            if kind == "y":
                pairs.append((res[nc + j], g))
            elif kind == "saved":
                pairs.append((Expr(graph, memo[j]), g))
        wrt = ([primal[j] for j in fc] + [primal[nc + i] for i in self.wrt_x]
               + [k[c] for c in self.wrt_k])
        adj = [None if a is None else _here(a) for a in multi_vjp(pairs, wrt)]
        new_c = []
        for j, a in zip(fc, adj):
            extra = [g for (kind, jj), g in zip(self.seeded, sbar)
                     if kind == "stored" and jj == j]
            terms = [t for t in (a, *extra) if t is not None]
            new_c.append(sum(terms[1:], terms[0]) if terms
                         else zeros(batch + avals[j][0], avals[j][1]))
        xbar = [zeros(batch + avals[nc + i][0], avals[nc + i][1]) if a is None else a
                for i, a in zip(self.wrt_x, adj[len(fc):len(fc) + len(self.wrt_x)])]
        return memo, [_here(e) for e in (*new_c, *xbar)], adj[len(fc) + len(self.wrt_x):]

    def _split(self, adj_k: list, per_step: list[Expr]) -> tuple[list, list]:
        """The adjoints of ``wrt_k`` as the carried sums ``[(c, expr)]`` and the products
        ``[(c, A, ta, B, tb)]`` summed after the loop (factors varying by step, no batch
        axes, within :data:`STACK_ELEMENTS`)."""
        carried, products = [], []
        graph = TRACES.graphs[-1]
        varying = graph.descendants([e.node for e in per_step], graph.ancestors(
            [a.node for a in adj_k if a is not None]))
        room = STACK_ELEMENTS
        for c, a in zip(self.wrt_k, adj_k):
            if a is None:
                carried.append((c, None))
                continue
            found, rest = product_terms(a) if not self.batch else ([], [a])
            for term, a_, ta, b_, tb in found:
                size = self.length * (math.prod(a_.shape) + math.prod(b_.shape))
                if a_.node in varying and b_.node in varying and size <= room:
                    room -= size
                    products.append((c, a_, ta, b_, tb))
                else:
                    rest.append(term)
            if rest:
                carried.append((c, sum(rest[1:], rest[0])))
        return carried, products

    def _unpack(self, v: tuple, residuals: tuple, carried: tuple, chained: tuple) -> tuple:
        """The step's inputs as ``(cbar, kbar, nxt, primal, sbar, residuals, k)``."""
        groups, at = [], 0
        for n in (len(self.fc), len(carried), len(chained), self.nc + self.nx,
                  len(self.seeded), len(residuals)):
            groups.append(v[at:at + n])
            at += n
        return (*groups, v[at:])

    def plan(self, *v: Expr) -> list[Expr]:
        """The first build: which residuals to take and which adjoints are carried."""
        cbar, _, _, primal, sbar, _, k = self._unpack(v, (), (), ())
        memo, outs, adj_k = self._adjoints(cbar, primal, sbar, k)
        carried, products = self._split(adj_k, [*cbar, *primal[:self.nc + self.nx], *sbar])
        self.carried = tuple(c for c, _ in carried)
        outs += [_here(e) for _, e in carried if e is not None]
        outs += [x for _, a, _, b, _ in products for x in (a, b)]
        residuals = _residuals(self.body, self.nc + self.nx, memo, outs)
        self.chained = _chained(self.body.outputs[:self.nc], residuals)
        self.residuals = tuple(r for r in residuals if r not in dict(self.chained))
        return outs

    def build(self, *v: Expr) -> list[Expr]:
        """The backward step with the residuals read: ``[new carries, new kbar, xbar,
        factors]``."""
        cbar, kbar, nxt, primal, sbar, res, k = self._unpack(v, self.residuals, self.carried,
                                                             self.chained)
        memo, outs, adj_k = self._adjoints(cbar, primal, sbar, k)
        carried, products = self._split(adj_k, [*cbar, *primal[:self.nc + self.nx], *sbar])
        if tuple(c for c, _ in carried) != self.carried:
            raise SymgradError("scan: the backward step changed between its two builds "
                               "(a bug in symgrad; please report it)")
        sums = {c: e for c, e in carried}
        new_k = [kb if sums[c] is None else _here(kb + sums[c])
                 for c, kb in zip(self.carried, kbar)]
        nf = len(self.fc)
        outs = [*outs[:nf], *new_k, *(primal[j] for _, j in self.chained), *outs[nf:]]
        flat = [x for _, a, _, b, _ in products for x in (a, b)]
        graph = TRACES.graphs[-1]
        swap = {memo[r]: e.node for r, e in zip([*self.residuals, *dict(self.chained)],
                                                [*res, *nxt])}
        both = _substitute(graph, [*outs, *flat], swap)
        outs, flat = both[:len(outs)], both[len(outs):]
        ins = {e.node: ("in", j)
               for j, e in enumerate([*primal[:self.nc + self.nx], *sbar, *res])}
        ins.update((e.node, ("next", j)) for j, e in enumerate(nxt))
        ys = len(self.wrt_x)
        first_y = len(outs) - ys
        refs = []
        for e in flat:
            if e.node in ins:
                refs.append(ins[e.node])
                continue
            at = [j for j in range(len(outs) - first_y) if outs[first_y + j].node == e.node]
            if not at:
                outs.append(e)
                at = [len(outs) - 1 - first_y]
            refs.append(("out", at[0]))
        self.factors = len(outs) - first_y - ys
        self.products = [(c, refs[2 * q], ta, refs[2 * q + 1], tb)
                         for q, (c, _, ta, _, tb) in enumerate(products)]
        return outs


def _here(e: Expr) -> Expr:
    """``e`` in the graph being traced (imported there if built in another)."""
    graph = TRACES.graphs[-1]
    return Expr(graph, graph.find(e))


def _residuals(body: Body, per_step: int, memo: dict[int, int], outs: list[Expr]
               ) -> tuple[int, ...]:
    """The body's nodes whose per-step values the backward step should take rather than
    compute: of the step's values it reads (``memo``: body node -> its inlined node), those
    that vary by step and cost more than a flop per element; a cheaper one is computed
    again from its operands, chosen by the same rule. A loop inside the step is computed
    again (never stored: what ``checkpoint=`` asks of its segments). A step of 0-d values
    takes none: over Python floats a libm call costs about what storing and reading back
    a value does."""
    bnodes = body.graph.nodes
    if all(n.shape == () for n in bnodes):
        return ()
    graph = outs[0].graph
    fwd = {g: b for b, g in memo.items()}
    order = graph.ancestors([o.node for o in outs])
    reads = {a for i in order if i not in fwd for a in graph.nodes[i].args if a in fwd}
    reads |= {o.node for o in outs if o.node in fwd}
    bgraph = body.graph
    varying = bgraph.descendants(body.inputs[:per_step], range(len(bnodes)))
    chosen: set[int] = set()
    seen: set[int] = set()
    stack = [fwd[r] for r in reads]
    while stack:
        b = stack.pop()
        if b in seen or b not in varying or bnodes[b].is_var:
            continue
        seen.add(b)
        n = bnodes[b]
        if n.op == RESULT and _cheap(bgraph, n.args[0]):  # a call's result: its call
            stack.append(n.args[0])  # computed again (a loop always), or else stored
        elif n.op != RESULT and (_cheap(bgraph, b) or n.is_call):
            stack += n.args  # (a call read whole, for a result the step does not project,
            # is computed again: a residual is one array)
        else:
            chosen.add(b)
    return tuple(sorted(chosen))


def _chained(carries: tuple[int, ...], residuals: tuple[int, ...]
             ) -> tuple[tuple[int, int], ...]:
    """The residuals that are the new value of a carry (``(node, carry)``; ``carries``:
    the body's carry outputs): the backward step reads each from a carry of its own,
    the carry entering the forward step it ran before (the final carry at first), rather
    than from a second stack of the values the forward loop stores as carries; a product
    after the loop reads the stored carries shifted by one step (``("next", k)``)."""
    return tuple((r, carries.index(r)) for r in residuals if r in carries)


def _cheap(graph: Any, i: int) -> bool:
    """Whether node ``i`` is computed again in the backward step rather than stored."""
    n = graph.nodes[i]
    if isinstance((n.attrs or {}).get("body"), Body):
        return True
    return node_cost(graph, i)[0] <= math.prod(n.shape)


def _substitute(graph: Any, outs: list[Expr], swap: dict[int, int]) -> list[Expr]:
    """``outs`` built again with node ``a`` replaced by ``swap[a]`` wherever used."""
    memo = dict(swap)
    nodes = graph.nodes
    for i in graph.ancestors([o.node for o in outs]):
        if i in memo:
            continue
        n = nodes[i]
        args = tuple(memo.get(a, a) for a in n.args)
        memo[i] = i if args == n.args else graph.add(REGISTRY[n.op], args, n.attrs)
    return [Expr(graph, memo.get(o.node, o.node)) for o in outs]


def _unread(body: Body, k: int) -> bool:
    """Whether the body never reads its input ``k``."""
    v = body.inputs[k]
    return v not in body.outputs and not any(v in n.args for n in body.graph.nodes)


def multi_vjp(pairs: list[tuple[Expr, Expr]], wrt: list[Expr]) -> list[Expr | None]:
    """The adjoints of ``wrt`` for seeds ``pairs`` [(result, seed)], one reverse pass."""
    if not pairs or not wrt:
        return [None] * len(wrt)
    graph = pairs[0][0].graph
    with adjoint_rewriting(graph, True):
        record = backprop_inside(pairs[0][0], wrt, pairs[0][1], sum_contributions, idioms=True,
                           also=pairs[1:])
    return [None if record.adjoint_of.get(w.node) is None
            else Expr(graph, record.adjoint_of[w.node]) for w in wrt]


def jvp_step(body: Body, nc: int, nx: int, batch: tuple, live: tuple
              ) -> tuple[Body, list[Any], list[int], list[int]]:
    """The step of primal and tangent: carries ``(c..., cdot of live carries)``, per step
    ``(x..., xdot of live xs)``, then ``(k..., kdot of live ks)``; results ``(c'..., c'dot,
    y..., ydot of the ys that have one)``. Also returns which carries and ys have tangents."""
    return body.memo(("jvp", nc, nx, batch, live), lambda: _jvp_build(body, nc, nx, batch,
                                                                       live))


def _jvp_build(body: Body, nc: int, nx: int, batch: tuple, live: tuple
               ) -> tuple[Body, list[Any], list[int], list[int]]:
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
                rec = tangents_inside(outs, wrt, dots)
            tan = [rec.tangent_of.get(o.node) for o in outs]
            tan = [None if t is None else Expr(g, t) for t in tan]
        shapes = [avals[j] for j in tc] + body.avals([body.outputs[nc + j] for j in ty])
        tan = [zeros(batch + s, d) if t is None else t for t, (s, d) in zip(tan, shapes)]
        return [*res[:nc], *tan[:len(tc)], *res[nc:], *tan[len(tc):]]

    jbody, captured = trace(step, ins)
    return jbody, captured, tc, ty


__all__ = ["STACK_ELEMENTS", "VjpPlan", "jvp_step", "multi_vjp", "vjp_step", "zeros"]


def tangent_closure(body: Body, nc: int, given: set[int]) -> set[int]:
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
