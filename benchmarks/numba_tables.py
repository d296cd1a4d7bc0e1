"""The printed tables of :mod:`.numba_backend`'s results (Markdown): run times, ratios,
builds, the compiled targets' goals (met / not met / failed) and what stayed NumPy, worst first.

>>> rec = {"row": "w3_rosenbrock", "label": "W3", "spelling": "ours", "family": "w3",
...        "systems": {"numba": {"median_s": 8e-6, "min_s": 7e-6, "max_s": 9e-6,
...                              "build_s": 1.0}},
...        "ratios": {"hand": {"median": 0.5, "min": 0.4, "max": 0.7}}, "targets": []}
>>> one_line(rec)
'  w3_rosenbrock: numba 8 us; / hand 0.50x; build 1.0 s'
"""

from __future__ import annotations

SYSTEM_NAMES = {"numba": "symgrad-numba", "c": "symgrad-C", "numpy": "symgrad NumPy backend",
                "hand": "hand NumPy", "jax": "jax.jit(grad)", "pytensor": "PyTensor-numba",
                "casadi": "CasADi"}
ORDER = ("numba", "c", "numpy", "hand", "jax", "pytensor", "casadi")
COMPILED = ("numba", "c")
THREADS_FLAG = 1.3  # CPU time over wall time above which a cell says it used threads


def seconds(t: float | None) -> str:
    """A duration for a table cell."""
    if t is None:
        return "-"
    if t >= 1.0:
        return f"{t:.1f} s"
    if t >= 1e-4:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def _ratio(r: dict | None, spread: bool = True) -> str:
    if not r:
        return "-"
    text = f"{r['median']:.2f}x"
    return f"{text} [{r['min']:.2f}-{r['max']:.2f}]" if spread else text


def _cell(entry: dict | None) -> str:
    """A system's run time cell: median [min-max], or why there is none."""
    if not entry:
        return "-"
    if "median_s" in entry:
        threads = entry.get("cpu_over_wall", 0.0)
        flag = f" (CPU/wall {threads:.1f})" if threads > THREADS_FLAG else ""
        return f"{seconds(entry['median_s'])} [{seconds(entry['min_s'])}-" \
               f"{seconds(entry['max_s'])}]{flag}"
    if "skipped" in entry:
        return "skipped"
    if "error" in entry:
        return "FAILED"
    return "-"


def _ratios_of(rec: dict, target: str) -> dict:
    return rec.get("ratios" if target == "numba" else f"ratios_{target}", {})


def one_line(rec: dict) -> str:
    """A progress line for one row."""
    parts = []
    for target in (t for t in COMPILED if t in rec["systems"]):
        mine = rec["systems"][target]
        parts.append(f"{target} {seconds(mine.get('median_s'))}" if "median_s" in mine
                     else f"{target} FAILED ({mine.get('error', '?')})")
        parts += [f"/ {k} {_ratio(v, False)}" for k, v in _ratios_of(rec, target).items()
                  if k not in ("fastest_peer", *COMPILED)]
        if "build_s" in mine:
            parts.append(f"build {seconds(mine['build_s'])}")
    return f"  {rec['row']}: " + "; ".join(parts)


def _name(rec: dict) -> list[str]:
    return [rec["label"], rec["spelling"]]


def _table(caption: str, columns: list[str], rows: list[list[str]]) -> dict:
    return {"caption": caption, "columns": columns, "rows": rows}


