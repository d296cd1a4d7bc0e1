"""Generated NumPy source: agrees with the evaluator bit for bit, runs without symgrad, is
safe against hostile names, deterministic, lint-clean, and usable with SciPy.

Golden files live in ``tests/golden/``; regenerate them with
``SYMGRAD_REGEN_GOLDEN=1 pytest tests/backends/targets/numpy/test_printer.py``.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.source import is_safe_name
from symgrad.ir.expr import Expr
from symgrad.ir.graph import Graph
from symgrad.ir.shapes import is_float
from symgrad.ops import REGISTRY
from tests.support.golden_files import check_golden
from tests.support.registry_cases import complex_cases, registry_cases

REPO = Path(__file__).resolve().parents[4]
NUMPY_DIR = str(Path(np.__file__).resolve().parents[1])

NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"
SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}
DTYPES = {"y": "int64"}


def network():
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes=DTYPES)
    return f, list(sg.grad(f, ["W", "b", "V", "g"]))


def network_inputs(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {k: rng.normal(size=s) for k, s in SHAPES.items()}
    out["y"] = np.int64(1)
    return out


def assert_same(got, want):
    """Bitwise equality, dtype and shape included (values are NumPy results of the same ops)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


# -- registry-driven: every op, forward and backprop, codegen == evaluate ---------------------

FAMILIES = [(), (3, 4), (3, 1)]


CASES = registry_cases(FAMILIES)


def test_every_op_with_operands_has_a_codegen_case():
    """Every op with operands has a case here, or complex ones only (compiled and checked
    against the evaluator by tests/ops/test_registry.py's complex battery)."""
    covered = {c.values[0].op.name for c in [*CASES, *complex_cases(FAMILIES)]}
    if any(c.values[0].result is not None for c in CASES):  # calls: read by projections
        covered.add("result")
    missing = sorted(n for n, op in REGISTRY.items() if op.arity != 0 and n not in covered)
    assert not missing


@pytest.mark.parametrize("case", CASES)
def test_op_codegen_equals_evaluate_bitwise(case):
    out, xs, inputs = case.build()
    fn = sg.compile(out, inputs=xs, scalars="numpy")  # "math" may differ in the last bit
    with np.errstate(all="ignore"):
        assert_same(fn(*case.arrays), sg.evaluate(out, inputs))
        assert_same(fn.raw(*case.arrays), sg.evaluate(out, inputs))


@pytest.mark.parametrize("case", [c for c in CASES if c.values[0].op.differentiable])
def test_backprop_codegen_equals_evaluate_bitwise(case):
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not wrt or not is_float(out.dtype):
        pytest.skip("no float operand or output")
    cot = sg.var("cot", out.shape, out.dtype)
    grads = sg.vjp(out, wrt, cot)
    fn = sg.compile([out, *grads], inputs=[*xs, cot], scalars="numpy")
    inputs["cot"] = np.random.default_rng(1).normal(size=out.shape)
    with np.errstate(all="ignore"):
        got = fn(*case.arrays, inputs["cot"])
        want = sg.evaluate([out, *grads], inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)


# -- golden files ------------------------------------------------------------------------------


def _golden_sources() -> dict[str, str]:
    x, y = sg.var("x"), sg.var("y")
    f = x * y + sg.sin(x)
    scalar = sg.to_source([f, *sg.grad(f, [x, y])], inputs=[x, y], name="f_and_grad")
    net, grads = network()
    net_src = sg.to_source([net, *grads], name="network_and_grad",
                           output_names=["loss", "dW", "db", "dV", "dg"])
    z = sg.var("x", shape=(2,))
    rosen = (1.0 - z[0]) ** 2 + 100.0 * (z[1] - z[0] ** 2) ** 2
    hess = sg.to_source(sg.hessian(rosen, z), name="rosenbrock_hessian")
    v = sg.var("v", shape=(2,))
    jvp = sg.to_source([rosen, sg.jvp(rosen, z, v)], name="rosenbrock_jvp")
    return {"scalar_grad.py": scalar, "network_grad.py": net_src, "hessian.py": hess,
            "jvp.py": jvp}


