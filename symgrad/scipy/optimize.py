"""``symgrad.scipy.optimize``: SciPy's root finders and minimisers on symbolic values, with
SciPy's names, signatures and meanings, differentiated implicitly.

The solve is SciPy's own, run when the function runs (the interpreter and emitted code call
``scipy.optimize``); the callbacks (``fun``, and the derivatives SciPy is given) are traced
once and emitted as functions of their own. The solution is one node: its derivative with
respect to everything the callback reads through ``args`` or closures is the implicit
function theorem's (:mod:`symgrad.transforms.implicit`), built from symgrad's own
Jacobian (``minimize``: Hessian) at the solution, so it differentiates again. The initial
guess and the bracket get no derivative (the solution does not move with them).

* ``root`` (every method), ``fsolve``: ``fun(x, *args) = 0``;
* ``root_scalar``, ``brentq``, ``brenth``, ``ridder``, ``bisect``, ``toms748``, ``newton``
  (a scalar or elementwise root);
* ``minimize`` (every method, bounds included: a component at an active bound follows the
  bound): ``.x`` by stationarity of ``fun``; ``least_squares`` likewise, of its cost
  (every ``loss``).

Where SciPy would difference ``fun`` numerically for a derivative it is not given (``root``'s
``hybr``/``lm`` Jacobian, ``minimize``'s gradient and the Hessians its Newton methods need,
``least_squares``' Jacobian), symgrad gives it the exact one: SciPy's algorithm, with
fewer calls. A derivative the user gives (``jac=``, ``jac=True``, ``fprime=``) is traced and
given as it is; a finite-difference scheme named by a string (``jac='2-point'``) is kept.

Results keep SciPy's result objects' fields: ``.x`` and ``.fun`` (and ``least_squares``'
``.cost``) are expressions computed from the solution and differentiable; ``.success``,
``.status``, ``.nfev``, ``.nit``, ... are SciPy's run-time values (one SciPy call gives the
solution and all of them); ``.message``, a string, cannot be an expression (read
``.status``).

>>> import numpy as np, symgrad as sg
>>> import symgrad.scipy.optimize as sopt
>>> p = sg.var("p", shape=(2,))
>>> sol = sopt.root(lambda x, p: x ** 3 + x - p, np.zeros(2), args=(p,))
>>> at = {"p": [2.0, 10.0]}
>>> sg.evaluate(sol.x, at)
array([1., 2.])
>>> J = sg.evaluate(sg.jacobian(sol.x, p), at)      # 1 / (3 x^2 + 1) on the diagonal
>>> np.allclose(J, np.diag([1 / 4, 1 / 13]), rtol=1e-12, atol=0)
True
>>> bool(sg.evaluate(sol.success, at))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from .. import transforms as _transforms  # noqa: F401  (the solvers' derivative builders)
from ..base.errors import ArgumentError, ShapeError, UnsupportedError
from ..frontend.capture import rebound
from ..frontend.solvers import home, value
from ..ir.body import Body, trace
from ..ir.expr import Expr, F, const
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..ir.solvers import Call
from ..ir.values import describe, exact
from ..ops.solvers import derived_body

__all__ = ["OptimizeResult", "RootResults", "bisect", "brenth", "brentq", "fsolve",
           "least_squares", "minimize", "newton", "ridder", "root", "root_scalar", "toms748"]


class OptimizeResult(dict):
    """SciPy's ``OptimizeResult``: a dict whose keys are also attributes. ``x`` and ``fun``
    are expressions; the run-time fields (``success``, ``nfev``, ...) are expressions of
    SciPy's values; ``message`` is not available while tracing."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name == "message":
                raise UnsupportedError(
                    "the solver's message is a string SciPy writes when the function runs; "
                    "it cannot be an expression: read .success or .status") from None
            raise AttributeError(f"{name!r}: the fields of this result are "
                                 f"{', '.join(sorted(self))}") from None

    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__

    def __repr__(self) -> str:
        return "\n".join(f"{k:>16}: {v!r}" for k, v in self.items())


