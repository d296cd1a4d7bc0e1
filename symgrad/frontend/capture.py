"""What a traced function reads besides its arguments, so a compiled function is never stale.

A Python function reads its globals, its closed-over cells, the user functions it calls by
name (and theirs), and whatever those reach. When ``sg.grad(fun)`` traces ``fun``:

* arrays (and pytrees of arrays) among the globals and cells of ``fun`` and of the user
  functions it calls by name are *lifted*: ``fun`` is traced on a copy whose globals and
  cells hold variables instead, and every call reads the current values (a new minibatch
  assigned to a global is seen at the next call; so is an array changed in place);
* their other values (numbers, strings, functions, objects) are part of the cache key:
  a number read again and found changed, or a name bound to another object, traces again;
* a large array reached any other way (an attribute, ``functools.partial``) becomes an
  input holding that array, read at every call (never a literal in the source);
* ``np.random`` (or a ``Generator``) read while tracing draws once, at trace time: a
  :class:`~symgrad.errors.SymgradWarning` says so.

>>> import numpy as np, symgrad as sg
>>> X = np.array([1.0, 2.0])
>>> g = sg.grad(lambda w: np.sum(X * w ** 2))
>>> g(1.0)
np.float64(6.0)
>>> X = np.array([5.0, 5.0])
>>> g(1.0)
np.float64(20.0)
"""

from __future__ import annotations

import threading
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..base.errors import ArgumentError, SymgradWarning, UnsupportedError
from ..base.tree_util import LEAF, tree_flatten, tree_unflatten
from ..ir.callsite import callsite
from ..ir.expr import Expr
from ..ir.graph import Graph, lifting
from . import scipy_names

__all__ = ["Capture", "Watch", "current", "tracing"]

_LIBRARIES = frozenset({"symgrad", "numpy", "scipy", "jax", "jaxlib", "torch", "builtins",
                        "functools", "math", "sympy", "networkx", "dask", "pandas"})
_DTYPES = frozenset({"float64", "float32", "int64", "int32", "bool"})
_CHARS = frozenset(np.dtype(n).char for n in _DTYPES)
_MISSING = object()
_STATE = threading.local()


class Watch:
    """One value a traced function reads: a global (``container`` a dict, ``key`` its
    name), a closed-over cell (``key`` None) or an array held by reference."""

    __slots__ = ("container", "key", "label", "names")

    def __init__(self, container: Any, key: str | None, label: str) -> None:
        self.container, self.key, self.label = container, key, label
        self.names: list[str] = []  # the variables of its array leaves at the last trace

    def read(self) -> Any:
        if self.key is None:
            try:
                return self.container.cell_contents
            except ValueError:
                return _MISSING
        return self.container.get(self.key, _MISSING)


class Held(Watch):
    """An array reached otherwise (an attribute): held by reference, read at every call."""

    __slots__ = ()

    def read(self) -> Any:
        return self.container


def state(watches: list[Watch]) -> tuple[tuple, list[np.ndarray]]:
    """The cache-key part of the watched values now, and their array leaves in order."""
    parts: list[Any] = []
    arrays: list[np.ndarray] = []
    for w in watches:
        v = w.read()
        if type(v) is np.ndarray and v.dtype.char in _CHARS:
            parts.append((v.shape, v.dtype.char))
            arrays.append(v)
        else:
            parts.append(_part(v, arrays))
    return tuple(parts), arrays


def _part(v: Any, arrays: list) -> Any:
    if isinstance(v, (int, float, complex, str, bytes, np.generic)) or v is None:
        return (type(v), v)
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        a = _supported(v)
        arrays.append(a)
        return (a.shape, a.dtype.char)
    leaves, treedef = _flat(v)  # a container (a registered class too: SciPy's sparse)
    if treedef is not LEAF and any(isinstance(x, np.ndarray) for x in leaves):
        return (treedef, tuple(_part(x, arrays) for x in leaves))
    return ("id", id(v))


def _flat(v: Any) -> tuple[list, Any]:
    """``tree_flatten(v)``, or no leaves for a container that is not a pytree (a dict keyed
    by types, as a library's registry is): such an object is kept as it is, by identity."""
    try:
        return tree_flatten(v)
    except ArgumentError:
        return [], LEAF


def _supported(a: np.ndarray) -> np.ndarray:
    if a.dtype.name in _DTYPES or a.dtype.kind not in "biuf":
        return a
    return a.astype(np.float64 if a.dtype.kind == "f" else np.int64)


