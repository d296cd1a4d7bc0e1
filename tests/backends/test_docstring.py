"""The docstring of an emitted function: a line per parameter (name, dtype, shape, and the
user's name where the emitter renamed it), a line per result naming the derivative it is or
the expression as written (shortened when long, its size when huge, the loop it is emitted
as when a traced loop was rolled), and always a docstring Python reads back whole."""

from __future__ import annotations

import ast

import numpy as np

import symgrad as sg
from symgrad.backends.docstring import expr_text


def test_emitted_names_and_docstrings_say_what_each_output_is():
    """Names from the role (``hess_a_b``, ``jac_x``, ``vjp_x``, ``jvp``; ``dx`` only for a
    gradient) and docstrings naming the derivative each output is."""
    a, b = sg.var("a"), sg.var("b")
    x = sg.var("x", shape=(3,))
    f = a * a * b + sg.sum(sg.sin(x) * a)
    (hab,), = [sg.jacobian(sg.grad(f, a), [b])]
    outs = [sg.grad(f, a), hab, sg.jacobian(sg.sin(x), x), sg.vjp(sg.sin(x), x, x),
            sg.jvp(sg.sin(x) * a, x, x), sg.hvp(sg.sum(x * x * a), x, x)]
    src = sg.to_source(outs, name="every_kind", inputs=[a, b, x])
    doc = src.split('"' * 3)[1]
    for line in ["da: float64 () = gradient of a * a * b + sum(sin(x) * a) w.r.t. a",
                 "hess_a_b: float64 () = Hessian of a * a * b + sum(sin(x) * a) w.r.t. a and b",
                 "jac_x: float64 (3, 3) = Jacobian of sin(x) w.r.t. x",
                 "vjp_x: float64 (3,) = VJP (adjoint) of sin(x) w.r.t. x",
                 "jvp: float64 (3,) = JVP: tangent of sin(x) * a w.r.t. x",
                 "hvp_x: float64 (3,) = Hessian-vector product of sum(x * x * a) w.r.t. x"]:
        assert line in doc, (line, doc)
    fn = sg.compile(outs, inputs=[a, b, x])
    x0 = np.array([0.3, -1.2, 2.0])
    got = fn(0.7, 1.9, x0)
    np.testing.assert_allclose(got[0], 2 * 0.7 * 1.9 + np.sum(np.sin(x0)), rtol=1e-14)
    np.testing.assert_allclose(got[1], 2 * 0.7, rtol=1e-14)
    np.testing.assert_allclose(got[2], np.diag(np.cos(x0)), rtol=1e-14)
    np.testing.assert_allclose(got[3], np.cos(x0) * x0, rtol=1e-14)
    np.testing.assert_allclose(got[4], np.cos(x0) * 0.7 * x0, rtol=1e-14)
    np.testing.assert_allclose(got[5], 2 * 0.7 * x0, rtol=1e-14)


def test_the_docstring_of_a_rolled_loop_states_the_emitted_loop():
    """A traced Python loop is emitted rolled: the docstring gives the built expression's
    size and the loop it is emitted as, and names a derivative of it by its steps."""
    x = sg.var("x")
    h = x
    for _ in range(100):
        h = sg.sin(h) * h + sg.cos(h)
    src = sg.to_source([h, sg.grad(h, x)], [x])
    doc = " ".join(src.split("def f(")[1].split('"""')[1].split())
    assert "(an expression of 401 nodes as traced; emitted rolled: 3 nodes with 1 loop: 100 " \
           "steps of 5 nodes)" in doc  # x, the loop's call, its final carry
    assert "dx: float64 () = gradient of a loop of 100 steps w.r.t. x" in doc
    f = sg.compile([h, sg.grad(h, x)], [x])
    v, d = f(0.3)
    assert v == sg.evaluate(h, {"x": 0.3})


def _doc(src: str, name: str = "f") -> str:
    tree = ast.parse(src)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return " ".join(ast.get_docstring(fn).split())


def test_parameter_lines_give_dtype_shape_and_the_users_name_where_renamed():
    import symgrad.scipy.special as ss

    x = sg.var("scipy", shape=(2, 3), dtype="float32")  # the module's import: renamed
    i = sg.var("i", dtype="int64")
    src = sg.to_source(sg.sum(ss.erf(x[i])) * 2.0, inputs=[x, i], name="f")
    params = _doc(src).split("Parameters:")[1].split("Returns:")[0]
    assert params.split() == ["scipy_1:", "float32", "(2,", "3)", "(variable", "'scipy')",
                              "i:", "int64", "()"]


def test_long_and_huge_expressions_are_shortened_not_printed_whole():
    xs = [sg.var(f"x{k}") for k in range(40)]
    long = sum((sg.sin(x) for x in xs), sg.const(0.0))
    text = expr_text(long)
    assert len(text) == 200 and text.endswith("...") and text.startswith("0.0 + sin(x0)")
    assert expr_text(long, limit=30) == str(long)[:27] + "..."
    huge = xs[0]
    for _ in range(250):
        huge = huge * sg.sin(huge) + huge  # a DAG of 751 nodes: a tree of 2**250
    assert expr_text(huge) == f"(an expression of {len(huge.graph.ancestors([huge.node]))} " \
                              "nodes)"
    src = sg.to_source(huge, inputs=[xs[0]])
    assert "an expression of 751 nodes" in _doc(src)
    compile(src, "<docstring>", "exec")


def test_user_text_cannot_end_the_docstring():
    """An escaped line between the docstring's quotes (which stand on lines of their own)
    reads back as exactly the text: quotes, backslashes and control characters included."""
    from symgrad.backends.docstring import _escape

    for hostile in ('x"""; import os', 'a\\"""\n"""b', "tab\there\x00\u2028", '""""'):
        assert ast.literal_eval('"""\n' + _escape(hostile) + '\n"""') == f"\n{hostile}\n"
    x = sg.var("x", shape=(3,))
    src = sg.to_source(sg.einsum("i->", x) * 2.0, inputs=[x])  # quotes in the text
    assert 'einsum("i->", x) * 2.0' in _doc(src)
    ns: dict = {}
    exec(compile(src, "<emitted>", "exec"), {"np": np}, ns)
    assert ns["f"](np.arange(3.0)) == 6.0
