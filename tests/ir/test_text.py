"""Printing: minimal parentheses, constants, the listing, DOT, and huge graphs."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import symgrad as sg
from symgrad import printing
from symgrad.ir import text as ir_text
from symgrad.printing import dot
from tests.support.graphs import canonical


@pytest.fixture
def v():
    class Vars:
        def __getattr__(self, name):
            return sg.var(name)

    return Vars()


def _same_graph(a: sg.Expr, b: sg.Expr) -> bool:
    return canonical(a) == canonical(b)


# -- minimal parentheses ------------------------------------------------------------------

PARENS = [
    (lambda v: v.a - (v.b - v.c), "a - (b - c)"),
    (lambda v: (v.a - v.b) - v.c, "a - b - c"),
    (lambda v: (v.a + v.b) * v.c, "(a + b) * c"),
    (lambda v: v.a + v.b * v.c, "a + b * c"),
    (lambda v: v.a / (v.b * v.c), "a / (b * c)"),
    (lambda v: v.a * v.b / v.c, "a * b / c"),
    (lambda v: v.a * (v.b / v.c), "a * (b / c)"),
    (lambda v: v.a ** v.b ** v.c, "a ** b ** c"),
    (lambda v: (v.a ** v.b) ** v.c, "(a ** b) ** c"),
    (lambda v: -v.a ** 2, "-a ** 2"),
    (lambda v: (-v.a) ** 2, "(-a) ** 2"),
    (lambda v: v.a ** -v.b, "a ** -b"),
    (lambda v: -(v.a + v.b), "-(a + b)"),
    (lambda v: -(v.a * v.b), "-(a * b)"),
    (lambda v: (-v.a) * v.b, "-a * b"),
    (lambda v: v.a - -v.b, "a - -b"),
    (lambda v: sg.negative(-v.a), "-(-a)"),
    (lambda v: 2 ** v.a, "2 ** a"),
    (lambda v: (-2.0) ** v.a, "(-2.0) ** a"),
    (lambda v: v.a * -3.0, "a * -3.0"),
    (lambda v: v.a - 1, "a - 1"),
    (lambda v: 1 - v.a, "1 - a"),
    (lambda v: (v.a < v.b) == (v.b < v.c), "(a < b) == (b < c)"),
    (lambda v: v.a + v.b < v.c * 2.0, "a + b < c * 2.0"),
    (lambda v: sg.less(2.0, v.a), "less(2.0, a)"),
    (lambda v: sg.exp(v.a + v.b) * v.c, "exp(a + b) * c"),
    (lambda v: sg.where(v.a > 0, v.a, 0.0), "where(a > 0, a, 0.0)"),
    (lambda v: sg.maximum(v.a, v.b) - v.c, "maximum(a, b) - c"),
]


@pytest.mark.parametrize("build,text", PARENS, ids=[t for _, t in PARENS])
def test_minimal_parentheses(v, build, text):
    e = build(v)
    assert str(e) == text
    back = sg.parse(text)
    assert _same_graph(back, e)


def test_matmul_transpose_reductions_and_indexing():
    A, x = sg.var("A", shape=(2, 3)), sg.var("x", shape=(3,))
    T = sg.var("T", shape=(2, 3, 4))
    y = sg.var("y", dtype="int64")
    assert str(A @ x + 1.0) == "A @ x + 1.0"
    assert str((A + 1.0) @ x) == "(A + 1.0) @ x"
    assert str(A.T) == "transpose(A)"
    assert str(sg.sum(A)) == "sum(A)"  # axis covering every axis is the default
    assert str(sg.sum(A, axis=(0, 1))) == "sum(A)"
    assert str(sg.sum(A, axis=1)) == "sum(A, axis=-1)"
    assert str(sg.mean(T, axis=(0, 2), keepdims=True)) == "mean(T, axis=(-3, -1), keepdims=True)"
    assert str(sg.softmax(x)) == "softmax(x)"
    assert str(sg.einsum("ij,j->i", A, x)) == 'einsum("ij,j->i", A, x)'
    assert str(sg.concatenate([x, x], axis=0)) == "concatenate([x, x])"
    assert str(x[1:]) == "x[1:]"
    assert str(A[:, 1:]) == "A[:, 1:]"
    assert str(T[0, :, -1]) == "T[0, :, 3]"
    assert str(x[None, :]) == "x[None]"
    assert str((x * x)[y]) == "(x * x)[y]"
    assert str(-sg.log_softmax(A @ x)[y]) == "-log_softmax(A @ x)[y]"


def test_constants_print_as_literals_that_read_back():
    x = sg.var("x")
    cases = {
        x * 2: "x * 2", x * 2.0: "x * 2.0", x + math.pi: "x + pi", x * math.e: "x * e",
        x + math.inf: "x + inf", x - math.inf: "x - inf", x * -math.inf: "x * -inf",
        x + math.nan: "x + nan", x + 0.1: "x + 0.1", x * -0.0: "x * -0.0",
        x * 1e-300: "x * 1e-300", sg.where(x > 0, True, False): "where(x > 0, True, False)",
        x + np.array([1.5, -2.0]): "x + [1.5, -2.0]",
        x + np.arange(4).reshape(2, 2): "x + [[0, 1], [2, 3]]",
    }
    for e, text in cases.items():
        assert str(e) == text
        assert _same_graph(sg.parse(text), e), text


def test_large_constants_are_summarised():
    x = sg.var("x", shape=(200,))
    assert str(x + np.ones(200)) == "x + const(f64[200])"


def test_pi_prints_as_a_number_when_a_variable_is_called_pi():
    pi = sg.var("pi")
    assert str(pi * math.pi) == "pi * 3.141592653589793"


def test_str_of_adjoint_expressions():
    x, y = sg.var("x"), sg.var("y")
    dx = sg.grad(sg.sin(x) * y + x, x)
    assert str(dx) == "1.0 + y * cos(x)"


# -- let fallback and big graphs ----------------------------------------------------------


def test_shared_dag_falls_back_to_a_linear_let_listing():
    y = sg.var("y")
    for _ in range(60):  # fully expanded infix would have about 2**60 characters
        y = y * y + 1.0
    text = str(y)
    lines = text.splitlines()
    assert lines[0] == "let" and lines[-1].startswith("in ")
    assert lines[1] == "  %1 = y * y + 1.0"
    assert lines[2] == "  %2 = %1 * %1 + 1.0"
    assert len(lines) == 61 and len(text) < 2000


def test_small_sharing_is_expanded():
    y = sg.var("y")
    for _ in range(2):
        y = y * y
    assert str(y) == "y * y * (y * y)"


@pytest.fixture(scope="module")
def chain():
    x = sg.var("x")
    f = x
    for i in range(100_000):
        f = sg.sin(f) if i % 2 else f * 1.5
    return f


def test_long_chain_infix_is_a_let_listing_without_recursion(chain):
    text = str(chain)
    lines = text.splitlines()
    assert lines[0] == "let" and lines[-1].startswith("in ")
    assert max(len(line) for line in lines) <= ir_text.LINE_LIMIT + 20
    assert text.count("sin(") == 50_000


def test_long_chain_listing_has_one_line_per_node(chain):
    text = printing.listing(chain)
    lines = text.splitlines()
    assert len(lines) == 2 + 100_000  # inputs, 100k nodes (constant 1.5 inline), outputs
    assert lines[-1] == f"outputs  v{chain.node}"
    assert len(str(chain.graph).splitlines()) == len(lines)


def test_long_chain_to_dot_collapses_the_chain(chain):
    dot = sg.to_dot(chain)  # 10^5 nodes: one box for the chain, built without recursion
    assert dot.count("->") < 10
    assert re.search(r"\b99,998 nodes|\d+ nodes: ", dot)
    with pytest.raises(sg.LimitError, match="at most 400"):
        sg.to_dot(chain, collapse=False)


# -- listing ------------------------------------------------------------------------------


def test_listing_golden_text():
    W = sg.var("W", shape=(2, 3))
    x = sg.var("x", shape=(3,))
    f = sg.sum(sg.tanh(W @ x) * 2.0, axis=0)
    assert sg.listing(f) == "\n".join([
        "inputs  W:f64[2,3]  x:f64[3]",
        "v2:f64[2] = matmul W x",
        "v3:f64[2] = tanh v2",
        "v5:f64[2] = multiply v3 2.0",
        "v6:f64[] = sum v5",  # attributes equal to the defaults are not shown
        "outputs  v6",
    ])
    assert str(f.graph) == sg.listing(f)


def test_listing_marks_adjoint_nodes():
    x, y = sg.var("x"), sg.var("y")
    f = sg.exp(x) * sg.sin(y)
    dx, dy = sg.grad(f, [x, y])
    text = sg.listing([f, dx, dy])
    g = f.graph
    lines = {int(m.group(1)): line for line in text.splitlines()
             if (m := re.match(r"v(\d+):", line))}
    for fwd, adj in g.adjoint_of.items():
        name = g.nodes[fwd].name or f"v{fwd}"
        if adj in lines:
            assert re.search(rf"# adjoint of .*\b{name}\b", lines[adj]), lines[adj]
    assert len([i for i in lines if i in g.adjoint_of.values()]) >= 4
    for i, line in lines.items():
        if g.nodes[i].role == "adjoint" and i not in g.adjoint_of.values():
            assert f"# backprop of v{g.nodes[i].origin}" in line
    assert text.splitlines()[-1] == f"outputs  v{f.node}  v{dx.node}  v{dy.node}"


def test_listing_of_exprs_from_separate_graphs():
    a, b = sg.var("a"), sg.var("b", shape=(2,))
    text = sg.listing([sg.exp(a), sg.sin(b)])
    assert "inputs  a:f64[]  b:f64[2]" in text
    assert "= exp a" in text and "= sin b" in text


def test_listing_rejects_other_things():
    with pytest.raises(sg.SymgradError):
        sg.listing([1.0])


# -- DOT ----------------------------------------------------------------------------------


def _dot_strings_are_well_formed(dot: str) -> bool:
    """Every double-quoted string closes on its own line (escapes respected)."""
    for line in dot.splitlines():
        inside, escaped = False, False
        for ch in line:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = not inside
        if inside:
            return False
    return True


def test_dot_shows_adjoints_apart_with_forward_to_adjoint_links():
    x = sg.var("x", shape=(3,))
    A = sg.var("A", shape=(2, 3))
    f = sg.sum(sg.tanh(sg.einsum("ij,j->i", A, x)))
    dx = sg.grad(f, x)
    dot = sg.to_dot([f, dx])
    assert dot.startswith("digraph symgrad {") and dot.endswith("}")
    assert "subgraph cluster_forward" in dot and "subgraph cluster_B" in dot
    forward, back = dot.split("subgraph cluster_B")
    assert "u1 = A" in forward and "P2 = " in back  # Collins' numbering, as in explain
    assert 'xlabel="∂f/∂u2"' in dot  # the link from x (u2) to its adjoint, named as its box
    assert '\\"ij,j->i\\"' in dot  # the spec's quotes are escaped
    assert _dot_strings_are_well_formed(dot)
    assert sg.to_dot([f, dx]) == dot  # deterministic


def test_dot_writes_operands_in_order_in_the_definitions():
    a, b = sg.var("a"), sg.var("b")
    dot = sg.to_dot(a - b)
    assert 'label="u3 = u1 - u2"' in dot and "n0 -> n2" in dot and "n1 -> n2" in dot


def test_dot_escape():
    assert dot._escape('a"b\\c\nd\x00') == 'a\\"b\\\\c\\nd?'


# -- where the display lives -------------------------------------------------------------


def test_ir_knows_nothing_of_printing():
    from symgrad.ir import expr as ir_expr
    from symgrad.printing import notebook

    assert ir_expr.DISPLAY == {"latex": notebook.latex, "html": notebook.picture}
