"""What ``backend="numba"`` leaves to NumPy in a module, and why (the compiled-target to-do
list that :mod:`.numba_backend` records per workload and spelling).

``sg.stats(outputs, backend="numba")`` counts the NumPy calls of the printed module
(``numpy_ops``: op -> lines), a scan whose step has an op without a form inside a compiled
loop counting as ``scan`` plus that op. :func:`account` splits those counts:

* ``scans``: one entry per scan that runs as the NumPy target's loop — its direction and
  length, and each op of its step (nested steps included) that has no form there, with the
  node's axes, ``keepdims``, index key or dtype and a one-line reason;
* ``driver``: the straight-line NumPy calls left, op -> count and the reason the Numba
  table gives (``NOT_FUSED``), or, for an op that has a scalar form, that the fusion
  planner left it alone (a single op, a region the cost model rejected, a cut);
* ``kernels``, ``fused_ops`` and ``compiled_scans``: what was compiled.

Nothing is compiled: the module is printed, as ``sg.stats`` prints it. This reads symgrad's
internals (the lowering stage, the Numba printer and table) and so may need updating when
they move; it changes nothing in them.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(4, 3))
>>> h, _ = sg.scan(lambda c, r: (sg.sin(c) * r, None), sg.ones(3), x)
>>> acc = account([sg.sum(h)])
>>> acc["compiled_scans"], acc["scans"]
(1, [])
"""

from __future__ import annotations

from typing import Any


def account(outputs: list, fast_math: bool = False) -> dict:
    """The split of the module ``backend="numba"`` prints for ``outputs`` (see the module)."""
    from symgrad.backends.loops import is_loop
    from symgrad.backends.stages import lower, request

    low = lower(request(outputs, backend="numba", fast_math=fast_math))
    printer = low.request.target.printer(low)
    printer.module()
    kernels, numpy_ops, *rest = printer.stats() or ([], {})
    why = rest[0] if rest else {}
    scans, seen, compiled = [], set(), 0
    for node in low.graph.nodes:
        if not is_loop(node) or id(node.attrs["body"]) in seen:
            continue
        seen.add(id(node.attrs["body"]))
        missing = _missing(node.attrs["body"], _optimizer(low))
        if not missing:
            compiled += 1
            continue
        scans.append({"reverse": bool(node.attrs.get("reverse")),
                      "length": int(node.attrs.get("length", 0)), "missing": missing})
    driver = dict(numpy_ops)
    for s in scans:
        for op in ["scan", *(m["op"] for m in s["missing"])]:
            driver[op] = driver.get(op, 0) - 1
    driver = {op: {"count": n, "reason": _driver_reason(op, why)}
              for op, n in sorted(driver.items(), key=lambda kv: (-kv[1], kv[0])) if n > 0}
    return {"kernels": len(kernels), "fused_ops": sum(len(ops) for _, ops in kernels),
            "compiled_scans": compiled, "numpy_ops": dict(numpy_ops), "scans": scans,
            "driver": driver}


def _optimizer(low: Any) -> Any:
    """``body -> body as emitted`` for the lowered module ``low``."""
    if hasattr(low, "optimized"):
        return low.optimized
    from symgrad.backends.loops import optimized_body  # before the stages owned it

    return lambda body: optimized_body(body, low.request)


def _missing(body: Any, optimized: Any) -> list[dict]:
    """The nodes of ``body`` (and of loops nested in it) without a form in a compiled loop,
    as :func:`symgrad.backends.targets.numba.loops.lacking` finds them, with details: a
    projection is a name its call assigns (the call is the node checked), and a call's
    dtypes are its results'."""
    from symgrad.backends.loops import is_loop
    from symgrad.backends.targets.numba import source
    from symgrad.backends.targets.numba.table import loop_form, why_not
    from symgrad.ir.op import RESULT

    out: list[dict] = []
    stack, seen = [optimized(body)], set()
    while stack:
        b = stack.pop()
        if id(b) in seen:
            continue
        seen.add(id(b))
        nodes = b.graph.nodes
        if any(nd.is_const and nd.shape != () for nd in nodes):
            out.append({"op": "const", "detail": "",
                        "reason": "an array constant folded into the step"})
        for n in nodes:
            if is_loop(n):
                stack.append(optimized(n.attrs["body"]))
            elif n.op == RESULT:
                continue
            elif bad := [d for d in _dtypes(n) if d not in source.NUMBA_TYPE]:
                out.append(_entry(n, nodes, f"dtype {bad[0]} has no Numba type here"))
            elif not (n.is_var or n.is_const) and loop_form(n, nodes) is None:
                why = why_not(n, nodes) or "no form inside a compiled loop"
                out.append(_entry(n, nodes, why))
    return out


def _dtypes(n: Any) -> list[str]:
    """The dtypes of node ``n``'s results: a call's each, else its one."""
    return [d for _, d in n.dtype] if n.is_call else [n.dtype]


def _shape_text(n: Any) -> str:
    return ", ".join(str(tuple(s)) for s, _ in n.dtype) if n.is_call else str(tuple(n.shape))


def _entry(n: Any, nodes: Any, reason: str) -> dict:
    shapes = ", ".join(_shape_text(nodes[a]) for a in n.args)
    attrs = {k: v for k, v in (n.attrs or {}).items() if k in ("axis", "keepdims", "key")}
    detail = f"({shapes}) -> {_shape_text(n)}" + (f" {attrs}" if attrs else "")
    return {"op": n.op, "detail": detail, "reason": reason}


def _driver_reason(op: str, why: dict[str, str]) -> str:
    """The reason the printer gave for ``op``'s NumPy calls (``why``: the third item of its
    stats), else the Numba table's."""
    from symgrad.backends.targets.numba.table import NOT_FUSED, NUMBA

    if op in why:
        return why[op]
    if op in NOT_FUSED:
        return NOT_FUSED[op]
    if NUMBA.get(op) is not None:
        return ("has a scalar form; the fusion planner left it to NumPy (a single op, a "
                "region its cost model rejected, or a cut between parts)")
    return "no scalar form in the Numba table"
