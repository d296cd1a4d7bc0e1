"""A loss that is a sum over data rows, its gradient and Hessian-vector products on Dask.

The common problem that outgrows one machine is ``L(θ) = a(θ) + Σ_i ℓ(θ; x_i)``: a sum
over the rows of data larger than memory (plus, possibly, terms such as a penalty that do
not depend on the data). :func:`value_and_grad` takes such a loss written as an ordinary
symgrad expression on *data variables with the full data shape* ``(N, ...)``, and the
``dask.array`` arrays that hold the data (chunked along axis 0, the **data axis**). It
returns a :class:`DaskObjective`: calling it with parameter values gives ``(value,
gradients)``, computed chunk by chunk on whatever Dask scheduler is active (threads,
processes, synchronous, or a ``dask.distributed`` cluster) and tree-reduced.

How it works (the design):

* **One chunk function, emitted once.** The loss graph is rebuilt with the data
  variables' leading dimension set to a chunk length ``c``, and the value and gradient of
  that graph are emitted as NumPy source (:func:`symgrad.to_source`). This is done for two
  distinct lengths; when the two texts are identical (docstrings aside) the one function is
  length-polymorphic *for this graph* (``.polymorphic`` is True) and serves every chunk.
  Otherwise (a constant depends on ``c``) one function is emitted per distinct chunk length
  of the data, and ``.polymorphic`` says so.
* **What may touch the data axis.** Ops act row by row, and the rows are combined by sums
  (``sg.sum`` over the data axis, ``X.T @ r``, ``einsum``...). ``sg.mean`` over the data
  axis means the mean over all ``N`` rows, as on one machine: it is rebuilt as a sum times
  ``1/N``. Any other reduction over the data axis (``max``, ``logsumexp``, ``[-1]``...) and
  any op whose attributes fix the length ``N`` (a reshape to ``(N, d)``, a constant of
  ``N`` rows) raise a :class:`~symgrad.errors.ShapeError` naming the node.
* **The sum is checked.** At the first call, the chunk function is evaluated on two small
  row sets ``A``, ``B`` of the data, on ``A ∪ B`` and on no rows, and
  ``f(A ∪ B) = f(A) + f(B) - f(∅)`` must hold (to rounding): a loss that is not affine in
  its rows (``log`` of a sum over rows, a variance over rows) is refused there.
* **Terms without data** (``λ·||θ||²``) are in every chunk's value; the total is
  ``Σ_k f(chunk_k) - (K - 1) f(∅)`` with ``f(∅)`` the chunk function on zero rows.
* **Scale-out.** One ``dask.delayed`` task per row block (the blocks of all data arrays
  together) runs the chunk function and returns one flat vector (value and gradients); the
  vectors are summed by a tree of ``split_every``-way sums (log depth), and one
  ``dask.compute`` runs it all. Tasks carry the chunk function as source text; a worker
  compiles each text once per process (cached), so the objective pickles to a few kilobytes.

>>> import numpy as np, dask, dask.array as da, symgrad as sg
>>> N, d = 1000, 3
>>> X, y, w = sg.var("X", (N, d)), sg.var("y", (N,)), sg.var("w", (d,))
>>> z = X @ w
>>> loss = sg.sum(sg.logaddexp(0.0, z) - y * z)          # logistic regression, summed
>>> rng = np.random.default_rng(0)
>>> Xd = da.from_array(rng.normal(size=(N, d)), chunks=(300, d))   # 4 chunks, last 100
>>> yd = da.from_array((rng.random(N) < 0.5).astype(float), chunks=300)
>>> fg = sg.dask.value_and_grad(loss, [w], {X: Xd, y: yd})
>>> with dask.config.set(scheduler="synchronous"):
...     value, (dw,) = fg(np.zeros(d))
>>> round(value, 3), dw.shape, fg.polymorphic              # value: N log 2
(693.147, (3,), True)
"""

from __future__ import annotations

