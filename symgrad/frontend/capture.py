"""What a traced function reads besides its arguments, so a compiled function is never stale.

A Python function reads its globals, its closed-over cells, its default arguments, the user
functions it calls by name (and theirs), the attributes of the objects it reaches (``self``
of a bound method, a global object, the arguments of a ``functools.partial``) and whatever
those reach. Each such value is *watched*: found again by the same path (a global's name,
a cell, an attribute, a container's leaf) at every call of the compiled function.

* arrays (and pytrees of arrays) are *lifted*: the function is traced on a copy that reads
  variables instead, and every call reads the current values (a new minibatch assigned to
  a global is seen at the next call; so is an array changed in place, or ``self.Q``
  rebound to another matrix);
* numbers (by value and type: ``0.0`` and ``-0.0`` differ), strings, containers of them
  (a global list or dict of numbers, a mutable default) are part of the cache key, as are
  functions and objects (by identity): a change traces again;
* objects of the user's own classes are seen through an
  :class:`~symgrad.frontend.capture_objects.ObjectView` while tracing, which records each
  attribute read (``self.scale``, ``self.layer.W``), at any depth;
* a large array reached any other way (a library object's, one made by a call) becomes an
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
>>> class Model:
...     def __init__(self):
...         self.scale = 1.0
...     def loss(self, w):
...         return self.scale * w ** 2
>>> m = Model()
>>> g = sg.grad(m.loss)
>>> g(3.0)
np.float64(6.0)
>>> m.scale = 10.0
>>> g(3.0)
np.float64(60.0)
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..base.errors import SymgradWarning, UnsupportedError
from ..base.tree_util import LEAF, tree_unflatten
from ..ir.expr import Expr
from ..ir.graph import Graph, lifting
from . import math_names, scipy_names
from .buffers import Buffer, buffer, like, resolved
from .capture_key import (
    DTYPES,
    KINDS,
    PYTREE_TYPES,
    SCALARS,
    Held,
    Watch,
    arg_reader,
    array_count,
    attr_reader,
    attrgetter,
    cell_reader,
    class_reader,
    content_key,
    default_reader,
    flat,
    is_dataclass,
    keyword_reader,
    kwdefault_reader,
    leaf_reader,
    state,
    supported,
    value_key,
)
from .capture_objects import (
    LIBRARIES,
    MISSING,
    ObjectView,
    class_lookup,
    instance_dict,
    is_data_descriptor,
    library_module,
    raw_attr,
    real,
    user_class,
    user_object,
)

__all__ = ["Capture", "Watch", "current", "rebound", "state", "tracing", "value_key"]

_STATE = threading.local()


class Capture:
    """What a traced function reads, kept across its traces: the watches (in a stable
    order, so cache keys stay comparable) and, per trace, what they became."""

    def __init__(self) -> None:
        self.watches: list[Watch] = []
        self._index: dict[tuple, Watch] = {}
        self._held: dict[int, Watch] = {}
        self.begin(set())

    def begin(self, taken: set[str]) -> None:
        """Start a trace whose arguments took the names ``taken``."""
        self._taken = set(taken) | {w.names[0] for w in self._held.values()}
        self._copies: dict[int, dict] = {}
        self._functions: dict[int, Any] = {}
        self._lifted: dict[int, Any] = {}  # id(watch) -> what its value became
        self._views: dict[int, ObjectView] = {}
        self._classes: dict[int, tuple[Watch, type]] = {}
        self._read: set[str] = set()  # the names the traced code reads (co_names)
        self.random: list[str] = []
        for w in self.watches:
            if not isinstance(w, Held):
                w.names = []

    def picks(self, used: set[str]) -> list[int]:
        """The positions, in :func:`state`'s arrays, of the variables a trace used."""
        out, at = [], 0
        for w, count in zip(self.watches, self._counts()):
            for k, name in enumerate(w.names[:count]):
                if name in used:
                    out.append(at + k)
            at += count
        return out

    def hidden_names(self, picks: list[int]) -> list[str]:
        """The variable name at each picked position of :func:`state`'s arrays."""
        flat: list[str] = []
        for w, count in zip(self.watches, self._counts()):
            flat.extend(list(w.names[:count]) + [""] * max(0, count - len(w.names)))
        return [flat[k] for k in picks]

    def _counts(self) -> list[int]:
        values = state(self.watches)[2]
        return [array_count(v) for v in values]

    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() and not base.startswith("_") else "captured"
        name, k = base, 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    # -- watches -------------------------------------------------------------------------

    def _watch(self, parent: Watch | None, key: tuple, get: Callable, label: str,
               base: str, part: Callable | None = None) -> Watch:
        at = (id(parent), *key)
        w = self._index.get(at)
        if w is None:
            w = self._index[at] = Watch(parent, get, label, base, part)
            w.index = len(self.watches)
            self.watches.append(w)
        return w

    def _root(self, obj: Any, label: str) -> Watch:
        """A watch on an object fixed for the transform's life (its function)."""
        w = self._watch(None, ("fixed", id(obj)), lambda: obj, label, "captured")
        w.fixed = obj
        return w

    def _step(self, parent: Watch, key: tuple, get: Callable, label: str, base: str,
              part: Callable | None = None) -> Watch:
        return self._watch(parent, key, get, f"{parent.label}{label}", base, part)

    def finish(self) -> None:
        """At the end of a trace: watch the attributes of the user's classes it met that
        its code names (``Model.gain``, ``self.__class__.gain``), by value."""
        for w, cls in list(self._classes.values()):
            for name in sorted(self._read):
                if name[:2] == "__" or class_lookup(cls, name) is MISSING:
                    continue
                self._step(w, ("class attr", name), class_reader(name), f".{name}", name,
                           content_key)

    # -- lifting the function ------------------------------------------------------------

    def rebind(self, fun: Any, depth: int = 0) -> Any:
        """``fun`` as the trace runs it: reading variables for the arrays it (and what it
        calls and reaches) reads, its objects seen through views."""
        if isinstance(fun, types.FunctionType):
            return self._function(fun, depth)
        if isinstance(fun, ObjectView) or _kept(fun):
            return fun
        label = getattr(fun, "__qualname__", None) or type(fun).__name__
        return self._lift(self._root(fun, str(label)), fun, depth)

    def _function(self, fun: types.FunctionType, depth: int) -> Any:
        """A copy of ``fun`` whose globals, cells and defaults are lifted."""
        if _library(fun) or depth > 32:
            return fun
        done = self._functions.get(id(fun))
        if done is not None:
            return done
        self._functions[id(fun)] = fun  # recursion: the original until the copy exists
        code = fun.__code__
        label = getattr(fun, "__qualname__", "fun")
        names = _names(code)
        self._read.update(names)
        if "random" in names:
            self.random.append(f"{label} uses .random")
        globs = fun.__globals__
        replaced: dict[str, Any] = {}
        for name in names:
            if name in globs:
                w = self._watch(None, ("global", id(globs), name),
                                functools.partial(globs.get, name, MISSING),
                                f"global '{name}' of {label}", name)
                new = self._lift(w, globs[name], depth)
                if new is not globs[name]:
                    replaced[name] = new
        cells = list(fun.__closure__ or ())
        changed = False
        for k, (name, cell) in enumerate(zip(code.co_freevars, cells)):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            w = self._watch(None, ("cell", id(cell)), cell_reader(cell),
                            f"closed-over '{name}' of {label}", name)
            new = self._lift(w, value, depth)
            if new is not value:
                cells[k] = types.CellType(new)
                changed = True
        defaults = self._defaults(fun, label, depth)
        kwdefaults = self._kwdefaults(fun, label, depth)
        if not replaced and not changed and defaults is fun.__defaults__ and \
                kwdefaults is fun.__kwdefaults__:
            return fun
        copy = self._copies.get(id(globs))
        if copy is None:
            copy = self._copies[id(globs)] = dict(globs)
        copy.update(replaced)
        new_fun = types.FunctionType(code, copy, fun.__name__, defaults,
                                     tuple(cells) if fun.__closure__ else None)
        new_fun.__kwdefaults__ = kwdefaults
        new_fun.__qualname__ = fun.__qualname__
        new_fun.__dict__.update(fun.__dict__)
        self._functions[id(fun)] = self._functions[id(new_fun)] = new_fun
        return new_fun

    def _defaults(self, fun: types.FunctionType, label: str, depth: int) -> Any:
        given = fun.__defaults__
        if not given:
            return given
        params = fun.__code__.co_varnames[:fun.__code__.co_argcount][-len(given):]
        out = []
        for k, (name, value) in enumerate(zip(params, given)):
            w = self._watch(None, ("default", id(fun), k), default_reader(fun, k),
                            f"default of '{name}' in {label}", name)
            out.append(self._lift(w, value, depth))
        return given if all(a is b for a, b in zip(out, given)) else tuple(out)

    def _kwdefaults(self, fun: types.FunctionType, label: str, depth: int) -> Any:
        given = fun.__kwdefaults__
        if not given:
            return given
        out = {}
        for name, value in given.items():
            w = self._watch(None, ("kwdefault", id(fun), name), kwdefault_reader(fun, name),
                            f"default of '{name}' in {label}", name)
            out[name] = self._lift(w, value, depth)
        return given if all(out[n] is given[n] for n in given) else out

    def _lift(self, w: Watch, value: Any, depth: int) -> Any:
        """What the watched ``value`` becomes in the trace (``value`` itself: kept)."""
        done = self._lifted.get(id(w), MISSING)
        if done is not MISSING:
            return done
        new = self._replace(w, value, depth)
        self._lifted[id(w)] = new
        return new

    def _replace(self, w: Watch, value: Any, depth: int) -> Any:
        t = type(value)
        if t in SCALARS or isinstance(value, (np.generic, Expr, ObjectView)):
            return value
        if value is np:
            return NUMPY
        if value is np.array or value is np.asarray:
            return getattr(NUMPY, value.__name__)
        ours = scipy_names.counterpart(value)  # SciPy's names: symgrad.scipy's
        if ours is not None:
            return ours
        ours = math_names.counterpart(value)  # math's functions: symbolic scalars too
        if ours is not None:
            return ours
        if isinstance(value, types.ModuleType):
            if value is np.random:
                self.random.append(w.label)
            return value if library_module(value) else self._view(w, value)
        if isinstance(value, type):
            if user_class(value):
                self._classes.setdefault(id(w), (w, value))
            return value
        if isinstance(value, (np.random.Generator, np.random.RandomState)):
            self.random.append(w.label)
            return value
        if isinstance(value, types.FunctionType):
            return self._function(value, depth + 1)
        if isinstance(value, types.MethodType):
            return self._method(w, value, depth)
        if isinstance(value, functools.partial):
            return self._partial(w, value, depth)
        if isinstance(value, np.matrix):
            raise UnsupportedError(
                f"{w.label} is an np.matrix: its operators are matrix products, which "
                "symgrad's arrays do not follow; use np.asarray(m) (and @ for products)")
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                return value
            a = supported(value)
            name = self.fresh(w.base)
            w.names = [name]
            g = Graph()
            return Expr(g, g.var(name, a.shape, a.dtype.name))
        if user_object(value):  # a dataclass of the user's too: its attributes are read
            leaves, treedef = flat(value) if not is_dataclass(value) \
                else ([], LEAF)
            if treedef is LEAF:
                return self._view(w, value)
            PYTREE_TYPES.add(type(value))
            KINDS.pop(type(value), None)
            return self._container(w, value, leaves, treedef, depth)  # a registered pytree
        leaves, treedef = flat(value)  # a container (a registered class too: SciPy's sparse)
        if treedef is not LEAF:
            if type(value) not in (dict, list, tuple):
                PYTREE_TYPES.add(type(value))
                KINDS.pop(type(value), None)
            return self._container(w, value, leaves, treedef, depth)
        return value

    def _container(self, w: Watch, value: Any, leaves: list, treedef: Any,
                   depth: int) -> Any:
        out, names, changed = [], [], False
        for k, leaf in enumerate(leaves):
            if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf" and \
                    not isinstance(leaf, np.matrix):
                a = supported(leaf)
                v = self.fresh(f"{w.base}_{k}")
                names.append(v)
                g = Graph()
                out.append(Expr(g, g.var(v, a.shape, a.dtype.name)))
                changed = True
            elif type(leaf) in SCALARS or isinstance(leaf, (np.generic, Expr)):
                out.append(leaf)
            else:
                child = self._step(w, ("leaf", k), leaf_reader(k), f"[{k}]", w.base)
                new = self._lift(child, leaf, depth)
                out.append(new)
                changed = changed or new is not leaf
        w.names = names
        return tree_unflatten(treedef, out) if changed else value

    def _method(self, w: Watch, value: types.MethodType, depth: int) -> Any:
        func = self._step(w, ("__func__",), attrgetter("__func__"), ".__func__", w.base)
        obj = self._step(w, ("__self__",), attrgetter("__self__"), ".__self__", w.base)
        if w.fixed is not MISSING:  # a bound method cannot change its function or self
            func.fixed = value.__func__
            obj.fixed = _fixed(value.__self__)
        new_func = self._lift(func, value.__func__, depth)
        new_obj = self._lift(obj, value.__self__, depth)
        if new_func is value.__func__ and new_obj is value.__self__:
            return value
        return types.MethodType(new_func, new_obj)

    def _partial(self, w: Watch, value: functools.partial, depth: int) -> Any:
        func = self._step(w, ("func",), attrgetter("func"), ".func", w.base)
        steps = [self._step(w, ("arg", k), arg_reader(k), f".args[{k}]", f"{w.base}_{k}")
                 for k in range(len(value.args))]
        if w.fixed is not MISSING:  # a partial's function and arguments are read-only
            func.fixed = _fixed(value.func)
            for step, a in zip(steps, value.args):
                step.fixed = _fixed(a)
        func = self._lift(func, value.func, depth)
        args = tuple(self._lift(step, a, depth) for step, a in zip(steps, value.args))
        keywords = {name: self._lift(self._step(w, ("kw", name), keyword_reader(name),
                                                f".keywords[{name!r}]", name), a, depth)
                    for name, a in value.keywords.items()}
        if func is value.func and all(a is b for a, b in zip(args, value.args)) and all(
                keywords[n] is value.keywords[n] for n in keywords):
            return value
        return functools.partial(func, *args, **keywords)

    # -- objects seen through views ------------------------------------------------------

    def _view(self, w: Watch, obj: Any) -> ObjectView:
        """The view of ``obj`` for this trace (one per object: ``a is b`` holds)."""
        view = self._views.get(id(obj))
        if view is None:
            view = self._views[id(obj)] = ObjectView(
                obj, functools.partial(self.attribute, w), self.special)
        return view

    def attribute(self, w: Watch, view: ObjectView, name: str) -> Any:
        """``view.name``, as Python finds it, each raw value watched and lifted."""
        obj = real(view)
        cls = type(obj)
        if name == "__class__":
            if user_class(cls):
                child = self._step(w, ("__class__",), type, ".__class__", cls.__name__)
                self._classes.setdefault(id(child), (child, cls))
            return cls
        descr = class_lookup(cls, name)
        if descr is not MISSING and is_data_descriptor(descr):
            if type(descr) is property:
                if descr.fget is None:
                    raise AttributeError(f"property {name!r} of {cls.__name__!r} object has "
                                         "no getter")
                return self._function_of(descr.fget)(view)
            return self._attr(w, obj, name)  # a slot
        inside = instance_dict(obj)
        if inside is not None and name in inside:
            return self._attr(w, obj, name)
        if descr is not MISSING:
            return self._bind(w, obj, view, name, descr)
        hook = class_lookup(cls, "__getattr__")
        if isinstance(hook, types.FunctionType):
            return self._function_of(hook)(view, name)
        return getattr(obj, name)  # a module's __getattr__, or AttributeError as Python's

    def _attr(self, w: Watch, obj: Any, name: str) -> Any:
        child = self._step(w, ("attr", name), attr_reader(name), f".{name}", name)
        return self._lift(child, raw_attr(obj, name), 0)

    def _bind(self, w: Watch, obj: Any, view: ObjectView, name: str, descr: Any) -> Any:
        """A class attribute read through an instance: methods bound to the view."""
        if isinstance(descr, (types.FunctionType, staticmethod, classmethod)):
            raw = self._attr(w, obj, name)
            if isinstance(descr, staticmethod):
                return self._function_of(descr.__func__)
            if isinstance(descr, classmethod):
                return types.MethodType(self._function_of(descr.__func__), type(obj))
            return types.MethodType(raw, view) if isinstance(raw, types.FunctionType) \
                else raw
        if isinstance(descr, functools.cached_property):
            value = self._function_of(descr.func)(view)
            object.__getattribute__(view, "_sg_local")[name] = value
            return value
        if hasattr(type(descr), "__get__"):
            return descr.__get__(view, type(obj))
        return self._attr(w, obj, name)

    def _function_of(self, fun: Any) -> Any:
        return self._function(fun, 1) if isinstance(fun, types.FunctionType) else fun

    def special(self, view: ObjectView, name: str, args: tuple) -> Any:
        """A special method (``len(view)``, ``view + 1``, ``view(x)``) of the object's
        class, run on the view."""
        obj = real(view)
        descr = class_lookup(type(obj), name)
        if isinstance(descr, types.FunctionType):
            return self._function(descr, 1)(view, *args)
        if descr is None and name == "__hash__":
            raise TypeError(f"unhashable type: '{type(obj).__name__}'")
        if name in ("__eq__", "__ne__", "__hash__", "__repr__", "__str__", "__format__",
                    "__bool__") or descr is MISSING:
            return _default_special(obj, name, args)
        return getattr(obj, name)(*[real(a) for a in args])  # a library base class's

    def hold(self, graph: Graph, value: np.ndarray) -> int | None:
        """The variable a large captured array becomes (the const hook)."""
        if value.dtype.name not in DTYPES:
            return None
        w = self._held.get(id(value))
        if w is None:
            w = self._held[id(value)] = Held(None, lambda: value, "a captured array",
                                             "captured")
            w.names = [self.fresh(f"captured_{len(self._held)}")]
            w.index = len(self.watches)
            self.watches.append(w)
        return graph.var(w.names[0], value.shape, value.dtype.name)

    def warn_random(self, what: str) -> None:
        if self.random:
            warnings.warn(
                f"{what}: {self.random[0]} (np.random or a Generator): random numbers drawn "
                "while tracing are drawn once and frozen into the compiled function; draw "
                "them outside and pass them as an argument", SymgradWarning, stacklevel=4)


