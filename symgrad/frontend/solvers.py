"""Functions defined by what they solve: ``sg.custom_root`` and ``sg.custom_linear_solve``
(``jax.lax``'s signatures and meanings), and the tracing of a solver's callbacks that
``symgrad.scipy.optimize`` and ``symgrad.scipy.integrate`` share.

A callback (``f``, ``matvec``, a SciPy ``fun``) is traced once on fresh variables into a
:class:`~symgrad.ir.body.Body`; the values it reads from outside (``args``, closures:
the parameters) become operands of the solver's node, so every transform sees them. The
solver's node has the solution as its value and the implicit function theorem as its
derivative (:mod:`symgrad.transforms.implicit`), whatever ``solve`` did to find it.

>>> import symgrad as sg
>>> a = sg.var("a")
>>> def newton(f, x0):                       # ten Newton steps: the solve JAX would trace
...     step = lambda i, x: x - f(x) / sg.grad(f)(x)
...     return sg.fori_loop(0, 10, step, x0)
>>> x = sg.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
>>> [round(float(v), 12) for v in sg.evaluate([x, sg.grad(x, a)], {"a": 2.0})]
[1.414213562373, 0.353553390593]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.describe import type_name
from ..base.errors import ArgumentError, ShapeError, UnsupportedError
from ..ir.body import Body, trace
from ..ir.expr import Expr, F, const
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..ir.solvers import Solver
from ..ir.values import as_constant, stood_for
from .capture import rebound
from .loops import home_graph

__all__ = ["Traced", "callback", "custom_linear_solve", "custom_root", "home", "value"]

Aval = tuple[tuple[int, ...], str]


def value(v: Any, what: str) -> Expr | np.ndarray:
    """An Expr as it is (an array filled with expressions: its value); anything else as a
    float64 array constant."""
    v = stood_for((v,))[0]
    if isinstance(v, Expr):
        return v
    try:
        a = as_constant(v)
    except Exception as e:  # a list of strings, an object: say which argument
        raise ArgumentError(f"{what} must be an array or a number, got {type_name(v)}") from e
    if a.dtype.kind not in "biuf":
        raise ArgumentError(f"{what} must hold numbers, got {a.dtype}")
    return np.asarray(a, dtype=np.float64)


def aval(v: Expr | np.ndarray) -> Aval:
    return (tuple(v.shape), str(v.dtype))


class Traced:
    """A traced callback: its body and the values it read from outside (its parameters,
    Exprs of the user's graph, in order)."""

    def __init__(self, body: Body, captured: list[Expr]) -> None:
        self.body, self.captured = body, captured

    @property
    def result(self) -> Aval:
        return self.body.avals(self.body.outputs)[0]


def callback(fn: Callable[..., Any], avals: Sequence[Aval], args: tuple, what: str,
             pick: int | None = None) -> Traced:
    """``fn(*inputs, *args)`` traced on fresh inputs of ``avals``; its one result (or result
    ``pick`` of a pair, for ``jac=True``) as a float64 array."""
    if not callable(fn):
        raise ArgumentError(f"{what} must be a function, got {type_name(fn)}")
    fn = rebound(fn)

    def traced(*v: Expr) -> list[Any]:
        out = fn(*v, *args)
        if pick is not None:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise ArgumentError(f"{what} must return a pair (value, derivative) when "
                                    f"jac=True, got {type_name(out)}")
            out = out[pick]
        if isinstance(out, (tuple, list)) and any(isinstance(o, Expr) for o in out):
            out = F.stack([o if isinstance(o, Expr) else const(o) for o in out])
        if not isinstance(out, Expr):
            out = np.asarray(value(out, f"{what}'s result"))
        if str(out.dtype) != "float64":
            out = F.astype(out, "float64") if isinstance(out, Expr) else out.astype(np.float64)
        return [out]

    body, captured = trace(traced, list(avals))
    return Traced(body, captured)


def home(values: Sequence[Any], captured: Sequence[Expr]) -> Graph:
    """The graph a solver's node goes in (the trace around it, else the operands')."""
    return home_graph(list(values), list(captured))


def _leaf(v: Any, what: str) -> Expr | np.ndarray:
    if isinstance(v, (tuple, list, dict)):
        raise UnsupportedError(f"{what} must be one array (a pytree is not supported): "
                               "ravel it into one vector")
    return value(v, what)


def _flag(v: Any, what: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentError(f"{what} must be True or False, got {type_name(v)}")
    return bool(v)


def _float(x: Expr) -> Expr:
    return x if str(x.dtype) == "float64" else F.astype(x, "float64")


def _node(op: str, operands: Sequence[Any], attrs: dict, captured: Sequence[Expr]) -> Expr:
    graph = home(operands, captured)
    ids = []
    for o in [*operands, *captured]:
        ids.append(graph.find(o) if isinstance(o, Expr) else graph.const(np.asarray(o)))
    return Expr(graph, graph.add(REGISTRY[op], tuple(ids), attrs))


def _solver(fn: Any, what: str) -> Solver:
    if not callable(fn):
        raise ArgumentError(f"{what} must be a function, got {type_name(fn)}")
    return Solver(rebound(fn), f"{what} {getattr(fn, '__name__', 'fun')}")


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False) -> Any:
    """A zero of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly
    (``jax.lax.custom_root``).

    ``solve`` is traced as written (a Newton loop in ``sg.fori_loop``, a call of
    ``symgrad.scipy.optimize.root``, ...) and gives the value; the derivative is the
    implicit function theorem's: with ``g`` the linearisation of ``f`` at the solution,
    ``tangent_solve(g, y)`` must solve ``g(x) = y`` (``lambda g, y: y / g(1.0)`` for a
    scalar; ``sg.solve(sg.jacobian(g)(y), y)`` for a vector), and reverse mode transposes
    it (it must be linear in ``y``). The parameters are what ``f`` reads from outside
    (closures, globals): the solution's derivative with respect to them. ``has_aux``:
    ``solve`` returns ``(solution, aux)`` and ``aux`` is returned with no derivative.
    The solution is one array (ravel a pytree into one vector).

    >>> import symgrad as sg
    >>> b = sg.var("b", shape=(2,))
    >>> A = [[3.0, 1.0], [1.0, 2.0]]
    >>> f = lambda x: sg.matmul(sg.asarray(A), x) + x ** 3 - b
    >>> def solve(f, x0):
    ...     return sg.fori_loop(0, 30, lambda i, x: x - sg.solve(sg.jacobian(f)(x), f(x)), x0)
    >>> x = sg.custom_root(f, sg.zeros(2), solve,
    ...                    lambda g, y: sg.solve(sg.jacobian(g)(y), y))
    >>> J = sg.evaluate(sg.jacobian(x, b), {"b": [1.0, 2.0]})
    >>> xv = sg.evaluate(x, {"b": [1.0, 2.0]})
    >>> bool(abs(J @ (sg.evaluate(sg.asarray(A)) + 3 * sg.evaluate(sg.asarray(xv)) ** 2
    ...                * sg.evaluate(sg.eye(2))) - sg.evaluate(sg.eye(2))).max() < 1e-12)
    True
    """
    if not callable(f) or not callable(solve):
        raise ArgumentError(f"custom_root(f, initial_guess, solve, tangent_solve): f and "
                            f"solve must be functions, got {type_name(f)} and "
                            f"{type_name(solve)}")
    has_aux = _flag(has_aux, "custom_root: has_aux")
    x0 = _leaf(initial_guess, "custom_root: initial_guess")
    got = rebound(solve)(f, x0 if isinstance(x0, Expr) else const(x0))
    aux = None
    if has_aux:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ArgumentError("custom_root(has_aux=True): solve must return (solution, aux)")
        got, aux = got
    x = _leaf(got, "custom_root: solve's result")
    x = x if isinstance(x, Expr) else const(x)
    if x.shape != tuple(np.shape(x0)):
        raise ShapeError(f"custom_root: solve returned shape {fmt(x.shape)}, the initial "
                         f"guess has {fmt(np.shape(x0))}")
    traced = callback(f, [(x.shape, "float64")], (), "custom_root: f")
    if traced.result[0] != x.shape:
        raise ShapeError(f"custom_root: f maps shape {fmt(x.shape)} to "
                         f"{fmt(traced.result[0])}; a root needs as many equations as unknowns")
    attrs = {"fun": traced.body, "tangent_solve": _solver(tangent_solve, "tangent_solve")}
    out = _node("custom_root", [_float(x)], attrs, traced.captured)
    if not has_aux:
        return out
    from ..base.tree_util import tree_map

    return out, tree_map(lambda a: F.stop_gradient(a) if isinstance(a, Expr) else a, aux)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False) -> Any:
    """``x`` with ``matvec(x) = b`` by ``solve(matvec, b)``, differentiated implicitly
    (``jax.lax.custom_linear_solve``).

    ``matvec`` must be linear in its argument; the matrix it applies may depend on
    parameters it reads from outside. Derivatives solve again with ``solve`` (forward
    mode, and reverse mode with ``symmetric=True``) or ``transpose_solve(vecmat, b)``
    (reverse mode), ``vecmat`` being ``matvec``'s transpose. Without either, reverse mode
    transposes ``solve`` itself where it is linear in ``b``. ``b`` is one array.

    >>> import symgrad as sg
    >>> A = sg.var("A", shape=(2, 2))
    >>> b = sg.var("b", shape=(2,))
    >>> x = sg.custom_linear_solve(lambda v: A @ v, b, lambda mv, r: sg.solve(A, r),
    ...                            lambda vm, r: sg.solve(A.T, r))
    >>> at = {"A": [[3.0, 1.0], [1.0, 2.0]], "b": [1.0, 2.0]}
    >>> sg.evaluate(sg.grad(sg.sum(x), b), at)
    array([0.2, 0.4])
    """
    for fn, what in ((matvec, "matvec"), (solve, "solve")):
        if not callable(fn):
            raise ArgumentError(f"custom_linear_solve: {what} must be a function, got "
                                f"{type_name(fn)}")
    has_aux = _flag(has_aux, "custom_linear_solve: has_aux")
    symmetric = _flag(symmetric, "custom_linear_solve: symmetric")
    bb = _leaf(b, "custom_linear_solve: b")
    bb = bb if isinstance(bb, Expr) else const(bb)
    bb = _float(bb)
    got = rebound(solve)(matvec, bb)
    aux = None
    if has_aux:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ArgumentError("custom_linear_solve(has_aux=True): solve must return "
                                "(solution, aux)")
        got, aux = got
    x = _leaf(got, "custom_linear_solve: solve's result")
    x = x if isinstance(x, Expr) else const(x)
    if x.shape != bb.shape:
        raise ShapeError(f"custom_linear_solve: solve returned shape {fmt(x.shape)}, b has "
                         f"{fmt(bb.shape)}")
    traced = callback(matvec, [(bb.shape, "float64")], (), "custom_linear_solve: matvec")
    if traced.result[0] != bb.shape:
        raise ShapeError(f"custom_linear_solve: matvec maps shape {fmt(bb.shape)} to "
                         f"{fmt(traced.result[0])}; it must keep the shape")
    attrs = {"matvec": traced.body, "solve": _solver(solve, "solve"),
             "transpose_solve": None if transpose_solve is None
             else _solver(transpose_solve, "transpose_solve"),
             "symmetric": bool(symmetric)}
    out = _node("custom_linear_solve", [_float(x), bb], attrs, traced.captured)
    if not has_aux:
        return out
    from ..base.tree_util import tree_map

    return out, tree_map(lambda a: F.stop_gradient(a) if isinstance(a, Expr) else a, aux)
