"""What every loop-nest form is written with (:mod:`.nests`, :mod:`.nest_products`): the
:class:`Site` of one node, the :class:`Writer` of fresh loop names, subscripts and casts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..numpy.table import NUMPY_TYPE

__all__ = ["FLOATS", "Site", "Writer", "affine", "aligned", "at", "axes_of", "cast", "copy_map",
           "shape_of"]


FLOATS = frozenset({"float64", "float32"})


@dataclass
class Site:
    """One node as compiled code writes it: ``ins`` (its operands' texts: names, or
    literals for 0-d constants), ``out`` (the name its lines assign), ``fresh`` (a new
    local name for a prefix) and, for a call with several results, ``outs`` (the name of
    each result, None for one nothing reads)."""

    node: Any
    nodes: Any
    ins: list[str]
    out: str
    fresh: Callable[[str], str]
    outs: list[str | None] | None = None

    @property
    def args(self) -> list[Any]:
        return [self.nodes[a] for a in self.node.args]

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    @property
    def ctor(self) -> str:
        """The NumPy scalar type of the result (``np.float64``)."""
        return NUMPY_TYPE[self.node.dtype]


class Writer:
    """Lines at a nesting depth, with fresh names for loop indices and locals."""

    def __init__(self, site: Site) -> None:
        self.site, self.lines, self.depth = site, [], 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def new(self, prefix: str = "v") -> str:
        return self.site.fresh(prefix)

    def loop(self, n: int | str, start: int | str = 0) -> str:
        """Open ``for i in range(start, n):``; the index's name."""
        i = self.new("i")
        self(f"for {i} in range({n}):" if start == 0 else f"for {i} in range({start}, {n}):")
        self.depth += 1
        return i

    def loops(self, shape: Sequence[int]) -> list[str]:
        return [self.loop(d) for d in shape]

    def end(self, k: int = 1) -> None:
        self.depth -= k

    def alloc(self, name: str, shape: tuple, dtype: str, fill: str = "empty") -> None:
        self(f"{name} = np.{fill}({shape!r}, dtype={NUMPY_TYPE[dtype]})")

    def set(self, name: str, shape: tuple, idx: Sequence[str], value: str) -> None:
        """``name[idx] = value``, or ``name = value`` for a 0-d result."""
        self(f"{at(name, shape, idx)} = {value}")

    def put(self, dst: str, lead: Sequence[str], src: str, shape: Sequence[int],
            offsets: dict[int, int] | None = None) -> None:
        """``dst[lead..., i...] = src[i...]`` over ``src``'s ``shape``, element by element
        (an axis ``d`` in ``offsets`` shifted by it): Numba compiles an array assigned to a
        slice with a shape check whose error message alone takes seconds to compile."""
        idx = self.loops(shape)
        key = [affine((offsets or {}).get(d, 0), 1, i) for d, i in enumerate(idx)]
        self(f"{dst}[{', '.join([*lead, *key])}] = {at(src, shape, idx)}"
             if [*lead, *key] else f"{dst} = {src}")
        self.end(len(shape))


def at(text: str, shape: Sequence[int], idx: Sequence[str]) -> str:
    """The element of operand ``text`` (of ``shape``) at ``idx`` (one text per axis; a 0-d
    operand is its own element)."""
    return f"{text}[{', '.join(idx)}]" if len(shape) else text


def aligned(shape: Sequence[int], full: Sequence[int], idx: Sequence[str]) -> list[str]:
    """The index of an operand of ``shape`` broadcast against ``full`` (indices ``idx``):
    aligned to the right, ``0`` along its axes of length 1."""
    off = len(full) - len(shape)
    return ["0" if s == 1 and full[off + d] != 1 else idx[off + d] for d, s in enumerate(shape)]


def cast(dtype: str, text: str, source: str) -> str:
    """``text`` (of dtype ``source``) as ``dtype``: unchanged when they agree."""
    return text if dtype == source else f"{NUMPY_TYPE[dtype]}({text})"


def axes_of(axis: Any, ndim: int) -> list[int]:
    """Non-negative, sorted axes of an ``axis`` attribute (all when None)."""
    if axis is None:
        return list(range(ndim))
    seq = (axis,) if isinstance(axis, (int, np.integer)) else axis
    return sorted({int(a) % ndim for a in seq}) if ndim else []


def shape_of(n: Any) -> tuple[int, ...]:
    return tuple(n.shape)


def affine(start: int, step: int, i: str) -> str:
    if step == 1:
        return i if start == 0 else f"{start} + {i}"
    return f"{start} + {step} * {i}" if start else f"{step} * {i}"


def copy_map(site: Site, read: Callable[[list[str]], str]) -> list[str]:
    """The result filled element by element: ``out[i] = read(i)``."""
    n, w = site.node, Writer(site)
    out = shape_of(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = w.loops(out)
    w.set(site.out, out, idx, read(idx))
    return w.lines
