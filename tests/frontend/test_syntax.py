"""The reader of parse's text (:mod:`symgrad.frontend.syntax`): Python's precedence and
associativity, comments and line continuations, long chains read without recursion in work
linear in the text, and errors that say what to write with a caret under the column."""

from __future__ import annotations

import sys

import pytest

import symgrad as sg
from tests.support.graphs import caret as _caret
from tests.support.graphs import structure


@pytest.mark.parametrize("text,col", [
    ("1 + foo(x)", 4), ("x + y.__class__", 6), ("exp(x) + (lambda: 1)", 10),
    ("a < b < c", 6), ("sin(x, foo=1)", 7), ("x + f'{x}'", 4), ("a + exp(*b)", 8),
    ("(a +\n  open(b))", 7), ("x + (y", 4), ("é + foo(x)", 4), ("2 * 9**9**9**9", 8),
])
def test_caret_points_at_the_offending_column(text, col):
    with pytest.raises(sg.ParseError) as info:
        sg.parse(text)
    shown, at = _caret(info.value)
    assert at == col, str(info.value)
    assert shown == text.replace("\n", " ")


@pytest.mark.parametrize("text", ["x ** 2 +", "sin(x) *", "a -"])
def test_incomplete_expression_points_at_its_end(text):
    with pytest.raises(sg.ParseError) as info:
        sg.parse(text)
    assert info.value.col == len(text.rstrip())
    assert "ends too early" in str(info.value)


def test_thousands_of_chained_terms_parse_and_match_the_api():
    """5000 terms, which ast.parse refuses as nested too deeply, read to the API's graph."""
    text = " + ".join(f"x{i % 50}*x{(i + 1) % 50}" for i in range(5000))
    got = sg.parse(text)
    xs = [sg.var(f"x{k}") for k in range(50)]
    want = xs[0] * xs[1]
    for i in range(1, 5000):
        want = want + xs[i % 50] * xs[(i + 1) % 50]
    assert structure(got) == structure(want)
    at = {f"x{k}": 1.0 + k / 64 for k in range(50)}
    assert sg.evaluate(got, at) == sg.evaluate(want, at)


def test_long_right_associative_power_chain():
    got = sg.parse("x" + " ** x" * 3000, shapes={"x": ()})
    x = sg.var("x")
    want = x
    for _ in range(3000):
        want = x ** want
    assert structure(got) == structure(want)
    assert sg.evaluate(got, {"x": 1.0}) == 1.0


def _calls_to_parse(n_terms: int) -> int:
    """Python function calls made while parsing an n-term sum (deterministic)."""
    text = " + ".join(f"x{i % 50}*x{(i + 1) % 50}" for i in range(n_terms))
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        sg.parse(text)
    finally:
        sys.setprofile(None)
    return count


def test_parse_work_grows_linearly_with_the_number_of_terms():
    small, large = _calls_to_parse(500), _calls_to_parse(4000)
    assert large / small < 8 * 1.15, (small, large)  # 8x the terms: 8x the work


