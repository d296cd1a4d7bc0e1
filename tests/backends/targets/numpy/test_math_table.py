"""``scalars="math"``: all-scalar functions over Python floats, NumPy's results kept."""

from __future__ import annotations

import ast

import numpy as np
import pytest

import symgrad as sg

x, y = sg.var("x"), sg.var("y")

EXPRS = [
    sg.sin(x) * x + sg.cos(x) * y,
    sg.exp(x) / (1.0 + y * y) - sg.log1p(x * x),
    sg.sigmoid(x) + sg.softplus(y) + sg.tanh(x * y),
    x ** y + sg.sqrt(sg.abs(x) + 1.0) + sg.expm1(y) * sg.tan(x),
    sg.where(x > y, x * x, sg.relu(y)) + sg.square(x - y),
]


@pytest.mark.parametrize("k", range(len(EXPRS)))
def test_math_version_matches_numpy_and_evaluate(k: int) -> None:
    f = EXPRS[k]
    outs = [f, *sg.grad(f, [x, y])]
    fast = sg.compile(outs, inputs=[x, y], check_inputs=False)  # "math" is the default
    slow = sg.compile(outs, inputs=[x, y], scalars="numpy", check_inputs=False)
    assert "import math" in fast.source and "math.sin" not in slow.source
    rng = np.random.default_rng(k)
    for _ in range(20):
        a, b = rng.uniform(0.1, 1.5, size=2)
        got = fast(a, b)
        assert all(type(v) is np.float64 for v in got)  # NumPy scalars, as from "numpy"
        np.testing.assert_allclose(got, slow(np.float64(a), np.float64(b)), rtol=1e-13,
                                   atol=1e-15)
        np.testing.assert_allclose(got, sg.evaluate(outs, {"x": a, "y": b}), rtol=1e-13)


@pytest.mark.parametrize("point", [(0.0, 1.0), (-1.0, 0.5), (800.0, 1.0), (1e308, 2.0)])
def test_edge_cases_fall_back_to_numpy_semantics(point) -> None:
    f = sg.log(x) * sg.exp(y * x) + x ** y / (x - x)
    fast = sg.compile([f, sg.grad(f, x)], inputs=[x, y], scalars="math", check_inputs=False)
    slow = sg.compile([f, sg.grad(f, x)], inputs=[x, y], scalars="numpy", check_inputs=False)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fast(*point), slow(*map(np.float64, point)))


def test_one_body_and_reserved_names() -> None:
    m = sg.var("math")
    f = sg.sin(m) * x
    src = sg.to_source([f, sg.grad(f, m)], inputs=[x, m], scalars="math")
    tree = ast.parse(src)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert defs == ["_f_scalar", "f"]  # the body is emitted once
    assert "math_1" in src  # a variable called math cannot shadow the module
    fn = sg.compile([f, sg.grad(f, m)], inputs=[x, m], scalars="math")
    assert fn(2.0, 0.5) == pytest.approx(sg.evaluate([f, sg.grad(f, m)], {"x": 2.0, "math": 0.5}))


def test_non_scalar_functions_are_unchanged() -> None:
    v = sg.var("v", shape=(3,))
    f = sg.sum(sg.sin(v))
    assert sg.to_source(f, scalars="math") == sg.to_source(f, scalars="numpy")
    with pytest.raises(sg.SymgradError):
        sg.to_source(f, scalars="fast")


