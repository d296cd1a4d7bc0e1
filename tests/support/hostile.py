"""Hostile values: subclasses of str, int and float whose own methods must never run.

Every overridden method records its call and creates a marker file (when ``ARMED``);
``__str__``, ``__repr__`` and ``__format__`` return a payload that would create another
file if it ever reached emitted source and ran. ``walk(calls)`` calls each public-API call
once per str/int/float leaf of its arguments, with that leaf replaced by its hostile twin,
armed only while symgrad runs (building the arguments does not count).

Run as a script (``python hostile.py MARKER``) it walks every public function and prints a
JSON report; ``tests/quality/test_security.py`` runs it in a subprocess under an audit hook.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

ARMED = False
CURRENT = ""  # the call being walked, for the report
TRIPPED: list[str] = []
MARKER = os.environ.get("SYMGRAD_HOSTILE_MARKER", os.devnull)
SANDBOX = tempfile.mkdtemp(prefix="symgrad-hostile-")  # where calls may write (draw's file)

_METHODS = (
    "__str__", "__repr__", "__format__", "__index__", "__int__", "__float__", "__complex__",
    "__eq__", "__ne__", "__hash__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__",
    "__len__", "__iter__", "__getitem__", "__contains__", "__round__", "__trunc__",
    "__floor__", "__ceil__", "__reduce__", "__reduce_ex__", "__getnewargs__",
    "isidentifier", "startswith", "endswith", "strip", "lstrip", "rstrip", "replace",
    "encode", "lower", "upper", "split", "rsplit", "join", "format", "isprintable",
    "isascii", "partition", "count", "find", "index", "splitlines", "hex", "is_integer",
    "as_integer_ratio", "bit_length", "to_bytes", "conjugate",
)


def _payload() -> str:
    return f"__import__('os').system('touch {MARKER}.system')"


def _trip(name: str) -> None:
    if ARMED:
        TRIPPED.append(f"{CURRENT}: {name}")
        with open(MARKER, "a") as f:  # visible to the audit hook and on disk
            f.write(name + "\n")


def _hostile(base: type) -> type:
    def method(name: str) -> Callable:
        original = getattr(base, name)

        def hostile(self, *args, **kwargs):
            _trip(f"{base.__name__}.{name}")
            if ARMED and name in ("__str__", "__repr__", "__format__"):
                return _payload()
            return original(self, *args, **kwargs)

        return hostile

    ns = {name: method(name) for name in _METHODS if hasattr(base, name)}
    return type(f"Hostile{base.__name__.title()}", (base,), ns)


HostileStr, HostileInt, HostileFloat = _hostile(str), _hostile(int), _hostile(float)
HOSTILE = {str: HostileStr, int: HostileInt, float: HostileFloat}


def variants(value: Any) -> list[Any]:
    """``value`` once per str/int/float leaf (list, tuple and dict items, dict keys), that
    leaf replaced by its hostile twin."""
    kind = type(value)
    if kind in HOSTILE:
        return [HOSTILE[kind](value)]
    out: list[Any] = []
    if kind in (list, tuple):
        for k, item in enumerate(value):
            for v in variants(item):
                items = list(value)
                items[k] = v
                out.append(kind(items))
    elif kind is dict:
        for key, item in value.items():
            for v in variants(item):
                out.append({**value, key: v})
            for hk in variants(key) if type(key) in HOSTILE else ():
                out.append({(hk if k == key else k): v for k, v in value.items()})
    elif kind is slice:
        for k, part in enumerate((value.start, value.stop, value.step)):
            for v in variants(part):
                parts = [value.start, value.stop, value.step]
                parts[k] = v
                out.append(slice(*parts))
    return out


def walk(calls: list[tuple[str, Callable, tuple, dict]]) -> dict:
    """Each call once per hostile leaf of its arguments: ``{"tripped": [...], "bare":
    [...], "variants": n}`` (bare: exceptions that are not SymgradErrors)."""
    global ARMED, CURRENT
    import symgrad as sg

    bare, count = [], 0
    for label, fn, args, kwargs in calls:
        jobs = [(a, kwargs) for a in variants(args)]
        jobs += [(args, {**kwargs, k: v}) for k, item in kwargs.items() for v in variants(item)]
        CURRENT = label
        for a, kw in jobs:
            count += 1
            ARMED = True
            try:
                fn(*a, **kw)
            except sg.SymgradError:
                pass
            except Exception as e:  # noqa: BLE001 (reported)
                bare.append(f"{label}: {type(e).__name__}: {str(e)[:200]}")
            finally:
                ARMED = False
    return {"tripped": sorted(set(TRIPPED)), "bare": bare, "variants": count}


def _custom_jvp(k, scale, at):
    """A custom_jvp with nondiff_argnums=(k,), differentiated at ``at``."""
    import symgrad as sg

    f = sg.custom_jvp(lambda s, x: s * sg.sin(x), nondiff_argnums=(k,))
    f.defjvp(lambda s, p, t: (f(s, p[0]), s * sg.cos(p[0]) * t[0]))
    x = sg.var("x")
    return sg.evaluate(sg.grad(f(scale, x), x), {"x": at})


def _custom_root(x0, steps, has_aux):
    """A square root by ``steps`` Newton steps, differentiated implicitly."""
    import symgrad as sg

    a = sg.var("a")

    def solve(f, x):
        x = sg.fori_loop(0, steps, lambda i, v: v - f(v) / (2.0 * v), x)
        return (x, None) if has_aux else x

    x = sg.custom_root(lambda v: v * v - a, x0, solve, lambda g, y: y / g(1.0),
                       has_aux=has_aux)
    x = x[0] if has_aux else x
    return sg.evaluate(sg.grad(x, a), {"a": 2.0})


def _custom_linear_solve(b, symmetric):
    """A 2x2 solve, differentiated implicitly with respect to ``b``."""
    import symgrad as sg

    m = sg.const([[3.0, 1.0], [1.0, 2.0]])
    x = sg.custom_linear_solve(lambda v: m @ v, b, lambda mv, r: sg.solve(m, r),
                               symmetric=symmetric)
    return sg.evaluate(x)


def _custom_vjp(k, scale, at):
    """A custom_vjp with nondiff_argnums=(k,), differentiated at ``at``."""
    import symgrad as sg

    f = sg.custom_vjp(lambda s, x: s * sg.sin(x), nondiff_argnums=(k,))
    f.defvjp(lambda s, x: (f(s, x), sg.cos(x)), lambda s, c, g: (s * c * g,))
    x = sg.var("x")
    return sg.evaluate(sg.grad(f(scale, x), x), {"x": at})


def public_calls() -> list[tuple[str, Callable, tuple, dict]]:
    """One valid call of every public function, op function and Expr method."""

    import symgrad as sg
    from symgrad.ops import ALIASES, REGISTRY, lookup

    x, a = sg.var("x", shape=(3,)), sg.var("a")
    A = sg.var("A", shape=(2, 3))
    f = sg.sum(sg.sin(x) * x)
    fn = sg.compile([f], ["x"], "fval")
    shapes = {"W": (2, 3), "v": (3,), "b": (2,)}
    calls = [
        ("var", sg.var, ("q", (2, 3), "float64"), {}),
        ("var kw", sg.var, ("q2",), {"shape": 3, "dtype": "float32"}),
        ("const", sg.const, ([[1.0, 2], [3, 4.5]],), {}),
        ("parse", sg.parse, ("W @ v + b * 2.0", shapes, {"b": "float64"}), {}),
        ("parse calls", sg.parse, ("sum(v, axis=0) + einsum('ij,j->i', W, v)[1]", shapes), {}),
        ("grad", sg.grad, (f, "x"), {}), ("grad list", sg.grad, (f, ["x"]), {}),
        ("value_and_grad", lambda fn, k: sg.value_and_grad(fn, argnums=k)(1.5, 2.0),
         (lambda p, q: sg.sin(p) * q, 1), {}),
        ("jacrev", lambda k: sg.jacrev(lambda p: p * 2.0, argnums=k)(1.5), (0,), {}),
        ("jit", lambda k: sg.jit(lambda p, q: p * q)(1.5, k), (2.0,), {}),
        ("vmap", lambda ax: sg.vmap(lambda p: p * 2.0, in_axes=ax)([[1.0], [2.0]]), (0,), {}),
        ("custom_jvp", _custom_jvp, (0, 2.0, 1.5), {}),
        ("custom_vjp", _custom_vjp, (0, 2.0, 1.5), {}),
        ("custom_root", _custom_root, (1.0, 6, False), {}),
        ("custom_linear_solve", _custom_linear_solve, ([1.0, 2.0], True), {}),
        ("to_html", sg.to_html, ([f],), {}), ("latex", sg.latex, (f,), {}),
        ("to_sympy", sg.to_sympy, (f,), {}),
        ("from_sympy", sg.from_sympy, (__import__("sympy").sympify("u*v + 1"),
                                       {"u": (2,)}, {"v": "float64"}), {}),
        ("vjp", sg.vjp, (sg.sin(x), "x", "g"), {}),
        ("vjp number", sg.vjp, (sg.sin(x), "x", 2.0), {}),
        ("jacobian", sg.jacobian, (sg.sin(x), "x"), {}),
        ("hessian", sg.hessian, (f, "x"), {}),
        ("hvp", sg.hvp, (f, "x", "v"), {}),
        ("jvp", sg.jvp, (sg.sin(x), "x", "t"), {}),
        ("jvp list", sg.jvp, ([sg.sin(x)], ["x"], [[1.0, 2.0, 3.0]]), {"cleanup": True}),
        ("jacfwd", sg.jacfwd, (sg.sin(x), ["x"]), {}),
        ("jacobian mode", sg.jacobian, (sg.sin(x), "x"), {"mode": "forward"}),
        ("jacobian sparse", sg.jacobian, (sg.sin(x), "x"), {"sparse": True, "mode": "reverse"}),
        ("hessian sparse", sg.hessian, (f, "x"), {"sparse": True, "method": "star"}),
        ("hessian blocks", sg.hessian, (f, ["x"]), {}),
        ("linearize", sg.linearize, (f, "x", {"x": [1.0, 2.0, 3.0]}), {}),
        ("jacobian_sparsity", sg.jacobian_sparsity, (sg.sin(x), "x"), {}),
        ("hessian_sparsity", sg.hessian_sparsity, (f, "x"), {}),
        ("scipy_functions hess", sg.scipy_functions, (f, "x", []), {"hess": "sparse"}),
        ("derivative", sg.derivative, (sg.sin(a), "a", 3), {}),
        ("evaluate", sg.evaluate, (f, {"x": [1.0, 2.0, 3.0]}), {"unknown": "error"}),
        ("to_source", sg.to_source, ([f, sg.grad(f, x)], ["x"], "fname"),
         {"output_names": ["val", "gr"], "scalars": "numpy"}),
        ("compile", sg.compile, ([f], ["x"], "fname", True),
         {"output_names": ["val"], "scalars": "math"}),
        ("compile math", sg.compile, ([sg.sin(a) * 2.0], ["a"], "g"), {"scalars": "math"}),
        ("to_source backend", sg.to_source, ([f, sg.grad(f, x)], ["x"], "fname"),
         {"backend": "array_api"}),
        ("compile backend", sg.compile, ([f], ["x"], "fname", True), {"backend": "array_api"}),
        ("scipy_functions", sg.scipy_functions, (f, "x", []), {}),
        ("compiled call", fn, ([1.0, 2.0, 3.0],), {}),
        ("compiled call kw", lambda **kw: fn(**kw), (), {"x": [1.0, 2.0, 3.0]}),
        ("simplify", sg.simplify, ([f],), {"sympy": False}),
        ("listing", sg.listing, ([f],), {}), ("to_dot", sg.to_dot, ([f],), {}),
        ("explain", sg.explain, ("u1 * u2", ["u1"], {"u1": 2.0, "u2": 3.0}), {}),
        ("check_grads", sg.check_grads, (f, "x", {"x": [0.1, 0.2, 0.3]}, 1),
         {"eps": 1e-6, "seed": 3}),
        ("getitem", sg.getitem, (A, (1, slice(0, 2, 1))), {}),
        ("index", lambda k: A[k], ((slice(None), 1),), {}),
        ("index list", lambda k: x[k], ([0, 2, 2],), {}),
        ("expr operators", lambda c, d: (x * c + d - c) / x ** d, (2.5, 2), {}),
        ("expr methods", lambda ax, kd: A.sum(axis=ax, keepdims=kd) + A.mean(ax, keepdims=kd),
         (1, True), {}),
        ("reshape", lambda s: A.reshape(s), ((3, 2),), {}),
        ("reshape args", lambda p, q: A.reshape(p, q), (3, 2), {}),
        ("graph var", x.graph.var, ("gq", (2,), "float64"), {}),
        ("graph const", x.graph.const, (1.5,), {}),
        ("limits", _limits, (10**6,), {}),
        ("scan", lambda c, n: sg.scan(lambda h, xi: (h * xi + c, h), c, x, length=n),
         (1.5, 3), {}),
        ("fori_loop", lambda lo, hi, c: sg.fori_loop(lo, hi, lambda i, v: v * x[i] + c, c),
         (0, 3, 2.5), {}),
        ("cond", lambda p, c: sg.cond(p, lambda v: v * c, lambda v: -v, a), (1, 2.5), {}),
        ("cond symbolic", lambda c: sg.cond(a > c, lambda v: v * c, lambda v: -v, a), (0.5,),
         {}),
        ("switch", lambda k, c: sg.switch(k, [lambda v: v * c, lambda v: v], a), (1, 2.5), {}),
        ("switch symbolic", lambda c: sg.switch(sg.var("k", dtype="int64"),
                                                [lambda v: v * c, lambda v: v], a), (2.5,), {}),
        # the step and the test take any pytree of the init's structure (as a user's would)
        ("while_loop", lambda c: sg.while_loop(
            lambda v: sg.tree_util.tree_leaves(v)[0] < 100.0,
            lambda v: sg.tree_util.tree_map(lambda leaf: leaf * 2.0, v), c), (1.5,), {}),
        ("defop", _defop_and_forget, ("hostile_walk_op",), {}),
    ]
    calls.append(("draw", sg.draw, ([f], os.path.join(SANDBOX, "g.png")), {}))
    calls.append(("passes", sg.passes, (), {}))
    calls.append(("stats", sg.stats, ([f, sg.grad(f, x)],), {"fast_math": True}))
    calls.append(("to_source optimize", sg.to_source, ([f],), {"optimize": True,
                                                              "fast_math": True}))
    for name in sorted({*REGISTRY, *ALIASES}):
        op = lookup(name)
        if op.public and hasattr(sg, name):
            calls.append((f"sg.{name}", *_op_call(getattr(sg, name), op)))
    return calls


def _defop_and_forget(name: str) -> None:
    """``defop`` once, then the op removed again (later tests see the registry as it was)."""
    import numpy as np

    from symgrad.backends import TABLES
    from symgrad.extend import defop
    from symgrad.ops import REGISTRY

    try:
        defop(name, impl=np.negative, backprop=lambda n, g: (-g,), numpy="-{0}")
    finally:
        for table in (REGISTRY, *TABLES.values()):
            table.pop("hostile_walk_op", None)


def _limits(n: int) -> None:
    import symgrad as sg

    with sg.limits(transform_nodes=n):
        sg.limits.dense_elements = n  # the process-wide setter too
    sg.limits.reset()


def _op_call(fn: Callable, op: Any) -> tuple[Callable, tuple, dict]:
    """``fn`` with operand variables of an example's shapes and its static attributes."""
    import numpy as np

    import symgrad as sg

    rng = np.random.default_rng(0)
    if op.examples is not None:
        operands, attrs = op.examples(rng)[0]
    elif op.arity == 0:
        operands, attrs = [], {next(iter(op.attrs)): 3}
    elif [p.name for p in op.signature.params] == ["condition", "x", "y"]:
        operands, attrs = [np.array([True, False]), np.ones(2), np.zeros(2)], {}
    else:
        operands, attrs = [np.full(3, 0.7)] * (op.arity or 2), {}
    variables = [sg.var(f"o{k}", np.shape(v), np.asarray(v).dtype.name)
                 for k, v in enumerate(operands)]
    args: list = []
    it = iter(variables)
    params = op.signature.params
    for k, p in enumerate(params):
        if p.kind == "static" and any(q.kind != "static" for q in params[k + 1:]):
            args.append(attrs.pop(p.name, op.attrs[p.name]))
        elif p.kind == "operands":
            args.extend(it)
        elif p.kind == "list":
            args.append(list(it))
        elif p.kind == "operand":
            args.append(next(it))
    kwargs = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in attrs.items()}
    return fn, tuple(args), kwargs


if __name__ == "__main__":
    seen: list[str] = []
    try:  # matplotlib runs fc-list the first time it builds its font cache (a fresh
        # MPLCONFIGDIR): done here, before the hook, it is not taken for the walk's doing
        import matplotlib.font_manager  # noqa: F401
    except ImportError:
        pass

    def audit(event: str, args: tuple) -> None:
        if event == "os.system" or event.startswith(("subprocess", "os.exec", "os.spawn")):
            seen.append(event)
        elif event == "open" and args and MARKER != os.devnull and str(args[0]).startswith(
                MARKER):
            seen.append(f"open {args[0]}")

    sys.addaudithook(audit)
    report = walk(public_calls())
    report["events"] = sorted(set(seen))
    print(json.dumps(report))
