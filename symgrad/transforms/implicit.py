"""The derivatives of solver calls (:mod:`symgrad.ops.solvers`), by the implicit function
theorem, and the traced bodies they are built from.

A solution ``x*`` of ``R(x, theta) = 0`` moves with the parameters as
``J_x dx = -J_theta dtheta`` (``J_x = dR/dx`` at ``x*``). So

* forward mode: ``dx = -J_x^{-1} (J_theta t)``;
* reverse mode: ``lambda = J_x^{-T} g``, then ``theta_bar = -J_theta^T lambda``.

``R`` is the callback (roots), its gradient (``minimize``: stationarity, so ``J_x`` is
symgrad's own Hessian) or the gradient of ``least_squares``' cost. Components of a
``minimize``/``least_squares`` solution at an active bound follow that bound; the others
solve the system with those fixed. The bracket, the initial guess and other options get no
derivative (the solution does not move with them). Everything is built from registered
ops (``solve``, the residual's own graph inlined at ``x*``, the solution node itself), so
it differentiates again: any order, forward over reverse and the rest.

``sg.custom_root`` differentiates the same way with the user's ``tangent_solve`` for the
linear solve (reverse mode transposes it, as JAX does); ``sg.custom_linear_solve`` with
``solve`` and ``transpose_solve``.

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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError, SymgradError
from ..ir.body import Body, scan_nodes
from ..ir.expr import TRACES, Expr, F, _operand, const
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import is_float
from ..ops.solvers import DERIVED, IVP, IVP_ADJOINT, Call, Solver
from .custom import transposed, vmapped
from .forward import _tangents
from .loops import _multi_vjp
from .reverse import adjoint_rewriting

__all__ = ["closed", "gradient_body", "jacobian_body", "residual_body", "sensitivity",
           "stiff"]

Aval = tuple[tuple[int, ...], str]
BOUNDED = ("minimize", "least_squares")
SCALAR = ("brentq", "brenth", "ridder", "bisect", "toms748", "root_scalar", "newton")
STIFF = ("Radau", "BDF", "LSODA")


# -- bodies -----------------------------------------------------------------------------------

def closed(fn: Callable[..., Sequence[Any]], avals: Sequence[Aval]) -> Body:
    """``fn`` traced on fresh variables of ``avals`` into a body that reads nothing else:
    the constants it uses, and what it computes from them alone, are inside it (a
    callback's inputs are exactly its arguments)."""
    tg = Graph()
    args = [Expr(tg, tg.var(f"c{k}", s, d)) for k, (s, d) in enumerate(avals)]
    TRACES.graphs.append(tg)
    try:
        outs = [_operand(tg, r) for r in fn(*args)]
    finally:
        TRACES.graphs.pop()
    inputs = {a.node for a in args}
    nodes = tg.nodes
    body = Graph()
    memo = {a.node: body.var(f"c{k}", s, d) for k, (a, (s, d)) in enumerate(zip(args, avals))}
    for i in tg.ancestors(outs):
        n = nodes[i]
        if n.is_var and i not in inputs:
            raise SymgradError(f"a derived solver callback reads {n.name!r} from outside")
        if i not in memo:
            memo[i] = body.add(REGISTRY[n.op], tuple(memo[a] for a in n.args), n.attrs)
    return Body(body, [memo[a.node] for a in args], [memo[o] for o in outs], len(avals))


def _cached(body: Body, key: tuple, build: Callable[[], Body]) -> Body:
    found = body.derived.get(key)
    if found is None:
        found = body.derived[key] = build()
    return found


def _here(graph: Graph, e: Expr) -> Expr:
    """``e`` (built with no operand: in a graph of its own) as an Expr of ``graph``."""
    return e if e.graph is graph else Expr(graph, graph.find(e))


def _zeros(shape: tuple, dtype: str = "float64") -> Expr:
    return F.broadcast_to(F.zeros((), dtype=dtype), shape)


def _one_result(body: Body, values: Sequence[Expr]) -> Expr:
    return body.inline(list(values))[0]


def jacobian_body(fun: Body, k: int) -> Body:
    """``(*inputs) -> d out / d input k``, of shape ``out.shape + input.shape`` (one forward
    pass with an identity seed)."""
    def build() -> Body:
        def jac(*v: Expr) -> list[Expr]:
            r = _one_result(fun, v)
            x = v[k]
            m = max(x.size, 1)
            seed = _here(r.graph, F.reshape(F.eye(m, dtype=x.dtype), (m, *x.shape)))
            with adjoint_rewriting(r.graph, True):
                t = _tangents([r], [x], [seed]).tangent_of.get(r.node)
            if t is None:
                return [_zeros(r.shape + x.shape)]
            flat = F.reshape(Expr(r.graph, t), (m, max(r.size, 1)))
            return [F.reshape(F.matrix_transpose(flat), r.shape + x.shape)]

        return closed(jac, fun.avals())

    return _cached(fun, ("jacobian", k), build)


def gradient_body(fun: Body, k: int = 0) -> Body:
    """``(*inputs) -> d out / d input k`` of a scalar ``out`` (one reverse pass)."""
    def build() -> Body:
        def grad(*v: Expr) -> list[Expr]:
            r = _one_result(fun, v)
            (g,) = _multi_vjp([(r, _here(r.graph, F.ones((), dtype=r.dtype)))], [v[k]])
            return [_zeros(v[k].shape) if g is None else g]

        return closed(grad, fun.avals())

    return _cached(fun, ("gradient", k), build)


def _cost_body(fun: Body, loss: str, f_scale: float) -> Body:
    """``least_squares``' cost ``0.5 * sum(f_scale**2 * rho((r / f_scale)**2))``."""
    def build() -> Body:
        def cost(*v: Expr) -> list[Expr]:
            z = (_one_result(fun, v) / f_scale) ** 2
            rho = {"linear": lambda: z, "soft_l1": lambda: 2.0 * (F.sqrt(1.0 + z) - 1.0),
                   "huber": lambda: F.where(z <= 1.0, z, 2.0 * F.sqrt(z) - 1.0),
                   "cauchy": lambda: F.log1p(z), "arctan": lambda: F.arctan(z)}[loss]()
            return [0.5 * f_scale ** 2 * F.sum(rho)]

        return closed(cost, fun.avals())

    return _cached(fun, ("cost", loss, float(f_scale)), build)


def residual_body(fun: Body, call: Call) -> Body:
    """``R(x, *theta)``, zero at the solution of ``call``: the callback for roots, its
    gradient for ``minimize``, the gradient of the cost for ``least_squares``."""
    if call.function == "minimize":
        return gradient_body(fun)
    if call.function == "least_squares":
        loss = call.option("loss", "linear")
        if not isinstance(loss, str):
            raise DifferentiationError(
                "least_squares with a callable loss: the solution's derivative needs the "
                "loss as symgrad code; use one of 'linear', 'soft_l1', 'huber', 'cauchy', "
                "'arctan'")
        return gradient_body(_cost_body(fun, loss, float(call.option("f_scale", 1.0))))
    return fun


def _jvp_body(fun: Body, ks: tuple[int, ...], batch: tuple) -> Body:
    """``(*inputs, *tangents of inputs ks) -> tangent of out`` (tangents: ``batch +``)."""
    avals = fun.avals()

    def build() -> Body:
        def jvp(*v: Expr) -> list[Expr]:
            ins, dots = list(v[:len(avals)]), list(v[len(avals):])
            r = _one_result(fun, ins)
            with adjoint_rewriting(r.graph, True):
                t = _tangents([r], [ins[k] for k in ks], dots).tangent_of.get(r.node)
            return [_zeros(batch + r.shape) if t is None else Expr(r.graph, t)]

        return closed(jvp, [*avals, *[(batch + avals[k][0], avals[k][1]) for k in ks]])

    return _cached(fun, ("jvp", ks, batch), build)


def _vjp_body(fun: Body, ks: tuple[int, ...], batch: tuple) -> Body:
    """``(*inputs, cotangent of out) -> cotangents of inputs ks`` (``batch +``)."""
    avals = fun.avals()
    out = fun.avals(fun.outputs)[0]

    def build() -> Body:
        def vjp(*v: Expr) -> list[Expr]:
            ins, g = list(v[:-1]), v[-1]
            r = _one_result(fun, ins)
            got = _multi_vjp([(r, g)], [ins[k] for k in ks])
            return [_zeros(batch + avals[k][0]) if a is None else a for k, a in zip(ks, got)]

        return closed(vjp, [*avals, (batch + out[0], out[1])])

    return _cached(fun, ("vjp", ks, batch), build)


# -- the implicit function theorem for scipy.optimize calls ---------------------------------

class _Parts:
    """One ``optimize`` node's pieces: the solution, the parameters, the bounds."""

    def __init__(self, n: Any) -> None:
        call: Call = n.attrs["call"]
        self.call, self.fun = call, n.attrs["fun"]
        lead = 1 + len(call.arrays)
        self.lead = lead
        self.x = n.out
        self.theta = list(n.args[lead:])
        arrays = dict(zip(call.arrays, range(1, lead)))
        self.lb_at, self.ub_at = arrays.get("lb"), arrays.get("ub")
        self.args = n.args
        self.residual = residual_body(self.fun, call)
        self.elementwise = call.function in SCALAR

    def active(self) -> tuple[Expr, Expr] | None:
        """Where the solution lies on its lower bound, and where on its upper one (None
        without bounds): ``minimize`` projects onto the bounds, ``least_squares`` (whose
        iterates stay inside) says which are active in its ``active_mask``."""
        if self.call.function not in BOUNDED or self.lb_at is None:
            return None
        if self.call.function == "least_squares":
            mask = Expr(self.x.graph, self.x.graph.add(
                REGISTRY["solver_info"], self.x.data.args,
                {**self.x.data.attrs, "field": "active_mask", "shape": self.x.shape,
                 "dtype": "int64"}))
            return mask < 0, mask > 0
        return self.x <= self.args[self.lb_at], self.x >= self.args[self.ub_at]

    def inputs(self) -> list[Expr]:
        return [self.x, *self.theta]

    def jacobian(self) -> Expr:
        """``J_x`` at the solution, as a matrix ``(size, size)``."""
        m = max(self.x.size, 1)
        return F.reshape(_one_result(jacobian_body(self.residual, 0), self.inputs()), (m, m))

    def derivative(self) -> Expr:
        """``dR/dx`` of an elementwise residual (a root of a scalar function)."""
        jb = _jvp_body(self.residual, (0,), ())
        return _one_result(jb, [*self.inputs(), F.ones(self.x.shape, dtype=self.x.dtype)])

    def refuse_constraints(self, needed: bool) -> None:
        if needed and self.call.option("constraints"):
            raise DifferentiationError(
                "minimize with constraints: the solution's derivative needs the constraints' "
                "multipliers, which symgrad does not take from SciPy; write the constraints "
                "as bounds, or as a penalty in the objective")


def _rows(c: Expr, nb: int, m: int) -> Expr:
    """``c`` (``batch + x.shape``) as ``(m, rows)`` columns."""
    return F.matrix_transpose(F.reshape(c, (-1, m))) if nb else F.reshape(c, (m,))


def _back(u: Expr, nb: int, shape: tuple) -> Expr:
    return F.reshape(F.matrix_transpose(u), shape) if nb else F.reshape(u, shape)


def _masked(M: Expr, active: Expr | None) -> Expr:
    """``M`` with the rows of the active components replaced by the identity's."""
    if active is None:
        return M
    m = M.shape[0]
    rows = F.reshape(active, (m, 1))
    return F.where(rows, F.eye(m, dtype=M.dtype), M)


def optimize_forward(n: Any, t: Sequence[Expr | None]) -> Expr | None:
    p = _Parts(n)
    live = tuple(k for k in range(len(p.theta)) if t[p.lead + k] is not None)
    lb_t = t[p.lb_at] if p.lb_at is not None else None
    ub_t = t[p.ub_at] if p.ub_at is not None else None
    if not live and lb_t is None and ub_t is None:
        return None
    p.refuse_constraints(bool(live))
    first = next(x for x in t if x is not None)
    some = next(k for k, x in enumerate(t) if x is not None)
    nb = first.ndim - n.args[some].ndim
    batch = first.shape[:nb]
    shape = batch + p.x.shape
    if live:
        jb = _jvp_body(p.residual, tuple(1 + k for k in live), batch)
        rhs = _one_result(jb, [*p.inputs(), *[t[p.lead + k] for k in live]])
    else:
        rhs = _zeros(shape)
    if p.elementwise:
        return -rhs / p.derivative()
    sides = p.active()
    active = None if sides is None else sides[0] | sides[1]
    c = -rhs
    if sides is not None:
        bound = F.where(sides[0], _tangent(lb_t, shape), _tangent(ub_t, shape))
        c = F.where(active, bound, c)
    m = max(p.x.size, 1)
    u = F.solve(_masked(p.jacobian(), active), _rows(c, nb, m))
    return _back(u, nb, shape)


def _tangent(t: Expr | None, shape: tuple) -> Expr:
    return _zeros(shape) if t is None else F.broadcast_to(t, shape)


def optimize_backprop(n: Any, g: Expr) -> tuple:
    p = _Parts(n)
    contrib: list = [None] * len(n.args)
    wanted = tuple(k for k in range(len(p.theta))
                   if n.needs(p.lead + k) and is_float(p.theta[k].dtype))
    bounds = [k for k in (p.lb_at, p.ub_at) if k is not None and n.needs(k)]
    if not wanted and not bounds:
        return tuple(contrib)
    p.refuse_constraints(bool(wanted))
    nb = g.ndim - p.x.ndim
    batch = g.shape[:nb]
    sides = None
    if p.elementwise:
        lam = g / p.derivative()
        active = None
    else:
        sides = p.active()
        active = None if sides is None else sides[0] | sides[1]
        m = max(p.x.size, 1)
        M = _masked(p.jacobian(), active)
        lam = _back(F.solve(F.matrix_transpose(M), _rows(g, nb, m)), nb, g.shape)
    free = lam if active is None else F.where(active, 0.0, lam)
    if wanted:
        vb = _vjp_body(p.residual, tuple(1 + k for k in wanted), batch)
        for k, c in zip(wanted, vb.inline([*p.inputs(), -free])):
            contrib[p.lead + k] = c
    if sides is not None:
        at_lb = F.where(sides[0], lam, 0.0)
        at_ub = F.where(sides[1], lam, 0.0)
        if p.lb_at is not None and n.needs(p.lb_at):
            contrib[p.lb_at] = at_lb
        if p.ub_at is not None and n.needs(p.ub_at):
            contrib[p.ub_at] = at_ub
    return tuple(contrib)


def _info_rule(n: Any, *_: Any) -> Any:
    field = n.attrs["field"]
    raise DifferentiationError(
        f"{n.attrs['call'].function}: the result's field {field!r} is SciPy's run-time value "
        "and has no derivative; differentiate the solution (.x) or .fun, which symgrad "
        "computes from it")


# -- custom_root and custom_linear_solve ----------------------------------------------------

def _batch_of(t: Sequence[Expr | None], args: Sequence[Expr]) -> tuple[int, tuple]:
    k = next(i for i, x in enumerate(t) if x is not None)
    nb = t[k].ndim - args[k].ndim
    return nb, t[k].shape[:nb]


def _rowwise(fn: Callable[[Expr], Expr], aval: Aval, value: Expr, nb: int) -> Expr:
    """``fn`` (written for one row) on every row of ``value``."""
    if nb == 0:
        return fn(value)
    return vmapped(lambda v: [fn(v)], [aval], [value], nb)[0]


def _as_expr(graph: Graph, e: Any, shape: tuple, dtype: str, what: str) -> Expr:
    """A user function's result as an Expr of ``graph`` (of the graph it closes over, or
    a number, it is brought there)."""
    if not isinstance(e, Expr):
        e = Expr(graph, graph.const(np.asarray(e, dtype=dtype)))
    elif e.graph is not graph:
        e = Expr(graph, graph.find(e))
    if e.shape != shape:
        raise DifferentiationError(f"{what} returned shape {e.shape}, expected {shape}")
    return e


def root_forward(n: Any, t: Sequence[Expr | None]) -> Expr | None:
    fun: Body = n.attrs["fun"]
    x, theta = n.out, list(n.args[1:])
    live = tuple(k for k in range(len(theta)) if t[1 + k] is not None)
    if not live:
        return None
    nb, batch = _batch_of(t, n.args)
    jb = _jvp_body(fun, tuple(1 + k for k in live), batch)
    rhs = _one_result(jb, [x, *theta, *[t[1 + k] for k in live]])
    u = _rowwise(lambda r: _tangent_solve(n, r), (x.shape, x.dtype), rhs, nb)
    return -u


def _tangent_solve(n: Any, r: Expr) -> Expr:
    """The user's ``tangent_solve(g, r)`` with ``g`` the residual's linearisation in x."""
    fun: Body = n.attrs["fun"]
    solver: Solver = n.attrs["tangent_solve"]
    x, theta = n.out, list(n.args[1:])
    jb = _jvp_body(fun, (0,), ())

    def g(v: Any) -> Expr:
        v = _as_expr(r.graph, v, x.shape, x.dtype, "custom_root: g's argument")
        return _one_result(jb, [x, *theta, v])

    got = solver(g, r)
    return _as_expr(r.graph, got, x.shape, x.dtype, f"custom_root: {solver.name}")


def root_backprop(n: Any, g: Expr) -> tuple:
    fun: Body = n.attrs["fun"]
    x, theta = n.out, list(n.args[1:])
    contrib: list = [None] * len(n.args)
    wanted = tuple(k for k in range(len(theta)) if n.needs(1 + k) and is_float(theta[k].dtype))
    if not wanted:
        return tuple(contrib)
    nb = g.ndim - x.ndim
    batch = g.shape[:nb]
    name = n.attrs["tangent_solve"].name
    lam = transposed(lambda r: [_tangent_solve(n, r)], [(x.shape, x.dtype)], [g], nb, batch,
                     lambda: f"reverse mode through sg.custom_root transposes {name}, which "
                             "must be linear in its right-hand side (as in JAX); it is not")[0]
    vb = _vjp_body(fun, tuple(1 + k for k in wanted), batch)
    for k, c in zip(wanted, vb.inline([x, *theta, -lam])):
        contrib[1 + k] = c
    return tuple(contrib)


def _matvec(n: Any, x: Expr) -> Callable[[Any], Expr]:
    mv: Body = n.attrs["matvec"]
    theta = list(n.args[2:])

    def apply(v: Any) -> Expr:
        v = _as_expr(x.graph, v, x.shape, x.dtype, "custom_linear_solve: matvec's argument")
        return _one_result(mv, [v, *theta])

    return apply


def _vecmat(n: Any, x: Expr) -> Callable[[Any], Expr]:
    """The transpose of ``matvec`` (linear in its argument): ``u -> A^T u``."""
    mv: Body = n.attrs["matvec"]
    theta = list(n.args[2:])
    vb = _vjp_body(mv, (0,), ())

    def apply(u: Any) -> Expr:
        u = _as_expr(x.graph, u, x.shape, x.dtype, "custom_linear_solve: the transpose's "
                                                     "argument")
        return _one_result(vb, [x, *theta, u])

    return apply


def _user_solve(n: Any, which: str, op: Callable[[Any], Expr], r: Expr) -> Expr:
    solver: Solver = n.attrs[which]
    got = solver(op, r)
    return _as_expr(r.graph, got, r.shape, r.dtype, f"custom_linear_solve: {solver.name}")


def linear_forward(n: Any, t: Sequence[Expr | None]) -> Expr | None:
    mv: Body = n.attrs["matvec"]
    x, theta = n.out, list(n.args[2:])
    live = tuple(k for k in range(len(theta)) if t[2 + k] is not None)
    if t[1] is None and not live:
        return None
    nb, batch = _batch_of(t, n.args)
    rhs = _tangent(t[1], batch + x.shape)
    if live:
        jb = _jvp_body(mv, tuple(1 + k for k in live), batch)
        rhs = rhs - _one_result(jb, [x, *theta, *[t[2 + k] for k in live]])
    return _rowwise(lambda r: _user_solve(n, "solve", _matvec(n, x), r), (x.shape, x.dtype),
                    rhs, nb)


def linear_backprop(n: Any, g: Expr) -> tuple:
    mv: Body = n.attrs["matvec"]
    x, theta = n.out, list(n.args[2:])
    contrib: list = [None] * len(n.args)
    wanted = tuple(k for k in range(len(theta)) if n.needs(2 + k) and is_float(theta[k].dtype))
    if not wanted and not n.needs(1):
        return tuple(contrib)
    nb = g.ndim - x.ndim
    batch = g.shape[:nb]
    aval = (x.shape, x.dtype)
    if n.attrs["symmetric"]:
        bbar = _rowwise(lambda c: _user_solve(n, "solve", _matvec(n, x), c), aval, g, nb)
    elif n.attrs["transpose_solve"] is not None:
        bbar = _rowwise(lambda c: _user_solve(n, "transpose_solve", _vecmat(n, x), c), aval,
                        g, nb)
    else:
        name = n.attrs["solve"].name
        bbar = transposed(lambda r: [_user_solve(n, "solve", _matvec(n, x), r)], [aval], [g],
                          nb, batch, lambda: (
                              f"reverse mode through sg.custom_linear_solve needs "
                              f"transpose_solve (or symmetric=True): {name} is not linear in "
                              "its right-hand side, so it cannot be transposed"))[0]
    if n.needs(1):
        contrib[1] = bbar
    if wanted:
        vb = _vjp_body(mv, tuple(1 + k for k in wanted), batch)
        for k, c in zip(wanted, vb.inline([x, *theta, -bbar])):
            contrib[2 + k] = c
    return tuple(contrib)


# -- integrators: forward sensitivities and the adjoint -------------------------------------

def stiff(call: Call) -> bool:
    """Whether SciPy's method for ``call`` uses the right-hand side's Jacobian."""
    return call.function == "odeint" or call.option("method", "RK45") in STIFF


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
            f = _one_result(fun, [t, y, *theta])
            graph = f.graph
            if units is not None and not dots:
                dots = _unit_dots(graph, units, live, [avals[2 + j] for j in live], k)
            if _stacked_scalars(f) and n * (1 + k) <= SCALAR_STATES:
                return [F.stack(_scalar_parts(f, big, theta, dots, live, units, n, k))]
            s = F.reshape(big[n:], (k, n))
            with adjoint_rewriting(graph, True):
                tan = _tangents([f], [y, *[theta[j] for j in live]], [s, *dots])
            d = tan.tangent_of.get(f.node)
            d = _zeros((k, n)) if d is None else Expr(graph, d)
            return [F.concatenate([f, F.reshape(d, (k * n,))], axis=0)]

        ins = [avals[0], ((n * (1 + k),), "float64"), *avals[2:]]
        if units is None:
            ins += [((k, *avals[2 + j][0]), avals[2 + j][1]) for j in live]
        return closed(rhs, ins)

    return _cached(fun, ("sensitivity", n, live, k, units), build)


def _stacked_scalars(e: Expr) -> bool:
    nodes = e.graph.nodes
    return e.op == "stack" and all(nodes[a].shape == () for a in e.data.args)


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
            t = _tangents([f], wrt, seeds).tangent_of.get(f.node)
        if t is None:
            parts += [_here(graph, F.zeros((), dtype="float64"))] * n
        elif nodes[t].op == "stack" and all(nodes[a].shape == () for a in nodes[t].args):
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
    (f,) = scan_nodes(n.graph, fun, 0, 2, times.shape[0], False,
                      [times, F.matrix_transpose(n.out), *theta], [0])
    return F.matrix_transpose(f)


def _start_slope(n: Any) -> Expr:
    """``f(t0, y0)`` of an ``odeint`` call (whose first output time is its start)."""
    return _one_result(n.attrs["fun"], [n.args[1][0], n.args[0], *n.args[2:]])


def _odeint(n: Any) -> bool:
    return n.attrs["call"].function == "odeint"


def ivp_forward(n: Any, t: Sequence[Expr | None]) -> Expr | None:
    theta = n.args[2:]
    live = tuple(j for j in range(len(theta)) if t[2 + j] is not None)
    if t[0] is None and not live and t[1] is None:
        return None
    nb, batch = _batch_of(t, n.args)
    k = math.prod(batch)
    states = n.args[0].shape[0]
    y0_dot = None if t[0] is None else F.reshape(t[0], (k, states))
    if t[1] is not None and _odeint(n):  # a later start moves the solution back along f
        shift = F.reshape(t[1][..., 0], (k, 1)) * _start_slope(n)
        y0_dot = -shift if y0_dot is None else y0_dot - shift
    out = None
    if y0_dot is not None or live:
        dots = [F.reshape(t[2 + j], (k, *theta[j].shape)) for j in live]
        y0_dot = _zeros((k, states)) if y0_dot is None else y0_dot
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
                                   _zeros(batch + (n.shape[1] - 1,))], axis=-1)
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
            f = _one_result(fun, [t, y, *theta])
            got = _multi_vjp([(f, lam)], [y, *[theta[j] for j in wanted]])
            parts = [(_zeros((rows, states)) if got[0] is None else got[0])]
            for m, a in zip(sizes, got[1:]):
                parts.append(_zeros((rows, m)) if a is None else F.reshape(a, (rows, m)))
            return [-F.concatenate([F.reshape(a, (-1,)) for a in parts], axis=0)]

        return closed(rhs, [avals[0], ((size,), "float64"), avals[1], *avals[2:]])

    return _cached(fun, ("adjoint", states, wanted, rows), build)


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
        from ..ops.solvers import _Run, _sg_integrate

        ys = _sg_integrate(ivp.spec(), _Run(decay), None, y0, times, (pa, pb))["y"]
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


DERIVED.update(examples=examples,
               optimize_forward=optimize_forward, optimize_backprop=optimize_backprop,
               info_rule=_info_rule, root_forward=root_forward, root_backprop=root_backprop,
               linear_forward=linear_forward, linear_backprop=linear_backprop,
               ivp_forward=ivp_forward, ivp_backprop=ivp_backprop, adjoint_rule=_adjoint_rule)
