"""Compiling a ``backend="numba"`` module's functions in parallel worker processes.

A module's compiled functions are independent (a loop's function and the functions it
calls aside), and Numba compiles one at a time under a global lock, so a cold build is
the sum of their compile times. :func:`compile_parallel` splits the module's eagerly
compiled functions (``@_jit((signature))``) into groups — a function with the functions
it calls — one per idle core this process may run on, balanced by their length in lines; the
parent compiles the first group and worker processes the others meanwhile. Each runs
the module's text (a worker: the file :func:`.source.load` wrote, checked against its
SHA-256) compiling only its own group, and Numba writes those functions to its disk
cache; the parent then runs the module as always and reads every function from that
cache. Numba keys a cache entry by the file, the function's bytecode and signature and
the machine, so a worker's entry is exactly the one the parent would have written.

Nothing here decides a result: a worker that fails (or leaves a function out) leaves
the parent to compile what is missing itself, as without workers. With one core, one
group, a small module (:data:`PARALLEL_LINES`), or ``SYMGRAD_NUMBA_WORKERS=1`` (``0``
likewise) the parent compiles everything itself, as before; ``SYMGRAD_NUMBA_WORKERS=N``
sets the processes to ``N`` (at most one per core, whatever the machine's load).

>>> plan = groups(["@_jit((numba.float64,))", "def _a(x):", "    return x",
...                "@_jit((numba.float64,))", "def _b(x):", "    return _a(x) + 1"], 2)
>>> plan
[['_a', '_b']]
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

__all__ = ["compile_parallel", "groups", "workers"]

JIT_LINE = "_jit = functools.partial(numba.njit, cache=True, nogil=True, error_model='numpy')"
# The cost model balancing the groups, in lines of a function's body: each function costs
# Numba about as much as this many lines more (its pipeline, its LLVM module), and a worker
# starting (Python, Numba's import and first compile, the library functions it compiles
# again) as much as this many lines; a call of NumPy's (other than an allocation: Numba
# compiles its implementation for the call's types) as much as this many.
FUNCTION_LINES, WORKER_LINES, CALL_LINES = 12, 150, 10
# How long the parent waits for its workers once its own share is compiled: this many
# times that share's time, plus this many seconds (then a worker is stopped, and what it
# did not write the parent compiles itself).
WAIT_FACTOR, WAIT_S = 10.0, 60.0
# A module costing less than this (:func:`_cost` of all its lines) compiles in one process:
# a worker would not pay for its start.
PARALLEL_LINES = 4 * WORKER_LINES
_CALL = re.compile(r"\bnp\.(?!empty\(|zeros\()[\w.]+\((?!_)")  # not of a loop's scalar
_DEF = re.compile(r"def (\w+)\(")
_NAME = re.compile(r"\b\w+\b")

def _only(jit: Any, wanted: set[str]) -> Any:
    """``_jit`` compiling only the functions named in ``wanted``: the others stay Python
    functions, and a bare ``@_jit`` helper a lazy Numba function (compiled where a chosen
    function calls it)."""
    def pick(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return jit(args[0])
        return lambda f: jit(*args, **kwargs)(f) if f.__name__ in wanted else f
    return pick


def run_share(text: str, path: str, name: str, wanted: set[str]) -> None:
    """Run module ``text`` (file ``path``, module ``name``) compiling only ``wanted``: Numba
    writes them to its disk cache. The module is thrown away; the caller runs it again."""
    if text.count(JIT_LINE) != 1:
        return
    text = text.replace(JIT_LINE, f"_jit = _sg_only({JIT_LINE[len('_jit = '):]}, _sg_wanted)", 1)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__dict__.update(_sg_only=_only, _sg_wanted=wanted)
    before = sys.modules.get(name)
    sys.modules[name] = module  # Numba's cache records the module by its name
    try:
        exec(compile(text, path, "exec"), module.__dict__)  # our own generated text
    finally:
        if before is not None:
            sys.modules[name] = before


# The worker: our own fixed program (run with ``python -c``; symgrad is not imported). It
# reads the module file, refuses it unless its SHA-256 is the parent's, and runs it with
# :func:`run_share`.
_WORKER = "\n".join([
    "import functools, hashlib, sys, types",
    "from typing import Any",
    "path, name, digest, opt, *wanted = sys.argv[1:]",
    "with open(path, 'rb') as fh:",
    "    data = fh.read()",
    "if hashlib.sha256(data).hexdigest() != digest:",
    "    sys.exit(3)",
    "import numba",
    "if opt:",
    "    numba.config.OPT = numba.core.config._OptLevel(int(opt))",
    f"JIT_LINE = {JIT_LINE!r}",
    inspect.getsource(_only), inspect.getsource(run_share),
    "run_share(data.decode(), path, name, set(wanted))", ""])


def _cores(idle: bool = True) -> int:
    """The cores this process may run on; ``idle``: those idle, their count less the
    system's load (its last minute's average, this process counted as idle), at least 1.
    On a machine other work keeps busy a worker would only take time from the parent."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = max(0.0, os.getloadavg()[0] - 1.0) if idle else 0.0
    except (AttributeError, OSError):
        busy = 0.0
    return max(1, min(cores, int(cores - busy + 0.5)))