class RootResults(OptimizeResult):
    """SciPy's ``RootResults`` (``root``, ``converged``, ``iterations``,
    ``function_calls``; ``flag``, a string, is not available while tracing)."""

    def __getattr__(self, name: str) -> Any:
        if name == "flag":
            raise UnsupportedError("the root finder's flag is a string SciPy writes when the "
                                   "function runs; read .converged")
        return super().__getattr__(name)


# -- building one call ----------------------------------------------------------------------

_INT, _BOOL = "int64", "bool"


class _Build:
    """One SciPy call being built: the traced callbacks, the options, the operands."""

    def __init__(self, function: str, x0: Any, shape: tuple, fun: Callable, args: Any,
                 x_shape: tuple | None = None) -> None:
        self.function = function
        self.x0 = x0
        self.shape = shape  # the solution's shape
        self.x_shape = shape if x_shape is None else x_shape  # what fun receives
        self.args = _args(args, function)
        self.user_fun = fun
        self.options: dict[str, Any] = {}
        self.arrays: dict[str, Any] = {}
        self.callbacks: dict[str, Any] = {}  # name -> (function, pick) to trace with fun

    def option(self, name: str, v: Any) -> None:
        """A keyword for SciPy: plain values as they are, arrays and Exprs as operands."""
        if v is None:
            return
        plain = plain_option(v)
        if plain is not NOT_PLAIN:
            self.options[name] = plain
        else:
            self.arrays[name] = value(v, f"{self.function}: {name}")

    def trace(self, result_shape: tuple | None, fun_pick: int | None = None) -> None:
        """Trace ``fun`` and the user's derivative callbacks into one body each (one
        trace: they read the same parameters, in one order)."""
        fns = [(rebound(self.user_fun), fun_pick),
               *[(rebound(fn), pick) for fn, pick in self.callbacks.values()]]
        what = f"{self.function}: fun"
        args = self.args
        if not callable(self.user_fun):
            raise ArgumentError(f"{what} must be a function, got {describe(self.user_fun)}")
        body, self.captured = trace(
            lambda x: [callback_value(fn, x, args, pick, what) for fn, pick in fns],
            [(self.x_shape, "float64")])
        self.bodies = [Body(body.graph, body.inputs, [o], body.n_in) for o in body.outputs]
        self.fun = self.bodies[0]
        self.user = dict(zip(self.callbacks, self.bodies[1:]))
        got = self.fun.avals(self.fun.outputs)[0][0]
        if result_shape is not None and got != result_shape:
            raise ShapeError(f"{self.function}: fun returns shape {fmt(got)}, expected "
                             f"{fmt(result_shape)}")

    def node(self, jac: Body | None = None, hess: Body | None = None) -> Expr:
        arrays = dict(sorted(self.arrays.items()))
        self.call = Call(self.function, tuple(sorted(self.options.items())),
                         tuple(arrays), self.shape)
        self.attrs = {"call": self.call, "fun": self.fun, "jac": jac, "hess": hess}
        operands = [self.x0, *arrays.values()]
        graph = home(operands, self.captured)
        self.operand_ids = tuple(
            [graph.find(o) if isinstance(o, Expr) else graph.const(np.asarray(o))
             for o in operands] + [graph.find(c) for c in self.captured])
        self.graph = graph
        return Expr(graph, graph.add(REGISTRY["optimize"], self.operand_ids, self.attrs))

    def info(self, field: str, shape: tuple = (), dtype: str = _INT) -> Expr:
        """A run-time field of the call's result."""
        attrs = {**self.attrs, "field": field, "shape": tuple(shape), "dtype": dtype}
        return Expr(self.graph, self.graph.add(REGISTRY["solver_info"], self.operand_ids,
                                               attrs))

    def at_solution(self, x: Expr, body: Body) -> Expr:
        """``body`` (inputs: x, then the parameters) evaluated at the solution."""
        return body.inline([x, *[Expr(self.graph, c) for c in
                                 self.operand_ids[1 + len(self.arrays):]]])[0]


