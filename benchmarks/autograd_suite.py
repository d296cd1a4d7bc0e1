"""HIPS autograd's own test suite run through symgrad: how many of its cases pass.

``python -m benchmarks.autograd_suite AUTOGRAD_CHECKOUT [--out FILE]`` runs the checkout's
``tests/`` with :mod:`benchmarks.autograd_shim` (autograd's operators on ``symgrad.vjp`` and
``symgrad.jvp``, ``autograd.numpy`` as ``symgrad.numpy``) in a fresh process, and prints the
counts: cases (one per top-level ``check_grads`` call, one per test without one), passes,
and the failures by exception class and by test file. autograd is not one of symgrad's
dependencies: the checkout (a git clone of github.com/HIPS/autograd, which holds its tests)
is put on the path of that process only.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(checkout: Path, out: Path) -> int:
    """The suite in a subprocess; its per-test outcomes in ``out`` (JSON)."""
    env = {**os.environ, "AG_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(checkout)])}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
           f"--rootdir={checkout}", "-p", "benchmarks.autograd_shim", str(checkout / "tests")]
    # run from symgrad's root: the checkout has a `benchmarks` package of its own
    return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode


def summary(results: dict) -> str:
    """Counts of cases, passes and failures (by exception class and by file)."""
    cases = [k for v in results.values() for k in v["cases"]]
    kinds = collections.Counter(k for k in cases if k != "pass")
    files: collections.Counter = collections.Counter()
    complex_ = 0
    for nid, v in results.items():
        bad = sum(k != "pass" for k in v["cases"])
        files[nid.split("::")[0]] += bad
        if bad and any("complex" in m for m in v["msgs"]):
            complex_ += bad
    lines = [f"{len(results)} tests, {len(cases)} cases: {cases.count('pass')} pass, "
             f"{len(cases) - cases.count('pass')} fail ({complex_} of them on complex "
             f"numbers)",
             "failures by exception: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()),
             "failures by file: " + ", ".join(f"{Path(k).name} {n}"
                                              for k, n in files.most_common() if n)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a clone of github.com/HIPS/autograd")
    parser.add_argument("--out", type=Path, default=None, help="per-test outcomes (JSON)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp()) / "autograd_suite.json"
    code = run(args.checkout.resolve(), out)
    if not out.exists():
        raise SystemExit(f"the suite wrote no results (pytest exited with {code}); is "
                         f"{args.checkout} a clone of github.com/HIPS/autograd?")
    print(summary(json.loads(out.read_text())))


if __name__ == "__main__":
    main()