import ast
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as e:  # pragma: no cover - the extra is installed by make test
    raise ImportError("symgrad.dask needs Dask: pip install 'symgrad[dask]' "
                      "(dask[array,distributed])") from e

from ..base.errors import InputError, ShapeError, SymgradError, UnsupportedError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import fmt
from ..transforms import grad, jvp
from . import evaluate, to_source
from .loaded import load_source

__all__ = ["value_and_grad", "DaskObjective", "ScipyObjective"]

_PROBE_LENGTHS = (2, 3, 5)  # chunk lengths for the rebuilds that find the data axis
_SPLIT_EVERY = 8  # fan-in of the tree reduction


# -- the chunk graph ------------------------------------------------------------------------


def _variables(e: Expr) -> dict[str, Any]:
    nodes = e.graph.nodes
    return {nodes[i].name: nodes[i] for i in e.graph.ancestors([e.node]) if nodes[i].is_var}


def _describe(n: Any) -> str:
    return f"{n.op} node {n.id} (shape {fmt(n.shape)})"


def _probe(op: Any, attrs: dict, shape: tuple, axes: tuple[int, ...], dtype: str) -> str:
    """'sum', 'mean' or 'other': what unary ``op`` does along the data ``axes`` of an
    argument of ``shape`` (one row of ones against rows 1 and 3)."""
    out = []
    for rows in ([1.0], [1.0, 3.0]):
        s = tuple(len(rows) if k in axes else 1 for k in range(len(shape)))
        value = np.ones(s) * np.reshape(rows, tuple(-1 if k == axes[0] else 1
                                                     for k in range(len(shape))))
        g = Graph()
        node = g.add(op, (g.var("p", s, dtype),), attrs)
        with np.errstate(all="ignore"):
            out.append(np.asarray(evaluate(Expr(g, node), {"p": value.astype(dtype)}),
                                  dtype=float))
    one, two = out
    if one.shape == two.shape and np.all(np.isfinite(one)) and np.any(one != 0):
        if np.allclose(two, 4.0 * one, rtol=1e-12, atol=0.0):
            return "sum"
        if np.allclose(two, 2.0 * one, rtol=1e-12, atol=0.0):
            return "mean"
    return "other"


def _data_axes(old: tuple, new: tuple) -> tuple[int, ...]:
    return tuple(k for k, (a, b) in enumerate(zip(old, new)) if a != b)


def chunk_graph(loss: Expr, data: Sequence[str], rows: int) -> tuple[Expr, dict[str, int]]:
    """``loss`` rebuilt on ``rows`` rows: each data variable's leading dimension is
    ``rows``; a mean over the data axis becomes a sum times ``1/N`` (see the module
    docstring). Returns the new loss and its variables' ids by name.

    >>> import symgrad as sg
    >>> X, w = sg.var("X", (1000, 3)), sg.var("w", (3,))
    >>> small, ids = chunk_graph(sg.mean(sg.tanh(X @ w)), ["X"], 7)
    >>> small.graph.nodes[ids["X"]].shape, small.shape
    ((7, 3), ())
    >>> print(small)
    sum(tanh(X @ w)) * 0.001
    """
    src, target = loss.graph, Graph()
    nodes, mapping = src.nodes, {}
    for i in src.ancestors([loss.node]):
        n = nodes[i]
        if n.is_var:
            shape = (rows, *n.shape[1:]) if n.name in data else n.shape
            mapping[i] = target.var(n.name, shape, n.dtype)
            continue
        args = tuple(mapping[a] for a in n.args)
        mapping[i] = _add(target, Expr(src, i), [nodes[a] for a in n.args], args, rows)
    new = Expr(target, mapping[loss.node])
    return new, {k: target.variables[k] for k in target.variables}


