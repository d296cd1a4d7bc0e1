"""A module's C text in parts the compiler builds side by side, and their libraries as one.

The C printer starts each function of the module's text (a kernel with its entry, a loop
function) with :data:`MARK`, after the prelude. :func:`split` groups the functions into
at most as many parts as the machine has cores (never more than :data:`MAX_PARTS`),
functions that call one another in one part, each part of at least
:data:`MIN_PART_BYTES`: each part is the prelude and its functions, a C text of its own,
compiled (and cached) by :func:`.build.load_library` as any text, the parts at the same
time. A module's compile is most of a cold build (W2's GMM: 0.16 s of gcc in 0.19 s);
two parts of it compile in 0.10 s on two cores. The split depends on the text and the
machine's core count only, so a second process finds every part in the cache.

>>> text = "/* prelude */" + "".join(f"\\n{MARK}\\nint f{k}(void) {{ return {k}; }}"
...                                   for k in range(3))
>>> [p.count("int f") for p in split(text, parts=2, min_bytes=1)]
[2, 1]
"""

from __future__ import annotations

import os
import re
from typing import Any

MARK = "/* symgrad: a function the compiler may build apart */"
MAX_PARTS = 4
MIN_PART_BYTES = 8000  # a part's compile below this is gcc's fixed cost (~15 ms) and less
_DEFINED = re.compile(r"^(?:static\s+)?(?:int|void\s*\*)\s*(\w+)\s*\(", re.M)
_CALLED = re.compile(r"\b(\w+)\s*\(")  # every name called (one pass: linear in the text)


def machine_parts() -> int:
    """The most parts a text is split into here: the cores this process may run on (at
    most :data:`MAX_PARTS`); ``$SYMGRAD_C_PARTS`` where set."""
    given = os.environ.get("SYMGRAD_C_PARTS", "").strip()
    if given.isdigit():
        return max(1, int(given))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(cores, MAX_PARTS)


def split(text: str, parts: int | None = None, min_bytes: int | None = None) -> list[str]:
    """C text ``text`` as at most ``parts`` texts (default :func:`machine_parts`), each
    the prelude and some of its functions (those calling one another together, the parts
    balanced by size, about ``min_bytes`` of functions each at least: default
    :data:`MIN_PART_BYTES`); ``[text]`` where it does not split."""
    parts = machine_parts() if parts is None else parts
    min_bytes = MIN_PART_BYTES if min_bytes is None else min_bytes
    head, *chunks = text.split(MARK)
    groups = _connected(chunks) if parts > 1 and len(chunks) > 1 else []
    total = sum(len(c) for c in chunks)
    n = min(parts, len(groups), total // max(1, min_bytes))
    if n < 2:
        return [text]
    bins: list[list[int]] = [[] for _ in range(n)]
    load = [0] * n
    for group in sorted(groups, key=lambda g: -sum(len(chunks[i]) for i in g)):
        k = load.index(min(load))
        bins[k] += group
        load[k] += sum(len(chunks[i]) for i in group)
    return [head + MARK + MARK.join(chunks[i] for i in sorted(b)) for b in bins if b]


def _connected(chunks: list[str]) -> list[list[int]]:
    """The chunks in groups: a chunk calling a function another defines is in its group."""
    owner = {name: k for k, c in enumerate(chunks) for name in _DEFINED.findall(c)}
    parent = list(range(len(chunks)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for k, chunk in enumerate(chunks):
        for name in set(_CALLED.findall(chunk)) & owner.keys():
            parent[root(owner[name])] = root(k)
    groups: dict[int, list[int]] = {}
    for k in range(len(chunks)):
        groups.setdefault(root(k), []).append(k)
    return list(groups.values())


class Joined:
    """The libraries of a text's parts as one: each name is the first part's that has it.

    >>> import types
    >>> lib = Joined([types.SimpleNamespace(f=1), types.SimpleNamespace(g=2)])
    >>> lib.f + lib.g
    3
    """

    def __init__(self, libraries: list[Any]) -> None:
        self.libraries = libraries

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for lib in self.__dict__["libraries"]:
            try:
                found = getattr(lib, name)
            except AttributeError:
                continue
            setattr(self, name, found)
            return found
        raise AttributeError(f"no part of the C module defines {name!r}")
