"""What the Taylor rules are written with: the weights and sums (``scaled``, ``total``,
``weighted`` merging like terms, a negation folded into the weight), whole exponents found
only on constants, and each family of rule to order 12 against closed forms of the
derivatives (chain, pair, quotient, logarithm, root, power by squaring with exact zeros)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops import series as S
from symgrad.transforms.taylor import series_of

K = 12


def test_scaled_and_total_skip_zeros_and_fold_signs():
    x = sg.var("x")
    assert S.scaled(0, x) is None and S.scaled(3, None) is None and S.scaled(1, x) is x
    assert S.scaled(-1, x).op == "negative"
    assert sg.evaluate(S.scaled(3, x), {"x": 2.0}) == 6.0
    assert S.total([None, None]) is None and S.total([None, x]) is x
    assert sg.evaluate(S.total([x, None, x * x]), {"x": 3.0}) == 12.0


def test_weighted_builds_a_like_term_once_with_its_weights_summed():
    """``sum_j C(k, j) a_j b_(k-j)`` with ``a_j = +-s`` and ``b = c``: the terms of one product
    merge, and opposite signs cancel in integers (no node at all)."""
    x = sg.var("x")
    s, c = sg.sin(x), sg.cos(x)
    a = [s, -s, s, -s]
    b = [c, c, c, c]
    assert S.weighted(a, b, 3, 0, 3) is None  # C(3,0) - C(3,1) + C(3,2) - C(3,3) = 0
    assert S.weighted(a, b, 2, 0, 2) is None  # 1 - 2 + 1 = 0
    e = S.weighted([s, s, s], [c, c, c], 2, 0, 2)  # (1 + 2 + 1) s c: one product
    ops = [e.graph.nodes[i].op for i in e.graph.ancestors([e.node])]
    assert ops.count("multiply") == 2  # s * c once, then times the weight 4
    assert sg.evaluate(e, {"x": 0.7}) == pytest.approx(4 * np.sin(0.7) * np.cos(0.7), 1e-15)


def test_whole_exponents_are_found_only_on_constants():
    x = sg.var("x")
    three, half, big = sg.const(3.0), sg.const(0.5), sg.const(np.full(2, 65.0))
    assert S.constant_whole(three, [three, None], 64) == 3
    assert S.constant_whole(half, [half, None], 64) is None
    assert S.constant_whole(big, [big, None], 64) is None  # above the limit
    assert S.constant_whole(sg.const(np.array([2.0, 3.0])), [None, None], 64) is None
    assert S.constant_whole(x, [x, None], 64) is None  # a variable, not a constant
    assert S.constant_whole(three, [three, x], 64) is None  # depends on x


def _derivatives(f, x, at):
    return np.array([float(sg.evaluate(d, {"x": at})) if d is not None else 0.0
                     for d in series_of(f, x, K)])


FAMILIES = {  # f of x, and its k-th derivative at x in closed form
    "chain_exp": (lambda x: sg.exp(2.0 * x), lambda k, v: 2.0 ** k * np.exp(2 * v)),
    "pair_sin": (lambda x: sg.sin(3.0 * x), lambda k, v: 3.0 ** k * np.sin(3 * v + k * np.pi / 2)),
    "quotient": (lambda x: 1.0 / (1.0 + x),
                 lambda k, v: (-1) ** k * math.factorial(k) / (1 + v) ** (k + 1)),
    "logarithm": (lambda x: sg.log(1.0 + x), lambda k, v: np.log1p(v) if k == 0 else
                  (-1) ** (k - 1) * math.factorial(k - 1) / (1 + v) ** k),
    "root": (lambda x: sg.sqrt(1.0 + x), lambda k, v: math.prod(0.5 - j for j in range(k))
             * (1 + v) ** (0.5 - k)),
    "power": (lambda x: x ** 7, lambda k, v: math.perm(7, k) * v ** (7 - k) if k <= 7 else 0.0),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_each_family_of_rule_gives_the_closed_form_to_order_12(name):
    build, closed = FAMILIES[name]
    x = sg.var("x")
    at = 0.3
    got = _derivatives(build(x), x, at)
    want = np.array([closed(k, at) for k in range(K + 1)])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_power_by_squaring_is_exact_at_zero_and_ends_after_the_exponent():
    x = sg.var("x")
    entries = series_of(x ** 5, x, 8)
    got = [0.0 if e is None else float(sg.evaluate(e, {"x": 0.0})) for e in entries]
    assert got == [0.0, 0.0, 0.0, 0.0, 0.0, 120.0, 0.0, 0.0, 0.0]
