"""Objects of the user's classes as a traced function sees them: every attribute it reads
is recorded, so that the value can be read again at the next call.

A traced function reaches objects through ``self`` (``sg.grad(model.loss)``), through
globals and closed-over variables, through ``functools.partial`` arguments and defaults.
While it is traced, such an object of a class of the user's own is replaced by an
:class:`ObjectView`: reading ``view.Q`` asks the capture for the attribute, which watches
the path (``self.Q``) and answers with what the value becomes in the trace (a variable for
an array, the number itself for a number, a view again for an object). Methods run on the
view (their own attribute reads are recorded too); attributes set while tracing stay in
the trace (the object is not changed).

What a view cannot show is refused loudly: ``vars(obj)`` / ``obj.__dict__`` (read the
attributes by name) and deleting attributes.
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import sysconfig
import types
from typing import Any

import numpy as np

from ..base.errors import UnsupportedError
from ..ir.expr import Expr

__all__ = ["LIBRARIES", "MISSING", "ObjectView", "class_lookup", "instance_dict",
           "is_data_descriptor", "library_module", "raw_attr", "real", "user_class",
           "user_object"]

LIBRARIES = frozenset({"symgrad", "numpy", "scipy", "jax", "jaxlib", "torch", "builtins",
                       "functools", "math", "sympy", "networkx", "dask", "pandas"})
MISSING = object()  # what a lookup finds where there is nothing
_NOT_OBJECTS = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset,
                np.ndarray, np.generic, enum.Enum, type, types.ModuleType, BaseException)
_GET = object.__getattribute__


class ObjectView:
    """A user object while a function is traced (see the module's docstring).

    ``_sg_obj`` is the object, ``_sg_read(view, name)`` the capture's attribute read,
    ``_sg_call(view, name, args)`` its special-method call, ``_sg_local`` what the traced
    code set on it."""

    __slots__ = ("_sg_obj", "_sg_read", "_sg_call", "_sg_local")

    def __init__(self, obj: Any, read: Any, call: Any) -> None:
        object.__setattr__(self, "_sg_obj", obj)
        object.__setattr__(self, "_sg_read", read)
        object.__setattr__(self, "_sg_call", call)
        object.__setattr__(self, "_sg_local", {})

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            cls = type(_GET(self, "_sg_obj")).__name__
            raise UnsupportedError(
                f"reading the __dict__ (vars()) of a {cls} object while tracing: symgrad "
                "records the attributes a traced function reads one by one; read them by "
                "name (obj.attr or getattr(obj, 'attr'))")
        local = _GET(self, "_sg_local")
        if name in local and name != "__class__":
            return local[name]
        return _GET(self, "_sg_read")(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        _GET(self, "_sg_local")[name] = value

    def __delattr__(self, name: str) -> None:
        cls = type(_GET(self, "_sg_obj")).__name__
        raise UnsupportedError(f"deleting attribute {name!r} of a {cls} object while "
                               "tracing: a traced function reads its objects, it does not "
                               "change them")

    def __dir__(self) -> list[str]:
        return dir(_GET(self, "_sg_obj"))


def real(value: Any) -> Any:
    """The object behind a view (``value`` itself if it is not one)."""
    if type(value) is ObjectView:
        return _GET(value, "_sg_obj")
    return value


def _special(name: str) -> Any:
    def method(self: ObjectView, *args: Any) -> Any:
        return _GET(self, "_sg_call")(self, name, args)

    method.__name__ = name
    return method


# the special methods Python looks up on the type, not the instance: forwarded to the
# object's class, run on the view
SPECIAL = (
    "__call__ __len__ __iter__ __reversed__ __next__ __getitem__ __setitem__ __contains__ "
    "__bool__ __float__ __int__ __index__ __complex__ __round__ __neg__ __pos__ __abs__ "
    "__invert__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ "
    "__rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ "
    "__rmatmul__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ "
    "__rshift__ __rrshift__ __lt__ __le__ __gt__ __ge__ __eq__ __ne__ __hash__ __repr__ "
    "__str__ __format__ __enter__ __exit__"
).split()

for _name in SPECIAL:
    setattr(ObjectView, _name, _special(_name))
del _name


# -- attributes as stored ---------------------------------------------------------------------


def class_lookup(cls: type, name: str) -> Any:
    """The class attribute ``name`` as stored in ``cls`` or a base class."""
    for k in cls.__mro__:
        found = k.__dict__.get(name, MISSING)
        if found is not MISSING:
            return found
    return MISSING



def raw_attr(obj: Any, name: str) -> Any:
    """``obj.name`` as stored, running none of the user's code: the instance's own
    attribute, a slot's value, or the class attribute itself (a function unbound)."""
    try:
        return _GET(obj, "__dict__")[name]
    except (AttributeError, KeyError, TypeError):
        pass
    cls = type(obj)
    descr = class_lookup(cls, name)
    if descr is MISSING:
        raise AttributeError(name)
    if type(descr) is not property and is_data_descriptor(descr):
        return descr.__get__(obj, cls)
    return descr


def is_data_descriptor(descr: Any) -> bool:
    t = type(descr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def instance_dict(obj: Any) -> dict | None:
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if type(d) is dict else None



# -- what is the user's ---------------------------------------------------------------------


_USER: dict[type, bool] = {}


def user_object(value: Any) -> bool:
    """Whether ``value`` is an object of a class of the user's own (seen through a view)."""
    return user_class(type(value))


def user_class(cls: type) -> bool:
    """Whether ``cls`` is a class of the user's own (not a library's, not a builtin's)."""
    found = _USER.get(cls)
    if found is None:
        filename = None if issubclass(cls, _NOT_OBJECTS) or issubclass(cls, Expr) \
            else _class_file(cls)
        found = filename is not None and not library_file(filename)
        if len(_USER) < 4096:
            _USER[cls] = found
    return found


def _class_file(cls: type) -> str | None:
    """The file a class was written in: its first method's (a doctest's too), else its
    module's."""
    for v in cls.__dict__.values():
        v = v.__func__ if isinstance(v, (staticmethod, classmethod)) else \
            v.fget if isinstance(v, property) else v
        if isinstance(v, types.FunctionType):
            return v.__code__.co_filename
    module = sys.modules.get(cls.__module__)
    found = getattr(module, "__file__", None)
    return found if found is not None or cls.__module__ != "__main__" else "<__main__>"


def library_module(module: types.ModuleType) -> bool:
    filename = getattr(module, "__file__", None)
    return filename is None or library_file(filename)


def library_file(filename: str) -> bool:
    """Whether a file is a library's: installed, the standard library's, or one of the
    libraries symgrad knows (symgrad itself included)."""
    if filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    return any(path.startswith(folder + os.sep) for folder in _library_folders())


@functools.cache
def _library_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib",
                                                  "platlib") if k in paths}
    for name in LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            found.add(os.path.realpath(os.path.dirname(path)))
    return tuple(sorted(found))
