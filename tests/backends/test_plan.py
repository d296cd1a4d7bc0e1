"""Names of several derivatives w.r.t. one variable in emitted code: Greeks-style outputs
(``dS``, ``hess_S``, ``hess_S_v``, ``d3_S``, ``d3_S_S_v``) and the same derivative of
several returned values (``dvalue_dx``, ``dvalue_1_dx``, or after the user's names), never
``dx, dx_1, dx_2``. The golden file shows the names and the docstring lines."""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from tests.support.golden_files import check_golden


def _returned(source: str) -> list[str]:
    line = next(x for x in source.splitlines() if x.startswith("    return "))
    return [n.strip() for n in line.split("#")[0][len("    return "):].split(",")]


def _greeks():
    S, v = sg.var("S"), sg.var("v")
    price = S * sg.exp(-v * v) + sg.sin(S * v)
    d = sg.grad
    outs = [price, d(price, S), d(d(price, S), S), d(price, v), d(d(price, S), v),
            d(d(price, v), v), d(d(d(price, S), S), S), d(d(d(price, S), S), v)]
    return outs, [S, v]


def test_golden_greeks_names_and_docstring():
    outs, inputs = _greeks()
    source = sg.to_source(outs, inputs=inputs, name="greeks")
    check_golden("greeks.py", source)
    assert _returned(source) == ["value", "dS", "hess_S", "dv", "hess_S_v", "hess_v", "d3_S",
                                 "d3_S_S_v"]
    doc = source.split("def greeks(")[1].split('"' * 3)[1]
    assert "d3_S: float64 () = third derivative of S * exp(-v * v) + sin(S * v) w.r.t. S, S, " \
        "S" in " ".join(doc.split())
    assert "d3_S_S_v: float64 () = third derivative of" in doc


def test_greeks_values():
    outs, inputs = _greeks()
    fn = sg.compile(outs, inputs=inputs)
    S, v = 1.3, 0.4
    e, c = np.exp(-v * v), np.cos(S * v)
    s = np.sin(S * v)
    want = [S * e + s, e + v * c, -v * v * s, -2 * v * S * e + S * c,
            -2 * v * e + c - S * v * s, (4 * v * v - 2) * S * e - S * S * s,
            -v ** 3 * c, -2 * v * s - v * v * S * c]
    np.testing.assert_allclose(fn(S, v), want, rtol=1e-13)


def test_the_same_derivative_of_several_values_says_which():
    x, y = sg.var("x"), sg.var("y")
    f, g = sg.sin(x) * y, sg.exp(x * y)
    outs = [f, g, *sg.grad(f, [x, y]), *sg.grad(g, [x, y]), sg.hessian(f, x),
            sg.hessian(g, x)]
    source = sg.to_source(outs, inputs=[x, y])
    assert _returned(source) == ["value", "value_1", "dvalue_dx", "dvalue_dy", "dvalue_1_dx",
                                 "dvalue_1_dy", "hess_value_x", "hess_value_1_x"]
    named = sg.to_source(outs[:4] + outs[4:6], inputs=[x, y],
                         output_names=["price", "aux", "dprice_dx", "dprice_dy",
                                       "daux_dx", "daux_dy"])
    assert _returned(named)[2:] == ["dprice_dx", "dprice_dy", "daux_dx", "daux_dy"]
    fn = sg.compile(outs, inputs=[x, y])
    at = {"x": 0.3, "y": -1.1}
    for got, want in zip(fn(**at), sg.evaluate(outs, at)):
        assert got == pytest.approx(want, rel=1e-14)


def test_one_value_keeps_the_short_names():
    """Only where a name would be ambiguous does it say which value: one gradient per
    variable stays ``dx``; a variable named like a generated name still steps aside."""
    x, y = sg.var("x"), sg.var("y")
    f = x * y + sg.sin(x)
    assert _returned(sg.to_source([f, *sg.grad(f, [x, y])])) == ["value", "dx", "dy"]
    dx = sg.var("dx")
    h = x * dx
    source = sg.to_source([h, *sg.grad(h, [x, dx])])
    assert _returned(source) == ["value", "dx_1", "ddx"]
    assert not re.search(r"\bdx_2\b", source)
