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
``solve`` and ``transpose_solve``. The integrators' rules are in
:mod:`symgrad.transforms.sensitivity`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError, SymgradError
from ..ir.body import Body
from ..ir.expr import TRACES, Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import is_float
from ..ir.solvers import Call, Solver
from ..ops.solvers import DERIVED
from .custom import transposed, vmapped
from .forward import tangents_inside
from .loop_steps import multi_vjp
from .reverse import adjoint_rewriting

__all__ = ["Aval", "batch_of", "cached", "closed", "gradient_body", "here", "jacobian_body",
           "one_result", "residual_body", "zeros"]

Aval = tuple[tuple[int, ...], str]
BOUNDED = ("minimize", "least_squares")
SCALAR = ("brentq", "brenth", "ridder", "bisect", "toms748", "root_scalar", "newton")


# -- bodies -----------------------------------------------------------------------------------

def closed(fn: Callable[..., Sequence[Any]], avals: Sequence[Aval]) -> Body:
    """``fn`` traced on fresh variables of ``avals`` into a body that reads nothing else:
    the constants it uses, and what it computes from them alone, are inside it (a
    callback's inputs are exactly its arguments)."""
    tg = Graph()
    args = [Expr(tg, tg.var(f"c{k}", s, d)) for k, (s, d) in enumerate(avals)]
    TRACES.graphs.append(tg)
    try:
        outs = [here(tg, r).node if isinstance(r, Expr)
                else tg.const(np.asarray(r, dtype=np.float64)) for r in fn(*args)]
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


def cached(body: Body, key: tuple, build: Callable[[], Body]) -> Body:
    """``build()``, made once per ``key`` for ``body`` (:meth:`~symgrad.ir.body.Body.memo`)."""
    return body.memo(key, build)


def here(graph: Graph, e: Expr) -> Expr:
    """``e`` (built with no operand: in a graph of its own) as an Expr of ``graph``."""
    return e if e.graph is graph else Expr(graph, graph.find(e))


def zeros(shape: tuple, dtype: str = "float64") -> Expr:
    return F.broadcast_to(F.zeros((), dtype=dtype), shape)


def one_result(body: Body, values: Sequence[Expr]) -> Expr:
    return body.inline(list(values))[0]


def jacobian_body(fun: Body, k: int) -> Body:
    """``(*inputs) -> d out / d input k``, of shape ``out.shape + input.shape`` (one forward
    pass with an identity seed)."""
    def build() -> Body:
        def jac(*v: Expr) -> list[Expr]:
            r = one_result(fun, v)
            x = v[k]
            m = max(x.size, 1)
            seed = here(r.graph, F.reshape(F.eye(m, dtype=x.dtype), (m, *x.shape)))
            with adjoint_rewriting(r.graph, True):
                t = tangents_inside([r], [x], [seed]).tangent_of.get(r.node)
            if t is None:
                return [zeros(r.shape + x.shape)]
            flat = F.reshape(Expr(r.graph, t), (m, max(r.size, 1)))
            return [F.reshape(F.matrix_transpose(flat), r.shape + x.shape)]

        return closed(jac, fun.avals())

    return cached(fun, ("jacobian", k), build)


def gradient_body(fun: Body, k: int = 0) -> Body:
    """``(*inputs) -> d out / d input k`` of a scalar ``out`` (one reverse pass)."""
    def build() -> Body:
        def grad(*v: Expr) -> list[Expr]:
            r = one_result(fun, v)
            (g,) = multi_vjp([(r, here(r.graph, F.ones((), dtype=r.dtype)))], [v[k]])
            return [zeros(v[k].shape) if g is None else g]

        return closed(grad, fun.avals())

    return cached(fun, ("gradient", k), build)


