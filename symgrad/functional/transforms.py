"""JAX's function transforms on Python functions: ``grad``, ``value_and_grad``, ``jacrev``
(``jacobian``), ``jacfwd``, ``hessian``, ``jvp``, ``vjp``, ``hvp``, ``linearize``, ``vmap``
and ``jit``, with JAX's names, signatures and meanings; every one of them also keeps its
symbolic form on expressions (``sg.grad(expr, wrt)``), chosen by whether the first argument
is a symgrad expression or a Python function.

What is traced once and what is read at every call:

* ``fun`` is *traced* (called once on symgrad variables) per argument structure, shapes and
  dtypes, static keyword values, and state of what it reads (below); the derivative is built
  symbol to symbol, emitted as NumPy source and compiled (:func:`symgrad.compile`). Later
  calls run the compiled code: nothing of ``fun`` runs again.
* Arrays ``fun`` reads from its globals and closed-over variables (and those of the user
  functions it calls by name) are inputs of the compiled code, read at every call: a new
  minibatch assigned to a global is used at the next call. Numbers and other objects it
  reads there are part of the cache key: a change traces again. Large arrays it reaches
  otherwise are inputs held by reference (see :mod:`symgrad.frontend.capture`).
* Random numbers drawn while tracing are frozen (a warning says so).

Arguments are pytrees of arrays (:mod:`symgrad.tree_util`); gradients have their structure.
Called with symgrad expressions (inside another transform's trace), a transform builds
expressions instead of compiling, so transforms nest: ``sg.grad(sg.grad(f))``,
``sg.jacfwd(sg.jacrev(f))``. ``fun`` builds its result with Python operators and NumPy's
own functions (``np.exp(x)`` on a traced argument builds graph), ``symgrad.numpy`` or
``sg.*``; Python control flow on values (``if x > 0``) cannot be traced: use ``np.where``.

>>> import numpy as np, symgrad as sg
>>> def loss(w, x):
...     return sg.sum(sg.tanh(x @ w) ** 2)
>>> dloss = sg.grad(loss)                      # d loss / d w  (argnums=0)
>>> w, x = np.array([0.5, -0.25]), np.array([[1.0, 2.0], [3.0, 4.0]])
>>> [round(float(v), 6) for v in dloss(w, x)]
[2.180586, 2.907448]
>>> value, (dw, dx) = sg.value_and_grad(loss, argnums=(0, 1))(w, x)
>>> round(float(value), 6), dx.shape
(0.213552, (2, 2))
>>> float(sg.grad(sg.grad(sg.grad(lambda t: t ** 4)))(2.0))
48.0
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import weakref
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from ..backends.compiled import compile
from ..base.errors import ArgumentError, DifferentiationError, InputError, SymgradError
from ..base.progress import step
from ..base.tree_util import tree_flatten, tree_unflatten
from ..frontend.capture import Capture, current, rebound, state, tracing
from ..ir.expr import Expr, F, const, var
from ..ir.shapes import fmt, is_float
from ..ir.values import describe, exact, type_name
from ..transforms import derivatives
from ..transforms.batching import Unbatchable, batched
from ..transforms.substitute import substitute

__all__ = ["Transformed", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit",
           "jvp", "linearize", "value_and_grad", "vjp", "vmap"]

Make = Callable[[Callable, tuple, dict], Any]
_FRESH = itertools.count()
_CACHE_SIZE = 256  # traced specialisations kept per transformed function


# -- the transformed function -----------------------------------------------------------------


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
        self.params = _parameter_names(fun)
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
            specs = _declared(self.params, shapes, dtypes)
            variables = [np.zeros(s, d) for s, d in specs]
            self._entry(*_flat_args(tuple(variables), self._name), {})

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
        leaves, treedef = _flat_args(args, self._name)
        return self._entry(leaves, treedef, exact(static))[0].checked

    def __call__(self, *args: Any, **static: Any) -> Any:
        if not static:  # the common case, keyed without flattening: arrays as arguments
            specs = []
            for a in args:
                if type(a) is not np.ndarray or a.dtype.char not in _CHARS:
                    break
                specs.append((a.shape, a.dtype.char))
            else:
                watches = self._capture.watches
                parts, hidden = state(watches) if watches else ((), _NONE)
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
        arrays = [a if type(a) is np.ndarray and a.dtype.name in _OK else
                  _as_array(a, self._name(k)) for k, a in enumerate(leaves)]
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
        parts, hidden = state(self._capture.watches)
        key = (treedef, tuple([(a.shape, a.dtype.char) for a in arrays]),
               _static_key(static) if static else (), parts)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(arrays, treedef, dict(exact(static)))
            parts, hidden = state(self._capture.watches)  # the trace may watch more
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
        names = _unique(_leaf_names(treedef, self.params))
        if current() is not None:  # inside another trace: names its variables cannot have
            tag = next(_FRESH)
            names = [f"_t{tag}_{k}" for k in range(len(names))]
        variables = [var(n, a.shape, a.dtype.name) for n, a in zip(names, arrays)]
        args = tree_unflatten(treedef, variables)
        label = getattr(self.fun, "__name__", "fun")
        with step(f"trace {label}", unit="node") as s, \
                tracing(self._capture, set(names)) as cap:
            fun = cap.rebind(self.fun)
            result = self._make(fun, args, static)
            out_leaves, out_def = tree_flatten(result)
            s.update(sum(1 for e in out_leaves if isinstance(e, Expr)))
        cap.warn_random(self.__name__)
        out_leaves = [e.view(np.ndarray) if isinstance(e, np.ndarray) else e
                      for e in out_leaves]  # not the traced function's Buffer
        exprs = [k for k, e in enumerate(out_leaves) if isinstance(e, Expr)]
        outputs = [out_leaves[k] for k in exprs] or [const(0.0)]
        graph = max((e.graph for e in outputs), key=len)
        outputs = [e if e.graph is graph else Expr(graph, graph.import_node(e.graph, e.node))
                   for e in outputs]
        used = [k for k, n in enumerate(names) if n in graph.variables]
        picks = self._capture.picks(set(graph.variables))
        hidden_names = _hidden_names(self._capture, picks)
        if current() is not None and set(graph.variables) - set(names) - set(hidden_names):
            raise _ClosesOverATrace  # called on arrays inside another transform's trace
        fn = compile(outputs, inputs=[names[k] for k in used] + hidden_names,
                     name=self.__name__, backend=self.backend)
        return _Entry(fn, used, picks, out_def, out_leaves, exprs)

    def _symbolic(self, leaves: list, treedef: Any, static: dict) -> Any:
        """Called on expressions: trace on fresh variables, then substitute the arguments."""
        given = [a if isinstance(a, Expr) else const(np.asarray(a)) for a in leaves]
        tag = next(_FRESH)
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


_OK = frozenset({"float64", "float32", "int64", "int32", "bool"})
_CHARS = frozenset(np.dtype(n).char for n in _OK)
_NONE: list = []


class _Entry:
    """One traced and compiled specialisation."""

    __slots__ = ("checked", "fn", "used", "picks", "out_def", "template", "exprs", "single",
                 "direct")

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
            leaves[k] = v
        return tree_unflatten(self.out_def, leaves)


# -- the transforms ---------------------------------------------------------------------------


def grad(f: Any, wrt: Any = None, *, cleanup: bool = True, argnums: Any = None,
         has_aux: bool = False, shapes: Any = None, dtypes: Any = None,
         backend: str = "numpy") -> Any:
    """The gradient: of an expression (symbolic) or of a Python function (JAX's ``grad``).

    ``grad(f, wrt)`` with an Expr ``f``: the gradient Exprs, appended to ``f``'s graph (see
    :func:`symgrad.transforms.derivatives.grad`; ``cleanup=False`` keeps B as the rules
    write it).

    ``grad(fun, argnums=0)`` with a Python function: a function of arrays (pytrees of
    arrays) returning the gradient with respect to argument ``argnums``, of its structure
    (a tuple of argument numbers gives a tuple of gradients). The second positional
    argument is ``argnums`` here, as in JAX (``sg.grad(fun, 1)``). ``has_aux``: ``fun``
    returns ``(value, aux)``; the result is then ``(gradient, aux)``. ``shapes``/``dtypes``:
    trace now (per argument, or by parameter name). ``backend``: as in :func:`sg.compile`.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> sg.grad(sg.sin(x) * x, x)                     # symbolic
    <Expr sin(x) + x * cos(x) : float64[]>
    >>> float(sg.grad(lambda x: sg.sin(x) * x)(0.5))  # a function of arrays
    0.9182168195493894
    """
    if _is_expr(f):
        if wrt is None:
            raise DifferentiationError("grad(f, wrt) needs the variables to differentiate "
                                       "with respect to, e.g. sg.grad(f, x) or sg.grad(f, "
                                       "['x', 'y'])")
        if argnums is not None or has_aux or shapes is not None or dtypes is not None:
            raise DifferentiationError("argnums, has_aux, shapes and dtypes are for grad of "
                                       "a Python function; for an expression pass wrt")
        return derivatives.grad(f, wrt, cleanup=cleanup)
    argnums = _one_argnums("grad", f, wrt, argnums)
    return Transformed(f, _grad_make(argnums, has_aux, False, cleanup), "grad",
                       backend=backend, shapes=shapes, dtypes=dtypes, argnums=argnums)


def value_and_grad(f: Any, argnums: Any = 0, *, has_aux: bool = False, shapes: Any = None,
                   dtypes: Any = None, cleanup: bool = True, backend: str = "numpy") -> Any:
    """Like :func:`grad`, but the function returns ``(value, gradient)`` (with ``has_aux``:
    ``((value, aux), gradient)``), from one compiled function sharing the forward pass.

    With an Expr ``f`` and ``argnums`` naming the variables: ``(f, sg.grad(f, wrt))``.

    >>> import numpy as np, symgrad as sg
    >>> vg = sg.value_and_grad(lambda w: sg.sum(w ** 3), shapes=[(2,)])
    >>> value, grad = vg(np.array([1.0, 2.0]))
    >>> float(value), grad
    (9.0, array([ 3., 12.]))
    >>> [line for line in vg.source.splitlines() if line.startswith("def ")]
    ['def value_and_grad_lambda(w):']
    """
    if _is_expr(f):
        return f, derivatives.grad(f, argnums, cleanup=cleanup)
    _check_function("value_and_grad", f, "sg.value_and_grad(expr, wrt)")
    argnums = _argnums(argnums)
    return Transformed(f, _grad_make(argnums, has_aux, True, cleanup), "value_and_grad",
                       backend=backend, shapes=shapes, dtypes=dtypes, argnums=argnums)


def jacrev(fun: Callable, argnums: Any = 0, *, has_aux: bool = False,
           backend: str = "numpy") -> Transformed:
    """JAX's ``jacrev``: the Jacobian of ``fun`` by reverse mode, shape ``out.shape +
    arg.shape`` per output leaf and argument leaf (pytrees nest: output structure outside,
    argument structure inside).

    >>> import numpy as np, symgrad as sg
    >>> sg.jacrev(lambda x: x ** 2)(np.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """
    _check_function("jacrev", fun, "sg.jacobian(expr, wrt, mode='reverse')")
    argnums = _argnums(argnums)
    return Transformed(fun, _jac_make(argnums, has_aux, "reverse"), "jacrev",
                       backend=backend, argnums=argnums)


def jacfwd(f: Any, wrt: Any = None, *, argnums: Any = None, has_aux: bool = False,
           cleanup: bool = True, backend: str = "numpy") -> Any:
    """JAX's ``jacfwd`` on a function (the Jacobian by forward mode); on an expression,
    :func:`symgrad.transforms.derivatives.jacfwd` (``sg.jacfwd(expr, wrt)``).

    >>> import numpy as np, symgrad as sg
    >>> sg.jacfwd(lambda x: np.stack([x[0] * x[1], x[1]]))(np.array([2.0, 3.0]))
    array([[3., 2.],
           [0., 1.]])
    """
    if _is_expr(f):
        return derivatives.jacfwd(f, wrt, cleanup=cleanup)
    argnums = _one_argnums("jacfwd", f, wrt, argnums)
    return Transformed(f, _jac_make(argnums, has_aux, "forward"), "jacfwd",
                       backend=backend, argnums=argnums)


def jacobian(f: Any, wrt: Any = None, *, mode: str | None = None, cleanup: bool = True,
             sparse: bool = False, argnums: Any = None, has_aux: bool = False,
             backend: str = "numpy") -> Any:
    """The Jacobian: of an expression (``sg.jacobian(f, wrt, mode=..., sparse=...)``, see
    :func:`symgrad.transforms.derivatives.jacobian`; a list of expressions gives a tuple),
    or of a Python function (JAX's ``jacobian``, i.e. :func:`jacrev`; ``mode="forward"``
    is :func:`jacfwd`).

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> [J.shape for J in sg.jacobian([x * 2.0, sg.sum(x)], x)]
    [(2, 2), (2,)]
    >>> sg.jacobian(lambda v: v[::-1] * 2.0)(np.ones(2))
    array([[0., 2.],
           [2., 0.]])
    """
    if isinstance(f, (list, tuple)) and f and all(_is_expr(e) for e in f):
        return tuple(jacobian(e, wrt, mode=mode, cleanup=cleanup, sparse=sparse) for e in f)
    if _is_expr(f):
        return derivatives.jacobian(f, wrt, mode=mode, cleanup=cleanup, sparse=sparse)
    argnums = _one_argnums("jacobian", f, wrt, argnums)
    how = "forward" if mode == "forward" else "reverse"
    return Transformed(f, _jac_make(argnums, has_aux, how), "jacobian", backend=backend,
                       argnums=argnums)


def hessian(f: Any, wrt: Any = None, *, sparse: bool | None = None, method: str | None = None,
            argnums: Any = None, has_aux: bool = False, backend: str = "numpy") -> Any:
    """The Hessian: of an expression (``sg.hessian(f, wrt)``, see
    :func:`symgrad.transforms.derivatives.hessian`) or of a Python function of arrays
    (JAX's ``hessian(fun, argnums=0)``: ``jacfwd(jacrev(fun))``; nested blocks for pytrees).

    >>> import numpy as np, symgrad as sg
    >>> def rosen(x):
    ...     return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    >>> sg.hessian(rosen)(np.array([1.0, 1.0]))
    array([[ 802., -400.],
           [-400.,  200.]])
    """
    if _is_expr(f):
        return derivatives.hessian(f, wrt, sparse=sparse, method=method)
    argnums = _one_argnums("hessian", f, wrt, argnums)
    return Transformed(f, _hessian_make(argnums, has_aux), "hessian", backend=backend,
                       argnums=argnums)


def jit(fun: Callable, *, backend: str = "numpy", shapes: Any = None,
        dtypes: Any = None) -> Transformed:
    """``fun`` traced once per argument shapes and compiled (JAX's ``jit``): the same
    values, computed by emitted NumPy source; arguments and results may be pytrees.

    >>> import numpy as np, symgrad as sg
    >>> f = sg.jit(lambda p: {"y": p["a"] * 2.0 + p["b"]})
    >>> f({"a": np.ones(2), "b": 1.0})
    {'y': array([3., 3.])}
    """
    _check_function("jit", fun, "sg.compile(expr)")
    return Transformed(fun, _call_make, "jit", backend=backend, shapes=shapes, dtypes=dtypes)


_TRANSFORMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached(fun: Callable, what: str, build: Callable[[], Transformed]) -> Transformed:
    """The transform ``what`` of ``fun``, kept while ``fun`` lives (``sg.jvp(f, ...)`` in a
    loop traces once)."""
    try:
        table = _TRANSFORMS.setdefault(fun, {})
    except TypeError:  # not weak-referenceable
        return build()
    t = table.get(what)
    if t is None:
        t = table[what] = build()
    return t


def jvp(f: Any, primals: Any, tangents: Any, *, cleanup: bool = True,
        has_aux: bool = False) -> Any:
    """JAX's ``jvp(fun, primals, tangents) -> (primals_out, tangents_out)``: ``primals``
    and ``tangents`` are tuples (or lists) of arguments of the same structure. On an
    expression: ``sg.jvp(f, wrt, tangents)`` (see
    :func:`symgrad.transforms.derivatives.jvp`).

    >>> import numpy as np, symgrad as sg
    >>> y, t = sg.jvp(lambda x: np.sin(x) * x, (np.array([0.0, 1.0]),), (np.ones(2),))
    >>> [round(float(v), 6) for v in t]
    [0.0, 1.381773]
    """
    if _is_expr(f) or (isinstance(f, (list, tuple)) and f and all(map(_is_expr, f))):
        return derivatives.jvp(f, primals, tangents, cleanup=cleanup)
    _check_function("jvp", f, "sg.jvp(expr, wrt, tangents)")
    primals, tangents = _tuple_args("jvp", primals, "primals"), \
        _tuple_args("jvp", tangents, "tangents")
    t = _cached(f, f"jvp{has_aux}", lambda: Transformed(f, _jvp_make(has_aux), "jvp"))
    return t(primals, tangents)


def vjp(f: Any, *primals: Any, has_aux: bool = False, cleanup: bool = True) -> Any:
    """JAX's ``vjp(fun, *primals) -> (primals_out, vjp_fun)`` (with ``has_aux``: ``(out,
    vjp_fun, aux)``): ``vjp_fun(cotangent)`` is the tuple of cotangents of the primals.
    On an expression: ``sg.vjp(f, wrt, g)`` (see :func:`symgrad.transforms.derivatives.vjp`).

    >>> import numpy as np, symgrad as sg
    >>> y, pullback = sg.vjp(lambda x: x * x, np.array([1.0, 2.0]))
    >>> pullback(np.array([1.0, 1.0]))
    (array([2., 4.]),)
    """
    if _is_expr(f):
        if len(primals) != 2:
            raise DifferentiationError("vjp(f, wrt, g) on an expression takes wrt and the "
                                       "cotangent g")
        return derivatives.vjp(f, primals[0], primals[1], cleanup=cleanup)
    _check_function("vjp", f, "sg.vjp(expr, wrt, g)")
    value = _cached(f, f"call{has_aux}", lambda: Transformed(f, _call_make, "jit"))
    pull = _cached(f, f"vjp{has_aux}", lambda: Transformed(f, _vjp_make(has_aux), "vjp"))
    out = value(*primals)
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise DifferentiationError(f"vjp of {_fun_name(f)}: with has_aux=True the "
                                       "function must return a pair (value, aux)")
        out, aux = out

    def vjp_fun(cotangent: Any) -> tuple:
        return pull(primals, cotangent)

    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def hvp(f: Any, primals: Any, tangents: Any) -> Any:
    """The Hessian-vector product of a scalar function, as JAX's documentation builds it:
    ``jvp(grad(fun), primals, tangents)[1]`` (forward over reverse, H never built). On an
    expression: ``sg.hvp(f, wrt, v)`` (see :func:`symgrad.transforms.derivatives.hvp`).

    >>> import numpy as np, symgrad as sg
    >>> sg.hvp(lambda x: x[0] ** 2 * x[1], (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    array([4., 2.])
    """
    if _is_expr(f):
        return derivatives.hvp(f, primals, tangents)
    _check_function("hvp", f, "sg.hvp(expr, wrt, v)")
    g = _cached(f, "grad", lambda: grad(f))
    return jvp(g, primals, tangents)[1]


def linearize(f: Any, *args: Any) -> Any:
    """JAX's ``linearize(fun, *primals) -> (primals_out, f_jvp)``, ``f_jvp(*tangents)`` the
    Jacobian-vector product at the primals. On an expression: ``sg.linearize(f, wrt, at)``
    (see :func:`symgrad.backends.linearized.linearize`: only the tangent lines run per call).

    >>> import numpy as np, symgrad as sg
    >>> y, f_jvp = sg.linearize(lambda x: np.sin(x) * x, np.array([0.0, 1.0]))
    >>> [round(float(v), 6) for v in f_jvp(np.ones(2))]
    [0.0, 1.381773]
    """
    from ..backends.linearized import linearize as linearize_expr

    if _is_expr(f):
        return linearize_expr(f, *args)
    _check_function("linearize", f, "sg.linearize(expr, wrt, at)")
    out = _cached(f, "callFalse", lambda: Transformed(f, _call_make, "jit"))(*args)

    def f_jvp(*tangents: Any) -> Any:
        return jvp(f, args, tangents)[1]

    return out, f_jvp


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """JAX's ``vmap``: ``fun`` mapped over an axis of its arguments (``in_axes``: an int,
    None for an argument that is not mapped, or one entry per argument) and the results
    stacked along ``out_axes`` (arguments and results are pytrees).

    ``fun`` is traced once for one example and its graph rebuilt with a leading batch axis
    (:mod:`symgrad.transforms.batching`): one compiled call computes the whole batch. Where
    an op of ``fun`` cannot keep the rows apart (``x[0]``, a ``reshape`` to a fixed shape,
    a custom rule), ``fun`` is compiled for one example and run once per example (the
    loop; unrolled when called on expressions, inside a transform). ``mapped.vectorised(
    *args)`` says which one runs for such arguments.

    >>> import numpy as np, symgrad as sg
    >>> per_row = sg.vmap(lambda w, x: np.tanh(x @ w), in_axes=(None, 0))
    >>> [round(float(v), 6) for v in per_row(np.array([0.5, -1.0]), np.eye(2))]
    [0.462117, -0.761594]
    >>> per_row.vectorised(np.array([0.5, -1.0]), np.eye(2))
    True
    """
    _check_function("vmap", fun, "an expression with a leading batch axis")
    if any(a is None or isinstance(a, bool) or not isinstance(a, (int, np.integer))
           for a in (out_axes if isinstance(out_axes, (list, tuple)) else [out_axes])):
        raise ArgumentError(f"vmap: out_axes must be an int or one int per output, got "
                            f"{describe(out_axes)} (an unmapped output, out_axes=None, is "
                            "not supported: return it from outside the mapped function)")
    inner = fun if isinstance(fun, Transformed) else _cached(
        fun, "callFalse", lambda: Transformed(fun, _call_make, "jit"))
    whole = Transformed(fun, _vmap_make(in_axes, out_axes), "vmap")
    rows: set = set()  # argument specs whose trace could not be batched

    def key(args: tuple) -> tuple:
        leaves, tree = tree_flatten(args)
        return (tree, tuple((np.shape(x), getattr(x, "dtype", type(x))) for x in leaves))

    def mapped(*args: Any) -> Any:
        if any(isinstance(x, Expr) for x in tree_flatten(args)[0]):
            try:
                return _vectorised(rebound(fun), args, in_axes, out_axes)
            except Unbatchable:
                return _vmap_call(inner, args, in_axes, out_axes)
        k = key(args)
        if k not in rows:
            try:
                return whole(*args)
            except Unbatchable:
                rows.add(k)
        return _vmap_call(inner, args, in_axes, out_axes)

    def vectorised(*args: Any) -> bool:
        """Whether calls with arguments like ``args`` run as one batched call."""
        if key(args) not in rows:
            try:
                whole.compiled(*args)
            except Unbatchable:
                rows.add(key(args))
        return key(args) not in rows

    mapped.__name__ = f"vmap_{getattr(fun, '__name__', 'fun')}"
    mapped.vectorised = vectorised  # type: ignore[attr-defined]
    return mapped


# -- what each transform builds from the traced function ----------------------------------------


def _call_make(fun: Callable, args: tuple, static: dict) -> Any:
    return fun(*args, **static)


def _grad_make(argnums: Any, has_aux: bool, with_value: bool, cleanup: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        value, aux = _split(fun, fun(*args, **static), has_aux)
        value = _check_scalar(fun, value, "grad")
        wrt, tree = _wrt(fun, args, argnums)
        grads = derivatives.grad(value, wrt, cleanup=cleanup) if wrt else []
        g = tree_unflatten(tree, list(grads))
        if with_value:
            return ((value, aux), g) if has_aux else (value, g)
        return (g, aux) if has_aux else g

    return make


def _jac_make(argnums: Any, has_aux: bool, mode: str) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        out, aux = _split(fun, fun(*args, **static), has_aux)
        wrt, tree = _wrt(fun, args, argnums)
        leaves, out_def = tree_flatten(out)
        blocks = []
        for leaf in leaves:
            e = _as_output(fun, leaf, wrt)
            jac = derivatives.jacobian(e, wrt, mode=mode) if wrt else ()
            blocks.append(tree_unflatten(tree, list(jac)))
        jac = tree_unflatten(out_def, blocks)
        return (jac, aux) if has_aux else jac

    return make


def _hessian_make(argnums: Any, has_aux: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        value, aux = _split(fun, fun(*args, **static), has_aux)
        value = _check_scalar(fun, value, "hessian")
        wrt, tree = _wrt(fun, args, argnums)
        rows = derivatives.hessian(value, wrt, sparse=False) if wrt else ()
        h = tree_unflatten(tree, [tree_unflatten(tree, list(r)) for r in rows])
        return (h, aux) if has_aux else h

    return make


def _jvp_make(has_aux: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        primals, tangents = args
        out, aux = _split(fun, fun(*primals, **static), has_aux)
        p_leaves, p_def = tree_flatten(primals)
        t_leaves, t_def = tree_flatten(tangents)
        if p_def != t_def:
            raise DifferentiationError(f"jvp of {_fun_name(fun)}: primals and tangents "
                                       f"differ in structure ({p_def!r} and {t_def!r})")
        pairs = [(p, t) for p, t in zip(p_leaves, t_leaves) if is_float(p.dtype)]
        leaves, out_def = tree_flatten(out)
        outs = [_as_output(fun, e, p_leaves) for e in leaves]
        if pairs and outs:
            tan = derivatives.jvp(outs, [p for p, _ in pairs], [t for _, t in pairs])
        else:
            tan = [F.zeros(e.shape, dtype=e.dtype) for e in outs]
        result = (out, tree_unflatten(out_def, list(tan)))
        return result + (aux,) if has_aux else result

    return make


def _vjp_make(has_aux: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        primals, cotangent = args
        out, _ = _split(fun, fun(*primals, **static), has_aux)
        leaves, out_def = tree_flatten(out)
        c_leaves, c_def = tree_flatten(cotangent)
        if c_def != out_def:
            raise DifferentiationError(f"vjp of {_fun_name(fun)}: the cotangent's structure "
                                       f"{c_def!r} is not the output's {out_def!r}")
        p_leaves, p_def = tree_flatten(tuple(primals))
        wrt = [p for p in p_leaves if is_float(p.dtype)]
        total = [None] * len(wrt)
        for leaf, ct in zip(leaves, c_leaves):
            e = _as_output(fun, leaf, p_leaves)
            if ct.shape != e.shape:
                raise DifferentiationError(f"vjp of {_fun_name(fun)}: a cotangent has shape "
                                           f"{fmt(ct.shape)}, its output {fmt(e.shape)}")
            if not wrt:
                break
            parts = derivatives.vjp(e, wrt, ct)
            total = [p if t is None else t + p for t, p in zip(total, parts)]
        it = iter(total)
        grads = [(next(it) if is_float(p.dtype) else None) for p in p_leaves]
        grads = [F.zeros(p.shape, dtype=p.dtype) if g is None else g
                 for g, p in zip(grads, p_leaves)]
        return tuple(tree_unflatten(p_def, grads))

    return make


# -- vmap -------------------------------------------------------------------------------------


def _vmap_make(in_axes: Any, out_axes: Any) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        if static:
            raise ArgumentError("vmap: the mapped function takes positional arguments only")
        return _vectorised(fun, args, in_axes, out_axes)

    return make


def _vectorised(fun: Callable, args: tuple, in_axes: Any, out_axes: Any) -> Any:
    """``fun`` traced once for one example, its graph rebuilt for the batch (raises
    :class:`~symgrad.transforms.batching.Unbatchable`)."""
    axes = _axes_per_arg(in_axes, len(args))
    size = _batch_size(args, axes)
    tag = next(_FRESH)
    pairs: list[tuple[Expr, Expr]] = []
    one = []
    for a, ax in zip(args, axes):
        if ax is None:
            one.append(a)
            continue
        leaves, tree = tree_flatten(a)
        single = []
        for leaf in leaves:
            e = leaf if isinstance(leaf, Expr) else const(np.asarray(leaf))
            e = _move(e, ax % e.ndim, 0)
            v = var(f"_vm{tag}_{len(pairs)}", e.shape[1:], e.dtype)
            pairs.append((v, e))
            single.append(v)
        one.append(tree_unflatten(tree, single))
    out_leaves, out_def = tree_flatten(fun(*one))
    oaxes = _axes_per_arg(out_axes, out_def.num_leaves, "out_axes") \
        if isinstance(out_axes, (list, tuple)) else [out_axes] * out_def.num_leaves
    at = [k for k, e in enumerate(out_leaves) if isinstance(e, Expr)]
    if at:
        graph = max((out_leaves[k].graph for k in at), key=len)
        outs = [Expr(graph, graph.find(out_leaves[k])) for k in at]
        new = batched(outs, {v.name: e for v, e in pairs}, size)
        for k, e in zip(at, new):
            out_leaves[k] = e
    for k, e in enumerate(out_leaves):
        if isinstance(e, Expr):
            out_leaves[k] = _move(e, 0, oaxes[k] % e.ndim)
        else:
            a = np.asarray(e)
            out_leaves[k] = np.stack([a] * size, axis=oaxes[k] % (a.ndim + 1))
    return tree_unflatten(out_def, out_leaves)


def _move(e: Expr, source: int, destination: int) -> Expr:
    if source == destination:
        return e
    perm = [k for k in range(e.ndim) if k != source]
    perm.insert(destination, source)
    return F.transpose(e, tuple(perm))


def _batch_size(args: tuple, axes: list) -> int:
    size = None
    for a, ax in zip(args, axes):
        if ax is None:
            continue
        for leaf in tree_flatten(a)[0]:
            n = np.shape(leaf)[ax] if np.ndim(leaf) else None
            if n is None:
                raise ArgumentError(f"vmap: in_axes {ax} of an argument of rank 0")
            if size is not None and n != size:
                raise ArgumentError(f"vmap: mapped axes have different sizes: {size} and {n}")
            size = n
    if size is None:
        raise ArgumentError("vmap needs at least one mapped argument (in_axes not all None)")
    return size


def _vmap_call(inner: Callable, args: tuple, in_axes: Any, out_axes: Any) -> Any:
    axes = _axes_per_arg(in_axes, len(args))
    size = _batch_size(args, axes)
    symbolic = any(isinstance(x, Expr) for a in args for x in tree_flatten(a)[0])
    results = []
    for b in range(size):
        sliced = [a if ax is None else _take(a, ax, b) for a, ax in zip(args, axes)]
        results.append(inner(*sliced))
    leaves_per = [tree_flatten(r)[0] for r in results]
    out_def = tree_flatten(results[0])[1]
    oaxes = _axes_per_arg(out_axes, out_def.num_leaves, "out_axes") \
        if isinstance(out_axes, (list, tuple)) else [out_axes] * out_def.num_leaves
    stacked = []
    for k in range(out_def.num_leaves):
        column = [lv[k] for lv in leaves_per]
        if symbolic or any(isinstance(c, Expr) for c in column):
            stacked.append(F.stack([c if isinstance(c, Expr) else const(c) for c in column],
                                   axis=oaxes[k]))
        else:
            stacked.append(np.stack([np.asarray(c) for c in column], axis=oaxes[k]))
    return tree_unflatten(out_def, stacked)


def _take(tree: Any, axis: int, b: int) -> Any:
    def one(x: Any) -> Any:
        if isinstance(x, Expr):
            key = (slice(None),) * (axis % x.ndim) + (b,)
            return x[key]
        return np.take(np.asarray(x), b, axis=axis)

    leaves, tdef = tree_flatten(tree)
    return tree_unflatten(tdef, [one(x) for x in leaves])


def _axes_per_arg(axes: Any, n: int, what: str = "in_axes") -> list:
    axes = exact(axes)
    if axes is None or isinstance(axes, int):
        return [axes] * n
    if isinstance(axes, (list, tuple)) and len(axes) == n and all(
            a is None or isinstance(a, int) for a in axes):
        return list(axes)
    raise ArgumentError(f"vmap: {what} must be an int, None, or one int/None per "
                        f"{'argument' if what == 'in_axes' else 'output'} ({n}), got {axes!r}")


# -- helpers ----------------------------------------------------------------------------------


def _is_expr(f: Any) -> bool:
    return isinstance(f, Expr)


def _fun_name(fun: Any) -> str:
    return str(getattr(fun, "__name__", "fun"))


def _check_function(what: str, f: Any, expr_form: str) -> None:
    if not callable(f):
        raise DifferentiationError(
            f"{what} takes a Python function (sg.{what}(fun, ...), as in JAX) or an "
            f"expression ({expr_form}); got {type_name(f)}")


def _one_argnums(what: str, f: Any, wrt: Any, argnums: Any) -> Any:
    """``argnums`` of a function transform, given positionally (JAX) or by keyword."""
    _check_function(what, f, f"sg.{what}(expr, wrt)")
    if wrt is not None and argnums is not None:
        raise DifferentiationError(f"give argnums once: sg.{what}(fun, 1) or "
                                   f"sg.{what}(fun, argnums=1)")
    given = wrt if wrt is not None else argnums
    if isinstance(given, (Expr, str)) or (isinstance(given, (list, tuple)) and given and any(
            isinstance(g, (Expr, str)) for g in given)):
        raise DifferentiationError(
            f"sg.{what}(fun, argnums) takes a Python function and argument numbers; "
            f"variables (wrt) go with an expression: sg.{what}(expr, wrt)")
    return _argnums(0 if given is None else given)


def _argnums(argnums: Any) -> int | tuple[int, ...]:
    def ok(k: Any) -> bool:
        return isinstance(k, (int, np.integer)) and not isinstance(k, bool)

    argnums = exact(argnums)
    if ok(argnums):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and argnums and all(ok(k) for k in argnums):
        out = tuple(int(k) for k in argnums)
        if len(set(out)) != len(out):
            raise DifferentiationError(f"argnums {describe(argnums)} lists an argument twice")
        return out
    raise DifferentiationError(f"argnums must be an int or a non-empty tuple of ints, got "
                               f"{describe(argnums)}")


def _wrt(fun: Callable, args: tuple, argnums: Any) -> tuple[list[Expr], Any]:
    """The variables of the differentiated arguments, and their structure."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    n = len(args)
    if any(not -n <= k < n for k in nums):
        raise InputError(f"{_fun_name(fun)}: argnums {argnums!r} does not fit a call with "
                         f"{n} argument(s)")
    chosen = tuple(args[k] for k in nums) if isinstance(argnums, tuple) else args[argnums]
    leaves, tree = tree_flatten(chosen)
    for leaf in leaves:
        if not is_float(leaf.dtype):
            raise DifferentiationError(
                f"{_fun_name(fun)}: an argument in argnums ('{_label(leaf)}') has dtype "
                f"{leaf.dtype}; gradients need float arguments (pass floats, or leave it out "
                "of argnums)")
    return leaves, tree


def _label(e: Expr) -> str:
    name = e.name or "?"
    return name if not name.startswith("_t") else "argument"


def _split(fun: Callable, result: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise DifferentiationError(f"{_fun_name(fun)}: with has_aux=True the function must "
                                   "return a pair (value, aux)")
    return result[0], result[1]


def _check_scalar(fun: Callable, value: Any, what: str) -> Expr:
    if not isinstance(value, Expr):
        try:
            value = const(float(value))  # a constant function: its derivatives are zero
        except (TypeError, ValueError):
            raise DifferentiationError(f"{_fun_name(fun)}: {what} needs the function to "
                                       f"return a float scalar, got {type_name(value)}"
                                       ) from None
    if value.shape != () or not is_float(value.dtype):
        raise DifferentiationError(
            f"{_fun_name(fun)}: the function must return a float scalar, got shape "
            f"{fmt(value.shape)} and dtype {value.dtype}; for vector outputs use "
            "sg.jacobian(fun) / sg.vjp(fun, ...)")
    return value


def _as_output(fun: Callable, leaf: Any, like: list) -> Expr:
    """An output leaf as an Expr (a number or array becomes a constant)."""
    if isinstance(leaf, Expr):
        return leaf
    try:
        a = np.asarray(leaf, dtype=np.float64)
    except (TypeError, ValueError):
        raise DifferentiationError(f"{_fun_name(fun)} returned {type_name(leaf)}, not an "
                                   "array") from None
    return const(a, like[0]) if like else const(a)


def _tuple_args(what: str, value: Any, name: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise ArgumentError(f"{what}(fun, primals, tangents): {name} must be a tuple of "
                            f"arguments (as in JAX: (x,) for one), got {type_name(value)}")
    return tuple(value)


def _parameter_names(fun: Callable) -> list[str]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = []
    for p in params:
        if p.kind not in kinds:
            break
        name = str(p.name)
        ok = name.isidentifier() and not keyword.iskeyword(name) and name[:2] != "__"
        # np/numpy name the module in emitted code: the variable is np_ (the user chose the
        # parameter's name, not a variable's)
        names.append("arg" if not ok else f"{name}_" if name in ("np", "numpy") else name)
    return names


def _leaf_names(treedef: Any, params: list[str]) -> list[str]:
    """Variable names for the leaves of the argument tuple: the parameter's name, with the
    dict key or position inside a container (``model_W1``)."""
    out: list[str] = []
    for k, child in enumerate(treedef.children):
        base = params[k] if k < len(params) else f"arg{k}"
        _name_leaves(child, base, out)
    return out


def _name_leaves(t: Any, base: str, out: list[str]) -> None:
    if t.kind == "leaf":
        out.append(base)
        return
    keys = t.aux if t.kind == "dict" or isinstance(t.aux, tuple) and len(t.aux) == len(
        t.children) else None
    if keys is None and hasattr(t.kind, "_fields"):
        keys = t.kind._fields
    for k, child in enumerate(t.children):
        part = str(keys[k]) if keys is not None else str(k)
        name = f"{base}_{part}"
        _name_leaves(child, name if name.isidentifier() else f"{base}_{k}", out)


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for k, n in enumerate(names):
        n = n if n not in seen else f"{n}_{k}"
        seen.add(n)
        out.append(n)
    return out


def _hidden_names(cap: Capture, picks: list[int]) -> list[str]:
    """The variable name at each picked position of :func:`state`'s arrays."""
    from ..frontend.capture import _part_arrays

    flat: list[str] = []
    for w in cap.watches:
        count = len(_part_arrays(w.read()))
        flat.extend(list(w.names[:count]) + [""] * max(0, count - len(w.names)))
    return [flat[k] for k in picks]


def _flat_args(args: tuple, name: Callable[[int], str]) -> tuple[list, Any]:
    leaves, treedef = tree_flatten(exact(args))
    return [_as_array(a, name(k)) for k, a in enumerate(leaves)], treedef


def _as_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, Expr):
        raise InputError(f"argument '{name}' is a symgrad expression; this function takes "
                         "arrays (for expressions use sg.grad(expr, wrt))")
    if not isinstance(value, np.ndarray):
        value = exact(value)
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(f"argument '{name}' is not an array: {e}") from None
    if a.dtype.kind not in "biuf":
        raise InputError(f"argument '{name}' has dtype {a.dtype}; pass numbers or arrays of "
                         "numbers (pytrees of them: dicts, lists, tuples, dataclasses)")
    if a.dtype.name not in _OK:
        a = a.astype(np.float64 if a.dtype.kind == "f" else np.int64)
    return a


def _declared(params: list[str], shapes: Any, dtypes: Any) -> list[tuple]:
    """Argument specs from ``shapes``/``dtypes`` given per position or by parameter name."""
    shapes, dtypes = exact(shapes), exact(dtypes)
    count = None
    for given in (shapes, dtypes):
        if isinstance(given, (list, tuple)):
            count = len(given)
    if count is None:
        count = len(params)
    out = []
    for k in range(count):
        name = params[k] if k < len(params) else None
        out.append((tuple(_pick(shapes, k, name, ())), str(_pick(dtypes, k, name, "float64"))))
    return out


def _pick(given: Any, k: int, name: str | None, default: Any) -> Any:
    if given is None:
        return default
    if isinstance(given, Mapping):
        return given.get(name, default) if name is not None else default
    if isinstance(given, (list, tuple)):
        return given[k] if k < len(given) else default
    raise InputError(f"shapes and dtypes are a list (one per argument) or a dict by "
                     f"parameter name, got {type(given).__name__}")


def _static_key(static: Mapping[str, Any]) -> tuple:
    items = []
    for k, v in sorted(static.items()):
        if not isinstance(v, Hashable):
            raise InputError(f"keyword argument {k!r} is static (passed to the function as it "
                             f"is while tracing) and must be hashable, got {type(v).__name__}")
        items.append((k, _value_key(v)))
    return tuple(items)


def _value_key(v: Any) -> Any:
    """A key equal only for values that trace alike: the type in it, a float by its bits
    (0.0 and -0.0 apart, a NaN equal to itself), through tuples and frozensets."""
    t = type(v)
    if t is float:
        return ("float", v.hex())
    if t is complex:
        return ("complex", v.real.hex(), v.imag.hex())
    if isinstance(v, np.generic):
        return ("numpy", v.dtype.str, v.tobytes())
    if t is tuple:
        return ("tuple", *[_value_key(x) for x in v])
    if t is frozenset:
        return ("frozenset", frozenset(_value_key(x) for x in v))
    return (t.__module__, t.__qualname__, v)


GradFunction = Transformed  # the name of sg.grad(fun)'s result before the other transforms
