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
PART_LINES = 4000  # lines per part of a long function


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
    """One part of a long function: its ``lines`` (node ids), the names it receives
    (``inputs``) and the names it hands on (``outputs``), in order."""

    lines: list[int]
    inputs: list[str]
    outputs: list[str]


def parts(nodes: Sequence, lines: Sequence[int], names: dict[int, str],
          params: Sequence[str], results: Sequence[str]) -> list[Part]:
    """``lines`` cut into parts of at most :data:`PART_LINES`; what crosses each cut.

    ``results`` are the names the function returns (the last part returns them)."""
    cuts = [list(lines[k:k + PART_LINES]) for k in range(0, len(lines), PART_LINES)]
    # the names each part reads before writing them, and the names it writes
    reads, writes = [], []
    for cut in cuts:
        written: set[str] = set()
        read: set[str] = set()
        for i in cut:
            for a in nodes[i].args:
                name = names.get(a)
                if name is not None and name not in written:
                    read.add(name)
            written.add(names[i])
        reads.append(read)
        writes.append(written)
    needed = set(results)  # live after the last part
    out: list[Part] = []
    for k in range(len(cuts) - 1, -1, -1):
        outputs = sorted(needed)
        needed = (needed - writes[k]) | reads[k]
        out.append(Part(cuts[k], sorted(needed), outputs))
    out.reverse()
    available = set(params)
    for part in out:  # a part only receives what exists by then
        part.inputs = [n for n in part.inputs if n in available]
        available |= set(part.outputs)
    return out
