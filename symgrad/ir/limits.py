"""Every budget symgrad enforces, in one place: ``sg.limits``.

Work that can explode (long text, a derivative whose graph grows with each order, a dense
Hessian) is bounded, and going over a bound raises :class:`~symgrad.errors.LimitError`
saying what was counted and how to raise the bound — never a hang or a ``MemoryError``.

Read a limit as ``sg.limits.transform_nodes``; change it for the whole process with
``sg.limits.transform_nodes = 10**7``, or for a block of code (this thread only) with
``with sg.limits(transform_nodes=10**7): ...``. ``sg.limits.table()`` lists them all.

>>> import symgrad as sg
>>> sg.limits.transform_nodes
1000000
>>> with sg.limits(transform_nodes=10):
...     sg.limits.transform_nodes
10
>>> x = sg.var("x")
>>> with sg.limits(transform_nodes=10):
...     sg.derivative(sg.sin(x) * sg.exp(x), x, 8)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgrad.errors.LimitError: derivative(n=8) built more than 10 nodes (sg.limits.transform_nodes); ...
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..base.errors import LimitError

#: name -> (default, what it bounds)
DEFAULTS: dict[str, tuple[int, str]] = {
    "parse_chars": (1_000_000, "characters of expression text given to sg.parse"),
    "parse_depth": (100, "nesting depth of brackets and lambdas in expression text"),
    "parse_unary_run": (100, "unary operators in a row in expression text ('- - - x')"),
    "parse_array_elements": (10_000, "numbers in one list literal in expression text"),
    "parse_string_chars": (200, "characters of a string argument in text (einsum's spec)"),
    "transform_nodes": (1_000_000, "nodes one call of grad, vjp, jacobian, hessian, hvp or "
                                   "derivative may add to a graph, checked as it grows (each "
                                   "node costs memory and build time: the bound keeps a "
                                   "runaway transform to some hundreds of MB)"),
    "dense_elements": (100_000_000, "elements of a dense Jacobian, Hessian or derivative "
                                    "tensor (and of its identity seed), and fori_loop's "
                                    "index array, checked before anything is built"),
    "print_tree_nodes": (100_000, "nodes of the expression tree sg.latex and sg.to_sympy "
                                  "write out (a shared subexpression counts once per use), "
                                  "checked before anything is printed; for to_sympy of a "
                                  "loop, the expressions of all its unrolled steps summed"),
}

_NONE: dict[str, int] = {}
_overrides: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar(
    "symgrad_limits", default=_NONE)  # noqa: B039 (never mutated: replaced as a whole)


class Limits:
    """The current limits (attributes), settable globally or per block (see the module)."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {k: v for k, (v, _) in DEFAULTS.items()})

    def __getattr__(self, name: str) -> int:
        if name not in DEFAULTS:
            raise AttributeError(f"sg.limits has no limit {name!r} (limits: "
                                 f"{', '.join(DEFAULTS)})")
        found = _overrides.get().get(name)
        return self._values[name] if found is None else found

    def __setattr__(self, name: str, value: Any) -> None:
        self._values[name] = _checked(name, value)

    def __call__(self, **overrides: Any) -> contextmanager:
        """Limits changed inside a ``with`` block, in this thread (context) only."""
        new = {**_overrides.get(), **{k: _checked(k, v) for k, v in overrides.items()}}
        return _overriding(new)

    def reset(self) -> None:
        """Every limit back to its default."""
        self._values.update({k: v for k, (v, _) in DEFAULTS.items()})

    def table(self) -> list[tuple[str, int, int, str]]:
        """``(name, current value, default, what it bounds)`` for every limit."""
        return [(k, getattr(self, k), d, doc) for k, (d, doc) in DEFAULTS.items()]

    def __repr__(self) -> str:
        return "sg.limits(" + ", ".join(f"{k}={getattr(self, k)}" for k in DEFAULTS) + ")"


@contextmanager
def _overriding(values: dict[str, int]) -> Iterator[None]:
    token = _overrides.set(values)
    try:
        yield
    finally:
        _overrides.reset(token)


def _checked(name: str, value: Any) -> int:
    if name not in DEFAULTS:
        raise LimitError(f"sg.limits has no limit {name!r} (limits: {', '.join(DEFAULTS)})")
    if isinstance(value, bool) or not isinstance(value, int):
        raise LimitError(f"sg.limits.{name} must be a non-negative int")
    value = int.__index__(value)  # exact: a subclass's methods never run
    if value < 0:
        raise LimitError(f"sg.limits.{name} must be a non-negative int")
    return value


def exceeded(name: str, what: str) -> LimitError:
    """The error for going over limit ``name``: what was counted and how to raise it."""
    return LimitError(f"{what} (sg.limits.{name}); raise it with sg.limits.{name} = N or "
                      f"`with sg.limits({name}=N):`")


limits = Limits()

__all__ = ["DEFAULTS", "Limits", "exceeded", "limits"]
