"""``linearize``: the value at a point and the linear map ``v -> J v`` there, as JAX's.

The forward values the tangent lines read (the *residuals*: ``cos(x)`` for ``sin(x)``) are
computed once, at the point; the returned function runs only the tangent lines, emitted as
NumPy source like every other derivative. Applying it to many directions costs one tangent
pass each, with no forward pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError, SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.values import exact
from ..transforms.derivatives import Wrt, jvp, resolve_wrt
from .compiled import compile
from .interpreter import evaluate
from .loaded import CompiledFunction
from .naming import Namer

__all__ = ["Linear", "linearize"]


class Linear:
    """The linear map ``(v_1, ..., v_k) -> J v`` at a point (one tangent per variable, in
    ``wrt`` order); ``source`` is its NumPy source, ``residuals`` the forward values it reads
    (computed once), ``tangent`` the symbolic tangent it evaluates."""

    def __init__(self, fn: CompiledFunction, residuals: list[np.ndarray], tangent: Expr,
                 names: tuple[str, ...]) -> None:
        self._fn = fn
        self.residuals = residuals
        self.tangent = tangent
        self.source = fn.source
        self.tangents = names

    def __call__(self, *tangents: Any) -> Any:
        if len(tangents) != len(self.tangents):
            raise SymgradError(f"this linear map takes {len(self.tangents)} tangent(s) "
                               f"({', '.join(self.tangents)}), got {len(tangents)}")
        return self._fn(*self.residuals, *tangents)

    def __repr__(self) -> str:
        return f"<symgrad linear map of ({', '.join(self.tangents)})>"


def linearize(f: Expr, wrt: Wrt | Sequence[Wrt], at: Mapping[Any, Any]) -> tuple[Any, Linear]:
    """The value of ``f`` at ``at`` and the linear map ``v -> (df/dwrt) v`` there.

    As ``jax.linearize``: the forward values the tangent needs are computed once; each call
    of the returned :class:`Linear` runs only the tangent lines (emitted NumPy source).

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> value, lin = sg.linearize(sg.sin(x) * x, x, {"x": [0.0, 1.0]})
    >>> np.round(value, 6).tolist()
    [0.0, 0.841471]
    >>> np.round(lin(np.array([1.0, 1.0])), 6).tolist()
    [0.0, 1.381773]
    """
    if not isinstance(f, Expr):
        raise DifferentiationError(f"linearize needs a symgrad expression (an Expr), got "
                                   f"{type(f).__name__}")
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(f, w) for w in (exact(wrt) if many else [wrt])]
    if not targets:
        raise DifferentiationError("linearize needs at least one variable")
    graph = f.graph
    namer = Namer(graph.variables)
    seeds = [Expr(graph, graph.var(namer.fresh(f"{w.name}_dot"), w.shape, w.dtype))
             for w in targets]
    t = jvp(f, targets, seeds)
    order = graph.ancestors([t.node])
    moving = graph.descendants([s.node for s in seeds], order)
    nodes = graph.nodes
    residuals = sorted({a for i in order if i in moving for a in nodes[i].args
                        if a not in moving and not nodes[a].is_const})
    values = evaluate([f, *[Expr(graph, r) for r in residuals]], _named(at))
    value, residual_values = values[0], [np.asarray(v) for v in values[1:]]
    small = Graph()
    mapping: dict[int, int] = {}
    names = Namer(s.name for s in seeds)
    for r in residuals:
        mapping[r] = small.var(names.fresh("r"), nodes[r].shape, nodes[r].dtype)
    for i in order:
        n = nodes[i]
        if i in mapping or not (i in moving or n.is_const):
            continue
        if n.is_var:
            mapping[i] = small.var(n.name, n.shape, n.dtype)
        else:
            mapping[i] = small.add(REGISTRY[n.op], tuple(mapping[a] for a in n.args), n.attrs)
    out = Expr(small, mapping[t.node]) if t.node in mapping else None
    inputs = [small.nodes[mapping[r]].name for r in residuals] + [s.name for s in seeds]
    for s in seeds:
        if s.node not in mapping:
            small.var(s.name, s.shape, s.dtype)
    if out is None:  # f does not depend on wrt: J v = 0
        out = Expr(small, small.const(np.zeros(f.shape, f.dtype)))
    fn = compile(out, inputs=inputs, name="jvp")
    return value, Linear(fn, residual_values, t, tuple(s.name for s in seeds))


def _named(at: Mapping[Any, Any]) -> dict[str, Any]:
    if not isinstance(at, Mapping):
        raise SymgradError(f"at must be a dict of input values, got {type(at).__name__}")
    return {k.name if isinstance(k, Expr) else exact(k): v for k, v in at.items()}
