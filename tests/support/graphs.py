"""Helpers shared by the test files: graph comparison, the current stack depth, the column an
error's caret points at."""

from __future__ import annotations

import sys

import symgrad as sg
from symgrad.ir.values import freeze


def canonical(e: sg.Expr) -> list:
    """The same DAG whatever the creation order: nodes numbered in post-order from e."""
    g = e.graph
    seen: dict[int, int] = {}
    order: list[int] = []
    stack = [(e.node, False)]
    while stack:
        i, done = stack.pop()
        if done:
            if i not in seen:
                seen[i] = len(order)
                order.append(i)
        elif i not in seen:
            stack.append((i, True))
            stack.extend((a, False) for a in reversed(g.nodes[i].args))
    return [row(g.nodes[i], seen) for i in order]


def structure(e: sg.Expr) -> list:
    """The expression's ancestors in creation order, ids renumbered: the exact graph."""
    g = e.graph
    ids = g.ancestors([e.node])
    pos = {i: k for k, i in enumerate(ids)}
    return [row(g.nodes[i], pos) for i in ids]


def row(n, pos) -> tuple:
    """A node as a comparable tuple, operands renumbered by ``pos``."""
    return (n.op, tuple(pos[a] for a in n.args), freeze(n.attrs), n.shape, n.dtype, n.name)


def stack_depth() -> int:
    """Frames on the stack now: a recursion limit just above it fails any recursive walk."""
    frame, n = sys._getframe(), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def caret(err: Exception) -> tuple[str, int]:
    """The text line a ParseError shows and the column of the caret under it."""
    lines = str(err).splitlines()
    return lines[-2][4:], lines[-1].index("^") - 4