class Capture:
    """What a traced function reads, kept across its traces: the watches (in a stable
    order, so cache keys stay comparable) and, per trace, the variables they became."""

    def __init__(self) -> None:
        self.watches: list[Watch] = []
        self._index: dict[tuple[int, str | None], Watch] = {}
        self._held: dict[int, Watch] = {}
        self.begin(set())

    def begin(self, taken: set[str]) -> None:
        """Start a trace whose arguments took the names ``taken``."""
        self._taken = set(taken) | {w.names[0] for w in self._held.values()}
        self._copies: dict[int, dict] = {}
        self._functions: dict[int, Any] = {}
        self.random: list[str] = []
        for w in self.watches:
            if not isinstance(w, Held):
                w.names = []

    def picks(self, used: set[str]) -> list[int]:
        """The positions, in :func:`state`'s arrays, of the variables a trace used."""
        out, at = [], 0
        for w in self.watches:
            count = len(_part_arrays(w.read()))
            for k, name in enumerate(w.names[:count]):
                if name in used:
                    out.append(at + k)
            at += count
        return out

    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() and not base.startswith("_") else "captured"
        name, k = base, 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    # -- lifting the function ------------------------------------------------------------

    def rebind(self, fun: Any, depth: int = 0) -> Any:
        """``fun`` with its arrays (and its helpers' arrays) replaced by variables."""
        if isinstance(fun, types.MethodType):
            return types.MethodType(self.rebind(fun.__func__, depth), fun.__self__)
        if not isinstance(fun, types.FunctionType) or _library(fun) or depth > 32:
            return fun
        done = self._functions.get(id(fun))
        if done is not None:
            return done
        self._functions[id(fun)] = fun  # recursion: the original until the copy exists
        code = fun.__code__
        label = getattr(fun, "__qualname__", "fun")
        names = _names(code)
        if "random" in names:
            self.random.append(f"{label} uses .random")
        globs = fun.__globals__
        replaced: dict[str, Any] = {}
        for name in names:
            if name in globs:
                new = self._lift(globs, name, globs[name], f"global '{name}' of {label}",
                                 depth)
                if new is not _MISSING:
                    replaced[name] = new
        cells = list(fun.__closure__ or ())
        changed = False
        for k, (name, cell) in enumerate(zip(code.co_freevars, cells)):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            new = self._lift(cell, None, value, f"closed-over '{name}' of {label}", depth,
                             name)
            if new is not _MISSING:
                cells[k] = types.CellType(new)
                changed = True
        if not replaced and not changed:
            return fun
        copy = self._copies.get(id(globs))
        if copy is None:
            copy = self._copies[id(globs)] = dict(globs)
        copy.update(replaced)
        new_fun = types.FunctionType(code, copy, fun.__name__, fun.__defaults__,
                                     tuple(cells) if fun.__closure__ else None)
        new_fun.__kwdefaults__ = fun.__kwdefaults__
        new_fun.__qualname__ = fun.__qualname__
        self._functions[id(fun)] = new_fun
        return new_fun

    def _lift(self, container: Any, key: str | None, value: Any, label: str, depth: int,
              name: str | None = None) -> Any:
        """The replacement for one global or cell (``_MISSING``: keep it), watching it."""
        if value is np:
            return NUMPY
        if value is np.array or value is np.asarray:
            return getattr(NUMPY, value.__name__)
        ours = scipy_names.counterpart(value)  # SciPy's names: symgrad.scipy's
        if ours is not None:
            if not isinstance(value, types.ModuleType):
                self._watch(container, key, label)
            return ours
        if isinstance(value, (types.ModuleType, type)):
            if value is np.random:
                self.random.append(label)
            return _MISSING
        if isinstance(value, (np.random.Generator, np.random.RandomState)):
            self.random.append(label)
        watch = self._watch(container, key, label)
        if isinstance(value, (types.FunctionType, types.MethodType)):
            new = self.rebind(value, depth + 1)
            return new if new is not value else _MISSING
        leaves, treedef = _flat(value) if not isinstance(value, Expr) else ([], LEAF)
        if not any(isinstance(x, np.ndarray) for x in leaves):
            return _MISSING
        base = key or name or "captured"
        out, names = [], []
        for k, leaf in enumerate(leaves):
            if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf":
                a = _supported(leaf)
                v = self.fresh(base if treedef is LEAF else f"{base}_{k}")
                names.append(v)
                g = Graph()
                out.append(Expr(g, g.var(v, a.shape, a.dtype.name)))
            else:
                out.append(leaf)
        watch.names = names
        return out[0] if treedef is LEAF else tree_unflatten(treedef, out)

    def _watch(self, container: Any, key: str | None, label: str) -> Watch:
        at = (id(container), key)
        w = self._index.get(at)
        if w is None:
            w = self._index[at] = Watch(container, key, label)
            self.watches.append(w)
        return w

    def hold(self, graph: Graph, value: np.ndarray) -> int | None:
        """The variable a large captured array becomes (the const hook)."""
        if value.dtype.name not in _DTYPES:
            return None
        w = self._held.get(id(value))
        if w is None:
            w = self._held[id(value)] = Held(value, None, "a captured array")
            w.names = [self.fresh(f"captured_{len(self._held)}")]
            self.watches.append(w)
        return graph.var(w.names[0], value.shape, value.dtype.name)

    def warn_random(self, what: str) -> None:
        if self.random:
            warnings.warn(
                f"{what}: {self.random[0]} (np.random or a Generator): random numbers drawn "
                "while tracing are drawn once and frozen into the compiled function; draw "
                "them outside and pass them as an argument", SymgradWarning, stacklevel=4)