def callback_value(fn: Callable, x: Expr, args: tuple, pick: int | None, what: str) -> Expr:
    out = fn(x, *args)
    if pick is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ArgumentError(f"{what} must return (value, derivative) with jac=True, got "
                                f"{describe(out, 60)}")
        out = out[pick]
    if isinstance(out, (tuple, list)) and any(isinstance(o, Expr) for o in out):
        out = F.stack([o if isinstance(o, Expr) else const(np.float64(o)) for o in out])
    out = value(out, f"{what}'s result")  # an array filled in place: its expression
    out = out if isinstance(out, Expr) else const(out)
    return out if str(out.dtype) == "float64" else F.astype(out, "float64")


NOT_PLAIN = object()


def plain_option(v: Any) -> Any:
    """``v`` as a plain Python value (number, string, bool, None, tuple of them), or
    ``NOT_PLAIN`` for an array or an expression."""
    if isinstance(v, Expr):
        return NOT_PLAIN
    if v is None or isinstance(v, (bool, np.bool_)):
        return None if v is None else bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return exact(v)
    if isinstance(v, Mapping):
        items = [(exact(k), plain_option(x)) for k, x in v.items()]
        if any(x is NOT_PLAIN for _, x in items):
            raise UnsupportedError("solver options must be plain values (numbers, strings), "
                                   f"got {describe(v, 80)}")
        return ("__dict__", tuple(sorted(items)))
    if isinstance(v, (tuple, list)):
        items = [plain_option(x) for x in v]
        return NOT_PLAIN if any(x is NOT_PLAIN for x in items) else tuple(items)
    if isinstance(v, np.ndarray):
        return NOT_PLAIN
    raise UnsupportedError(f"cannot pass {describe(v, 80)} to a traced SciPy solver")


def _args(args: Any, function: str) -> tuple:
    if args is None:
        return ()
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


def _vector(x0: Any, function: str) -> Expr | np.ndarray:
    """``x0`` as SciPy reads it: a 1-D float vector (a scalar becomes one element)."""
    x = value(x0, f"{function}: x0")
    if x.ndim > 1:
        raise ShapeError(f"{function}: x0 must have one dimension, got shape {fmt(x.shape)} "
                         "(as in SciPy)")
    if x.ndim == 0:
        x = F.reshape(x, (1,)) if isinstance(x, Expr) else x.reshape(1)
    return _float(x)


def _flat(x0: Any, function: str) -> Expr | np.ndarray:
    """``x0`` flattened (``root``, ``fsolve``)."""
    x = value(x0, f"{function}: x0")
    flat = F.reshape(x, (max(x.size, 1),)) if isinstance(x, Expr) else x.reshape(-1)
    return _float(flat)


def _float(x: Any) -> Any:
    if isinstance(x, Expr):
        return x if str(x.dtype) == "float64" else F.astype(x, "float64")
    return np.asarray(x, dtype=np.float64)


def _refuse(function: str, **given: Any) -> None:
    for name, v in given.items():
        if v is not None and not (isinstance(v, (tuple, list)) and not v):
            raise UnsupportedError(
                f"{function}({name}=...) is not supported on symbolic values: "
                + {"callback": "a callback would see run-time arrays; leave it out",
                   "constraints": "write them as bounds, or as a penalty in the objective",
                   "hessp": "give hess= (or leave it out: symgrad gives SciPy the exact "
                            "Hessian)",
                   "jac_sparsity": "leave it out: symgrad gives SciPy the exact Jacobian",
                   "fprime2": "leave it out (Halley's method is not supported)"}.get(
                       name, "leave it out"))


def _user_derivative(build: _Build, name: str, given: Any) -> bool:
    """Register a user's derivative callback ``given`` (a function: traced with ``fun``);
    True when ``fun`` itself returns it (``jac=True``)."""
    if given is True:
        return True
    if callable(given):
        build.callbacks[name] = (given, None)
    return False


# -- root finding ----------------------------------------------------------------------------

_ROOT_FIELDS = {"hybr": ("nfev",), "lm": ("nfev",), "df-sane": ("nfev", "nit")}


