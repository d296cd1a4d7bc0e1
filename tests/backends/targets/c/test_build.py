"""``backend="c"``'s build: the C text compiled once, cached on disk by its hash and
verified before it is loaded; no compiler, a compiler's error and an oversized text are
clear errors."""

from __future__ import annotations

import json
import math
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


_MATH_TEXT = """
int table(const double *x, double *o) {
%s
    return 0;
}
"""


def _math_table() -> tuple[str, int]:
    """C text applying every C library function the C target calls (each declared by the
    prelude's own declarations on the lean route, by the system headers on the driver's),
    in double and float, to a few arguments: the text and the number of results."""
    from symgrad.backends.targets.c.scalars import _MATH1, _MATH2, PRELUDE

    lines, k = [], 0
    unary = sorted({*_MATH1.values(), "fabs"})
    for name in unary:
        for i in range(4):
            lines.append(f"    o[{k}] = {name}(x[{i}]); o[{k + 1}] = {name}f((float)x[{i}]);")
            k += 2
    for name in sorted(set(_MATH2.values())):
        for i in range(3):
            lines.append(f"    o[{k}] = {name}(x[{i}], x[{i + 1}]); "
                         f"o[{k + 1}] = {name}f((float)x[{i}], (float)x[{i + 1}]);")
            k += 2
    for name in ("isnan", "isinf", "isfinite", "signbit"):
        for i in range(4):
            lines.append(f"    o[{k}] = {name}(x[{i}]) != 0; "
                         f"o[{k + 1}] = {name}((float)x[{i}]) != 0;")
            k += 2
    lines.append(f"    o[{k}] = INFINITY; o[{k + 1}] = NAN; "
                 f"o[{k + 2}] = (double)(INT64_C(1) << 40);")
    k += 3
    return PRELUDE + _MATH_TEXT % "\n".join(lines), k


def test_both_routes_declare_the_c_librarys_functions_alike(monkeypatch, tmp_path):
    """The lean route's own declarations of the C library's functions (no system header)
    and the driver route's headers give the same results, bit for bit, for every function
    the C target calls (a wrong prototype would give garbage)."""
    import ctypes

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    text, n = _math_table()
    x = np.array([0.3, 0.7, -0.0, 2.5, np.nan])
    data = text.encode()
    results = []
    for route in (build.LEAN, build.DRIVER):
        lib = build._load(data, build.compiler(), route, last=True)
        f = lib.table
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        out = np.full(n, -7.0)
        assert f(x.ctypes.data, out.ctypes.data) == 0
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    assert results[0][0] == pytest.approx(np.arccos(0.3), rel=1e-15)  # acos, the first
    assert results[0][1] == pytest.approx(float(np.arccos(np.float32(0.3))), rel=1e-6)
    assert results[0][n - 3:n - 1].tolist()[0] == np.inf and np.isnan(results[0][n - 2])


