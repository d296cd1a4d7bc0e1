"""The Expr handle: one node of a :class:`~symgrad.ir.graph.Graph`, with NumPy-like
operators, the array protocols (what they name: :mod:`.numpy_names`), and the functions that
build nodes (``build``, ``call``, ``F.<op>``, ``var``, ``const``).

Exprs from different graphs combine: the smaller graph's part is imported into the larger
one. Python numbers combine as NumPy 2 combines them (NEP 50: they are "weak", so
``2.0 * x`` keeps ``x``'s float32).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import NameConflictError, ShapeError, SymgradError, UnsupportedError
from .callsite import callsite, message
from .graph import Graph, Node, tracing_now
from .numpy_names import (
    ACCUMULATE,
    REDUCE,
    numpy_name,
    scipy_conversion,
    ufunc_name,
    ufunc_op,
)
from .op import FUNCTIONS, REGISTRY, RESULT, SPARSE, UNSUPPORTED, Op, public_op
from .shapes import COMPLEXES, DTYPES, Shape
from .text import infix
from .values import exact, stood_for

# Jupyter's rich display: printing/ registers the functions that make each form ("latex",
# "html") here, as ir/ imports nothing above it. Each takes an Expr and returns the text, or
# None (too big, a tool missing) for Jupyter to show the plain text instead.
DISPLAY: dict[str, Callable[[Expr], str | None]] = {}
NAMESPACE: dict[str, Any] = {}  # "numpy": symgrad.numpy, which installs itself (it is above)
_NUMPY_DTYPES = {name: np.dtype(name) for name in DTYPES}


class Expr:
    """A handle on one node of a :class:`Graph`, with NumPy-like operators.

    >>> import symgrad as sg
    >>> x, y = sg.var("x"), sg.var("y")
    >>> str(x * (y + 1))
    'x * (y + 1)'
    >>> (x * y).shape
    ()
    """

    __slots__ = ("graph", "node")
    __array_priority__ = 1000.0  # NumPy scalars and arrays defer to Expr's operators

    def __init__(self, graph: Graph, node: int) -> None:
        self.graph = graph
        self.node = node

    @property
    def data(self) -> Node:
        return self.graph.nodes[self.node]

    @property
    def shape(self) -> Shape:
        return self.graph.nodes[self.node].shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the values (``x.dtype == np.float64`` and ``== "float64"``;
        ``str(x.dtype)`` is its name, the graph's own record of it)."""
        return _NUMPY_DTYPES[self.graph.nodes[self.node].dtype]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def op(self) -> str:
        return self.graph.nodes[self.node].op

    @property
    def name(self) -> str | None:
        return self.graph.nodes[self.node].name

    @property
    def T(self) -> Expr:
        return self if self.ndim < 2 else F.transpose(self)  # as NumPy: a vector's .T is it

    def __len__(self) -> int:
        if not self.shape:
            raise UnsupportedError("len() of a 0-d expression (it has no length, as in NumPy)")
        return self.shape[0]

    def __iter__(self):
        """The rows along the first axis, as NumPy iterates (the shape is known)."""
        if not self.shape:
            raise UnsupportedError("iteration over a 0-d expression (as in NumPy)")
        return (self[k] for k in range(self.shape[0]))

    def __bool__(self) -> bool:
        line = callsite()[0]
        when = "while tracing" if tracing_now() else "until it is evaluated"
        raise UnsupportedError(
            f"the truth value of a symbolic expression is unknown {when} (its value "
            f"comes later{'; at ' + line if line else ''}); use sg.where(cond, a, b) "
            "instead of if/else"
        )

    def _no_value(self, what: str):
        raise UnsupportedError(message(what))

    def __float__(self) -> float:
        self._no_value("float()")

    def __int__(self) -> int:
        self._no_value("int()")

    def __index__(self) -> int:
        self._no_value("using as an index or size")

    def __complex__(self) -> complex:
        self._no_value("complex()")

    def __array__(self, dtype=None, copy=None):
        refusal = scipy_conversion()
        if refusal == "":  # SciPy's A @ x: "not an array", so Python asks x.__rmatmul__
            return np.empty((), dtype=object)
        if refusal:
            raise UnsupportedError(refusal)
        self._no_value("converting to a NumPy array")

    def item(self, *args):
        self._no_value(".item()")

    def tolist(self):
        self._no_value(".tolist()")

    def __setitem__(self, key, value):
        raise UnsupportedError(
            "symbolic arrays cannot be assigned in place; build the new array with "
            "x.at[index].set(value) (or .add(value)), which returns it (inside a function "
            "given to sg.grad or sg.jit, an array made there with np.zeros, np.zeros_like or "
            "np.copy takes out[i] = value)"
        )

    @property
    def at(self) -> _At:
        """Functional updates: ``x.at[idx].set(v)``, ``.add(v)``, ``.multiply(v)``, ``.get()``.

        >>> import symgrad as sg
        >>> x = sg.var("x", shape=(3,))
        >>> sg.evaluate(x.at[1].set(5.0), {"x": [1.0, 2.0, 3.0]})
        array([1., 5., 3.])
        """
        return _At(self)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """``symgrad.numpy``: array-API-aware code (``xp = array_namespace(x)``) traces with
        NumPy's names and meanings (the module installs itself in :data:`NAMESPACE`)."""
        if "numpy" not in NAMESPACE:
            raise UnsupportedError("import symgrad.numpy: it is the array namespace of Exprs")
        return NAMESPACE["numpy"]

    def __array_ufunc__(self, ufunc, method: str, *inputs: Any, **kwargs: Any):
        if method == "__call__" and not kwargs:  # np.sin(x), x * y: the op straight away
            op = ufunc_op(ufunc)
            if op is not None and op.signature._operands_only == len(inputs):
                return _apply(op, inputs)
        return _array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args: tuple, kwargs: dict):
        return _numpy_call(numpy_name(func), args, kwargs)

    def __hash__(self) -> int:
        return hash((id(self.graph), self.node))

    def __str__(self) -> str:
        return infix(self)

    def __repr__(self) -> str:
        text = infix(self, short=True)  # big constants as const(f64[5,5])
        if len(text) > 300 or "\n" in text:
            text = text.replace("\n", " ")[:297] + "..."
        return f"<Expr {text} : {self.dtype}{list(self.shape)}>"

    def _repr_latex_(self) -> str | None:
        """The formula, ``$...$``, for Jupyter (None when too big to write out)."""
        make = DISPLAY.get("latex")
        return None if make is None else make(self)

    def _repr_html_(self) -> str | None:
        """For a derivative, its picture beside the forward graph, for Jupyter (None for a
        forward expression or one too big to draw: Jupyter shows the formula or text)."""
        make = DISPLAY.get("html")
        return None if make is None else make(self)

    def __add__(self, o):
        return call("add", self, o)

    def __radd__(self, o):
        return call("add", o, self)

    def __sub__(self, o):
        return call("subtract", self, o)

    def __rsub__(self, o):
        return call("subtract", o, self)

    def __mul__(self, o):
        return call("multiply", self, o)

    def __rmul__(self, o):
        return call("multiply", o, self)

    def __truediv__(self, o):
        return call("divide", self, o)

    def __rtruediv__(self, o):
        return call("divide", o, self)

    def __pow__(self, o):
        return call("power", self, o)

    def __rpow__(self, o):
        return call("power", o, self)

    def __matmul__(self, o):
        return F.matmul(self, o)

    def __rmatmul__(self, o):
        return F.matmul(o, self)

    def __neg__(self):
        return call("negative", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.abs(self)

    def __lt__(self, o):
        return F.less(self, o)

    def __le__(self, o):
        return F.less_equal(self, o)

    def __gt__(self, o):
        return F.greater(self, o)

    def __ge__(self, o):
        return F.greater_equal(self, o)

    def __eq__(self, o):  # type: ignore[override]
        return F.equal(self, o)

    def __ne__(self, o):  # type: ignore[override]
        return F.not_equal(self, o)

    def __and__(self, o):
        return _logical("logical_and", self, o)

    def __rand__(self, o):
        return _logical("logical_and", o, self)

    def __or__(self, o):
        return _logical("logical_or", self, o)

    def __ror__(self, o):
        return _logical("logical_or", o, self)

    def __xor__(self, o):
        return _logical("logical_xor", self, o)

    def __rxor__(self, o):
        return _logical("logical_xor", o, self)

    def __invert__(self):
        return _logical("logical_not", self)

    def __floordiv__(self, o):
        return F.floor_divide(self, o)

    def __rfloordiv__(self, o):
        return F.floor_divide(o, self)

    def __mod__(self, o):
        return F.mod(self, o)

    def __rmod__(self, o):
        return F.mod(o, self)

    def __divmod__(self, o):
        return F.floor_divide(self, o), F.mod(self, o)

    def __rdivmod__(self, o):
        return F.floor_divide(o, self), F.mod(o, self)

    def __getitem__(self, key):
        return REGISTRY["index"].front(self, key)

    def reshape(self, *shape, order="C") -> Expr:
        return _numpy_call("reshape", (self, shape[0] if len(shape) == 1 else shape),
                           {"order": order})

    def __getattr__(self, name: str) -> Any:
        """NumPy's ndarray methods (``x.var()``, ``x.dot(y)``, ``x.ravel()``, ...), from the
        functions of the same name."""
        target = _METHODS.get(name)
        if target is None or function(target) is None:
            raise AttributeError(f"'Expr' has no attribute {name!r}")
        return lambda *args, **kwargs: _numpy_call(target, (self, *args), kwargs)

    @property
    def mT(self) -> Expr:
        return F.matrix_transpose(self)

    @property
    def real(self) -> Expr:
        return F.real(self) if self.data.dtype in COMPLEXES else self

    @property
    def imag(self) -> Expr:
        return F.imag(self) if self.data.dtype in COMPLEXES else F.zeros_like(self)

    def flatten(self, order="C") -> Expr:
        return _numpy_call("ravel", (self,), {"order": order})

    def transpose(self, *axes) -> Expr:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes or None
        return F.transpose(self, axes)

    def sort(self, *args, **kwargs):
        raise UnsupportedError("x.sort() sorts in place; use np.sort(x) (symgrad.numpy.sort)")


# ndarray methods that are NumPy functions of the array (x.var(...) is var(x, ...))
_METHODS = {name: name for name in (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "clip", "copy",
    "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min", "prod", "ptp", "ravel",
    "repeat", "round", "squeeze", "std", "sum", "swapaxes", "take", "trace", "var", "conj",
    "conjugate",
)}


class _At:
    """``x.at[key]``: the position to update functionally."""

    __slots__ = ("x",)

    def __init__(self, x: Expr) -> None:
        self.x = x

    def __getitem__(self, key: Any) -> _Slot:
        return _Slot(self.x, key)


class _Slot:
    """``x.at[key]`` with ``set``, ``add``, ``multiply`` and ``get``, each returning a new
    Expr (JAX's spelling). ``add`` accumulates duplicate indices (``np.add.at``); ``set`` and
    ``multiply`` expect each position once."""

    __slots__ = ("x", "key")

    def __init__(self, x: Expr, key: Any) -> None:
        self.x, self.key = x, key

    def get(self) -> Expr:
        return self.x[self.key]

    def _scatter(self, v: Any) -> Expr:
        """``v`` (broadcast to ``x[key]``) written into zeros of x's shape."""
        x, part = self.x, self.x[self.key]
        values = F.broadcast_to(v, part.shape) if _shape_of(v) != part.shape else v
        if part.node == x.node:
            return values
        return F.index_add(values, *(Expr(part.graph, a) for a in part.data.args[1:]),
                           key=part.data.attrs["key"], shape=x.shape)

    def add(self, v: Any) -> Expr:
        return self.x + self._scatter(v)

    def set(self, v: Any) -> Expr:
        return F.where(self._mask(), self._scatter(v), self.x)

    def multiply(self, v: Any) -> Expr:
        return F.where(self._mask(), self.x * self._scatter(v), self.x)

    def _mask(self) -> Expr:
        return self._scatter(np.ones((), dtype=bool)) if self.x[self.key].node == self.x.node \
            else self._scatter(1) > 0


def _shape_of(v: Any) -> tuple:
    return v.shape if isinstance(v, Expr) else np.shape(v)


def _numpy_call(name: str, args: tuple, kwargs: dict) -> Any:
    fn = function(name)
    if fn is None:
        if name.startswith("scipy."):
            space = name.rsplit(".", 1)[0]
            raise UnsupportedError(f"{name} is not supported on symbolic arrays: "
                                   f"symgrad.{space}.__all__ lists what is covered")
        hint = UNSUPPORTED.get(name, "symgrad.numpy lists what is covered (dir(sg.numpy))")
        raise UnsupportedError(f"numpy.{name} is not supported on symbolic arrays: {hint}")
    return fn(*args, **kwargs)


def _array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = ufunc_name(ufunc)
    if method == "__call__":
        if function(name) is None and name.startswith("scipy."):
            raise UnsupportedError(message(f"{name} is not supported on symbolic arrays",
                                           skip=3, subject="", scipy_fn=name))
        if function(name) is None and getattr(np, name, None) is not ufunc:
            raise UnsupportedError(message(f"the ufunc {name} (not NumPy's)", skip=3,
                                           subject=" called on a symbolic expression"))
        return _numpy_call(name, inputs, kwargs)
    if method == "reduce" and name in REDUCE:
        kwargs = {"axis": 0, **kwargs}
        if name == "logaddexp":
            kwargs.pop("dtype", None)
        return _numpy_call(REDUCE[name], inputs, kwargs)
    if method == "accumulate" and name in ACCUMULATE:
        return _numpy_call(ACCUMULATE[name], inputs, {"axis": 0, **kwargs})
    if method == "outer" and len(inputs) == 2:
        a, b = inputs
        b_nd = _shape_of(b)
        a = F.reshape(a, _shape_of(a) + (1,) * len(b_nd)) if b_nd else a
        return _numpy_call(name, (a, b), kwargs)
    raise UnsupportedError(f"numpy.{name}.{method} is not supported on symbolic arrays")


def _logical(name: str, *operands: Any) -> Expr:
    """``& | ^ ~`` on boolean values (NumPy's bitwise operators on integers are not ops)."""
    for o in operands:
        dtype = o.dtype if isinstance(o, Expr) else np.asarray(o).dtype.name
        if dtype != "bool":
            raise UnsupportedError(
                f"the operators & | ^ ~ work on boolean expressions (comparisons) in symgrad, "
                f"not on {dtype}; bitwise integer operations are not supported"
            )
    return call(name, *operands)


class _Traces(threading.local):
    """The graphs a loop body is being traced in (innermost last), per thread: an
    operation mixing one of them with other graphs is built in it (the innermost), so a
    body's values never leak into the user's graph (see :mod:`symgrad.ir.body`)."""

    def __init__(self) -> None:
        self.graphs: list[Graph] = []


TRACES = _Traces()


def _home(operands: Sequence[Any]) -> Graph:
    if len(operands) == 2:  # the common case: a binary op on two Exprs of one graph
        a, b = operands
        if type(a) is Expr and type(b) is Expr and a.graph is b.graph:
            return a.graph
    graphs = [o.graph for o in operands if isinstance(o, Expr)]
    if not graphs:
        return Graph()
    if len(graphs) > 1 and TRACES.graphs:
        for g in reversed(TRACES.graphs):
            if any(h is g for h in graphs):
                return g
    return max(graphs, key=len) if len(graphs) > 1 else graphs[0]


def operand_id(graph: Graph, o: Any, strong: list[str] | None = None) -> int:
    if hasattr(type(o), "__sg_value__"):
        o = stood_for((o,))[0]
    if isinstance(o, Expr):
        return o.node if o.graph is graph else graph.import_node(o.graph, o.node)
    if isinstance(o, (int, float, complex)) and type(o) not in (int, float, complex, bool):
        o = exact(o)  # a subclass: the plain number, its own methods never run
    t = type(o)
    if t is float or t is int or t is bool or t is complex:
        return graph.number(o, strong)
    if isinstance(o, (list, tuple)) and _holds_expr(o):  # [x, x + 2]: NumPy's array of them
        e = stacked(o)
        return e.node if e.graph is graph else graph.import_node(e.graph, e.node)
    if isinstance(o, (int, float, bool, np.ndarray, np.number, np.bool_, list, tuple)):
        return graph.const(o)
    raise SymgradError(f"cannot use {describe(o)} in a symgrad expression (use Exprs, "
                       "numbers or arrays)")


def _strong_dtypes(operands: Sequence[Any]) -> list[str]:
    """The dtypes of the operands that are not Python numbers (those fix the result type)."""
    out = []
    for o in operands:
        if isinstance(o, Expr):
            out.append(o.data.dtype)
        elif isinstance(o, (np.ndarray, np.generic)):
            out.append(o.dtype.name)
    return out


def var(name: str, shape: Shape | int = (), dtype: str = "float64", **numpy: Any) -> Expr:
    """A named input variable; a scalar float64 unless ``shape``/``dtype`` say otherwise.

    >>> import symgrad as sg
    >>> W = sg.var("W", shape=(4, 3))
    >>> W.shape, W.dtype
    ((4, 3), dtype('float64'))
    >>> W.dtype == "float64", str(W.dtype)
    (True, 'float64')

    ``sg.var`` makes variables; NumPy's variance is ``symgrad.numpy.var`` (pass
    ``np=symgrad.numpy`` to NumPy code that calls ``np.var``).
    """
    if not isinstance(name, str) or numpy:
        raise NameConflictError(
            f"sg.var makes a variable from a name, got {type(name).__name__}"
            f"{' and ' + ', '.join(numpy) if numpy else ''}: for NumPy's "
            "variance use symgrad.numpy.var (code written for np= should get symgrad.numpy)"
        )
    g = Graph()
    return Expr(g, g.var(name, shape, dtype))


def _holds_expr(seq: Any) -> bool:
    """Whether a (nested) list or tuple holds an Expr."""
    todo = [seq]
    while todo:
        for item in todo.pop():
            if isinstance(item, Expr):
                return True
            if isinstance(item, (list, tuple)):
                todo.append(item)
    return False


def stacked(seq: Any) -> Expr:
    """A (nested) list or tuple of Exprs and numbers as one array, as ``np.array`` makes it
    (``[x, x + 2]`` stacks along a new first axis; numbers follow NEP 50 against the Exprs).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> sg.ir.expr.stacked([x, x + 2.0]).shape
    (2, 2)
    """
    items = [stacked(i) if isinstance(i, (list, tuple)) and _holds_expr(i) else i for i in seq]
    exprs = [i for i in items if isinstance(i, Expr)]
    strong = _strong_dtypes(exprs)
    like = exprs[0]
    parts = [i if isinstance(i, Expr) else Expr(like.graph, operand_id(like.graph, i, strong))
             for i in items]
    shapes = {p.shape for p in parts}
    if len(shapes) > 1:
        raise ShapeError(f"a list of arrays of different shapes {sorted(shapes)} is not one "
                         "array (NumPy refuses it too)")
    return F.stack(parts, axis=0)


def const(value: Any, like: Expr | None = None) -> Expr:
    """A constant expression (a number or an array), in ``like``'s graph if given.

    >>> import symgrad as sg
    >>> sg.const([1.0, 2.0]).shape
    (2,)
    """
    if hasattr(type(value), "__sg_value__"):
        value = stood_for((value,))[0]
        if isinstance(value, Expr):
            return value
    if isinstance(value, (list, tuple)) and _holds_expr(value):
        return stacked(value)
    if SPARSE and SPARSE["is"](value):  # a sparse matrix: symgrad's SparseArray
        return SPARSE["call"]("const", (value,), {})
    g = like.graph if like is not None else Graph()
    return Expr(g, g.const(value))


def build(op: Op, operands: Sequence[Any], attrs: dict) -> Expr:
    """Apply ``op`` to operands (Exprs, numbers, arrays), merging graphs as needed."""
    operands = stood_for(operands)
    graph = _home(operands)
    args = [o.node if type(o) is Expr and o.graph is graph else None for o in operands]
    if None in args:  # numbers, arrays or Exprs of other graphs among the operands
        if SPARSE and any(SPARSE["is"](o) for o in operands):
            return SPARSE["call"](op.name, operands, attrs)
        strong = _strong_dtypes(operands) if op.elementwise else None
        args = [operand_id(graph, o, strong) if a is None else a for a, o in zip(args, operands)]
    return Expr(graph, graph.add(op, tuple(args), attrs))


def _apply(op: Op, operands: Sequence[Any]) -> Expr:
    """``build(op, operands, {})``; one Expr, two of one graph, or an Expr and a Python
    number go straight to the graph (what a traced loop builds at every step)."""
    a, b = operands[0], operands[1] if len(operands) == 2 else None
    ta, tb = type(a), type(b)
    if ta is Expr and len(operands) == 1:
        return Expr(a.graph, a.graph.add(op, (a.node,), {}))
    if ta is Expr and tb is Expr and a.graph is b.graph:
        return Expr(a.graph, a.graph.add(op, (a.node, b.node), {}))
    if op.elementwise and ta is Expr and (tb is float or tb is int):  # x * 2.0
        return Expr(a.graph, a.graph.add(op, (a.node, a.graph.number(b, [a.data.dtype])), {}))
    if op.elementwise and tb is Expr and (ta is float or ta is int):  # 2.0 * x
        return Expr(b.graph, b.graph.add(op, (b.graph.number(a, [b.data.dtype]), b.node), {}))
    return build(op, operands, {})


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Build op ``name`` applied to ``args`` (Exprs, numbers or arrays), bound by its
    signature; returns an Expr, or for a call with several results the tuple of its
    results (:func:`projections`)."""
    op = REGISTRY[name]
    if not kwargs and op.signature._operands_only == len(args) and args:
        out = _apply(op, args)  # what bind gives: the operands, no attributes
    else:
        operands, attrs = op.signature.bind(name, args, kwargs)
        out = build(op, operands, attrs)
    if type(out) is Expr and out.graph.nodes[out.node].is_call:
        return projections(out)
    return out  # one value (or a sparse matrix's Expr)


def projections(call_: Expr) -> tuple[Expr, ...]:
    """The results of ``call_``, a call with several results: one projection node each
    (``result`` with attribute ``index``; hash-consing builds each once).

    >>> import symgrad as sg
    >>> S = sg.var("S", shape=(2, 2))
    >>> w, v = sg.eigh(S)
    >>> [e.node for e in projections(Expr(S.graph, w.data.args[0]))] == [w.node, v.node]
    True
    """
    graph, node = call_.graph, call_.node
    op = REGISTRY[RESULT]
    return tuple(Expr(graph, graph.add(op, (node,), {"index": k}))
                 for k in range(len(call_.data.dtype)))


def function(name: str) -> Callable[..., Any] | None:
    """The user-facing function NumPy calls ``name`` (``"sum"``, ``"linalg.solve"``): a
    function of :data:`~symgrad.ir.op.FUNCTIONS`, else the public op's own, else None.

    Every function has a ``signature`` (a :class:`~symgrad.ir.op.Signature`) saying which
    parameters are operands and which static attributes: what the text parser reads.
    """
    fn = FUNCTIONS.get(name)
    if fn is not None:
        return fn
    op = public_op(name)
    if op is None:
        return None
    if op.front is not None:
        return op.front
    return _op_function(op, name)


def _op_function(op: Op, name: str) -> Callable[..., Expr]:
    def fn(*args: Any, **kwargs: Any) -> Expr:
        return call(op.name, *args, **kwargs)

    s = op.signature
    params, keywords = s.describe()[1:-1], s.keywords_text()
    fn.__name__ = fn.__qualname__ = name.rsplit(".", 1)[-1]
    fn.__doc__ = (f"{name}({params}{', ' if params and keywords else ''}{keywords}): "
                  f"{op.doc or op.name}")
    fn.signature = s  # type: ignore[attr-defined]
    fn.plain_op = op  # type: ignore[attr-defined]  # fn(*operands) is call(op.name, ...)
    return fn


class _OpFunctions:
    """``F.exp(x)`` builds an ``exp`` node: what backprop rules use to write graph."""

    def __getattr__(self, name: str) -> Callable[..., Expr]:
        if name not in REGISTRY:
            raise AttributeError(name)
        fn = lambda *a, **k: call(name, *a, **k)  # noqa: E731
        setattr(self, name, fn)  # found directly next time (it still looks the op up)
        return fn


F = _OpFunctions()


Graph.handle = Expr
