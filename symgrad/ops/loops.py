"""The loop op ``scan``: ``jax.lax.scan``'s meaning, with a traced body of its own.

One scan is one call: ONE node with several results (see :mod:`symgrad.ir.op`), each read
through a projection. :class:`ScanParts` is the one place that knows their layout: with
``nc`` carries and ``ny`` per-step results,

* results ``0 .. nc - 1``: the final carries;
* results ``nc .. nc + ny - 1``: the per-step results, stacked (``(length,) + shape``);
* then one per node of attribute ``stacked`` (sorted body node ids): that node's value at
  every step, stacked. A carry's input node gives the carry *entering* each step (what
  reverse mode reads as the stored carries); another node a *residual*, a value of the
  step the reverse step reads instead of computing it again.

Operands: the ``nc`` initial carries, the ``xs`` scanned arrays (leading axis ``length``),
then the values the body captured. Attributes: ``body`` (a :class:`~symgrad.ir.body.Body`),
``carries``, ``xs``, ``length``, ``reverse``, ``stacked``.

The derivative rules are scans too, built from the body's own derivative graphs by
:mod:`symgrad.transforms.loops`, which sets them on the op (:func:`~symgrad.ir.op.define_rules`):
forward mode scans primal and tangent together; reverse mode asks for the call whose
``stacked`` includes the stored carries and residuals it reads, and scans the body's VJP
backwards over them. A call equal but for fewer ``stacked`` nodes is the same loop: the
interpreter and the compile pipeline run the larger one for both
(:func:`symgrad.passes.calls.merged`).

>>> import symgrad as sg
>>> x = sg.var("x")
>>> c, _ = sg.scan(lambda c, _: (c * x, None), 1.0, length=3)   # x**3
>>> sg.evaluate([c, sg.grad(c, x)], {"x": 2.0})
[8.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import ShapeError
from ..ir.body import Aval, Body
from ..ir.expr import F
from ..ir.op import Op, register, results_of, sig
from ..ir.shapes import fmt
from ..ir.values import freeze

_SIG = sig("*operands", body=None, carries=0, xs=0, length=0, reverse=False, stacked=())


class ScanParts:
    """The layout of one scan call's results: the final carries, the stacked per-step
    results, then the stacked values of body nodes ``stacked`` (see the module docstring).

    >>> import symgrad as sg
    >>> from symgrad.ir.body import trace
    >>> body, _ = trace(lambda c: [c * 2.0, c + 1.0], [((3,), "float64")])
    >>> p = ScanParts(body, 1, 4, (body.inputs[0],))
    >>> [p.kind(k) for k in range(len(p))], p.aval(2)
    ([('carry', 0), ('y', 0), ('stored', 0)], ((4, 3), 'float64'))
    """

    __slots__ = ("body", "carries", "ys", "length", "stacked", "_inputs")

    def __init__(self, body: Body, carries: int, length: int, stacked: Sequence[int] = ()
                 ) -> None:
        self.body, self.carries, self.length = body, carries, length
        self.ys = len(body.outputs) - carries
        self.stacked = tuple(stacked)
        self._inputs = {v: j for j, v in enumerate(body.inputs[:carries])}

    @classmethod
    def of(cls, attrs: dict) -> ScanParts:
        """The layout of the scan call with attributes ``attrs``."""
        return cls(attrs["body"], attrs["carries"], attrs["length"], attrs["stacked"])

    def __len__(self) -> int:
        return self.carries + self.ys + len(self.stacked)

    def kind(self, k: int) -> tuple[str, int]:
        """What result ``k`` is: ``("carry", j)`` (final carry ``j``), ``("y", j)``
        (per-step result ``j``), ``("stored", j)`` (carry ``j`` entering each step) or
        ``("residual", node)`` (body node ``node`` at each step)."""
        nc, ny = self.carries, self.ys
        if k < nc:
            return "carry", k
        if k < nc + ny:
            return "y", k - nc
        node = self.stacked[k - nc - ny]
        j = self._inputs.get(node)
        return ("stored", j) if j is not None else ("residual", node)

    def index(self, kind: str, j: int) -> int | None:
        """The result that is ``(kind, j)`` (see :meth:`kind`), or None if the call has none."""
        nc, ny = self.carries, self.ys
        if kind == "carry":
            return j
        if kind == "y":
            return nc + j
        node = self.body.inputs[j] if kind == "stored" else j
        return nc + ny + self.stacked.index(node) if node in self.stacked else None

    def node(self, k: int) -> int:
        """The body node result ``k`` reads (per step, for a stacked result)."""
        nc = self.carries
        if k < nc + self.ys:
            return self.body.outputs[k]
        return self.stacked[k - nc - self.ys]

    def aval(self, k: int) -> Aval:
        """``(shape, dtype)`` of result ``k``."""
        (shape, dtype), = self.body.avals([self.node(k)])
        return (shape, dtype) if k < self.carries else ((self.length, *shape), dtype)

    def ndim(self, k: int) -> int:
        """The number of axes of result ``k``."""
        return len(self.aval(k)[0])

    def avals(self) -> list[Aval]:
        """Every result's ``(shape, dtype)``, in order."""
        return [self.aval(k) for k in range(len(self))]

    def as_ys(self) -> Body:
        """The body with the stacked nodes as further per-step results (after its own):
        what a loop printer or forward mode runs, where result ``k`` is the same result."""
        return self.body.with_outputs(self.stacked)


