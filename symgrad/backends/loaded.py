"""Generated source as a module, and its functions as callables with checked inputs.

:func:`load_source` runs the text as a fresh module registered with ``linecache`` (so
``inspect.getsource``, tracebacks and pdb show the generated code); a
:class:`CompiledFunction` wraps one of its functions with the same input checks as
``sg.evaluate``. Each target's :meth:`~symgrad.backends.target.Target.load` and
:meth:`~symgrad.backends.target.Target.wrap` start from these.

>>> ns, filename = load_source("def f(x): return x + 1", "f")
>>> ns["f"](1), filename.startswith("<symgrad:f-")
(2, True)
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import linecache
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..base.errors import InputError
from ..base.progress import step
from ..ir.values import exact
from .interpreter import check_input, runtime_error

__all__ = ["CompiledFunction", "load_source"]


class CompiledFunction:
    """The callable ``compile()`` returns: checks and converts inputs, then calls ``raw``.

    Attributes: ``source`` (the module text), ``inputs`` (variable names in call order),
    ``raw`` (the generated function itself, without checks), ``filename``.
    """

    def __init__(self, raw: Callable, params: list, source: str, filename: str) -> None:
        self.raw = raw
        self.source = source
        self.filename = filename
        self._nodes = params
        self.inputs = tuple(n.name for n in params)
        self._index = {name: k for k, name in enumerate(self.inputs)}
        self._expect = tuple((n.shape, np.dtype(n.dtype)) for n in params)
        functools.update_wrapper(self, raw)

    #: NumPy arrays of the right shape and dtype go to ``raw`` unconverted (the NumPy target;
    #: the array targets convert every input to their library's arrays)
    fast_path = True

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # an input may be named self
        if self.fast_path and not kwargs and len(args) == len(self._expect):
            for a, (shape, dtype) in zip(args, self._expect):
                if type(a) is not np.ndarray or a.dtype is not dtype or a.shape != shape:
                    break
            else:
                try:
                    return self.raw(*args)
                except (IndexError, ValueError, TypeError) as e:
                    raise runtime_error(e, f"{self.__name__}()") from None
        return self._checked(args, kwargs)

    def _checked(self, args: tuple, kwargs: dict) -> Any:
        if len(args) > len(self._nodes):
            raise InputError(f"{self.__name__}() takes {len(self._nodes)} inputs "
                             f"({', '.join(self.inputs)}), got {len(args)}")
        given = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            k = exact(k)
            if k not in self._index:
                raise InputError(f"{self.__name__}() has no input {k!r} "
                                 f"(inputs: {', '.join(self.inputs) or 'none'})")
            if k in given:
                raise InputError(f"{self.__name__}() got input {k!r} twice")
            given[k] = v
        values = [self.checked_input(n, given) for n in self._nodes]
        try:
            return self.raw(*values)
        except (IndexError, ValueError, TypeError, MemoryError) as e:  # as evaluate does
            raise runtime_error(e, f"{self.__name__}()") from None

    def checked_input(self, node: Any, given: dict) -> Any:
        """The checked value of input ``node`` from the arguments ``given`` by name (a NumPy
        array; a target's subclass may convert it)."""
        return check_input(node, given)

    def __repr__(self) -> str:
        return f"<symgrad compiled function {self.__name__}({', '.join(self.inputs)})>"


def load_source(source: str, tag: str) -> tuple[dict, str]:
    """Execute generated ``source`` as a fresh module registered with ``linecache``.

    A long module is compiled one top-level block (function, constant) at a time, each
    with its own line numbers: CPython's compiler then never holds the syntax tree of the
    whole text (its memory grows with the largest block, not the module).
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<symgrad:{tag}-{digest}>"
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(f"symgrad_generated_{tag}_{digest}")
    module.__file__ = filename
    with step("compile (CPython)", total=len(lines), unit="line") as s:
        for first, block in _blocks(lines, len(source)):
            code = builtins.compile("\n" * first + block, filename, "exec", dont_inherit=True)
            exec(code, module.__dict__)  # our own generated text: names, literals checked
            s.update(block.count("\n"))
    return module.__dict__, filename


def _blocks(lines: list[str], size: int, whole: int = 1 << 20) -> Iterator[tuple[int, str]]:
    """``(first line index, text)`` of the top-level blocks of generated source: a block
    starts at each unindented ``def``/``class``. Sources under ``whole`` bytes: one block."""
    if size < whole:
        yield 0, "".join(lines)
        return
    start = 0
    for k, line in enumerate(lines):
        if k > start and line.startswith(("def ", "class ")):
            yield start, "".join(lines[start:k])
            start = k
    yield start, "".join(lines[start:])
