"""The ``symgrad`` command, run as ``python -m symgrad`` in a subprocess (and in-process for
the option parsers): every subcommand, and user mistakes exit 2 without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.cli import UsageError, main, parse_dtypes, parse_shapes, parse_values
from tests.support.finite_differences import central

REPO = Path(__file__).resolve().parents[2]
NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"
NET_SHAPES = ["--shape", "W=4x3,x=3,b=4", "--shape", "V=2x4", "--shape", "g=2"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "symgrad", *args], capture_output=True,
                          text=True, cwd=cwd or REPO, env=env, timeout=300)


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    for frag in fragments:
        assert frag in proc.stderr, proc.stderr


def _load(path: Path, name: str = "f"):
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # the command's own output
    return ns[name]


# -- subcommands ------------------------------------------------------------------------------


def test_grad_prints_one_line_per_variable():
    proc = run("grad", "x * y + sin(x)", "--wrt", "x,y")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln.split(" = ")[0] for ln in lines] == ["d/dx", "d/dy"]
    # The printed derivatives are expressions again: check their values.
    dx = sg.parse(lines[0].split(" = ", 1)[1])
    dy = sg.parse(lines[1].split(" = ", 1)[1])
    at = {"x": 0.7, "y": -1.3}
    assert sg.evaluate(dx, at) == pytest.approx(np.cos(0.7) - 1.3, rel=1e-15)
    assert sg.evaluate(dy, at) == pytest.approx(0.7, rel=1e-15)


def test_source_network_module(tmp_path):
    out = tmp_path / "net.py"
    proc = run("source", NETWORK, "--wrt", "W,b,V,g", *NET_SHAPES, "--dtype", "y=int64",
               "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "import numpy as np" in text and "def f(V, W, x, b, g, y):" in text
    assert "return value, dW, db, dV, dg" in text
    rng = np.random.default_rng(0)
    shapes = {"V": (2, 4), "W": (4, 3), "b": (4,), "g": (2,), "x": (3,)}
    inputs = {k: rng.normal(size=s) for k, s in shapes.items()}
    inputs["y"] = np.int64(0)
    got = _load(out)(*[inputs[k] for k in ("V", "W", "x", "b", "g", "y")])
    f = sg.parse(NETWORK, shapes=shapes, dtypes={"y": "int64"})
    want = sg.evaluate([f, *sg.grad(f, ["W", "b", "V", "g"])], inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_source_hessian_and_simplify(tmp_path):
    out = tmp_path / "h.py"
    proc = run("source", "sum(exp(x) * x) + x[0] * x[1]", "--shape", "x=3", "--hessian",
               "--simplify", "--name", "newton", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    value, dx, hess = _load(out, "newton")(np.array([0.1, 0.2, -0.3]))
    v = np.array([0.1, 0.2, -0.3])
    ref_h = np.diag(np.exp(v) * (v + 2)) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(value, np.sum(np.exp(v) * v) + v[0] * v[1], rtol=1e-14)
    np.testing.assert_allclose(dx, np.exp(v) * (v + 1) + [v[1], v[0], 0], rtol=1e-14)
    np.testing.assert_allclose(hess, ref_h, rtol=1e-14, atol=1e-15)


def test_source_to_stdout_scalar_shape():
    proc = run("source", "s * t", "--shape", "s=", "--wrt", "s")
    assert proc.returncode == 0, proc.stderr
    assert "def f(s, t):" in proc.stdout and "return value, ds" in proc.stdout


def test_dot_includes_gradient_nodes():
    proc = run("dot", "x * y + sin(x)", "--wrt", "x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip().startswith("digraph")
    assert proc.stdout.rstrip().endswith("}")
    assert "cos" in proc.stdout  # the derivative's node is part of the picture


def test_explain_prints_the_notes_table():
    proc = run("explain", "x1 * x2 + sin(x1)", "--at", "x1=2,x2=3")
    assert proc.returncode == 0, proc.stderr
    assert "Forward pass" in proc.stdout and "Backward pass" in proc.stdout
    # d/dx1 = x2 + cos(x1) = 3 + cos(2) = 2.58385
    assert "2.58385" in proc.stdout


def test_a_text_scan_compiles_and_its_gradient_matches_finite_differences(tmp_path):
    out = tmp_path / "rnn.py"
    text = "sum(scan(lambda h, x: (tanh(W @ h + x), h), h0, X)[0] ** 2)"
    proc = run("source", text, "--shape", "W=3x3,h0=3,X=4x3", "--wrt", "W,h0",
               "--inputs", "W,h0,X", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rng = np.random.default_rng(5)
    W, h0, X = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(4, 3))

    def loss(W: np.ndarray) -> float:
        h = h0
        for x in X:
            h = np.tanh(W @ h + x)
        return float(np.sum(h ** 2))

    value, dW, dh0 = _load(out)(W, h0, X)
    assert value == pytest.approx(loss(W), rel=1e-13)
    np.testing.assert_allclose(dW, central(loss, W, 1e-6), rtol=1e-6, atol=1e-9)
    assert dh0.shape == (3,)


def test_a_text_loop_mistake_exits_2_with_caret():
    assert_user_error(run("grad", "scan(sin, 1.0, xs)[0]", "--shape", "xs=3"),
                      "takes its step as a lambda", "^")
    assert_user_error(run("grad", "scan(lambda c, x: c * x, 1.0, xs)[0]", "--shape", "xs=3"),
                      "scan: f must return a pair", "^")


def test_demo_runs(tmp_path):
    proc = run("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


# what `make demo` installs: symgrad's runtime dependencies and nothing of the test extra
_BLOCK_EXTRAS = """
import importlib.abc, sys
EXTRAS = {"scipy", "matplotlib", "jax", "jaxlib", "torch", "dask", "distributed", "hypothesis",
          "selenium", "pydot", "array_api_compat", "array_api_strict", "psutil", "tqdm"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ImportError(f"the demo imported {name}, which make demo does not install")
sys.meta_path.insert(0, Block())
sys.argv = ["symgrad", "demo"]
import runpy
runpy.run_module("symgrad", run_name="__main__")
"""


def test_demo_needs_only_the_runtime_dependencies(tmp_path):
    """`make demo` installs numpy, sympy and networkx only: the tour must not import (even
    try to import) any package of the test extra."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _BLOCK_EXTRAS], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "make demo does not install" not in proc.stderr


def test_make_demo_installs_no_extra():
    text = (REPO / "Makefile").read_text()
    demo_prereq = text.split("\ndemo:", 1)[1].split("\n", 1)[0].split()
    assert demo_prereq == ["$(BASE)"]
    base_recipe = text.split("\n$(BASE):", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet -e .\n" in base_recipe + "\n" and "[test]" not in base_recipe


def test_help_everywhere():
    for args in ([], ["grad"], ["source"], ["dot"], ["explain"], ["demo"]):
        proc = run(*args, "--help")
        assert proc.returncode == 0, proc.stderr
        assert "usage: symgrad" in proc.stdout


# -- user mistakes: exit 2, one message, no traceback ----------------------------------------


def test_parse_error_exits_2_with_caret():
    assert_user_error(run("grad", "x ** 2 +", "--wrt", "x"), "error", "^")


def test_bad_shape_syntax_exits_2():
    assert_user_error(run("source", "sum(x)", "--shape", "x=3y"), "--shape", "NAME=4x3")


def test_unknown_wrt_and_non_scalar_exit_2():
    assert_user_error(run("grad", "x * y", "--wrt", "z"), "'z'")
    assert_user_error(run("grad", "x * 2", "--shape", "x=3", "--wrt", "x"), "jacobian")


def test_shape_mismatch_and_bad_at_exit_2(capsys):
    assert main(["source", "W @ x", "--shape", "W=2x3,x=4"]) == 2
    assert main(["explain", "x * y", "--at", "x=__import__('os')"]) == 2
    assert main(["source", "x", "--dtype", "x=complex128"]) == 2
    assert main(["source", "x", "--name", "lambda"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("error:") == 4


def test_unwritable_output_exits_2(tmp_path, capsys):
    assert main(["source", "x * x", "-o", str(tmp_path / "missing" / "f.py")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_argparse_mistakes_exit_2():
    proc = run("frobnicate")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


# -- option parsers ---------------------------------------------------------------------------


def test_option_parsers():
    assert parse_shapes(["W=4x3", "x=3,s=", "u=()"]) == {"W": (4, 3), "x": (3,), "s": (),
                                                         "u": ()}
    assert parse_dtypes(["y=int64"]) == {"y": "int64"}
    assert parse_values(["a=1,b=[1, 2],c=-2.5e3"]) == {"a": 1, "b": [1, 2], "c": -2500.0}
    for bad in (["W=4*3"], ["=3"], ["3=3"], ["W"]):
        with pytest.raises(UsageError):
            parse_shapes(bad)
    for bad in (["x=open('f')"], ["x"], ["x=True"], ["x='a'"]):
        with pytest.raises(UsageError):
            parse_values(bad)


def test_source_hessian_of_several_variables_gives_every_block(tmp_path):
    out = tmp_path / "blocks.py"
    proc = run("source", "a*a*b + sum(x*a) + sum(x**3)", "--shape", "x=2", "--wrt", "a,b,x",
               "--hessian", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "hess_a_a, hess_a_b, hess_a_x, hess_b_b, hess_b_x, hess_x_x" in text
    a, b, x = 3.0, 2.0, np.array([0.5, -1.0])
    *_, haa, hab, hax, hbb, hbx, hxx = _load(out)(a, b, x)
    assert (haa, hab, hbb) == (2 * b, 2 * a, 0.0)
    np.testing.assert_array_equal(hax, [1.0, 1.0])
    np.testing.assert_array_equal(hbx, [0.0, 0.0])
    np.testing.assert_allclose(hxx, np.diag(6 * x), rtol=1e-15)


def test_source_flat_hessian_is_labelled_with_its_layout(tmp_path):
    out = tmp_path / "flat.py"
    proc = run("source", "a*a*b + sum(x*a) + sum(x**3)", "--shape", "x=2", "--wrt", "a,b,x",
               "--hessian", "flat", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # the test's own output
    assert namespace["HESS_LAYOUT"] == (("a", 0, 1), ("b", 1, 2), ("x", 2, 4))
    *_, hess = namespace["f"](3.0, 2.0, np.array([0.5, -1.0]))
    want = np.array([[4.0, 6.0, 1.0, 1.0], [6.0, 0.0, 0.0, 0.0], [1.0, 0.0, 3.0, 0.0],
                     [1.0, 0.0, 0.0, -6.0]])
    np.testing.assert_allclose(hess, want, rtol=1e-15)
    np.testing.assert_array_equal(hess, hess.T)