GOLDEN_SOURCES = ["scalar_grad.py", "network_grad.py", "hessian.py", "jvp.py"]


@pytest.mark.parametrize("filename", GOLDEN_SOURCES)
def test_golden_source(filename):
    check_golden(filename, _golden_sources()[filename])


def test_golden_flat_hessian_from_the_command_line(tmp_path):
    """The CLI's flat Hessian: its blocks named hess_a_b, its docstring saying what it is."""
    from symgrad.cli import main

    out = tmp_path / "hess.py"
    assert main(["source", "a*a*b + sum(x*a)", "--shape", "x=2", "--wrt", "a,b,x",
                 "--hessian", "flat", "-o", str(out)]) == 0
    check_golden("hessian_flat.py", out.read_text(encoding="utf-8"))


def test_comments_cite_only_lines_of_the_function():
    """An adjoint line's comment names its forward line only where the function has it (the
    compile passes may remove it: ``t1 = v * 2.0`` folded into a product of constants)."""
    for source in [*_golden_sources().values()]:
        for fn_text in source.split("\ndef ")[1:]:
            assigned = set(re.findall(r"^    (\w+) = ", fn_text, flags=re.M))
            for cited in re.findall(r"# (?:backprop|tangent) of: (\w+)", fn_text):
                assert cited in assigned or f"{cited} (input)" in fn_text or cited in \
                    fn_text.split(")")[0], (cited, fn_text)


def _load_module(text: str) -> dict:
    ns: dict = {}
    exec(compile(text, "<golden>", "exec"), ns)  # the test's own generated text
    return ns


def test_golden_scalar_values():
    ns = _load_module(_golden_sources()["scalar_grad.py"])
    value, dx, dy = ns["f_and_grad"](np.float64(2.0), np.float64(3.0))
    assert value == 6.0 + np.sin(2.0) and dx == 3.0 + np.cos(2.0) and dy == 2.0


def test_golden_hessian_values():
    ns = _load_module(_golden_sources()["hessian.py"])
    z = np.array([1.5, -0.5])
    ref = np.array([[1200 * z[0] ** 2 - 400 * z[1] + 2, -400 * z[0]], [-400 * z[0], 200.0]])
    np.testing.assert_allclose(ns["rosenbrock_hessian"](z), ref, rtol=1e-14)


def test_golden_network_text_shape():
    text = _golden_sources()["network_grad.py"]
    body = text.split('"""')[-1]
    assert "def network_and_grad(V, W, x, b, g, y):" in text
    for name in ("dW", "db", "dV", "dg"):
        assert f"\n    {name} = " in body
    assert "return loss, dW, db, dV, dg" in body
    code = [ln.split("#")[0] for ln in body.splitlines()]
    assert sum("np.tanh(" in ln for ln in code) == 1  # forward value computed once, reused
    adjoint_lines = [ln for ln in body.splitlines() if ln.strip().startswith("d")]
    assert all("# backprop of" in ln for ln in adjoint_lines)


# -- the module runs where symgrad is not importable; it imports only numpy ------------------


def _imports(text: str) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or ".")
    return names


_RUNNER = textwrap.dedent("""
    import importlib.util, sys
    sys.path.insert(0, {numpy_dir!r})
    try:
        import symgrad  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("symgrad is importable in the isolated interpreter")
    import numpy as np
    spec = importlib.util.spec_from_file_location("generated", {module!r})
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = np.load({inputs!r})
    out = getattr(mod, {name!r})(*[data[k] for k in {order!r}])
    np.savez({result!r}, *out)
    print(sorted(k for k in sys.modules if k.split(".")[0] == "symgrad"))
""")


