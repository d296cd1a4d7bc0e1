"""Compiling a ``backend="numba"`` module's functions in parallel worker processes.

A module's compiled functions are independent (a loop's function and the functions it
calls aside), and Numba compiles one at a time under a global lock, so a cold build is
the sum of their compile times. :func:`compile_parallel` splits the module's eagerly
compiled functions (``@_jit((signature))``) into groups — a function with the functions
it calls — and runs the module's text (a worker: the file :func:`.source.load` wrote,
checked against its SHA-256) in the parent and in worker processes, one per idle core
this process may run on. Each process goes through the functions in text order and
compiles a group only where it claims it first (creating the group's file in a private
folder: whoever is free takes the next group), and Numba writes what it compiles to its
disk cache; the parent then runs the module as always and reads every function from that
cache. Numba keys a cache entry by the file, the function's bytecode and signature and
the machine, so a worker's entry is exactly the one the parent would have written.

Nothing here decides a result: a worker that fails (or leaves a function out) leaves
the parent to compile what is missing itself, as without workers. With one core, one
group, a small module (:data:`PARALLEL_LINES`), or ``SYMGRAD_NUMBA_WORKERS=1`` (``0``
likewise) the parent compiles everything itself, as before; ``SYMGRAD_NUMBA_WORKERS=N``
sets the processes to ``N`` (at most one per core, whatever the machine's load).

>>> groups(["@_jit((numba.float64,))", "def _a(x):", "    return x",
...         "@_jit((numba.float64,))", "def _b(x):", "    return _a(x) + 1",
...         "@_jit((numba.float64,))", "def _c(x):", "    return x"])
[['_a', '_b'], ['_c']]
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

__all__ = ["compile_parallel", "groups", "workers"]

JIT_LINE = "_jit = functools.partial(numba.njit, cache=True, nogil=True, error_model='numpy')"
# How long the parent waits for its workers once it has compiled what it claimed: this
# many times that time, plus this many seconds (then a worker is stopped, and what it did
# not write the parent compiles itself).
WAIT_FACTOR, WAIT_S = 10.0, 60.0
# A module costing less than this many lines (its lines, and for each NumPy call other
# than an allocation ten more: Numba compiles its implementation for the call's types)
# compiles in one process: a worker (Python, Numba's import and first compile, the library
# functions it compiles again: about the cost of 150 lines) would not pay for its start.
PARALLEL_LINES = 400
_CALL = re.compile(r"\bnp\.(?!empty\(|zeros\()[\w.]+\((?!_)")  # not of a loop's scalar
_DEF = re.compile(r"def (\w+)\(")
_NAME = re.compile(r"\b\w+\b")

def _only(jit: Any, group: dict[str, str], claims: str) -> Any:
    """``_jit`` compiling only the functions whose group (``group``: function -> group)
    this process claims first: it claims a group by creating the file of that name in
    folder ``claims`` (the first process to create it has it). The others stay Python
    functions; a bare ``@_jit`` helper stays a lazy Numba function (compiled where a
    claimed function calls it)."""
    mine: set[str] = set()

    def claimed(f: Any) -> bool:
        g = group.get(f.__name__)
        if g is None or g in mine:
            return g is not None
        try:
            os.close(os.open(os.path.join(claims, g), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        mine.add(g)
        return True

    def pick(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return jit(args[0])
        return lambda f: jit(*args, **kwargs)(f) if claimed(f) else f
    return pick


def run_share(text: str, path: str, name: str, group: dict[str, str], claims: str) -> None:
    """Run module ``text`` (file ``path``, module ``name``) compiling the groups it claims
    (:func:`_only`): Numba writes them to its disk cache. The module is thrown away; the
    caller runs it again."""
    if text.count(JIT_LINE) != 1:
        return
    rest = JIT_LINE[len("_jit = "):]
    text = text.replace(JIT_LINE, f"_jit = _sg_only({rest}, _sg_group, _sg_claims)", 1)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__dict__.update(_sg_only=_only, _sg_group=group, _sg_claims=claims)
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
    "import functools, hashlib, json, os, sys, types",
    "from typing import Any",
    "path, name, digest, opt, group, claims = sys.argv[1:]",
    "with open(path, 'rb') as fh:",
    "    data = fh.read()",
    "if hashlib.sha256(data).hexdigest() != digest:",
    "    sys.exit(3)",
    "import numba",
    "if opt:",
    "    numba.config.OPT = numba.core.config._OptLevel(int(opt))",
    f"JIT_LINE = {JIT_LINE!r}",
    inspect.getsource(_only), inspect.getsource(run_share),
    "run_share(data.decode(), path, name, json.loads(group), claims)", ""])


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


def groups(lines: list[str]) -> list[list[str]]:
    """The eagerly compiled functions (``@_jit((signature))``) of module ``lines`` in
    groups, a function with the compiled functions it calls (each group in text order,
    the groups in the order of their first function)."""
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
        elif not line.startswith("@"):
            current = None
    parent = {f: f for f in funcs}

    def root(f: str) -> str:
        while parent[f] != f:
            parent[f] = parent[parent[f]]
            f = parent[f]
        return f

    for f, body in funcs.items():
        for used in set(_NAME.findall("\n".join(body))) & funcs.keys():
            parent[root(used)] = root(f)
    units: dict[str, list[str]] = {}
    for f in funcs:
        units.setdefault(root(f), []).append(f)
    return list(units.values())


def _cost(lines: list[str]) -> int:
    """A module's compile cost in lines (:data:`PARALLEL_LINES`)."""
    return len(lines) + 10 * sum(len(_CALL.findall(line)) for line in lines)


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
    plan = groups(lines)
    n = workers(len(plan))
    if not n or _cost(lines) < PARALLEL_LINES:
        return 0
    group = {f: str(k) for k, fs in enumerate(plan) for f in fs}
    with tempfile.TemporaryDirectory(prefix="sg-numba-claims-") as claims:
        head = [sys.executable, "-c", _WORKER, str(path), name, digest,
                "" if opt is None else str(opt), json.dumps(group), claims]
        procs = []
        for _ in range(n - 1):
            try:
                # run in the cache folder: ``-c`` puts the working folder first on the
                # path, and only symgrad's own modules are there
                procs.append(subprocess.Popen(head, cwd=Path(path).parent,
                                              stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
            except OSError:  # no process to be had: the parent compiles what is left
                break
        start = time.perf_counter()
        try:
            run_share(source, str(path), name, group, claims)  # the parent claims too
        finally:
            limit = time.perf_counter() + WAIT_FACTOR * (time.perf_counter() - start) + WAIT_S
            for p in procs:
                try:
                    p.wait(timeout=max(0.0, limit - time.perf_counter()))
                except subprocess.TimeoutExpired:  # stuck: the parent compiles its share
                    p.kill()
                    p.wait()
    return len(procs) + 1
