"""The transformed function: traced once per argument structure, shapes, dtypes, static
keywords and state of what it reads, compiled, and then run on arrays (:class:`Transformed`);
on expressions it builds expressions, so transforms nest."""

from __future__ import annotations

import inspect
import itertools
import keyword
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from ..backends.compiled import compile
from ..base.errors import SymgradError
from ..base.progress import step
from ..base.tree_util import tree_flatten, tree_unflatten
from ..frontend.buffers import resolved
from ..frontend.capture import Capture, current, state, tracing
from ..ir.expr import Expr, const, var
from ..ir.values import exact
from ..transforms.sparse import SparseExpr, as_matrix
from ..transforms.substitute import substitute
from .arguments import (
    CHARS,
    DTYPES_OK,
    as_array,
    declared,
    flat_args,
    leaf_names,
    parameter_names,
    static_key,
    unique,
)

Make = Callable[[Callable, tuple, dict], Any]


FRESH = itertools.count()


_CACHE_SIZE = 256  # traced specialisations kept per transformed function


class Transformed:
    """What the function transforms return: call it with arrays (pytrees of arrays).

    The first call with a new argument structure, shapes, dtypes, static keywords or state
    of what ``fun`` reads traces ``fun`` and compiles the result; later calls run the
    compiled code. Called with symgrad expressions, it builds expressions (for nesting).

    Attributes: ``fun``; ``source`` (the source of the latest compilation);
    ``cache_size``; :meth:`compiled` gives the compiled function for given arguments.
    """

    def __init__(self, fun: Callable, make: Make, name: str, *, backend: str = "numpy",
                 shapes: Any = None, dtypes: Any = None, argnums: Any = None) -> None:
        self.fun = fun
        self._make = make
        self.backend = backend
        self.argnums = argnums
        self.params = parameter_names(fun)
        self._cache: dict[tuple, _Entry] = {}
        self._fast: dict[tuple, _Entry] = {}  # arrays as arguments: (specs, state) -> entry
        self._capture = Capture()
        self._latest: _Entry | None = None
        base = getattr(fun, "__name__", "fun")
        base = base if str(base).isidentifier() and not keyword.iskeyword(base) else "lambda"
        self.__name__ = f"{name}_{str(base).strip('<>')}"
        self.__doc__ = getattr(fun, "__doc__", None)
        try:
            self.__signature__ = inspect.signature(fun)
        except (TypeError, ValueError):
            pass
        if shapes is not None or dtypes is not None:
            specs = declared(self.params, shapes, dtypes)
            variables = [np.zeros(s, d) for s, d in specs]
            self._entry(*flat_args(tuple(variables), self._name), {})

    def __repr__(self) -> str:
        return f"<symgrad {self.__name__}>"

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    @property
    def source(self) -> str:
        """The source of the most recently compiled specialisation."""
        if self._latest is None:
            raise SymgradError(f"{self.__name__} has not been traced yet: call it, or "
                               "create it with shapes=... to trace at once")
        return self._latest.fn.source

    def compiled(self, *args: Any, **static: Any) -> Callable:
        """The compiled function (with input checks) for arguments like ``args``: its
        inputs are the array leaves ``fun`` uses, then the arrays it reads elsewhere."""
        leaves, treedef = flat_args(args, self._name)
        return self._entry(leaves, treedef, exact(static))[0].checked

    def __call__(self, *args: Any, **static: Any) -> Any:
        if not static:  # the common case, keyed without flattening: arrays as arguments
            specs = []
            for a in args:
                if type(a) is not np.ndarray or a.dtype.char not in CHARS:
                    break
                specs.append((a.shape, a.dtype.char))
            else:
                watches = self._capture.watches
                parts, hidden, _ = state(watches) if watches else _EMPTY
                entry = self._fast.get((tuple(specs), parts))
                if entry is not None:
                    if entry.direct:
                        return entry.run((*args, *hidden), self.__name__)
                    return entry.run([args[k] for k in entry.used] +
                                     [hidden[k] for k in entry.picks], self.__name__)
        return self._call(args, static)

    def _call(self, args: tuple, static: dict) -> Any:
        leaves, treedef = tree_flatten(args)
        if any(type(a) is Expr for a in leaves):
            return self._symbolic(leaves, treedef, static)
        arrays = [a if type(a) is np.ndarray and a.dtype.name in DTYPES_OK else
                  as_array(a, self._name(k)) for k, a in enumerate(leaves)]
        try:
            entry, hidden = self._entry(arrays, treedef, static)
        except _ClosesOverATrace:  # fun reads another trace's values: build expressions
            return self._symbolic(leaves, treedef, static)
        return entry.run([arrays[k] for k in entry.used] + [hidden[k] for k in entry.picks],
                         self.__name__)

    # -- tracing -------------------------------------------------------------------------

    def _name(self, k: int) -> str:
        return self.params[k] if k < len(self.params) else f"arg{k}"

    def _entry(self, arrays: list, treedef: Any, static: Mapping[str, Any]) -> Any:
        parts, hidden, _ = state(self._capture.watches)
        key = (treedef, tuple([(a.shape, a.dtype.char) for a in arrays]),
               static_key(static) if static else (), parts)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(arrays, treedef, dict(exact(static)))
            parts, hidden, entry.pins = state(self._capture.watches)  # it may watch more
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            key = key[:3] + (parts,)
            self._cache[key] = entry
            if not static and treedef == tree_flatten((0,) * len(arrays))[1]:
                if len(self._fast) >= _CACHE_SIZE:
                    self._fast.clear()
                entry.direct = entry.used == list(range(len(arrays))) and \
                    entry.picks == list(range(len(hidden)))
                self._fast[(key[1], parts)] = entry
        self._latest = entry
        return entry, hidden

    def _trace(self, arrays: list, treedef: Any, static: dict) -> _Entry:
        names = unique(leaf_names(treedef, self.params))
        if current() is not None:  # inside another trace: names its variables cannot have
            tag = next(FRESH)
            names = [f"_t{tag}_{k}" for k in range(len(names))]
        variables = [var(n, a.shape, a.dtype.name) for n, a in zip(names, arrays)]
        args = tree_unflatten(treedef, variables)
        label = getattr(self.fun, "__name__", "fun")
        with step(f"trace {label}", unit="node") as s, \
                tracing(self._capture, set(names)) as cap:
            fun = cap.rebind(self.fun)
            result = self._make(fun, args, static)
            out_leaves, out_def = tree_flatten(result, _is_sparse)
            s.update(sum(1 for e in out_leaves if isinstance(e, Expr)))
        cap.warn_random(self.__name__)
        out_leaves = [resolved(e) for e in out_leaves]  # a filled array: its expression
        patterns = {k: e.pattern for k, e in enumerate(out_leaves) if isinstance(e, SparseExpr)}
        for k in patterns:  # a sparse derivative: its entries computed, its pattern kept
            out_leaves[k] = out_leaves[k].data
        exprs = [k for k, e in enumerate(out_leaves) if isinstance(e, Expr)]
        outputs = [out_leaves[k] for k in exprs] or [const(0.0)]
        graph = max((e.graph for e in outputs), key=len)
        outputs = [e if e.graph is graph else Expr(graph, graph.import_node(e.graph, e.node))
                   for e in outputs]
        picks = self._capture.picks(set(graph.variables))
        hidden_names = self._capture.hidden_names(picks)
        if current() is not None and set(graph.variables) - set(names) - set(hidden_names):
            raise _ClosesOverATrace  # called on arrays inside another transform's trace
        for n, v in zip(names, variables):  # every argument is an input, used or not
            if n not in graph.variables:
                graph.var(n, v.shape, v.dtype)
        used = list(range(len(names)))
        fn = compile(outputs, inputs=names + hidden_names, name=self.__name__,
                     backend=self.backend)
        entry = _Entry(fn, used, picks, out_def, out_leaves, exprs)
        entry.patterns = patterns
        entry.single = entry.single and not patterns
        return entry

    def _symbolic(self, leaves: list, treedef: Any, static: dict) -> Any:
        """Called on expressions: trace on fresh variables, then substitute the arguments."""
        given = [a if isinstance(a, Expr) else const(np.asarray(a)) for a in leaves]
        tag = next(FRESH)
        names = [f"_t{tag}_{k}" for k in range(len(given))]
        variables = [var(n, e.shape, e.dtype) for n, e in zip(names, given)]
        cap = current()
        fun = self.fun if cap is None else cap.rebind(self.fun)
        result = self._make(fun, tree_unflatten(treedef, variables), dict(exact(static)))
        out_leaves, out_def = tree_flatten(result)
        at = [k for k, e in enumerate(out_leaves) if isinstance(e, Expr)]
        if at:
            new = substitute([out_leaves[k] for k in at], dict(zip(names, given)))
            for k, e in zip(at, new):
                out_leaves[k] = e
        return tree_unflatten(out_def, out_leaves)