def root(fun: Callable, x0: Any, args: Any = (), method: str = "hybr", jac: Any = None,
         tol: float | None = None, callback: Any = None,
         options: Mapping | None = None) -> OptimizeResult:
    """A root of ``fun(x, *args)`` (``scipy.optimize.root``, every method): ``.x`` is
    differentiable with respect to what ``fun`` reads, ``.fun`` is ``fun`` at it.

    ``jac``: None gives SciPy symgrad's exact Jacobian where the method uses one (``hybr``,
    ``lm``); False keeps SciPy's finite differences; a function, or True (``fun`` returns
    ``(value, jacobian)``), is traced and given to SciPy.

    >>> import numpy as np, symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> a = sg.var("a")
    >>> sol = sopt.root(lambda x: [x[0] + 0.5 * (x[0] - x[1]) ** 3 - a,
    ...                            0.5 * (x[1] - x[0]) ** 3 + x[1]], [0.0, 0.0])
    >>> [round(v, 6) for v in sg.evaluate(sol.x, {"a": 1.0}).tolist()]
    [0.841164, 0.158836]
    """
    _refuse("root", callback=callback)
    method = exact(method) if isinstance(method, str) else method
    x0 = _flat(x0, "root")
    b = _Build("root", x0, x0.shape, fun, args)
    pair = _user_derivative(b, "jac", jac)
    if pair:
        b.callbacks["jac"] = (fun, 1)
    b.option("method", method)
    b.option("tol", tol)
    b.option("options", options)
    b.trace(x0.shape, 0 if pair else None)
    user_jac = b.user.get("jac")
    uses_jac = str(method).lower() in ("hybr", "lm")
    jac_body = user_jac if user_jac is not None else (
        derived_body("jacobian", b.fun) if uses_jac and jac is None else None)
    x = b.node(jac=jac_body)
    res = OptimizeResult(x=x, fun=b.at_solution(x, b.fun), success=b.info("success", (), _BOOL))
    m = str(method).lower()
    if m != "df-sane":
        res["status"] = b.info("status")
    for field in _ROOT_FIELDS.get(m, ("nfev", "nit")):
        res[field] = b.info(field)
    if jac_body is not None and m == "hybr":
        res["njev"] = b.info("njev")
    return res


def fsolve(func: Callable, x0: Any, args: Any = (), fprime: Any = None,
           full_output: bool = False, col_deriv: bool = False, xtol: float = 1.49012e-08,
           maxfev: int = 0, band: Any = None, epsfcn: Any = None, factor: float = 100,
           diag: Any = None) -> Any:
    """A root of ``func(x, *args)`` by MINPACK's ``hybrd``/``hybrj``
    (``scipy.optimize.fsolve``): the solution, differentiable; with ``full_output`` also
    ``infodict`` (``nfev``, ``njev``, ``fvec``: ``func`` at the solution), ``ier`` and, in
    place of the message (a run-time string), None. Without ``fprime``, symgrad gives
    MINPACK the exact Jacobian.

    >>> import symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> c = sg.var("c")
    >>> x = sopt.fsolve(lambda x: x ** 2 - c, 1.0)
    >>> [round(float(v), 9) for v in sg.evaluate([x[0], sg.grad(x[0], c)], {"c": 4.0})]
    [2.0, 0.25]
    """
    x0 = _flat(x0, "fsolve")
    b = _Build("fsolve", x0, x0.shape, func, args)
    _user_derivative(b, "jac", fprime)
    for name, v in (("col_deriv", col_deriv), ("xtol", xtol), ("maxfev", maxfev),
                    ("band", band), ("epsfcn", epsfcn), ("factor", factor), ("diag", diag)):
        b.option(name, v)
    b.trace(x0.shape)
    if col_deriv and "jac" in b.user:
        raise UnsupportedError("fsolve(col_deriv=True) with a traced fprime: return the "
                               "Jacobian by rows (leave col_deriv out)")
    jac_body = b.user.get("jac") or (derived_body("jacobian", b.fun) if fprime is None else None)
    if col_deriv and "jac" not in b.user:
        b.options.pop("col_deriv")
    x = b.node(jac=jac_body)
    if not full_output:
        return x
    info = {"nfev": b.info("nfev"), "fvec": b.at_solution(x, b.fun)}
    if jac_body is not None:
        info["njev"] = b.info("njev")
    return x, info, b.info("ier"), None


