"""Function transforms the way JAX users expect: ``sg.grad(fun)`` and ``sg.value_and_grad``.

``sg.grad`` keeps its symbolic meaning (``sg.grad(expr, wrt)`` -> Exprs) and adds JAX's:
given a Python function of arrays, ``sg.grad(fun, argnums=0)`` returns a function of NumPy
arrays that computes the gradient. The first call with arguments of new shapes or dtypes
*traces* ``fun``: it calls ``fun`` once with symgrad variables of those shapes (named after
``fun``'s parameters), differentiates the result with the reverse-mode transform, emits
NumPy source and compiles it (:func:`symgrad.compile`); later calls with the same shapes
run the compiled code directly. ``fun`` builds its result with Python operators and
NumPy's own functions (``np.exp(x)`` on a traced argument builds graph), ``symgrad.numpy``
or symgrad's functions (``sg.exp``, ``sg.sum``, ``x @ W``, ``x[1:]``...); Python control
flow on values (``if x > 0``) cannot be traced: use ``np.where``/``sg.where``.

Declared shapes trace at once instead (``shapes=[(4, 3), (3,)]``, or by parameter name),
so ``.source`` can be read before any call. Keyword arguments at call time are *static*:
they are passed to ``fun`` as they are while tracing, and a new value traces again.

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
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .backends.compiled import CompiledFunction, compile
from .errors import DifferentiationError, InputError, SymgradError
from .ir.expr import Expr, const, var
from .ir.shapes import fmt, is_float
from .ir.values import describe, exact
from .progress import step
from .transforms import derivatives

Spec = tuple[tuple[int, ...], str]  # (shape, dtype) of one argument


def grad(f: Expr | Callable, wrt: Any = None, *, cleanup: bool = True,
         argnums: int | Sequence[int] | None = None, has_aux: bool = False,
         shapes: Any = None, dtypes: Any = None) -> Any:
    """The gradient: of an expression (symbolic) or of a Python function (JAX-style).

    ``grad(f, wrt)`` with an Expr ``f``: the gradient Exprs, appended to ``f``'s graph (see
    :func:`symgrad.transforms.derivatives.grad`; ``cleanup=False`` keeps B as the rules
    write it).

    ``grad(fun, argnums=0)`` with a Python function: a :class:`GradFunction` that takes
    NumPy arrays and returns the gradient with respect to argument ``argnums`` (a tuple of
    argument numbers gives a tuple of gradients). The second positional argument is
    ``argnums`` here, as in JAX (``sg.grad(fun, 1)``). ``has_aux``: ``fun`` returns
    ``(value, aux)``; the result is then ``(gradient, aux)``. ``shapes``/``dtypes``: trace
    now (see the module docstring).

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> sg.grad(sg.sin(x) * x, x)                     # symbolic
    <Expr sin(x) + x * cos(x) : float64[]>
    >>> float(sg.grad(lambda x: sg.sin(x) * x)(0.5))  # a function of arrays
    0.9182168195493894
    """
    if isinstance(f, Expr):
        if wrt is None:
            raise DifferentiationError("grad(f, wrt) needs the variables to differentiate "
                                       "with respect to, e.g. sg.grad(f, x) or sg.grad(f, "
                                       "['x', 'y'])")
        if argnums is not None or has_aux or shapes is not None or dtypes is not None:
            raise DifferentiationError("argnums, has_aux, shapes and dtypes are for grad of "
                                       "a Python function; for an expression pass wrt")
        return derivatives.grad(f, wrt, cleanup=cleanup)
    if not callable(f):
        raise DifferentiationError(f"grad needs a symgrad expression or a Python function, "
                                   f"got {type(f).__name__}")
    if wrt is not None and argnums is not None:
        raise DifferentiationError("give argnums once: sg.grad(fun, 1) or "
                                   "sg.grad(fun, argnums=1)")
    argnums = wrt if wrt is not None else (0 if argnums is None else argnums)
    return GradFunction(f, argnums, has_aux=has_aux, with_value=False, shapes=shapes,
                        dtypes=dtypes, cleanup=cleanup)


def value_and_grad(f: Expr | Callable, argnums: Any = 0, *, has_aux: bool = False,
                   shapes: Any = None, dtypes: Any = None, cleanup: bool = True) -> Any:
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
    if isinstance(f, Expr):
        return f, derivatives.grad(f, argnums, cleanup=cleanup)
    if not callable(f):
        raise DifferentiationError(f"value_and_grad needs a Python function, got "
                                   f"{type(f).__name__}")
    return GradFunction(f, argnums, has_aux=has_aux, with_value=True, shapes=shapes,
                        dtypes=dtypes, cleanup=cleanup)


class GradFunction:
    """What ``sg.grad(fun)`` / ``sg.value_and_grad(fun)`` return: call it with arrays.

    Attributes: ``fun``, ``argnums``; ``source`` (the NumPy source of the latest
    compilation); :meth:`compiled` gives the :class:`~symgrad.backends.compiled.
    CompiledFunction` for given arguments (tracing if needed); ``cache_size`` counts the
    shape signatures compiled so far.
    """

    def __init__(self, fun: Callable, argnums: Any, *, has_aux: bool, with_value: bool,
                 shapes: Any = None, dtypes: Any = None, cleanup: bool = True) -> None:
        self.fun = fun
        argnums, shapes, dtypes = exact((argnums, shapes, dtypes))  # plain values only
        self.argnums = _argnums(argnums)
        self.has_aux, self.with_value, self.cleanup = has_aux, with_value, cleanup
        self.params = _parameter_names(fun)
        self._cache: dict[tuple, tuple[CompiledFunction, list[int], Any]] = {}
        self._latest: CompiledFunction | None = None
        base = getattr(fun, "__name__", "fun")
        base = base if str(base).isidentifier() and not keyword.iskeyword(base) else "lambda"
        self.__name__ = ("value_and_grad_" if with_value else "grad_") + str(base).strip("<>")
        self.__doc__ = getattr(fun, "__doc__", None)
        if shapes is not None or dtypes is not None:
            self._entry(_declared(self.params, shapes, dtypes), {})

    def __repr__(self) -> str:
        return f"<symgrad {self.__name__}, argnums={self.argnums!r}>"

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    @property
    def source(self) -> str:
        """The NumPy source of the most recently compiled specialisation."""
        if self._latest is None:
            raise SymgradError(f"{self.__name__} has not been traced yet: call it, or "
                               "create it with shapes=... to trace at once")
        return self._latest.source

    def compiled(self, *args: Any, **static: Any) -> CompiledFunction:
        """The compiled function for arguments like ``args`` (traced on first use)."""
        args, static = exact(args), exact(static)
        arrays = [_as_array(a, self._name(k)) for k, a in enumerate(args)]
        return self._entry([(a.shape, a.dtype.name) for a in arrays], static)[0]

    def __call__(self, *args: Any, **static: Any) -> Any:
        args, static = exact(args), exact(static)
        arrays = [_as_array(a, self._name(k)) for k, a in enumerate(args)]
        fn, used, aux_tree = self._entry([(a.shape, a.dtype.name) for a in arrays], static)
        out = fn(*[arrays[k] for k in used])
        return self._pack(list(out), aux_tree)

    # -- tracing -------------------------------------------------------------------------

    def _name(self, k: int) -> str:
        return self.params[k] if k < len(self.params) else f"arg{k}"

    def _entry(self, specs: list[Spec], static: Mapping[str, Any]):
        key = (tuple(specs), _static_key(static))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = self._trace(specs, dict(static))
        self._latest = entry[0]
        return entry

    def _trace(self, specs: list[Spec], static: dict):
        nums = [k if k >= 0 else k + len(specs) for k in self._positions()]
        if any(not 0 <= k < len(specs) for k in nums):
            raise InputError(f"{self.__name__}: argnums {self.argnums!r} does not fit a call "
                             f"with {len(specs)} argument(s)")
        names = _unique([self._name(k) for k in range(len(specs))])
        variables = [var(n, shape, dtype) for n, (shape, dtype) in zip(names, specs)]
        label = getattr(self.fun, "__name__", "fun")
        with step(f"trace {label}", unit="node") as s:
            result = self.fun(*variables, **static)
            value, aux = self._split(result)
            s.update(len(value.graph))
        for k in nums:
            if not is_float(specs[k][1]):
                raise DifferentiationError(
                    f"{self.__name__}: argument {k} ('{names[k]}') has dtype {specs[k][1]}; "
                    "gradients need float arguments (pass floats, or leave it out of argnums)")
        wrt = [variables[k] for k in nums]
        grads = derivatives.grad(value, wrt, cleanup=self.cleanup)
        aux_leaves, aux_tree = _flatten(aux) if self.has_aux else ([], None)
        outputs = ([value] if self.with_value else []) + aux_leaves + list(grads)
        graph = max((e.graph for e in outputs), key=len)
        used = [k for k, n in enumerate(names) if n in graph.variables]
        fn = compile(outputs, inputs=[names[k] for k in used], name=self.__name__)
        return fn, used, (aux_tree, len(aux_leaves))

    def _positions(self) -> tuple[int, ...]:
        return self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)

    def _split(self, result: Any) -> tuple[Expr, Any]:
        aux = None
        if self.has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise DifferentiationError(f"{self.__name__}: with has_aux=True the function "
                                           "must return a pair (value, aux)")
            result, aux = result
        if not isinstance(result, Expr):
            try:
                result = const(float(result))  # a constant function: its gradient is zero
            except (TypeError, ValueError):
                raise DifferentiationError(
                    f"{self.__name__}: the function returned {type(result).__name__}, not a "
                    "scalar expression") from None
        if result.shape != () or not is_float(result.dtype):
            raise DifferentiationError(
                f"{self.__name__}: the function must return a float scalar, got shape "
                f"{fmt(result.shape)} and dtype {result.dtype}; for vector outputs use "
                "sg.jacobian / sg.vjp on the expression")
        return result, aux

    def _pack(self, out: list, aux_info: Any) -> Any:
        aux_tree, n_aux = aux_info
        value = out.pop(0) if self.with_value else None
        aux = _unflatten(aux_tree, out[:n_aux]) if self.has_aux else None
        grads = out[n_aux:]
        g = tuple(grads) if isinstance(self.argnums, tuple) else grads[0]
        if self.with_value:
            return ((value, aux), g) if self.has_aux else (value, g)
        return (g, aux) if self.has_aux else g


# -- helpers ------------------------------------------------------------------------------


def _argnums(argnums: Any) -> int | tuple[int, ...]:
    def ok(k: Any) -> bool:
        return isinstance(k, (int, np.integer)) and not isinstance(k, bool)

    if ok(argnums):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and argnums and all(ok(k) for k in argnums):
        out = tuple(int(k) for k in argnums)
        if len(set(out)) != len(out):
            raise DifferentiationError(f"argnums {describe(argnums)} lists an argument twice")
        return out
    raise DifferentiationError(f"argnums must be an int or a non-empty tuple of ints, got "
                               f"{describe(argnums)}")


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


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for k, n in enumerate(names):
        n = n if n not in seen else f"{n}_{k}"
        seen.add(n)
        out.append(n)
    return out


def _as_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, Expr):
        raise InputError(f"argument '{name}' is a symgrad expression; this function takes "
                         "arrays (for expressions use sg.grad(expr, wrt))")
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(f"argument '{name}' is not an array: {e}") from None
    if a.dtype.kind not in "biuf":
        raise InputError(f"argument '{name}' has dtype {a.dtype}; pass numbers or arrays of "
                         "numbers")
    if a.dtype.kind == "u" or a.dtype.name not in ("float64", "float32", "int64", "int32",
                                                   "bool"):
        a = a.astype(np.float64 if a.dtype.kind == "f" else np.int64)
    return a


def _declared(params: list[str], shapes: Any, dtypes: Any) -> list[Spec]:
    """Argument specs from ``shapes``/``dtypes`` given per position or by parameter name."""
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


def _flatten(tree: Any) -> tuple[list[Expr], Any]:
    """The Exprs (or numbers) in a nest of tuples, lists and dicts, and its structure."""
    leaves: list[Expr] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, (tuple, list)):
            stack.extend(reversed(node))
        else:
            leaves.append(node if isinstance(node, Expr) else const(node))
    return leaves, tree


def _unflatten(tree: Any, leaves: list) -> Any:
    it = iter(leaves)

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: build(v) for k, v in node.items()}
        if isinstance(node, (tuple, list)):
            return type(node)(build(v) for v in node)
        return next(it)

    return build(tree)


__all__ = ["grad", "value_and_grad", "GradFunction"]
