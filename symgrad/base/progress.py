"""Progress of long work: ``logging`` records with timings, and a progress bar for slow steps.

Every long step of symgrad (tracing a function, the reverse-mode transform, emitting source,
CPython's compile of it, evaluating) runs inside :func:`step`. When the step ends it logs
``"<what>: <count> <unit>s in <seconds> s"`` to the ``symgrad`` logger: at INFO when it took
at least :data:`INFO_AFTER` seconds, at DEBUG otherwise. While it runs, a step that is
predicted to take more than :data:`BAR_AFTER` seconds (from its rate so far) shows a tqdm
progress bar on stderr, if bars are on and tqdm is installed; without tqdm, a slow step
logs a line of progress at INFO every :data:`LINE_EVERY` seconds instead.

The library is quiet by default (the ``symgrad`` logger has only a ``NullHandler``); the
``symgrad`` command turns reporting on (``--quiet`` turns it off). In your own program::

    import symgrad.progress
    symgrad.progress.enable()          # INFO lines on stderr, bars when stderr is a terminal

or configure the ``symgrad`` logger with the :mod:`logging` module as usual (bars follow the
logger: they are shown when it is enabled for INFO and stderr is a terminal, unless
:func:`enable` said otherwise).

>>> import symgrad.progress as progress
>>> with progress.step("demo", total=3) as s:
...     for _ in range(3):
...         s.update()
>>> s.done
3
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger("symgrad")
logger.addHandler(logging.NullHandler())

INFO_AFTER = 1.0  # seconds: a step that took this long is logged at INFO, not DEBUG
BAR_AFTER = 1.0  # seconds: a step predicted to take longer shows a bar
PREDICT_AFTER = 0.25  # seconds of work before the first prediction
LINE_EVERY = 5.0  # seconds between progress lines when tqdm is missing

_bars: bool | None = None  # None: bars when the logger shows INFO and stderr is a terminal
_handler: logging.Handler | None = None


def enable(level: int = logging.INFO, bar: bool | None = None) -> None:
    """Report progress on stderr: log records of ``level`` and above, and bars.

    ``bar``: True or False to force progress bars on or off; None (default) shows them when
    stderr is a terminal. Calling it again replaces the earlier settings.

    >>> import logging, symgrad.progress as progress
    >>> progress.enable(logging.WARNING, bar=False); progress.disable()
    """
    global _handler, _bars
    disable()
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("symgrad: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(level)
    _bars = bar


def disable() -> None:
    """Undo :func:`enable`: the library is quiet again."""
    global _handler, _bars
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler = None
    logger.setLevel(logging.NOTSET)
    _bars = None


def _bars_on() -> bool:
    if _bars is not None:
        return _bars
    stream = getattr(sys, "stderr", None)
    return logger.isEnabledFor(logging.INFO) and bool(stream and stream.isatty())


class Step:
    """One running step: call :meth:`update` as work is done (cheap: a counter and a
    comparison; the clock is read only now and then)."""

    __slots__ = ("what", "total", "unit", "done", "start", "_next", "_bar", "_watch",
                 "_last_line", "closed")

    def __init__(self, what: str, total: int | None, unit: str) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self.start = time.perf_counter()
        self._bar: Any = None
        self._last_line = self.start
        self.closed = False
        # Nobody to tell: never look at the clock while running.
        self._watch = _bars_on() or logger.isEnabledFor(logging.INFO)
        self._next = 64 if self._watch else float("inf")
        logger.debug("%s ...", what)

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.done += n
        if self.done >= self._next:
            self._poll()

    def _poll(self) -> None:
        now = time.perf_counter()
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else float("inf")
        self._next = self.done + max(1, int(rate * 0.05))  # look again in about 50 ms
        if self._bar is not None:
            self._bar.update(self.done - self._bar.n)
            return
        if elapsed < PREDICT_AFTER:
            return
        predicted = (elapsed * self.total / self.done) if self.total else elapsed
        if predicted < BAR_AFTER:
            return
        if _bars_on() and self._open_bar():
            return
        if now - self._last_line >= LINE_EVERY:
            self._last_line = now
            of = f" of {self.total:,}" if self.total else ""
            logger.info("%s: %s%s %ss after %.0f s", self.what, f"{self.done:,}", of, self.unit,
                        elapsed)

    def _open_bar(self) -> bool:
        try:
            from tqdm import tqdm
        except ImportError:
            return False
        self._bar = tqdm(total=self.total, initial=self.done, desc=f"symgrad: {self.what}",
                         unit=self.unit, leave=False, file=sys.stderr, dynamic_ncols=True)
        return True

    def close(self) -> float:
        """End the step, log its time; returns the seconds it took."""
        if self.closed:
            return 0.0
        self.closed = True
        elapsed = time.perf_counter() - self.start
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        count = f" {self.done:,} {self.unit}{'' if self.done == 1 else 's'}" if self.done else ""
        level = logging.INFO if elapsed >= INFO_AFTER else logging.DEBUG
        logger.log(level, "%s:%s in %.2f s", self.what, count, elapsed)
        return elapsed


def start(what: str, total: int | None = None, unit: str = "node") -> Step:
    """Begin a step; call ``.close()`` when it ends (or use :func:`step`)."""
    return Step(what, total, unit)


@contextmanager
def step(what: str, total: int | None = None, unit: str = "node") -> Iterator[Step]:
    """A step of work named ``what`` with ``total`` units (None if unknown).

    >>> with step("counting", total=2, unit="item") as s:
    ...     s.update(2)
    >>> s.closed
    True
    """
    s = Step(what, total, unit)
    try:
        yield s
    finally:
        s.close()


__all__ = ["enable", "disable", "step", "start", "Step", "logger"]
