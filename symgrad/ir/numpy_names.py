"""What reaches an Expr through NumPy's array protocols, by name: a function object's NumPy
name (``linalg.solve``), a ufunc's (``sin``, or SciPy's ``scipy.special.erf``) and the op
it builds, the ufunc methods that are reductions and scans (``np.add.reduce`` is ``sum``),
and the SciPy function converting an Expr to an array (to name the symgrad function to use
instead).

>>> import numpy as np
>>> numpy_name(np.linalg.solve), ufunc_name(np.sin), REDUCE["add"]
('linalg.solve', 'sin', 'sum')
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .op import FUNCTIONS, Op

# ufunc methods as the reductions and scans they are
REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any", "logaddexp": "logsumexp"}


ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}


def numpy_name(func: Any) -> str:
    """NumPy's name of a function object: ``"sum"``, ``"linalg.solve"``."""
    module = getattr(func, "__module__", "") or ""
    sub = module.removeprefix("numpy").strip(".") if module.startswith("numpy") else ""
    name = getattr(func, "__name__", repr(func))
    return f"{sub}.{name}" if sub and not sub.startswith("_") else name


def scipy_caller() -> str | None:
    """The SciPy function the user called that is converting an Expr to an array
    (``"scipy.stats.norm.cdf"``, ``"scipy.linalg.solve_triangular"``), or None."""
    frame, chain = sys._getframe(1), []
    for _ in range(80):
        if frame is None:
            break
        if frame.f_globals.get("__name__", "").startswith("scipy."):
            chain.append(frame)
        elif chain:
            break  # out of SciPy again: the frame that called it
        frame = frame.f_back
    for f in reversed(chain):  # the outermost SciPy frame with a public name first
        module, name = f.f_globals["__name__"], f.f_code.co_name
        owner = f.f_locals.get("self")
        owner = getattr(owner, "dist", owner)  # a frozen distribution: norm(0, 1).cdf
        if module.startswith("scipy.stats.") and owner is not None and name[0] != "_":
            dist = getattr(owner, "name", None) or type(owner).__name__.removesuffix("_gen")
            return f"scipy.stats.{dist}.{name}"
        # the function itself, or the one a decorator's wrapper holds
        named = [(module, name)] + [(getattr(v, "__module__", None) or "", v.__name__)
                                    for v in f.f_locals.values() if type(v).__name__ ==
                                    "function"]
        for mod, fn in named:
            sub = mod.split(".")[1] if mod.startswith("scipy.") else ""
            if sub and fn[0] != "_" and hasattr(sys.modules.get(f"scipy.{sub}"), fn):
                return f"scipy.{sub}.{fn}"
    return None


_OPERATORS = frozenset({"__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__add__",
                        "__radd__", "__sub__", "__rsub__", "__truediv__", "__rtruediv__"})


def scipy_conversion() -> str | None:
    """Why SciPy may not convert an Expr (or a symbolic sparse matrix) to an array here: a
    message naming what to use instead; ``""`` when an operator of SciPy's sparse matrices
    asks (``A @ x``: a 0-d object array tells it "not an array", and Python then asks the
    Expr's reflected operator); None when the caller is not SciPy."""
    method = _sparse_method()
    if method == "":
        return ""
    if method is not None:
        return (f"A.{method}(x) on SciPy's sparse A cannot take symbolic values (SciPy's own "
                "code): write it with operators (A @ x, x * A), wrap A as "
                f"symgrad.scipy.sparse.csr_array(A).{method}(x), or pass A to the traced "
                "function (sg.grad(fun) makes it symgrad's)")
    caller = scipy_caller()
    if caller is None:
        return None
    space = ".".join(caller.split(".")[:2])
    fix = (f"use symgrad.{caller}, which takes the same arguments" if symgrad_has(caller)
           else f"symgrad.{space} does not cover it yet (its __all__ lists what it has)")
    return (f"{caller} cannot trace symbolic values (it converts its arguments to NumPy "
            f"arrays): {fix}")


def _sparse_method() -> str | None:
    """``""`` when an operator of SciPy's sparse matrices is converting, the name of the
    public method of theirs that is, else None."""
    frame, method = sys._getframe(3), None
    for _ in range(12):
        if frame is None or not frame.f_globals.get("__name__", "").startswith("scipy.sparse."):
            break
        name = frame.f_code.co_name
        if name in _OPERATORS:
            return ""
        if name[0] != "_" and "self" in frame.f_code.co_varnames[:1]:
            method = name
        frame = frame.f_back
    return method


def symgrad_has(path: str) -> bool:
    """Whether ``symgrad.<path>`` exists (``path`` = ``"scipy.stats.norm.cdf"``)."""
    parts = path.split(".")
    obj = sys.modules.get("symgrad." + ".".join(parts[:2]))
    for p in parts[2:]:
        obj = getattr(obj, p, None)
    return obj is not None


def ufunc_name(ufunc: Any) -> str:
    """NumPy's name of a ufunc (``"sin"``), or SciPy's full name of one of SciPy's
    (``"scipy.special.erf"``): SciPy's ufuncs reach Exprs through the same protocol."""
    name = ufunc.__name__
    if getattr(np, name, None) is ufunc:
        return name
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, name, None) is ufunc:
        return f"scipy.special.{name}"
    return name


# ufunc -> (its name, the function it calls, the op that function builds with no keywords)
_UFUNC_OPS: dict[Any, tuple[str, Any, Op]] = {}


def ufunc_op(ufunc: Any) -> Op | None:
    """The op whose node NumPy's ``ufunc(*exprs)`` builds when the function symgrad has for
    it is ``call(op.name, ...)`` itself (marked ``plain_op``), else None."""
    known = _UFUNC_OPS.get(ufunc)
    if known is not None and FUNCTIONS.get(known[0]) is known[1]:
        return known[2]
    name = ufunc_name(ufunc)
    fn = FUNCTIONS.get(name)
    op = getattr(fn, "plain_op", None)
    if op is not None:
        _UFUNC_OPS[ufunc] = (name, fn, op)
    return op