def test_network_module_runs_without_symgrad(tmp_path):
    f, grads = network()
    text = sg.to_source([f, *grads], name="network_and_grad")
    assert _imports(text) == ["numpy"]
    module = tmp_path / "generated_network.py"
    module.write_text(text)
    inputs = network_inputs()
    order = ["V", "W", "x", "b", "g", "y"]  # first appearance in the expression
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = _RUNNER.format(numpy_dir=NUMPY_DIR, module=str(module),
                            inputs=str(tmp_path / "inputs.npz"), name="network_and_grad",
                            order=order, result=str(tmp_path / "out.npz"))
    env = {"PATH": os.environ.get("PATH", "")}
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    got = np.load(tmp_path / "out.npz")
    want = sg.evaluate([f, *grads], inputs)
    for k, w in enumerate(want):
        # Another process: BLAS may pick another kernel (alignment, CPU dispatch), so the
        # matmuls can differ in the last bit; in-process agreement is bitwise (tests above).
        np.testing.assert_allclose(got[f"arr_{k}"], w, rtol=1e-13, atol=1e-16)


# -- hostile names -----------------------------------------------------------------------------


def _raw_var(graph: Graph, name, shape=()) -> Expr:
    """A variable made directly, bypassing ``var()``'s name validation."""
    i = graph._new(("var", name), "var", (), {"name": name}, tuple(shape), "float64", name)
    graph.variables[name] = i
    return Expr(graph, i)


def _hostile_names(tmp_path) -> list[str]:
    marker = tmp_path / "pwned"
    return [
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"x); __import__('pathlib').Path({str(marker)!r}).touch(); (x",
        'a"""; import os; """',
        "a\nimport os",
        "if", "lambda", "match", "_", "sum", "print", "np", "numpy", "__builtins__", "__x__",
        "t1", "dx", "x", "d_t1", "_c1", "", "1abc", "ﬁ", "fi", "a b", "\\", "é", "x_1",
    ]


def _assert_inert(tree: ast.Module) -> None:
    """Only safe identifiers, no dunder attributes, calls only of ``np...``/methods/lambdas
    and of the module's own registry helpers (``_sg_*`` functions defined in it)."""
    helpers = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and n.name.startswith("_sg_")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert is_safe_name(node.id) or node.id == "np", node.id
        elif isinstance(node, ast.arg):
            assert is_safe_name(node.arg), node.arg
        elif isinstance(node, ast.Attribute):
            assert not node.attr.startswith("__"), node.attr
        elif isinstance(node, ast.Call):
            ok = isinstance(node.func, (ast.Attribute, ast.Lambda)) or (
                isinstance(node.func, ast.Name) and node.func.id in helpers)
            assert ok, ast.dump(node.func)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            assert [a.name for a in node.names] == ["numpy"]


def test_hostile_names_are_renamed_and_never_run(tmp_path):
    graph = Graph()
    names = _hostile_names(tmp_path)
    xs = [_raw_var(graph, n) for n in names]
    f = xs[0] * 0.5
    for k, v in enumerate(xs[1:], start=1):
        f = f + sg.sin(v) * float(k)
    grads = sg.grad(f, xs)
    fn = sg.compile([f, *grads], inputs=xs, scalars="numpy")
    tree = ast.parse(fn.source)
    params = [a.arg for a in next(n for n in ast.walk(tree)
                                  if isinstance(n, ast.FunctionDef)).args.args]
    assert len(params) == len(set(params)) == len(names)
    assert all(is_safe_name(p) for p in params)
    assert _imports(fn.source) == ["numpy"]
    _assert_inert(tree)
    values = np.linspace(0.1, 2.0, len(names))
    got = fn(*values)
    got_kw = fn(**dict(zip(names, values)))  # keyword call by the original names
    want = sg.evaluate([f, *grads], dict(zip(names, values)))
    for g, k, w in zip(got, got_kw, want):
        assert_same(g, w)
        assert_same(k, w)
    assert not (tmp_path / "pwned").exists()


