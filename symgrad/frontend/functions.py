"""The Python front end's functions: one per NumPy name symgrad covers (``sg.exp``,
``sg.sum(x, axis=1)``, ``symgrad.numpy.linalg.solve``), so NumPy code written against a
namespace parameter traces. Ops are their own functions (read from their signatures);
:mod:`.numpy_functions` adds the NumPy functions that are not one op."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..base.errors import UnsupportedError
from ..ir.expr import Expr, function
from ..ir.op import ALIASES, FUNCTIONS, REGISTRY, Signature, public_op


@dataclass(frozen=True)
class Callee:
    """A function the text parser may call: its NumPy ``name``, its ``signature`` (which
    arguments are expressions and which literals) and the function itself (``fn``), the
    same one the Python front end calls, so text and code build the same graph."""

    name: str
    signature: Signature
    fn: Callable[..., Any]

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self.signature.defaults


def callee(name: str) -> Callee | None:
    """The :class:`Callee` for NumPy name ``name``, or None if there is none."""
    fn = function(name)
    if fn is None:
        return None
    signature = getattr(fn, "signature", None)
    if signature is None and public_op(name) is not None:
        signature = public_op(name).signature
    return None if signature is None else Callee(name, signature, fn)


def function_for(name: str) -> Callable[..., Expr]:
    """The user-facing function of NumPy name ``name`` (an op, an alias or a composite).

    >>> import symgrad as sg
    >>> sg.softmax.__doc__[:40]
    'softmax(x, axis): exp(x) / sum(exp(x), a'
    """
    fn = function(name)
    if fn is None:
        raise UnsupportedError(f"symgrad has no function {name!r}")
    return fn


def traced_names() -> list[str]:
    """Every NumPy name symgrad traces: NumPy functions built from ops, and public ops
    (what ``symgrad.numpy`` and ``symgrad`` hold as functions)."""
    ops = [n for n in (*REGISTRY, *ALIASES) if function(n) is not None]
    return sorted({*FUNCTIONS, *ops})