class _ClosesOverATrace(Exception):
    """Raised by a trace whose result depends on variables of an enclosing trace (``fun``
    closes over its values): the call is then symbolic, whatever its arguments."""


_EMPTY: tuple = ((), [], [])


def _is_sparse(node: Any) -> bool:
    return isinstance(node, SparseExpr)


class _Entry:
    """One traced and compiled specialisation."""

    __slots__ = ("checked", "fn", "used", "picks", "out_def", "template", "exprs", "single",
                 "direct", "pins", "patterns")

    def __init__(self, checked: Callable, used: list[int], picks: list[int], out_def: Any,
                 template: list, exprs: list[int]) -> None:
        # the raw function where its arguments are NumPy's (the array targets' checked one
        # turns them into their library's arrays: torch's functions take no ndarray)
        fast = getattr(checked, "_fast_path", False)
        self.checked, self.fn = checked, checked.raw if fast else checked
        self.used, self.picks, self.out_def = used, picks, out_def
        self.template, self.exprs = template, exprs
        self.single = out_def.kind == "leaf" and exprs == [0]
        self.direct = False  # every argument and every hidden array used, in order
        self.pins: list = []  # what the watches read at the trace: objects keyed by id live
        self.patterns: dict = {}  # output leaf -> the pattern of its sparse matrix

    def run(self, values: list, name: str) -> Any:
        """The compiled function on ``values``, its results in the output's structure."""
        try:
            out = self.fn(*values)
        except (IndexError, ValueError, TypeError) as e:
            from ..backends.interpreter import runtime_error

            raise runtime_error(e, f"{name}()") from None
        if self.single:
            return out[0]
        return self.unpack(out)

    def unpack(self, out: Any) -> Any:
        leaves = list(self.template)
        for k, v in zip(self.exprs, out):
            leaves[k] = v if k not in self.patterns else as_matrix(v, self.patterns[k])
        return tree_unflatten(self.out_def, leaves)


