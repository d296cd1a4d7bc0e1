"""The derivatives of integrator calls (the ``ivp`` op, :mod:`symgrad.ops.solvers`).

An integrator's solution ``y(t)`` of ``y' = f(t, y, theta)`` has

* forward sensitivities ``S' = J_y S + J_theta dtheta``, ``S(t0) = dy0``: an ``ivp`` of the
  augmented system ``[y, S]`` (the tangents, or one column per parameter element for
  reverse mode), solved by SciPy like the original, so they differentiate again;
* the adjoint ``lambda' = -J_y^T lambda``, ``mu' = -J_theta^T lambda`` backwards from the
  last output time, ``lambda`` jumping by the cotangent at each output time, between which
  the forward solution is recomputed from its checkpoint (``ivp_adjoint``): cost
  independent of the number of parameters, for one cotangent.

Reverse mode picks the adjoint when the augmented forward system would be much larger
than the adjoint's (:func:`sensitivity`), or as ``sensitivity=`` says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError
from ..ir.body import Body, scan_call
from ..ir.expr import Expr, F, const
from ..ir.graph import Graph
from ..ir.shapes import is_float
from ..ir.solvers import Call, Solver, stiff
from ..ops.solvers import DERIVED, IVP, IVP_ADJOINT, BodyFunction, _sg_integrate, stacked_scalars
from .forward import tangents_inside
from .implicit import (
    Aval,
    batch_of,
    cached,
    closed,
    gradient_body,
    here,
    jacobian_body,
    one_result,
    zeros,
)
from .loop_steps import multi_vjp
from .reverse import adjoint_rewriting

__all__ = ["examples", "ivp_node", "sensitivity"]


# -- integrators: forward sensitivities and the adjoint -------------------------------------

def sensitivity(call: Call, n: int, p: int, rows: int) -> str:
    """``"forward"`` or ``"adjoint"`` for reverse mode through an ``ivp`` of ``n`` states
    with ``p`` parameter elements wanted and ``rows`` cotangents: the forward system has
    ``n * (1 + p)`` states, the adjoint ``rows * (n + p)`` after a forward pass of ``n``."""
    if call.sensitivity is not None:
        return call.sensitivity
    forward = n * (1 + p)
    return "forward" if forward <= 256 or forward <= 4 * (n + rows * (n + p)) else "adjoint"


def ivp_node(call: Call, fun: Body, operands: Sequence[Expr]) -> Expr:
    """An ``ivp`` node of ``fun`` (its Jacobian given to SciPy where the method uses it)."""
    graph = operands[0].graph
    jac = jacobian_body(fun, 1) if stiff(call) else None
    ids = tuple(graph.find(o) for o in operands)
    return Expr(graph, graph.add(IVP, ids, {"call": call, "fun": fun, "jac": jac}))


SCALAR_STATES = 512  # the most states [y, S] written out as scalars (a list SciPy reads)


def _sensitivity_body(fun: Body, n: int, live: tuple[int, ...], k: int,
                      units: tuple | None = None) -> Body:
    """The augmented right-hand side ``(t, [y, vec(S)], *theta, *theta_dots of live) ->
    [f, vec(J_y S + J_theta theta_dot)]`` for ``k`` tangent directions (``S`` is
    ``(k, n)``; ``live`` indexes the parameters, inputs ``2 +``). With ``units`` (reverse
    mode: one ``(parameter, element)`` per direction, parameter -1 for a direction of
    ``y0``) the parameters' tangents are those unit vectors, built in, and not inputs.

    Where ``f`` stacks scalars (``[a * y[0] - ..., ...]``) and the system is small, each
    direction's tangent is its own forward pass over scalars and the result a stack of
    scalars (a list in emitted code): NumPy's per-call cost on tiny arrays, which a
    batched pass over ``(k, n)`` pays on every op, is what such a system's time is."""
    avals = fun.avals()

    def build() -> Body:
        def rhs(*v: Expr) -> list[Expr]:
            t, big, rest = v[0], v[1], list(v[2:])
            theta, dots = rest[:len(avals) - 2], rest[len(avals) - 2:]
            y = big[:n]
            f = one_result(fun, [t, y, *theta])
            graph = f.graph
            if units is not None and not dots:
                dots = _unit_dots(graph, units, live, [avals[2 + j] for j in live], k)
            if stacked_scalars(graph.nodes, f.data) and n * (1 + k) <= SCALAR_STATES:
                return [F.stack(_scalar_parts(f, big, theta, dots, live, units, n, k))]
            s = F.reshape(big[n:], (k, n))
            with adjoint_rewriting(graph, True):
                tan = tangents_inside([f], [y, *[theta[j] for j in live]], [s, *dots])
            d = tan.tangent_of.get(f.node)
            d = zeros((k, n)) if d is None else Expr(graph, d)
            return [F.concatenate([f, F.reshape(d, (k * n,))], axis=0)]

        ins = [avals[0], ((n * (1 + k),), "float64"), *avals[2:]]
        if units is None:
            ins += [((k, *avals[2 + j][0]), avals[2 + j][1]) for j in live]
        return closed(rhs, ins)

    return cached(fun, ("sensitivity", n, live, k, units), build)