def _buffer(make: Callable) -> Callable:
    """NumPy's ``zeros``/``ones``/``empty``/``full``: an array that says what to write
    when an expression is stored into it (``out[i] = expr``)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        out = make(*args, **kwargs)
        return out.view(Buffer) if type(out) is np.ndarray else out

    fn.__name__ = make.__name__
    return fn


class Buffer(np.ndarray):
    """A NumPy array made inside a traced function (``np.zeros(n)``)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if _holds_expr(value):
            line = callsite()[0]
            at = f" (at {line})" if line else ""
            raise UnsupportedError(
                f"storing a symbolic expression into a NumPy array{at}: "
                "a NumPy array holds numbers only; build the array symbolically: "
                "out = out.at[i].set(value) on sg.zeros(...) (or collect the values in a "
                "list and np.stack it)")
        super().__setitem__(key, value)


class _NumPy(types.ModuleType):
    """NumPy as a traced function sees it: everything is NumPy's, except that
    ``np.array``/``np.asarray`` of a nested list holding expressions stack them (NumPy's
    own cannot return an expression: they do not dispatch on their argument)."""

    def __init__(self) -> None:
        super().__init__("numpy", np.__doc__)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    zeros = staticmethod(_buffer(np.zeros))
    ones = staticmethod(_buffer(np.ones))
    empty = staticmethod(_buffer(np.empty))
    full = staticmethod(_buffer(np.full))

    @staticmethod
    def array(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if _holds_expr(obj):
            from .numpy_arrays import array

            return array(obj, *args, **kwargs)
        return np.array(obj, *args, **kwargs)

    @staticmethod
    def asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if _holds_expr(obj):
            from .numpy_arrays import array

            return array(obj, *args, **kwargs)
        return np.asarray(obj, *args, **kwargs)


def _holds_expr(obj: Any) -> bool:
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, Expr):
            return True
        if isinstance(o, (list, tuple)):
            stack.extend(o)
    return False


NUMPY = _NumPy()


def _part_arrays(v: Any) -> list:
    arrays: list = []
    if type(v) is np.ndarray and v.dtype.char in _CHARS:
        return [v]
    _part(v, arrays)
    return arrays


def _library(fun: types.FunctionType) -> bool:
    """Whether ``fun`` is a library's (its file lies in an imported library's folder)."""
    import os
    import sys

    filename = fun.__code__.co_filename
    for name in _LIBRARIES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path and filename.startswith(os.path.dirname(path) + os.sep):
            return True
    return False


def _names(code: types.CodeType) -> dict[str, None]:
    """The global and attribute names ``code`` and the code nested in it read, in order."""
    out: dict[str, None] = {}
    stack = [code]
    while stack:
        c = stack.pop(0)
        out.update(dict.fromkeys(c.co_names))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def current() -> Capture | None:
    """The capture of the trace in progress on this thread (None outside one)."""
    return getattr(_STATE, "capture", None)


@contextmanager
def tracing(cap: Capture, taken: set[str]) -> Iterator[Capture]:
    """A trace of ``cap``'s function: current inside, with the large-array hook on."""
    cap.begin(taken)
    saved = current()
    _STATE.capture = cap
    try:
        with lifting(cap.hold):
            yield cap
    finally:
        _STATE.capture = saved


def rebound(fun: Callable) -> Callable:
    """``fun`` lifted into the current trace (unchanged outside a trace)."""
    cap = current()
    return fun if cap is None else cap.rebind(fun)
