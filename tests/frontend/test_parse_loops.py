"""Loops in expression text: ``scan``/``fori_loop`` with a lambda step give the graph the
Python API builds, differentiate as it does (checked against finite differences) and refuse
hostile text with a caret (``to_sympy`` of loops: ``test_sympy_loops.py``; their LaTeX:
``tests/printing/test_latex.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.support.finite_differences import central_at
from tests.support.graphs import canonical

RNG = np.random.default_rng(21)


# -- the text builds the API's graph ---------------------------------------------------------

X5, W3, H3, XS3 = (sg.var("xs", shape=(5,)), sg.var("W", shape=(3, 3)), sg.var("h0", shape=(3,)),
                   sg.var("X", shape=(4, 3)))
A, X = sg.var("a"), sg.var("x")

SAME = [
    ("scan(lambda c, x: (c * x, c), 1.0, xs)[0]",
     lambda: sg.scan(lambda c, x: (c * x, c), 1.0, X5)[0]),
    ("scan(lambda c, x: (c * x, c), 1.0, xs)[1]",
     lambda: sg.scan(lambda c, x: (c * x, c), 1.0, X5)[1]),
    ("scan(lambda c, x: (tanh(W @ c + x), c), h0, X)[0]",
     lambda: sg.scan(lambda c, x: (sg.tanh(W3 @ c + x), c), H3, XS3)[0]),
    ("scan(lambda c, _: (c * a, None), 1.0, length=5)[0]",
     lambda: sg.scan(lambda c, _: (c * A, None), 1.0, length=5)[0]),
    ("scan(lambda c, x: (c * a + x, c), 0.0, xs, reverse=True)[1]",
     lambda: sg.scan(lambda c, x: (c * A + x, c), 0.0, X5, reverse=True)[1]),
    ("fori_loop(0, 10, lambda i, c: c * x + i, 1.0)",
     lambda: sg.fori_loop(0, 10, lambda i, c: c * X + i, 1.0)),
    ("scan(lambda c, x: ((c[0] + x, c[1] * x), c[0]), (0.0, 1.0), xs)[0][1]",
     lambda: sg.scan(lambda c, x: ((c[0] + x, c[1] * x), c[0]), (0.0, 1.0), X5)[0][1]),
    ("scan(lambda c, x: (c + x, c), 0.0, xs, checkpoint=2)[1]",
     lambda: sg.scan(lambda c, x: (c + x, c), 0.0, X5, checkpoint=2)[1]),
    ("scan(lambda c, x: (c + scan(lambda d, y: (d * y + x, None), 1.0, xs)[0], None), 0.0, "
     "xs)[0]",
     lambda: sg.scan(lambda c, x: (c + sg.scan(lambda d, y: (d * y + x, None), 1.0, X5)[0],
                                   None), 0.0, X5)[0]),
]


@pytest.mark.parametrize("text,api", SAME, ids=[t for t, _ in SAME])
def test_text_loops_build_the_graph_of_the_python_api(text, api):
    got = sg.parse(text, shapes={"xs": (5,), "W": (3, 3), "h0": (3,), "X": (4, 3)})
    assert canonical(got) == canonical(api())


def test_a_parsed_scan_differentiates_as_finite_differences_say():
    shapes = {"W": (3, 3), "h0": (3,), "X": (4, 3)}
    f = sg.parse("sum(scan(lambda h, x: (tanh(W @ h + x), h), h0, X)[0] ** 2)", shapes=shapes)
    at = {"W": RNG.normal(size=(3, 3)) * 0.5, "h0": RNG.normal(size=3),
          "X": RNG.normal(size=(4, 3))}
    for name in shapes:
        got = sg.evaluate(sg.grad(f, sg.var(name, shape=shapes[name])), at)
        np.testing.assert_allclose(got, central_at(f, at, name), rtol=1e-6, atol=1e-8)


def test_fori_loop_text_matches_a_python_loop_and_its_derivative():
    f = sg.parse("fori_loop(0, 6, lambda i, c: c * x + i, 1.0)")
    x = 0.7
    c = 1.0
    for i in range(6):
        c = c * x + i
    assert sg.evaluate(f, {"x": x}) == pytest.approx(c, rel=1e-14)
    d = sg.evaluate(sg.grad(f, sg.var("x")), {"x": x})
    assert d == pytest.approx(central_at(f, {"x": x}, "x"), rel=1e-7)


def test_parameters_shadow_outer_names_and_constants():
    # e is the parameter, not Euler's number; x in the step is the row, not the outer x
    f = sg.parse("scan(lambda e, x: (e * x, e), x, xs)[0] + x", shapes={"xs": (3,)})
    assert sg.evaluate(f, {"x": 2.0, "xs": [3.0, 4.0, 5.0]}) == 2.0 * 60.0 + 2.0
    g = sg.parse("scan(lambda c, x: (c + pi, c), 0.0, xs)[0]", shapes={"xs": (2,)})
    assert sg.evaluate(g, {"xs": [0.0, 0.0]}) == pytest.approx(2 * np.pi)


def test_nested_lambdas_see_the_enclosing_parameters():
    f = sg.parse("scan(lambda c, x: (c + scan(lambda d, y: (d * y + x, None), 1.0, xs)[0], "
                 "None), 0.0, xs)[0]", shapes={"xs": (3,)})
    xs = [2.0, 3.0, 0.5]
    want = 0.0
    for x in xs:
        d = 1.0
        for y in xs:
            d = d * y + x
        want += d
    assert sg.evaluate(f, {"xs": xs}) == pytest.approx(want, rel=1e-14)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,message,col", [
    ("scan(lambda c, x: (c, c), 1.0)", "scan: give length= when xs is None", 0),
    ("1 + scan(lambda c, x: c * x, 1.0, xs)[0]", "scan: f must return a pair (new carry, y)",
     4),
    ("scan(lambda c, x: ((c, c), c), 1.0, xs)[0]", "the new carry must have the structure", 0),
    ("scan(lambda c, x: (c, c), 1.0, xs, length=4)[0]", "length=4 but xs has length 3", 0),
])
def test_loop_errors_name_the_call_and_point_at_it(text, message, col):
    with pytest.raises(sg.SymgradError) as info:
        sg.parse(text, shapes={"xs": (3,)})
    lines = str(info.value).splitlines()
    assert message in lines[0]
    assert lines[-1].index("^") - 4 == col


def test_an_error_inside_a_step_points_into_the_lambda_once():
    with pytest.raises(sg.ShapeError) as info:
        sg.parse("scan(lambda c, x: (c[0], c), 1.0, xs)[0]", shapes={"xs": (3,)})
    text = str(info.value)
    assert text.count("^") == 1 and text.splitlines()[-1].index("^") - 4 == 20


def test_deep_lambda_nesting_is_a_limit_error():
    def nested(n: int) -> str:
        body = "c * x"
        for k in range(n):
            body = f"fori_loop(0, 2, lambda i{k}, c: {body}, c)"
        return "fori_loop(0, 2, lambda j, c: " + body + ", 1.0)"

    sg.parse(nested(40))  # 41 lambdas and 41 brackets fit the default depth of 100
    with pytest.raises(sg.LimitError, match="parse_depth"):
        sg.parse(nested(60))
    with sg.limits(parse_depth=5000), pytest.raises(sg.LimitError) as info:
        sg.parse(nested(1500))  # deeper than Python's recursion limit can trace
    assert isinstance(info.value, sg.ParseError) and "nested too deeply" in str(info.value)


# -- limits and shadowing -----------------------------------------------------------------------


def test_hostile_loops_in_text_stop_at_a_limit():
    with pytest.raises(sg.LimitError, match="dense_elements"):  # not a 73 TiB index array
        sg.parse("fori_loop(0, 10000000000000, lambda i, c: c * 2.0, 1.0)")
    wide = "lambda " + ", ".join(f"a{k}" for k in range(50_000)) + ": a0"
    with pytest.raises(sg.ParseError, match="only read as the step of a loop"):
        sg.parse(wide)  # 50,000 parameters read in linear time
    with pytest.raises(sg.ParseError, match="takes 2 parameters"):
        sg.parse(f"scan({wide}, 1.0, length=2)")


def test_a_lambda_parameter_shadows_a_function_of_its_name():
    """As in Python: ``sin`` inside ``lambda c, sin: ...`` is the parameter (a value), so
    ``sin(c)`` there is an error, not the function."""
    got = sg.parse("scan(lambda c, sin: (c + sin, c), 1.0, xs)[0]", shapes={"xs": (3,)})
    assert sg.evaluate(got, {"xs": [1.0, 2.0, 3.0]}) == 7.0
    with pytest.raises(sg.ParseError, match="parameter of the enclosing lambda.*rename"):
        sg.parse("scan(lambda c, sin: (c + sin(c), c), 1.0, xs)[0]", shapes={"xs": (3,)})