def _fixed(value: Any) -> Any:
    """``value`` where a read-only slot holds it and it cannot change in place (an object
    keyed by identity), else MISSING (read it again at every call)."""
    return value if KINDS.get(type(value)) == "id" or isinstance(
        value, (types.FunctionType, types.MethodType)) or user_object(value) else MISSING


def _default_special(obj: Any, name: str, args: tuple) -> Any:
    """What Python does for a special method the class does not define."""
    args = tuple(real(a) for a in args)
    if name == "__eq__":
        return obj is args[0] or NotImplemented
    if name == "__ne__":
        return obj is not args[0]
    if name == "__hash__":
        return object.__hash__(obj)
    if name in ("__repr__", "__str__"):
        return object.__repr__(obj)
    if name == "__format__":
        return format(object.__repr__(obj), *args)
    if name == "__bool__":
        length = class_lookup(type(obj), "__len__")
        return True if length is MISSING else bool(len(obj))
    if name.startswith("__r") or name in _BINARY:
        return NotImplemented
    raise TypeError(f"'{type(obj).__name__}' object has no {name} (while tracing)")


_BINARY = frozenset("__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ "
                    "__matmul__ __and__ __or__ __xor__ __lshift__ __rshift__ __lt__ __le__ "
                    "__gt__ __ge__".split())