def workers(count: int) -> int:
    """How many processes (the parent one of them) compile ``count`` groups: one per idle
    core this process may run on (:func:`_cores`), or ``$SYMGRAD_NUMBA_WORKERS`` where set
    (at most one per core, busy or not); 0 where fewer than two would run (the parent
    compiles alone)."""
    given = os.environ.get("SYMGRAD_NUMBA_WORKERS", "").strip()
    cores = min(_cores(idle=False), int(given)) if given.isdigit() else _cores()
    n = min(cores, count)
    return n if n >= 2 else 0


def groups(lines: list[str], n: int) -> list[list[str]]:
    """The eagerly compiled functions of module ``lines`` in at most ``n`` groups (each in
    text order), a function and the compiled functions it calls in the same group,
    balanced by their length in lines (longest first onto the lightest group; the first
    group is the parent's, which starts no process: :data:`WORKER_LINES`)."""
    funcs: dict[str, list[str]] = {}
    current: list[str] | None = None
    eager = False
    for line in lines:
        if line.startswith("@_jit("):
            eager = True
            continue
        m = _DEF.match(line)
        if m is not None:
            current = funcs.setdefault(m.group(1), []) if eager else None
            eager = False
        elif current is not None and (line.startswith(" ") or not line):
            current.append(line)
        elif line.startswith("@"):
            continue
        else:
            current = None
    order = list(funcs)
    parent = {f: f for f in order}

    def root(f: str) -> str:
        while parent[f] != f:
            parent[f] = parent[parent[f]]
            f = parent[f]
        return f

    for f, body in funcs.items():
        for used in set(_NAME.findall("\n".join(body))) & funcs.keys():
            parent[root(used)] = root(f)
    units: dict[str, list[str]] = {}
    for f in order:
        units.setdefault(root(f), []).append(f)
    size = {r: sum(_cost(funcs[f]) for f in fs) for r, fs in units.items()}
    bins: list[list[str]] = [[] for _ in range(max(1, min(n, len(units))))]
    load = [0] + [WORKER_LINES] * (len(bins) - 1)  # the first group is the parent's
    for r in sorted(units, key=lambda r: -size[r]):
        k = load.index(min(load))
        bins[k] += units[r]
        load[k] += size[r]
    rank = {f: i for i, f in enumerate(order)}
    return [sorted(b, key=rank.__getitem__) for b in bins if b]


def _cost(body: list[str]) -> int:
    """A function's compile cost in lines (:data:`FUNCTION_LINES`, :data:`CALL_LINES`)."""
    calls = sum(len(_CALL.findall(line)) for line in body)
    return len(body) + FUNCTION_LINES + CALL_LINES * calls


def compile_parallel(source: str, path: Path, name: str, digest: str,
                     opt: int | None) -> int:
    """Compile ``source`` (written at ``path``, SHA-256 ``digest``; run as module
    ``name``) in worker processes that write Numba's disk cache, where more than one
    would run (:func:`workers`); LLVM at level ``opt`` (None: Numba's own). Returns how
    many processes compiled, the parent's share counted (0: the parent compiles
    everything itself when it runs the module). The caller holds Numba's compiler lock
    and LLVM's level for the parent's share (:func:`.source.load`)."""
    if JIT_LINE not in source or not sys.executable or getattr(sys, "frozen", False):
        return 0  # (no Python to start a worker with: the parent compiles alone)
    lines = source.splitlines()
    n = workers(sum(1 for line in lines if line.startswith("@_jit(")))
    if not n or _cost(lines) < PARALLEL_LINES:
        return 0
    plan = groups(lines, n)
    if len(plan) < 2:
        return 0
    head = [sys.executable, "-c", _WORKER, str(path), name, digest,
            "" if opt is None else str(opt)]
    procs = []
    for chosen in plan[1:]:
        try:
            procs.append(subprocess.Popen([*head, *chosen], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        except OSError:  # no process to be had: the parent compiles what is left
            break
    start = time.perf_counter()
    try:
        run_share(source, str(path), name, set(plan[0]))  # the parent's own share
    finally:
        limit = time.perf_counter() + WAIT_FACTOR * (time.perf_counter() - start) + WAIT_S
        for p in procs:
            try:
                p.wait(timeout=max(0.0, limit - time.perf_counter()))
            except subprocess.TimeoutExpired:  # stuck: the parent compiles its share
                p.kill()
                p.wait()
    return len(procs) + 1
