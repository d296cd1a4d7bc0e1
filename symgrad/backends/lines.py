"""Lines of emitted code that every printer writes the same way: calls wrapped to the line
limit, ``del`` of dead temporaries, the moves between a long function's parts.

>>> call("return f(", ["a", "b"], ")")
['    return f(a, b)']
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence

from .literals import LINE, wrap_items

__all__ = ["call", "del_lines", "fit", "moves", "releases", "stores", "typed"]

DEL_MIN_SIZE = 1000  # temporaries with at least this many elements are released early


def call(head: str, items: list[str], close: str, lead: str = "    ") -> list[str]:
    """``lead + head`` + comma-separated ``items`` + ``close``, wrapped under the line
    limit (one item per line-width, indented one level more)."""
    one = f"{lead}{head}{', '.join(items)}{close}"
    if len(one) <= LINE:
        return [one]
    indent = lead + "    "
    return [f"{lead}{head}", *(indent + line for line in wrap_items(items, LINE - len(indent))),
            f"{lead}{close}"]


def fit(line: str) -> str:
    """Mark the rare line no wrapping can shorten (a long op template) for the linter."""
    return line if len(line) <= LINE or "\n" in line else f"{line}  # noqa: E501"


def releases(nodes: Sequence, order: list[int], outputs: set[int],
             held: Container[int] = ()) -> dict[int, list[int]]:
    """``{line node: [temporaries whose last use is that line]}`` for large temporaries
    (not the module's: ``held``)."""
    last: dict[int, int] = {}
    for i in order:
        for a in nodes[i].args:
            last[a] = i
    out: dict[int, list[int]] = {}
    for a, i in sorted(last.items()):
        n = nodes[a]
        if n.is_var or n.is_const or a in outputs or a in held:
            continue
        if math.prod(n.shape) >= DEL_MIN_SIZE:
            out.setdefault(i, []).append(a)
    return out


def del_lines(names: list[str]) -> list[str]:
    lines, cur = [], []
    for name in names:
        if cur and len("    del " + ", ".join(cur + [name])) > LINE:
            lines.append("    del " + ", ".join(cur))
            cur = []
        cur.append(name)
    if cur:
        lines.append("    del " + ", ".join(cur))
    return lines


def stores(shared: str, stores: list[tuple[int, int]], names: dict[int, str]) -> list[str]:
    """``shared[a:b] = (x, y, ...)``: the values of consecutive slots in one assignment."""
    if not stores:
        return []
    first, last = stores[0][1], stores[-1][1]
    assert last - first + 1 == len(stores), "a part's slots are consecutive"
    items = [names[i] for i, _ in stores]
    return call(f"{shared}[{first}:{last + 1}] = (", items, ",)" if len(items) == 1 else ")")


def moves(pairs: list[tuple[str, str]], per_line: int = 3) -> list[str]:
    """``a, b, c = x, y, z`` assignments, three per line (CPython moves up to three values
    without building a tuple)."""
    out = []
    for k in range(0, len(pairs), per_line):
        chunk = pairs[k:k + per_line]
        left = ", ".join(t for t, _ in chunk)
        right = ", ".join(v for _, v in chunk)
        out.append(f"    {left} = {right}")
    return out


def typed(body: str, args: list[str], types: list[str], held: list[str],
           single: bool) -> list[str]:
    """``return`` the results of ``body(*args)`` as NumPy scalars of their ``types``."""
    lead = "        "
    if single:
        return call(f"return {types[0]}({body}(", args, "))", lead)
    target = ", ".join(held) + ("," if len(held) == 1 else "")
    typed = [f"{t}({h})" for t, h in zip(types, held)]
    return [*call(f"{target} = {body}(", args, ")", lead),
            *call("return (", typed, ",)" if len(held) == 1 else ")", lead)]
