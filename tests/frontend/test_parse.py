"""The parser: grammar, text == Python API graphs, round trips, hostile inputs, wrapped build
errors (the reader of the text: ``test_syntax.py``)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symgrad as sg
from symgrad.frontend.parse import MAX_CHARS, MAX_DEPTH
from symgrad.ir.op import FUNCTIONS
from symgrad.ops import ALIASES, REGISTRY, lookup
from tests.support.graphs import canonical, structure
from tests.support.graphs import caret as _caret

# -- helpers ------------------------------------------------------------------------------


def declared(e: sg.Expr) -> tuple[dict, dict]:
    """shapes= and dtypes= for every variable of e's graph."""
    g = e.graph
    shapes = {n: g.nodes[i].shape for n, i in g.variables.items()}
    dtypes = {n: g.nodes[i].dtype for n, i in g.variables.items()}
    return shapes, dtypes


def round_trip(e: sg.Expr) -> sg.Expr:
    shapes, dtypes = declared(e)
    return sg.parse(str(e), shapes=shapes, dtypes=dtypes)


SHAPES = {"x": (3,), "A": (2, 3), "B": (3, 2), "T": (2, 3, 4), "l": (5,), "v": (2,)}
DTYPES = {"y": "int64", "i": "int64", "c": "bool"}


class Vars:
    """Fresh API variables with the same declarations the parser gets."""

    def __getattr__(self, name: str) -> sg.Expr:
        return sg.var(name, SHAPES.get(name, ()), DTYPES.get(name, "float64"))


def parsed(text: str) -> sg.Expr:
    return sg.parse(text, shapes=SHAPES, dtypes=DTYPES)


# -- the grammar: text and API give the identical graph -----------------------------------