_SHARED: OrderedDict[tuple, Transformed] = OrderedDict()
_SHARED_SIZE = 128  # transforms kept for the functions used most recently
_SHARED_LOCK = threading.Lock()


def cached(fun: Callable, what: Hashable, build: Callable[[], Transformed]) -> Transformed:
    """The transform ``what`` (its name and options) of ``fun``, kept per function: by its
    identity and code (a bound method: its function and object), so ``sg.grad(f)(x)``
    written inside a loop or another function traces once. The most recently used are
    kept (each holds its function), so a closure made per call costs no more than one
    transform per call; every call still checks what the function reads (see
    :mod:`symgrad.frontend.capture`)."""
    if isinstance(fun, types.MethodType):
        owner: tuple = (id(fun.__func__), id(fun.__self__))
        code = getattr(fun.__func__, "__code__", None)
    else:
        owner, code = (id(fun),), getattr(fun, "__code__", None)
    key = (*owner, code, what)
    try:
        hash(key)
    except TypeError:
        return build()
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is not None:
            _SHARED.move_to_end(key)
            return found
    t = build()
    with _SHARED_LOCK:
        t = _SHARED.setdefault(key, t)  # another thread may have built it meanwhile
        while len(_SHARED) > _SHARED_SIZE:
            _SHARED.popitem(last=False)
    return t


GradFunction = Transformed  # the name of sg.grad(fun)'s result before the other transforms
