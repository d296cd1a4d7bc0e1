"""The NumPy printer (the default target) and its scalar-``math`` variant.

The NumPy module imports only ``numpy as np``; array constants are hoisted to module level
(built once at import, read-only). With ``scalars="math"`` a function whose every value is
a float scalar is printed by :class:`ScalarMathPrinter`: one body over Python floats with
the standard ``math`` module (several times faster than NumPy scalars), called again over
NumPy scalars with NumPy's functions (``_numpy_math``) wherever ``math`` raises.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> src = sg.to_source([sg.sin(x), sg.exp(x)], name="f")
>>> [line.strip() for line in src.splitlines() if "_f_scalar(" in line]
['def _f_scalar(x, math=math):', '_r0, _r1 = _f_scalar(float(x))', \
'_r0, _r1 = _f_scalar(np.float64(x), math=_numpy_math)']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import SymgradError
from ..literals import array_source, numpy_literal
from ..math_table import MATH, fallback_names
from ..naming import Namer, Plan
from ..numpy_table import NUMPY, NUMPY_TYPE
from .base import ModuleState, Printer
from .lines import call, typed

if TYPE_CHECKING:
    from ..request import Lowered

__all__ = ["NumpyPrinter", "ScalarMathPrinter"]


class NumpyPrinter(Printer):
    """NumPy source: ``np.*`` calls, NumPy arrays as module constants."""

    table = NUMPY
    numpy_only = True

    def __init__(self, lowered: Lowered, state: ModuleState | None = None) -> None:
        super().__init__(lowered, state)
        scalars = lowered.request.scalars == "math"
        self._math = ScalarMathPrinter(lowered, self.state) if scalars else None
        self._scalar_plans = {p.name for p in self.state.plans
                              if self._math is not None and self._math.accepts(p)}

    def header(self) -> list[str]:
        lines = super().header()
        if self._scalar_plans:
            lines[1:1] = ["import math", ""]
        return lines

    def constant_lines(self) -> list[str]:
        state, nodes = self.state, self.graph.nodes
        out = [""] if state.consts else []
        for i in self._hoisted():
            name = state.consts[i]
            out += [f"{name} = {array_source(nodes[i].attrs['value'])}",
                    f"{name}.flags.writeable = False"]
        for name, value in state.constants:
            if isinstance(value, np.ndarray):
                out += ["", f"{name} = {array_source(value)}", f"{name}.flags.writeable = False"]
            else:
                out += ["", f"{name} = {value!r}"]
        return out

    def hoists(self) -> bool:
        return True

    def derived_lines(self) -> list[str]:
        state, nodes = self.state, self.graph.nodes
        out = [""] if state.derived else []
        for i in state.derived:
            name = state.consts[i]
            out += [f"{name} = {self._op_text(nodes[i], {})}", f"{name}.flags.writeable = False"]
        return out

    def function(self, p: Plan) -> tuple[list[str], list[str]]:
        if p.name in self._scalar_plans:
            return self._math.function(p)
        return super().function(p)

    def finish(self, out: list[str], code: list[str]) -> str:
        uses_np = (bool(self.state.consts) or bool(self.helpers()) or bool(self.state.constants)
                   or any("np." in ln.split("#")[0] for ln in code))
        if not uses_np:  # e.g. only arithmetic: keep the import, quiet the linter
            k = out.index("import numpy as np")
            out[k] += "  # noqa: F401"
        return super().finish(out, code)

    def literal(self, value: np.ndarray, others: list[str], strong: bool) -> str:
        return numpy_literal(value, others, strong)

    def copy_text(self, expr: str) -> str:
        return f"{expr}.copy()"

    def no_source(self, op: str, i: int) -> None:
        raise SymgradError(f"node {i}: op {op!r} has no NumPy source; cannot emit it")


class ScalarMathPrinter(NumpyPrinter):
    """An all-scalar function over Python floats with ``math``: the body, then the function
    calling it, with the NumPy version of the same body as the fallback. Results are NumPy
    scalars either way (``np.float64``, ``np.bool_``), as from the NumPy version."""

    table = MATH

    def __init__(self, lowered: Lowered, state: ModuleState) -> None:
        Printer.__init__(self, lowered, state)
        self._shim_done = False  # the module defines _numpy_math already

    def accepts(self, p: Plan) -> bool:
        """Whether every value of ``p`` is a float64 (or bool) scalar with a ``math`` form."""
        for i in p.order:
            n = self.graph.nodes[i]
            kinds = ("float64", "bool", "int64") if n.is_const else ("float64", "bool")
            if n.shape != () or n.dtype not in kinds:
                return False
            if not (n.is_var or n.is_const) and self.table.get(n.op) is None:
                return False
        return True

    def def_params(self, params: list[str]) -> list[str]:
        return [*params, "math=math"]

    def part_params(self, code: list[str]) -> list[str]:
        return ["math=math"]

    def part_args(self, code: list[str]) -> list[str]:
        return ["math"]

    def function(self, p: Plan) -> tuple[list[str], list[str]]:
        params = [p.names[i] for i in p.params]
        body = self._helper_name(p, "scalar")
        lines, code = self._function(p, body, [])
        nodes = self.graph.nodes
        head = [*call(f"def {p.name}(", params, "):", ""), *self.doc(p)]
        types = [NUMPY_TYPE[nodes[i].dtype] for i in p.outputs]
        got = Namer(params)
        held = [got.fresh(f"_r{k}") for k in range(len(types))]
        floats = typed(body, [f"float({a})" for a in params], types, held, p.single)
        numpy = typed(body, [f"np.float64({a})" for a in params] + ["math=_numpy_math"],
                      types, held, p.single)
        tail = ["    try:", *floats, "    except (ArithmeticError, ValueError):", *numpy]
        shim = [] if self._shim_done else [*_numpy_math(), "", ""]
        self._shim_done = True
        return shim + lines + ["", ""] + head + tail, shim + code + head[:1] + tail


def _numpy_math() -> list[str]:
    """The fallback of ``scalars="math"`` code: every name the scalar table takes from
    ``math``, bound to the NumPy ufunc of the same meaning (inf/NaN instead of exceptions)."""
    names = fallback_names()
    lines = ["class _numpy_math:",
             '    """``math``\'s functions as NumPy ufuncs: inf/NaN results instead of '
             'exceptions."""', ""]
    return lines + [f"    {m} = np.{n}" for m, n in names.items()]
