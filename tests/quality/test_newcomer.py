"""What a newcomer meets first: argument order, checked SciPy wrappers, progress reports,
and the command line's version, --inputs, html, and one-paragraph errors (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.cli import main

REPO = Path(__file__).resolve().parents[2]
NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"
SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "symgrad", *args], capture_output=True,
                          text=True, env=env, timeout=300, **kw)


# -- argument order ---------------------------------------------------------------------------


def test_default_order_is_first_appearance_and_inputs_is_kept():
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes={"y": "int64"})
    assert sg.compile(f).inputs == ("V", "W", "x", "b", "g", "y")
    order = ["W", "x", "b", "V", "g", "y"]
    assert sg.compile(f, inputs=order).inputs == tuple(order)
    c, a, b = sg.var("c"), sg.var("a"), sg.var("b")  # names do not sort the order
    assert sg.compile(c * a + sg.exp(b)).inputs == ("c", "a", "b")
    assert "def f(c, a, b):" in sg.to_source(c * a + sg.exp(b))


def test_default_order_over_several_outputs():
    x, y, z = sg.var("x"), sg.var("y"), sg.var("z")
    assert sg.compile([y * 2.0, z + x]).inputs == ("y", "z", "x")


def test_scipy_wrappers_check_their_inputs_like_compile():
    w = sg.var("w", shape=(2,))
    A = sg.var("A", shape=(3, 2))
    t = sg.var("t", shape=(3,))
    s = sg.scipy_functions(sg.sum((A @ w - t) ** 2), w)
    assert s.args == ("A", "t")
    A0, t0 = np.arange(6.0).reshape(3, 2), np.ones(3)
    value, grad = s.fun(np.ones(2), A0, t0)
    r = A0 @ np.ones(2) - t0
    assert value == pytest.approx(r @ r) and np.allclose(grad, 2 * A0.T @ r)
    with pytest.raises(sg.EvaluationError, match="input 'A' has shape \\(2, 3\\)"):
        s.fun(np.ones(2), A0.T, t0)  # arguments in the wrong order: a clear error
    with pytest.raises(sg.InputError, match="takes 4 inputs"):
        s.hessp(np.ones(2), np.ones(2), A0, t0, t0)
    np.testing.assert_allclose(s.hessp(np.ones(2), np.array([1.0, 0.0]), A0, t0),
                               2 * A0.T @ A0 @ [1.0, 0.0])


# -- progress -----------------------------------------------------------------------------


def test_the_library_is_quiet_and_the_command_reports(capfd):
    x = sg.var("x")
    sg.grad(sg.sin(x), x)
    assert capfd.readouterr().err == ""
    proc = run("-v", "grad", "sin(x) * x")
    assert proc.returncode == 0 and "symgrad: reverse mode: " in proc.stderr
    proc = run("grad", "sin(x) * x", "--quiet")
    assert proc.returncode == 0 and proc.stderr == ""


# -- the command line -----------------------------------------------------------------------


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"symgrad {sg.__version__}"
    assert sg.__version__[0].isdigit()


def test_source_inputs_sets_the_order(tmp_path):
    out = tmp_path / "net.py"
    proc = run("source", NETWORK, "--wrt", "W,b,V,g", "--shape", "W=4x3,x=3,b=4,V=2x4,g=2",
               "--dtype", "y=int64", "--inputs", "W,x,b,V,g,y", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "def f(W, x, b, V, g, y):" in out.read_text()
    proc = run("source", "x * y", "--inputs", "x")
    assert proc.returncode == 2 and "'y'" in proc.stderr and "Traceback" not in proc.stderr


def test_html_command_writes_the_page(tmp_path):
    out = tmp_path / "page.html"
    proc = run("html", "u2*(u1+u2)", "--at", "u1=2,u2=3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("args,fragment", [
    (["explain", "x*y", "--at", "x=[[1,2],[3]]"], "ragged"),
    (["demo", "--out", "/dev/null"], "choose another directory"),
    (["html", "x*y", "-o", "/nonexistent-dir/p.html"], "cannot write"),
    (["source", "x*", "--inputs", "x"], "^"),
])
def test_user_errors_exit_2_with_one_paragraph(args, fragment):
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and fragment in proc.stderr
    assert proc.stdout == ""
    assert "\n\n" not in proc.stderr.strip()


def test_a_closed_pipe_is_one_line_not_a_traceback():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "symgrad", "dot", "sin(x) * x", "--wrt",
                             "x"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader is gone, as with `| dot` when dot is missing
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 2, err
    assert "Traceback" not in err and "output pipe closed" in err


def test_main_in_process_returns_2_for_a_user_error(capsys):
    assert main(["grad", "x +"]) == 2
    assert "symgrad grad: error:" in capsys.readouterr().err