def _unit_dots(graph: Graph, units: tuple, live: tuple[int, ...], avals: list[Aval],
               k: int) -> list[Expr]:
    """The ``(k,) + shape`` tangents of the live parameters for unit directions."""
    out = []
    for j, (shape, dtype) in zip(live, avals):
        value = np.zeros((k, max(math.prod(shape), 1)), dtype=dtype)
        for i, (jj, e) in enumerate(units):
            if jj == j:
                value[i, e] = 1.0
        out.append(Expr(graph, graph.const(value.reshape((k, *shape)))))
    return out


def _scalar_parts(f: Expr, big: Expr, theta: list[Expr], dots: list[Expr],
                  live: tuple[int, ...], units: tuple | None, n: int, k: int) -> list[Expr]:
    """``f``'s scalars, then each direction's tangent of them (one scalar pass each)."""
    graph = f.graph
    nodes = graph.nodes
    parts = [Expr(graph, a) for a in f.data.args]
    y = big[:n]
    for i in range(k):
        wrt, seeds = [y], [big[n + i * n:n + (i + 1) * n]]
        if units is not None:
            j, e = units[i]
            if j >= 0:
                shape = theta[j].shape
                unit = np.zeros(max(math.prod(shape), 1))
                unit[e] = 1.0
                wrt.append(theta[j])
                seeds.append(Expr(graph, graph.const(unit.reshape(shape))))
        else:
            for j, d in zip(live, dots):
                wrt.append(theta[j])
                seeds.append(d[i])
        with adjoint_rewriting(graph, True):
            t = tangents_inside([f], wrt, seeds).tangent_of.get(f.node)
        if t is None:
            parts += [here(graph, F.zeros((), dtype="float64"))] * n
        elif stacked_scalars(nodes, nodes[t]):
            parts += [Expr(graph, a) for a in nodes[t].args]
        else:
            parts += [Expr(graph, t)[q] for q in range(n)]
    return parts


_DEFAULT_TOL = {"solve_ivp": (1e-3, 1e-6), "odeint": (1.49012e-8, 1.49012e-8)}


def _augmented_call(call: Call, n: int, k: int) -> Call:
    """The tolerances of the system ``[y, S]`` (``k`` directions of ``n`` states): the
    sensitivities outside the error control (as CVODES does by default), ``y``'s scaled so
    that its error norm, an RMS over all the states for every method but LSODA's maximum,
    is the original system's: the augmented solve takes the original's steps."""
    rtol0, atol0 = _DEFAULT_TOL[call.function]
    rtol, atol = call.option("rtol", rtol0), call.option("atol", atol0)
    rms = call.function == "solve_ivp" and call.option("method", "RK45") != "LSODA"
    c = math.sqrt(1 + k) if rms else 1.0
    per_state = atol if isinstance(atol, tuple) else (atol,) * n
    atols = tuple(float(a) / c for a in per_state) + (math.inf,) * (n * k)
    rtols = tuple(float(r) / c for r in rtol) if isinstance(rtol, tuple) else float(rtol) / c
    if isinstance(rtols, tuple):
        rtols = rtols + (math.inf,) * (n * k)
    return call.replace(rtol=rtols, atol=atols)


