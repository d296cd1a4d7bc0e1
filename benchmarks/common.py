"""Shared harness pieces: the cell environment, timing, error metric, speed probe, library loading.

Timing rules (see the issue's measurement pitfalls): one thread per library (and every
thread of the process on one CPU while it is timed, :func:`one_core`: XLA's CPU client
ignores the thread flags for its dots and ran them on two cores), warm-up calls
before timing, calls batched so one sample lasts at least ``MIN_SAMPLE`` seconds (tiny
functions are otherwise dominated by the timer), functions that are compared measured
*interleaved* in one loop so that drift of the machine's speed hits all of them alike, and
medians (of times, and of per-iteration ratios for paired comparisons).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Set before Python starts in every cell process (glibc reads them at start-up only).
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "268435456"}
#: One thread for every library; JAX in float64 on the CPU.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_ENABLE_X64": "1",
    "JAX_PLATFORMS": "cpu",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}
SYSTEMS = ("symgrad", "jax", "torch", "autograd")
MIN_SAMPLE = 2e-3


def cell_env() -> dict[str, str]:
    """The environment a cell process is started with."""
    env = dict(os.environ)
    env.update(THREAD_ENV)
    env.update(MALLOC_ENV)
    return env


def _threads_env() -> bool:
    """Whether this process runs with :data:`THREAD_ENV`'s thread counts."""
    return all(os.environ.get(k) == v for k, v in THREAD_ENV.items() if k.endswith("THREADS"))


def with_thread_env(module: str) -> None:
    """Start ``python -m module`` again, same arguments, with :func:`cell_env` unless this
    process has :data:`THREAD_ENV` already: BLAS, Numba and XLA read their variables when
    they load (setting them later does nothing), and a BLAS pool of several threads on
    :func:`one_core`'s one CPU would spin against itself."""
    if all(os.environ.get(k) == v for k, v in THREAD_ENV.items()):
        return
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], cell_env())


def load(system: str) -> Any:
    """Import and configure one library (float64, one thread); raise ImportError if absent."""
    if system == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        return jax
    if system == "torch":
        import torch

        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set in this process
            pass
        torch.set_default_dtype(torch.float64)
        return torch
    if system == "autograd":
        import autograd

        return autograd
    if system == "symgrad":
        import symgrad

        return symgrad
    if system == "sympy":
        import sympy

        return sympy
    if system == "array_api":  # symgrad's array API backend on NumPy arrays
        import array_api_compat

        return array_api_compat
    raise ValueError(f"unknown system {system!r}")


def available(system: str) -> str | None:
    """None if ``system`` imports, else a one-line note saying why it is skipped."""
    try:
        load(system)
    except ImportError as exc:
        return f"{system} not installed ({exc})"
    return None