def root_scalar(f: Callable, args: Any = (), method: str | None = None, bracket: Any = None,
                fprime: Any = None, fprime2: Any = None, x0: Any = None, x1: Any = None,
                xtol: float | None = None, rtol: float | None = None,
                maxiter: int | None = None, options: Mapping | None = None) -> RootResults:
    """A root of the scalar function ``f(x, *args)`` (``scipy.optimize.root_scalar``, every
    method): ``.root`` is differentiable (``-(df/dtheta) / (df/dx)`` at the root).
    ``fprime`` (a function, or True: ``f`` returns ``(value, derivative)``) is traced.

    >>> import symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> k = sg.var("k")
    >>> r = sopt.root_scalar(lambda x: x ** 3 - k, bracket=(0.0, 3.0))
    >>> [round(float(v), 9) for v in sg.evaluate([r.root, sg.grad(r.root, k)], {"k": 8.0})]
    [2.0, 0.083333333]
    """
    _refuse("root_scalar", fprime2=fprime2)
    if bracket is not None:
        start = _pair(bracket, "root_scalar: bracket")
    elif x0 is not None:
        start = _stack([x0] if x1 is None else [x0, x1], "root_scalar: x0")
    else:
        raise ArgumentError("root_scalar: give a bracket or x0 (as in SciPy)")
    b = _Build("root_scalar", start, (), f, args, x_shape=())
    pair = _user_derivative(b, "jac", fprime)
    if pair:
        b.callbacks["jac"] = (f, 1)
    if bracket is not None:
        b.options["bracket"] = "x0"
    for name, v in (("method", method), ("xtol", xtol), ("rtol", rtol),
                    ("maxiter", maxiter), ("options", options)):
        b.option(name, v)
    b.trace((), 0 if pair else None)
    x = b.node(jac=b.user.get("jac"))
    return RootResults(root=x, converged=b.info("converged", (), _BOOL),
                       iterations=b.info("iterations"), function_calls=b.info("function_calls"))


def _pair(v: Any, what: str) -> Any:
    if isinstance(v, Expr):
        if v.shape != (2,):
            raise ShapeError(f"{what} must be two numbers, got shape {fmt(v.shape)}")
        return _float(v)
    if not isinstance(v, (tuple, list, np.ndarray)) or len(v) != 2:
        raise ArgumentError(f"{what} must be two numbers (a, b), got {describe(v, 60)}")
    return _stack(list(v), what)


def _stack(items: list, what: str) -> Any:
    vals = [value(v, what) for v in items]
    if any(np.shape(v) != () for v in vals):
        raise ShapeError(f"{what} must be numbers")
    if any(isinstance(v, Expr) for v in vals):
        return F.stack([_float(v) if isinstance(v, Expr) else const(np.float64(v))
                        for v in vals])
    return np.array([float(v) for v in vals])


def _bracketing(name: str) -> Callable[..., Any]:
    def solve(f: Callable, a: Any, b: Any, args: Any = (), xtol: float = 2e-12,
              rtol: float = 8.881784197001252e-16, maxiter: int = 100,
              full_output: bool = False, disp: bool = True) -> Any:
        bld = _Build(name, _stack([a, b], f"{name}: a, b"), (), f, args, x_shape=())
        for key, v in (("xtol", xtol), ("rtol", rtol), ("maxiter", maxiter)):
            bld.option(key, v)
        bld.trace(())
        x = bld.node()
        if not full_output:
            return x
        return x, RootResults(root=x, converged=bld.info("converged", (), _BOOL),
                              iterations=bld.info("iterations"),
                              function_calls=bld.info("function_calls"))

    solve.__name__ = solve.__qualname__ = name
    solve.__doc__ = (
        f"A root of ``f(x, *args)`` in the bracket ``[a, b]`` (``scipy.optimize.{name}``): "
        "differentiable with respect to what ``f`` reads (not ``a``, ``b``). With "
        "``full_output``, ``(x, RootResults)``. ``disp`` is SciPy's; a run that does not "
        "converge reports it in ``.converged``.")
    return solve


brentq = _bracketing("brentq")
brenth = _bracketing("brenth")
ridder = _bracketing("ridder")
bisect = _bracketing("bisect")
toms748 = _bracketing("toms748")
brentq.__doc__ += """

    >>> import symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> s = sg.var("s")
    >>> x = sopt.brentq(lambda x, s: sg.exp(x) - s, -5.0, 5.0, args=(s,))
    >>> [round(float(v), 9) for v in sg.evaluate([x, sg.grad(x, s)], {"s": 2.0})]
    [0.693147181, 0.5]
    """