def test_a_failing_lean_route_falls_back_to_the_driver(monkeypatch, tmp_path):
    """Where the lean route fails (here: a linker flag it does not know), the driver's
    route builds the library, the value is right, the failure is recorded in the lean
    entry's folder and this process stops trying the lean route with that compiler."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    broken = build.Route("lean", (*build.LEAN.flags, "-Wl,--no-such-linker-flag-sg"))
    monkeypatch.setattr(build, "LEAN", broken)
    monkeypatch.setattr(build, "ROUTES", (broken, build.DRIVER))
    monkeypatch.setattr(build, "_LEAN_FAILED", set())
    monkeypatch.setattr(build, "_LOADED", {})
    x = sg.var("x", (30,))
    fn = sg.compile(sg.sum(sg.exp(x) * sg.sin(x)), backend="c")
    v = np.linspace(-1, 2, 30)
    assert float(fn(v)) == pytest.approx(float(np.sum(np.exp(v) * np.sin(v))), rel=1e-13)
    assert build._LEAN_FAILED == {build.compiler()}
    records = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("*/module.json")]
    assert sorted("failed" in r for r in records) == [False, True]
    assert any("no-such-linker-flag" in r.get("failed", "") for r in records)


def test_a_lean_library_that_does_not_load_falls_back_to_the_driver(monkeypatch, tmp_path):
    """A library of the lean route that the loader refuses (an unresolved name) is
    removed, never used: the driver's route builds one that loads, and the next process
    goes to the driver's entry without trying the lean one again."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_LEAN_FAILED", set())
    monkeypatch.setattr(build, "_LOADED", {})
    opened = []
    real = build._open

    def refuse_lean(so):
        opened.append(so)
        if len(opened) == 1:
            raise OSError(f"{so}: undefined symbol: __sg_missing")
        return real(so)

    monkeypatch.setattr(build, "_open", refuse_lean)
    lib = build.load_library("int twice(double x) { return (int)(2 * x); }",
                             {"twice": ("float64",)})
    assert lib.twice(21.0) == 42
    lean = build._folder(build.cache_key(
        b"int twice(double x) { return (int)(2 * x); }", build.compiler(), build.LEAN))
    assert not (lean / "module.so").exists()
    assert "undefined symbol" in json.loads((lean / "module.json").read_text())["failed"]
    monkeypatch.setattr(build, "_LEAN_FAILED", set())  # a new process
    monkeypatch.setattr(build, "_LOADED", {})
    runs = []
    monkeypatch.setattr(build, "_compile", lambda *a: runs.append(a))
    lib = build.load_library("int twice(double x) { return (int)(2 * x); }",
                             {"twice": ("float64",)})
    assert lib.twice(4.0) == 8 and runs == [] and len(opened) == 3


def test_the_cache_key_covers_the_route_and_the_flags():
    data, cc = b"int f(void) { return 1; }", build.compiler()
    keys = {build.cache_key(data, cc, build.LEAN), build.cache_key(data, cc, build.DRIVER),
            build.cache_key(data, cc, build.Route("lean", (*build.LEAN.flags, "-O3"))),
            build.cache_key(data, cc, build.Route("lean", build.LEAN.flags, ("-lm", "-lc"))),
            build.cache_key(data + b" ", cc, build.LEAN)}
    assert len(keys) == 5
    assert build.cache_key(data, cc, build.LEAN) == build.cache_key(data, cc, build.LEAN)


def test_the_lean_route_links_the_math_library_only_for_math():
    """The lean route's command links -lm only where the text calls a math function (its
    versioned names: never the C library's old compatibility versions), and compiles in
    the array data pointer's offset only where the text reads one."""
    cc = build.compiler()
    plain = build.LEAN.command(cc, b"int f(double *o0) { o0[0] = 1.5; return 0; }")
    calls = build.LEAN.command(cc, b"int f(double *o0) { o0[0] = expf(o0[0]); return 0; }")
    helper = build.LEAN.command(cc, b"static inline T sg_x##S(T a) { return log1p##F(a); }")
    assert "-lm" not in plain and "-lm" in calls and "-lm" in helper
    assert "-lm" in build.DRIVER.command(cc, b"int f(void) { return 0; }")
    reads = build.LEAN.command(cc, b"int g(void *x0) { return SG_DATA(x0) != 0; }")
    assert f"-DSG_DATA_OFFSET={build.data_offset()}" in reads
    assert not any(a.startswith("-DSG_DATA_OFFSET") for a in plain)


def test_a_function_the_prelude_does_not_declare_fails_over_to_the_headers(monkeypatch,
                                                                            tmp_path):
    """A C library function the lean prelude does not declare fails the lean route (an
    implicit declaration is an error there, never a guessed prototype): the driver's route,
    with the system headers, builds a library that computes it."""
    import ctypes

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_LEAN_FAILED", set())
    monkeypatch.setattr(build, "_LOADED", {})
    from symgrad.backends.targets.c.scalars import PRELUDE

    lib = build.load_library(PRELUDE + "\nint f(double x, double *o0) { o0[0] = lgamma(x); "
                             "return 0; }\n", {})
    f = lib.f
    f.argtypes = [ctypes.c_double, ctypes.c_void_p]
    out = np.zeros(1)
    assert f(4.5, out.ctypes.data) == 0
    assert out[0] == pytest.approx(math.lgamma(4.5), rel=1e-15)
    records = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("*/module.json")]
    assert any("implicit" in r.get("failed", "") for r in records)


