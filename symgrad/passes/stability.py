"""Stability and idiom rewrites, used by ``simplify``: forms that are cheaper or stay finite
where the written form overflows or loses precision (``log(1 + exp(x)) -> softplus(x)``).

A rule may change a result only where the original overflowed or lost precision, or by the
sign of a zero (``x + 0 -> x``). ``0 * x`` is never rewritten: it is NaN for infinite ``x``.
"""

from __future__ import annotations

from ..ir.expr import F
from .idioms import FORWARD_RULES
from .pattern import Pass, Rule

STABILITY = Pass(
    "stability",
    "stable and cheaper forms: log(1 + x) -> log1p(x), log(1 + exp(x)) -> softplus(x), ...",
    rules=(
        Rule(("add", "x", 0.0), lambda x: x),
        Rule(("add", 0.0, "y"), lambda y: y),
        Rule(("subtract", "x", 0.0), lambda x: x),
        Rule(("subtract", 0.0, "y"), lambda y: -y),
        Rule(("subtract", ("exp", "x"), 1.0), lambda x: F.expm1(x)),
        Rule(("multiply", "x", -1.0), lambda x: -x),
        Rule(("multiply", -1.0, "y"), lambda y: -y),
        Rule(("multiply", "x", "x"), lambda x: F.square(x)),
        Rule(("multiply", "x", ("divide", 1.0, "y")), lambda x, y: x / y),
        Rule(("multiply", ("divide", 1.0, "x"), "y"), lambda x, y: y / x),
        Rule(("power", "x", 2.0), lambda x: F.square(x)),
        Rule(("power", "x", 0.5), lambda x: F.sqrt(x)),
        Rule(("power", "x", -1.0), lambda x: 1.0 / x),
        Rule(("log", ("exp", "x")), lambda x: x),
        Rule(("log", ("add", 1.0, "x")), lambda x: F.log1p(x)),
        Rule(("log", ("add", "x", 1.0)), lambda x: F.log1p(x)),
        Rule(("log", ("sigmoid", "x")), lambda x: -F.softplus(-x)),
        Rule(("log", ("softmax", "x", {"axis": "axis"})),
             lambda x, axis: F.log_softmax(x, axis=axis)),
        Rule(("log", ("sum", ("exp", "x"), {"axis": "axis", "keepdims": "keep"})),
             lambda x, axis, keep: F.logsumexp(x, axis=axis, keepdims=keep)),
        Rule(("log1p", ("exp", "x")), lambda x: F.softplus(x)),
        Rule(("exp", ("log_softmax", "x", {"axis": "axis"})),
             lambda x, axis: F.softmax(x, axis=axis)),
        Rule(("subtract", "x", ("logsumexp", "x", {"axis": "axis", "keepdims": True})),
             lambda x, axis: F.log_softmax(x, axis=axis[0]) if len(axis) == 1 else None),
        *FORWARD_RULES,  # 1 / (1 + exp(-x)) -> sigmoid(x), max-shifted log-sum-exp, ...
    ),
    stages=("fast_math", "simplify", "simplify_adjoint"),
)