def calibrate(fn: Callable[[], Any], min_sample: float = MIN_SAMPLE) -> int:
    """How many calls of ``fn`` make one sample of at least ``min_sample`` seconds."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_sample or number >= 1 << 20:
            return number
        number = max(number * 2, int(number * min_sample / max(dt, 1e-9)) + 1)


def interleaved(
    fns: Sequence[Callable[[], Any]],
    budget: float = 1.0,
    min_samples: int = 5,
    max_samples: int = 41,
    warmup: int = 2,
) -> list[np.ndarray]:
    """Per-call times (seconds) of each of ``fns``, sampled in turn in one loop.

    Sample ``i`` of every function is taken in the same iteration, so ratios of aligned
    samples are paired measurements. The iterations run the functions in the orders of
    :func:`balanced_orders`, in which every function follows every other equally often: a
    call after one that evicted the caches, such as XLA's, is not always the same
    system's (a rotation of one order is not enough: the successor of each function stays
    the same, and the one after JAX ran 6% slower in every sample). Stops after
    ``budget`` seconds (at least ``min_samples`` samples each). Every thread of the
    process runs on one CPU meanwhile (:func:`one_core`).
    """
    with one_core():
        return _interleaved(fns, budget, min_samples, max_samples, warmup)


def _interleaved(fns: Sequence[Callable[[], Any]], budget: float, min_samples: int,
                 max_samples: int, warmup: int) -> list[np.ndarray]:
    for fn in fns:
        for _ in range(warmup):
            fn()
    numbers = [calibrate(fn) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    orders = balanced_orders(len(fns))
    while True:
        for j in orders[len(samples[0]) % len(orders)]:
            t0 = time.perf_counter()
            for _ in range(numbers[j]):
                fns[j]()
            samples[j].append((time.perf_counter() - t0) / numbers[j])
        count = len(samples[0])
        if count >= max_samples or (
            count >= min_samples and time.perf_counter() - start > budget
        ):
            return [np.asarray(s) for s in samples]


def balanced_orders(k: int) -> list[list[int]]:
    """Orders of ``range(k)`` in which each ordered pair of different items is adjacent
    equally often: Williams' Latin square (``k`` orders for even ``k``; for odd ``k`` the
    ``2k`` of it and of its reverses), balanced for the effect of the one before.

    >>> balanced_orders(4)
    [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    """
    base = [0] + [(j + 1) // 2 if j % 2 else k - j // 2 for j in range(1, k)]
    orders = [[(b + i) % k for b in base] for i in range(k)]
    return orders if k % 2 == 0 else orders + [order[::-1] for order in orders]


def _threads() -> list[int]:
    """This process's thread ids (Linux), or ``[0]`` (the calling thread) elsewhere."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _pin(cpus: set[int]) -> None:
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # the thread ended meanwhile
            pass


@contextmanager
def one_core() -> Iterator[int | None]:
    """Every thread of this process on one CPU while the block runs (threads started in
    it inherit the CPU); the CPU's number, or None where the system cannot pin threads.

    Only in a process started with :data:`THREAD_ENV`'s thread counts (else None: see
    :func:`with_thread_env`). A library's own thread pool is then one core's worth of work
    whatever its flags say:
    JAX 0.10 on two cores ran a 128x784 by 784x256 dot at 1.8x a core's CPU time with
    ``--xla_cpu_multi_thread_eigen=false``, and at one core's speed (NumPy's) pinned.
    """
    if not hasattr(os, "sched_setaffinity") or not _threads_env():
        yield None  # (a BLAS pool of several threads on one CPU spins against itself)
        return
    mask = os.sched_getaffinity(0)
    cpu = max(mask)
    _pin({cpu})
    try:
        yield cpu
    finally:
        _pin(mask)


def median(samples: np.ndarray) -> float:
    return float(np.median(samples))


def paired_ratio(num: np.ndarray, den: np.ndarray) -> float:
    """Median of per-iteration ratios ``num[i] / den[i]``."""
    return float(np.median(num / den))


def once(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall time of a single call, and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def rel_err(got: Any, ref: Any) -> float:
    """Max over arrays of ``max|got - ref| / max|ref|`` (normwise; robust to zero entries)."""
    if isinstance(ref, (list, tuple)):
        if len(got) != len(ref):
            return float("inf")
        return max((rel_err(g, r) for g, r in zip(got, ref)), default=0.0)
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        return float("inf")
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    diff = float(np.max(np.abs(g - r))) if r.size else 0.0
    return diff / scale if scale > 0 else diff


def speed_probe(size: int = 256, repeats: int = 21) -> float:
    """Median seconds of a fixed float64 ``size x size`` NumPy matmul (machine drift marker)."""
    a = np.random.default_rng(0).standard_normal((size, size))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def fd_grad(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of scalar ``f`` at float64 array ``x`` (for the smoke tests)."""
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    flat, gflat = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        h = eps * max(1.0, abs(old))
        flat[i] = old + h
        fp = f(x)
        flat[i] = old - h
        fm = f(x)
        flat[i] = old
        gflat[i] = (fp - fm) / (2 * h)
    return out
