"""Long emitted functions: register names reused after a value's last use, and parts that
pass the values crossing them through one list, so CPython never compiles one huge
function. The results stay bit for bit those of the evaluator."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends import layout


def _chain(steps: int):
    x, y = sg.var("x", (3,)), sg.var("y")
    h = x
    for k in range(steps):  # sin or tanh by the Thue-Morse sequence: not rolled
        op = sg.tanh if bin(k).count("1") % 2 else sg.sin
        h = op(h) * 0.3 + h * 0.95 + 0.01 * k * y
    f = sg.sum(h * h)
    return f, x, y


@pytest.fixture
def small_layout(monkeypatch):
    monkeypatch.setattr(layout, "REGISTERS_FROM", 20)
    monkeypatch.setattr(layout, "PART_LINES", 40)


def _functions(src: str) -> list[ast.FunctionDef]:
    return [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)]


def test_parts_and_registers_give_the_evaluators_bits(small_layout):
    f, x, y = _chain(30)
    grads = sg.grad(f, [x, y])
    outs = [f, *grads, x, f]  # a variable and a repeated output too
    fn = sg.compile(outs, inputs=[x, y], scalars="numpy")
    defs = [d.name for d in _functions(fn.source)]
    assert defs[-1] == "f" and sum(d.startswith("_f_part") for d in defs) >= 5
    v = np.array([0.1, -0.3, 2.0])
    got, want = fn(v, 0.7), sg.evaluate(outs, {"x": v, "y": 0.7})
    assert all(np.asarray(a).tobytes() == np.asarray(b).tobytes() for a, b in zip(got, want))
    for d in _functions(fn.source):
        names = {n.id for n in ast.walk(d) if isinstance(n, ast.Name)}
        assert len(names) < 4 * layout.PART_LINES  # a part keeps few locals


def test_registers_are_reused_after_the_last_use(small_layout, monkeypatch):
    monkeypatch.setattr(layout, "PART_LINES", 10**6)  # one function, registers only
    f, x, y = _chain(30)
    g = sg.grad(f, x)
    src = sg.to_source([f, g], inputs=[x, y])
    body = _functions(src)[-1]
    stores = [t.id for n in ast.walk(body) if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name)]
    assert len(set(stores)) < len(stores) / 3  # far fewer names than values
    v = np.array([0.5, 0.25, -1.0])
    np.testing.assert_array_equal(sg.compile([f, g], inputs=[x, y])(v, 0.3)[1],
                                  sg.evaluate(g, {"x": v, "y": 0.3}))


def test_scalar_math_functions_in_parts(small_layout):
    x = sg.var("x")
    h = x
    for k in range(40):  # cos or tanh by the Thue-Morse sequence (no run of identical
        op = sg.tanh if bin(k).count("1") % 2 else sg.cos  # steps): straight-line code
        h = sg.sin(h) * h + op(h) * (1.0 + k / 64)
    d = sg.grad(h, x)
    fn = sg.compile([h, d], inputs=[x])
    assert "import math" in fn.source and "_f_scalar_part" not in fn.source
    assert any(d.name.startswith("_f_part") for d in _functions(fn.source))
    got, want = fn(0.5), sg.evaluate([h, d], {"x": 0.5})
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    with np.errstate(invalid="ignore"):  # math raises on inf: the NumPy fallback runs
        assert np.isnan(fn(np.inf)[0])


def test_long_sources_pass_ruff(small_layout, tmp_path):
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed")
    f, x, y = _chain(25)
    path = tmp_path / "long.py"
    path.write_text(sg.to_source([f, *sg.grad(f, [x, y])], inputs=[x, y]))
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--config",
                           str(root / "pyproject.toml"), str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_parts_keep_what_crosses_them_linear():
    """Each value crossing a cut is stored once and loaded once per part that reads it."""
    f, x, y = _chain(60)
    g = f.graph
    grad = sg.grad(f, x)
    order = [i for i in g.ancestors([f.node, grad.node]) if not g.nodes[i].is_var
             and not g.nodes[i].is_const]
    params = [g.variables["x"], g.variables["y"]]
    saved = layout.PART_LINES
    try:
        layout.PART_LINES = 25
        pieces, slots = layout.parts(g.nodes, order, params, [f.node, grad.node])
    finally:
        layout.PART_LINES = saved
    loads = sum(len(p.loads) for p in pieces)
    uses = sum(len(g.nodes[i].args) for i in order)
    assert len(slots) <= len(order) + len(params) and loads <= uses
    for p in pieces:  # stores of a part are consecutive slots
        s = [k for _, k in p.stores]
        assert s == list(range(s[0], s[0] + len(s))) if s else True


def test_a_big_array_handed_to_the_next_part_is_not_released_before(small_layout):
    """A big array whose last use in a part comes before the part hands it on (the
    functional updates of one 4096-element array) stays bound until it is stored."""
    x = sg.var("x", (2,))
    out = sg.zeros(4096)
    for i in range(12):
        out = out.at[i].set(x[0] * i + x[1])
    f = sg.sum(out ** 2)
    fn = sg.compile([f, sg.grad(f, x)], inputs=[x], scalars="numpy")
    assert sum(d.name.startswith("_f_part") for d in _functions(fn.source)) >= 2
    v = np.array([1.1, 0.4])
    value, grad = fn(v)
    i = np.arange(12)
    assert value == pytest.approx(np.sum((1.1 * i + 0.4) ** 2), rel=1e-14)
    np.testing.assert_allclose(grad, [np.sum(2 * (1.1 * i + 0.4) * i),
                                      np.sum(2 * (1.1 * i + 0.4))], rtol=1e-14)