def _sensitivities(n: Any, y0_dot: Expr, dots: list[Expr], live: tuple[int, ...],
                   k: int, units: tuple | None = None) -> Expr:
    """The ``(k, n, T)`` sensitivities of ``n`` along ``k`` directions: ``y0_dot`` is
    ``(k, n)``, ``dots`` the ``(k,) + shape`` tangents of the live parameters (none with
    ``units``: unit directions, see :func:`_sensitivity_body`)."""
    call: Call = n.attrs["call"]
    y0, times, theta = n.args[0], n.args[1], list(n.args[2:])
    states = y0.shape[0]
    body = _sensitivity_body(n.attrs["fun"], states, live, k, units)
    start = F.concatenate([y0, F.reshape(y0_dot, (k * states,))], axis=0)
    big = ivp_node(_augmented_call(call, states, k), body, [start, times, *theta, *dots])
    return F.reshape(big[states:], (k, states, times.shape[0]))


def _slopes(n: Any) -> Expr:
    """``f(t_i, y(t_i))`` at every output time, ``(n, T)``: the derivative of the solution
    with respect to its output time (one scan of the right-hand side over the outputs)."""
    fun: Body = n.attrs["fun"]
    times, theta = n.args[1], list(n.args[2:])
    f = scan_call(n.graph, fun, 0, 2, times.shape[0], False,
                  [times, F.matrix_transpose(n.out), *theta])[0]
    return F.matrix_transpose(f)


def _start_slope(n: Any) -> Expr:
    """``f(t0, y0)`` of an ``odeint`` call (whose first output time is its start)."""
    return one_result(n.attrs["fun"], [n.args[1][0], n.args[0], *n.args[2:]])


def _odeint(n: Any) -> bool:
    return n.attrs["call"].function == "odeint"


def ivp_forward(n: Any, t: Sequence[Expr | None]) -> Expr | None:
    theta = n.args[2:]
    live = tuple(j for j in range(len(theta)) if t[2 + j] is not None)
    if t[0] is None and not live and t[1] is None:
        return None
    nb, batch = batch_of(t, n.args)
    k = math.prod(batch)
    states = n.args[0].shape[0]
    y0_dot = None if t[0] is None else F.reshape(t[0], (k, states))
    if t[1] is not None and _odeint(n):  # a later start moves the solution back along f
        shift = F.reshape(t[1][..., 0], (k, 1)) * _start_slope(n)
        y0_dot = -shift if y0_dot is None else y0_dot - shift
    out = None
    if y0_dot is not None or live:
        dots = [F.reshape(t[2 + j], (k, *theta[j].shape)) for j in live]
        y0_dot = zeros((k, states)) if y0_dot is None else y0_dot
        out = F.reshape(_sensitivities(n, y0_dot, dots, live, k), batch + n.shape)
    if t[1] is not None:
        moved = _slopes(n) * F.reshape(t[1], batch + (1, n.shape[1]))
        out = moved if out is None else out + moved
    return out


def ivp_backprop(n: Any, g: Expr) -> tuple:
    call: Call = n.attrs["call"]
    y0, theta = n.args[0], list(n.args[2:])
    contrib: list = [None] * len(n.args)
    wanted = tuple(j for j in range(len(theta)) if n.needs(2 + j) and is_float(theta[j].dtype))
    want_times = n.needs(1) and is_float(n.args[1].dtype)
    want_y0 = n.needs(0) or (want_times and _odeint(n))
    nb = g.ndim - 2
    if want_times:
        contrib[1] = F.sum(g * _slopes(n), axis=-2)
    if not wanted and not want_y0:
        return tuple(contrib)
    batch = g.shape[:nb]
    rows = math.prod(batch)
    states, times = y0.shape[0], n.shape[1]
    sizes = [max(theta[j].size, 1) for j in wanted]
    p = sum(sizes)
    if sensitivity(call, states, p + (states if want_y0 else 0), rows) == "forward":
        pieces = _forward_cotangents(n, g, wanted, want_y0, rows)
    else:
        pieces = _adjoint_cotangents(n, g, wanted, rows)
    y0_bar, theta_bars = pieces
    if want_y0:
        y0_bar = F.reshape(y0_bar, batch + (states,))
        contrib[0] = y0_bar if n.needs(0) else None
        if want_times and _odeint(n):
            start = -F.sum(y0_bar * _start_slope(n), axis=-1)
            first = F.concatenate([F.reshape(start, batch + (1,)),
                                   zeros(batch + (n.shape[1] - 1,))], axis=-1)
            contrib[1] = contrib[1] + first
    for j, c in zip(wanted, theta_bars):
        contrib[2 + j] = F.reshape(c, batch + theta[j].shape)
    del times
    return tuple(contrib)


