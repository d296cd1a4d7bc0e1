"""The Python front end's functions: one per public op (``sg.exp``, ``sg.sum(x, axis=1)``),
made from the op's signature, so NumPy code written against a namespace parameter traces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.graph import Expr, call
from ..ir.op import lookup


def function_for(name: str) -> Callable[..., Expr]:
    """The user-facing function of op ``name`` (or an alias): ``sg.exp``, ``sg.sum``, ...

    >>> import symgrad as sg
    >>> sg.sum.__doc__
    'sum(x, axis, keepdims): sum over axis (all axes when None)'
    """
    op = lookup(name)
    if op.front is not None:
        return op.front

    def fn(*args: Any, **kwargs: Any) -> Expr:
        return call(op.name, *args, **kwargs)

    s = op.signature
    params = s.describe()[1:-1]
    keywords = s.keywords_text()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}({params}{', ' if params and keywords else ''}{keywords}): " \
                 f"{op.doc or op.name}"
    return fn
