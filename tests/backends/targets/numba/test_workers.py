"""Compiling a Numba module's functions in worker processes: the same functions as one
process compiles, read by the parent from the disk cache the workers wrote."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba import workers

_COMPILE_PARALLEL = workers.compile_parallel
_MODULE = """@_jit((numba.float64,))
def _f_kernel(x):
    return np.dot(a, b)
@_jit((
    numba.float64,
))
def _sg_loop1_jit(c0):
    for _t in range(3):
        c0 = _sg_loop2_jit(c0)
    return c0
@_jit((numba.float64,))
def _sg_loop2_jit(c0):
    return c0 + 1.0
def _sg_loop1(c0):
    return _f_kernel(c0)
@_jit
def _sg_floordiv(a, b):
    return a // b
@_jit((numba.float64,))
def _f_kernel_1(x):
    return x
""".splitlines()


def test_groups_keep_a_loop_with_what_it_calls():
    assert workers.groups(_MODULE) == [["_f_kernel"], ["_sg_loop1_jit", "_sg_loop2_jit"],
                                       ["_f_kernel_1"]]


def test_each_group_is_compiled_by_the_process_claiming_it_first(tmp_path):
    group = {"_a": "0", "_b": "0", "_c": "1"}
    compiled = []

    def jit(*args, **kwargs):
        return lambda f: compiled.append(f.__name__) or f

    def named(name):
        f = lambda: None  # noqa: E731
        f.__name__ = name
        return f

    first, second = workers._only(jit, group, str(tmp_path)), \
        workers._only(jit, group, str(tmp_path))
    first("sig")(named("_a"))
    second("sig")(named("_b"))  # group 0 is the first's: the second leaves it
    second("sig")(named("_c"))
    first("sig")(named("_b"))
    first("sig")(named("_c"))
    assert compiled == ["_a", "_c", "_b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0", "1"]


def test_workers_respect_the_cores_and_the_setting(monkeypatch):
    monkeypatch.delenv("SYMGRAD_NUMBA_WORKERS", raising=False)
    monkeypatch.setattr(workers, "_cores", lambda idle=True: 1)
    assert workers.workers(5) == 0  # one core: the parent alone, as without workers
    monkeypatch.setattr(workers, "_cores", lambda idle=True: 4 if not idle else 3)
    assert workers.workers(5) == 3 and workers.workers(1) == 0
    monkeypatch.setenv("SYMGRAD_NUMBA_WORKERS", "2")
    assert workers.workers(5) == 2
    monkeypatch.setenv("SYMGRAD_NUMBA_WORKERS", "8")
    assert workers.workers(5) == 4  # at most one per core
    monkeypatch.setenv("SYMGRAD_NUMBA_WORKERS", "1")
    assert workers.workers(5) == 0


def test_a_busy_machine_counts_as_fewer_cores(monkeypatch):
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(4)))
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert workers._cores() == 4  # only this process runs: every core idle
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (3.0, 1.0, 1.0))
    assert workers._cores() == 2
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (12.0, 1.0, 1.0))
    assert workers._cores() == 1 and workers._cores(idle=False) == 4
    monkeypatch.delenv("SYMGRAD_NUMBA_WORKERS", raising=False)
    assert workers.workers(5) == 0


def _model():
    """A gradient whose module has a compiled scan and several kernels."""
    W, x = sg.var("W", (6, 6)), sg.var("x", (6,))
    c, _ = sg.scan(lambda c, _: (sg.tanh(W @ c) + x, None), x, length=5)
    f = sg.sum(sg.exp(c) * x) + sg.sum(sg.sin(W) ** 2)
    return [f, *sg.grad(f, [W, x])], [W, x]


def _build(monkeypatch, tmp_path, processes: int):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SYMGRAD_NUMBA_WORKERS", str(processes))
    ran = []

    def spy(*args, **kwargs):
        ran.append(_COMPILE_PARALLEL(*args, **kwargs))
        return ran[-1]

    monkeypatch.setattr(workers, "compile_parallel", spy)
    outs, ins = _model()
    fn = sg.compile(outs, ins, backend="numba")
    return fn, ran


def _dispatchers(fn) -> dict:
    space = fn.raw.__globals__
    return {k: v for k, v in space.items() if isinstance(v, numba.core.dispatcher.Dispatcher)}


def test_a_parallel_build_equals_one_process(monkeypatch, tmp_path):
    monkeypatch.setattr(workers, "PARALLEL_LINES", 0)
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(6, 6)) * 0.3, rng.normal(size=6))
    one, ran_one = _build(monkeypatch, tmp_path / "one", 1)
    two, ran_two = _build(monkeypatch, tmp_path / "two", 2)
    assert ran_one == [0] and ran_two == [2]  # a worker and the parent compiled
    assert one.source == two.source
    assert sorted(_dispatchers(one)) == sorted(_dispatchers(two))
    ref = sg.compile(*_model(), backend="numpy")(*args)
    for a, b, r in zip(one(*args), two(*args), ref):
        assert np.array_equal(a, b)
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)
    found = _dispatchers(two)
    assert len(found) >= 3
    for name, d in found.items():  # every function read from the cache, none compiled
        assert d.stats.cache_hits and not d.stats.cache_misses, name


def test_the_parent_reads_what_a_worker_wrote(monkeypatch, tmp_path):
    """With the parent claiming nothing, the worker compiles every function, and the
    parent then reads each one from the cache the worker wrote; the worker imports nothing
    from the folder the parent runs in."""
    monkeypatch.setattr(workers, "PARALLEL_LINES", 0)
    monkeypatch.setattr(workers, "run_share", lambda *args: None)
    here = tmp_path / "here"
    here.mkdir()
    for planted in ("json.py", "numba.py", "types.py"):
        (here / planted).write_text("raise SystemExit(5)\n")
    monkeypatch.chdir(here)
    fn, ran = _build(monkeypatch, tmp_path / "cache", 2)
    assert ran == [2]
    found = _dispatchers(fn)
    assert len(found) >= 3
    for name, d in found.items():
        assert d.stats.cache_hits and not d.stats.cache_misses, name
    rng = np.random.default_rng(2)
    args = (rng.normal(size=(6, 6)) * 0.3, rng.normal(size=6))
    for a, r in zip(fn(*args), sg.compile(*_model(), backend="numpy")(*args)):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("failure", ["changed file", "stopped worker"])
def test_a_failed_worker_leaves_the_parent_to_compile(monkeypatch, tmp_path, failure):
    """A worker that refuses a file whose hash is not the parent's, or one the parent stops
    for taking too long, writes nothing: the parent compiles that share itself."""
    monkeypatch.setattr(workers, "_cores", lambda idle=True: 2)
    monkeypatch.setattr(workers, "PARALLEL_LINES", 0)
    monkeypatch.setattr(workers, "run_share", lambda *args: None)  # the parent claims none
    if failure == "changed file":
        monkeypatch.setattr(workers, "compile_parallel",
                            lambda source, path, name, digest, opt:
                            _COMPILE_PARALLEL(source, path, name, "0" * 64, opt))
    else:
        monkeypatch.setattr(workers, "WAIT_FACTOR", 0.0)
        monkeypatch.setattr(workers, "WAIT_S", 0.0)  # the worker (Python and Numba still
        # starting) is stopped before it can write anything
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    outs, ins = _model()
    fn = sg.compile(outs, ins, backend="numba")
    misses = [n for n, d in _dispatchers(fn).items() if d.stats.cache_misses]
    assert misses  # the worker's: compiled by the parent when it ran the module
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(6, 6)) * 0.3, rng.normal(size=6))
    for a, r in zip(fn(*args), sg.compile(outs, ins, backend="numpy")(*args)):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