def _add(target: Graph, e: Expr, old_args: list, args: tuple[int, ...], rows: int) -> int:
    n = e.graph.nodes[e.node]
    op = REGISTRY[n.op]
    new_shapes = [target.nodes[a].shape for a in args]
    row_args = [k for k, (o, s) in enumerate(zip(old_args, new_shapes)) if o.shape != s]
    try:
        node = target.add(op, args, n.attrs)
    except SymgradError as err:
        raise ShapeError(f"the loss cannot be split into chunks of rows: {_describe(n)} = "
                         f"{e} does not work on {rows} rows ({err}). Write the loss row by "
                         "row on the data variables and combine the rows with sums (or "
                         "means) over the data axis") from None
    shape = target.nodes[node].shape
    if any(shape[k] != rows for k in _data_axes(n.shape, shape)):
        raise ShapeError(f"{_describe(n)} = {e} selects or mixes rows along the data axis "
                         f"({rows} rows in, {fmt(shape)} out); the loss must treat its rows "
                         "one by one")
    if not row_args or shape != n.shape:
        return node  # no data in, or still row by row
    # the node reduces over the data axis: a sum is what we split; a mean becomes one
    if len(args) > 1:
        return node  # a contraction (X.T @ r, einsum): a sum, checked at the first call
    old = old_args[0]
    axes = _data_axes(old.shape, new_shapes[0])
    kind = _probe(op, n.attrs, new_shapes[0], axes, old.dtype)
    if kind == "sum":
        return node
    if kind == "mean":
        total = target.add(REGISTRY["sum"], args, n.attrs)
        count = int(np.prod(old.shape)) // max(int(np.prod(n.shape)), 1)
        return target.add(REGISTRY["multiply"], (total, target.const(1.0 / count)), {})
    raise ShapeError(f"the loss reduces over the data axis with {_describe(n)} = {e}; only "
                     "sums (and means) over the rows can be split into chunks")


def _same_code(a: str, b: str) -> bool:
    """The two emitted modules are the same code (their docstrings, which name the
    shapes, aside)."""
    def strip(text: str) -> str:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, (ast.FunctionDef, ast.Module)) and body
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)):
                node.body = body[1:] or [ast.Pass()]
        return ast.dump(tree)
    return strip(a) == strip(b)


# -- the chunk function, shipped as text ----------------------------------------------------

_LOADED: OrderedDict[str, Callable] = OrderedDict()  # the most recently used last
_MAX_LOADED = 64  # compiled chunk functions a worker keeps (a long session makes many)
_LOCK = threading.Lock()


def _function(source: str) -> Callable:
    """The function ``chunk`` of generated ``source``, compiled once per process (the
    :data:`_MAX_LOADED` most recently used are kept)."""
    with _LOCK:
        fn = _LOADED.get(source)
        if fn is not None:
            _LOADED.move_to_end(source)
            return fn
        fn = _LOADED[source] = load_source(source, "chunk")[0]["chunk"]
        while len(_LOADED) > _MAX_LOADED:
            _LOADED.popitem(last=False)
    return fn


@dataclass(frozen=True)
class ChunkKernel:
    """The emitted chunk function(s) as source text: ``sources`` maps a chunk length
    (``None``: any length) to a module defining ``chunk(*params, *data)``. Calling the
    kernel returns the outputs raveled into one float64 vector."""

    sources: tuple[tuple[int | None, str], ...]
    nparams: int

    def __dask_tokenize__(self) -> tuple:
        return ("symgrad.dask.ChunkKernel", self.sources, self.nparams)

    def source(self, rows: int) -> str:
        table = dict(self.sources)
        return table[None] if None in table else table[rows]

    def outputs(self, params: Sequence[np.ndarray], blocks: Sequence[np.ndarray]) -> list:
        return list(_function(self.source(blocks[0].shape[0]))(*params, *blocks))

    def __call__(self, *blocks: np.ndarray, params: Sequence[np.ndarray]) -> np.ndarray:
        out = self.outputs(params, blocks)
        return np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in out])


def _sum_parts(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0)