def _forward_cotangents(n: Any, g: Expr, wanted: tuple[int, ...], want_y0: bool,
                        rows: int) -> tuple[Expr | None, list[Expr]]:
    """Reverse mode by forward sensitivities: one direction per element of ``y0`` (if
    wanted) and of each wanted parameter, then ``g . S``."""
    y0, theta = n.args[0], list(n.args[2:])
    states, times = y0.shape[0], n.shape[1]
    sizes = [max(theta[j].size, 1) for j in wanted]
    lead = states if want_y0 else 0
    k = lead + sum(sizes)
    start = np.zeros((k, states))
    start[:lead, :lead] = np.eye(lead)
    units = tuple([(-1, e) for e in range(lead)]
                  + [(j, e) for j, m in zip(wanted, sizes) for e in range(m)])
    s = _sensitivities(n, const(start), [], wanted, k, units)
    total = F.reshape(g, (rows, states * times)) @ F.matrix_transpose(
        F.reshape(s, (k, states * times)))
    y0_bar = total[:, :states] if want_y0 else None
    bars, at = [], lead
    for m in sizes:
        bars.append(total[:, at:at + m])
        at += m
    return y0_bar, bars


def _adjoint_body(fun: Body, states: int, wanted: tuple[int, ...], rows: int) -> Body:
    """The adjoint right-hand side ``(t, z, y, *theta) -> z'`` for ``z = [vec(lambda),
    vec(mu)]`` (``lambda``: ``(rows, n)``; ``mu``: ``(rows, p)``, the wanted parameters
    flattened in order): ``[-J_y^T lambda, -J_theta^T lambda]``."""
    avals = fun.avals()
    sizes = [max(math.prod(avals[2 + j][0]), 1) for j in wanted]
    size = rows * (states + sum(sizes))

    def build() -> Body:
        def rhs(*v: Expr) -> list[Expr]:
            t, z, y, theta = v[0], v[1], v[2], list(v[3:])
            lam = F.reshape(z[:rows * states], (rows, states))
            f = one_result(fun, [t, y, *theta])
            got = multi_vjp([(f, lam)], [y, *[theta[j] for j in wanted]])
            parts = [(zeros((rows, states)) if got[0] is None else got[0])]
            for m, a in zip(sizes, got[1:]):
                parts.append(zeros((rows, m)) if a is None else F.reshape(a, (rows, m)))
            return [-F.concatenate([F.reshape(a, (-1,)) for a in parts], axis=0)]

        return closed(rhs, [avals[0], ((size,), "float64"), avals[1], *avals[2:]])

    return cached(fun, ("adjoint", states, wanted, rows), build)


def _adjoint_cotangents(n: Any, g: Expr, wanted: tuple[int, ...], rows: int
                        ) -> tuple[Expr, list[Expr]]:
    call: Call = n.attrs["call"]
    fun: Body = n.attrs["fun"]
    y0, times, theta = n.args[0], n.args[1], list(n.args[2:])
    states = y0.shape[0]
    adj = _adjoint_body(fun, states, wanted, rows)
    size = adj.avals()[1][0][0]
    attrs = {"call": call, "fun": fun, "jac": jacobian_body(fun, 1) if stiff(call) else None,
             "adj": adj, "adj_jac": jacobian_body(adj, 1) if stiff(call) else None,
             "size": size}
    cot = F.reshape(g, (rows, states, n.shape[1]))
    graph = n.graph
    ids = tuple(graph.find(e) for e in [y0, times, n.out, cot, *theta])
    out = Expr(graph, graph.add(IVP_ADJOINT, ids, attrs))
    bars, at = [], states
    for j in wanted:
        m = max(theta[j].size, 1)
        bars.append(out[:, at:at + m])
        at += m
    return out[:, :states], bars


def _adjoint_rule(n: Any, *_: Any) -> Any:
    raise DifferentiationError(
        f"{n.attrs['call'].function}: a second derivative through the adjoint method is "
        "not supported; pass sensitivity='forward' (forward sensitivity equations "
        "differentiate again)")


# -- the registry's examples ------------------------------------------------------------------

