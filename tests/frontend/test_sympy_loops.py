"""``to_sympy`` of loops: a scan unrolled for its length (its value checked against
evaluation, nested and reversed scans and fori_loop included), stacked per-step results as a
sympy Array (refused inside a formula), and a limit naming ``sg.latex`` for a loop too long
or a recurrence that explodes."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import symgrad as sg

RNG = np.random.default_rng(21)


def _numeric(e: sg.Expr, at: dict) -> float:
    """The sympy expression of ``e`` evaluated at ``at`` (arrays read as xs[t])."""
    expr = sg.to_sympy(e)
    subs = {}
    for s in expr.free_symbols:
        if isinstance(s, sympy.Indexed):
            subs[s] = at[str(s.base)][int(s.indices[0])]
        elif isinstance(s, sympy.Symbol) and s.name in at:
            subs[s] = at[s.name]
    return expr.xreplace(subs)


@pytest.mark.parametrize("text", [
    "scan(lambda c, x: (sin(c) * a + x, c), b, 2 * exp(xs), reverse=True)[0]",
    "scan(lambda c, x: ((c[0] + x, c[1] * x), c[0]), (a, b), xs)[0][1]",
    "scan(lambda c, x: (c * x, c), a, scan(lambda c, x: (c + x, c), b, xs)[1])[0]",
    "fori_loop(0, 4, lambda i, c: c * a + i, b)",
    "scan(lambda c, x: (c + scan(lambda d, y: (d * y + x, None), a, xs)[0], None), b, xs)[0]",
])
def test_to_sympy_unrolls_a_scan_to_its_value(text):
    e = sg.parse(text, shapes={"xs": (4,)})
    at = {"xs": RNG.normal(size=4), "a": 0.8, "b": -0.3}
    assert float(_numeric(e, at)) == pytest.approx(sg.evaluate(e, at), rel=1e-12, abs=1e-12)


def test_to_sympy_of_stacked_steps_is_an_array_and_refused_inside_a_formula():
    e = sg.parse("scan(lambda c, x: (c * x, c + 1), a, xs)[1]", shapes={"xs": (3,)})
    got = sg.to_sympy(e)
    a, xs = sympy.Symbol("a", real=True), sympy.IndexedBase("xs", real=True)
    assert isinstance(got, sympy.Array) and list(got) == [a + 1, a * xs[0] + 1,
                                                          a * xs[0] * xs[1] + 1]
    with pytest.raises(sg.SymgradError, match="stacked per-step results of a scan"):
        sg.to_sympy(sg.parse("2 * scan(lambda c, x: (c * x, c), a, xs)[1]",
                             shapes={"xs": (3,)}))


def test_to_sympy_of_a_long_or_exploding_loop_is_a_limit_error_naming_latex():
    long = sg.parse("scan(lambda c, x: (c * x, c), 1.0, xs)[0]", shapes={"xs": (10**5,)})
    with pytest.raises(sg.LimitError, match="print_tree_nodes") as info:
        sg.to_sympy(long)
    assert "sg.latex" in str(info.value)
    doubling = sg.parse("scan(lambda c, x: (c + c * x, c), 1.0, xs)[0]", shapes={"xs": (40,)})
    with pytest.raises(sg.LimitError, match="sg.latex"):
        sg.to_sympy(doubling)
    with pytest.raises(sg.SymgradError, match="'matmul' has no sympy form"):
        sg.to_sympy(sg.parse("sum(scan(lambda c, x: (W @ c, c), h, xs)[0])",
                             shapes={"xs": (3, 2), "W": (2, 2), "h": (2,)}))
