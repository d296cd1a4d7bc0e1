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

from collections.abc import Callable

import numpy as np

from ...errors import SymgradError
from ..array_api_helpers import _sg_xp_const
from ..array_api_table import ARRAY_API
from ..jax_table import JAX
from ..literals import array_literal, const_spec
from ..torch_table import TORCH
from .base import Printer
from .lines import call

__all__ = ["ArrayApiPrinter", "JaxPrinter", "TorchPrinter"]


class ArrayApiPrinter(Printer):
    """The Python array API standard only; the namespace comes from the inputs."""

    table = ARRAY_API

    def reserved(self) -> list[str]:
        return [self.target.namespace, "math", "array_namespace", "array_api_compat"]

    def constant_lines(self) -> list[str]:
        state, nodes = self.state, self.graph.nodes
        if any(isinstance(v, np.ndarray) for _, v in state.constants):
            raise SymgradError(f"backend {self.target.name!r} cannot emit NumPy arrays as "
                               "module constants (a sparse pattern); use backend='numpy'")
        out: list[str] = []
        for i in self._hoisted():
            out += ["", f"{state.consts[i]} = {const_spec(nodes[i].attrs['value'])}"]
        return out + [line for name, value in state.constants
                      for line in ("", f"{name} = {value!r}")]

    def helpers(self) -> list[Callable]:
        found = super().helpers()
        if self.state.consts:
            found = sorted([*found, _sg_xp_const], key=lambda fn: fn.__name__)
        return found

    def finish(self, out: list[str], code: list[str]) -> str:
        text = super().finish(out, code)
        if "math." not in text.replace("import math", ""):
            text = text.replace("import math\n\n", "", 1)
        return text

    def prologue(self, params: list[str]) -> list[str]:
        """The namespace of the inputs (NumPy's when there are none)."""
        ns = self.target.namespace
        if not params:
            return [f"    import array_api_compat.numpy as {ns}  # no inputs: NumPy's"]
        return call(f"{ns} = array_namespace(", params, ")")

    def part_params(self) -> list[str]:
        return [self.target.namespace]  # the parts take the namespace the function found

    def part_args(self) -> list[str]:
        return [self.target.namespace]

    def literal(self, value: np.ndarray, others: list[str], strong: bool) -> str:
        return array_literal(value, others, strong)

    def const_text(self, i: int) -> str:
        return f"_sg_xp_const({self.target.namespace}, {self.state.consts[i]})"

    def copy_text(self, expr: str) -> str:
        return f"{self.target.namespace}.asarray({expr}, copy=True)"

    def strong_literal(self, a: int, user: object) -> bool:
        # the array API takes one Python scalar beside arrays, never two
        return any(b in self.state.inlined for b in user.args if b != a)

    def helpers_take_arrays(self, probe: str) -> bool:
        return "_sg_xp_" in probe


class _ModuleNamespace(ArrayApiPrinter):
    """A variant whose module imports its namespace once (no ``array_namespace`` call)."""

    def prologue(self, params: list[str]) -> list[str]:
        return []

    def part_params(self) -> list[str]:
        return []

    def part_args(self) -> list[str]:
        return []


class JaxPrinter(_ModuleNamespace):
    """``jax.numpy`` as ``xp``: functional updates, JAX's NumPy-style indexing."""

    table = JAX


class TorchPrinter(_ModuleNamespace):
    """PyTorch through ``array_api_compat.torch`` as ``xp``."""

    table = TORCH
