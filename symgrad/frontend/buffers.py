"""Arrays a traced function makes and then fills in place: ``out = np.zeros(n)`` followed by
``out[i] = expr``, the way NumPy code writes an ODE's right-hand side or a forward
substitution.

Inside a trace, NumPy's ``zeros``/``ones``/``empty``/``full``, their ``*_like`` forms and
``np.copy`` of an expression make a :class:`Buffer`: a NumPy array that holds numbers until
an expression is stored into it. From then on its value is an expression — each store one
functional update, JAX's ``x.at[key].set(v)`` written as NumPy's assignment (element stores
``out[i] = v`` are gathered, read back as stored, and become one update when the array is
used whole) — and every use of the array reads the latest one: its operators, NumPy's functions and ufuncs, its methods,
symgrad's functions (through :func:`~symgrad.ir.expr.operand_id`'s ``__sg_value__`` hook),
and the traced function's results.

NumPy's view semantics hold: a basic slice, ``.T``, ``.reshape(...)`` of a buffer is a view
whose reads show later stores into the buffer and whose stores land in the buffer (each view
knows which of the buffer's elements it shows). A store gives each position once, the last
value written winning where an index repeats (``out[[0, 0]] = a, b`` stores ``b``);
``np.add.at(out, idx, v)`` accumulates. Its memory, which a library reading the raw array
would see, is NaN once the value is symbolic, so such a read is never silently stale.

>>> import numpy as np, symgrad as sg
>>> def rhs(y):
...     dydt = np.zeros_like(y)
...     dydt[0] = y[0] * y[1]
...     dydt[1] = -y[1] + dydt[0]
...     return np.sum(dydt ** 2)
>>> [round(float(v), 6) for v in sg.grad(rhs)(np.array([1.0, 2.0]))]
[8.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import UnsupportedError
from ..ir.callsite import callsite
from ..ir.expr import Expr, F, const, stacked

__all__ = ["Buffer", "buffer", "like", "resolved"]

_LABEL_EXACT = {"float64": 2 ** 53, "complex128": 2 ** 53, "float32": 2 ** 24,
                "complex64": 2 ** 24, "float16": 2 ** 11}
# attributes read from the array itself even once its value is symbolic
_OWN = frozenset({"__dict__", "__class__", "shape", "dtype", "ndim", "size", "base", "strides",
                  "itemsize", "nbytes", "flags", "__array_interface__", "__array_priority__",
                  "__array_ufunc__", "__array_function__", "__array_finalize__",
                  "__sg_value__", "_value_or_numbers"})
# NumPy's methods and properties that give views: they give views of a symbolic buffer too
_VIEWS = frozenset({"T", "mT", "reshape", "transpose", "swapaxes", "squeeze", "ravel",
                    "real", "imag", "diagonal"})
# methods that change the array in place
_IN_PLACE = frozenset({"fill", "sort", "put", "itemset", "resize", "partition", "setfield",
                       "byteswap", "setflags"})


def _d(b: np.ndarray) -> dict:
    return np.ndarray.__getattribute__(b, "__dict__")


def _root(b: Buffer) -> Buffer:
    root = _d(b).get("_root")
    return b if root is None else root


def _live(b: Buffer) -> bool:
    """Whether buffer (or view) ``b``'s value is symbolic (stored, or stores pending)."""
    rd = _d(_root(b))
    return rd.get("_sym") is not None or bool(rd.get("_pending"))


def _symbol(b: Buffer) -> Expr | None:
    """The expression of buffer (or view) ``b``'s value; None while it holds numbers."""
    root = _root(b)
    _flush(root)
    sym = _d(root).get("_sym")
    if sym is None or b is root:
        return sym
    return F.reshape(sym, (-1,))[_flat(b)]


