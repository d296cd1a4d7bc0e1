"""One measurement cell, run in a fresh process: ``python -m benchmarks.cell SPEC_JSON``.

SPEC is ``{"workload": "w1_mlp", "config": "...", "system": "jax", "budget": 1.0}`` (or a
``"cfg"`` dict instead of a config name). The cell
records a speed probe, measures, and prints one line ``RESULT {json}`` on stdout. A library
that is not installed gives a row with a ``skipped`` note instead of an error.
"""

from __future__ import annotations

import importlib
import json
import sys
import time

from . import common


def run(spec: dict) -> dict:
    start = time.perf_counter()
    mod = importlib.import_module(f"benchmarks.{spec['workload']}")
    cfg = spec.get("cfg") or mod.CONFIGS[spec["config"]]
    system = spec["system"]
    result = {"spec": spec, "probe_s": common.speed_probe()}
    missing = common.available(system)
    if missing:
        result["rows"] = [{"system": system, "skipped": missing}]
    else:
        measure = getattr(mod, "measure", None)
        if measure is None:
            from . import gradcell

            result["rows"] = gradcell.measure(mod, cfg, system, spec.get("budget", 1.0))
        else:
            result["rows"] = measure(cfg, system, spec.get("budget", 1.0))
    result["probe_end_s"] = common.speed_probe()
    result["wall_s"] = time.perf_counter() - start
    return result


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    print("RESULT " + json.dumps(run(spec)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