API_CASES = [
    ("a + b", lambda v: v.a + v.b),
    ("a - b * c", lambda v: v.a - v.b * v.c),
    ("(a - b) * c", lambda v: (v.a - v.b) * v.c),
    ("a / b / c", lambda v: v.a / v.b / v.c),
    ("a ** b ** c", lambda v: v.a ** v.b ** v.c),
    ("-a ** 2", lambda v: -v.a ** 2),
    ("(-a) ** 2", lambda v: (-v.a) ** 2),
    ("+a", lambda v: +v.a),
    ("-(-a)", lambda v: sg.negative(-v.a)),
    ("2 * a", lambda v: 2 * v.a),
    ("a * 2.5 - 1", lambda v: v.a * 2.5 - 1),
    ("2 * 3 * a", lambda v: 2 * 3 * v.a),
    ("a * -3", lambda v: v.a * -3),
    ("a ** -1", lambda v: v.a ** -1),
    ("2 ** a", lambda v: 2 ** v.a),
    ("pi * a + e", lambda v: math.pi * v.a + math.e),
    ("-inf + a", lambda v: -math.inf + v.a),
    ("a < b", lambda v: v.a < v.b),
    ("a <= 1", lambda v: v.a <= 1),
    ("2 < a", lambda v: 2 < v.a),
    ("a == b", lambda v: v.a == v.b),
    ("a != 0.5", lambda v: v.a != 0.5),
    ("a >= b", lambda v: v.a >= v.b),
    ("a > b", lambda v: v.a > v.b),
    ("A @ x", lambda v: v.A @ v.x),
    ("A @ B @ v", lambda v: v.A @ v.B @ v.v),
    ("A.T", lambda v: v.A.T),
    ("A.T @ v", lambda v: v.A.T @ v.v),
    ("x + [1.0, 2.0, 3.0]", lambda v: v.x + [1.0, 2.0, 3.0]),
    ("[[1, 2, 3], [4, 5, 6]] * A", lambda v: [[1, 2, 3], [4, 5, 6]] * v.A),
    ("sin(a) * cos(b) + exp(-a)", lambda v: sg.sin(v.a) * sg.cos(v.b) + sg.exp(-v.a)),
    ("sub(a, b)", lambda v: sg.sub(v.a, v.b)),
    ("sum(A, axis=1)", lambda v: sg.sum(v.A, axis=1)),
    ("sum(A, axis=-1, keepdims=True)", lambda v: sg.sum(v.A, axis=-1, keepdims=True)),
    ("mean(T, axis=(0, 2))", lambda v: sg.mean(v.T, axis=(0, 2))),
    ("sum(A, 0, keepdims=True)", lambda v: sg.sum(v.A, 0, keepdims=True)),
    ("max(x)", lambda v: sg.max(v.x)),
    ("logsumexp(A, axis=0)", lambda v: sg.logsumexp(v.A, axis=0)),
    ('einsum("ij,j->i", A, x)', lambda v: sg.einsum("ij,j->i", v.A, v.x)),
    ("einsum('ij,jk', A, B)", lambda v: sg.einsum("ij,jk", v.A, v.B)),
    ("concatenate([x, x, l], axis=0)", lambda v: sg.concatenate([v.x, v.x, v.l], axis=0)),
    ("stack((v, v), axis=1)", lambda v: sg.stack([v.v, v.v], axis=1)),
    ("reshape(A, (3, 2))", lambda v: sg.reshape(v.A, (3, 2))),
    ("where(c, a, b)", lambda v: sg.where(v.c, v.a, v.b)),
    ("where(a > 0, a, 0.0)", lambda v: sg.where(v.a > 0, v.a, 0.0)),
    ("x[1:]", lambda v: v.x[1:]),
    ("x[:-1]", lambda v: v.x[:-1]),
    ("x[::-1]", lambda v: v.x[::-1]),
    ("x[-1]", lambda v: v.x[-1]),
    ("A[:, 1:]", lambda v: v.A[:, 1:]),
    ("A[1]", lambda v: v.A[1]),
    ("x[None, :]", lambda v: v.x[None, :]),
    ("T[0, :, -1]", lambda v: v.T[0, :, -1]),
    ("T[..., 1]", lambda v: v.T[..., 1]),
    ("l[y]", lambda v: v.l[v.y]),
    ("l[y + 1]", lambda v: v.l[v.y + 1]),
    ("A[:, i]", lambda v: v.A[:, v.i]),
    ("l[[0, 0, 4]]", lambda v: v.l[[0, 0, 4]]),
    ("-log_softmax(A @ x)[y]", lambda v: -sg.log_softmax(v.A @ v.x)[v.y]),
    ("(x * x)[1:] + x[:-1]", lambda v: (v.x * v.x)[1:] + v.x[:-1]),
    ("exp(a) * a + exp(a)", lambda v: (lambda a: sg.exp(a) * a + sg.exp(a))(v.a)),
]


@pytest.mark.parametrize("text,build", API_CASES, ids=[c[0] for c in API_CASES])
def test_text_and_api_build_the_identical_graph(text, build):
    got = parsed(text)
    want = build(Vars())
    assert structure(got) == structure(want)
    assert canonical(round_trip(got)) == canonical(got), str(got)


def test_shared_variable_is_one_node_and_graphs_merge_like_the_api():
    f = sg.parse("x * y + sin(x) * y")
    x, y = sg.var("x"), sg.var("y")
    g = x * y + sg.sin(x) * y
    assert structure(f) == structure(g)
    assert list(f.graph.variables) == ["x", "y"]
    assert sg.evaluate(f, {"x": 0.5, "y": 2.0}) == pytest.approx(0.5 * 2 + math.sin(0.5) * 2)


def test_multiline_text_and_leading_spaces():
    f = sg.parse("  (a +\n   b)\t* c  ")
    assert str(f) == "(a + b) * c"


def test_unicode_names_are_nfkc_normalised_like_python():
    f = sg.parse("\U0001d431 + x", shapes={"\U0001d431": (2,)})
    assert list(f.graph.variables) == ["x"] and f.shape == (2,)


def test_names_pi_and_e_are_constants_unless_declared():
    assert sg.evaluate(sg.parse("pi + e")) == pytest.approx(math.pi + math.e)
    f = sg.parse("e * 2", dtypes={"e": "float64"})
    assert list(f.graph.variables) == ["e"]
    assert sg.evaluate(f, {"e": 3.0}) == 6.0


