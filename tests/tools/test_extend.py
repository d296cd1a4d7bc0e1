"""symgrad.extend: an op defined by a user works like a built-in one, everywhere.

The ops are defined in ``user_ops`` (imported by conftest before any test file), so every
registry-driven test checks them too: shape rules, gradients to order 2, every backend."""

from __future__ import annotations

import ast
import subprocess
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.extend import ExtensionError, defop
from symgrad.testing import check_grads, numeric_jacobian
from tests.support.user_ops import l2_normalize, softsign

X = np.array([-1.5, 0.3, 2.0])


def test_both_front_ends_build_the_same_node():
    x = sg.var("x", shape=(3,))
    a, b = softsign(x), sg.softsign(x)
    c = sg.parse("softsign(x)", shapes={"x": (3,)})
    assert a.node == b.node and c.graph.find(c) == c.node and str(c) == "softsign(x)"
    assert str(sg.parse("l2_normalize(A, 0)", shapes={"A": (2, 3)})) == \
        "l2_normalize(A, axis=-2)"


def test_values_gradients_and_higher_orders():
    x = sg.var("x", shape=(3,))
    np.testing.assert_array_equal(sg.evaluate(softsign(x), {"x": X}), X / (1 + np.abs(X)))
    check_grads(sg.sum(softsign(x) * x), x, {"x": X}, order=3)
    h = sg.evaluate(sg.hessian(sg.sum(softsign(x)), x), {"x": X})
    np.testing.assert_allclose(h, np.diag(-2 * np.sign(X) / (1 + np.abs(X)) ** 3), rtol=1e-14)


def test_an_op_with_an_attribute_and_a_helper_batches_and_emits():
    A = sg.var("A", shape=(2, 3))
    at = {"A": np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])}
    for axis in (0, -1):
        y = l2_normalize(A, axis)
        check_grads(y, A, at, order=2)
        np.testing.assert_allclose(sg.evaluate(sg.jacobian(y, A), at),
                                   numeric_jacobian(y, A, at), rtol=1e-8, atol=1e-9)
    f = sg.sum(l2_normalize(A, axis=0) * sg.softsign(A))
    fn = sg.compile([f, sg.grad(f, A)], inputs=["A"])
    assert "def _sg_l2_normalize(x, axis):" in fn.source
    assert "np.abs(A)" in fn.source
    modules = {a.name for n in ast.walk(ast.parse(fn.source)) if isinstance(n, ast.Import)
               for a in n.names}
    assert modules == {"numpy"}
    for got, want in zip(fn(at["A"]), sg.evaluate([f, sg.grad(f, A)], at)):
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_scalar_math_form_is_used_when_given():
    x = sg.var("x")
    fn = sg.compile([softsign(x), sg.grad(softsign(x), x)], scalars="math")
    assert "abs(x)" in fn.source and "np.abs" not in fn.source.split("def f(")[1]
    value, grad = fn(-3.0)
    assert value == -0.75 and grad == pytest.approx(1 / 16, rel=1e-15)


def test_simplify_and_printing_read_the_new_op():
    x = sg.var("x")
    e = sg.simplify(softsign(x) * 1.0, sympy=True)
    assert sg.evaluate(e, {"x": 2.0}) == pytest.approx(2 / 3, rel=1e-15)
    assert "= softsign x" in sg.listing([softsign(x), sg.grad(softsign(x), x)])


@pytest.mark.parametrize("name, kwargs, match", [
    ("softsign", {}, "already registered"),
    ("grad", {}, "is a symgrad function"),
    ("2x", {}, "public Python identifier"),
    ("_private", {}, "public Python identifier"),
    ("bad_shape", {"shape": "diagonal"}, "shape must be one of"),
    ("bad_template", {"numpy": 3}, "numpy= must be a template"),
    ("bad_params", {"params": ("x", "=axis")}, "without a default"),
])
def test_bad_definitions_are_refused_with_a_reason(name, kwargs, match):
    args = {"numpy": "np.tanh({0})", **kwargs}
    with pytest.raises(ExtensionError, match=match):
        defop(name, impl=np.tanh, **args)
    assert name == "softsign" or name not in sg.ops.REGISTRY


def test_a_public_name_is_refused_before_the_face_has_loaded():
    """``import symgrad`` is lazy: a defop before any ``sg.<name>`` read still sees every
    public name."""
    code = ("import numpy as np\n"
            "from symgrad.extend import ExtensionError, defop\n"
            "try:\n"
            "    defop('parse', impl=np.tanh, numpy='np.tanh({0})')\n"
            "except ExtensionError as e:\n"
            "    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "is a symgrad function" in out, out


def test_defining_an_op_in_a_fresh_process():
    code = (
        "import numpy as np, symgrad as sg\n"
        "from symgrad.extend import defop\n"
        "defop('logcosh', impl=lambda x: np.log(np.cosh(x)), numpy='np.log(np.cosh({0}))',\n"
        "      backprop=lambda n, g: (g * sg.tanh(n.args[0]),))\n"
        "x = sg.var('x')\n"
        "print(sg.evaluate(sg.derivative(sg.parse('logcosh(x)'), x, 2), {'x': 0.0}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert float(out.stdout) == 1.0
