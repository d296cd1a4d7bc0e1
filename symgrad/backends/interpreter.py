"""The NumPy interpreter (``evaluate``): one pass over the outputs' ancestors in id order,
running each op's own NumPy implementation from its stanza. A call with several results
runs once for all of them; calls that are one loop but for the results they give run
once for them all (:func:`symgrad.passes.calls.families`).

Only ancestors of the outputs are computed; each intermediate array is dropped after its
last consumer, so peak memory follows the live set, not the graph size.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import EvaluationError, InputError, SymgradWarning
from ..base.progress import start
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..ir.values import exact
from ..ops.indexing import IndexOutOfRangeError
from ..passes.calls import families
from ..transforms.sparse import SparseExpr, as_matrix


def evaluate(outputs: Expr | Sequence[Expr], inputs: Mapping[Any, Any] | None = None, *,
             unknown: str = "warn"):
    """Evaluate one Expr (-> ndarray, or float for 0-d) or a list of them (-> list). A
    sparse derivative (``jacobian(..., sparse=True)``) gives a ``scipy.sparse`` matrix.

    ``inputs`` maps variable names (or variable Exprs) to values. A name that is no
    variable of the expressions' graph is probably a typo: ``unknown="warn"`` (the default)
    warns with a :class:`~symgrad.errors.SymgradWarning`, ``"error"`` raises
    :class:`~symgrad.errors.InputError`, ``"ignore"`` is for an input dict shared by several
    expressions.

    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> u3 = u1 + u2
    >>> sg.evaluate([u3, u2 * u3], {"u1": 2.0, "u2": 3.0})
    [5.0, 15.0]
    """
    single = isinstance(outputs, Expr) or is_sparse(outputs)
    if not single and not isinstance(outputs, (list, tuple)):
        raise EvaluationError(f"can only evaluate symgrad expressions (an Expr or a list of "
                              f"them), got {type_name(outputs)}")
    outs = [outputs] if single else list(outputs)
    if not outs:
        return []
    if any(is_sparse(o) for o in outs):  # sparse derivatives: their data, in their pattern
        values = evaluate([o.data if is_sparse(o) else o for o in outs], inputs, unknown=unknown)
        results = [as_matrix(v, o.pattern) if is_sparse(o) else v for v, o in zip(values, outs)]
        return results[0] if single else results
    graph, ids = _common_graph(outs)
    unknown = exact(unknown)
    if not isinstance(unknown, str) or unknown not in ("warn", "error", "ignore"):
        raise EvaluationError(f"unknown must be 'warn', 'error' or 'ignore', got "
                              f"{describe(unknown)}")
    given = inputs_by_name({} if inputs is None else inputs)
    if unknown != "ignore":
        _check_known(graph, given, unknown == "error")
    values = run(graph, ids, given)
    results = [_finish(values[i]) for i in ids]
    return results[0] if single else results


def is_sparse(e: Any) -> bool:
    return isinstance(e, SparseExpr)


def run(graph: Graph, outputs: Sequence[int], inputs: Mapping[str, Any]) -> dict[int, Any]:
    """Compute the values of node ids ``outputs``; returns ``{id: array}`` for them."""
    order = graph.ancestors(outputs)
    nodes = graph.nodes
    last_use: dict[int, int] = {}
    for i in order:
        for a in nodes[i].args:
            last_use[a] = i
    keep = set(outputs)
    values: dict[int, Any] = {}
    shared = families(graph, order)  # calls that are one loop: run once for them all
    runs: dict[int, tuple] = {}  # a family's first call -> the results of its one run
    left = Counter(first for _, _, first in shared.values())  # its calls not yet evaluated
    progress = start("evaluate", total=len(order))
    with np.errstate(all="ignore"):
        for i in order:
            progress.update()
            n = nodes[i]
            if n.is_var:
                values[i] = check_input(n, inputs)
                continue
            op = REGISTRY[n.op]
            try:
                if i in shared:
                    values[i] = _one_run(op, [values[a] for a in n.args], shared[i], runs,
                                         left)
                else:
                    values[i] = op.impl(*[values[a] for a in n.args], **n.attrs)
            except (IndexError, ValueError, TypeError, MemoryError) as e:  # as compiled code
                raise runtime_error(e, f"evaluating node {i} ({n.op})") from None
            for a in set(n.args):
                if last_use[a] == i and a not in keep:
                    del values[a]
    progress.close()
    return {i: values[i] for i in outputs}


def _one_run(op: Any, args: list, family: tuple, runs: dict[int, tuple],
             left: Counter) -> tuple:
    """The results of a call of a family (see :func:`~symgrad.passes.calls.families`),
    from the family's one run (made at its first call, dropped after its last)."""
    attrs, where, first = family
    got = runs.get(first)
    if got is None:
        got = runs[first] = op.impl(*args, **attrs)
    left[first] -= 1
    if not left[first]:
        del runs[first]
    return tuple(got[k] for k in where)


_MIXED: dict[type, type] = {}


