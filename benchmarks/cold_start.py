"""Cold start: symgrad's first use against ``import numpy``, each in a fresh interpreter,
and ``symgrad --version`` against a bare interpreter.

``import symgrad`` alone is lazy (the first public name imports :mod:`symgrad.api`, the whole
compiler), so the figure that matters is ``import symgrad.api``. Each round starts
``python -X importtime -c "import numpy"`` and ``... "import symgrad.api"`` one after the
other and reads the cumulative import time of the top module (so the interpreter's own
start-up is not counted); the figure is the median of the paired
differences. Bytecode caching is on, as for any installed package (the variable
``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment; a first
untimed round fills the cache). Also records which heavy modules ``import symgrad``
pulls in (networkx and sympy must not be among them). The command's start-up is the
wall time of ``python -m symgrad --version`` less that of ``python -c pass``, paired.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

HEAVY = ("networkx", "sympy", "scipy", "hypothesis", "matplotlib", "dask", "distributed")


def _import_ms(module: str, env: dict) -> float:
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                         capture_output=True, text=True, env=env, check=True).stderr
    line = [ln for ln in err.splitlines() if ln.rstrip().endswith(f"| {module}")][-1]
    return int(line.split("|")[1]) / 1000


def _wall_ms(args: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], capture_output=True, env=env, check=True)
    return (time.perf_counter() - t0) * 1000


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for module in ("numpy", "symgrad.api"):
        _import_ms(module, env)  # fill the bytecode cache
    rounds = int(cfg.get("rounds", 15))
    numpy_ms, symgrad_ms, cli_extra = [], [], []
    for _ in range(rounds):
        numpy_ms.append(_import_ms("numpy", env))
        symgrad_ms.append(_import_ms("symgrad.api", env))
        bare = _wall_ms(["-c", "pass"], env)
        cli_extra.append(_wall_ms(["-m", "symgrad", "--version"], env) - bare)
    code = f"import sys, symgrad.api; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    heavy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True).stdout.strip()
    return [{"system": "symgrad", "task": "import", "numpy_ms": statistics.median(numpy_ms),
             "symgrad_ms": statistics.median(symgrad_ms),
             "extra_ms": statistics.median(b - a for a, b in zip(numpy_ms, symgrad_ms)),
             "cli_version_extra_ms": statistics.median(cli_extra),
             "heavy_modules": heavy, "samples": rounds}]


TITLE = "Cold start"
CONFIGS = {"import": {"rounds": 15}}