def test_a_module_of_two_scalar_functions_imports_math_once_and_runs() -> None:
    # Two all-scalar functions in one module: "import math" was written once per function,
    # the second write deleting the first (NameError: name 'math' is not defined).
    from symgrad.backends.stages import Function, lower, numpy_request

    f = sg.sin(x) * y
    g = sg.exp(x) / y
    fns = [Function("first", (f.node,), ("x", "y"), True),
           Function("second", (g.node, *(d.node for d in sg.grad(g, [x, y]))), ("x", "y"),
                    False)]
    source = lower(numpy_request(f.graph, fns)).source()
    assert source.count("import math\n") == 1 and source.count("class _numpy_math") == 1
    namespace: dict = {}
    exec(compile(source, "<two>", "exec"), namespace)  # our own generated text
    a, b = 0.7, 1.9
    assert namespace["first"](a, b) == pytest.approx(np.sin(a) * b, rel=1e-15)
    value, da, db = namespace["second"](a, b)
    assert (value, da, db) == pytest.approx((np.exp(a) / b, np.exp(a) / b,
                                             -np.exp(a) / b ** 2), rel=1e-14)
    with np.errstate(over="ignore"):  # the NumPy fallback runs too
        assert namespace["second"](800.0, 1.0)[0] == np.inf


def test_an_unused_array_input_keeps_the_numpy_version():
    """All-scalar outputs of a function taking an array input it does not use (a
    gradient that is 0) are not written over Python floats: ``float(y)`` of the array
    failed."""
    import symgrad.numpy as snp

    g = sg.grad(lambda x, y: snp.sum(x < y) + 0.0)(2.0, np.ones(4))
    assert float(g) == 0.0
    x, y = sg.var("x"), sg.var("y", shape=(4,))
    fn = sg.compile(sg.grad(sg.sum(x * y), x) * 0.0 + x, inputs=[x, y])
    assert float(fn(2.0, np.ones(4))) == 2.0


z = sg.var("z", dtype="complex128")
COMPLEX_EXPRS = [
    sg.abs(sg.exp(z) * (1 + 2j) + sg.sqrt(z) * x) ** 2 + sg.real(sg.log(z)) + sg.angle(z),
    sg.real(sg.sin(z) * sg.conj(z) + sg.arctanh(z / 4.0) + z ** 1.5) * x + sg.imag(sg.cosh(z)),
    sg.abs(sg.tan(z) + sg.arcsin(z / 3.0) - sg.log10(z) + 1.0 / z) + sg.angle(z * x - 2.0),
]


@pytest.mark.parametrize("k", range(len(COMPLEX_EXPRS)))
def test_complex_scalars_go_through_cmath(k: int) -> None:
    """An all-scalar function with complex values calls cmath (imported), its value and
    gradient NumPy's; a real function's module imports no cmath."""
    f = COMPLEX_EXPRS[k]
    outs = [f, sg.grad(f, z), sg.grad(f, x)]
    fast = sg.compile(outs, inputs=[z, x], scalars="math", check_inputs=False)
    slow = sg.compile(outs, inputs=[z, x], scalars="numpy", check_inputs=False)
    assert "import cmath" in fast.source and "cmath." in fast.source
    assert "cmath" not in slow.source
    rng = np.random.default_rng(k)
    for _ in range(10):
        a = complex(*rng.uniform(0.2, 1.2, size=2))
        b = rng.uniform(0.1, 1.5)
        got = fast(a, b)
        assert [type(v) for v in got] == [np.float64, np.complex128, np.float64]
        np.testing.assert_allclose(got, slow(np.complex128(a), np.float64(b)), rtol=1e-12)
        np.testing.assert_allclose(got, sg.evaluate(outs, {"z": a, "x": b}), rtol=1e-12)
    assert "cmath" not in sg.to_source(sg.sin(x), inputs=[x], scalars="math")


def test_complex_scalars_fall_back_to_numpy_where_cmath_raises() -> None:
    """Where cmath raises (exp overflows), the function reruns with NumPy's functions."""
    f = sg.abs(sg.exp(z)) + sg.real(sg.log(z))
    fast = sg.compile(f, inputs=[z], scalars="math", check_inputs=False)
    slow = sg.compile(f, inputs=[z], scalars="numpy", check_inputs=False)
    with np.errstate(all="ignore"):
        for point in (1000 + 0j, 0j, 1.0 + 2.0j):
            np.testing.assert_array_equal(fast(point), slow(np.complex128(point)))
