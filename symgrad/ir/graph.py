"""The graph: a networkx DAG of nodes with ordered operands, built by hash-consing.

Invariants (checked by :meth:`Graph.verify`):

* node ids are ints in creation order, so ascending id order is a topological order;
* ``node.args`` (an ordered tuple of ids) is the truth about operands; the networkx edges are
  derived from it for traversal (``x*x`` has one edge but two operands);
* identical ``(op, args, attrs)`` are built once; a variable is identified by its name;
* every node has ``role`` ``"forward"``, ``"adjoint"`` or ``"tangent"``; an adjoint node
  records in ``origin`` the node whose backprop rule built it, a tangent node the node whose
  forward (JVP) rule built it.

:class:`~symgrad.ir.expr.Expr` (in ``expr.py``) is the handle users hold. The builder
(:meth:`Graph.add`) builds: it canonicalises attributes, checks shapes and
shares identical nodes, and rewrites nothing. A pass that rewrites nodes as they are built
(the adjoint cleanup of the reverse transform, the simplifier) is installed explicitly with
:meth:`Graph.rewriting`; its answers are never cached under the key of the node it replaced,
so what was built before never changes what a later expression means.

One graph may be built, transformed and evaluated from several threads: the builder's
critical section (hash-consing, appending a node, the variable table, imports, the
networkx view, the transform records) runs under one re-entrant lock per graph, and what
:meth:`Graph.provenance` and :meth:`Graph.rewriting` install is per thread, so a pass
installed by a transform in one thread never rewrites what another thread builds.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..base.describe import describe
from ..base.errors import ArgumentError, NameConflictError, ShapeError, SymgradError
from .op import REGISTRY, RESULT, Op, Results, refuse_complex
from .shapes import COMPLEXES, NODE_DTYPES, fmt
from .text import listing
from .values import (
    INT64_MAX,
    as_constant,
    check_dtype,
    check_name,
    check_shape,
    freeze,
    plain,
    weak,
)

if TYPE_CHECKING:
    import networkx as nx

    from .expr import Expr

def _plain_attrs(op: Op, attrs: Any) -> dict:
    """A user-defined op's attributes as plain data (:func:`~.values.plain`)."""
    if type(attrs) is not dict:
        raise ArgumentError(f"{op.name}: prepare must return a dict of attributes, got "
                            f"{describe(attrs)}")
    return {k: plain(v, f"{op.name}: attribute {k!r}") for k, v in attrs.items()}


_ROLES = ("forward", "adjoint", "tangent")

# (op, args, attrs, shape, dtype) -> the id of a replacement node, or None to build as asked
Rewriter = Callable[[Op, tuple, dict, tuple, str], "int | None"]


class GraphError(SymgradError):
    """A graph that breaks one of the invariants (found by ``verify``)."""


# what a shape rule or ``prepare`` raises on arguments it cannot use (SymgradErrors pass)
_BARE = (TypeError, ValueError, ArithmeticError, IndexError, KeyError, AttributeError)


def _argument_error(op: Op, e: Exception) -> ArgumentError:
    return ArgumentError(f"{op.name}: cannot use these arguments ({type(e).__name__}: {e})")


# (op, operand shapes, operand dtypes, frozen attributes) -> what _inferred gives: prepare and
# the shape rule are functions of these, so a loop's steps run them once, not once a node
_INFERRED: dict[tuple, tuple] = {}
_INFERRED_MAX = 1 << 16
_EXACT = frozenset({int, float, str, bool, type(None)})


def _cacheable(attrs: dict) -> bool:
    """Whether ``attrs`` holds only exact built-ins (ints, floats, strings, bools, None and
    tuples and slices of them), whose frozen key tells every two values apart that a rule
    could treat differently (NumPy scalars and arrays are left to the rules)."""
    todo = list(attrs.values())
    while todo:
        v = todo.pop()
        t = type(v)
        if t is tuple:
            todo.extend(v)
        elif t is slice:
            todo.extend((v.start, v.stop, v.step))
        elif t not in _EXACT:
            return False
    return True


