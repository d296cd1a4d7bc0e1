"""No code from user objects reaches emitted source or runs: every public function's
str/int/float parameters are walked with hostile subclasses (tests/support/hostile.py) in a
subprocess under an audit hook; known injection routes (an int whose ``__index__`` lies, a name
whose ``__format__`` writes code) are checked one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from tests.support.hostile import HostileFloat, HostileInt, HostileStr, public_calls

HERE = Path(__file__).resolve().parents[1] / "support"


def test_no_hostile_method_runs_in_any_public_function(tmp_path):
    marker = tmp_path / "pwned"
    env = {**os.environ, "SYMGRAD_HOSTILE_MARKER": str(marker)}
    out = subprocess.run([sys.executable, str(HERE / "hostile.py")], capture_output=True,
                         text=True, timeout=600, cwd=HERE, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["variants"] > 100
    assert report["tripped"] == [], report["tripped"]
    assert report["events"] == [], report["events"]
    assert report["bare"] == [], report["bare"]
    assert not list(tmp_path.iterdir())  # neither the marker nor the payload's file


def test_the_walk_covers_every_public_function():
    labels = {label.split(" ")[0] for label, *_ in public_calls()}
    public = {n for n in sg.__all__ if callable(getattr(sg, n))
              and not (isinstance(getattr(sg, n), type) and issubclass(getattr(sg, n),
                                                                      BaseException))}
    missing = {n for n in public if n not in labels and f"sg.{n}" not in labels}
    assert missing <= {"Expr", "Graph", "SymgradWarning"}, missing


@pytest.fixture
def pwned(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


class EvilInt(int):
    def __repr__(self):
        return "open('PWNED', 'w') and 3"

    __str__ = __format__ = lambda self, *spec: "open('PWNED', 'w') and 3"  # noqa: E731

    def __index__(self):
        open("PWNED_index", "w").close()
        return 3

    __int__ = __index__


class EvilName(str):
    def __format__(self, spec):
        return "g(): pass\nopen('PWN', 'w')\ndef f"

    __str__ = __repr__ = lambda self: "g(): pass\nopen('PWN', 'w')\ndef f"  # noqa: E731


def test_lying_ints_and_code_writing_names_create_no_file(pwned):
    v = sg.var("v", (3,))
    fn = sg.compile(sg.eye(EvilInt(3)) @ v)
    np.testing.assert_array_equal(fn(np.ones(3)), np.ones(3))
    assert "open" not in fn.source and "np.eye(3" in fn.source
    g = sg.compile(v * 2.0, name=EvilName("g"))
    assert g.__name__ == "g" and "open" not in g.source
    np.testing.assert_array_equal(g(np.ones(3)), 2 * np.ones(3))
    src = sg.to_source(sg.eye(3, EvilInt(3)) @ v) + sg.to_source(sg.arange(EvilInt(3)) * 1.0)
    assert "open" not in src and "np.arange(" in src
    q = sg.var(EvilName("q"))
    assert type(q.name) is str and q.name == "q"
    out = sg.compile(v * 2.0, output_names=[EvilName("out")])
    assert "def f(v)" in out.source and "open" not in out.source
    assert not list(pwned.iterdir())


def test_values_are_exact_builtins_in_the_graph_and_its_source():
    x = sg.var(HostileStr("x"), shape=(HostileInt(2), 3), dtype=HostileStr("float64"))
    A = sg.var("A", (3, 4))
    f = sg.sum(x[HostileInt(1)] @ A, axis=HostileInt(0)) * HostileFloat(0.5)
    e = sg.einsum(HostileStr("ij,jk->ik"), x, A)
    for n in (*f.graph.nodes, *e.graph.nodes):
        for value in (n.name, *n.shape, *_leaves(n.attrs)):
            assert type(value).__name__ in ("str", "int", "float", "bool", "NoneType",
                                             "ndarray", "slice", "tuple"), (n, value)
    src = sg.to_source([f, e], inputs=[HostileStr("x"), "A"], name=HostileStr("fn"),
                       output_names=[HostileStr("value"), HostileStr("prod")])
    assert "def fn(x, A):" in src and "Hostile" not in src


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value
