"""The NumPy interpreter (``evaluate``): one pass over the outputs' ancestors in id order,
running each op's own NumPy implementation from its stanza.

Only ancestors of the outputs are computed; each intermediate array is dropped after its
last consumer, so peak memory follows the live set, not the graph size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import EvaluationError, InputError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..progress import start
from ..transforms.sparse import SparseExpr, as_matrix


def evaluate(outputs: Expr | Sequence[Expr], inputs: Mapping[Any, Any] | None = None):
    """Evaluate one Expr (-> ndarray, or float for 0-d) or a list of them (-> list). A
    sparse derivative (``jacobian(..., sparse=True)``) gives a ``scipy.sparse`` matrix.

    ``inputs`` maps variable names (or variable Exprs) to values; names an expression does
    not use are ignored.

    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> u3 = u1 + u2
    >>> sg.evaluate([u3, u2 * u3], {"u1": 2.0, "u2": 3.0})
    [5.0, 15.0]
    """
    single = isinstance(outputs, Expr) or is_sparse(outputs)
    outs = [outputs] if single else list(outputs)
    if not outs:
        return []
    if any(is_sparse(o) for o in outs):  # sparse derivatives: their data, in their pattern
        values = evaluate([o.data if is_sparse(o) else o for o in outs], inputs)
        results = [as_matrix(v, o.pattern) if is_sparse(o) else v for v, o in zip(values, outs)]
        return results[0] if single else results
    graph, ids = _common_graph(outs)
    values = run(graph, ids, _by_name(inputs or {}))
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
                values[i] = op.impl(*[values[a] for a in n.args], **n.attrs)
            except (IndexError, ValueError, TypeError) as e:
                raise EvaluationError(f"evaluating node {i} ({n.op}): {e}") from None
            for a in set(n.args):
                if last_use[a] == i and a not in keep:
                    del values[a]
    progress.close()
    return {i: values[i] for i in outputs}


def check_input(node, inputs: Mapping[str, Any]) -> np.ndarray:
    """The value given for variable ``node``, checked against its shape and dtype."""
    if node.name not in inputs:
        raise InputError(f"missing input for variable '{node.name}' "
                         f"(shape {fmt(node.shape)}, dtype {node.dtype})")
    raw = inputs[node.name]
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
        value = value.astype(want)
    return value


def _common_graph(outs: list[Expr]) -> tuple[Graph, list[int]]:
    for e in outs:
        if not isinstance(e, Expr):
            raise EvaluationError(f"can only evaluate symgrad expressions, got {type(e).__name__}")
    graph = max((e.graph for e in outs), key=len)
    ids = []
    for e in outs:
        ids.append(e.node if e.graph is graph else graph.import_node(e.graph, e.node))
    return graph, ids


def _by_name(inputs: Mapping[Any, Any]) -> dict[str, Any]:
    out = {}
    for k, v in inputs.items():
        name = k.name if isinstance(k, Expr) else k
        if not isinstance(name, str):
            raise EvaluationError(f"inputs are keyed by variable name, got {k!r}")
        out[name] = v
    return out


def _finish(value: Any) -> Any:
    value = np.asarray(value)
    if value.ndim == 0:
        # float64, int64 and bool are exactly Python's float, int and bool; other dtypes
        # (lstsq's int32 rank, float32) stay NumPy scalars, so their dtype survives
        return value.item() if value.dtype.name in ("float64", "int64", "bool") else value[()]
    return value
