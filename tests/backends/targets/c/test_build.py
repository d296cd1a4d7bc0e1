"""``backend="c"``'s build: the C text compiled once, cached on disk by its hash and
verified before it is loaded; no compiler, a compiler's error and an oversized text are
clear errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.c import build
from symgrad.errors import BackendError, LimitError

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None,
    reason="no C compiler (cc, gcc) on PATH")

ROOT = Path(__file__).resolve().parents[4]

# a second process: compiles (or loads) the module, prints the value and how many times the
# C compiler ran
_CHILD = """
import numpy as np, symgrad as sg
from symgrad.backends.targets.c import build
runs = []
real = build._compile
build._compile = lambda *a: (runs.append(1), real(*a))[1]
x = sg.var("x", (50,))
fn = sg.compile(sg.sum(sg.exp(x) * sg.tanh(x) + x * x), backend="c")
print(repr(float(fn(np.linspace(-1, 1, 50)))), len(runs))
"""


def _child(cache: Path) -> tuple[float, int]:
    env = {**os.environ, "SYMGRAD_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout.split()
    return float(out[0]), int(out[1])


def test_second_process_loads_without_compiling_and_tampering_recompiles(tmp_path):
    """A second process loads the cached library (the compiler does not run); a library
    changed on disk is not loaded: its hash differs from the recorded one, so the C text
    is compiled again (and the value is right)."""
    x = np.linspace(-1, 1, 50)
    want = float(np.sum(np.exp(x) * np.tanh(x) + x * x))
    value, runs = _child(tmp_path)
    assert runs == 1 and value == pytest.approx(want, rel=1e-13)
    value, runs = _child(tmp_path)
    assert runs == 0 and value == pytest.approx(want, rel=1e-13)
    (so,) = list((tmp_path / "c").glob("*/module.so"))
    assert oct(so.parent.stat().st_mode & 0o777) == "0o700"
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a planted or damaged library
    so.write_bytes(bytes(data))
    value, runs = _child(tmp_path)
    assert runs == 1 and value == pytest.approx(want, rel=1e-13)


def test_no_compiler_is_a_backend_error_naming_the_fix(monkeypatch, tmp_path):
    """Without a C compiler, compile raises BackendError naming what to install and the
    other backends; to_source still gives the text."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CC", raising=False)
    x = sg.var("x", (40,))
    f = sg.sum(sg.exp(x) * x + sg.sin(x) * 3.0)
    assert "_C_SOURCE" in sg.to_source(f, backend="c")
    with pytest.raises(BackendError, match="needs a C compiler.*install.*backend='numba'"):
        sg.compile(f, backend="c")
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BackendError, match="no-such-cc"):
        build.compiler()


def test_compiler_error_carries_the_compilers_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    with pytest.raises(BackendError, match="C compiler failed.*(error|undeclared)"):
        build.load_library("int f(double *o0) { o0[0] = undefined_name; return 0; }",
                           {"f": ("p",)})


def test_c_text_over_the_budget_is_a_limit_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "MAX_SOURCE_BYTES", 100)
    with pytest.raises(LimitError, match="budget"):
        build.load_library("/* " + "x" * 200 + " */", {})


def test_a_library_loads_and_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    lib = build.load_library("int twice(double x) { return (int)(2 * x); }",
                             {"twice": ("float64",)})
    assert lib.twice(1.25) == 2 and lib.twice(-3.0) == -6


def test_the_array_data_offset_is_where_numpy_keeps_the_pointer():
    import ctypes

    off = build.data_offset()
    for a in (np.arange(7.0), np.zeros((3, 4), np.float32)[1:], np.empty(0)):
        assert ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data
