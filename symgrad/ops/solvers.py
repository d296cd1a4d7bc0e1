"""Solver calls: SciPy's root finders, minimisers and integrators, and the functions
defined implicitly by ``sg.custom_root`` and ``sg.custom_linear_solve``.

Each call is one node whose value is the solution (one array), its derivative the
implicit function theorem's, never the solver's iterations:

* ``optimize``: ``scipy.optimize.<function>`` run at run time (the interpreter and emitted
  code both call SciPy) on the callbacks ``fun`` (and ``jac``, ``hess`` where SciPy is given
  them), each a traced :class:`~symgrad.ir.body.Body` printed as a function of its own.
  Operands: the initial guess (or bracket), the keywords whose values are arrays
  (:attr:`Call.arrays`: ``lb``, ``ub``, ...), then the values the callbacks read (``args``
  and closures: the parameters ``theta``). The value is the solution ``x`` with
  ``R(x, theta) = 0``, where ``R`` is the callback itself (roots), its gradient
  (``minimize``: stationarity) or the gradient of ``least_squares``' cost.
* ``ivp``: ``scipy.integrate.solve_ivp`` (or ``odeint``) of ``fun(t, y, *theta)``, the
  value ``y`` at the output times, shape ``(n, len(t_eval))``. Operands: ``y0``, the output
  times, then ``theta``. Derivatives: forward sensitivity equations (an ``ivp`` of the
  augmented system, so they differentiate again) or the adjoint method
  (``ivp_adjoint``).
* ``ivp_adjoint``: the adjoint sweep of an ``ivp``: the cotangents of ``y0`` and of the
  parameters for a cotangent ``G`` of the output, by the adjoint equations solved backwards
  between the output times, each interval's forward solution recomputed from its
  checkpoint (the value at the earlier output time).
* ``solver_info``: one non-differentiable field of a solver call's result (``success``,
  ``nfev``, ...): the same SciPy call (remembered with its operands' bytes, so the call
  runs once for its solution and all its fields).
* ``custom_root`` / ``custom_linear_solve``: ``jax.lax``'s. The value is operand 0, the
  user's ``solve`` traced inline; the derivative is implicit (the user's
  ``tangent_solve`` / ``solve`` and ``transpose_solve`` on the linearised system).

The rules are built by :mod:`symgrad.transforms.implicit`.

>>> import symgrad as sg
>>> import symgrad.scipy.optimize as sopt
>>> p = sg.var("p")
>>> x = sopt.brentq(lambda x, p: x ** 3 - p, 0.0, 10.0, args=(p,))
>>> [round(float(v), 12) for v in sg.evaluate([x, sg.grad(x, p)], {"p": 8.0})]
[2.0, 0.083333333333]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import ShapeError, SymgradError
from ..ir.body import Body
from ..ir.op import Op, register, sig
from ..ir.shapes import fmt
from ..ir.solvers import Call, Solver, literal

__all__ = ["CUSTOM_LINEAR_SOLVE", "CUSTOM_ROOT", "DERIVED", "IVP", "IVP_ADJOINT", "OPTIMIZE",
           "SOLVER_INFO", "BodyFunction", "Call", "Solver", "derived_body", "literal",
           "stacked_scalars"]


# The rules, built by the transforms: filled by :mod:`symgrad.transforms.implicit` when it is
# imported.
DERIVED: dict[str, Callable[..., Any]] = {}


def _derived(kind: str) -> Callable[..., Any]:
    """The builder ``kind`` that :mod:`symgrad.transforms` registers (the op imports none
    of it: rules point down)."""
    found = DERIVED.get(kind)
    if found is None:
        raise SymgradError(f"a solver call's {kind}: symgrad.transforms is not loaded; "
                           "import symgrad.transforms (any sg.grad loads it)")
    return found


def _rule(kind: str) -> Callable[..., Any]:
    return lambda n, g: _derived(kind)(n, g)


def derived_body(kind: str, fun: Body, k: int = 0) -> Body:
    """The callback derived from ``fun`` that SciPy is given where it would difference
    ``fun``: ``"jacobian"`` (of the result with respect to input ``k``) or ``"gradient"``
    (of a scalar result), built by :mod:`symgrad.transforms.implicit`."""
    return _derived(f"{kind}_body")(fun, k)


def stacked_scalars(nodes: Any, n: Any) -> bool:
    """Whether node ``n`` stacks 0-d values into a vector (``[f0, f1]`` returned by a
    right-hand side): emitted callbacks return them as a list, and the sensitivities of such
    a system are scalar passes (:mod:`symgrad.transforms.sensitivity`)."""
    return n.op == "stack" and len(n.shape) == 1 and all(nodes[a].shape == () for a in n.args)


# -- run time: SciPy's calls, remembered with their operands' bytes -----------------------------

def _sg_optimize(spec, fun, jac, hess, x0, arrays, args, _memo=[]):  # noqa: B006 - the cache
    """The result of ``scipy.optimize.<spec[0]>`` as a dict of arrays (the solution under
    ``"x"``). The nodes of one call (its solution and its fields) would each call SciPy:
    the last few calls are remembered with the bytes of their operands, and a call with
    the same bytes reuses the result."""
    import numpy as np
    import scipy.optimize as so

    def key_of(a):
        a = np.asarray(a)
        return (a.shape, a.dtype.str, a.tobytes())

    key = (spec, fun, jac, hess, key_of(x0), tuple(map(key_of, arrays)), tuple(map(key_of, args)))
    for seen, out in tuple(_memo):
        if seen == key:
            return out
    name, options, array_names = spec
    kw = {k: dict(v[1]) if isinstance(v, tuple) and v[:1] == ("__dict__",) else v
          for k, v in options}
    kw.update(zip(array_names, arrays))
    args = tuple(args)
    if "lb" in kw:
        lb, ub = kw.pop("lb"), kw.pop("ub")
        kw["bounds"] = so.Bounds(lb, ub) if name == "minimize" else (lb, ub)
    if name in ("brentq", "brenth", "ridder", "bisect", "toms748"):
        a, b = (float(v) for v in np.asarray(x0))
        x, r = getattr(so, name)(fun, a, b, args=args, full_output=True, disp=False, **kw)
        out = {"x": np.float64(x), "converged": r.converged, "iterations": r.iterations,
               "function_calls": r.function_calls}
    elif name == "root_scalar":
        x0 = np.asarray(x0)
        if kw.get("bracket") == "x0":
            kw["bracket"] = tuple(float(v) for v in x0[:2])
        elif x0.size:
            kw["x0"], kw["x1"] = (float(x0[0]), float(x0[1]) if x0.size > 1 else None)
        r = so.root_scalar(fun, args=args, fprime=jac, fprime2=hess, **kw)
        out = {"x": np.float64(r.root), "converged": r.converged, "iterations": r.iterations,
               "function_calls": r.function_calls}
    elif name == "newton":
        x0 = np.asarray(x0, dtype=np.float64)
        start = float(x0) if x0.ndim == 0 else x0
        got = so.newton(fun, start, fprime=jac, args=args, fprime2=hess, full_output=True,
                        disp=False, **kw)
        if x0.ndim == 0:
            x, r = got
            out = {"x": np.float64(x), "converged": r.converged, "iterations": r.iterations,
                   "function_calls": r.function_calls}
        else:
            x, converged, zero_der = got[:3]
            out = {"x": np.asarray(x, dtype=np.float64), "converged": np.all(converged),
                   "zero_der": np.any(zero_der)}
    elif name == "fsolve":
        x, info, ier, _ = so.fsolve(fun, x0, args=args, fprime=jac, full_output=True, **kw)
        out = {"x": np.asarray(x, dtype=np.float64), "ier": ier, "nfev": info["nfev"],
               "njev": info.get("njev", 0), "fvec": info["fvec"]}
    else:
        if name == "root":
            r = so.root(fun, x0, args=args, jac=jac, **kw)
        elif name == "minimize":
            jac = jac if jac is not None else kw.pop("jac", None)
            r = so.minimize(fun, x0, args=args, jac=jac, hess=hess, **kw)
        else:
            jac = jac if jac is not None else kw.pop("jac", "2-point")
            r = so.least_squares(fun, x0, jac=jac, args=args, **kw)
        out = {k: v for k, v in r.items() if k != "message"}
        out["x"] = np.asarray(r.x, dtype=np.float64)
    _memo.insert(0, (key, out))
    del _memo[4:]
    return out


def _sg_integrate(spec, fun, jac, y0, times, args, _memo=[]):  # noqa: B006 - the cache
    """The result of ``scipy.integrate.solve_ivp`` (or ``odeint``) as a dict of arrays:
    ``"y"`` the solution at ``times``, shape ``(n, len(times))``; columns past a failed
    step are NaN (``status`` says why). Remembered as :func:`_sg_optimize` does."""
    import numpy as np
    import scipy.integrate as si

    def key_of(a):
        a = np.asarray(a)
        return (a.shape, a.dtype.str, a.tobytes())

    key = (spec, fun, jac, key_of(y0), key_of(times), tuple(map(key_of, args)))
    for seen, out in tuple(_memo):
        if seen == key:
            return out
    name, options, _ = spec
    kw = {k: dict(v[1]) if isinstance(v, tuple) and v[:1] == ("__dict__",) else v
          for k, v in options}
    y0, times, args = np.asarray(y0, dtype=np.float64), np.asarray(times), tuple(args)
    y = np.full((y0.size, times.size), np.nan)
    if name == "odeint":
        got, info = si.odeint(fun, y0, times, args=args, Dfun=jac, full_output=True,
                              tfirst=True, **kw)
        ok = info["message"] == "Integration successful."
        reached = np.abs(info["tcur"] - times[0]) >= np.abs(times[1:] - times[0])
        done = times.size if ok else 1 + int(np.argmin(reached) if not reached.all()
                                             else reached.size)
        y[:, :done] = got[:done].T
        out = {"y": y, "success": ok, "nfe": info["nfe"], "nje": info["nje"]}
    else:
        t_span = kw.pop("t_span")
        if jac is not None:
            kw["jac"] = jac
        sol = si.solve_ivp(fun, t_span, y0, t_eval=times, args=args or None, **kw)
        y[:, :sol.y.shape[1]] = sol.y
        out = {"y": y, "success": sol.success, "status": sol.status, "nfev": sol.nfev,
               "njev": sol.njev, "nlu": sol.nlu}
    _memo.insert(0, (key, out))
    del _memo[4:]
    return out


def _sg_ivp_adjoint(spec, fun, jac, adj, adj_jac, size, y0, times, ys, g, args):
    """The adjoint sweep of an ``ivp`` (:mod:`symgrad.transforms.implicit`): for the
    cotangents ``g`` (``(k, n, len(times))``) of the solution ``ys`` at ``times``, the rows
    ``[lambda(t0), mu]`` (``(k, n + p)``; ``size = k * (n + p)``) with ``lambda`` the
    cotangent of ``y0`` and ``mu`` that of the parameters. Between consecutive output times
    the forward solution is recomputed from the earlier one (the checkpoint) with dense
    output, and the adjoint equations ``lambda' = -J_y^T lambda``, ``mu' = -J_p^T lambda``
    (``adj``, its Jacobian ``adj_jac``) are solved backwards along it with the same method
    and tolerances."""
    import numpy as np
    import scipy.integrate as si

    name, options, _ = spec
    kw = dict(options)
    y0, times, ys, g = (np.asarray(a, dtype=np.float64) for a in (y0, times, ys, g))
    args = tuple(args)
    k, n, count = g.shape
    t0 = kw["t_span"][0] if name == "solve_ivp" else float(times[0])
    method = kw.get("method", "RK45") if name == "solve_ivp" else "LSODA"
    stiff = method in ("Radau", "BDF", "LSODA")
    rtol = float(np.min(kw.get("rtol", 1.49012e-8 if name == "odeint" else 1e-3)))
    atol = float(np.min(kw.get("atol", 1.49012e-8 if name == "odeint" else 1e-6)))
    steps = {key: kw[key] for key in ("max_step", "first_step", "min_step") if key in kw}
    # the parameters' cotangents are quadratures: outside the error control, as CVODES does
    tols = np.full(size, np.inf)
    tols[:k * n] = atol
    backward = "Radau" if method == "BDF" else method  # BDF fails on some adjoints (Robertson)
    z = np.zeros(size)
    for i in range(count - 1, -1, -1):
        z[:k * n] += g[:, :, i].reshape(-1)
        t_hi = float(times[i])
        t_lo, y_lo = (float(times[i - 1]), ys[:, i - 1]) if i > 0 else (t0, y0)
        if t_hi == t_lo:
            continue
        jacs = {"jac": jac} if stiff and jac is not None else {}
        forward = si.solve_ivp(fun, (t_lo, t_hi), y_lo, method=method, args=args or None,
                               dense_output=True, rtol=rtol, atol=atol, **jacs, **steps)
        if not forward.success:
            raise ArithmeticError(f"the adjoint's forward pass failed: {forward.message}")
        y_at = forward.sol
        jacs = ({"jac": lambda t, zz, y_at=y_at: adj_jac(t, zz, y_at(t), *args)}
                if stiff and adj_jac is not None else {})
        back = si.solve_ivp(lambda t, zz, y_at=y_at: adj(t, zz, y_at(t), *args), (t_hi, t_lo), z,
                            method=backward, rtol=rtol, atol=tols, **jacs, **steps)
        if not back.success:
            raise ArithmeticError(f"the adjoint sweep failed: {back.message}")
        z = back.y[:, -1].copy()
    p = size // k - n
    return np.concatenate([z[:k * n].reshape(k, n), z[k * n:].reshape(k, p)], axis=1)


# -- the stanzas --------------------------------------------------------------------------------

_OPT = sig("*operands", call=None, fun=None, jac=None, hess=None)
_INFO = sig("*operands", call=None, fun=None, jac=None, hess=None, field="success",
            shape=(), dtype="bool", strings=("field", "dtype"))
_IVP = sig("*operands", call=None, fun=None, jac=None)
_ADJ = sig("*operands", call=None, fun=None, jac=None, adj=None, adj_jac=None, size=0)
_ROOT = sig("*operands", fun=None, tangent_solve=None)
_LINEAR = sig("*operands", matvec=None, solve=None, transpose_solve=None, symmetric=False)


def _bodies(attrs: dict, *names: str) -> None:
    for name in names:
        if attrs.get(name) is not None and not isinstance(attrs[name], Body):
            raise ShapeError(f"a solver call's {name} must be a traced body (use "
                             "symgrad.scipy.optimize / integrate)")


def _call(attrs: dict, what: str) -> Call:
    call = attrs["call"]
    if not isinstance(call, Call):
        raise ShapeError(f"{what} needs its Call (use symgrad.scipy.optimize / integrate)")
    return call


def _check_theta(what: str, shapes: tuple, dtypes: tuple, fun: Body, first: int,
                 lead: int) -> None:
    """Operands ``lead:`` are the callback's inputs from ``first`` on."""
    want = fun.avals()[first:]
    got = list(zip(shapes[lead:], dtypes[lead:]))
    if len(got) != len(want):
        raise ShapeError(f"{what}: the callback reads {len(want)} values, the call gives "
                         f"{len(got)}")
    for k, ((s, d), (ws, wd)) in enumerate(zip(got, want)):
        if s != ws or d != wd:
            raise ShapeError(f"{what}: operand {lead + k} has shape {fmt(s)} {d}, the "
                             f"callback reads {fmt(ws)} {wd}")


