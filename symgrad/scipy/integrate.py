"""``symgrad.scipy.integrate``: SciPy's ODE integrators on symbolic values, with SciPy's
names, signatures and meanings, differentiated by sensitivity equations.

``solve_ivp`` (``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF``, ``LSODA``) and ``odeint``
(LSODA) run SciPy's own solve when the function runs; the right-hand side is traced once
and emitted as a function of its own, and the stiff methods (``Radau``, ``BDF``,
``LSODA``, ``odeint``) are given its exact Jacobian (emitted too) unless ``jac`` is given.
The solution at the output times is one node, differentiable with respect to ``y0`` and
to everything the right-hand side reads through ``args`` or closures:

* forward mode, and reverse mode for few parameters: the forward sensitivity equations
  ``S' = J_y S + J_p``, solved by SciPy with the same method and tolerances alongside
  ``y`` (they differentiate again: Hessians work);
* reverse mode for many parameters: the adjoint method, solved backwards between the
  output times with each interval's forward solution recomputed from its checkpoint (the
  solution at the earlier output time).

``sensitivity="forward"`` or ``"adjoint"`` forces one (default: chosen by the sizes). The
output times must be given (``t_eval``; ``odeint``'s ``t``): without them the number of
output points would depend on the steps SciPy takes.

>>> import numpy as np, symgrad as sg
>>> from symgrad.scipy.integrate import solve_ivp
>>> k = sg.var("k")
>>> sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], t_eval=[1.0], args=(k,),
...                 rtol=1e-10, atol=1e-12)
>>> y1 = sol.y[0, 0]                                   # exp(-k)
>>> [round(float(v), 8) for v in sg.evaluate([y1, sg.grad(y1, k)], {"k": 0.5})]
[0.60653066, -0.60653066]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from .. import transforms as _transforms  # noqa: F401  (the solvers' derivative builders)
from ..base.errors import ArgumentError, ShapeError, UnsupportedError
from ..frontend.capture import rebound
from ..frontend.solvers import home, value
from ..ir.body import Body, trace
from ..ir.expr import Expr, F
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..ir.solvers import STIFF, Call
from ..ir.values import describe, exact
from ..ops.solvers import derived_body
from .optimize import NOT_PLAIN, OptimizeResult, callback_value, plain_option

__all__ = ["OdeResult", "odeint", "solve_ivp"]

_METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
_SENSITIVITY = (None, "forward", "adjoint")


class OdeResult(OptimizeResult):
    """SciPy's ``OdeResult``: ``t`` (the output times), ``y`` (``(n, len(t))``, an
    expression), and SciPy's run-time fields ``success``, ``status``, ``nfev``, ``njev``,
    ``nlu``; ``message`` is not available while tracing."""


def _times(t: Any, what: str) -> Expr | np.ndarray:
    v = value(t, what)
    if v.ndim != 1:
        raise ShapeError(f"{what} must be a 1-D array of times, got shape {fmt(v.shape)}")
    return v if isinstance(v, Expr) else np.asarray(v, dtype=np.float64)


def _y0(y0: Any, what: str) -> Expr | np.ndarray:
    v = value(y0, what)
    if v.ndim != 1:
        raise ShapeError(f"{what} must be a 1-D array, got shape {fmt(v.shape)} (as in SciPy)")
    if isinstance(v, Expr):
        return v if str(v.dtype) == "float64" else F.astype(v, "float64")
    return np.asarray(v, dtype=np.float64)


def _sensitivity(s: Any) -> str | None:
    if s not in _SENSITIVITY:
        raise ArgumentError(f"sensitivity must be None, 'forward' or 'adjoint', got "
                            f"{describe(s)}")
    return s


def _ivp(function: str, fun: Callable, jac: Any, y0: Any, times: Any, args: tuple,
         options: dict, sensitivity: str | None, stiff: bool) -> tuple[Expr, Any]:
    """The ``ivp`` node of one call, and what its fields need."""
    n = y0.shape[0]
    what = f"{function}: the right-hand side"
    fns = [(rebound(fun), None)]
    if callable(jac):
        fns.append((rebound(jac), None))
    elif jac is not None:
        matrix = value(jac, f"{function}: jac")
        if matrix.shape != (n, n):
            raise ShapeError(f"{function}: jac must be ({n}, {n}), got {fmt(matrix.shape)}")
        fns.append((lambda t, y, *a: matrix, None))

    def both(t: Expr, y: Expr) -> list[Expr]:
        return [_rhs(fn, t, y, args, what) for fn, _ in fns]

    body, captured = trace(both, [((), "float64"), ((n,), "float64")])
    bodies = [Body(body.graph, body.inputs, [o], body.n_in) for o in body.outputs]
    got = bodies[0].avals(bodies[0].outputs)[0][0]
    if got != (n,):
        raise ShapeError(f"{function}: the right-hand side returns shape {fmt(got)} for a "
                         f"state of shape ({n},)")
    fun_body = bodies[0]
    jac_body = bodies[1] if len(bodies) > 1 else (derived_body("jacobian", fun_body, 1) if stiff
                                                  else None)
    plain = {}
    for k, v in options.items():
        p = plain_option(v)
        if p is NOT_PLAIN:
            raise UnsupportedError(f"{function}({k}=...) must be a number or a tuple of "
                                   "numbers (a symbolic tolerance is not supported)")
        if p is not None:
            plain[k] = p
    call = Call(function, tuple(sorted(plain.items())), (), (n, times.shape[0]), sensitivity)
    operands = [y0, times]
    graph = home(operands, captured)
    ids = tuple([graph.find(o) if isinstance(o, Expr) else graph.const(np.asarray(o))
                 for o in operands] + [graph.find(c) for c in captured])
    attrs = {"call": call, "fun": fun_body, "jac": jac_body}
    node = Expr(graph, graph.add(REGISTRY["ivp"], ids, attrs))
    return node, (graph, ids, attrs)


def _rhs(fn: Callable, t: Expr, y: Expr, args: tuple, what: str) -> Expr:
    out = fn(t, y, *args)
    return callback_value(lambda *v: out, y, (), None, what)


def _info(parts: Any, field: str, shape: tuple = (), dtype: str = "int64") -> Expr:
    graph, ids, attrs = parts
    return Expr(graph, graph.add(REGISTRY["solver_info"], ids,
                                 {**attrs, "hess": None, "field": field, "shape": shape,
                                  "dtype": dtype}))


def solve_ivp(fun: Callable, t_span: Any, y0: Any, method: str = "RK45", t_eval: Any = None,
              dense_output: bool = False, events: Any = None, vectorized: bool = False,
              args: Any = None, *, sensitivity: str | None = None,
              **options: Any) -> OdeResult:
    """The solution of ``y' = fun(t, y, *args)``, ``y(t_span[0]) = y0``, at the times
    ``t_eval`` (``scipy.integrate.solve_ivp``): ``.y`` (shape ``(n, len(t_eval))``) is
    differentiable with respect to ``y0`` and to what ``fun`` reads; ``.t`` is ``t_eval``.

    ``method``: ``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF`` or ``LSODA``; the stiff
    ones get the exact Jacobian unless ``jac`` is given. ``options``: SciPy's (``rtol``,
    ``atol``, ``max_step``, ``first_step``, ``min_step``, ``jac``). ``sensitivity``:
    ``"forward"``, ``"adjoint"`` or None (chosen by the sizes). ``t_eval`` is required;
    ``dense_output`` and ``events`` are not supported (their results are objects built
    when the function runs). A solve that fails leaves NaN past the failure, and
    ``.success``/``.status`` say so.

    >>> import numpy as np, symgrad as sg
    >>> from symgrad.scipy.integrate import solve_ivp
    >>> y0 = sg.var("y0", shape=(2,))
    >>> sol = solve_ivp(lambda t, y: [y[1], -y[0]], (0.0, np.pi), y0, t_eval=[np.pi],
    ...                 method="DOP853", rtol=1e-12, atol=1e-12)
    >>> np.round(sg.evaluate(sg.jacobian(sol.y[:, 0], y0), {"y0": [1.0, 0.0]}), 8) + 0.0
    array([[-1.,  0.],
           [ 0., -1.]])
    """
    if t_eval is None:
        raise UnsupportedError(
            "solve_ivp(t_eval=None): the number of output times would depend on the steps "
            "SciPy takes, which are known only when the function runs; give the output "
            "times, e.g. t_eval=np.linspace(t0, t1, 101)")
    if dense_output:
        raise UnsupportedError("solve_ivp(dense_output=True): the interpolant is an object "
                               "SciPy builds when the function runs; give the times you "
                               "need in t_eval")
    if events is not None:
        raise UnsupportedError("solve_ivp(events=...): the number of events depends on the "
                               "values; find them from the solution on a fine t_eval")
    if not isinstance(method, str) or exact(method) not in _METHODS:
        raise UnsupportedError(f"solve_ivp: method must be one of {', '.join(_METHODS)}, got "
                               f"{describe(method)}")
    method = exact(method)
    t_span = _span(t_span)
    y = _y0(y0, "solve_ivp: y0")
    times = _times(t_eval, "solve_ivp: t_eval")
    jac = options.pop("jac", None)
    for bad in ("jac_sparsity", "lband", "uband"):
        if options.get(bad) is not None:
            raise UnsupportedError(f"solve_ivp({bad}=...): leave it out (symgrad gives the "
                                   "stiff methods the exact Jacobian)")
    options = {**options, "method": method, "t_span": t_span}
    args = () if args is None else tuple(args) if isinstance(args, (tuple, list)) else (args,)
    node, parts = _ivp("solve_ivp", fun, jac, y, times, args, options,
                       _sensitivity(sensitivity), method in STIFF)
    return OdeResult(t=times if isinstance(times, Expr) else np.array(times), y=node,
                     success=_info(parts, "success", (), "bool"), status=_info(parts, "status"),
                     nfev=_info(parts, "nfev"), njev=_info(parts, "njev"),
                     nlu=_info(parts, "nlu"), sol=None, t_events=None, y_events=None)


def _span(t_span: Any) -> tuple[float, float]:
    if isinstance(t_span, Expr) or (isinstance(t_span, (tuple, list))
                                    and any(isinstance(t, Expr) for t in t_span)):
        raise UnsupportedError("solve_ivp: t_span must be numbers (a symbolic start or end "
                               "time is not supported)")
    try:
        a, b = (float(t) for t in t_span)
    except (TypeError, ValueError):
        raise ArgumentError(f"solve_ivp: t_span must be two numbers (t0, tf), got "
                            f"{describe(t_span, 60)}") from None
    return a, b


def odeint(func: Callable, y0: Any, t: Any, args: Any = (), Dfun: Any = None,  # noqa: N803
           col_deriv: int = 0, full_output: int = 0, ml: Any = None, mu: Any = None,
           rtol: Any = None, atol: Any = None, tcrit: Any = None, h0: float = 0.0,
           hmax: float = 0.0, hmin: float = 0.0, ixpr: int = 0, mxstep: int = 0,
           mxhnil: int = 0, mxordn: int = 12, mxords: int = 5, printmessg: int = 0,
           tfirst: bool = False, *, sensitivity: str | None = None) -> Any:
    """The solution of ``dy/dt = func(y, t, *args)`` (``func(t, y, ...)`` with ``tfirst``)
    at the times ``t`` by LSODA (``scipy.integrate.odeint``): an expression of shape
    ``(len(t), n)``, ``y[0] = y0``, differentiable with respect to ``y0`` and what ``func``
    reads. LSODA gets the exact Jacobian unless ``Dfun`` is given. With ``full_output``,
    ``(y, infodict)``: ``nfe``, ``nje`` (run-time values).

    >>> import numpy as np, symgrad as sg
    >>> from symgrad.scipy.integrate import odeint
    >>> r = sg.var("r")
    >>> y = odeint(lambda y, t: r * y * (1.0 - y), [0.1], np.linspace(0.0, 2.0, 3),
    ...            rtol=1e-11, atol=1e-12)
    >>> logistic = lambda r: 0.1 * np.exp(2 * r) / (1 - 0.1 + 0.1 * np.exp(2 * r))
    >>> got = sg.evaluate(sg.grad(y[2, 0], r), {"r": 1.0})
    >>> bool(abs(got - (logistic(1 + 1e-6) - logistic(1 - 1e-6)) / 2e-6) < 1e-7)
    True
    """
    if col_deriv:
        raise UnsupportedError("odeint(col_deriv=1): return Dfun's Jacobian by rows")
    if ml is not None or mu is not None:
        raise UnsupportedError("odeint(ml=, mu=): leave them out (symgrad gives LSODA the "
                               "exact dense Jacobian)")
    if printmessg:
        raise UnsupportedError("odeint(printmessg=1): LSODA would print at run time; read "
                               "full_output's infodict")
    y = _y0(y0, "odeint: y0")
    times = _times(t, "odeint: t")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    rhs = func if tfirst else (lambda t_, y_, *a: func(y_, t_, *a))
    jac = Dfun
    if callable(Dfun) and not tfirst:
        jac = lambda t_, y_, *a: Dfun(y_, t_, *a)  # noqa: E731
    options = {"rtol": rtol, "atol": atol, "tcrit": tcrit, "h0": h0, "hmax": hmax,
               "hmin": hmin, "ixpr": ixpr, "mxstep": mxstep, "mxhnil": mxhnil,
               "mxordn": mxordn, "mxords": mxords}
    node, parts = _ivp("odeint", rhs, jac, y, times, args, options,
                       _sensitivity(sensitivity), True)
    out = F.matrix_transpose(node)
    if not full_output:
        return out
    steps = max(times.shape[0] - 1, 0)
    return out, {"nfe": _info(parts, "nfe", (steps,)), "nje": _info(parts, "nje", (steps,))}