def _infer(shapes, dtypes, attrs):
    body, nc, nx, length = attrs["body"], attrs["carries"], attrs["xs"], attrs["length"]
    if not isinstance(body, Body):
        raise ShapeError("scan: body must be a traced loop body (use sg.scan)")
    want = body.avals()
    if len(shapes) != len(want):
        raise ShapeError(f"scan: the body takes {len(want)} operands, got {len(shapes)}")
    for k, ((s, d), (ws, wd)) in enumerate(zip(zip(shapes, dtypes), want)):
        if nc <= k < nc + nx:
            ws = (length, *ws)
        if s != ws or d != wd:
            raise ShapeError(f"scan: operand {k} has shape {fmt(s)} {d}, the body needs "
                             f"{fmt(ws)} {wd}")
    stacked = attrs["stacked"]
    count = len(body.graph.nodes)
    ok = (type(stacked) is tuple and all(type(i) is int and 0 <= i < count for i in stacked)
          and list(stacked) == sorted(set(stacked)))
    if not ok:
        raise ShapeError(f"scan: stacked must be ascending body node ids below {count}, got "
                         f"{stacked!r}")
    return results_of(ScanParts.of(attrs).avals())


def _sg_scan(*arrays, body, carries, xs, length, reverse, stacked):
    """Every result of the scan (one run of its loop)."""
    return tuple(run_scan(body, carries, xs, length, reverse, arrays, stacked))


def run_scan(body: Body, nc: int, nx: int, length: int, reverse: bool,
             arrays: Sequence[Any], stacked: Sequence[int] = ()) -> list[np.ndarray]:
    """Every result of a scan over ``arrays`` (the operands), by running the body: the
    final carries, the ys, then the values of the body's nodes ``stacked`` at each step."""
    arrays = [np.asarray(a) for a in arrays]
    carry = arrays[:nc]
    xs, consts = arrays[nc:nc + nx], arrays[nc + nx:]
    body = body.with_outputs(stacked)
    ys = [np.empty((length, *s), d) for s, d in body.avals(body.outputs[nc:])]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    with np.errstate(all="ignore"):
        for t in steps:
            res = body.run([*carry, *(x[t] for x in xs), *consts])
            carry = res[:nc]
            for j in range(len(ys)):
                ys[j][t] = res[nc + j]
    return [*(np.array(c) for c in carry), *ys]


def _examples(rng) -> list:
    from ..ir.body import trace

    def step(c, x, k):  # a carry, a per-step input, a captured value
        return [F.sin(c) * x + 0.5 * c * k, c * x - k]

    body, _ = trace(step, [((3,), "float64"), ((3,), "float64"), ((3,), "float64")])
    c, xs, k = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (4, 3)), rng.uniform(0.5, 1.5, 3)
    attrs = {"body": body, "carries": 1, "xs": 1, "length": 4}
    inner = [n.id for n in body.graph.nodes if n.op == "sin"]
    return [([c, xs, k], attrs), ([c, xs, k], {**attrs, "reverse": True}),
            ([c, xs, k], {**attrs, "stacked": (body.inputs[0], *inner)})]


def loop_calls(graph: Any, ids: Sequence[int]) -> int:
    """How many loops the nodes ``ids`` and their ancestors run: ``scan`` calls, those
    equal but for their ``stacked`` nodes counted once (they run as one); loops inside
    loop bodies not counted."""
    nodes = graph.nodes
    return len({(nodes[i].args, freeze({k: v for k, v in nodes[i].attrs.items()
                                         if k != "stacked"}))
                for i in graph.ancestors(ids) if nodes[i].op == "scan"})


SCAN = register(Op(
    name="scan", signature=_SIG, infer=_infer, impl=_sg_scan, public=False, domain=None,
    examples=_examples, rules="symgrad.transforms.loops", selects="stacked",
    doc="a loop over a traced body (jax.lax.scan's meaning; see sg.scan): its final "
        "carries, stacked per-step results and stacked body values",
))

__all__ = ["SCAN", "ScanParts", "loop_calls", "run_scan"]