def _infer_optimize(shapes, dtypes, attrs):
    call = _call(attrs, "optimize")
    _bodies(attrs, "fun", "jac", "hess")
    _check_theta(call.function, shapes, dtypes, attrs["fun"], 1, 1 + len(call.arrays))
    return call.shape, "float64"


def _infer_info(shapes, dtypes, attrs):
    _call(attrs, "solver_info")
    _bodies(attrs, "fun", "jac", "hess")
    return tuple(attrs["shape"]), attrs["dtype"]


def _infer_ivp(shapes, dtypes, attrs):
    call = _call(attrs, "ivp")
    _bodies(attrs, "fun", "jac")
    if len(shapes) < 2 or len(shapes[0]) != 1 or len(shapes[1]) != 1:
        raise ShapeError(f"{call.function}: y0 and the output times must be vectors, got "
                         f"{[fmt(s) for s in shapes[:2]]}")
    _check_theta(call.function, shapes, dtypes, attrs["fun"], 2, 2)
    return (shapes[0][0], shapes[1][0]), "float64"


def _infer_adjoint(shapes, dtypes, attrs):
    call = _call(attrs, "ivp_adjoint")
    _bodies(attrs, "fun", "jac", "adj", "adj_jac")
    if len(shapes) < 4 or len(shapes[3]) != 3:
        raise ShapeError(f"{call.function}'s adjoint: the cotangent must be (k, n, times)")
    k = shapes[3][0]
    return (k, attrs["size"] // k), "float64"


def _infer_root(shapes, dtypes, attrs):
    fun = attrs["fun"]
    if not isinstance(fun, Body) or not isinstance(attrs["tangent_solve"], Solver):
        raise ShapeError("custom_root: use sg.custom_root")
    _check_theta("custom_root", shapes, dtypes, fun, 1, 1)
    return shapes[0], dtypes[0]


def _infer_linear(shapes, dtypes, attrs):
    mv = attrs["matvec"]
    if not isinstance(mv, Body) or not isinstance(attrs["solve"], Solver):
        raise ShapeError("custom_linear_solve: use sg.custom_linear_solve")
    if shapes[0] != shapes[1]:
        raise ShapeError(f"custom_linear_solve: the solution has shape {fmt(shapes[0])}, b "
                         f"{fmt(shapes[1])}")
    _check_theta("custom_linear_solve", shapes, dtypes, mv, 1, 2)
    return shapes[0], dtypes[0]


def _callable(body: Body | None) -> Callable | None:
    """A traced callback as a Python function (what the interpreter gives SciPy)."""
    if body is None:
        return None
    if len(body.outputs) != 1:
        raise ShapeError("a solver callback must have one result")
    return BodyFunction(body)


class BodyFunction:
    """``body`` as a function of arrays, equal to another for the same body."""

    __slots__ = ("body",)

    def __init__(self, body: Body) -> None:
        self.body = body

    def __call__(self, *values: Any) -> np.ndarray:
        return self.body.run([np.asarray(v, dtype=d) for v, (_, d)
                              in zip(values, self.body.avals())])[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BodyFunction) and other.body == self.body

    def __hash__(self) -> int:
        return hash(self.body)


def _impl_optimize(*arrays, call, fun, jac, hess):
    k = 1 + len(call.arrays)
    out = _sg_optimize(call.spec(), _callable(fun), _callable(jac), _callable(hess),
                       arrays[0], arrays[1:k], arrays[k:])
    return np.array(out["x"], dtype=np.float64).reshape(call.shape)  # a copy: the memo's stays


def _impl_info(*arrays, call, fun, jac, hess, field, shape, dtype):
    if call.function in ("solve_ivp", "odeint"):
        out = _sg_integrate(call.spec(), _callable(fun), _callable(jac), arrays[0], arrays[1],
                            arrays[2:])
    else:
        k = 1 + len(call.arrays)
        out = _sg_optimize(call.spec(), _callable(fun), _callable(jac), _callable(hess),
                           arrays[0], arrays[1:k], arrays[k:])
    return np.array(out[field], dtype=dtype).reshape(shape)


def _impl_ivp(*arrays, call, fun, jac):
    return _sg_integrate(call.spec(), _callable(fun), _callable(jac), arrays[0], arrays[1],
                         arrays[2:])["y"].copy()


def _impl_adjoint(*arrays, call, fun, jac, adj, adj_jac, size):
    return _sg_ivp_adjoint(call.spec(), _callable(fun), _callable(jac), _callable(adj),
                           _callable(adj_jac), size, arrays[0], arrays[1], arrays[2],
                           arrays[3], arrays[4:])


def _first(*arrays, **attrs):
    return np.asarray(arrays[0])


def _examples(kind: str) -> Callable[[Any], list]:
    def examples(rng) -> list:
        return _derived("examples")(kind, rng)

    return examples


OPTIMIZE = register(Op(
    name="optimize", signature=_OPT, infer=_infer_optimize, impl=_impl_optimize,
    backprop=_rule("optimize_backprop"), forward=_rule("optimize_forward"), public=False,
    domain=None, examples=_examples("optimize"),
    doc="the solution of a scipy.optimize call (symgrad.scipy.optimize)"))

SOLVER_INFO = register(Op(
    name="solver_info", signature=_INFO, infer=_infer_info, impl=_impl_info,
    backprop=_rule("info_rule"), forward=_rule("info_rule"), public=False,
    differentiable=False, domain=None, examples=_examples("solver_info"),
    doc="a field of a SciPy solver's result (success, nfev, ...): a run-time value"))

IVP = register(Op(
    name="ivp", signature=_IVP, infer=_infer_ivp, impl=_impl_ivp,
    backprop=_rule("ivp_backprop"), forward=_rule("ivp_forward"), public=False, domain=None,
    examples=_examples("ivp"),
    doc="the solution of scipy.integrate.solve_ivp / odeint at the output times"))

IVP_ADJOINT = register(Op(
    name="ivp_adjoint", signature=_ADJ, infer=_infer_adjoint, impl=_impl_adjoint,
    backprop=_rule("adjoint_rule"), forward=_rule("adjoint_rule"), public=False,
    differentiable=False, domain=None, examples=_examples("ivp_adjoint"),
    doc="the adjoint sweep of an ivp: the cotangents of y0 and the parameters"))

CUSTOM_ROOT = register(Op(
    name="custom_root", signature=_ROOT, infer=_infer_root, impl=_first,
    backprop=_rule("root_backprop"), forward=_rule("root_forward"), public=False,
    differentiable=False, domain=None, examples=_examples("custom_root"),
    doc="a zero of f found by the user's solve, differentiated implicitly (sg.custom_root)"))

CUSTOM_LINEAR_SOLVE = register(Op(
    name="custom_linear_solve", signature=_LINEAR, infer=_infer_linear, impl=_first,
    backprop=_rule("linear_backprop"), forward=_rule("linear_forward"), public=False,
    differentiable=False, domain=None, examples=_examples("custom_linear_solve"),
    doc="the solution of matvec(x) = b by the user's solve (sg.custom_linear_solve)"))
