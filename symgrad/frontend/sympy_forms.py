"""How one symgrad node reads in SymPy, and the guards every walk into SymPy shares: the
symbol of a variable, the number of a constant, an op's sympy form (read from its stanza's
``sympy`` field), the cap on the size of the written-out tree and the error for recursion
too deep for sympy. :mod:`.sympy_io` (both directions), :mod:`.sympy_loops` (loops
unrolled), :mod:`symgrad.passes.sympy_bridge` and :mod:`symgrad.printing.latex` build on
them; sympy is imported on first use.

>>> import sympy
>>> number(sympy, np.array(2.0), 0), symbol(sympy, "k", "int64").is_integer
(2, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..base.errors import LimitError, SymgradError
from ..ir.graph import Graph
from ..ir.limits import exceeded, limits
from ..ir.op import Op
from ..ir.shapes import is_float

__all__ = ["check_tree", "number", "symbol", "sympy_form", "sympy_module", "too_deep"]


def sympy_module():
    """sympy, imported on first use."""
    try:
        import sympy
    except ImportError:  # pragma: no cover - sympy is a dependency
        raise SymgradError("this needs sympy (pip install sympy)") from None
    return sympy


def too_deep(what: str) -> LimitError:
    """sympy walks its trees recursively: a chain nested thousands deep exhausts Python's
    recursion limit inside sympy."""
    return LimitError(f"{what}: the expression is nested too deeply for sympy (Python's "
                      "recursion limit was reached inside it); translate a part of it")


def check_tree(graph: Graph, order: list[int], root: int, what: str) -> None:
    """A printed formula writes a shared subexpression once per use: the tree a DAG of 37
    nodes unfolds into can have 10^12 nodes. Its size (counted in one pass, capped) must
    fit ``sg.limits.print_tree_nodes``."""
    cap = limits.print_tree_nodes
    size: dict[int, int] = {}
    nodes = graph.nodes
    for i in order:
        size[i] = min(cap + 1, 1 + sum(size[a] for a in nodes[i].args))
    if size[root] > cap:
        raise exceeded("print_tree_nodes", f"{what}: written out as a formula, the "
                       f"expression has more than {cap:,} nodes (its {len(order):,} nodes "
                       "share subexpressions); print a part of it, or use sg.listing(expr)")


def symbol(sp, name: str, dtype: str):
    """The sympy Symbol of a variable: real for floats, integer for integers."""
    if is_float(dtype):
        return sp.Symbol(name, real=True)
    if dtype == "bool":
        return sp.Symbol(name)
    return sp.Symbol(name, integer=True)


def number(sp, value: np.ndarray, node: int):
    """The sympy number of a scalar constant (whole numbers as Integers, pi and e by name)."""
    if value.ndim:
        raise SymgradError(f"to_sympy: the constant array of node {node} (shape "
                           f"{value.shape}) has no sympy form; only scalar constants translate")
    v = value.item()
    if isinstance(v, bool):
        return sp.true if v else sp.false
    if isinstance(v, int):
        return sp.Integer(v)
    if math.isnan(v):
        return sp.nan
    if math.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    if v == math.pi:
        return sp.pi
    if v == math.e:
        return sp.E
    return sp.Integer(int(v)) if v.is_integer() and abs(v) < 2**53 else sp.Float(v)


def sympy_form(sp, op: Op, args: list, attrs: Mapping, what: str = "to_sympy"):
    """``op`` applied to sympy ``args``, from the op's ``sympy`` field; a SymgradError naming
    the op where it has none (or has attributes sympy cannot say)."""
    if op.sympy is None or (op.attrs and any(attrs.get(k) != d for k, d in op.attrs.items())):
        raise SymgradError(
            f"{what}: op '{op.name}' has no sympy form (only elementwise ops translate); "
            "sg.latex(expr) writes such expressions in matrix notation"
        )
    if isinstance(op.sympy, str):
        return getattr(sp, op.sympy)(*args)
    return op.sympy(sp, *args)
