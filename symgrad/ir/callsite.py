"""Where the user's code asked for a value of a symbolic expression, and what to write
instead: the line of user code (the first frame outside symgrad, NumPy and SciPy), the
SciPy function it went through, and the fix for the common cases.

>>> advice("float()", "    y = float(x) * 2", None)[:44]
'an expression has no value until it is evalu'
>>> "np.sin" in advice("float()", "    y = math.sin(x)", None)
True
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from typing import Any

from .graph import tracing_now

_LIBRARIES = ("symgrad", "numpy", "scipy")
_WRAPPERS = frozenset({"wrapper", "inner", "wrapped", "decorated", "<lambda>", "__call__"})
_SCIPY_CALL = re.compile(r"\bscipy(?:\.[A-Za-z_]\w*)+")


def _folders() -> list[tuple[str, str]]:
    out = []
    for name in _LIBRARIES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            out.append((name, os.path.dirname(path) + os.sep))
    return out


def callsite(skip: int = 2) -> tuple[str | None, str | None]:
    """``("file.py:12: the line", "scipy.linalg.solve_triangular")`` for the frame that
    called into the libraries (None where unknown, or where no SciPy function took part)."""
    folders = _folders()
    frame: Any = sys._getframe(skip)
    scipy_fn = None
    for _ in range(200):
        if frame is None:
            return None, scipy_fn
        filename = frame.f_code.co_filename
        owner = next((name for name, folder in folders if filename.startswith(folder)), None)
        if owner is None and not filename.startswith("<frozen"):
            line = linecache.getline(filename, frame.f_lineno).strip()
            return f"{os.path.basename(filename)}:{frame.f_lineno}: {line}", scipy_fn
        if owner == "scipy" and frame.f_code.co_name not in _WRAPPERS:
            module = str(frame.f_globals.get("__name__", "scipy"))
            public = ".".join(p for p in module.split(".") if not p.startswith("_"))
            scipy_fn = f"{public}.{frame.f_code.co_name}"
        frame = frame.f_back
    return None, scipy_fn


_SCALAR_CAST = re.compile(r"\b(?:s?np|numpy)\.((?:float|int|uint|complex)\d+|bool_)\(")
_MATH_CALL = re.compile(r"\bmath\.([A-Za-z_][A-Za-z0-9_]*)\(")


def advice(what: str, line: str | None, scipy_fn: str | None) -> str:
    """The fix for ``what`` (``"float()"``, ``"converting to a NumPy array"``...) given the
    user's line and the SciPy function it went through."""
    text = line or ""
    called = _SCIPY_CALL.search(text.split(": ", 1)[-1])
    if called is not None:
        scipy_fn = called.group(0)
    if scipy_fn is not None:
        name = scipy_fn.removeprefix("scipy.")
        return (f"{scipy_fn} is SciPy's own code and cannot take expressions: use "
                f"symgrad.scipy.{name} where symgrad has it (import symgrad.scipy), or write "
                "it with NumPy functions")
    if ".dot(" in text and what.startswith("converting"):
        return ("ndarray.dot(expr) converts its argument to a NumPy array: write A @ expr "
                "(or np.dot(A, expr))")
    if ("np.array(" in text or "np.asarray(" in text or "numpy.array(" in text) \
            and what.startswith("converting"):
        if tracing_now():  # NumPy's own np.array reached the trace: not the user's code
            return ("np.array([...]) holding expressions, in a function the trace reads as "
                    "it is (a library's, or one called through a class): write "
                    "np.stack([...]) or symgrad.numpy.array([...])")
        return ("np.array([...]) holding expressions: write np.stack([...]) (inside "
                "sg.grad(fun) and the other transforms np.array of a list works)")
    cast = _SCALAR_CAST.search(text.split(": ", 1)[-1])
    if cast is not None and what.startswith("converting"):
        return (f"np.{cast.group(1)}(...) converts its argument to a NumPy value: cast an "
                f"expression with x.astype(np.{cast.group(1)})")
    math_call = _MATH_CALL.search(text.split(": ", 1)[-1])
    if math_call is not None and what.startswith(("float()", "int()", "using as an index")):
        fn = math_call.group(1)
        return (f"math.{fn} takes a number, not an expression: use np.{fn} (NumPy's "
                "functions, or symgrad.numpy's, take expressions)")
    if not tracing_now():
        return ("an expression has no value until it is evaluated: compute it with "
                "sg.evaluate(expr, {name: value, ...}) or sg.compile, or call the function on "
                "NumPy arrays (symgrad.numpy computes values when no operand is symbolic)")
    if what.startswith(("float()", "int()", "using as an index", "complex()", "the truth")):
        return ("its value is unknown while tracing: choose with np.where(cond, a, b) "
                "instead of if/else, and pass a number you need as a number as an argument")
    return ("its value is unknown while tracing; keep it symbolic (indexing, where, len for "
            "sizes) or evaluate it with sg.evaluate")



def message(what: str, skip: int = 3, subject: str = " of a symbolic expression",
            scipy_fn: str | None = None) -> str:
    """The whole message: what was asked (of what), where, and the fix (``scipy_fn``: the
    SciPy function it went through, where the caller knows it better than the frames)."""
    line, found = callsite(skip)
    scipy_fn = scipy_fn or found
    where = f" (at {line})" if line else ""
    return f"{what}{subject}{where}: {advice(what, line, scipy_fn)}"