def test_literal_only_text_gives_a_constant():
    assert sg.evaluate(sg.parse("2 * 3 + 1")) == 7
    assert sg.evaluate(sg.parse("2 ** -1")) == 0.5
    assert sg.parse("1 < 2").dtype == "bool"


def test_declared_names_are_validated():
    with pytest.raises(sg.NameConflictError):
        sg.parse("x", shapes={"not valid": (2,)})
    with pytest.raises(sg.ShapeError):
        sg.parse("x", shapes={"x": "abc"})
    with pytest.raises(sg.ShapeError):
        sg.parse("x", dtypes={"x": "complex128"})
    with pytest.raises(sg.ParseError):
        sg.parse("x", shapes=[("x", (2,))])
    # declared but unused: fine, and not created
    assert list(sg.parse("x", shapes={"x": (2,), "b": (3,)}).graph.variables) == ["x"]


# -- every public op by its name ----------------------------------------------------------


def _literal(v) -> str:
    return repr(v.item() if isinstance(v, np.generic) else v)


def _op_cases():
    rng = np.random.default_rng(0)
    cases = []
    for name in sorted({*REGISTRY, *ALIASES}):
        op = lookup(name)
        if not op.public or name in FUNCTIONS or "." in name or op.front is not None:
            # NumPy's signature: tests/numpy/test_namespace.py; dotted names (linalg.inv)
            # wait for the parser to read them; functions returning tuples:
            # tests/ops/test_numpy_linalg.py
            continue
        if op.examples is not None:
            examples = op.examples(rng)
        elif op.arity == 0:
            examples = [([], {next(iter(op.attrs)): 3})]
        elif [p.name for p in op.signature.params] == ["condition", "x", "y"]:
            examples = [([np.array([True, False]), np.ones(2), np.zeros(2)], {})]
        else:
            examples = [([np.full(3, 0.7)] * op.arity, {})]
        cases.extend((name, k, ops, attrs) for k, (ops, attrs) in enumerate(examples))
    return cases


def _call_text(name: str, operands: list, attrs: dict) -> tuple[str, list, dict]:
    op = lookup(name)
    names = [f"a{k}" for k in range(len(operands))]
    parts: list[str] = []
    positional = set()
    it = iter(names)
    params = op.signature.params
    for k, p in enumerate(params):
        if p.kind == "static" and any(q.kind != "static" for q in params[k + 1:]):
            parts.append(_literal(attrs[p.name]))
            positional.add(p.name)
        elif p.kind == "operands":
            parts.extend(it)
        elif p.kind == "list":
            parts.append("[" + ", ".join(it) + "]")
        elif p.kind == "operand":
            parts.append(next(it))
    parts.extend(f"{k}={_literal(v)}" for k, v in attrs.items() if k not in positional)
    return f"{name}({', '.join(parts)})", names, positional


@pytest.mark.parametrize("name,k,operands,attrs", _op_cases(),
                         ids=[f"{c[0]}-{c[1]}" for c in _op_cases()])
def test_every_public_op_is_reachable_by_name(name, k, operands, attrs):
    if any(isinstance(v, np.ndarray) for v in attrs.values()):
        pytest.skip("array attribute: not expressible as a literal")
    text, names, positional = _call_text(name, operands, attrs)
    shapes = {n: np.shape(a) for n, a in zip(names, operands)}
    dtypes = {n: np.asarray(a).dtype.name for n, a in zip(names, operands)}
    got = sg.parse(text, shapes=shapes, dtypes=dtypes)
    api_vars = [sg.var(n, shapes[n], dtypes[n]) for n in names]
    op = lookup(name)
    args: list = []
    it = iter(api_vars)
    for p in op.signature.params:
        if p.name in positional:
            args.append(attrs[p.name])
        elif p.kind == "operands":
            args.extend(it)
        elif p.kind == "list":
            args.append(list(it))
        elif p.kind == "operand":
            args.append(next(it))
    kwargs = {k: v for k, v in attrs.items() if k not in positional}
    want = getattr(sg, name)(*args, **kwargs)
    assert structure(got) == structure(want), text
    inputs = dict(zip(names, operands))
    np.testing.assert_allclose(sg.evaluate(got, inputs), sg.evaluate(want, inputs))
    assert canonical(round_trip(got)) == canonical(got), str(got)


