"""How a long straight-line function is laid out: register names and parts.

Small functions get one readable name per value (``t3``, ``d_t3``). A function of more than
:data:`REGISTERS_FROM` lines names its temporaries like registers instead — ``r0, r1, ...``,
a name reused once the value it held is dead (liveness) — so a 10^5-line function does not
keep 10^5 locals alive, and it is split into parts of at most :data:`PART_LINES` lines,
each its own function taking the values that are still live from the previous part and
returning those the next parts need. Each part is compiled on its own
(``compiled._load``), so CPython's compiler never holds the whole function's syntax tree:
its time and memory stay linear in the graph and small.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

REGISTERS_FROM = 2000  # lines: from here on, temporaries are registers
PART_LINES = 10_000  # lines per part of a long function


def last_uses(nodes: Sequence, lines: Sequence[int]) -> dict[int, int]:
    """``{value: position in lines of its last use}``."""
    last: dict[int, int] = {}
    for k, i in enumerate(lines):
        for a in nodes[i].args:
            last[a] = k
    return last


def registers(nodes: Sequence, lines: Sequence[int], fixed: dict[int, str],
              taken: set[str]) -> dict[int, str]:
    """Names for the values computed on ``lines`` that ``fixed`` does not name: ``r<k>``,
    each name reused after the last use of the value it held (a line may reuse a name
    freed by its own operands: the right side is evaluated first)."""
    last = last_uses(nodes, lines)
    free: list[str] = []
    names: dict[int, str] = {}
    counter = 0
    dying: dict[int, list[int]] = {}
    for a, k in last.items():
        dying.setdefault(k, []).append(a)
    for k, i in enumerate(lines):
        for a in dying.get(k, ()):
            name = names.get(a)
            if name is not None:
                free.append(name)
        if i in fixed:
            continue
        if free:
            names[i] = free.pop()
        else:
            while f"r{counter}" in taken:
                counter += 1
            names[i] = f"r{counter}"
            counter += 1
        if i not in last:  # never used (a dead value kept for an output alias): free now
            free.append(names[i])
    return names


@dataclass
class Part:
    """One part of a long function: its ``lines`` (node ids), the values it reads from the
    shared list of values that cross parts (``loads``: ``(node, slot)``) and those it
    writes there (``stores``)."""

    lines: list[int]
    loads: list[tuple[int, int]]
    stores: list[tuple[int, int]]


def parts(nodes: Sequence, lines: Sequence[int], params: Sequence[int],
          results: Sequence[int]) -> tuple[list[Part], dict[int, int]]:
    """``lines`` cut into parts of at most :data:`PART_LINES`, and ``{value: slot}`` for
    every value that crosses a cut (parameters and ``results`` included): a value is
    stored once, after the part that computes it (each part's values take consecutive
    slots: one slice assignment), and loaded once by each later part that reads it, so
    what crosses the cuts is linear in the graph."""
    cuts = [list(lines[k:k + PART_LINES]) for k in range(0, len(lines), PART_LINES)]
    for k in range(1, len(cuts)):  # a call's results stay with its statement
        while cuts[k] and nodes[cuts[k][0]].args and nodes[nodes[cuts[k][0]].args[0]].is_call:
            cuts[k - 1].append(cuts[k].pop(0))
    cuts = [cut for cut in cuts if cut]
    home = {i: 0 for i in params}  # the part a value is made in (0: the caller)
    for k, cut in enumerate(cuts, start=1):
        for i in cut:
            home[i] = k
    needed_later: set[int] = set(i for i in results if i in home)
    loads_of = []
    for k, cut in enumerate(cuts, start=1):
        loads = sorted({a for i in cut for a in nodes[i].args if a in home and home[a] < k})
        loads_of.append(loads)
        needed_later.update(loads)
    # slots in the order values are made, so that each part stores one contiguous run
    slots: dict[int, int] = {}
    for i in [*params, *(i for cut in cuts for i in cut)]:
        if i in needed_later and i not in slots:
            slots[i] = len(slots)
    out = [Part(cut, [(a, slots[a]) for a in loads], [(i, slots[i]) for i in cut if i in slots])
           for cut, loads in zip(cuts, loads_of)]
    return out, slots
