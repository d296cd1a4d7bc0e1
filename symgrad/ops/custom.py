"""The calls of functions with a custom derivative (``sg.custom_vjp``, ``sg.custom_jvp``).

A call is one node with a result per result leaf (see :mod:`symgrad.ir.op`), each read
through a projection. Operands: the results as the function itself computes them (its
primal, inlined in the graph), the differentiated inputs, then the values the function
captured; attribute ``rule`` is the user's rule (:class:`~symgrad.ir.custom.CustomRule`).
The *value* of result ``k`` is operand ``k`` (so every backend writes the call as those
operands); its *derivative* is the rule's, never the primal's:

* ``custom_vjp_call``: reverse mode calls ``fwd`` then ``bwd`` (on every row of a batch of
  seeds: one vectorised pass when ``bwd`` is affine in the cotangent, else a loop);
  forward mode is the transpose of ``bwd`` (only when ``bwd`` is linear in it);
* ``custom_jvp_call``: forward mode calls ``jvp``; reverse mode transposes it (linear in
  the tangents, as JAX requires).

The rules are built and set on the ops by :mod:`symgrad.transforms.custom`. The ops are not
``differentiable`` in the registry's sense: their derivative is not that of their value,
so the registry's finite-difference checks do not apply (``tests/frontend/test_custom.py`` checks
them against JAX).

>>> import symgrad as sg
>>> @sg.custom_jvp
... def f(x):
...     return sg.sin(x)
>>> f.defjvps(lambda t, y, x: 2.0 * t)          # a (deliberately) different derivative
>>> x = sg.var("x")
>>> sg.evaluate([f(x), sg.grad(f(x), x)], {"x": 0.5})
[0.479425538604203, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base.errors import ShapeError
from ..ir.custom import CustomRule
from ..ir.expr import F
from ..ir.op import Op, register, results_of, sig

_SIG = sig("*operands", rule=None)


def _infer_for(kind: str) -> Callable[..., tuple]:
    def infer(shapes, dtypes, attrs):
        rule = attrs["rule"]
        if not isinstance(rule, CustomRule) or rule.kind != kind:
            raise ShapeError(f"a custom_{kind} call needs its rule (use sg.custom_{kind})")
        if len(shapes) < rule.n_out + rule.n_in:
            raise ShapeError(f"{rule.name}: the call takes {rule.n_out} results and "
                             f"{rule.n_in} inputs, got {len(shapes)} operands")
        return results_of(zip(shapes[:rule.n_out], dtypes[:rule.n_out]))

    return infer


def _value(*arrays, rule):
    """The results: the function's own values, the first operands of the node."""
    return tuple(np.asarray(a) for a in arrays[:rule.n_out])


def _examples_for(kind: str) -> Callable[..., list]:
    """A call of ``sin`` with its true derivative as the rule; a call with two results."""

    def examples(rng) -> list:
        if kind == "jvp":
            one = CustomRule(kind, "sin_example", key=("sin",), n_out=1, n_in=1,
                             jvp=lambda xs, ts: [F.cos(xs[0]) * ts[0]])
            two = CustomRule(kind, "pair_example", key=("pair",), n_out=2, n_in=1,
                             jvp=lambda xs, ts: [F.cos(xs[0]) * ts[0], -ts[0]])
        else:
            one = CustomRule(kind, "sin_example", key=("sin",), n_out=1, n_in=1,
                             fwd=lambda xs: xs[0], bwd=lambda x, gs: [gs[0] * F.cos(x)])
            two = CustomRule(kind, "pair_example", key=("pair",), n_out=2, n_in=1,
                             fwd=lambda xs: xs[0],
                             bwd=lambda x, gs: [gs[0] * F.cos(x) - gs[1]])
        x = rng.uniform(-1, 1, (3,))
        return [([np.sin(x), x], {"rule": one}), ([np.sin(x), -x, x], {"rule": two})]

    return examples


def _op(name: str, kind: str, doc: str) -> Op:
    return register(Op(
        name=name, signature=_SIG, infer=_infer_for(kind), impl=_value, public=False,
        differentiable=False, domain=None, examples=_examples_for(kind),
        rules="symgrad.transforms.custom", doc=doc,
    ))


CUSTOM_VJP_CALL = _op("custom_vjp_call", "vjp",
                      "a call of a function with a custom VJP (sg.custom_vjp)")
CUSTOM_JVP_CALL = _op("custom_jvp_call", "jvp",
                      "a call of a function with a custom JVP (sg.custom_jvp)")

__all__ = ["CUSTOM_JVP_CALL", "CUSTOM_VJP_CALL"]
