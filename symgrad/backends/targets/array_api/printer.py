"""The array API printer, with JAX and PyTorch as thin variants.

The array API module calls only the standard's functions on ``xp``, the namespace each call
takes from its inputs (``array_api_compat.array_namespace``), so it runs on NumPy, CuPy,
PyTorch, JAX and Dask arrays. Array constants are module-level Python data, built into an
array of the call's namespace by ``_sg_xp_const``; a 0-d constant is a Python literal only
beside an array operand (the standard's functions take arrays). The JAX and PyTorch
variants import their namespace once at module level instead (``jax.numpy``,
``array_api_compat.torch``) and differ from the array API only in their tables.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> src = sg.to_source(sg.sum(sg.sin(x) * 2.0), backend="array_api")
>>> print(src.split('"' * 3)[-1].strip())
xp = array_namespace(x)
    t1 = xp.sin(x)
    t2 = t1 * 2.0
    t3 = xp.sum(t2, axis=(-1,), keepdims=False)
    return t3
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ....base.errors import SymgradError
from ....ir.shapes import is_complex
from ...lines import call
from ...loops import LoopSpec, append, indent
from ...printer import ModuleState, Printer
from ...template import helpers_of, imports_of
from .helpers import _sg_xp_const, _sg_xp_device
from .jax_table import JAX
from .literals import array_literal, const_spec
from .table import ARRAY_API, COMPLEX_ORDER, DEVICE
from .torch_table import TORCH

if TYPE_CHECKING:
    from ...loops import LoopEmitter
    from ...stages import Lowered

__all__ = ["ArrayApiPrinter", "JaxPrinter", "TorchPrinter"]


class ArrayApiPrinter(Printer):
    """The Python array API standard only; the namespace comes from the inputs, and where
    the function creates arrays, their device too (``dev``, from the inputs')."""

    table = ARRAY_API

    def __init__(self, lowered: Lowered, state: ModuleState | None = None,
                 loops: LoopEmitter | None = None) -> None:
        super().__init__(lowered, state, loops)
        self._uses_device = False  # a function binds its inputs' device (_sg_xp_device)

    def reserved(self) -> list[str]:
        return [self.target.namespace, DEVICE, "math", "array_namespace", "array_api_compat",
                _sg_xp_const.__name__, _sg_xp_device.__name__]

    def header(self) -> list[str]:
        lines = super().header()  # then the modules the templates import (jax.scipy.special)
        return lines + [f"import {m}" for m in imports_of(self.table, self.module_ops())
                        if f"import {m}" not in lines]

    def constant_lines(self) -> list[str]:
        state, nodes = self.state, self.graph.nodes
        if any(isinstance(v, np.ndarray) for _, v in state.constants):
            raise SymgradError(f"backend {self.target.name!r} cannot emit NumPy arrays as "
                               "module constants (a sparse pattern); use backend='numpy'")
        out: list[str] = []
        for i in self.hoisted():
            out += ["", f"{state.consts[i]} = {const_spec(nodes[i].attrs['value'])}"]
        return out + [line for name, value in state.constants
                      for line in ("", f"{name} = {value!r}")] + self.data_lines()

    def helpers(self) -> list[Callable]:
        more = [_sg_xp_const] if self.state.consts else []
        more += [_sg_xp_device] if self._uses_device else []
        more += helpers_of(COMPLEX_ORDER, [n.op for n in self.graph.nodes if _ordered(n, self)])
        found = {fn.__name__: fn for fn in [*super().helpers(), *more]}
        return [found[k] for k in sorted(found)]

    def op_text(self, n: Any, names: dict[int, str]) -> str:
        """Ordering complex values: :data:`~.table.COMPLEX_ORDER`'s form (NumPy's order)."""
        if not _ordered(n, self):
            return super().op_text(n, names)
        texts = [self.operand(a, n, names) for a in n.args]
        return COMPLEX_ORDER[n.op].render(texts, n.attrs)

    def finish(self, out: list[str], code: list[str]) -> str:
        text = super().finish(out, code)
        if "math." not in text.replace("import math", ""):
            text = text.replace("import math\n\n", "", 1)
        return text

    def prologue(self, params: list[str], code: list[str]) -> list[str]:
        """The namespace of the inputs (NumPy's when there are none), then their device."""
        ns = self.target.namespace
        out = (call(f"{ns} = array_namespace(", params, ")") if params else
               [f"    import array_api_compat.numpy as {ns}  # no inputs: NumPy's"])
        return out + self._device_lines(params, code)

    def part_params(self, code: list[str]) -> list[str]:
        # the parts take the namespace the function found, and its device if they use it
        return [self.target.namespace, *([DEVICE] if _on_device(code) else [])]

    def _device_lines(self, params: list[str], code: list[str]) -> list[str]:
        """``dev = _sg_xp_device(inputs)`` where ``code`` creates arrays on the device."""
        if not _on_device(code):
            return []
        self._uses_device = self._uses_device or bool(params)
        return (call(f"{DEVICE} = _sg_xp_device(", params, ")") if params else
                [f"    {DEVICE} = None  # no inputs: the default device"])

    def literal(self, value: np.ndarray, others: list[str], strong: bool) -> str:
        return array_literal(value, others, strong)

    def const_text(self, i: int) -> str:
        return f"_sg_xp_const({self.target.namespace}, {self.state.consts[i]}, {DEVICE})"

    def copy_text(self, expr: str) -> str:
        return f"{self.target.namespace}.asarray({expr}, copy=True)"

    def strong_literal(self, a: int, user: object) -> bool:
        # the array API takes one Python scalar beside arrays, never two
        return any(b in self.state.inlined for b in user.args if b != a)

    def helpers_take_arrays(self, probe: str) -> bool:
        return "_sg_xp_" in probe

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """A ``for`` loop collecting the per-step results in lists, stacked at the end."""
        return [*spec.head(name, self.part_params(stmts)), *_stacked_loop(spec, stmts)]


class _ModuleNamespace(ArrayApiPrinter):
    """A variant whose module imports its namespace once (no ``array_namespace`` call)."""

    def prologue(self, params: list[str], code: list[str]) -> list[str]:
        return self._device_lines(params, code)

    def part_params(self, code: list[str]) -> list[str]:
        return [DEVICE] if _on_device(code) else []


class JaxPrinter(_ModuleNamespace):
    """``jax.numpy`` as ``xp``: functional updates, JAX's NumPy-style indexing."""

    table = JAX

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """``jax.lax.scan`` of a nested step function (a traced loop, compiled once by
        ``jax.jit``)."""
        return [*spec.head(name, self.part_params(stmts)), *_lax_scan(spec, stmts)]


class TorchPrinter(_ModuleNamespace):
    """PyTorch through ``array_api_compat.torch`` as ``xp``."""

    table = TORCH


_DEVICE_USE = re.compile(rf"\b{DEVICE}\b")  # a line that creates an array on the device


def _ordered(n: Any, printer: Printer) -> bool:
    """Whether node ``n`` orders complex values (written by COMPLEX_ORDER's form)."""
    nodes = printer.graph.nodes
    return n.op in COMPLEX_ORDER and any(is_complex(str(nodes[a].dtype)) for a in n.args)


def _on_device(code: list[str]) -> bool:
    """Whether any line of ``code`` creates an array on the inputs' device."""
    return any(_DEVICE_USE.search(line) for line in code)


def _stacked_loop(s: LoopSpec, stmts: list[str]) -> list[str]:
    lines, ys, stored = s.buffers(lambda p: "[]")
    lines += s.for_loop(stmts, ys, stored, append, "_t, ...")
    for p in s.parts:
        kind, j = s.kind(p)
        if kind == "carry":
            continue
        name = ys[j] if kind == "y" else stored[j]
        shape, dtype = s.aval(p)
        if s.reverse:
            lines.append(f"    {name}.reverse()")
        empty = f"xp.zeros({(0, *shape)!r}, dtype=xp.{dtype})"
        lines.append(f"    {name} = xp.stack({name}) if {name} else {empty}")
    return lines + [s.returned(ys, stored)]


def _lax_scan(s: LoopSpec, stmts: list[str]) -> list[str]:
    ys = {j: f"_y{j}" for j in range(s.ny)}
    stored = {j: f"_s{j}" for j in range(s.nc)}

    def tup(items: list[str]) -> str:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    lines = ["    from jax import lax as _sg_lax", "", "    def _sg_step(_c, _x):"]
    if s.carries:
        lines.append(f"        {', '.join(s.carries)}, = _c")
    if s.x_names:
        lines.append(f"        {', '.join(s.x_names)}, = _x")
    lines += indent(stmts)
    lines.append(f"        return {tup(s.results[:s.nc])}, "
                 f"{tup(s.results[s.nc:] + s.carries)}")
    lines.append("")
    final = [f"_f{j}" for j in range(s.nc)]
    avals = s.body.avals()
    init = [f"xp.asarray({c}, dtype=xp.{avals[j][1]})" for j, c in enumerate(s.carries)]
    lhs = f"{tup(final)}, {tup([ys[j] for j in range(s.ny)] + list(stored.values()))}"
    lines += call(f"{lhs} = _sg_lax.scan(", ["_sg_step", tup(init), tup(s.xs),
                                              f"length={s.length}", f"reverse={s.reverse}"],
                   ")", "    ")
    return lines + [s.returned(ys, stored, final)]