# -- round trip parse(str(e)) -------------------------------------------------------------

ROUND_TRIP = [
    "a - (b - c)", "a / (b * c)", "(a + b) * c", "a * (b / c)", "a ** b ** c", "(a ** b) ** c",
    "-a ** 2", "(-a) ** 2", "a ** -b", "-(a + b)", "a - -b", "(a < b) == c", "less(2.0, a)",
    "where(a < b, a * 2.0, b ** 0.5)", "sum(A @ x) + mean(A, axis=0) @ x",
    "softmax(x)[0] * log_softmax(x)[y]", "x[[2, 0]] @ A[:, :2].T", "(-2.0) ** a",
    "maximum(a, 0.0) + minimum(a, -1e-300) - nan * 0.0 + -0.0", "T[:, 1, ::2][0]",
    "transpose(T, axes=(1, 0, 2))", "sum(T, axis=(0, 2), keepdims=True) * 1.5",
    "broadcast_to(v[:, None], (2, 3)) * A", "reshape(T, (6, -1))[1:3]",
    "dot(x, x) / sqrt(dot(l, l))", "outer(v, x) - A", "concatenate([x, l[1:4]])",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip_reproduces_the_graph(text):
    e = parsed(text)
    back = round_trip(e)
    assert canonical(back) == canonical(e), (text, str(e))
    assert str(back) == str(e)


_UNARY = ["sin", "cos", "exp", "tanh", "sigmoid", "softplus", "relu", "abs", "square", "-"]
_BINARY = ["+", "-", "*", "/", "**", "maximum", "minimum", "<", "where"]


@st.composite
def programs(draw):
    """A random straight-line program over scalars and a vector; returns an API Expr."""
    a, b, x = sg.var("a"), sg.var("b"), sg.var("x", shape=(3,))
    pool = [a, b, x]
    consts = st.sampled_from([2, -1, 0.5, -3.25, 1e-3, math.pi, math.e, True, 0.0, -0.0])
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.integers(0, 3))
        p = draw(st.sampled_from(pool))
        q = draw(st.sampled_from(pool) | consts)
        if kind == 0:
            op = draw(st.sampled_from(_UNARY))
            new = -p if op == "-" else getattr(sg, op)(p)
        elif kind == 1:
            op = draw(st.sampled_from(_BINARY))
            if op == "where":
                new = sg.where(p > 0.25, p, q)
            elif op in ("maximum", "minimum"):
                new = getattr(sg, op)(p, q)
            elif op == "<":
                new = sg.where(p < q, 1.0, 2.0)
            else:
                new = {"+": p + q, "-": p - q, "*": p * q, "/": p / q, "**": p ** q}[op] \
                    if draw(st.booleans()) else \
                    {"+": q + p, "-": q - p, "*": q * p, "/": q / p, "**": q ** p}[op]
        elif kind == 2:
            new = sg.sum(p) if p.ndim else p * x
        else:
            new = p[draw(st.integers(-3, 2))] if p.ndim else p
        pool.append(new)
    return pool[-1]


@settings(max_examples=150, deadline=None)
@given(programs())
def test_round_trip_of_random_expressions(e):
    assert canonical(round_trip(e)) == canonical(e), str(e)


# -- hostile inputs -----------------------------------------------------------------------

