"""Garbage collection paused while a large graph is built, rebuilt or printed.

Building or emitting a graph allocates many small objects and makes no reference cycles, so
a collection there finds nothing and walks the whole (large) heap.

>>> import gc
>>> with gc_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection inside (the collector's state before is restored after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