def newton(func: Callable, x0: Any, fprime: Any = None, args: Any = (), tol: float = 1.48e-08,
           maxiter: int = 50, fprime2: Any = None, x1: Any = None, rtol: float = 0.0,
           full_output: bool = False, disp: bool = True) -> Any:
    """A root of ``func(x, *args)`` near ``x0`` by Newton's method with ``fprime`` (traced),
    else the secant method (``scipy.optimize.newton``); an array ``x0`` solves elementwise.
    The root is differentiable. With ``full_output``: ``(root, RootResults)`` for a scalar,
    ``(root, converged, zero_der)`` for an array.

    >>> import symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> a = sg.var("a")
    >>> x = sopt.newton(lambda x: sg.cos(x) - a * x, 1.0, fprime=lambda x: -sg.sin(x) - a)
    >>> round(float(sg.evaluate(sg.grad(x, a), {"a": 1.0})), 9)
    -0.441610792
    """
    _refuse("newton", fprime2=fprime2)
    start = _float(value(x0, "newton: x0"))
    b = _Build("newton", start, tuple(start.shape), func, args)
    if fprime is True:
        raise ArgumentError("newton: fprime must be a function (as in SciPy)")
    _user_derivative(b, "jac", fprime)
    for name, v in (("tol", tol), ("maxiter", maxiter), ("x1", x1), ("rtol", rtol)):
        b.option(name, v)
    b.trace(tuple(start.shape))
    x = b.node(jac=b.user.get("jac"))
    if not full_output:
        return x
    if start.shape == ():
        return x, RootResults(root=x, converged=b.info("converged", (), _BOOL),
                              iterations=b.info("iterations"),
                              function_calls=b.info("function_calls"))
    return (x, b.info("converged", start.shape, _BOOL), b.info("zero_der", start.shape, _BOOL))


# -- minimisation ------------------------------------------------------------------------------

_NO_GRADIENT = ("nelder-mead", "powell", "cobyla", "cobyqa")
_HESSIAN = ("newton-cg", "dogleg", "trust-ncg", "trust-krylov", "trust-exact")


def minimize(fun: Callable, x0: Any, args: Any = (), method: str | None = None,
             jac: Any = None, hess: Any = None, hessp: Any = None, bounds: Any = None,
             constraints: Any = (), tol: float | None = None, callback: Any = None,
             options: Mapping | None = None) -> OptimizeResult:
    """A minimiser of ``fun(x, *args)`` (``scipy.optimize.minimize``, every method): ``.x``
    is differentiable with respect to what ``fun`` reads, by the implicit function theorem
    on ``grad fun = 0`` (its Jacobian: symgrad's Hessian of ``fun``); a component at an
    active bound follows that bound. ``.fun`` is ``fun`` at ``.x``.

    ``jac``: None gives SciPy symgrad's exact gradient (for the methods that use one), a
    string keeps SciPy's finite differences, a function (or True) is traced; the Newton
    methods get symgrad's exact Hessian unless ``hess`` is given.

    >>> import numpy as np, symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> lam = sg.var("lam")
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]); y = np.array([1.0, 2.0, 2.0])
    >>> ridge = lambda w, lam: np.sum((X @ w - y) ** 2) + lam * np.sum(w ** 2)
    >>> res = sopt.minimize(ridge, np.zeros(2), args=(lam,), method="BFGS",
    ...                     options={"gtol": 1e-12})
    >>> w = np.linalg.solve(X.T @ X + 0.5 * np.eye(2), X.T @ y)   # the closed form at 0.5
    >>> dw = -np.linalg.solve(X.T @ X + 0.5 * np.eye(2), w)
    >>> bool(np.allclose(sg.evaluate(sg.jacobian(res.x, lam), {"lam": 0.5}), dw, atol=1e-9))
    True
    """
    _refuse("minimize", callback=callback, hessp=hessp, constraints=constraints)
    x0 = _vector(x0, "minimize")
    b = _Build("minimize", x0, x0.shape, fun, args)
    m = (method or ("L-BFGS-B" if bounds is not None else "BFGS")).lower()
    pair = _user_derivative(b, "jac", jac)
    if pair:
        b.callbacks["jac"] = (fun, 1)
    if isinstance(jac, str):
        b.option("jac", jac)
    if callable(hess):
        b.callbacks["hess"] = (hess, None)
    elif hess is not None:
        b.option("hess", hess)
    b.option("method", method)
    b.option("tol", tol)
    b.option("options", options)
    if bounds is not None:
        _bounds(b, bounds, x0.shape[0])
    b.trace((), 0 if pair else None)
    grad = b.user.get("jac")
    if grad is None and jac is None and m not in _NO_GRADIENT:
        grad = derived_body("gradient", b.fun)
    hess_body = b.user.get("hess")
    if hess_body is None and hess is None and m in _HESSIAN:
        hess_body = derived_body("jacobian", derived_body("gradient", b.fun))
    x = b.node(jac=grad, hess=hess_body)
    res = OptimizeResult(x=x, fun=b.at_solution(x, b.fun), success=b.info("success", (), _BOOL),
                         status=b.info("status"), nfev=b.info("nfev"))
    if m not in ("cobyla",):
        res["nit"] = b.info("nit")
    if m not in _NO_GRADIENT:
        res["jac"] = b.info("jac", x0.shape, "float64")
        if m != "tnc":
            res["njev"] = b.info("njev")
    if m in _HESSIAN:
        res["nhev"] = b.info("nhev")
    if m == "bfgs":
        res["hess_inv"] = b.info("hess_inv", x0.shape * 2, "float64")
    return res