HOSTILE = [
    "__import__('os').system('touch /tmp/pwned')", "().__class__.__bases__", "x.__class__",
    "(lambda: 1)()", "[i for i in x]", "(i for i in x)", 'f"{x}"', "(y := 3)", "exp(*x)",
    "exp(**k)", "open('f')", "eval('1')", "exec('1')", "compile('1', 'f', 'exec')",
    "exp.__globals__", '"a" + x', "b'a'", "1j", "(" * 100000 + "x" + ")" * 100000,
    "-" * 100000 + "x", "x" * (MAX_CHARS + 1), "9**9**9**9", "10**100000", "((9**9)**9999)**9999",
    "1" + "0" * 100000, "1" * 5000, "1e999999", "x < y < z", "a if b else c", "a and b",
    "not a", "~a", "a // b", "a % b", "a << 2", "{a}", "{a: 1}", "x; import os", "import os",
    "x = 1", "lambda: 0", "exp(x)(y)", "exp(x, foo=1)", "sum(x, axis=y)", "einsum(x, y)",
    "exp()", "sin(x, y)", "None", "...", "'abc'", "x\x00", "0 ** -1", "1 / 0", "(-8) ** 0.5",
    "[1, [2]]", "np", "__x", "concatenate(x)", "sum(x, keepdims=x)", "x[y:z]", "x[1.5]",
    "(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1),
    "- " * 500 + "x", "", "   ", "x +", "x.T.T.__class__", "globals()", "getattr(x, 'T')",
    "sin(x)[0](1)", "exp(x=1)", "reshape(x, shape=x)", 'einsum("ij;__import__", A, x)',
    "concatenate([*x])", "x[lambda: 0]", "x[x]",
]


@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t[:30]) for t in HOSTILE])
def test_hostile_input_is_refused(text):
    with pytest.raises(sg.SymgradError) as info:
        sg.parse(text, shapes={"x": (3,), "A": (2, 3)})
    assert isinstance(info.value, (sg.ParseError, sg.NameConflictError)), info.value
    assert len(str(info.value)) < 1000