def _inferred(op: Op, shapes: tuple, dtypes: tuple, attrs: dict) -> tuple:
    """``(prepared attrs, their frozen key or None if op has no prepare, shape, dtype)``."""
    if op.complex is not True:
        for d in dtypes:
            if d in COMPLEXES:
                refuse_complex(op, d)
    if op.name != RESULT and any(type(d) is Results for d in dtypes):
        raise ShapeError(f"{op.name}: an operand is a call with several results; read one "
                         "of them (its projection) instead")
    canonical = None
    if op.prepare is not None:
        try:
            attrs = op.prepare(shapes, dtypes, attrs)
            if not op.builtin:
                attrs = _plain_attrs(op, attrs)
        except SymgradError:
            raise
        except _BARE as e:
            raise _argument_error(op, e) from None
        canonical = freeze(attrs)
    try:
        shape, dtype = op.infer(shapes, dtypes, attrs)
    except SymgradError:
        raise
    except _BARE as e:
        raise _argument_error(op, e) from None
    shape = tuple(shape)
    if len(shape) > 1 and math.prod(shape) > INT64_MAX:
        raise ShapeError(f"{op.name}: the result would have shape {fmt(shape)}, more "
                         "than 2**63 - 1 elements (NumPy cannot hold it)")
    return attrs, canonical, shape, dtype


LIFT_MIN = 1024  # elements from which a traced function's captured array is an input
_LIFT = threading.local()


def tracing_now() -> bool:
    """Whether this thread is tracing a Python function (inside :func:`lifting`): what error
    messages say depends on it."""
    return getattr(_LIFT, "hook", None) is not None


@contextmanager
def lifting(hook: Callable[[Graph, Any], int | None] | None) -> Iterator[None]:
    """Inside, this thread's large array constants are first offered to ``hook(graph,
    array)``, which returns a node to use instead (a variable) or None."""
    saved = getattr(_LIFT, "hook", None)
    _LIFT.hook = hook
    try:
        yield
    finally:
        _LIFT.hook = saved


class _BuildState(threading.local):
    """What the current thread's builds are: role, origin, the installed rewriter, and the
    node budget (``built`` counts this thread's new nodes; ``stop`` is where it ends)."""

    def __init__(self) -> None:
        self.role = "forward"
        self.origin: int | None = None
        self.rewriter: Rewriter | None = None
        self.built = 0
        self.calls = 0  # this thread's look-ups and builds (a rollback needs them all its own)
        self.stop = sys.maxsize
        self.overrun: Callable[[], Exception] | None = None


class _Provenance:
    """``with graph.provenance(i):`` (a class: the reverse loop enters one per node)."""

    __slots__ = ("state", "origin", "role", "saved")

    def __init__(self, state: _BuildState, origin: int, role: str = "adjoint") -> None:
        self.state, self.origin, self.role = state, origin, role

    def __enter__(self) -> None:
        state = self.state
        self.saved = state.role, state.origin
        state.role, state.origin = self.role, self.origin

    def __exit__(self, *exc: Any) -> None:
        self.state.role, self.state.origin = self.saved


class Node:
    """One node's data; immutable once built. ``is_var`` / ``is_const`` tell the two leaf
    kinds (an input variable with a ``name``; a constant holding ``attrs["value"]``);
    ``is_call`` a call with several results (its dtype a :class:`~symgrad.ir.op.Results`,
    read through projections: see :mod:`symgrad.ir.op`)."""

    __slots__ = ("id", "op", "args", "attrs", "shape", "dtype", "name", "role", "origin",
                 "is_var", "is_const", "is_call")

    def __init__(self, id, op, args, attrs, shape, dtype, name, role, origin):
        self.id, self.op, self.args, self.attrs = id, op, args, attrs
        self.shape, self.dtype, self.name, self.role, self.origin = shape, dtype, name, role, origin
        self.is_var, self.is_const = op == "var", op == "const"
        self.is_call = type(dtype) is Results  # several results, read by projections

    def fields(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__[1:9]}

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.op}, args={self.args}, shape={self.shape})"


