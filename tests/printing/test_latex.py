"""LaTeX of an expression (``sg.latex``): sympy's notation for the elementwise parts, matrix
notation (products, transposes, Hadamard products, sums, indices) where sympy has none, a
loop as its recurrence, and a limit for a formula too large to print."""

from __future__ import annotations

import pytest

import symgrad as sg


def test_latex_elementwise_and_matrix_notation():
    a = sg.var("a")
    assert sg.latex(a ** 2 / 2.0) == r"\frac{a^{2}}{2}"
    W, x = sg.var("W", shape=(4, 3)), sg.var("x", shape=(3,))
    assert sg.latex((W @ x) ** 2) == r"\left(W x\right)^{2}"
    assert sg.latex(sg.sum(sg.tanh(W @ x))) == r"\textstyle\sum \tanh{\left(W x \right)}"
    assert sg.latex(W.T) == r"W^{\top}"
    v = sg.var("v", shape=(3,))
    assert sg.latex(v * x) == r"v \odot x"
    y = sg.var("y", dtype="int64")
    assert sg.latex(sg.log_softmax(v)[y]) == r"\operatorname{log\_softmax}\left(v\right)_{y}"


def test_latex_of_a_huge_expression_is_refused():
    x = sg.var("x")
    f = x
    for _ in range(6_000):
        f = sg.sin(f)
    with pytest.raises(sg.LimitError, match="latex"):
        sg.latex(f)


def test_latex_and_stats_of_a_parsed_scan():
    e = sg.parse("scan(lambda c, x: (c * x, c), 1.0, xs)[0]", shapes={"xs": (5,)})
    text = sg.latex(e)
    assert r"\leftarrow" in text and r"t = 1, \dots, 5" in text and "xs" in text
    assert sg.stats(e).before.loops == 1