def _flush(root: Buffer) -> None:
    """The scalar stores kept apart (``out[i] = v``, one position each) as one update: a
    loop storing n elements builds one scatter of n values, not n updates of the array."""
    rd = _d(root)
    pending = rd.get("_pending")
    if not pending:
        return
    positions = np.fromiter(pending, dtype=np.int64, count=len(pending))
    items = list(pending.values())
    values = (F.astype(stacked(items), root.dtype.name) if any(isinstance(v, Expr) for v in items)
              else const(np.array(items, dtype=root.dtype)))
    flat = F.reshape(_current(root), (-1,))
    rd["_sym"] = F.reshape(flat.at[positions].set(values), root.shape)
    rd["_pending"] = {}


def _current(root: Buffer) -> Expr:
    """The root's stored expression, or a constant of its numbers."""
    sym = _d(root).get("_sym")
    return sym if sym is not None else const(np.array(_plain(root)))


def _position(root: Buffer, key: Any) -> int | None:
    """The flat position of an all-integer ``key`` into ``root`` (None: another key)."""
    parts = key if type(key) is tuple else (key,)
    if len(parts) != root.ndim or not all(type(p) is int or isinstance(p, np.integer)
                                          for p in parts):
        return None
    index = tuple(int(p) + n if int(p) < 0 else int(p) for p, n in zip(parts, root.shape))
    if not all(0 <= i < n for i, n in zip(index, root.shape)):
        return None  # out of bounds: NumPy's own error, on the general path
    return int(np.ravel_multi_index(index, root.shape)) if root.ndim else 0


def _plain(b: np.ndarray) -> np.ndarray:
    return np.ndarray.view(b, np.ndarray)


def resolved(x: Any) -> Any:
    """``x`` with buffers as their values: an expression, or a plain array of numbers."""
    if isinstance(x, Buffer):
        sym = _symbol(x)
        return sym if sym is not None else _plain(x)
    if type(x) in (list, tuple) and any(isinstance(v, (Buffer, list, tuple)) for v in x):
        return type(x)(resolved(v) for v in x)
    if type(x) is dict:
        return {k: resolved(v) for k, v in x.items()}
    return x


def _flat(view: Buffer) -> np.ndarray:
    """The C-order positions, in its root buffer, of each element of ``view`` (found once:
    the root's memory is labelled with its positions, read through the view, restored)."""
    d = _d(view)
    flat = d.get("_flat")
    if flat is None:
        root = _plain(d["_root"])
        if root.size > _LABEL_EXACT.get(root.dtype.name, 0):
            raise UnsupportedError(
                f"a view of a {root.dtype} array of {root.size} elements cannot be followed "
                "once an expression is stored into it: store into the array itself")
        saved = root.copy()
        root[...] = np.arange(root.size).reshape(root.shape)
        flat = d["_flat"] = np.real(_plain(view)).astype(np.int64)
        root[...] = saved
    return flat


def _basic(key: Any) -> bool:
    """Whether ``key`` is basic indexing (ints, traced scalar ints, slices, ``...``,
    ``None``: one position each)."""
    parts = key if type(key) is tuple else (key,)
    return all(p is None or p is Ellipsis or type(p) in (int, slice) or
               isinstance(p, np.integer) or (isinstance(p, Expr) and not p.shape)
               for p in parts)


def _last_of_each(positions: np.ndarray, values: Any) -> tuple[np.ndarray, Any]:
    """``positions`` (flat, any shape) and ``values`` broadcast to them, keeping the last
    occurrence of a repeated position (NumPy's assignment: the last write wins)."""
    flat = positions.reshape(-1)
    _, first_of_reversed = np.unique(flat[::-1], return_index=True)
    keep = np.sort(flat.size - 1 - first_of_reversed)
    if keep.size == flat.size:
        return positions, values
    shaped = F.broadcast_to(values, positions.shape) if isinstance(values, Expr) else \
        np.broadcast_to(values, positions.shape)
    return flat[keep], F.reshape(shaped, (-1,))[keep]


