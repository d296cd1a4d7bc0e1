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

_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "all", "any", "logsumexp",
                         "argmax", "argmin", "var", "std", "cumsum", "cumprod"})


def account(outputs: list, fast_math: bool = False) -> dict:
    """The split of the module ``backend="numba"`` prints for ``outputs`` (see the module)."""
    from symgrad.backends.loops import is_loop
    from symgrad.backends.stages import lower, request

    low = lower(request(outputs, backend="numba", fast_math=fast_math))
    printer = low.request.target.printer(low)
    printer.module()
    kernels, numpy_ops, *_ = printer.stats() or ([], {})
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
    driver = {op: {"count": n, "reason": _driver_reason(op)}
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
    as :func:`symgrad.backends.targets.numba.loops.missing` finds them, with details."""
    from symgrad.backends.loops import is_loop
    from symgrad.backends.targets.numba import source
    from symgrad.backends.targets.numba.table import loop_form

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
            if n.dtype not in source.NUMBA_TYPE:
                out.append(_entry(n, nodes, f"dtype {n.dtype} has no Numba type here"))
            elif is_loop(n):
                stack.append(optimized(n.attrs["body"]))
            elif not (n.is_var or n.is_const) and loop_form(n, nodes) is None:
                out.append(_entry(n, nodes, _loop_reason(n, nodes)))
    return out


def _entry(n: Any, nodes: Any, reason: str) -> dict:
    shapes = ", ".join(str(tuple(nodes[a].shape)) for a in n.args)
    attrs = {k: v for k, v in (n.attrs or {}).items() if k in ("axis", "keepdims", "key")}
    detail = f"({shapes}) -> {tuple(n.shape)}" + (f" {attrs}" if attrs else "")
    return {"op": n.op, "detail": detail, "reason": reason}


def _loop_reason(n: Any, nodes: Any) -> str:
    """Why op node ``n`` has no form inside a compiled loop (the cases the Numba table
    refuses, most specific first)."""
    from symgrad.backends.targets.numba.table import NOT_FUSED

    attrs = n.attrs or {}
    if n.op in _REDUCTIONS:
        axis = attrs.get("axis")
        if attrs.get("keepdims"):
            return "keepdims=True: no keepdims reduction inside a compiled loop"
        if nodes[n.args[0]].dtype not in ("float64", "float32"):
            return f"a reduction of {nodes[n.args[0]].dtype}: only floating ones compile"
        if axis is not None and len(axis) > 1:
            return f"a reduction over {len(axis)} axes: only full ones and one-axis sums compile"
        if axis is not None:
            return f"{n.op} over one axis: only sum takes axis= inside a compiled loop"
        return f"{n.op}: no form inside a compiled loop"
    if n.op == "index":
        key = attrs.get("key", ())
        if any(e is None for e in key):
            return "indexing with None (a new axis): no form inside a compiled loop"
        if any(isinstance(e, str) for e in key) or len(n.args) > 1:
            return "a traced (array) index: Numba does not check its bounds"
    return NOT_FUSED.get(n.op, "no form inside a compiled loop")


def _driver_reason(op: str) -> str:
    from symgrad.backends.targets.numba.table import NOT_FUSED, NUMBA

    if op in NOT_FUSED:
        return NOT_FUSED[op]
    if NUMBA.get(op) is not None:
        return ("has a scalar form; the fusion planner left it to NumPy (a single op, a "
                "region its cost model rejected, or a cut between parts)")
    return "no scalar form in the Numba table"
