"""The calls of functions with a custom derivative (``sg.custom_vjp``, ``sg.custom_jvp``).

A call is one node per result leaf, selected by attribute ``out``. Operands: the results
as the function itself computes them (its primal, inlined in the graph), the
differentiated inputs, then the values the function captured; attribute ``rule`` is the
user's rule (:class:`~symgrad.ir.custom.CustomRule`). The *value* of node ``out`` is
operand ``out`` (so every backend writes it as that operand); its *derivative* is the
rule's, never the primal's:

* ``custom_vjp_call``: reverse mode calls ``fwd`` then ``bwd`` (on every row of a batch of
  seeds: one vectorised pass when ``bwd`` is affine in the cotangent, else a loop);
  forward mode is the transpose of ``bwd`` (only when ``bwd`` is linear in it);
* ``custom_jvp_call``: forward mode calls ``jvp``; reverse mode transposes it (linear in
  the tangents, as JAX requires).

The rules are built by :mod:`symgrad.transforms.custom`. The ops are not
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
from typing import Any

import numpy as np

from ..base.errors import ShapeError
from ..ir.custom import CustomRule
from ..ir.expr import F
from ..ir.op import Op, register, sig

_SIG = sig("*operands", rule=None, out=0)

# The rules, built by the transforms (reverse and forward mode on the user's rule): filled
# by :mod:`symgrad.transforms.custom` when it is imported.
DERIVED: dict[str, Callable[..., Any]] = {}


def _derived(kind: str) -> Callable[..., Any]:
    if kind not in DERIVED:
        from importlib import import_module

        import_module("symgrad.transforms")  # registers the builders
    return DERIVED[kind]


def _infer_for(kind: str) -> Callable[..., Any]:
    def infer(shapes, dtypes, attrs):
        rule, out = attrs["rule"], attrs["out"]
        if not isinstance(rule, CustomRule) or rule.kind != kind:
            raise ShapeError(f"a custom_{kind} call needs its rule (use sg.custom_{kind})")
        if len(shapes) < rule.n_out + rule.n_in:
            raise ShapeError(f"{rule.name}: the call takes {rule.n_out} results and "
                             f"{rule.n_in} inputs, got {len(shapes)} operands")
        if not 0 <= out < rule.n_out:
            raise ShapeError(f"{rule.name}: no result {out} (it has {rule.n_out})")
        return shapes[out], dtypes[out]

    return infer


def _value(*arrays, rule, out):
    """Result ``out``: the function's own value, an operand of the node."""
    return np.asarray(arrays[out])


def _backprop(n, g):
    return _derived("backprop")(n, g)


def _forward(n, t):
    return _derived("forward")(n, t)


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
        return [([np.sin(x), x], {"rule": one, "out": 0}),
                ([np.sin(x), -x, x], {"rule": two, "out": 1})]

    return examples


def _op(name: str, kind: str, doc: str) -> Op:
    return register(Op(
        name=name, signature=_SIG, infer=_infer_for(kind), impl=_value, backprop=_backprop,
        forward=_forward, public=False, differentiable=False, domain=None,
        examples=_examples_for(kind), joint="out", doc=doc,
    ))


CUSTOM_VJP_CALL = _op("custom_vjp_call", "vjp",
                      "one result of a function with a custom VJP (sg.custom_vjp)")
CUSTOM_JVP_CALL = _op("custom_jvp_call", "jvp",
                      "one result of a function with a custom JVP (sg.custom_jvp)")

__all__ = ["CUSTOM_JVP_CALL", "CUSTOM_VJP_CALL", "DERIVED"]