def _float_avals(*shapes: tuple) -> list[Aval]:
    return [(tuple(sh), "float64") for sh in shapes]


def examples(kind: str, rng: Any) -> list:
    """Cases for the registry-driven tests: small well-posed problems whose solutions
    SciPy finds to full precision (so finite differences see only the solution's true
    dependence)."""
    a, b = rng.uniform(0.5, 1.5, 3), rng.uniform(-1.0, 1.0, 3)
    cubic = closed(lambda x, a, b: [x ** 3 + a * x - b], _float_avals((3,), (3,), (3,)))
    root = Call("root", (("method", "hybr"), ("tol", 1e-15)), (), (3,))
    root_attrs = {"call": root, "fun": cubic, "jac": jacobian_body(cubic, 0), "hess": None}
    quartic = closed(lambda x, a: [F.sum((x - a) ** 2 * (1.0 + x ** 2))],
                     _float_avals((2,), (2,)))
    opts = ("__dict__", (("ftol", 1e-15), ("gtol", 1e-13), ("maxiter", 500)))
    minimize = Call("minimize", (("method", "L-BFGS-B"), ("options", opts)), ("lb", "ub"),
                    (2,))
    min_attrs = {"call": minimize, "fun": quartic, "jac": gradient_body(quartic), "hess": None}
    bounds = [np.array([-2.0, 0.9]), np.array([2.0, 2.0])]
    decay = closed(lambda t, y, a, b: [-a * y + b * F.sin(t)], [((), "float64"),
                                                               *_float_avals((2,), (2,), (2,))])
    times = np.array([0.3, 0.6, 0.9])
    ivp = Call("solve_ivp", (("atol", 1e-12), ("method", "DOP853"), ("rtol", 1e-12),
                             ("t_span", (0.0, 1.0))), (), (2, 3))
    stiff_call = ivp.replace(method="Radau")
    y0, pa, pb = rng.uniform(0.5, 1.5, 2), rng.uniform(0.5, 2.0, 2), rng.uniform(-1, 1, 2)
    ivp_attrs = {"call": ivp, "fun": decay, "jac": None}
    if kind == "optimize":
        return [([np.zeros(3), a, b], root_attrs),
                ([np.array([0.5, 1.5]), *bounds, np.array([-3.0, 1.2])], min_attrs)]
    if kind == "solver_info":
        return [([np.zeros(3), a, b], {**root_attrs, "field": "nfev", "shape": (),
                                       "dtype": "int64"}),
                ([np.zeros(3), a, b], {**root_attrs, "field": "success"})]
    if kind == "ivp":
        return [([y0, times, pa, pb], ivp_attrs),
                ([y0, times, pa, pb], {**ivp_attrs, "call": stiff_call,
                                       "jac": jacobian_body(decay, 1)})]
    if kind == "ivp_adjoint":
        ys = _sg_integrate(ivp.spec(), BodyFunction(decay), None, y0, times, (pa, pb))["y"]
        adj = _adjoint_body(decay, 2, (0, 1), 1)
        g = rng.uniform(-1, 1, (1, 2, 3))
        return [([y0, times, ys, g, pa, pb],
                 {"call": ivp, "fun": decay, "jac": None, "adj": adj, "adj_jac": None,
                  "size": adj.avals()[1][0][0]})]
    if kind == "custom_root":
        square = closed(lambda x, c: [x * x - c], _float_avals((3,), (3,)))
        c = rng.uniform(1.0, 2.0, 3)
        solver = Solver(lambda g, y: y / g(1.0), "tangent_solve")
        return [([np.sqrt(c), c], {"fun": square, "tangent_solve": solver})]
    if kind == "custom_linear_solve":
        matvec = closed(lambda v, m: [m @ v], _float_avals((2,), (2, 2)))
        m = np.array([[3.0, 1.0], [1.0, 2.0]])
        rhs = rng.uniform(-1, 1, 2)
        solver = Solver(lambda mv, r: F.solve(const(m), r), "solve")
        return [([np.linalg.solve(m, rhs), rhs, m],
                 {"matvec": matvec, "solve": solver, "transpose_solve": None,
                  "symmetric": True})]
    raise KeyError(kind)


DERIVED.update(examples=examples, ivp_forward=ivp_forward, ivp_backprop=ivp_backprop,
               adjoint_rule=_adjoint_rule)
