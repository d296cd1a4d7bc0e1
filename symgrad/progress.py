"""``symgrad.progress``: turn the progress reports of long steps on and off.

The face of :mod:`symgrad.base.progress` (where the timings ``INFO_AFTER``, ``BAR_AFTER``
... are settings)::

    import symgrad.progress
    symgrad.progress.enable()          # INFO lines on stderr, bars when stderr is a terminal
"""

from .base.progress import Step, disable, enable, logger, start, step

__all__ = ["Step", "disable", "enable", "logger", "start", "step"]