def _tree_sum(parts: list, fan_in: int) -> Any:
    """The sum of delayed ``parts`` as a tree of ``fan_in``-way sums (log depth)."""
    add = dask.delayed(_sum_parts, pure=True)
    while len(parts) > 1:
        parts = [add(parts[k:k + fan_in]) for k in range(0, len(parts), fan_in)]
    return parts[0]


# -- the objective --------------------------------------------------------------------------


class DaskObjective:
    """Value and gradient of a sum over data rows, computed chunk by chunk on Dask.

    Made by :func:`value_and_grad`. ``objective(*param_values)`` returns ``(value,
    gradients)`` (a float and a tuple of arrays, one per parameter);
    :meth:`hvp` gives Hessian-vector products; :meth:`scipy` the flat-vector functions
    for ``scipy.optimize.minimize``. Attributes: ``params`` and ``data`` (variable names),
    ``rows`` (N), ``chunks`` (the row chunk lengths), ``polymorphic`` (one chunk
    function serves every length), ``source`` (the chunk function's text).
    """

    def __init__(self, loss: Expr, params: list[str], data: dict[str, Any],
                 split_every: int) -> None:
        self.loss, self.params, self.data = loss, params, list(data)
        self._arrays = list(data.values())
        self.chunks = tuple(int(c) for c in self._arrays[0].chunks[0])
        self.rows = sum(self.chunks)
        self.split_every = split_every
        nodes = _variables(loss)
        self._param_nodes = [nodes[p] for p in params]
        self._data_nodes = [nodes[k] for k in self.data]
        self._grad = self._kernel(lambda f, ps: [f, *grad(f, ps)])
        self._hvp: ChunkKernel | None = None
        self._checked = False

    # the chunk functions
    def _emit(self, build: Callable, rows: int, extra: Sequence[str] = ()) -> str:
        f, ids = chunk_graph(self.loss, self.data, rows)
        g = f.graph
        ps = [Expr(g, ids[p]) for p in self.params]
        outputs = build(f, ps)
        inputs = [*self.params, *extra, *self.data]
        return to_source(outputs, inputs=inputs, name="chunk")

    def _kernel(self, build: Callable, extra: Sequence[str] = ()) -> ChunkKernel:
        first, second = [c for c in _PROBE_LENGTHS if c != self.rows][:2]
        a, b = self._emit(build, first, extra), self._emit(build, second, extra)
        if _same_code(a, b):
            sources: tuple = ((None, a),)
        else:
            lengths = sorted({0, *self.chunks})
            sources = tuple((c, self._emit(build, c, extra)) for c in lengths)
        return ChunkKernel(sources, len(self.params) + len(extra))

    @property
    def polymorphic(self) -> bool:
        """True when one emitted chunk function serves chunks of every length."""
        return len(self._grad.sources) == 1

    @property
    def source(self) -> str:
        """The text of the value-and-gradient chunk function (for the first chunk's length
        when it is not polymorphic)."""
        return self._grad.source(self.chunks[0])

    def chunk_function(self, rows: int | None = None) -> Callable:
        """The emitted value-and-gradient function for a chunk of ``rows`` rows (default:
        the first chunk's length), loaded in this process: ``chunk(*params, *data) ->
        (value, *gradients)`` on NumPy arrays, without input checks."""
        return _function(self._grad.source(self.chunks[0] if rows is None else rows))

    # the values
    def _param_values(self, values: Sequence[Any], nodes: list, what: str) -> list:
        if len(values) != len(nodes):
            raise InputError(f"{what} takes {len(nodes)} values "
                             f"({', '.join(n.name for n in nodes)}), got {len(values)}")
        out = []
        for n, v in zip(nodes, values):
            a = np.asarray(v, dtype=n.dtype)
            if a.shape != n.shape:
                raise InputError(f"{what}: '{n.name}' has shape {fmt(n.shape)}, got a value "
                                 f"of shape {fmt(a.shape)}")
            out.append(a)
        return out

    def _empty(self) -> list[np.ndarray]:
        return [np.zeros((0, *n.shape[1:]), dtype=n.dtype) for n in self._data_nodes]

    def _run(self, kernel: ChunkKernel, params: list[np.ndarray]) -> np.ndarray:
        # one task per row block, all data arrays of the block together: fewer tasks and
        # no partial sums to gather, where blockwise + sum makes a task per chunk per array
        blocks = zip(*[a.to_delayed().ravel() for a in self._arrays])
        shared = dask.delayed(params, traverse=True)  # one key, not a copy per task
        run, call = dask.delayed(kernel), uuid.uuid4().hex
        parts = [run(*block, params=shared, dask_key_name=f"symgrad-chunk-{call}-{k}")
                 for k, block in enumerate(blocks)]
        (flat,) = dask.compute(_tree_sum(parts, self.split_every))
        with np.errstate(all="ignore"):
            empty = kernel(*self._empty(), params=params)
        if np.any(empty != 0):  # terms without data: counted once, not once per chunk
            flat = flat - (len(self.chunks) - 1) * empty
        return flat

    def _split(self, flat: np.ndarray, shapes: list[tuple]) -> list[np.ndarray]:
        out, k = [], 0
        for s in shapes:
            size = int(np.prod(s))
            out.append(flat[k:k + size].reshape(s))
            k += size
        return out

    def __call__(self, *param_values: Any) -> tuple[float, tuple[np.ndarray, ...]]:
        params = self._param_values(param_values, self._param_nodes, "the objective")
        if not self._checked:
            self._check_sum(params)
        flat = self._run(self._grad, params)
        value, *grads = self._split(flat, [(), *(n.shape for n in self._param_nodes)])
        return float(value), tuple(grads)

    def hvp(self, param_values: Sequence[Any], vectors: Sequence[Any]) -> tuple[np.ndarray, ...]:
        """The Hessian of the loss at ``param_values`` times ``vectors`` (one per parameter,
        each of its shape): per chunk by forward mode over the gradient (as
        :func:`symgrad.hvp`), summed over the chunks."""
        params = self._param_values(param_values, self._param_nodes, "hvp")
        vs = self._param_values(vectors, self._param_nodes, "hvp (vectors)")
        if not self._checked:
            self._check_sum(params)
        if self._hvp is None:
            names = _fresh_names(self.loss, [f"v_{p}" for p in self.params])
            self._hvp = self._kernel(lambda f, ps: list(jvp(list(grad(f, ps)), ps, names)),
                                     names)
        flat = self._run(self._hvp, [*params, *vs])
        return tuple(self._split(flat, [n.shape for n in self._param_nodes]))

    def _check_sum(self, params: list[np.ndarray]) -> None:
        """f(A ∪ B) = f(A) + f(B) - f(∅) on the first rows of the data: the loss is a sum
        over its rows (plus terms without data)."""
        k = min(2, self.rows // 2)
        if k == 0:
            self._checked = True
            return
        head = [np.asarray(v) for v in dask.compute(*[a[:2 * k] for a in self._arrays])]
        at = dict(zip(self.params, params))
        graphs = {c: chunk_graph(self.loss, self.data, c)[0] for c in (2 * k, k, 0)}
        fs = []
        with np.errstate(all="ignore"):
            for c, start in ((2 * k, 0), (k, 0), (k, k), (0, 0)):
                rows = {name: h[start:start + c] for name, h in zip(self.data, head)}
                fs.append(float(evaluate(graphs[c], at | rows)))
        both, a, b, none = fs
        if not np.isfinite([both, a, b]).all():
            return  # no verdict at these parameters: check again at the next call
        gap = abs(both - (a + b - none))
        if not np.isfinite(gap) or gap > 1e-8 * (abs(a) + abs(b) + abs(none)) + 1e-12:
            raise UnsupportedError(
                "the loss is not a sum over the data rows: on the first rows, "
                "f(rows 1-4) differs from f(rows 1-2) + f(rows 3-4) (minus the terms "
                "without data). Write it as sg.sum over the data axis of a row-by-row "
                "loss (a mean over all rows is fine; a log, square or variance of "
                "sums over rows is not)")
        self._checked = True

    def scipy(self) -> ScipyObjective:
        """Flat-vector functions for ``scipy.optimize.minimize(fun, x0, jac=True,
        hessp=hessp)``: the parameters raveled and concatenated in order."""
        return ScipyObjective(self)

    def __repr__(self) -> str:
        return (f"<symgrad DaskObjective of {', '.join(self.params)} over "
                f"{', '.join(self.data)}: {self.rows} rows in {len(self.chunks)} chunks>")


def _fresh_names(loss: Expr, wanted: list[str]) -> list[str]:
    taken = set(loss.graph.variables)
    out = []
    for name in wanted:
        k, new = 0, name
        while new in taken:
            k += 1
            new = f"{name}_{k}"
        taken.add(new)
        out.append(new)
    return out


class ScipyObjective:
    """``fun(x) -> (value, gradient)`` and ``hessp(x, p)`` on flat float64 vectors, for
    ``scipy.optimize.minimize(fun, x0, jac=True, hessp=hessp)``; ``pack(*values)`` and
    ``unpack(x)`` convert between the parameters and the vector; ``calls`` counts the
    Dask computations."""

    def __init__(self, objective: DaskObjective) -> None:
        self.objective = objective
        self._shapes = [n.shape for n in objective._param_nodes]
        self.calls = 0

    def pack(self, *values: Any) -> np.ndarray:
        parts = self.objective._param_values(values, self.objective._param_nodes, "pack")
        return np.concatenate([np.ravel(v).astype(np.float64) for v in parts])

    def unpack(self, x: Any) -> list[np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        size = sum(int(np.prod(s)) for s in self._shapes)
        if x.shape != (size,):
            raise InputError(f"expected a vector of {size} parameters, got shape {fmt(x.shape)}")
        return self.objective._split(x, self._shapes)

    def fun(self, x: Any) -> tuple[float, np.ndarray]:
        self.calls += 1
        value, grads = self.objective(*self.unpack(x))
        return value, np.concatenate([np.ravel(g) for g in grads])

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        self.calls += 1
        out = self.objective.hvp(self.unpack(x), self.unpack(p))
        return np.concatenate([np.ravel(h) for h in out])


# -- the entry point ------------------------------------------------------------------------


def _name(key: Any, variables: Mapping[str, Any], what: str) -> str:
    if isinstance(key, Expr) and key.graph.nodes[key.node].is_var:
        key = key.graph.nodes[key.node].name
    name = key
    if not isinstance(name, str):
        raise InputError(f"{what}: expected a variable or its name, got {type(key).__name__}")
    if name not in variables:
        raise InputError(f"{what}: the loss has no variable {name!r} "
                         f"(variables: {', '.join(sorted(variables))})")
    return name


def _data_array(name: str, node: Any, array: Any) -> Any:
    if not isinstance(array, da.Array):
        if not hasattr(array, "shape"):
            raise InputError(f"data '{name}': expected a dask.array (or NumPy) array, got "
                             f"{type(array).__name__}")
        array = da.from_array(np.asarray(array), chunks=(-1,) + (-1,) * (np.ndim(array) - 1))
    if not node.shape:
        raise ShapeError(f"data variable '{name}' is a scalar; data variables have the rows "
                         "as their first axis")
    if any(np.isnan(c) for c in array.shape):
        raise InputError(f"data '{name}': the array's chunk lengths are unknown (nan): call "
                         ".compute_chunk_sizes() on it first")
    if tuple(array.shape) != node.shape:
        raise ShapeError(f"data '{name}': the variable has shape {fmt(node.shape)}, the array "
                         f"{fmt(tuple(array.shape))}")
    if np.dtype(array.dtype) != np.dtype(node.dtype):
        raise InputError(f"data '{name}': the variable has dtype {node.dtype}, the array "
                         f"{array.dtype} (convert with .astype('{node.dtype}'))")
    return array


def value_and_grad(loss: Expr, params: Expr | str | Sequence[Expr | str],
                   data: Mapping[Expr | str, Any], *,
                   split_every: int = _SPLIT_EVERY) -> DaskObjective:
    """The value and gradient of a loss summed over data rows, computed on Dask.

    Parameters
    ----------
    loss : Expr
        A scalar written on data variables of the full data shape ``(N, ...)``: a sum
        over the data axis (axis 0) of a row-by-row loss (a mean over all rows is fine),
        plus any terms without data. See the module docstring for what is allowed.
    params : Expr, str or list of them
        The variables to differentiate by, in the order of the returned gradients.
    data : mapping
        Data variable (or its name) -> ``dask.array.Array`` of the variable's shape and
        dtype. The arrays are rechunked to whole rows (one chunk along every other axis)
        and to the first array's row chunks. A NumPy array is taken as one chunk.
    split_every : int
        The fan-in of the tree reduction of the per-chunk results.

    Returns
    -------
    DaskObjective
        ``objective(*param_values) -> (value, gradients)``; ``.hvp(params, vectors)``;
        ``.scipy()`` for ``scipy.optimize.minimize``.

    Examples
    --------
    >>> import numpy as np, dask, dask.array as da, symgrad as sg
    >>> X, w = sg.var("X", (6, 2)), sg.var("w", (2,))
    >>> loss = sg.mean((X @ w - 1.0) ** 2) + sg.sum(w ** 2)   # a mean and a penalty
    >>> Xd = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(4, 2))
    >>> fg = sg.dask.value_and_grad(loss, w, {X: Xd})
    >>> with dask.config.set(scheduler="synchronous"):
    ...     value, (dw,) = fg(np.array([0.5, -0.5]))
    ...     value == sg.evaluate(loss, {"X": Xd.compute(), "w": [0.5, -0.5]})
    True
    """
    if not isinstance(loss, Expr):
        raise InputError(f"value_and_grad: the loss must be a symgrad Expr, got "
                         f"{type(loss).__name__}")
    if loss.shape != ():
        raise ShapeError(f"value_and_grad: the loss must be a scalar, it has shape "
                         f"{fmt(loss.shape)} (sum it over the data axis)")
    variables = _variables(loss)
    given = params if isinstance(params, (list, tuple)) else [params]
    names = [_name(p, variables, "params") for p in given]
    if not names or len(set(names)) != len(names):
        raise InputError("value_and_grad: params must name distinct variables, at least one")
    if not isinstance(data, Mapping) or not data:
        raise InputError("value_and_grad: data must map data variables to dask arrays")
    arrays = {}
    for key, array in data.items():
        name = _name(key, variables, "data")
        if name in names:
            raise InputError(f"'{name}' is both a parameter and data")
        arrays[name] = _data_array(name, variables[name], array)
    missing = sorted(set(variables) - set(names) - set(arrays))
    if missing:
        raise InputError(f"the loss depends on {', '.join(map(repr, missing))}, neither a "
                         "parameter nor data (fix its value with sg.const or add it to data)")
    rows = {a.shape[0] for a in arrays.values()}
    if len(rows) != 1:
        raise ShapeError(f"the data arrays have different numbers of rows: {sorted(rows)}")
    first = next(iter(arrays.values()))
    row_chunks = first.chunks[0]
    arrays = {k: a.rechunk((row_chunks, *([-1] * (a.ndim - 1)))) for k, a in arrays.items()}
    if not isinstance(split_every, int) or isinstance(split_every, bool) or split_every < 2:
        raise InputError(f"split_every must be an integer >= 2, got {split_every!r}")
    return DaskObjective(loss, names, arrays, split_every)