def _store(b: Buffer, key: Any, value: Any, mode: str = "set") -> None:
    """``b[key] = value`` (``mode="add"``: ``np.add.at``) on a buffer whose value is, or
    becomes, symbolic."""
    root = _root(b)
    rd = _d(root)
    dtype = root.dtype
    if dtype.kind not in "fc":
        line = callsite()[0]
        raise UnsupportedError(
            f"storing a symbolic expression into a {dtype} array{f' (at {line})' if line else ''}:"
            " its numbers would be truncated and its derivative lost; make the array with a "
            "float dtype (np.zeros(n) is float64)")
    value = resolved(value)
    key = resolved(key)
    at = _position(root, key) if b is root and mode == "set" else None
    if at is not None and np.ndim(value) == 0 and type(value) is not np.ndarray:
        rd.setdefault("_pending", {})[at] = value  # kept apart until the array is read
        np.ndarray.__setitem__(_plain(root), key, np.nan)
        return
    if isinstance(value, Expr) and value.dtype != dtype:
        value = F.astype(value, dtype.name)  # NumPy casts what it stores to the array's dtype
    _flush(root)
    sym = _current(root)
    if b is root and _basic(key):
        new = getattr(sym.at[key], mode)(value)
    else:
        positions = (_flat(b) if b is not root else
                     np.arange(root.size).reshape(root.shape))[_numeric_key(key)]
        flat = F.reshape(sym, (-1,))
        if mode == "set":
            positions, value = _last_of_each(np.asarray(positions), value)
        new = F.reshape(getattr(flat.at[positions], mode)(value), root.shape)
    rd["_sym"] = new
    np.ndarray.__setitem__(_plain(root), Ellipsis, np.nan)  # raw reads: visibly not a value


def _numeric_key(key: Any) -> Any:
    parts = key if type(key) is tuple else (key,)
    if any(isinstance(p, Expr) and p.shape for p in parts):
        raise UnsupportedError(
            "storing through a traced array of indices (out[idx] = v, idx symbolic): repeated "
            "positions would be ambiguous; use out = out.at[idx].set(v) with sg.zeros, or a "
            "constant index array")
    if any(isinstance(p, Expr) for p in parts):
        raise UnsupportedError(
            "storing at a traced position through a view or with an index array: store into "
            "the array itself with plain indices (out[i] = v)")
    return key