def tables(results: dict) -> list[dict]:
    """The tables (``caption``, ``columns``, ``rows`` of strings) of the results."""
    rows = results["rows"]
    shown = [s for s in ORDER if any(s in r["systems"] for r in rows)]
    compiled = [t for t in COMPILED if t in shown]
    return [
        _table("Run time per gradient: median [min-max]",
               ["workload", "spelling", *(SYSTEM_NAMES[s] for s in shown)],
               [[*_name(r), *(_cell(r["systems"].get(s)) for s in shown)] for r in rows]),
        *(_table(f"{SYSTEM_NAMES[t]}'s time over each system's: paired median [min-max]",
                 ["workload", "spelling", "fastest peer", "/ fastest peer", "/ hand NumPy",
                  "/ JAX", "/ PyTensor", "/ CasADi", "/ NumPy backend",
                  *(f"/ {SYSTEM_NAMES[o]}" for o in compiled if o != t)],
                 [_ratios(r, t, [o for o in compiled if o != t]) for r in rows])
          for t in compiled),
        _table("Builds (cold: empty disk caches; Numba, the C compiler, JAX, PyTensor warmed "
               "up first)",
               ["workload", "spelling", "symgrad-numba cold", "warm", "of it Numba's compile",
                "symgrad-C cold", "warm", "NumPy backend", "JAX cold jit",
                "PyTensor-numba cold", "CasADi", "numba / JAX", "C / JAX"],
               [_builds(r) for r in rows]),
        _table("The compiled targets' goals (paired medians)",
               ["workload", "spelling", "compiled target", "target", "limit", "measured",
                "status"],
               [[*_name(r), *_target(t)] for r in rows for t in r.get("targets", [])]),
    ]


def _ratios(rec: dict, target: str, others: list[str]) -> list[str]:
    rt = _ratios_of(rec, target)
    fastest = rt.get("fastest_peer", {}).get("peer", "-")
    return [*_name(rec), SYSTEM_NAMES.get(fastest, fastest),
            *(_ratio(rt.get(k)) for k in ("fastest_peer", "hand", "jax", "pytensor", "casadi",
                                          "numpy", *others))]


def _build(entry: dict | None, key: str = "build_s") -> str:
    if not entry:
        return "-"
    if "skipped" in entry:
        return "skipped"
    if key == "build_s" and "error" in entry and key not in entry:
        return "FAILED"
    return seconds(entry.get(key))


def _builds(rec: dict) -> list[str]:
    s = rec["systems"]
    nb, c, jx = s.get("numba", {}), s.get("c", {}), s.get("jax", {})
    native = nb.get("build_seconds", {}).get("native compile")

    def over_jax(mine: dict) -> str:
        return f"{mine['build_s'] / jx['build_s']:.2f}x" \
            if "build_s" in mine and "build_s" in jx else "-"

    return [*_name(rec), _build(nb), _build(nb, "warm_build_s"), seconds(native),
            _build(c), _build(c, "warm_build_s"), _build(s.get("numpy")), _build(jx),
            _build(s.get("pytensor")), _build(s.get("casadi")), over_jax(nb), over_jax(c)]


def _target(t: dict) -> list[str]:
    measured = f"{t['measured']:.2f}x" if t["measured"] is not None else "-"
    status = t["status"] if t["status"] != "failed" else f"failed ({t['why']})"
    system = SYSTEM_NAMES.get(t.get("system", "numba"), "-")
    return [system, t["target"], f"<= {t['limit']:.1f}x", measured, status]


def goal_summary(rows: list[dict]) -> list[str]:
    """The goals' counts per compiled target, and how many goals (a row's target, such as
    run time / JAX) at least one compiled target meets."""
    counts: dict[str, dict[str, int]] = {}
    either: dict[tuple[str, str], bool] = {}
    for r in rows:
        for t in r.get("targets", []):
            system = t.get("system", "numba")
            per = counts.setdefault(system, {})
            per[t["status"]] = per.get(t["status"], 0) + 1
            key = (r["row"], t["target"])
            either[key] = either.get(key, False) or t["status"] == "met"
    out = [f"Targets, {SYSTEM_NAMES[s]}: " + ", ".join(f"{n} {k}" for k, n in
                                                      sorted(per.items()))
           for s, per in counts.items()]
    if len(counts) > 1:
        out.append(f"Goals met by at least one compiled target: {sum(either.values())} of "
                   f"{len(either)}")
    return out


def _markdown(table: dict) -> list[str]:
    return ["", f"## {table['caption']}", "", "| " + " | ".join(table["columns"]) + " |",
            "|" + "---|" * len(table["columns"]),
            *("| " + " | ".join(row) + " |" for row in table["rows"])]


