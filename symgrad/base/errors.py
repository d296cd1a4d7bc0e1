"""Every user mistake symgrad can detect raises a subclass of :class:`SymgradError`.

Messages are written for the person who made the mistake: they name the op, the variable,
both shapes, or show the text with a caret under the column.
"""

from __future__ import annotations


class SymgradError(Exception):
    """Base class of all errors symgrad raises on purpose."""


class ParseError(SymgradError, ValueError):
    """Expression text that symgrad will not accept; shows the text with a caret.

    >>> str(ParseError("unknown function 'foo'", "1 + foo(x)", 4))
    "unknown function 'foo'\\n    1 + foo(x)\\n        ^"
    """

    def __init__(self, message: str, text: str | None = None, col: int | None = None):
        self.msg_text = message
        self.source = text
        self.col = col
        super().__init__(self._render())

    def _render(self) -> str:
        if self.source is None or self.col is None:
            return self.msg_text
        line = self.source if len(self.source) <= 200 else _window(self.source, self.col)
        col = self.col if len(self.source) <= 200 else min(self.col, 100)
        return f"{self.msg_text}\n    {line}\n    {' ' * col}^"

    def __str__(self) -> str:
        return self._render()


def _window(text: str, col: int) -> str:
    """A 200-character slice of a long line with the caret column at position 100."""
    start = max(0, col - 100)
    return text[start : start + 200].replace("\n", " ")


class ShapeError(SymgradError, ValueError):
    """Operand shapes or dtypes that an op cannot combine; names the op and the shapes."""


class DifferentiationError(SymgradError):
    """A derivative that cannot be formed (non-scalar grad, integer wrt, ...)."""


class EvaluationError(SymgradError):
    """A runtime input that does not fit the graph (missing, wrong shape, wrong dtype)."""


class InputError(EvaluationError, KeyError):
    """A required input variable was not given."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NameConflictError(SymgradError, ValueError):
    """A variable name reused with another shape or dtype, or a name that is not allowed."""


class LimitError(SymgradError):
    """A resource limit (size, depth, node count) was exceeded before work started."""


class UnsupportedError(SymgradError, TypeError):
    """A NumPy function, argument or Python operation symgrad does not support on symbolic
    values; the message says what to use instead."""


class ArgumentError(SymgradError, TypeError, ValueError):
    """An argument a function or op cannot use (of the wrong kind, or a wrong value); a
    TypeError and a ValueError too, as the bare error would have been."""


class BackendError(SymgradError, ValueError):
    """A backend that does not exist, is not installed, or cannot write an op; the message
    names the backend, the op and the valid choices."""


class SymgradWarning(UserWarning):
    """Something that is probably a mistake but has a meaning (an input no variable has)."""


# Tracebacks and pickles name the public path users import them from (symgrad/errors.py).
for _cls in (SymgradError, ParseError, ShapeError, DifferentiationError, EvaluationError,
             InputError, NameConflictError, LimitError, UnsupportedError, ArgumentError,
             BackendError, SymgradWarning):
    _cls.__module__ = "symgrad.errors"
del _cls