class Buffer(np.ndarray):
    """A NumPy array made inside a traced function (``np.zeros(n)``, ``np.zeros_like(x)``):
    numbers until an expression is stored into it, then an expression (module docstring)."""

    def __array_finalize__(self, obj: Any) -> None:
        if isinstance(obj, Buffer) and self.base is not None and \
                np.may_share_memory(_plain(self), _plain(obj)):
            _d(self)["_root"] = _root(obj)  # a view: it reads and writes its root

    def __setitem__(self, key: Any, value: Any) -> None:
        if not _live(self) and not _symbolic(value) and not _symbolic(key):
            np.ndarray.__setitem__(self, resolved(key), resolved(value))
            return
        _store(self, key, value)

    def __getitem__(self, key: Any) -> Any:
        pending = _d(self).get("_pending")
        if pending:  # a root with scalar stores kept apart: an element read needs no update
            key = resolved(key)
            at = _position(self, key)
            if at is not None:
                if at in pending:
                    return pending[at]
                sym = _d(self).get("_sym")
                return np.ndarray.__getitem__(self, key) if sym is None else sym[key]
        sym = _symbol(self)
        if sym is None:
            if _symbolic(key):
                return const(np.array(_plain(self)))[resolved(key)]
            return np.ndarray.__getitem__(self, resolved(key))
        key = resolved(key)
        if not _symbolic(key):
            out = np.ndarray.__getitem__(self, key)
            if isinstance(out, Buffer) and out.base is not None and \
                    np.may_share_memory(_plain(out), _plain(self)):
                return out  # a view: live
        return sym[key]

    def __getattribute__(self, name: str) -> Any:
        if name in _OWN:
            return np.ndarray.__getattribute__(self, name)
        if name in _IN_PLACE:
            return _in_place(self, name)
        if not _live(self):
            return np.ndarray.__getattribute__(self, name)
        if name in _VIEWS:
            return _view_attribute(self, name)
        if name == "copy":
            return lambda order="C": buffer(_symbol(self))
        return getattr(_symbol(self), name)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        if method == "at":
            return _ufunc_at(ufunc, inputs)
        args = [resolved(i) for i in inputs]
        if out is None:
            return getattr(ufunc, method)(*args, **kwargs)
        outs = out if type(out) is tuple else (out,)
        if not any(isinstance(a, Expr) for a in args) and \
                not any(isinstance(o, Buffer) and _symbol(o) is not None for o in outs):
            return getattr(ufunc, method)(*args, out=tuple(resolved(o) for o in outs),
                                          **kwargs)
        results = getattr(ufunc, method)(*args, **kwargs)
        results = results if type(results) is tuple else (results,)
        for o, r in zip(outs, results):
            o[...] = r  # in place (x += e): a store into each output
        return out if type(out) is not tuple or len(out) > 1 else out[0]

    def __array_function__(self, func: Callable, types: Any, args: tuple, kwargs: dict) -> Any:
        mutate = _MUTATING.get(func)
        if mutate is not None and (_symbolic(args) or _symbolic(kwargs)):
            return mutate(*args, **kwargs)
        if not _symbolic(args) and not _symbolic(kwargs):
            return super().__array_function__(func, types, args, kwargs)
        if func is np.copy:
            return buffer(resolved(args[0]))
        return func(*resolved(args), **resolved(kwargs))

    def __float__(self) -> float:
        return float(self._value_or_numbers())

    def __int__(self) -> int:
        return int(self._value_or_numbers())

    def __complex__(self) -> complex:
        return complex(self._value_or_numbers())

    def __index__(self) -> int:
        return self._value_or_numbers().__index__()

    def __bool__(self) -> bool:
        return bool(self._value_or_numbers())

    def __iter__(self) -> Any:
        if _symbol(self) is None:
            return np.ndarray.__iter__(self)
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        sym = _symbol(self)
        return repr(_plain(self)) if sym is None else repr(sym)

    def __str__(self) -> str:
        sym = _symbol(self)
        return str(_plain(self)) if sym is None else str(sym)

    def __copy__(self) -> Any:
        sym = _symbol(self)
        return buffer(sym) if sym is not None else np.ndarray.copy(self)

    def __deepcopy__(self, memo: dict) -> Any:
        return self.__copy__()

    def __sg_value__(self) -> Any:
        """The expression :func:`~symgrad.ir.expr.operand_id` reads (None: numbers)."""
        return _symbol(self)

    def _value_or_numbers(self) -> Any:
        sym = _symbol(self)
        return _plain(self) if sym is None else sym


def _symbolic(x: Any) -> bool:
    """Whether ``x`` holds an expression or a symbolic buffer (through lists, tuples, dicts)."""
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, Expr) or (isinstance(v, Buffer) and _live(v)):
            return True
        if type(v) in (list, tuple):
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.values())
    return False


def _view_attribute(b: Buffer, name: str) -> Any:
    """``b.T``, ``b.reshape(...)``...: a live view where NumPy's gives one, else the value."""
    attr = np.ndarray.__getattribute__(b, name)

    def live(out: Any, make: Callable[[], Any]) -> Any:
        if isinstance(out, Buffer) and out.base is not None and \
                np.may_share_memory(_plain(out), _plain(b)):
            return out
        return make()

    if not callable(attr):
        return live(attr, lambda: getattr(_symbol(b), name))
    return lambda *a, **k: live(attr(*a, **k), lambda: getattr(_symbol(b), name)(*a, **k))