def test_hostile_function_and_output_names(tmp_path):
    x = sg.var("x")
    for bad in ["f(); import os", "lambda", "np", "sum", "__init__", "", 3, "_private"]:
        with pytest.raises(sg.SymgradError, match="function name"):
            sg.to_source(x * 2.0, name=bad)
    text = sg.to_source([x * 2.0, sg.sin(x)], output_names=["a; import os", "np"])
    assert "import os" not in text.split('"""')[-1]
    assert _imports(text) == ["math", "numpy"]  # all scalars: Python floats and math


def test_names_colliding_with_generated_ones():
    x, dx, t1 = sg.var("x"), sg.var("dx"), sg.var("t1")
    f = x * dx + sg.exp(t1 * x)
    grads = sg.grad(f, [x, dx, t1])
    fn = sg.compile([f, *grads])
    assert "def f(x, dx, t1):" in fn.source
    assert "dx_1 = " in fn.source  # the adjoint of x steps aside for the user's dx
    inputs = {"x": 0.3, "dx": 1.7, "t1": -0.4}
    for g, w in zip(fn(**inputs), sg.evaluate([f, *grads], inputs)):
        assert_same(g, w)


def test_template_lambda_parameters_never_capture_variables():
    # Names bound inside templates or by registry helpers must never capture a variable.
    x = sg.var("x", shape=(3,))
    for name in ("z", "s", "e"):
        v = sg.vjp(sg.softmax(x)[0] + sg.log_softmax(x)[1], x, name)
        fn = sg.compile(v, inputs=[x, name])
        _assert_inert(ast.parse(fn.source))
        args = (np.array([0.1, -0.4, 0.7]), 2.5)
        assert_same(fn(*args), sg.evaluate(v, dict(zip(["x", name], args))))


# -- constants -------------------------------------------------------------------------------