def test_nothing_is_executed_while_parsing(tmp_path):
    """Audit hook in a subprocess: parse emits no exec/import/open/system events."""
    marker = tmp_path / "pwned"
    payloads = [f"__import__('os').system('touch {marker}')",
                f"__import__('pathlib').Path('{marker}').touch()",
                "().__class__.__bases__[0].__subclasses__()", "eval('1+1')", "open('/etc/passwd')"]
    script = textwrap.dedent(f"""
        import sys, symgrad as sg, symgrad.frontend.parse
        sg.parse  # the first public name imports the compiler (import symgrad is lazy)
        seen = []
        def hook(event, args):
            if event in ("exec", "import", "open", "os.system", "subprocess.Popen"):
                seen.append(event)
        sys.addaudithook(hook)
        for text in {payloads!r}:
            try:
                sg.parse(text)
            except sg.ParseError:
                pass
        print(sorted(set(seen)))
        eval("1")  # the control: the hook does see an exec
        print(sorted(set(seen)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "['exec']"]
    assert not marker.exists()


def test_limits_are_checked_before_parsing():
    with pytest.raises(sg.ParseError, match="characters long"):
        sg.parse("x" * (MAX_CHARS + 1))
    with pytest.raises(sg.ParseError, match="nested deeper"):
        sg.parse("(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1))
    assert str(sg.parse("(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH)) == "x"


def test_parse_rejects_non_strings():
    with pytest.raises(sg.ParseError):
        sg.parse(b"x + 1")


# -- wrapped build errors, limits ---------------------------------------------------------


def test_shape_error_from_text_keeps_its_class_and_shows_where():
    with pytest.raises(sg.ShapeError) as info:
        sg.parse("sum(A @ x + v)", shapes={"A": (2, 3), "x": (3,), "v": (3,)})
    msg = str(info.value)
    assert "add" in msg and "(2,)" in msg and "(3,)" in msg
    shown, at = _caret(info.value)
    assert shown == "sum(A @ x + v)" and at == 10  # under the '+'


def test_signature_errors_become_parse_errors_at_the_call():
    with pytest.raises(sg.ParseError) as info:
        sg.parse("x + where(x > 0, x)")
    assert "missing" in str(info.value)
    assert _caret(info.value)[1] == 4


def test_float_index_gets_a_hint_to_declare_its_dtype():
    with pytest.raises(sg.ParseError, match="dtypes=.*'y': 'int64'"):
        sg.parse("l[y]", shapes={"l": (5,)})


def test_name_conflict_keeps_its_class():
    with pytest.raises(sg.NameConflictError) as info:
        sg.parse("x + np")
    assert _caret(info.value)[1] == 4


def test_parse_limits_come_from_sg_limits():
    with sg.limits(parse_chars=10), pytest.raises(sg.LimitError, match="parse_chars"):
        sg.parse("x + y + z + w")
    with sg.limits(parse_depth=3), pytest.raises(sg.ParseError, match="deeper than 3"):
        sg.parse("((((x))))")
    with sg.limits(parse_array_elements=3), pytest.raises(sg.LimitError, match="more than 3"):
        sg.parse("[1, 2, 3, 4] * x")
    with sg.limits(parse_string_chars=3), pytest.raises(sg.LimitError):
        sg.parse('einsum("ij,j->i", A, x)', shapes={"A": (2, 3), "x": (3,)})
    assert str(sg.parse("((((x))))")) == "x"


# -- hints and dotted names ------------------------------------------------------------------


@pytest.fixture
def dotted_alias():
    """A dotted alias registered for the test only (the lead registers linalg.* names)."""
    ALIASES["testing.sin"] = "sin"
    try:
        yield "testing.sin"
    finally:
        del ALIASES["testing.sin"]


def test_a_registered_dotted_name_is_a_function(dotted_alias):
    x = sg.var("x", shape=(3,))
    got = sg.parse("testing.sin(x) * 2.0", shapes={"x": (3,)})
    assert structure(got) == structure(sg.sin(x) * 2.0)
    with pytest.raises(sg.ParseError, match="unknown function 'testing.sinn'; did you mean"):
        sg.parse("testing.sinn(x)")
    with pytest.raises(sg.ParseError, match="attribute access is not supported"):
        sg.parse("testing.sin")  # not called: attribute access, refused
    with pytest.raises(sg.ParseError, match="unknown function 'x.sin'"):
        sg.parse("x.sin(x)")


def test_numpy_dotted_names_parse_to_the_same_graph_as_the_api():
    A, B = sg.var("A", shape=(2, 3)), sg.var("B", shape=(3, 2))
    got = sg.parse("linalg.matmul(A, B) * 2.0", shapes={"A": (2, 3), "B": (3, 2)})
    assert structure(got) == structure(sg.linalg.matmul(A, B) * 2.0)


# -- hints for what other languages and Python's builtins call functions ---------------------


@pytest.mark.parametrize("text,hint,cls", [
    ("max(x, y)", "write maximum(a, b)", sg.ParseError),
    ("min(x, y)", "write minimum(a, b)", sg.ParseError),
    ("amax(x, y + 1)", "write maximum(a, b)", sg.ParseError),
    ("min(x, 0)", "write minimum(a, b)", sg.ShapeError),  # axis 0 of a scalar
    ("max(x, 1.5)", "write maximum(a, b)", sg.SymgradError),
    ("ln(x)", "unknown function 'ln'; did you mean log?", sg.ParseError),
    ("atan2(x, y)", "did you mean arctan2?", sg.ParseError),  # difflib says atan
    ("expit(x)", "did you mean sigmoid?", sg.ParseError),
    ("Exp(x)", "did you mean exp?", sg.ParseError),
    ("np.max(x)", "did you mean max?", sg.ParseError),  # difflib says nanmax
])
def test_hints_for_names_of_other_languages(text, hint, cls):
    with pytest.raises(cls) as info:
        sg.parse(text)
    assert hint in str(info.value)


def test_max_with_an_axis_keeps_its_meaning_and_its_message():
    v = sg.var("v", shape=(3, 2))
    assert structure(sg.parse("max(v, 0)", shapes={"v": (3, 2)})) == structure(sg.max(v, 0))
    with pytest.raises(sg.ParseError) as info:  # axis= by keyword: no elementwise hint
        sg.parse("max(x, axis=y)")
    assert "needs a literal for 'axis'" in str(info.value) and "maximum" not in str(info.value)
    with pytest.raises(sg.ParseError) as info:  # sum has no elementwise twin
        sg.parse("sum(x, y)")
    assert "needs a literal" in str(info.value) and "write" not in str(info.value)


def test_the_other_names_point_at_functions_that_exist():
    from symgrad.frontend.functions import callee
    from symgrad.frontend.parse import OTHER_NAMES

    for other, ours in OTHER_NAMES.items():
        assert callee(other) is None, other  # not a name symgrad knows itself
        assert callee(ours) is not None, ours
