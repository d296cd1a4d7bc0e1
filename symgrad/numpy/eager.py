"""``symgrad.numpy`` on data: with no symbolic operand a call computes its value, as
``autograd.numpy`` and ``jax.numpy`` do, so data and optimiser code keeps working after
``import symgrad.numpy as np``: ``assert np.var(x) > np.mean(x)``, ``float(np.sum(x))``,
``p -= lr * np.sqrt(s)`` on NumPy parameters. NumPy's own function computes it where NumPy
has the name (the same value, the same warnings); a name beyond NumPy (``sigmoid``,
``logsumexp``) runs its ops' NumPy implementations. Nothing is traced: no graph is kept.

>>> import numpy as np, symgrad as sg, symgrad.numpy as snp
>>> x = np.array([1.0, 2.0, 6.0])
>>> snp.var(x) > snp.mean(x), type(snp.sum(x)).__name__
(np.True_, 'float64')
>>> snp.sigmoid(0.0)
np.float64(0.5)
>>> snp.sum(sg.var("v", shape=(3,)))                  # a symbolic operand: an expression
<Expr sum(v) : float64[]>
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import UnsupportedError
from ..frontend.capture import NUMPY, current
from ..ir.expr import Expr
from ..ir.op import REGISTRY

__all__ = ["eager", "symbolic"]

# NumPy's array makers: inside a trace, arrays that take stored expressions
# (symgrad.frontend.buffers)
_BUFFERS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                      "empty_like", "full_like", "copy"})
_MAX_WALK = 100_000  # list elements looked at for an expression before deciding "data"


def symbolic(*values: Any) -> bool:
    """Whether an expression is among ``values`` (through lists, tuples and dicts)."""
    stack = list(values)
    seen = 0
    while stack:
        v = stack.pop()
        if isinstance(v, Expr):
            return True
        if type(v) in (list, tuple):
            seen += len(v)
            if seen > _MAX_WALK:
                return True  # too long to look through: the symbolic function decides
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.values())
    return False


def eager(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (the symbolic function NumPy calls ``name``) computing values when no
    operand is symbolic."""
    numpy_fn = _numpy_function(name)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if name in _BUFFERS and numpy_fn is not None and current() is not None:
            return getattr(NUMPY, name)(*args, **kwargs)
        if symbolic(args, kwargs):
            return fn(*args, **kwargs)
        if numpy_fn is not None:
            return numpy_fn(*args, **kwargs)
        return _values(fn(*args, **kwargs))

    call.symbolic = fn  # type: ignore[attr-defined]
    return call


def _numpy_function(name: str) -> Callable[..., Any] | None:
    space, _, attr = name.rpartition(".")
    owner = np.linalg if space == "linalg" else np.fft if space == "fft" else \
        np if not space else None
    found = getattr(owner, attr, None) if owner is not None else None
    return found if callable(found) and not isinstance(found, type) else None


def _values(result: Any) -> Any:
    """The values of a result built from constants only (an expression, or a tuple)."""
    if isinstance(result, Expr):
        return _constant(result)
    if type(result) in (tuple, list):
        return type(result)(_values(r) for r in result)
    return result


def _constant(e: Expr) -> Any:
    """The value of an expression of constants: each op's NumPy implementation, in order."""
    graph = e.graph
    nodes = graph.nodes
    values: dict[int, Any] = {}
    for i in graph.ancestors([e.node]):
        n = nodes[i]
        if n.is_var:
            raise UnsupportedError(f"{n.name!r} is a symbolic variable: this call has no value "
                                   "yet (evaluate it with sg.evaluate)")
        values[i] = REGISTRY[n.op].impl(*[values[a] for a in n.args], **n.attrs)
    out = values[e.node]
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out