def runtime_error(e: Exception, where: str) -> Exception:
    """What ``evaluate`` and compiled functions raise when an op fails on the values: an
    :class:`~symgrad.errors.EvaluationError` that is also of the failure's own class
    (``IndexError``, ``numpy.linalg.LinAlgError``, ...), so either ``except`` catches it."""
    if isinstance(e, EvaluationError):
        return e
    if isinstance(e, IndexError):
        return IndexOutOfRangeError(f"{where}: {e}")
    if isinstance(e, MemoryError):  # NumPy's own subclass takes other arguments
        e = MemoryError(f"{e} (an intermediate value does not fit in memory: evaluate a "
                        "smaller problem, or in parts)")
    cls = _MIXED.get(type(e))
    if cls is None:
        try:
            cls = type(type(e).__name__, (EvaluationError, type(e)), {"__module__": __name__})
        except TypeError:  # a class that cannot be mixed in
            cls = EvaluationError
        _MIXED[type(e)] = cls
    try:
        return cls(f"{where}: {e}")
    except TypeError:
        return EvaluationError(f"{where}: {type(e).__name__}: {e}")


def check_input(node, inputs: Mapping[str, Any]) -> np.ndarray:
    """The value given for variable ``node``, checked against its shape and dtype."""
    if node.name not in inputs:
        raise InputError(f"missing input for variable '{node.name}' "
                         f"(shape {fmt(node.shape)}, dtype {node.dtype})")
    raw = inputs[node.name]
    if not isinstance(raw, np.ndarray):
        raw = exact(raw)  # a user's int/float subclass: its own methods never run
    try:
        value = np.asarray(raw)
    except Exception as e:
        raise EvaluationError(f"input '{node.name}' is not an array: {e}") from None
    if value.shape != node.shape:
        raise EvaluationError(f"input '{node.name}' has shape {fmt(value.shape)}, "
                              f"but the variable has shape {fmt(node.shape)}")
    want = np.dtype(node.dtype)
    if value.dtype != want:
        if not np.can_cast(value.dtype, want, casting="same_kind") or (
            want.kind in "iub" and value.dtype.kind == "f"
        ):
            raise EvaluationError(f"input '{node.name}' has dtype {value.dtype}, "
                                  f"but the variable has dtype {node.dtype}")
        if not np.can_cast(value.dtype, want) and value.size and not _fits(value, want):
            raise EvaluationError(
                f"input '{node.name}' has values that do not fit the variable's dtype "
                f"{node.dtype} (they would wrap around or overflow to inf); pass values "
                f"in range or declare the variable with a wider dtype")
        value = value.astype(want)
    return value


def _fits(value: np.ndarray, want: np.dtype) -> bool:
    """Whether narrowing ``value`` to ``want`` keeps every value (integers in range, finite
    floats finite); NaN and inf stay what they are."""
    if want.kind in "iu":
        info = np.iinfo(want)
        return info.min <= int(value.min()) and int(value.max()) <= info.max
    if want.kind == "f" and value.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            big = np.abs(value) > np.finfo(want).max
        return not np.any(big & np.isfinite(value))
    return True


def _common_graph(outs: list[Expr]) -> tuple[Graph, list[int]]:
    for e in outs:
        if not isinstance(e, Expr):
            raise EvaluationError(f"can only evaluate symgrad expressions, got {type(e).__name__}")
    graph = max((e.graph for e in outs), key=len)
    ids = []
    for e in outs:
        ids.append(e.node if e.graph is graph else graph.import_node(e.graph, e.node))
    return graph, ids


def inputs_by_name(inputs: Mapping[Any, Any]) -> dict[str, Any]:
    if not isinstance(inputs, Mapping):
        raise EvaluationError(f"inputs must be a dict from variable names (or variable "
                              f"Exprs) to values, got {type_name(inputs)}")
    out = {}
    items = dict.items(inputs) if isinstance(inputs, dict) else inputs.items()
    for k, v in items:
        name = k.name if isinstance(k, Expr) else k
        if not isinstance(name, str):
            raise EvaluationError(f"inputs are keyed by variable name, got {describe(k)}")
        out[str.__str__(name)] = v
    return out


def _check_known(graph: Graph, given: Mapping[str, Any], error: bool) -> None:
    unknown = [k for k in given if k not in graph.variables]
    if unknown:
        known = ", ".join(sorted(graph.variables)[:20]) or "none"
        message = (f"evaluate: no variable named {', '.join(map(repr, unknown[:5]))} in these "
                   f"expressions (variables: {known}); pass unknown='ignore' for an input dict "
                   "shared by other expressions")
        if error:
            raise InputError(message)
        warnings.warn(message, SymgradWarning, stacklevel=3)


def _finish(value: Any) -> Any:
    value = np.asarray(value)
    if value.ndim == 0:
        # float64, int64 and bool are exactly Python's float, int and bool; other dtypes
        # (lstsq's int32 rank, float32) stay NumPy scalars, so their dtype survives
        return value.item() if value.dtype.name in ("float64", "int64", "bool") else value[()]
    return value