@pytest.mark.parametrize("c, literal", [
    (np.inf, "np.inf"), (-np.inf, "(-np.inf)"), (np.nan, "np.nan"), (-0.0, "(-0.0)"),
    (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.1, "0.1"), (-2.5, "(-2.5)"),
])
def test_scalar_constants_are_exact_literals(c, literal):
    x = sg.var("x", shape=(3,))
    f = x * c + x ** 2.0
    fn = sg.compile(f)
    assert f"x * {literal}" in fn.source
    v = np.array([1.0, -1.0, 0.0])
    with np.errstate(all="ignore"):
        got, want = fn(v), sg.evaluate(f, {"x": v})
    assert_same(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_literal_keeps_the_graphs_dtype():
    """NEP 50, as NumPy 2: a Python float is weak (float32 stays float32), a NumPy float64
    scalar is not (it promotes); the emitted code computes what the graph says."""
    x = sg.var("x", shape=(2,), dtype="float32")
    v = np.array([1.5, 2.5], dtype=np.float32)
    for f, numpy in ((x * 3.0, v * 3.0), (x * np.float64(3.0), v * np.float64(3.0)),
                     (x * 3, v * 3), (x + np.float32(0.1), v + np.float32(0.1))):
        assert f.dtype == numpy.dtype.name
        fn = sg.compile(f)
        assert_same(fn(v), sg.evaluate(f, {"x": v}))
        assert_same(fn(v), numpy)


def test_array_constants_are_hoisted_read_only_and_exact():
    rng = np.random.default_rng(3)
    c = rng.normal(size=(7, 30))
    c[0, 0], c[0, 1] = -0.0, 5e-324
    x = sg.var("x", shape=(7, 30))
    f = x * c
    fn = sg.compile([f, sg.const(c, like=x)], inputs=[x])
    tree = ast.parse(fn.source)
    hoisted = [n for n in tree.body if isinstance(n, ast.Assign)]
    assert hoisted, "array constants belong at module level"
    assert all(len(ln) <= 100 for ln in fn.source.splitlines())
    v = rng.normal(size=(7, 30))
    out, const_out = fn(v)
    assert_same(out, v * c)
    assert const_out.tobytes() == c.tobytes()
    const_out[0, 0] = 42.0  # the caller's copy, not the module's constant
    assert_same(fn(v)[1], c)


def test_identity_and_full_constants_use_compact_source():
    x = sg.var("x", shape=(30,))
    jac = sg.jacobian(sg.tanh(x), x)
    text = sg.to_source(jac)
    assert "np.eye(30)" in text
    v = np.linspace(-1, 1, 30)
    assert_same(sg.compile(jac)(v), sg.evaluate(jac, {"x": v}))


# -- structure of the emitted function --------------------------------------------------------


def test_large_temporaries_are_released_but_outputs_are_not():
    A = sg.var("A", shape=(40, 40))
    f = sg.sum(sg.tanh(A @ A) * sg.exp(A))
    g = sg.grad(f, A)
    fn = sg.compile([f, g], output_names=["value", "dA"])
    body = fn.source.split('"""')[-1]
    deleted = [n.strip() for ln in body.splitlines() if ln.strip().startswith("del ")
               for n in ln.strip()[4:].split(",")]
    assert deleted, "40x40 temporaries should be released after their last use"
    assert "dA" not in deleted and "value" not in deleted and "A" not in deleted
    v = np.random.default_rng(0).normal(size=(40, 40)) / 10
    for got, want in zip(fn(v), sg.evaluate([f, g], {"A": v})):
        assert_same(got, want)


def test_single_expr_returns_value_list_returns_tuple():
    x = sg.var("x")
    assert isinstance(sg.compile(sg.sin(x))(1.0), np.floating)
    one = sg.compile([sg.sin(x)])(1.0)
    assert isinstance(one, tuple) and len(one) == 1


def test_inputs_order_and_errors():
    x, y, z = sg.var("x"), sg.var("y"), sg.var("z")
    f = x - y * z
    fn = sg.compile(f, inputs=["z", y, "x"])
    assert fn.inputs == ("z", "y", "x") and fn(1.0, 2.0, 3.0) == 3.0 - 2.0
    with pytest.raises(sg.SymgradError, match="'x'"):
        sg.to_source(f, inputs=["y", "z"])
    with pytest.raises(sg.SymgradError, match="not a variable"):
        sg.to_source(f, inputs=["x", "y", "z", "w"])
    with pytest.raises(sg.SymgradError, match="variables"):
        sg.to_source(f, inputs=[x + y, z])
    with pytest.raises(sg.SymgradError, match="twice"):
        sg.to_source(f, inputs=["x", "x", "y", "z"])
    with pytest.raises(sg.SymgradError):
        sg.to_source([])


def test_compiled_wrapper_checks_inputs_and_raw_does_not():
    W = sg.var("W", shape=(2, 3))
    y = sg.var("y", dtype="int64")
    f = sg.sum(W) * y
    fn = sg.compile(f)
    assert fn([[1, 2, 3], [4, 5, 6]], 2) == 42.0  # lists and ints are converted
    with pytest.raises(sg.InputError, match="'y'"):
        fn(np.ones((2, 3)))
    with pytest.raises(sg.EvaluationError, match="shape"):
        fn(np.ones(3), 1)
    with pytest.raises(sg.EvaluationError, match="dtype"):
        fn(np.ones((2, 3)), 1.5)
    with pytest.raises(sg.InputError, match="no input 'q'"):
        fn(np.ones((2, 3)), q=1)
    assert fn.raw(np.ones((2, 3)), np.int64(2)) == 12.0
    raw = sg.compile(f, check_inputs=False)
    assert raw.raw is raw and raw.source == fn.source


def test_getsource_and_tracebacks_show_generated_code():
    f, grads = network()
    fn = sg.compile([f, *grads])
    src = inspect.getsource(fn)
    assert src.startswith("def f(") and src in fn.source
    assert inspect.getsource(fn.raw) == src
    inputs = network_inputs()
    inputs["y"] = np.int64(7)  # out of range: fails inside the generated code
    try:
        fn.raw(*[inputs[k] for k in fn.inputs])
    except IndexError as e:
        frames = traceback.extract_tb(e.__traceback__)
    else:
        pytest.fail("expected an IndexError")
    last = [fr for fr in frames if fr.filename == fn.filename][-1]
    assert last.line and "[y]" in last.line


def test_deep_chain_emits_flat_code_that_compiles():
    x = sg.var("x", shape=(2,))
    e = x
    for k in range(100_000):  # sin or tanh by the Thue-Morse sequence: not rolled
        op = sg.tanh if bin(k).count("1") % 2 else sg.sin
        e = op(e) if k % 2 else e + (0.25 + k * 1e-9)
    assert len(e.graph) > 100_000
    text = sg.to_source(e)
    code = compile(text, "<deep>", "exec")
    assert text.count("\n") > 100_000
    ns: dict = {}
    exec(code, ns)
    v = np.array([0.1, -0.3])
    assert_same(ns["f"](v), sg.evaluate(e, {"x": v}))


def test_deep_gradient_chain():
    x = sg.var("x")
    e = x
    for k in range(5_000):
        e = sg.sin(e) if k % 2 else e * 1.0001
    fn = sg.compile([e, sg.grad(e, x)])
    for g, w in zip(fn(0.7), sg.evaluate([e, sg.grad(e, x)], {"x": 0.7})):
        assert_same(g, w)


# -- linting and determinism ------------------------------------------------------------------


def test_emitted_sources_pass_ruff(tmp_path):
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    x = sg.var("x", shape=(5,))
    rosen = sg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    sources = dict(_golden_sources())
    sources["scipy.py"] = sg.scipy_functions(rosen, x).source
    c = np.random.default_rng(0).normal(size=(9, 31))
    A = sg.var("A", shape=(9, 31))
    sources["consts.py"] = sg.to_source([sg.sum(A * c), sg.grad(sg.sum(A * c), A)])
    graph = Graph()
    hostile = [_raw_var(graph, n) for n in _hostile_names(tmp_path)]
    sources["hostile.py"] = sg.to_source(sum(hostile[1:], hostile[0]))
    for name, text in sources.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [ruff, "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


_DETERMINISM = textwrap.dedent("""
    import symgrad as sg
    f = sg.parse({net!r}, shapes={shapes!r}, dtypes={dtypes!r})
    grads = sg.grad(f, ["W", "b", "V", "g"])
    z = sg.var("z", shape=(3,))
    h = sg.hessian(sg.sum(sg.exp(z) * z) + z[0] * z[2], z)
    print(sg.to_source([f, *grads]))
    print(sg.to_source([h, sg.hvp(sg.sum(sg.sin(z) * z), z, "v")]))
    print(sg.scipy_functions(sg.logsumexp(z) * sg.sum(z * z), z).source)
""").format(net=NETWORK, shapes=SHAPES, dtypes=DTYPES)


def test_source_is_identical_under_different_hash_seeds():
    outs = []
    for seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", _DETERMINISM], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    assert "def f(V, W, x, b, g, y):" in outs[0]


# -- SciPy ------------------------------------------------------------------------------------


def test_scipy_functions_rosenbrock_converges():
    optimize = pytest.importorskip("scipy.optimize")
    x = sg.var("x", shape=(6,))
    f = sg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    s = sg.scipy_functions(f, x)
    assert _imports(s.source) == ["numpy"] and s.args == ()
    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2, -0.5])  # near the global minimum (scipy docs)
    value, gradient = s.fun(x0)
    np.testing.assert_allclose(value, optimize.rosen(x0), rtol=1e-14)
    np.testing.assert_allclose(gradient, optimize.rosen_der(x0), rtol=1e-13)
    p = np.arange(6.0)
    np.testing.assert_allclose(s.hessp(x0, p), optimize.rosen_hess_prod(x0, p), rtol=1e-13)
    res = optimize.minimize(s.fun, x0, jac=True, hessp=s.hessp, method="trust-ncg",
                            options={"gtol": 1e-10})
    assert res.success
    np.testing.assert_allclose(res.x, np.ones(6), atol=1e-7)