def _cost_body(fun: Body, loss: str, f_scale: float) -> Body:
    """``least_squares``' cost ``0.5 * sum(f_scale**2 * rho((r / f_scale)**2))``."""
    def build() -> Body:
        def cost(*v: Expr) -> list[Expr]:
            z = (one_result(fun, v) / f_scale) ** 2
            rho = {"linear": lambda: z, "soft_l1": lambda: 2.0 * (F.sqrt(1.0 + z) - 1.0),
                   "huber": lambda: F.where(z <= 1.0, z, 2.0 * F.sqrt(z) - 1.0),
                   "cauchy": lambda: F.log1p(z), "arctan": lambda: F.arctan(z)}[loss]()
            return [0.5 * f_scale ** 2 * F.sum(rho)]

        return closed(cost, fun.avals())

    return cached(fun, ("cost", loss, float(f_scale)), build)


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
            r = one_result(fun, ins)
            with adjoint_rewriting(r.graph, True):
                t = tangents_inside([r], [ins[k] for k in ks], dots).tangent_of.get(r.node)
            return [zeros(batch + r.shape) if t is None else Expr(r.graph, t)]

        return closed(jvp, [*avals, *[(batch + avals[k][0], avals[k][1]) for k in ks]])

    return cached(fun, ("jvp", ks, batch), build)


def _vjp_body(fun: Body, ks: tuple[int, ...], batch: tuple) -> Body:
    """``(*inputs, cotangent of out) -> cotangents of inputs ks`` (``batch +``)."""
    avals = fun.avals()
    out = fun.avals(fun.outputs)[0]

    def build() -> Body:
        def vjp(*v: Expr) -> list[Expr]:
            ins, g = list(v[:-1]), v[-1]
            r = one_result(fun, ins)
            got = multi_vjp([(r, g)], [ins[k] for k in ks])
            return [zeros(batch + avals[k][0]) if a is None else a for k, a in zip(ks, got)]

        return closed(vjp, [*avals, (batch + out[0], out[1])])

    return cached(fun, ("vjp", ks, batch), build)


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
        return F.reshape(one_result(jacobian_body(self.residual, 0), self.inputs()), (m, m))

    def derivative(self) -> Expr:
        """``dR/dx`` of an elementwise residual (a root of a scalar function)."""
        jb = _jvp_body(self.residual, (0,), ())
        return one_result(jb, [*self.inputs(), F.ones(self.x.shape, dtype=self.x.dtype)])

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
        rhs = one_result(jb, [*p.inputs(), *[t[p.lead + k] for k in live]])
    else:
        rhs = zeros(shape)
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
    return zeros(shape) if t is None else F.broadcast_to(t, shape)


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

def batch_of(t: Sequence[Expr | None], args: Sequence[Expr]) -> tuple[int, tuple]:
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
    nb, batch = batch_of(t, n.args)
    jb = _jvp_body(fun, tuple(1 + k for k in live), batch)
    rhs = one_result(jb, [x, *theta, *[t[1 + k] for k in live]])
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
        return one_result(jb, [x, *theta, v])

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
        return one_result(mv, [v, *theta])

    return apply


def _vecmat(n: Any, x: Expr) -> Callable[[Any], Expr]:
    """The transpose of ``matvec`` (linear in its argument): ``u -> A^T u``."""
    mv: Body = n.attrs["matvec"]
    theta = list(n.args[2:])
    vb = _vjp_body(mv, (0,), ())

    def apply(u: Any) -> Expr:
        u = _as_expr(x.graph, u, x.shape, x.dtype, "custom_linear_solve: the transpose's "
                                                     "argument")
        return one_result(vb, [x, *theta, u])

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
    nb, batch = batch_of(t, n.args)
    rhs = _tangent(t[1], batch + x.shape)
    if live:
        jb = _jvp_body(mv, tuple(1 + k for k in live), batch)
        rhs = rhs - one_result(jb, [x, *theta, *[t[2 + k] for k in live]])
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


DERIVED.update(optimize_forward=optimize_forward, optimize_backprop=optimize_backprop,
               info_rule=_info_rule, root_forward=root_forward, root_backprop=root_backprop,
               linear_forward=linear_forward, linear_backprop=linear_backprop,
               jacobian_body=jacobian_body, gradient_body=gradient_body)