class Graph:
    """A DAG of symgrad nodes: the node list (``nodes``, in creation order) is the IR;
    :meth:`to_networkx` is a ``networkx.DiGraph`` view of it, kept in step on each call
    (``graph.nx`` is the same view).

    ``adjoint_of`` maps each forward node to its adjoint node after a transform (when
    transforms overlap, the latest one's); ``transforms`` keeps every transform's record,
    each with its own ``adjoint_of``, in the order they ran.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> f = x * x
    >>> f.graph.nodes[f.node].args   # two operands, one edge
    (0, 0)
    >>> f.graph.to_networkx().number_of_edges()
    1
    """

    handle: ClassVar[type] = object  # the Expr class: registered by symgrad.ir.expr

    def __init__(self) -> None:
        self._nx: nx.DiGraph | None = None  # built on first use: networkx is slow to import
        self.nodes: list[Node] = []
        self.adjoint_of: dict[int, int] = {}
        self.transforms: list[Any] = []
        self.variables: dict[str, int] = {}
        self._keys: dict[tuple, int] = {}
        self._numbers: dict[tuple, int] = {}  # see number()
        self._imported: weakref.WeakKeyDictionary[Graph, dict[int, int]] = (
            weakref.WeakKeyDictionary()
        )
        self._last_import: tuple | None = None  # the latest graph imported from: its memo
        self._state = _BuildState()
        self._calls = 0  # look-ups and builds by every thread (see budget)
        self.rollbacks = 0  # rollbacks so far: ids after one may name other nodes
        # what passes found out about the nodes (true as long as they are: nodes never change;
        # a rollback empties it), e.g. which nodes the rolling replaced (symgrad.passes.context)
        self.derived: dict[str, Any] = {}
        self.lock = threading.RLock()  # the builder's critical section (re-entrant: rules)

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<symgrad.Graph with {len(self.nodes)} nodes>"

    def __str__(self) -> str:
        return listing(self)

    def find(self, e: Expr) -> int:
        """The id in this graph of Expr ``e`` (built in this graph or in another one).

        >>> import symgrad as sg
        >>> u1, u2 = sg.var("u1"), sg.var("u2")
        >>> u4 = u2 * (u1 + u2)
        >>> u4.graph.find(u2) == u4.graph.variables["u2"]
        True
        """
        return e.node if e.graph is self else self.import_node(e.graph, e.node)

    def expr(self, node: int) -> Expr:
        """The Expr handle of node id ``node``."""
        return self.handle(self, node)

    def adjoint(self, e: Expr, transform: Any = None) -> Expr | None:
        """The adjoint of forward expression ``e`` in ``transform`` (a record from
        ``graph.transforms``; default: the latest transform that reached ``e``), or None.

        >>> import symgrad as sg
        >>> u1, u2 = sg.var("u1"), sg.var("u2")
        >>> u4 = u2 * (u1 + u2)
        >>> _ = sg.grad(u4, [u1, u2])
        >>> sg.evaluate(u4.graph.adjoint(u1 + u2), {"u1": 2.0, "u2": 3.0})   # Collins' P3
        3.0
        """
        table = self.adjoint_of if transform is None else transform.adjoint_of
        i = table.get(self.find(e))
        return None if i is None else self.handle(self, i)

    @property
    def nx(self) -> nx.DiGraph:
        """The graph as a ``networkx.DiGraph``: :meth:`to_networkx` (the public name of
        the design notes' contract)."""
        return self.to_networkx()

    def to_networkx(self) -> nx.DiGraph:
        """The graph as a ``networkx.DiGraph`` with the node attributes; edges arg -> user.

        One view per graph, kept in step with ``nodes`` on each call (building does not
        pay for networkx).
        """
        with self.lock:
            if self._nx is None:
                import networkx

                self._nx = networkx.DiGraph()
            g = self._nx
            for n in self.nodes[g.number_of_nodes():]:
                g.add_node(n.id, **n.fields())
                g.add_edges_from((a, n.id) for a in n.args)
            return g

    # -- building -------------------------------------------------------------------------

    def add(self, op: Op, args: tuple[int, ...], attrs: dict, frozen: Any = None,
            inferred: tuple | None = None) -> int:
        """The node ``op(*args, **attrs)``: found if it exists, else shape-checked and built.

        While a rewriter is installed (:meth:`rewriting`) it is offered the node first, and
        its answer is returned without being recorded under this node's key.

        A front end's fast path for a builtin op may pass ``frozen`` (``freeze(attrs)``) and
        ``inferred`` (``(shape, dtype)``), which says that ``attrs`` are what the op's
        ``prepare`` makes of them and ``(shape, dtype)`` what its shape rule gives: both are
        then taken as they are (its tests check that they agree with the general path).
        """
        if attrs and not op.builtin:  # a user's op: its attributes are plain data only
            attrs, frozen = _plain_attrs(op, attrs), None
        if frozen is None:
            frozen = freeze(attrs) if attrs else ()
        key = (op.name, args, frozen)
        state = self._state
        rewriter = state.rewriter
        with self.lock:
            self._calls += 1
            state.calls += 1
            try:
                found = self._keys.get(key)
            except TypeError:  # an attribute that is no number, string, tuple or array
                raise ArgumentError(f"{op.name}: cannot use the attributes "
                                    f"{describe(attrs, 200)}") from None
            if found is not None and rewriter is None:
                return found
            if found is None and inferred is not None:
                if rewriter is not None:
                    replaced = rewriter(op, args, attrs, *inferred)
                    if replaced is not None:
                        return replaced
                return self._new(key, op.name, args, attrs, *inferred, None)
            return self._add(op, args, attrs, key, found, rewriter)

    def _add(self, op: Op, args: tuple, attrs: dict, key: tuple, found, rewriter) -> int:
        nodes = self.nodes
        if found is None:
            if len(args) == 2:  # the common cases first: no lists
                a, b = nodes[args[0]], nodes[args[1]]
                shapes, dtypes = (a.shape, b.shape), (a.dtype, b.dtype)
            elif len(args) == 1:
                a = nodes[args[0]]
                shapes, dtypes = (a.shape,), (a.dtype,)
            else:
                argn = [nodes[a] for a in args]
                shapes = tuple([n.shape for n in argn])
                dtypes = tuple([n.dtype for n in argn])
            ikey = (op, shapes, dtypes, key[2])  # hashable: add looked its key up
            known = _INFERRED.get(ikey)
            if known is None:
                known = _inferred(op, shapes, dtypes, attrs)
                if op.builtin and _cacheable(attrs):
                    if len(_INFERRED) >= _INFERRED_MAX:
                        _INFERRED.clear()
                    _INFERRED[ikey] = known
            prepared, canonical, shape, dtype = known
            if canonical is not None:  # prepare ran: the canonical spelling is the key
                attrs = dict(prepared)
                canonical = (op.name, args, canonical)
                found = self._keys.get(canonical)
                if found is not None:
                    self._keys[key] = found  # the same node, spelled differently
                key = canonical
        if found is not None:
            shape, dtype, attrs = nodes[found].shape, nodes[found].dtype, nodes[found].attrs
        if rewriter is not None:
            replaced = rewriter(op, args, attrs, shape, dtype)
            if replaced is not None:
                return replaced
        if found is not None:
            return found
        return self._new(key, op.name, args, attrs, shape, dtype, None)

    def _new(self, key, op, args, attrs, shape, dtype, name) -> int:
        i = len(self.nodes)
        state = self._state
        if state.built >= state.stop:
            raise state.overrun()
        state.built += 1
        node = Node(i, op, args, attrs, shape, dtype, name, state.role, state.origin)
        self.nodes.append(node)
        self._keys[key] = i
        return i

    def var(self, name: str, shape: Any = (), dtype: Any = "float64") -> int:
        """The variable ``name``; the same name with another shape or dtype is an error."""
        name = check_name(name)
        shape = check_shape(shape, f"variable '{name}'")
        dtype = check_dtype(dtype, f"variable '{name}'")
        with self.lock:
            self._calls += 1
            self._state.calls += 1
            found = self.variables.get(name)
            if found is not None:
                node = self.nodes[found]
                if node.shape != shape or node.dtype != dtype:
                    raise NameConflictError(
                        f"variable '{name}' already has shape {fmt(node.shape)} and dtype "
                        f"{node.dtype}; it cannot also have shape {fmt(shape)} and dtype {dtype}"
                    )
                return found
            i = self._new(("var", name), "var", (), {"name": name}, shape, dtype, name)
            self.variables[name] = i
            return i

    def copy_var(self, n: Node) -> int:
        """Variable node ``n`` of another graph, here as it is (its name, shape and dtype
        were checked where it was made): a rebuild copies a graph's variables this way."""
        with self.lock:
            found = self.variables.get(n.name)
            if found is None:
                found = self._new(("var", n.name), "var", (), dict(n.attrs), n.shape, n.dtype,
                                  n.name)
                self.variables[n.name] = found
            return found

    def imported_from(self) -> list[Graph]:
        """The graphs nodes were imported from (:meth:`import_node`), while they live."""
        with self.lock:
            return list(self._imported.keys())

    def const(self, value: Any) -> int:
        """A constant node holding ``value`` (a number or an array).

        While a function is traced (:func:`lifting`), a large array is offered to the
        tracer first, which may make it an input read at every call instead."""
        hook = getattr(_LIFT, "hook", None)
        if hook is not None and type(value) is np.ndarray and value.size >= LIFT_MIN:
            node = hook(self, value)
            if node is not None:
                return node
        return self.add(REGISTRY["const"], (), {"value": as_constant(value)})

    def number(self, o: int | float | complex | bool, strong: list[str] | None = None) -> int:
        """The constant Python number ``o`` makes beside operands of dtypes ``strong``
        (:func:`~.values.weak`), made once per graph: a loop that writes ``2.0 * x`` at
        every step looks its constant up, it does not build it again.

        While a rewriter is installed the constant is built (offered to it) as asked."""
        state = self._state
        if o != o or state.rewriter is not None:  # NaN: its hex does not tell NaNs apart
            return self.const(weak(o, strong))
        t = type(o)
        key = (t, o.hex() if t is float else (o.real.hex(), o.imag.hex()) if t is complex
               else o, tuple(strong) if strong else ())
        with self.lock:
            found = self._numbers.get(key)
            if found is not None:
                self._calls += 1  # a look-up, as const's own (see budget)
                state.calls += 1
                return found
            i = self._numbers[key] = self.const(weak(o, strong))
        return i

    def provenance(self, origin: int, role: str = "adjoint") -> _Provenance:
        """Nodes built inside (by this thread) are ``role`` nodes (adjoint, or tangent for
        forward mode) made for node ``origin`` (a context manager)."""
        return _Provenance(self._state, origin, role)

    @contextmanager
    def budget(self, nodes: int, overrun: Callable[[], Exception]) -> Iterator[None]:
        """At most ``nodes`` new nodes may be built inside (by this thread); building one
        more raises ``overrun()``. Budgets nest: the tightest one applies. If the block
        fails, the nodes it built are removed again, unless another thread built or looked up
        nodes in this graph meanwhile (it may hold one of them: they stay, unused)."""
        state = self._state
        saved = state.stop, state.overrun
        with self.lock:
            before, built = len(self.nodes), state.built
            calls, mine = self._calls, state.calls
        stop = state.built + nodes
        if stop < state.stop:
            state.stop, state.overrun = stop, overrun
        try:
            yield
        except BaseException:
            with self.lock:  # only this thread built since: the graph goes back as it was
                if (len(self.nodes) - before == state.built - built
                        and self._calls - calls == state.calls - mine):
                    self._truncate(before)
                    state.built = built
            raise
        finally:
            state.stop, state.overrun = saved

    def _truncate(self, n: int) -> None:
        """Forget every node from id ``n`` on, and what refers to them (a failed transform
        leaves no partial derivative behind, and a retry builds the same graph)."""
        if len(self.nodes) == n:
            return
        self.rollbacks += 1
        del self.nodes[n:]
        self.derived = {}
        self._keys = {k: v for k, v in self._keys.items() if v < n}
        self._numbers = {k: v for k, v in self._numbers.items() if v < n}
        self.variables = {k: v for k, v in self.variables.items() if v < n}
        for memo in self._imported.values():
            for k in [k for k, v in memo.items() if v >= n]:
                del memo[k]
        if self._nx is not None:
            self._nx.remove_nodes_from([i for i in list(self._nx.nodes) if i >= n])
        kept = [t for t in self.transforms if t.nodes_after <= n]
        if len(kept) != len(self.transforms):
            self.transforms = kept
            self.adjoint_of = {}
            for t in kept:
                self.adjoint_of.update(getattr(t, "adjoint_of", {}))

    @contextmanager
    def rewriting(self, rewriter: Rewriter | None) -> Iterator[None]:
        """Nodes built inside (by this thread) are first offered to ``rewriter`` (None:
        build as asked)."""
        state = self._state
        saved = state.rewriter
        state.rewriter = rewriter
        try:
            yield
        finally:
            state.rewriter = saved

    def import_node(self, other: Graph, node: int) -> int:
        """Copy ``node`` and its ancestors from ``other`` as they are; returns the id here."""
        with self.lock:
            last = self._last_import  # (a weak reference to the graph, its memo)
            if last is not None and last[0]() is other:
                memo = last[1]
            else:
                memo = self._imported.setdefault(other, {})
                self._last_import = (weakref.ref(other), memo)
            found = memo.get(node)
            if found is not None:
                return found
            state = self._state
            saved, state.rewriter = state.rewriter, None  # copied as they are
            try:
                self._import(other, node, memo)
            finally:
                state.rewriter = saved
        return memo[node]

    def _import(self, other: Graph, node: int, memo: dict[int, int]) -> None:
        for i in other.ancestors([node]):
            if i in memo:
                continue
            n = other.nodes[i]
            if n.is_var:
                memo[i] = self.var(n.name, n.shape, n.dtype)
            else:
                memo[i] = self.add(REGISTRY[n.op], tuple(memo[a] for a in n.args), n.attrs)

    # -- walking --------------------------------------------------------------------------

    def ancestors(self, outputs: Iterable[int], origins: bool = False) -> list[int]:
        """Ids of ``outputs`` and everything they depend on, in topological order; with
        ``origins``, also the forward nodes adjoint nodes among them were made for."""
        seen: set[int] = set()
        stack = list(outputs)
        nodes = self.nodes
        while stack:
            i = stack.pop()
            if i not in seen:
                seen.add(i)
                stack.extend(nodes[i].args)
                if origins and nodes[i].origin is not None:
                    stack.append(nodes[i].origin)
        return sorted(seen)

    def grouped(self, order: list[int]) -> list[int]:
        """``order`` (topological) with each call's projections right after the call: still
        a topological order, in which one statement can assign a call's results."""
        nodes = self.nodes
        after: dict[int, list[int]] = {}
        for i in order:
            n = nodes[i]
            if n.op == RESULT:
                after.setdefault(n.args[0], []).append(i)
        if not after:
            return order
        out = []
        for i in order:
            if nodes[i].op != RESULT or nodes[i].args[0] not in after:
                out.append(i)
                out += after.get(i, ())
        return out

    def descendants(self, sources: Iterable[int], within: Iterable[int]) -> set[int]:
        """Nodes of ``within`` (topologically sorted) that depend on any of ``sources``."""
        reached = set(sources)
        nodes = self.nodes
        for i in within:
            if i not in reached and any(a in reached for a in nodes[i].args):
                reached.add(i)
        return reached

    # -- checking -------------------------------------------------------------------------

    def verify(self) -> None:
        """Check every invariant; raise :class:`GraphError` naming the first broken one."""
        for n in self.nodes:
            self._verify_node(n)
        tables = [("adjoint_of", self.adjoint_of)]
        tables += [(f"transforms[{k}].adjoint_of", t.adjoint_of)
                   for k, t in enumerate(self.transforms)]
        for what, table in tables:
            for f, a in table.items():
                if not (0 <= f < len(self.nodes) and 0 <= a < len(self.nodes)):
                    raise GraphError(f"{what}[{f}] = {a} names a missing node")
        edges = {(a, n.id) for n in self.nodes for a in n.args}
        g = self.to_networkx()
        if set(g.edges) != edges or g.number_of_nodes() != len(self.nodes):
            raise GraphError("networkx edges do not match the nodes' operands")

    def _verify_node(self, n: Node) -> None:
        where = f"node {n.id} ({n.op})"
        op = None if n.is_var else REGISTRY.get(n.op)
        if op is None and not n.is_var:
            raise GraphError(f"{where}: unknown op")
        if any(not (0 <= a < n.id) for a in n.args):
            raise GraphError(f"{where}: an operand does not precede its user: {n.args}")
        if op is not None and op.arity is not None and len(n.args) != op.arity:
            raise GraphError(f"{where}: takes {op.arity} operands, has {len(n.args)}")
        if n.role not in _ROLES or (n.role == "forward") == (n.origin is not None):
            raise GraphError(f"{where}: role {n.role!r} with origin {n.origin!r}")
        if n.origin is not None and not 0 <= n.origin < n.id:
            raise GraphError(f"{where}: origin {n.origin} is not an earlier node")
        if not n.is_call and n.dtype not in NODE_DTYPES:
            raise GraphError(f"{where}: dtype {n.dtype!r} is none of {', '.join(NODE_DTYPES)}")
        if n.op != RESULT and any(self.nodes[a].is_call for a in n.args):
            raise GraphError(f"{where}: reads a call with several results other than "
                             "through a projection")
        if n.is_var:
            if n.args or self.variables.get(n.name) != n.id:
                raise GraphError(f"{where}: not the graph's variable {n.name!r}")
            return
        shapes = tuple(self.nodes[a].shape for a in n.args)
        dtypes = tuple(self.nodes[a].dtype for a in n.args)
        try:
            shape, dtype = op.infer(shapes, dtypes, n.attrs)
        except ShapeError as e:
            raise GraphError(f"{where}: {e}") from None
        if tuple(shape) != n.shape or dtype != n.dtype:
            raise GraphError(
                f"{where}: recorded {fmt(n.shape)} {n.dtype}, rule gives {fmt(shape)} {dtype}"
            )