def _two_kernel_model():
    """A gradient whose C module has several kernels (a matrix product between them)."""
    x, W = sg.var("x", (40, 30)), sg.var("W", (30, 20))
    h = sg.tanh(x @ W)
    f = sg.sum(sg.log(1.0 + sg.exp(h @ W.T)) * x)
    return [f, *sg.grad(f, [x, W])], {"x": np.linspace(-1, 1, 1200).reshape(40, 30),
                                     "W": np.cos(np.arange(600.0)).reshape(30, 20) / 5}


def test_a_split_module_builds_its_parts_side_by_side_and_equals_one_text(monkeypatch,
                                                                           tmp_path):
    """With two parts allowed, a module of several kernels is built as two libraries (the
    compiler run on each, at the same time) joined as one; its values equal the one
    text's bit for bit, and a second load of the same text compiles nothing."""
    from symgrad.backends.targets.c import parts

    outs, env = _two_kernel_model()
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_LOADED", {})
    monkeypatch.setattr(parts, "MIN_PART_BYTES", 1)
    runs = []
    real = build._compile
    monkeypatch.setattr(build, "_compile", lambda *a: (runs.append(1), real(*a))[1])
    monkeypatch.setenv("SYMGRAD_C_PARTS", "1")
    one = sg.compile(outs, backend="c")
    whole = one(**env)
    assert runs == [1] and one.source.count(parts.MARK) >= 2
    monkeypatch.setenv("SYMGRAD_C_PARTS", "2")
    two = sg.compile(outs, backend="c")
    split = two(**env)
    assert runs == [1, 1, 1]
    for a, b in zip(split, whole):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(whole, sg.compile(outs, backend="numpy")(**env)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    build._LOADED.clear()
    again = sg.compile(outs, backend="c")(**env)
    assert runs == [1, 1, 1] and all(np.array_equal(a, b) for a, b in zip(again, split))


def test_functions_calling_one_another_stay_in_one_part():
    from symgrad.backends.targets.c import parts

    f = "static int inner(double *o0) { o0[0] = 1; return 0; }"
    g = "int outer_c(double *o0) { return inner(o0) + 0 * 12345; }"
    h = "void *h_py(void *self, void *const *a, long n) { return 0; }"
    text = "/* prelude */" + "".join(f"\n{parts.MARK}\n{c}" for c in (f, h, g))
    split = parts.split(text, parts=3, min_bytes=1)
    assert len(split) == 2 and all(s.startswith("/* prelude */") for s in split)
    (together,) = [s for s in split if "inner(" in s]
    assert "outer_c(" in together and "h_py" not in together
    assert parts.split(text, parts=1, min_bytes=1) == [text]
    assert parts.split(text, parts=3) == [text]  # too small to pay for a second compiler


def test_every_part_gets_blas_and_lapack(monkeypatch, tmp_path):
    """A module split in three, LAPACK in a scan's step and products in kernels: each
    part's library is given SciPy's routines, and the values equal the NumPy backend's."""
    pytest.importorskip("scipy")
    from symgrad.backends.targets.c import parts

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SYMGRAD_C_PARTS", "3")
    monkeypatch.setattr(parts, "MIN_PART_BYTES", 1)
    monkeypatch.setattr(build, "_LOADED", {})
    A, b, x = sg.var("A", (4, 4)), sg.var("b", (4,)), sg.var("x", (300, 4))
    M = A @ A.T + sg.eye(4)
    h, _ = sg.scan(lambda h, _: (sg.tanh(sg.solve(M, h) + b), None), b, length=5)
    f = sg.sum(sg.exp(x @ h) * sg.sin(x[:, 0])) + sg.log(sg.det(M))
    outs = [f, *sg.grad(f, [A, b, x])]
    fn = sg.compile(outs, backend="c")
    lib = fn.raw.__globals__["_C"]
    assert "sg_getrf" in fn.source and len(lib.libraries) == 3
    rng = np.random.default_rng(0)
    env = {"A": rng.normal(size=(4, 4)), "b": 0.3 * rng.normal(size=4),
           "x": 0.3 * rng.normal(size=(300, 4))}
    for got, ref in zip(fn(**env), sg.compile(outs)(**env)):
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13 * np.max(np.abs(ref)))
