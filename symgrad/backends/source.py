"""Standalone source for symgrad graphs (``to_source``); ``compile`` loads it.

The emitter is generic: what differs between targets (NumPy, the array API, JAX, torch) is
the :class:`~symgrad.backends.target.Target` it is given — how each op is written comes from
that target's table (:mod:`symgrad.backends.numpy_table`, ``array_api_table``, ...) or, for
``scalars="math"``, the scalar table (:mod:`symgrad.backends.math_table`).

For NumPy (the default) the emitted module imports only ``numpy as np`` and defines one
straight-line function: one
assignment per node of the outputs' ancestors, in id order (a topological order), so every
forward value is computed once and reused by the adjoint lines. Names are readable and never
spliced from user text without checking: user variables keep their names when those are safe
identifiers (else they are renamed deterministically), the adjoint of variable ``x`` is
``dx``, the adjoint of temporary ``t3`` is ``d_t3``, other temporaries are ``t1, t2, ...``.
Every adjoint line carries a comment naming the forward line it differentiates.

Small 0-d constants are inlined as exact literals; array constants are hoisted to module
level (built once at import, read-only). Large temporaries are released with ``del`` after
their last use. The text depends only on the graph: no set order, no hash seed, no addresses.

>>> import symgrad as sg
>>> x, y = sg.var("x"), sg.var("y")
>>> f = x * y + sg.sin(x)
>>> fn = sg.compile([f, *sg.grad(f, [x, y])])
>>> [round(float(v), 6) for v in fn(2.0, 3.0)]
[6.909297, 2.583853, 2.0]
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.shapes import fmt
from ..ir.text import adjoint_pairs, tangent_pairs
from ..passes.simplify import gc_paused
from ..progress import start
from . import layout
from .array_api_helpers import _sg_xp_const
from .array_api_table import number_source
from .math_table import MATH, fallback_names
from .naming import Namer, check_function_name, is_safe_name, sanitize
from .numpy_table import NUMPY, NUMPY_TYPE, Template, scalar_source
from .request import Lowered, lower, request, resolve_inputs
from .target import TARGETS, Target

__all__ = ["to_source", "is_safe_name"]

_DEL_MIN_SIZE = 1000  # temporaries with at least this many elements are released early
_LINE = 100  # maximum line length of the emitted text (ruff's limit for this project)
_PRINT_LIMIT = 400  # expression-tree size up to which the docstring prints an expression
_TEXT_LIMIT = 200  # characters of a printed expression kept in the docstring


# -- planning one function -------------------------------------------------------------------


@dataclass
class _Plan:
    """Everything needed to render one function: what to compute and what to call it."""

    name: str
    params: list[int]
    outputs: list[int]
    single: bool
    order: list[int]  # ancestors of the outputs, in id order
    names: dict[int, str]
    aliases: dict[int, str] = field(default_factory=dict)  # output variable -> adjoint name
    alias_of: dict[int, int] = field(default_factory=dict)  # output variable -> its forward
    adjoint_for: dict[int, int] = field(default_factory=dict)  # adjoint node -> forward node
    tangent_for: dict[int, int] = field(default_factory=dict)  # tangent node -> its node


def _plan(graph: Graph, name: str, outs: list[int], inputs: Any, single: bool,
          labels: Sequence[str] | None = None, target: Target = TARGETS["numpy"]) -> _Plan:
    nodes = graph.nodes
    order = graph.ancestors(outs)
    for i in order:
        n = nodes[i]
        if not (n.is_var or n.is_const) and target.table.get(n.op) is None:
            _no_source(n.op, i, target)
    used = [i for i in order if nodes[i].is_var]
    params = resolve_inputs(graph, inputs, used, outs)
    # Forward nodes named in the comments of adjoint lines get names too (maybe no line).
    emitted = set(order)
    pairs = [(f, a) for f, a in adjoint_pairs(graph) if a in emitted]
    extra = [nodes[i].origin for i in order if nodes[i].origin is not None]
    named = graph.ancestors([*outs, *extra, *(f for f, _ in pairs)])
    plan = _Plan(name, params, outs, single, order, {})
    for f, a in pairs:  # the earliest transform names an adjoint first; variables win
        prev = plan.adjoint_for.get(a)
        if prev is None or (nodes[f].is_var and not nodes[prev].is_var):
            plan.adjoint_for[a] = f
    for f, t in tangent_pairs(graph):  # forward mode: the earliest transform names first
        if t in emitted and t != f and nodes[t].role == "tangent":
            plan.tangent_for.setdefault(t, f)
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(outs):
            raise SymgradError(f"output_names has {len(labels)} names for {len(outs)} outputs")
    _assign_names(graph, plan, named, labels or [], target)
    return plan


def _no_source(op: str, i: int, target: Target) -> None:
    """Raise: op ``op`` (node ``i``) cannot be written for ``target``, and why."""
    from ..errors import BackendError

    if target.is_numpy:
        raise SymgradError(f"node {i}: op {op!r} has no NumPy source; cannot emit it")
    why = target.unsupported.get(op) or "it has no template in this backend's table"
    raise BackendError(f"op {op!r} (node {i}) cannot be emitted for backend "
                       f"{target.name!r}: {why}; use backend='numpy' for this expression")


_BINDERS = re.compile(r"\blambda\b|:=|\bfor\b")


def _helpers(graph: Graph, order: Sequence[int], table: dict = NUMPY) -> list[Callable]:
    """The registry helper functions the ops of ``order`` call, sorted by name."""
    ops = {graph.nodes[i].op for i in order}
    found = {fn.__name__: fn for op in ops if table.get(op) is not None
             for fn in table[op].helpers}
    return [found[k] for k in sorted(found)]


@functools.cache
def _helper_source(fn: Callable) -> tuple[str, ...]:
    """The text of a helper function (read once: ``inspect`` is slow to import and run)."""
    import inspect

    return tuple(textwrap.dedent(inspect.getsource(fn)).rstrip().splitlines())


def _template_bound_names(graph: Graph, order: list[int], table: dict = NUMPY) -> list[str]:
    """Names the op templates bind themselves (``lambda z: ...``, comprehension variables).

    No variable or temporary may take one: inside the template it would be captured.
    """
    bound: set[str] = {fn.__name__ for fn in _helpers(graph, order, table)}
    seen: set[tuple] = set()
    for i in order:
        n = graph.nodes[i]
        if n.is_var or n.is_const:
            continue
        src = table[n.op]
        key = (n.op, len(n.args))
        if isinstance(src.text, str) and key in seen:
            continue
        seen.add(key)
        text = src.render([f"_SGPROBE{k}_" for k in range(len(n.args))], n.attrs)
        if not _BINDERS.search(text):
            continue
        import ast

        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
    return sorted(bound)


def _assign_names(graph: Graph, plan: _Plan, named: list[int], labels: list[str],
                  target: Target = TARGETS["numpy"]) -> None:
    """Fill ``plan.names`` (every named node) and ``plan.aliases`` (outputs that are inputs)."""
    nodes, params, outputs = graph.nodes, plan.params, set(plan.outputs)
    taken = _template_bound_names(graph, plan.order, target.table)
    if not target.is_numpy:  # the namespace and the module's imports
        taken += [target.namespace, "math", "array_namespace", "array_api_compat"]
    namer = Namer(taken)
    names = plan.names
    for i in params + [i for i in named if nodes[i].is_var]:
        if i not in names:
            names[i] = namer.fresh(sanitize(nodes[i].name))
    for i, label in zip(plan.outputs, labels):  # requested output names come next
        if nodes[i].is_var and i not in plan.aliases:
            plan.aliases[i] = namer.fresh(sanitize(label))
        elif not nodes[i].is_var and i not in names:
            names[i] = namer.fresh(sanitize(label))
    adjoint_for = plan.adjoint_for
    k = 1
    first = [i for i in plan.outputs if adjoint_for.get(i) in names]  # outputs named dx first
    for i in first + named:
        n = nodes[i]
        if n.is_var or (n.is_const and i not in outputs) or i in names:
            continue
        f = adjoint_for.get(i)
        tf = plan.tangent_for.get(i)
        if f is not None and f in names:
            names[i] = namer.fresh(("d" if nodes[f].is_var else "d_") + names[f])
        elif tf is not None and tf in names:
            names[i] = namer.fresh(names[tf] + "_dot")
        else:
            names[i], k = namer.counter("t", k)
    for i in sorted(outputs):
        f = adjoint_for.get(i)
        if nodes[i].is_var and f is not None and f in names and i not in plan.aliases:
            plan.aliases[i] = namer.fresh(("d" if nodes[f].is_var else "d_") + names[f])
            plan.alias_of[i] = f


# -- constants -------------------------------------------------------------------------------


def _inline(value: np.ndarray, user: Any, nodes: list, node_id: int, strong: bool = False,
            target: Target = TARGETS["numpy"]) -> str:
    """A 0-d constant as a literal in ``user``'s expression, typed exactly as the graph says.

    Python literals are "weak" under NumPy's promotion rules (``float32 * 2.0`` stays float32)
    while the graph's constant is a float64 array; where that would change the result dtype
    the literal is wrapped (``np.float64(2.0)``).
    """
    dtype = value.dtype.name
    py = value.item()
    others = [nodes[b].dtype for b in user.args if b != node_id]
    if not target.is_numpy:
        return _inline_array(py, dtype, others, strong)
    if dtype in ("float64", "int64", "bool") or (others and dtype in NUMPY_TYPE):
        weak_ok = not others or np.result_type(*others, dtype) == np.result_type(*others, py)
        if weak_ok and not strong:
            text = scalar_source(py)
        else:
            text = f"{NUMPY_TYPE[dtype]}({scalar_source(py)})"
    elif dtype in NUMPY_TYPE:
        text = f"{NUMPY_TYPE[dtype]}({scalar_source(py)})"
    else:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    return f"({text})" if text.startswith("-") else text


def _inline_array(py: Any, dtype: str, others: list[str], strong: bool) -> str:
    """A 0-d constant for the array API targets: a Python literal beside an array operand
    where NumPy's promotion gives the same dtype, else ``xp.asarray(literal, dtype=...)``
    (the standard's functions take arrays; a literal alone is not one)."""
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    text = number_source(py)
    weak_ok = bool(others) and np.result_type(*others, dtype) == np.result_type(*others, py)
    if strong or not weak_ok:
        return f"xp.asarray({text}, dtype=xp.{dtype})"
    return f"({text})" if text.startswith("-") else text


def _const_spec(value: np.ndarray) -> str:
    """An array constant as ``((values...), shape, dtype)`` for ``_sg_xp_const``: Python
    data only, built into an array of the call's namespace."""
    dtype = value.dtype.name
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    items = [number_source(v) for v in value.ravel().tolist()]
    tail = f"), {value.shape!r}, {dtype!r})"
    one = f"(({', '.join(items)}{',' if len(items) == 1 else ''}{tail}"
    if len(one) <= _LINE - 10:
        return one
    inner = "\n".join(f"    {line}" for line in _wrap_items(items, _LINE - 8))
    return f"((\n{inner}\n{tail}"


def _wrap_items(items: list[str], width: int) -> list[str]:
    """Comma-separated ``items`` in lines of at most ``width`` characters (linear time)."""
    lines, line = [], ""
    for item in items:
        piece = f"{item},"
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(line[:-1])
    return lines


def _array_source(value: np.ndarray, indent: str = "") -> str:
    """Source that rebuilds array ``value`` bit for bit, wrapped to the line limit."""
    dtype = value.dtype.name
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    typ = NUMPY_TYPE[dtype]
    raw = value.tobytes()
    size, item = value.size, value.dtype.itemsize
    if size > 1 and raw == raw[:item] * size:
        first = scalar_source(value.reshape(-1)[0].item())
        return f"np.full({value.shape!r}, {first}, dtype={typ})"
    k = int(round(size ** 0.5))
    if dtype == "float64" and size > 1 and k * k == size and raw == np.eye(k).tobytes():
        half = value.shape[: value.ndim // 2]
        if value.ndim % 2 == 0 and int(np.prod(half)) == k:
            tail = "" if value.shape == (k, k) else f".reshape({value.shape!r})"
            return f"np.eye({k}){tail}"
    flat = value.ravel().tolist()
    if value.dtype.kind == "f" and np.isfinite(value).all():
        items = list(map(repr, flat))  # repr of a Python float is exact
    else:
        items = [scalar_source(v) for v in flat]
    text = f"np.array([{', '.join(items)}], dtype={typ})"
    if value.ndim != 1:
        text += f".reshape({value.shape!r})"
    if len(indent) + len(text) <= _LINE - 10:
        return text
    inner = "\n".join(f"    {line}" for line in _wrap_items(items, _LINE - 8))
    tail = f"], dtype={typ})" + ("" if value.ndim == 1 else f".reshape({value.shape!r})")
    return f"np.array([\n{inner}\n{tail}"


# -- rendering -------------------------------------------------------------------------------


class Module:
    """A generated module: functions over one graph sharing hoisted constants."""

    def __init__(self, graph: Graph, scalars: str = "math",
                 target: Target = TARGETS["numpy"]) -> None:
        if scalars not in ("numpy", "math"):
            raise SymgradError(f"scalars must be 'numpy' or 'math', got {scalars!r}")
        self.graph = graph
        self.plans: list[_Plan] = []
        self.target = target
        self.table = target.table
        self.scalars = scalars if target.scalars else "numpy"  # array code throughout
        self._scalar = False  # rendering the Python-float version of a function
        self._shim_done = False  # the module defines _numpy_math already
        self._helper_names: set[str] = set()  # generated helper functions (bodies, parts)
        self.shown: dict[int, Expr] = {}  # output id -> the Expr its docstring line prints
        self._names_of: dict[int, set[str]] = {}
        self.constants: list[tuple[str, Any]] = []  # public module constants (a pattern)

    def add(self, name: str, outs: list[int], inputs: Any, single: bool,
            labels: Sequence[str] | None = None) -> _Plan:
        check_function_name(name)
        if any(p.name == name for p in self.plans):
            raise SymgradError(f"two generated functions named {name!r}")
        plan = _plan(self.graph, name, outs, inputs, single, labels, self.target)
        self.plans.append(plan)
        return plan

    def render(self) -> str:
        with gc_paused():
            return self._render()

    def _render(self) -> str:
        nodes = self.graph.nodes
        hoisted = sorted({i for p in self.plans for i in p.order
                          if nodes[i].is_const and nodes[i].shape != ()})
        namer = Namer([p.name for p in self.plans])
        for p in self.plans:
            namer.taken.update(p.names.values())
        self.consts = {}
        self._inlined = {i for p in self.plans for i in p.order
                         if nodes[i].is_const and nodes[i].shape == ()}
        self._literals: dict[tuple, str] = {}
        self._probes: dict[tuple, list[bool]] = {}
        self._comments: dict[tuple, list[str]] = {}
        k = 1
        for i in hoisted:
            self.consts[i], k = namer.counter("_c", k)
        if not self.target.is_numpy:
            return self._render_array(hoisted)
        out = ["# Generated by symgrad. Requires only NumPy.", "import numpy as np"]
        if hoisted:
            out.append("")
        for i in hoisted:
            out.append(f"{self.consts[i]} = {_array_source(nodes[i].attrs['value'])}")
            out.append(f"{self.consts[i]}.flags.writeable = False")
        for cname, value in self.constants:
            if isinstance(value, np.ndarray):
                out += ["", f"{cname} = {_array_source(value)}",
                        f"{cname}.flags.writeable = False"]
            else:
                out += ["", f"{cname} = {value!r}"]
        helpers = _helpers(self.graph, [i for p in self.plans for i in p.order])
        for fn in helpers:
            out += ["", "", *_helper_source(fn)]
        uses_np = bool(hoisted) or bool(helpers) or bool(self.constants)
        for p in self.plans:
            if self.scalars == "math" and self._all_scalar(p):
                lines, code = self._scalar_function(p)
                out[1:2] = ["import math", "", out[1]] if "import math" not in out else []
            else:
                lines, code = self._function(p)
            uses_np = uses_np or any("np." in ln.split("#")[0] for ln in code)
            out += ["", "", *lines]
        if not uses_np:  # e.g. only arithmetic: keep the import, quiet the linter
            k = out.index("import numpy as np")
            out[k] += "  # noqa: F401"
        return "\n".join(out) + "\n"

    def _render_array(self, hoisted: list[int]) -> str:
        """The module for an array API target: its header, the hoisted constants as Python
        data (built in the call's namespace by ``_sg_xp_const``), helpers, functions."""
        if any(isinstance(v, np.ndarray) for _, v in self.constants):
            raise SymgradError(f"backend {self.target.name!r} cannot emit NumPy arrays as "
                               "module constants (a sparse pattern); use backend='numpy'")
        nodes = self.graph.nodes
        out = list(self.target.header)
        for i in hoisted:
            out += ["", f"{self.consts[i]} = {_const_spec(nodes[i].attrs['value'])}"]
        out += [line for cname, value in self.constants for line in ("", f"{cname} = {value!r}")]
        helpers = _helpers(self.graph, [i for p in self.plans for i in p.order], self.table)
        if hoisted:
            helpers = sorted([*helpers, _sg_xp_const], key=lambda fn: fn.__name__)
        for fn in helpers:
            out += ["", "", *_helper_source(fn)]
        for p in self.plans:
            lines, _ = self._function(p)
            out += ["", "", *lines]
        text = "\n".join(out) + "\n"
        if "math." not in text.replace("import math", ""):
            text = text.replace("import math\n\n", "", 1)
        return text

    def _operand(self, a: int, user: Any, names: dict[int, str]) -> str:
        name = names.get(a)
        if name is not None and a not in self._inlined:
            return name
        if a in self.consts:
            return self._const_text(a)
        nodes = self.graph.nodes
        # the array API takes one Python scalar beside arrays, never two
        strong = not self.target.is_numpy and any(b in self._inlined for b in user.args
                                                  if b != a)
        key = (a, tuple(nodes[b].dtype for b in user.args if b != a), strong)
        text = self._literals.get(key)
        if text is None:
            text = self._literals[key] = _inline(nodes[a].attrs["value"], user, nodes, a,
                                                 strong, self.target)
        return text

    def _const_text(self, i: int) -> str:
        """A hoisted array constant as an operand: its module name (NumPy), or the array
        built from it in the call's namespace."""
        name = self.consts[i]
        return name if self.target.is_numpy else f"_sg_xp_const(xp, {name})"

    def _expr(self, i: int, names: dict[int, str]) -> str:
        n = self.graph.nodes[i]
        if n.is_var:
            return names[i]
        if n.is_const:
            if i in self.consts:
                return self._const_text(i)
            return _inline(n.attrs["value"], n, self.graph.nodes, i, target=self.target)
        src = MATH[n.op] if self._scalar else self.table[n.op]
        texts = [self._operand(a, n, names) for a in n.args]
        if any(k in self._inlined for k in n.args):
            texts = self._typed_scalars(n, src, texts)
        text = src.render(texts, n.attrs)
        if not isinstance(text, str) or "\n" in text:
            raise SymgradError(f"op {n.op!r} has a source template that gives no one-line text")
        return text

    def _typed_scalars(self, n: Any, src: Template, texts: list[str]) -> list[str]:
        """Inline constants the template uses as arrays (``{0}.dtype``, ``{0}[i]``) as NumPy
        scalars (``np.float64(1.0)``), which have those attributes; plain literals do not."""
        key = (n.op, len(texts), self._scalar) if isinstance(src.text, str) else None
        used = self._probes.get(key) if key else None
        if used is None:
            probes = [f"_SGPROBE{k}_" for k in range(len(texts))]
            probe = src.render(probes, n.attrs)
            used = [bool(re.search(rf"{p}\s*[.\[(]", probe)) for p in probes]
            if not self.target.is_numpy and "_sg_xp_" in probe:  # helpers take arrays
                used = [True] * len(probes)
            if key:
                self._probes[key] = used
        out = list(texts)
        for k, a in enumerate(n.args):
            if a in self._inlined and used[k]:
                out[k] = _inline(self.graph.nodes[a].attrs["value"], n, self.graph.nodes, a,
                                 strong=True, target=self.target)
        return out

    def _all_scalar(self, p: _Plan) -> bool:
        """Whether every value of ``p`` is a float64 (or bool) scalar with a ``math`` form."""
        for i in p.order:
            n = self.graph.nodes[i]
            kinds = ("float64", "bool", "int64") if n.is_const else ("float64", "bool")
            if n.shape != () or n.dtype not in kinds:
                return False
            if not (n.is_var or n.is_const) and MATH.get(n.op) is None:
                return False
        return True

    def _scalar_function(self, p: _Plan) -> tuple[list[str], list[str]]:
        """``name`` running one body over Python floats with ``math`` and, where ``math``
        raises (overflow, a domain error, division by zero), the same body over NumPy
        scalars with NumPy's functions. Results are NumPy scalars either way (``np.float64``,
        ``np.bool_``), as from the NumPy version."""
        params = [p.names[i] for i in p.params]
        body = self._helper_name(p, "scalar")
        self._scalar = True
        try:
            lines, code = self._function(p, body, with_doc=False, extra="math")
        finally:
            self._scalar = False
        nodes = self.graph.nodes
        head = [*_call(f"def {p.name}(", params, "):", ""),
                *_docstring(self.graph, p, self.shown)]
        types = [NUMPY_TYPE[nodes[i].dtype] for i in p.outputs]
        got = Namer(params)
        held = [got.fresh(f"_r{k}") for k in range(len(types))]
        floats = _typed(body, [f"float({a})" for a in params], types, held, p.single)
        numpy = _typed(body, [f"np.float64({a})" for a in params] + ["math=_numpy_math"],
                       types, held, p.single)
        tail = ["    try:", *floats, "    except (ArithmeticError, ValueError):", *numpy]
        shim = [] if self._shim_done else [*_numpy_math(), "", ""]
        self._shim_done = True
        return shim + lines + ["", ""] + head + tail, shim + code + head[:1] + tail

    def _helper_name(self, p: _Plan, kind: str) -> str:
        def taken(name: str) -> bool:
            return (name in self._helper_names or name in self._plan_names(p)
                    or any(q.name == name for q in self.plans))

        name, k = f"_{p.name}_{kind}", 1
        while taken(name):
            name, k = f"_{p.name}_{kind}_{k}", k + 1
        self._helper_names.add(name)
        return name

    def _plan_names(self, p: _Plan) -> set[str]:
        found = self._names_of.get(id(p))
        if found is None:
            found = self._names_of[id(p)] = set(p.names.values())
        return found

    def _function(self, p: _Plan, fname: str | None = None, with_doc: bool = True,
                  extra: str = "") -> tuple[list[str], list[str]]:
        """The function's lines, and the same without its docstring (a long function:
        its parts too, each a function of its own before it; see :mod:`.layout`)."""
        nodes, names = self.graph.nodes, p.names
        fname = fname or p.name
        outputs = set(p.outputs)
        body = [i for i in p.order if not (nodes[i].is_var or (nodes[i].is_const
                                                                and i not in outputs))]
        big = len(body) > layout.REGISTERS_FROM
        if big:
            names = dict(names)
            fixed = {i: names[i] for i in body if i in outputs}
            names.update(layout.registers(nodes, body, fixed, set(names.values())))
        params = [names[i] for i in p.params]
        results = [p.aliases.get(i) or names.get(i) or self._expr(i, names) for i in p.outputs]
        tail = [self._line(f"    {alias} = {names[i]}", nodes[i], names, p.alias_of.get(i))
                for i, alias in sorted(p.aliases.items())]
        ret = results[0] if p.single else ", ".join(results) + ("," if len(results) == 1 else "")
        tail.append(f"    return {ret}" if p.single or len(results) > 1 else f"    return ({ret})")
        doc = _docstring(self.graph, p, self.shown, self.target.label) if with_doc else []
        extras = [f"{extra}={extra}"] if extra else []
        if self.target.per_call:  # parts take the namespace the function found
            extra, extras = self.target.namespace, [self.target.namespace]
        head = [*_call(f"def {fname}(", params + extras[:0 if self.target.per_call else 1],
                       "):", ""), *doc]
        if self.target.per_call:
            head += self._binding(params)
        if len(body) <= layout.PART_LINES:
            lines = head + self._statements(body, names, outputs, comments=not big) + tail
            lines = [_fit(line) for line in lines]
            return lines, [*lines[:len(head) - len(doc)], *lines[len(head):]]
        # a long function: parts sharing one list of the values that cross them
        pieces, slots = layout.parts(nodes, body, p.params, [i for i in p.outputs
                                                             if i not in p.aliases])
        shared = Namer(list(names.values()) + params).fresh("_v")
        before: list[str] = []
        calls = [f"    {shared} = [None] * {len(slots)}"]
        calls += _stores(shared, [(i, slots[i]) for i in p.params if i in slots], names)
        for k, part in enumerate(pieces, start=1):
            part_name = self._helper_name(p, f"part{k}")
            before += [f"def {part_name}({shared}{', ' if extras else ''}{', '.join(extras)}):"]
            before += _moves([(names[i], f"{shared}[{s}]") for i, s in part.loads])
            before += self._statements(part.lines, names, outputs, comments=False)
            before += _stores(shared, part.stores, names) + ["", ""]
            calls.append(f"    {part_name}({shared}{', ' if extra else ''}{extra})")
        calls += _moves([(names[i], f"{shared}[{slots[i]}]") for i in dict.fromkeys(p.outputs)
                         if i in slots and i not in p.aliases])
        lines = [_fit(line) for line in before + head + calls + tail]
        return lines, [ln for ln in lines if ln not in doc]

    def _statements(self, body: list[int], names: dict[int, str], outputs: set[int],
                    comments: bool = True) -> list[str]:
        """One assignment per node of ``body``; ``del`` after the last use of big arrays."""
        nodes = self.graph.nodes
        releases = _releases(nodes, body, outputs)
        lines = []
        progress = start("emit source", total=len(body))
        for i in body:
            progress.update()
            n = nodes[i]
            expr = self._expr(i, names)
            if n.is_const and i in self.consts:  # never hand out the shared constant
                expr = (f"{expr}.copy()" if self.target.is_numpy else
                        f"{self.target.namespace}.asarray({expr}, copy=True)")
            code = f"    {names[i]} = {expr}"
            lines.append(self._line(code, n, names) if comments else code)
            dead = [names[a] for a in releases.get(i, ()) if names[a] != names[i]]
            lines += _del_lines(dead)
        progress.close()
        return lines

    def _binding(self, params: list[str]) -> list[str]:
        """The first line of an array API function: the namespace of its inputs."""
        ns = self.target.namespace
        if not params:
            return [f"    import array_api_compat.numpy as {ns}  # no inputs: NumPy's"]
        return _call(f"{ns} = array_namespace(", params, ")")

    def _line(self, code: str, n: Any, names: dict[int, str], of: int | None = None) -> str:
        """``code`` plus, for an adjoint line, ``# backprop of: <forward line>`` (shortened);
        for a tangent line (forward mode), ``# tangent of: <forward line>``."""
        if of is None and (n.role == "forward" or n.origin is None):
            return code
        o = self.graph.nodes[n.origin if of is None else of]
        mark = "tangent of" if of is None and n.role == "tangent" else "backprop of"
        target = names.get(o.id, f"node {o.id}")
        for what in self._forward_texts(o, target, names):
            line = f"{code}  # {mark}: {what}"
            if len(line) <= _LINE:
                return line
        return f"{code}  # {mark}: {target}"

    def _forward_texts(self, o: Any, target: str, names: dict[int, str]) -> list[str]:
        """Ways to name forward node ``o`` in a comment, longest first."""
        if o.is_var:
            return [f"{target} (input)"]
        if o.is_const:
            return [target]
        key = (id(names), o.id, self._scalar)
        texts = self._comments.get(key)
        nodes = self.graph.nodes
        if texts is None and any(nodes[a].is_const and nodes[a].shape != () and
                                 a not in self.consts for a in o.args):
            texts = [target]  # an array this module does not hold (another gradient's origin)
        if texts is None:
            nodes = self.graph.nodes
            unnamed = {a for a in o.args if nodes[a].is_const and nodes[a].shape != ()
                       and a not in self.consts}  # an array constant this module does not hold
            args = ", ".join(names.get(a) or ("<array>" if a in unnamed else self._expr(a, names))
                             for a in o.args)
            full = "" if unnamed else self._expr(o.id, names)
            texts = [f"{target} = {full}"] if full and len(full) <= 48 else []
            texts.append(f"{target} = {o.op}({args})")
            self._comments[key] = texts
        return texts


def _numpy_math() -> list[str]:
    """The fallback of ``scalars="math"`` code: every name the scalar table takes from
    ``math``, bound to the NumPy ufunc of the same meaning (inf/NaN instead of exceptions)."""
    names = fallback_names()
    lines = ["class _numpy_math:",
             '    """``math``\'s functions as NumPy ufuncs: inf/NaN results instead of '
             'exceptions."""', ""]
    return lines + [f"    {m} = np.{n}" for m, n in names.items()]


def _releases(nodes: list, order: list[int], outputs: set[int]) -> dict[int, list[int]]:
    """``{line node: [temporaries whose last use is that line]}`` for large temporaries."""
    last: dict[int, int] = {}
    for i in order:
        for a in nodes[i].args:
            last[a] = i
    out: dict[int, list[int]] = {}
    for a, i in sorted(last.items()):
        n = nodes[a]
        if n.is_var or n.is_const or a in outputs:
            continue
        if math.prod(n.shape) >= _DEL_MIN_SIZE:
            out.setdefault(i, []).append(a)
    return out


def _del_lines(names: list[str]) -> list[str]:
    lines, cur = [], []
    for name in names:
        if cur and len("    del " + ", ".join(cur + [name])) > _LINE:
            lines.append("    del " + ", ".join(cur))
            cur = []
        cur.append(name)
    if cur:
        lines.append("    del " + ", ".join(cur))
    return lines


def _stores(shared: str, stores: list[tuple[int, int]], names: dict[int, str]) -> list[str]:
    """``shared[a:b] = (x, y, ...)``: the values of consecutive slots in one assignment."""
    if not stores:
        return []
    first, last = stores[0][1], stores[-1][1]
    assert last - first + 1 == len(stores), "a part's slots are consecutive"
    items = [names[i] for i, _ in stores]
    return _call(f"{shared}[{first}:{last + 1}] = (", items, ",)" if len(items) == 1 else ")")


def _moves(pairs: list[tuple[str, str]], per_line: int = 3) -> list[str]:
    """``a, b, c = x, y, z`` assignments, three per line (CPython moves up to three values
    without building a tuple)."""
    out = []
    for k in range(0, len(pairs), per_line):
        chunk = pairs[k:k + per_line]
        left = ", ".join(t for t, _ in chunk)
        right = ", ".join(v for _, v in chunk)
        out.append(f"    {left} = {right}")
    return out


def _typed(body: str, args: list[str], types: list[str], held: list[str],
           single: bool) -> list[str]:
    """``return`` the results of ``body(*args)`` as NumPy scalars of their ``types``."""
    lead = "        "
    if single:
        return _call(f"return {types[0]}({body}(", args, "))", lead)
    target = ", ".join(held) + ("," if len(held) == 1 else "")
    typed = [f"{t}({h})" for t, h in zip(types, held)]
    return [*_call(f"{target} = {body}(", args, ")", lead),
            *_call("return (", typed, ",)" if len(held) == 1 else ")", lead)]


def _call(head: str, items: list[str], close: str, lead: str = "    ") -> list[str]:
    """``lead + head`` + comma-separated ``items`` + ``close``, wrapped under the line
    limit (one item per line-width, indented one level more)."""
    one = f"{lead}{head}{', '.join(items)}{close}"
    if len(one) <= _LINE:
        return [one]
    indent = lead + "    "
    return [f"{lead}{head}", *(indent + line for line in _wrap_items(items, _LINE - len(indent))),
            f"{lead}{close}"]


def _fit(line: str) -> str:
    """Mark the rare line no wrapping can shorten (a long op template) for the linter."""
    return line if len(line) <= _LINE or "\n" in line else f"{line}  # noqa: E501"


# -- the docstring ---------------------------------------------------------------------------


def _tree_sizes(graph: Graph, ids: list[int]) -> dict[int, int]:
    """Size of each node's expression when written out as a tree (sharing unfolded)."""
    size: dict[int, int] = {}
    for i in graph.ancestors(ids):
        size[i] = min(1 + sum(size[a] for a in graph.nodes[i].args), 1 << 40)
    return size


def _text(e: Expr, limit: int = _TEXT_LIMIT) -> str:
    """``str(e)``, shortened; a placeholder if the printer fails or the tree is huge."""
    if _tree_sizes(e.graph, [e.node])[e.node] > _PRINT_LIMIT:
        return f"(an expression of {len(e.graph.ancestors([e.node]))} nodes)"
    try:
        text = str(e)
    except Exception:  # the printer is optional here: never let it break codegen
        return f"({e.op} node {e.node})"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _escape(text: str) -> str:
    """Text that is safe inside a triple-quoted docstring, whatever the user wrote."""
    text = text.replace("\\", "\\\\")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text.replace('"""', '\\"\\"\\"')


def _docstring(graph: Graph, p: _Plan, shown: dict[int, Expr] | None = None,
               label: str = "Generated by symgrad (NumPy only).") -> list[str]:
    """The function's docstring; ``shown`` maps output ids to the Exprs to print for them
    (the expressions as the user wrote them, before the compile passes)."""
    nodes, names = graph.nodes, p.names
    shown = shown or {}
    body = [label, "", "Parameters:"]
    for i in p.params:
        n = nodes[i]
        note = "" if names[i] == n.name else f" (variable {n.name!r})"
        body.append(f"    {names[i]}: {n.dtype} {fmt(n.shape)}{note}")
    body += ["", "Returns:" if p.single else f"Returns a tuple of {len(p.outputs)}:"]
    labels = {i: p.aliases.get(i) or names.get(i) or nodes[i].op for i in p.outputs}
    of_var = {a: nodes[f].name for a, f in p.adjoint_for.items() if nodes[f].is_var}
    for i in p.outputs:
        n = nodes[i]
        if n.role == "adjoint" and i in of_var:
            text = f"adjoint of {of_var[i]} (derivative of the expression w.r.t. {of_var[i]})"
        else:  # derivatives written out are long and the code below says it better
            e = shown[i] if i in shown else Expr(graph, i)
            text = _text(e, _TEXT_LIMIT if n.role == "forward" else 80)
        body.append(f"    {labels[i]}: {n.dtype} {fmt(n.shape)} = {text}")
    wrapped: list[str] = []
    for line in body:
        indent = "        " if line.startswith("    ") else "    "
        wrapped += textwrap.wrap(_escape(line), width=_LINE - 4, initial_indent="    ",
                                 subsequent_indent=indent, break_long_words=True,
                                 replace_whitespace=False) or [""]
    wrapped[0] = '    """' + wrapped[0].lstrip()
    return [line.rstrip() for line in wrapped] + ['    """']


# -- public API ------------------------------------------------------------------------------


def to_source(outputs: Expr | Sequence[Expr], inputs: Sequence[Expr | str] | None = None,
              name: str = "f", *, output_names: Sequence[str] | None = None,
              scalars: str = "math", optimize: bool = True, fast_math: bool = False,
              backend: str = "numpy") -> str:
    """The text of a module, importing only NumPy, that defines ``def name(*inputs)``.

    The function returns the outputs (a tuple when a list was given, one value when one
    Expr was given). ``inputs`` are variable Exprs or names in call order (default: every
    variable the outputs use, in the order they first appear when the outputs are read left
    to right, like the signature you would write: ``V @ tanh(W @ x + b)`` gives
    ``(V, W, x, b)``). ``output_names`` optionally names the results
    in the code (otherwise: ``dx`` for the adjoint of ``x``, ``t1, t2, ...`` for the rest).

    ``scalars="math"`` (the default): a function whose every value is a float scalar is
    emitted over Python floats with the standard ``math`` module (several times faster than
    NumPy scalars; ``math`` and NumPy may differ in the last bit of ``tanh``, ``**``, ...),
    with the NumPy version as the fallback wherever ``math`` raises (overflow, domain
    errors); results are NumPy scalars. ``scalars="numpy"``: NumPy everywhere.

    ``optimize`` (default): the graph is first rebuilt through the exact passes
    (:data:`symgrad.passes.COMPILE`: the results are what the graph computes, bit for bit);
    ``fast_math=True`` also applies rewrites that are not IEEE-exact
    (:data:`symgrad.passes.FAST_MATH`: ``a - a -> 0``, the idioms as ops, ...).

    ``backend``: ``"numpy"`` (the default), ``"array_api"`` (the Python array API standard
    only; the function takes its namespace from its inputs with
    ``array_api_compat.array_namespace``, so it runs on NumPy, CuPy, PyTorch, JAX, Dask
    arrays), ``"jax"`` (``jax.numpy``, functional updates; ``compile`` wraps it in
    ``jax.jit``) or ``"torch"`` (PyTorch through ``array_api_compat.torch``). ``scalars``
    applies to ``"numpy"`` only; the others emit array code throughout. See
    :mod:`symgrad.backends.target`.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> f = sg.sum(sg.sin(x))
    >>> src = sg.to_source([f, sg.grad(f, x)], name="sin_and_grad")
    >>> print(src.split('"' * 3)[-1].strip())
    t1 = np.sin(x)
        t2 = np.add.reduce(t1, axis=(-1,), keepdims=False)
        dx = np.cos(x)  # backprop of: t1 = np.sin(x)
        return t2, dx
    """
    return lower(request(outputs, inputs, name, output_names=output_names, scalars=scalars,
                         optimize=optimize, fast_math=fast_math, backend=backend)).source()


def render(lowered: Lowered) -> str:
    """The text of the module of ``lowered`` (see :mod:`.request`)."""
    req = lowered.request
    module = Module(lowered.graph, req.scalars, req.target)
    module.shown = dict(lowered.shown)
    module.constants = list(req.constants)
    for fn in lowered.functions:
        module.add(fn.name, list(fn.outputs), list(fn.inputs), fn.single, fn.output_names)
    return module.render()
