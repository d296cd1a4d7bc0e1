"""Reading the Numba target's loop-nest text for the C target's translation: the Python
operators' C forms, what a call names (``np.exp``, ``np.linalg.inv``) and literals.

>>> import ast
>>> np_name(ast.parse("np.exp", mode="eval").body), literal(ast.parse("(2, 3)", mode="eval").body)
('exp', (2, 3))
"""

from __future__ import annotations

import ast
from typing import Any

from .scalars import NP_DTYPE, Unsupported

__all__ = ["BINOP", "CMP", "dtype_kw", "int_literal", "linalg_name", "literal", "load",
           "np_name", "root"]

BINOP = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Mod: "%", ast.Pow: "**"}
CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def linalg_name(e: ast.expr) -> str | None:
    """``inv`` of ``np.linalg.inv``, else None."""
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Attribute) \
            and e.value.attr == "linalg" and np_name(e.value) == "linalg":
        return e.attr
    return None


def np_name(e: ast.expr) -> str | None:
    """``exp`` of ``np.exp``, else None."""
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "np":
        return e.attr
    return None


def dtype_kw(v: ast.Call) -> str:
    """The dtype a ``dtype=np.float64`` keyword names."""
    for k in v.keywords:
        if k.arg == "dtype":
            name = np_name(k.value)
            if name in NP_DTYPE:
                return NP_DTYPE[name]
    raise Unsupported(f"an array of no C dtype: {ast.unparse(v)}")


def literal(e: ast.expr) -> Any:
    """A literal's value (shapes, slice bounds): :class:`Unsupported` for anything else."""
    try:
        return ast.literal_eval(e)
    except ValueError:
        raise Unsupported(f"a non-literal {ast.unparse(e)}") from None


def load(t: ast.expr) -> ast.expr:
    """Assignment target ``t`` as an expression that reads it."""
    out = ast.parse(ast.unparse(t), mode="eval").body
    return out


def int_literal(e: ast.expr) -> int | None:
    """The value of an integer literal (``3``, ``-1``), else None."""
    try:
        value = ast.literal_eval(e)
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def root(v: ast.expr) -> str | None:
    """The name an subscript or attribute chain starts from (``x`` of ``x[0].T``)."""
    while isinstance(v, (ast.Subscript, ast.Attribute)):
        v = v.value
    return v.id if isinstance(v, ast.Name) else None
