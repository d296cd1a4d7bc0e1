"""The rule of a function with a custom derivative, held by its call's nodes as an attribute.

``sg.custom_vjp`` and ``sg.custom_jvp`` (:mod:`symgrad.frontend.custom`) put one node per
result leaf in the graph: its value is the function's own result (computed by the inlined
primal, an operand of the node), its derivative the user's rule. A :class:`CustomRule` is
that rule with the pytrees flattened: the transforms call it on lists of Exprs.

Two calls of one decorated function with equal argument structure, non-differentiated
arguments and result structure have equal rules, so equal calls are one node
(hash-consing).

>>> rule = CustomRule("vjp", "clip_gradient", key=(1,), n_out=1, n_in=1)
>>> rule
<custom_vjp rule of clip_gradient>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .expr import Expr


class CustomRule:
    """A custom derivative rule on flat lists of Exprs.

    ``kind`` is ``"vjp"`` (``fwd(xs) -> residuals`` and ``bwd(residuals, cotangents) ->
    cotangents of xs``, each None or an Expr of the x's shape) or ``"jvp"`` (``jvp(xs,
    tangents) -> tangents of the results``). ``primal(xs)`` is the results as the rule
    computes them (``fwd``'s output, the JVP rule's primal output): what a transform of
    the derivative sees (as in JAX, only the innermost transform uses the rule). ``n_out``
    results, ``n_in`` differentiated input leaves; the call's node takes the results, then
    the inputs, then the values the function captured (closed-over Exprs: they get no
    derivative).
    """

    __slots__ = ("kind", "name", "key", "n_out", "n_in", "fwd", "bwd", "jvp", "primal")

    def __init__(self, kind: str, name: str, *, key: Any, n_out: int, n_in: int,
                 fwd: Callable[[list[Expr]], Any] | None = None,
                 bwd: Callable[[Any, list[Expr]], list[Expr | None]] | None = None,
                 jvp: Callable[[list[Expr], list[Expr]], list[Expr]] | None = None,
                 primal: Callable[[list[Expr]], list[Any]] | None = None) -> None:
        self.kind, self.name, self.key = kind, name, (kind, key)
        self.n_out, self.n_in = n_out, n_in
        self.fwd, self.bwd, self.jvp, self.primal = fwd, bwd, jvp, primal

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, CustomRule) and self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"<custom_{self.kind} rule of {self.name}>"

    def parts(self, operands: Sequence[Any]) -> tuple[list, list, list]:
        """The operands of a call split into results, inputs and captured values."""
        m, n = self.n_out, self.n_in
        return list(operands[:m]), list(operands[m:m + n]), list(operands[m + n:])


__all__ = ["CustomRule"]