def test_scipy_functions_extra_args():
    optimize = pytest.importorskip("scipy.optimize")
    x, A, b = sg.var("x", shape=(3,)), sg.var("A", shape=(4, 3)), sg.var("b", shape=(4,))
    f = sg.sum((A @ x - b) ** 2)
    s = sg.scipy_functions(f, "x", inputs=["b", "A"])
    assert s.args == ("b", "A")
    rng = np.random.default_rng(5)
    Av, bv = rng.normal(size=(4, 3)), rng.normal(size=4)
    res = optimize.minimize(s.fun, np.zeros(3), args=(bv, Av), jac=True, hessp=s.hessp,
                            method="Newton-CG")
    np.testing.assert_allclose(res.x, np.linalg.lstsq(Av, bv, rcond=None)[0], atol=1e-6)


def test_scipy_functions_errors():
    x = sg.var("x", shape=(2, 2))
    with pytest.raises(sg.DifferentiationError, match="1-D"):
        sg.scipy_functions(sg.sum(x), x)
    v = sg.var("v", shape=(2,))
    with pytest.raises(sg.DifferentiationError, match="scalar"):
        sg.scipy_functions(v * 2.0, v)


def test_an_adjoint_shared_with_another_gradient_is_emitted():
    """A node the second gradient shares (hash-consed) with the first has its origin in the
    first, whose constant operand this module does not hold: the comment names it only."""
    a = sg.var("a", (3, 3))
    sg.grad(sg.sum(sg.tanh(np.arange(9.0).reshape(3, 3) @ a)), a)
    g = sg.grad(sg.sum(sg.tanh(a @ a)), a)
    a0 = np.random.default_rng(0).standard_normal((3, 3))
    np.testing.assert_array_equal(sg.compile(g, inputs=[a])(a0), sg.evaluate(g, {"a": a0}))