@pytest.mark.parametrize("text,message,col", [
    ("sni(x)", "unknown function 'sni'; did you mean sin?", 0),
    ("1 + expp(x)", "did you mean exp?", 4),
    ("sum(x, axes=0)", "did you mean axis?", 7),
    ("np.sin(x)", "unknown function 'np.sin'; did you mean sin?", 0),
    ("scan(x)", "scan() takes its step as a lambda written in the text", 5),
    ("scan(sin, 1.0, x)", "write scan(lambda c, x: f(c, x), ...)", 5),
    ("2 * fori_loop(0, 3, x, x)", "fori_loop() takes its body as a lambda", 20),
    ("lambda c: c", "a lambda is only read as the step of a loop", 0),
    ("sin(lambda c: c)", "a lambda is only read as the step of a loop", 4),
    ("scan(lambda c: c, 1.0, x)", "scan()'s lambda takes 2 parameters (carry, x), got 1", 5),
    ("scan(lambda c, x: (c, c), 1.0, x, reverse=1)", "needs True or False for 'reverse'", 42),
    ("scan(lambda c, x: (c, c), [1.0, 2.0], x)", "a list here is ambiguous", 26),
    ("scan(lambda c, x: (c, None), 0.0, x)[1]", "the expression is None", 0),
    ("scan(lambda c, x: (c, c), 0.0, x)", "pick one, e.g. scan(...)[0]", 0),
    ("scan(lambda c, x: (sin(None), c), 1.0, x)", "None is not supported here", 23),
    ("(1, 2)", "as a loop's carries and step results", 0),
    ("fori_loop(0, n, lambda i, c: c, 1.0)", "needs an int literal for 'upper'", 13),
    ("scan(lambda c, x: (c, c), 1.0, x, foo=1)", "unexpected keyword 'foo'", 34),
    ("scan(lambda c, x: (c, c), 1.0, x, reverse=True, reverse=False)", "multiple values", 48),
    ("lambda c=1, x: c", "default values are not supported", 8),
    ("lambda *a: a", "*-parameters in a lambda are not supported", 7),
    ("lambda a, **k: a", "**-parameters", 10),
    ("lambda a, /, b: a", "'/' in lambda parameters", 10),
    ("lambda (a): a", "plain names (no tuple unpacking)", 7),
    ("lambda c, c: c", "duplicate parameter 'c'", 10),
    ("lambda c x: c", "names separated by ','", 9),
    ("lambda c", "a lambda needs ':' and a body", 8),
    ("f(lambda c: )", "a lambda needs a body", 2),
    ("lambda c: c +", "ends too early", 13),
    ("(lambda c: c", "'(' was never closed", 0),
    ("lambda if: 1", "'if' is a keyword", 7),
    ("x ^ 2", "for a power write x ** 2", 2),
    ("x // 2", "'//'", 2), ("x % 2", "'%'", 2),
    ("x.sin", "attribute access is not supported", 2),
    ("f(x,,y)", "missing before ','", 4),
    ("sin(x", "'(' was never closed", 3),
    ("a +\n b", "continues on a new line", 3),
    ("(a +\n b]", "closing ']' does not match opening '('", 7),
    ("x[]", "an index is missing", 1),
    ("sin(x=1, 2)", "positional argument cannot follow keyword", 9),
    ("'abc", "never closed", 0),
    ("x $ y", "invalid character '$'", 2),
    ("{a: 1}", "dict literals", 0), ("{a}", "set literals", 0),
    ("x y", "an operator is missing", 2),
    ("x not in y", "'not in'", 2), ("x is y", "'is'", 2),
    ("x)", "unmatched ')'", 1),
    ("x[1:2:3:4]", "at most two ':'", 7),
])
def test_parse_errors_say_what_to_do_and_point_at_it(text, message, col):
    with pytest.raises(sg.ParseError) as info:
        sg.parse(text, shapes={"x": (3,)})
    assert message in str(info.value)
    assert _caret(info.value)[1] == col, str(info.value)


def test_more_syntax_of_the_new_parser_matches_python():
    x = sg.var("x", shape=(3,))
    assert structure(sg.parse("x[1,]", shapes={"x": (3,)})) == structure(x[1])
    assert structure(sg.parse("x  # a comment", shapes={"x": (3,)})) == structure(x)
    assert structure(sg.parse("\\\nx + \\\n 1", shapes={"x": (3,)})) == structure(x + 1)
    assert structure(sg.parse("(x\n +\n 1)", shapes={"x": (3,)})) == structure(x + 1)
    assert structure(sg.parse("sum(x,)", shapes={"x": (3,)})) == structure(sg.sum(x))
    assert sg.evaluate(sg.parse("True + 1")) == 2
    assert sg.evaluate(sg.parse("0x10 + 0o7 + 0b11 + 1_000")) == 16 + 7 + 3 + 1000
    assert sg.evaluate(sg.parse("2 ** -1 ** 2")) == 0.5  # -(1 ** 2): ** binds tighter
    assert sg.evaluate(sg.parse("-2 ** 2")) == -4
    assert sg.evaluate(sg.parse("2 - 3 - 4")) == -5 and sg.evaluate(sg.parse("8 / 4 / 2")) == 1
    assert sg.evaluate(sg.parse("einsum(r'i->', x)", shapes={"x": (3,)}), {"x": [1, 2, 3]}) == 6
