"""The projection ``result``: one result of a call with several results (a loop, ``eigh``,
``svd``, a custom rule's call), read by index. The call is one node whose dtype lists its
results (:class:`~symgrad.ir.op.Results`); a projection has the shape and dtype of its
result, so everything downstream of it sees a plain value (see :mod:`symgrad.ir.op`,
"Calls with several results").

The transforms read a projection's derivative from its call's: reverse mode hands a
projection's adjoint to the call's rule (one ``g`` entry per result), forward mode takes the
entry of the call's tuple of tangents. Projections have no rules of their own.

>>> import symgrad as sg
>>> w, v = sg.eigh(sg.var("S", shape=(2, 2)))
>>> w.op, w.data.attrs, w.graph.nodes[w.data.args[0]].op
('result', {'index': 0}, 'eigh')
"""

from __future__ import annotations

from ..base.errors import ShapeError
from ..ir.op import RESULT, Op, Results, register, sig


def _infer(shapes, dtypes, attrs):
    (results,) = dtypes
    index = attrs["index"]
    if type(results) is not Results:
        raise ShapeError("result: its operand must be a call with several results")
    if type(index) is not int or not 0 <= index < len(results):
        raise ShapeError(f"result: no result {index!r} (the call has {len(results)})")
    return results[index]


def _pick(values, index):
    return values[index]


PROJECTION = register(Op(
    name=RESULT, signature=sig("call", "=index", index=0), infer=_infer, impl=_pick,
    public=False, domain=None, rules="symgrad.transforms.reverse",
    doc="result index of a call with several results (a projection: see symgrad.ir.op)",
))

__all__ = ["PROJECTION"]