def header(results: dict) -> str:
    """One paragraph: command, machine, load, versions."""
    m = results["machine"]
    quick = " (quick: smoke sizes)" if results["quick"] else ""
    return (f"`{results['command'].strip()}`{quick}; {m['cpu']}, {m['cores']} cores, load "
            f"average {m['loadavg_start'][0]:.1f} at the start, {m['loadavg_end'][0]:.1f} at "
            f"the end; speed probe {seconds(m['probe_start_s'])} / "
            f"{seconds(m['probe_end_s'])}; one thread each, every thread of the process on one "
            f"CPU while timed; {results['budget_s']} s of paired "
            f"samples per row; wall {results['wall_s']:.0f} s. Versions: "
            + ", ".join(f"{k} {v}" for k, v in results["versions"].items() if v) + ".")


def render(results: dict) -> list[str]:
    """All tables, as Markdown lines."""
    out = [f"# The compiled targets against their peers ({results['date']})", "",
           header(results)]
    out += [f"Skipped {peer}: {note}" for peer, note in results.get("skipped_peers", {}).items()]
    for table in tables(results):
        out += _markdown(table)
    failures = [(r, k, e["error"]) for r in results["rows"] for k, e in r["systems"].items()
                if "error" in e]
    if failures:
        out += ["", "Failed cells:", ""]
        out += [f"- {', '.join(_name(r))}, {SYSTEM_NAMES[k]}: {err}" for r, k, err in failures]
    out += ["", *goal_summary(results["rows"])]
    return out + fallbacks(results["rows"])


def measured(results: dict, title: str) -> dict:
    """The results in the form of ``benchmarks/measured/*.json`` (``benchmarks.tables``)."""
    m = results["machine"]
    return {
        "title": title, "command": results["command"].strip(), "date": results["date"],
        "machine": machine_line(m["cpu"], m["cores"], m["loadavg_start"][0],
                                m["loadavg_end"][0]),
        "method": header(results),
        "tables": tables(results),
        "notes": [*goal_summary(results["rows"]),
                  "What stayed NumPy (`sg.stats(..., backend=\"numba\")`), worst first:",
                  "\n".join(fallbacks(results["rows"])[3:])],
    }


def machine_line(cpu: str, cores: int | str, start: float, end: float) -> str:
    """The measured table's line on the machine: its load, and what that load means for
    the absolute times (busy: other work than the run's own process, which counts 1 in
    the load average, came to half a core or more)."""
    busy = max(start, end) - 1.0 >= 0.5
    note = ("other work kept it busy: absolute times are inflated and noisy, the paired "
            "ratios are the figures to read" if busy else
            "it was quiet; the paired ratios are still the figures to read")
    return (f"{cpu}, {cores} cores shared with other work (load average {start:.1f} at the "
            f"start, {end:.1f} at the end): {note}")


def _badness(rec: dict) -> float:
    """How far symgrad-numba is from its fastest peer (a failed build: worst)."""
    if "error" in rec["systems"].get("numba", {}):
        return float("inf")
    return rec.get("ratios", {}).get("fastest_peer", {}).get("median", 0.0)


def fallbacks(rows: list[dict]) -> list[str]:
    """What stayed NumPy, per row, worst row (against its fastest peer) first."""
    out = ["", "## What stayed NumPy (sg.stats(..., backend='numba')), worst first", ""]
    for r in sorted(rows, key=_badness, reverse=True):
        acc = r.get("numba")
        ratio = r.get("ratios", {}).get("fastest_peer")
        head = f"- **{', '.join(_name(r))}**" + (
            f" ({_ratio(ratio, False)} its fastest peer)" if ratio else "")
        if not acc or "error" in acc:
            out.append(f"{head}: no account ({(acc or {}).get('error', 'not built')})")
            continue
        out.append(f"{head}: {acc['kernels']} compiled loops holding {acc['fused_ops']} ops, "
                   f"{acc['compiled_scans']} scans compiled, {len(acc['scans'])} left to NumPy")
        for s in acc["scans"]:
            ops = "; ".join(f"`{m['op']}` {m['detail']}: {m['reason']}" for m in s["missing"])
            kind = "reverse" if s["reverse"] else "forward"
            out.append(f"  - {kind} scan of {s['length']} steps runs as a NumPy loop: {ops}")
        driver = ", ".join(f"{op} {v['count']}" for op, v in acc["driver"].items())
        out.append(f"  - NumPy calls in the driver: {driver or 'none'}")
    return out