def _bounds(b: _Build, bounds: Any, n: int) -> None:
    """``minimize``'s bounds (a ``Bounds``, or ``(min, max)`` pairs, None for none) as
    the arrays ``lb``, ``ub`` (operands: a bound may be an expression)."""
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lo, hi = bounds.lb, bounds.ub
    else:
        try:
            pairs = list(bounds)
        except TypeError:
            raise ArgumentError(f"minimize: bounds must be a Bounds or (min, max) pairs, got "
                                f"{describe(bounds, 60)}") from None
        if len(pairs) != n or any(not isinstance(p, (tuple, list)) or len(p) != 2
                                  for p in pairs):
            raise ShapeError(f"minimize: bounds must give {n} (min, max) pairs")
        lo = [-np.inf if p[0] is None else p[0] for p in pairs]
        hi = [np.inf if p[1] is None else p[1] for p in pairs]
    _limits(b, lo, hi, n)


def _limits(b: _Build, lo: Any, hi: Any, n: int) -> None:
    vals = []
    for v in (lo, hi):
        items = list(v) if isinstance(v, (list, tuple)) else None
        if items is not None and any(isinstance(i, Expr) for i in items):
            v = F.stack([_float(i) if isinstance(i, Expr) else const(np.float64(i))
                         for i in items])
        v = value(v, f"{b.function}: bounds")
        v = _float(F.broadcast_to(v, (n,)) if isinstance(v, Expr) else np.broadcast_to(v, (n,)))
        vals.append(v)
    b.arrays["lb"], b.arrays["ub"] = vals


