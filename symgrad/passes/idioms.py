"""Idioms: the usual hand-written spellings of the logistic function, softplus, log-sum-exp,
log-softmax and softmax, recognised so that reverse mode uses their cheap, stable rule.

================================  ===================  =====================================
written                           recognised as        backprop of the idiom
================================  ===================  =====================================
``1 / (1 + exp(-x))``             ``sigmoid(x)``       Tomassoli's ``g * (s * (1 - s))``
``log(1 + exp(x))``               ``softplus(x)``      softplus's rule: ``g * sigmoid(x)``
``m + log(sum(exp(a - m)))``      ``logsumexp(a)``     ``g * e / sum(e)``
``a - m - log(sum(exp(a - m)))``  ``log_softmax(a)``   ``g - e / sum(e) * sum(g)``
``exp(a - m) / sum(exp(a - m))``  ``softmax(a)``       ``p * (g - sum(g * p))``
================================  ===================  =====================================

Here ``m = max(a, axis, keepdims=...)`` (any keepdims, reshaped, squeezed, broadcast or
not, on either side of the ``+``), ``e = exp(a - m)`` and ``sum(e)`` are the forward nodes
the user wrote. The shift ``m`` gets no gradient from the idiom: its adjoint is exactly
``1 - sum(softmax) = 0``, which the chain rule would compute with ``==``, ``where`` and two
sums as a rounding error.

**The forward value stays bit for bit as written.** Reverse mode (:data:`IDIOMS`, run on
the forward nodes before B is built) only replaces the backprop of the idiom's root by the
idiom's rule, sending its contribution straight to the idiom's input; the nodes inside the
idiom get no contribution from it (they keep those of any other users). So
``grad(1 / (1 + exp(-x)))`` is ``s * (1 - s)`` with ``s`` the written node, finite at
x = -1000 where the chain rule gives ``0 * inf``. ``simplify`` (and ``compile(...,
fast_math=True)``) also rewrite the forward expression into the op (:data:`FORWARD_RULES`,
used by the stability pass), whose values are then the op's (stable where the written form
overflows). Either way the stability of a derivative does not depend on whether
``simplify`` ran before or after ``grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir.expr import Expr, F
from ..ir.graph import Graph, Node
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY
from ..ir.shapes import reduced
from .context import Context
from .pattern import OneOf, Pass, Rule

# -- patterns ---------------------------------------------------------------------------------

_MAX = ("max", "a", {"axis": "ax", "keepdims": "mk", "@": "m"})
_SUM_KEYS = {"axis": "ax", "keepdims": "sk", "@": "s"}


def _wrapped(p, me: str) -> OneOf:
    """``p`` itself or ``p`` under one shape op that keeps the elements in order (checked
    by shape; an index only with new axes and whole slices: ``m[:, None]``)."""
    shaped = tuple((op, p, {"@": me}) for op in ("reshape", "expand_dims", "squeeze",
                                                 "broadcast_to"))
    return OneOf(*shaped, ("index", p, {"@": me, "key": me + "_key"}), p)


_SHIFTED = ("subtract", "a", _wrapped(_MAX, "mw"), {"@": "d"})  # a - m
_EXP = ("exp", _SHIFTED, {"@": "e"})
_LOG_SUM = ("log", ("sum", _EXP, _SUM_KEYS), {"@": "l"})
_ONE = 1.0


@dataclass(frozen=True)
class Idiom:
    """One idiom: the op it computes (``name``), its spellings (``patterns``), its backprop
    ``rule`` (an op rule, ``(n, g) -> (contribution to the input,)``: ``n`` is the written
    root seen as a node of that op, whose ``attrs`` are :meth:`attrs` of the captures), the
    op as it would be built (``forward(caps, graph) -> Expr``, for simplify) and a shape
    ``check(graph, caps)`` of the captures (node ids)."""

    name: str
    patterns: tuple
    rule: Callable[[NodeView, Expr], tuple]
    forward: Callable[..., Expr | None]
    check: Callable[[Graph, dict], bool] | None = None
    rewritten: tuple = ()  # further spellings met only in simplify (inner parts rewritten)
    input: str = "a"  # the capture that is the op's operand

    def attrs(self, caps: dict) -> dict:
        """The root's attributes as a node of the op: the reduced ``axis`` (the whole tuple:
        the rules reduce over all of it), and ``captures``, the forward nodes the rule may
        reuse."""
        return {"axis": caps["ax"], "captures": caps} if "ax" in caps else {"captures": caps}


def _aligned(graph: Graph, caps: dict, node: int) -> bool:
    """Whether ``node`` (a max or a log-sum, maybe reshaped) lines up with ``a`` so that it is
    constant along the reduced axes: size 1 there, the size of ``a`` elsewhere."""
    a, axes = graph.nodes[caps["a"]].shape, caps["ax"]
    shape = graph.nodes[node].shape
    if len(shape) > len(a):
        return False
    padded = (1,) * (len(a) - len(shape)) + tuple(shape)
    return all(p == 1 if k - len(a) in axes else p in (1, a[k]) for k, p in enumerate(padded))


def _wrapper_ok(graph: Graph, caps: dict, wrapper: str, inner: str) -> bool:
    """A shape op between ``inner`` and its user keeps the elements in order (or only
    broadcasts along reduced axes)."""
    w = caps.get(wrapper)
    if w is None:
        return _aligned(graph, caps, caps[inner])
    key = caps.get(wrapper + "_key")
    if key is not None and not all(k is None or k == slice(None) for k in key):
        return False
    nodes = graph.nodes
    if nodes[w].shape == nodes[caps["a"]].shape:  # broadcast_to the full shape
        return _aligned(graph, caps, caps[inner])
    same_size = _size(nodes[w].shape) == _size(nodes[caps[inner]].shape)
    return same_size and _aligned(graph, caps, w)


def _size(shape) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def _shift_ok(graph: Graph, caps: dict) -> bool:
    nodes = graph.nodes
    if nodes[caps["d"]].shape != nodes[caps["a"]].shape:
        return False
    return _wrapper_ok(graph, caps, "mw", "m")


def _keep(x: Expr, batch: tuple, shape: tuple) -> Expr:
    """``x`` (batch axes + anything with the same elements) reshaped to ``batch + shape``."""
    target = batch + shape
    return x if x.shape == target else F.reshape(x, target)


def _softmax_of(graph: Graph, caps: dict) -> Expr:
    """``e / sum(e)`` with the sum in keepdims form: the softmax, from forward nodes."""
    a = graph.nodes[caps["a"]]
    s = Expr(graph, caps["s"])
    return Expr(graph, caps["e"]) / _keep(s, (), reduced(a.shape, caps["ax"], True))


def _op_rule(op: str) -> Callable[[NodeView, Expr], tuple]:
    """The registry op's own backprop rule: one rule per op, whether the op was called or
    written out (the written root is the rule's output, so softplus's rule reuses it)."""

    def rule(n: NodeView, g: Expr) -> tuple:
        return REGISTRY[op].backprop(n, g)

    return rule


# -- log-sum-exp, log-softmax, softmax -----------------------------------------------------------


def _lse_check(graph: Graph, caps: dict) -> bool:
    nodes = graph.nodes
    if not _shift_ok(graph, caps):
        return False
    m_out = caps.get("mo", caps["m"])
    size_ok = _size(nodes[m_out].shape) == _size(nodes[caps["m"]].shape)
    return size_ok and nodes[m_out].shape == nodes[caps["l"]].shape


def _lse_rule(n: NodeView, g: Expr) -> tuple:
    """``g * e / sum(e)`` with ``e`` and ``sum(e)`` the written forward nodes."""
    graph, caps = n.graph, n.attrs["captures"]
    a = graph.nodes[caps["a"]]
    batch = g.shape[: g.ndim - n.out.ndim]
    gk = _keep(g, batch, reduced(a.shape, caps["ax"], True))
    return (gk * _softmax_of(graph, caps),)


def _log_softmax_check(graph: Graph, caps: dict) -> bool:
    if not _shift_ok(graph, caps) or not _wrapper_ok(graph, caps, "lw", "l"):
        return False
    ml = caps.get("ml")  # a - (m + log(sum(exp(a - m)))): the sum lines up with a as well
    return ml is None or (_aligned(graph, caps, ml) and _wrapper_ok(graph, caps, "mo", "m"))


def _softmax_check(graph: Graph, caps: dict) -> bool:
    return _shift_ok(graph, caps) and _wrapper_ok(graph, caps, "sw", "s")


def _one_axis(caps: dict) -> int | None:
    return caps["ax"][0] if len(caps["ax"]) == 1 else None


def _as_op(name: str) -> Callable[..., Expr | None]:
    def forward(caps: dict, graph: Graph) -> Expr | None:
        a = Expr(graph, caps["a"])
        if name == "logsumexp":
            keep = len(graph.nodes[caps["l"]].shape) == a.ndim
            return F.logsumexp(a, axis=caps["ax"], keepdims=keep)
        axis = _one_axis(caps)
        return None if axis is None else getattr(F, name)(a, axis=axis)

    return forward


_M_OUT = OneOf(*((op, _MAX, {"@": "mo"}) for op in ("reshape", "squeeze", "expand_dims")), _MAX)
# simplify rewrites log(sum(exp(a - m))) into logsumexp(a - m) before it meets the root
_LSE_OP = ("logsumexp", _SHIFTED, {"axis": "ax", "keepdims": "sk", "@": "l"})


def _lse_patterns(log_sum) -> tuple:
    return (("add", _M_OUT, log_sum), ("add", log_sum, _M_OUT))


def _log_softmax_patterns(log_sum) -> tuple:
    kept = _wrapped(log_sum, "lw")
    return (
        ("subtract", _SHIFTED, kept),  # (a - m) - log(sum(exp(a - m)))
        ("subtract", "a", ("add", _M_OUT, kept, {"@": "ml"})),  # a - (m + log(...))
        ("subtract", "a", ("add", kept, _M_OUT, {"@": "ml"})),
    )


_SOFTMAX = (("divide", _EXP, _wrapped(("sum", _EXP, _SUM_KEYS), "sw")),)

LSE_FAMILY = (
    Idiom("logsumexp", _lse_patterns(_LOG_SUM), _lse_rule, _as_op("logsumexp"), _lse_check,
          _lse_patterns(_LSE_OP)),
    Idiom("log_softmax", _log_softmax_patterns(_LOG_SUM), _op_rule("log_softmax"),
          _as_op("log_softmax"), _log_softmax_check, _log_softmax_patterns(_LSE_OP)),
    Idiom("softmax", _SOFTMAX, _op_rule("softmax"), _as_op("softmax"), _softmax_check),
)


# -- sigmoid and softplus ----------------------------------------------------------------------


_EXP_X = ("exp", "x", {"@": "e"})
_ONE_PLUS = (("add", _ONE, _EXP_X), ("add", _EXP_X, _ONE))
_NEG_X = ("exp", ("negative", "x"), {"@": "e"})
_ONE_PLUS_NEG = (("add", _ONE, _NEG_X), ("add", _NEG_X, _ONE))

def _tomassoli(n: NodeView, g: Expr) -> tuple:
    """``s' = s (1 - s)`` with ``s`` the written node: two operations, 0 at both tails
    (absolute error below 1e-16 where ``1 - s`` cancels, t > 37; the ``sigmoid`` op's own
    rule, ``s(t) s(-t)``, keeps the relative precision there at the price of a sigmoid)."""
    out = n.out
    return (g * (out * (1.0 - out)),)


SIGMOID_FAMILY = (
    Idiom("sigmoid", tuple(("divide", _ONE, p) for p in _ONE_PLUS_NEG), _tomassoli,
          lambda caps, graph: F.sigmoid(Expr(graph, caps["x"])), input="x"),
    Idiom("softplus", tuple(("log", p) for p in _ONE_PLUS), _op_rule("softplus"),
          lambda caps, graph: F.softplus(Expr(graph, caps["x"])), input="x"),
)

ALL = SIGMOID_FAMILY + LSE_FAMILY


# -- matching -----------------------------------------------------------------------------------


def match(graph: Graph, i: int) -> tuple[Idiom, dict] | None:
    """The first idiom node ``i`` is written as, with its captures (node ids), or None."""
    for idiom, rule in _SPELLINGS:
        caps = rule.match(graph, i)
        if caps is not None and (idiom.check is None or idiom.check(graph, caps)):
            return idiom, caps
    return None


def find(graph: Graph, forward: list[int]) -> dict[int, tuple[tuple, Callable]]:
    """``{root id: (input ids, rule)}`` for the idioms among the float nodes ``forward``:
    what reverse mode uses instead of the root op's own rule (``rule(view, g)`` returns one
    contribution per input id, as op rules do)."""
    found = {}
    for i in forward:
        hit = match(graph, i)
        if hit is not None:
            idiom, caps = hit
            found[i] = ((caps[idiom.input],), _bound(idiom, caps))
    return found


def recognised(graph: Graph, i: int) -> str | None:
    """The name of the idiom whose root is node ``i`` (what reverse mode differentiates by
    the idiom's rule), or None; the pictures use it to say why the nodes inside have no
    adjoint.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> s = 1 / (1 + sg.exp(-x))
    >>> recognised(s.graph, s.node), recognised(s.graph, x.node)
    ('sigmoid', None)
    """
    hit = match(graph, i)
    return None if hit is None else hit[0].name


def _bound(idiom: Idiom, caps: dict) -> Callable:
    """The idiom's rule for the root ``view``: the root seen as a node of the idiom's op."""

    def rule(view: NodeView, g: Expr) -> tuple:
        n = view.data
        node = Node(n.id, idiom.name, (caps[idiom.input],), idiom.attrs(caps), n.shape,
                    n.dtype, None, n.role, n.origin)
        return idiom.rule(NodeView(view.graph, node), g)

    return rule


def _forward_rule(idiom: Idiom, pattern: tuple) -> Rule:
    """A rewrite rule turning the spelling into the op (for simplify's stability pass)."""

    def build(**caps) -> Expr | None:
        graph = next(v.graph for v in caps.values() if isinstance(v, Expr))
        ids = {k: v.node if isinstance(v, Expr) else v for k, v in caps.items()}
        if idiom.check is not None and not idiom.check(graph, ids):
            return None
        return idiom.forward(ids, graph)

    return Rule(pattern, build)


_FORWARD = tuple((idiom, k < len(idiom.patterns), _forward_rule(idiom, p)) for idiom in ALL
                 for k, p in enumerate(idiom.patterns + idiom.rewritten))
FORWARD_RULES = tuple(rule for _, _, rule in _FORWARD)
# the spellings reverse mode looks for: the same rules, matched against built nodes
_SPELLINGS = tuple((idiom, rule) for idiom, written, rule in _FORWARD if written)


def _found(graph: Graph, forward: list[int], ctx: Context) -> tuple[Graph, list[int]]:
    """The pass: the idioms among ``forward`` recorded on ``ctx`` for reverse mode (the
    graph and the nodes unchanged: the forward values stay as written)."""
    ctx.idioms.update(find(graph, forward))
    return graph, forward


IDIOMS = Pass(
    "idioms",
    "hand-written sigmoid, softplus, log-sum-exp, log-softmax, softmax: backprop by their rule",
    run=_found,
    stages=("reverse",),
)

__all__ = ["ALL", "FORWARD_RULES", "IDIOMS", "Idiom", "find", "recognised"]