def _in_place(b: Buffer, name: str) -> Callable[..., None]:
    """The array's method ``name`` that changes it in place (``fill`` takes an expression;
    on a symbolic value ``sort`` sorts it, the others are refused)."""
    if name == "fill":
        return lambda value: b.__setitem__(Ellipsis, value)
    if not _live(b):
        return np.ndarray.__getattribute__(b, name)
    if name == "sort":
        def sort(axis: int = -1, kind: Any = None, order: Any = None) -> None:
            b[...] = F.sort(_symbol(b), axis=axis)
        return sort

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise UnsupportedError(
            f"array.{name}() on an array holding a symbolic value: store into it with "
            "out[key] = value instead")
    return refuse


def _ufunc_at(ufunc: np.ufunc, inputs: tuple) -> None:
    """``np.add.at(out, idx, v)`` (and subtract/multiply) into a buffer."""
    target, key = inputs[0], inputs[1]
    values = inputs[2] if len(inputs) > 2 else None
    if not isinstance(target, Buffer) or not (_symbolic(values) or _symbol(target) is not None):
        return ufunc.at(*[resolved(i) for i in inputs])
    modes = {"add": ("add", lambda v: v), "subtract": ("add", lambda v: -v),
             "multiply": ("multiply", lambda v: v)}
    if ufunc.__name__ not in modes or values is None:
        raise UnsupportedError(f"numpy.{ufunc.__name__}.at into an array holding a symbolic "
                               "value: np.add.at, np.subtract.at and np.multiply.at are covered")
    mode, sign = modes[ufunc.__name__]
    if mode == "multiply":
        positions = np.arange(target.size).reshape(target.shape)[_numeric_key(resolved(key))]
        if np.unique(np.asarray(positions)).size != np.size(positions):
            raise UnsupportedError("numpy.multiply.at with a repeated index into an array "
                                   "holding a symbolic value: multiply the factors first")
    _store(target, key, sign(resolved(values)), mode)


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    if where is not True:
        src = F.where(resolved(where), resolved(src), dst[...])
    dst[...] = src


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    n = min(a.shape)
    if a.ndim != 2 or wrap:
        raise UnsupportedError("np.fill_diagonal of a symbolic value: 2-D, wrap=False covered")
    idx = np.arange(n)
    a[idx, idx] = val


def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    a.reshape(-1)[np.asarray(ind)] = v


_MUTATING: dict[Callable, Callable] = {np.copyto: _copyto, np.fill_diagonal: _fill_diagonal,
                                       np.put: _put}


def buffer(value: Any) -> Any:
    """A buffer holding ``value`` (numbers, or a float expression: a copy that takes stores;
    an integer or boolean expression stays one, which refuses stores)."""
    if isinstance(value, Expr):
        if value.dtype.kind not in "fc":
            return value
        out = np.full(value.shape, np.nan, dtype=value.dtype).view(Buffer)
        _d(out)["_sym"] = value
        return out
    return np.array(value).view(Buffer)


def like(make: Callable) -> Callable:
    """NumPy's ``zeros_like``/``ones_like``/``empty_like``/``full_like`` inside a trace: on
    an expression (or a buffer), a buffer of its shape and dtype."""

    def fn(prototype: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(prototype, (Expr, Buffer)):
            template = np.zeros(prototype.shape, dtype=prototype.dtype)
            fill = args[0] if make is np.full_like and args else kwargs.get("fill_value")
            if make is np.full_like and _symbolic(fill):
                dtype = kwargs.get("dtype") or template.dtype
                return buffer(F.astype(F.broadcast_to(resolved(fill), template.shape),
                                       np.dtype(dtype).name))
            out = make(template, *args, **kwargs)
            return out.view(Buffer) if type(out) is np.ndarray else out
        out = make(prototype, *args, **kwargs)
        return out.view(Buffer) if type(out) is np.ndarray else out

    fn.__name__ = make.__name__
    return fn