def least_squares(fun: Callable, x0: Any, jac: Any = "2-point", bounds: Any = (-np.inf, np.inf),
                  method: str = "trf", ftol: float = 1e-08, xtol: float = 1e-08,
                  gtol: float = 1e-08, x_scale: Any = None, loss: str = "linear",
                  f_scale: float = 1.0, diff_step: Any = None, tr_solver: str | None = None,
                  tr_options: Mapping | None = None, jac_sparsity: Any = None,
                  max_nfev: int | None = None, verbose: int = 0, args: Any = (),
                  kwargs: Mapping | None = None) -> OptimizeResult:
    """A least-squares solution of ``fun(x, *args, **kwargs) ~ 0``
    (``scipy.optimize.least_squares``): ``.x`` is differentiable by stationarity of the
    cost ``0.5 * sum(f_scale**2 * rho((f / f_scale)**2))`` (every ``loss``); a component at
    an active bound follows it. ``.fun`` (residuals) and ``.cost`` are computed from ``.x``.
    ``jac``: the default ``'2-point'`` (as SciPy's default) becomes symgrad's exact
    Jacobian; ``'3-point'``/``'cs'`` keep SciPy's differences; a function is traced.

    >>> import numpy as np, symgrad as sg
    >>> import symgrad.scipy.optimize as sopt
    >>> t = np.linspace(0.0, 1.0, 5); y = sg.var("y", shape=(5,))
    >>> fit = sopt.least_squares(lambda c: c[0] + c[1] * t - y, np.zeros(2))
    >>> at = {"y": [1.0, 1.4, 2.1, 2.4, 3.0]}
    >>> [round(v, 6) for v in sg.evaluate(fit.x, at).tolist()]
    [0.98, 2.0]
    >>> bool(np.allclose(sg.evaluate(sg.jacobian(fit.x, y), at),
    ...                  np.linalg.pinv(np.stack([np.ones(5), t], 1))))
    True
    """
    _refuse("least_squares", jac_sparsity=jac_sparsity)
    if verbose:
        raise UnsupportedError("least_squares(verbose=...): SciPy would print at run time; "
                               "leave it out")
    x0 = _vector(x0, "least_squares")
    extra = dict(kwargs or {})
    user = fun if not extra else (lambda x, *a: fun(x, *a, **extra))
    b = _Build("least_squares", x0, x0.shape, user, args)
    if callable(jac):
        b.callbacks["jac"] = (jac if not extra else (lambda x, *a: jac(x, *a, **extra)), None)
    elif jac not in ("2-point",):
        b.option("jac", jac)
    if not isinstance(loss, str):
        raise UnsupportedError("least_squares with a callable loss: use one of 'linear', "
                               "'soft_l1', 'huber', 'cauchy', 'arctan'")
    for name, v in (("method", method), ("ftol", ftol), ("xtol", xtol), ("gtol", gtol),
                    ("x_scale", x_scale), ("loss", loss), ("f_scale", f_scale),
                    ("diff_step", diff_step), ("tr_solver", tr_solver),
                    ("tr_options", tr_options), ("max_nfev", max_nfev)):
        b.option(name, v)
    lo, hi = bounds if not hasattr(bounds, "lb") else (bounds.lb, bounds.ub)
    bounded = not (_all_inf(lo, -1) and _all_inf(hi, 1))
    if bounded:
        _limits(b, lo, hi, x0.shape[0])
    b.trace(None)
    r_shape = b.fun.avals(b.fun.outputs)[0][0]
    if len(r_shape) != 1:
        raise ShapeError(f"least_squares: fun must return a vector, got shape {fmt(r_shape)}")
    jac_body = b.user.get("jac") or (derived_body("jacobian", b.fun) if jac == "2-point" else None)
    x = b.node(jac=jac_body)
    f = b.at_solution(x, b.fun)
    z = (f / f_scale) ** 2
    rho = {"linear": lambda: z, "soft_l1": lambda: 2.0 * (F.sqrt(1.0 + z) - 1.0),
           "huber": lambda: F.where(z <= 1.0, z, 2.0 * F.sqrt(z) - 1.0),
           "cauchy": lambda: F.log1p(z), "arctan": lambda: F.arctan(z)}.get(loss)
    if rho is None:
        raise ArgumentError(f"least_squares: unknown loss {loss!r}")
    m, n = r_shape[0], x0.shape[0]
    return OptimizeResult(
        x=x, cost=0.5 * f_scale ** 2 * F.sum(rho()), fun=f,
        jac=b.info("jac", (m, n), "float64"), grad=b.info("grad", (n,), "float64"),
        optimality=b.info("optimality", (), "float64"),
        active_mask=b.info("active_mask", (n,), _INT), nfev=b.info("nfev"),
        njev=b.info("njev"), status=b.info("status"), success=b.info("success", (), _BOOL))


def _all_inf(v: Any, sign: int) -> bool:
    if isinstance(v, Expr):
        return False
    if isinstance(v, (list, tuple)) and any(isinstance(i, Expr) for i in v):
        return False
    a = np.asarray(v, dtype=np.float64)
    return bool(np.all(a == sign * np.inf))