# -- reading a path again --------------------------------------------------------------------


def _kept(value: Any) -> bool:
    """Whether ``value`` (not a plain function) is used as it is: a library's."""
    return not isinstance(value, (types.MethodType, functools.partial)) and \
        not user_object(value)


def _library(fun: types.FunctionType) -> bool:
    """Whether ``fun`` is a library's (its file lies in an imported library's folder)."""
    filename = fun.__code__.co_filename
    for name in LIBRARIES:
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


def _buffer(make: Callable) -> Callable:
    """NumPy's ``zeros``/``ones``/``empty``/``full``: an array that takes stored expressions
    (``out[i] = expr``: :mod:`symgrad.frontend.buffers`)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        out = make(*args, **kwargs)
        return out.view(Buffer) if type(out) is np.ndarray else out

    fn.__name__ = make.__name__
    return fn


def _copy(a: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.copy`` inside a trace: a buffer, which takes stored expressions."""
    value = resolved(a)
    if isinstance(value, Expr):
        return buffer(value)
    out = np.copy(value, *args, **kwargs)
    return out.view(Buffer) if type(out) is np.ndarray else out


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
    zeros_like = staticmethod(like(np.zeros_like))
    ones_like = staticmethod(like(np.ones_like))
    empty_like = staticmethod(like(np.empty_like))
    full_like = staticmethod(like(np.full_like))
    copy = staticmethod(_copy)

    @staticmethod
    def array(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, Buffer) and not args and not kwargs:
            return _copy(obj)
        obj = resolved(obj)
        if _holds_expr(obj):
            from .numpy_arrays import array

            return array(obj, *args, **kwargs)
        return np.array(obj, *args, **kwargs)

    @staticmethod
    def asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, Buffer) and not args and not kwargs:
            return obj
        obj = resolved(obj)
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
        cap.finish()
    finally:
        _STATE.capture = saved


def rebound(fun: Callable) -> Callable:
    """``fun`` lifted into the current trace (unchanged outside a trace)."""
    cap = current()
    return fun if cap is None else cap.rebind(fun)
