"""Chains of terms become reductions only where every term is the same expression: two
terms whose attributes differ only in the sign of a zero are different terms."""

from __future__ import annotations

import numpy as np

import symgrad as sg
from symgrad.passes.reductions import reduce_chains


def test_terms_differing_in_the_sign_of_a_zero_are_not_merged():
    x = sg.var("x", shape=(16,))
    terms = [1.0 / (x[i] * sg.full((), -0.0 if i >= 8 else 0.0)) for i in range(16)]
    chain = terms[0]
    for t in terms[1:]:
        chain = chain + t
    (reduced,) = reduce_chains([chain])
    at = {"x": np.ones(16)}
    with np.errstate(divide="ignore", invalid="ignore"):
        want = sum(1.0 / (1.0 * np.float64(z)) for z in [0.0] * 8 + [-0.0] * 8)
        assert np.isnan(want)  # +inf eight times, then -inf
        assert np.isnan(sg.evaluate(reduced, at))
        assert np.isnan(sg.evaluate(chain, at))
    same = [x[i] * sg.full((), 2.0) for i in range(16)]
    chain = same[0]
    for t in same[1:]:
        chain = chain + t
    (reduced,) = reduce_chains([chain])
    assert "sum(" in str(reduced)  # equal attributes still merge