def test_the_printers_read_hooks_not_target_flags():
    """What differs between targets is a printer subclass; the shared code never asks which
    target it prints (no ``is_numpy``, no mode flag toggled around a second table)."""
    import symgrad.backends as backends
    from symgrad.backends.printer import Printer
    from symgrad.backends.targets import TARGETS

    folder = Path(backends.__file__).parent
    for path in [folder / "source.py", folder / "printer.py",
                 *sorted((folder / "targets").rglob("printer.py"))]:
        text = path.read_text(encoding="utf-8")
        assert "is_numpy" not in text and not re.search(r"self\._scalar\b", text), path.name
    for t in TARGETS.values():
        assert issubclass(t.printer, Printer) and t.table is t.printer.table


def test_constant_only_values_are_computed_once_at_module_level():
    """``-C * 2.0`` of a large constant ``C`` is computed at import, not on every call; an
    output that is one is handed out as a copy (the module's value stays read-only)."""
    x = sg.var("x", shape=(40,))
    c = Expr(x.graph, x.graph.const(np.eye(40)))
    f = sg.sum((-c * 2.0) @ sg.sin(x))
    outs = [f, sg.grad(f, x), -c * 2.0]
    src = sg.to_source(outs, name="k")
    module, body = src.split("def k(x):")
    assert re.search(r"^_c\d+ = _c1 \* \(-2\.0\)$", module, flags=re.M), module
    assert "(-2.0)" not in body and ".copy()" in body
    fn = sg.compile(outs)
    x0 = np.linspace(-1.0, 1.0, 40)
    first = fn(x0)
    for got, want in zip(first, sg.evaluate(outs, {"x": x0})):
        assert_same(got, want)
    first[2][0, 0] = 123.0  # the caller's copy: the next call is unchanged
    assert fn(x0)[2][0, 0] == -2.0


