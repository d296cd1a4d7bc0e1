"""Rewrite rules as data, and the driver that applies them to nodes as they are built.

A :class:`Rule` is a pattern and what to build instead. A pattern is written with op names
and captures, so rule tables are data (no code switches on op names):

* ``"x"`` — any node, captured as the Expr ``x``; a name used twice must be the same node;
* ``1.0`` — a constant whose every element equals 1.0 (or a ``broadcast_to`` of one);
* ``Const("c")`` — any constant (or broadcast of one), captured; ``Const("z", 0.0)`` one
  that is all zeros;
* ``("multiply", p0, p1)`` — a node of that op whose operands match ``p0, p1``; a trailing
  dict ``{"axis": "a"}`` captures attributes (``a`` is then the attribute's value), a
  value that is not a string must be equal (``{"keepdims": True}``), and ``{"@": "n"}``
  captures the node itself as ``n``;
* ``("stack", ..., {"axis": -2})`` — a node of that op with any operands;
* ``OneOf(p, q, ...)`` — the first of the patterns that matches.

``Rule(("multiply", "x", 1.0), lambda x: x)`` reads "x * 1 is x"; ``children=("const",)``
says a rule can only match nodes whose operands are all of those ops; ``Rule(("concatenate",
...), build)`` matches that op with any operands and hands ``build`` the proposed node
``n``. ``build`` receives the captures as keywords and returns an Expr, or None to decline.
A rule whose pattern is a callable ``(n) -> captures or None`` sees the proposed node ``n``
itself (constant folding needs every op). The driver keeps an answer only when it has the
node's shape and dtype.
Patterns are compiled once, into matchers, when a rule is made.

:func:`rewriter` turns passes into the hook :meth:`~symgrad.ir.graph.Graph.rewriting`
installs: every node built while it is installed — including the nodes the rules build —
is offered to the rules first, so results come out rewritten bottom-up in one walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import Op
from ..ir.values import freeze
from .context import GraphPass

MAX_DEPTH = 32  # rules building nodes that are rewritten again: a bound on the nesting

# matches node ``i`` of ``graph``, filling ``caps`` (node captures hold ids, attrs values)
Matcher = Callable[[Graph, int, dict], bool]


@dataclass(frozen=True)
class OneOf:
    """Pattern: the first of ``alternatives`` that matches (captures of a failed one are
    dropped)."""

    alternatives: tuple

    def __init__(self, *alternatives: Any) -> None:
        object.__setattr__(self, "alternatives", alternatives)


@dataclass(frozen=True)
class Const:
    """Pattern: a constant node (or a ``broadcast_to`` of one); all equal to ``value`` if
    given. Captured under ``name`` if given."""

    name: str | None = None
    value: Any = None


class Rule:
    """``pattern`` (see the module docstring) and ``build(**captures) -> Expr | None``."""

    __slots__ = ("pattern", "build", "root", "arity", "guards", "children", "_matcher",
                 "_nodes")

    def __init__(self, pattern: Any, build: Callable[..., Expr | None],
                 children: tuple[str, ...] | None = None) -> None:
        self.pattern, self.build = pattern, build
        self._nodes: set[str] = set()  # capture names that hold nodes (the rest: attributes)
        self.guards: tuple[tuple[int, frozenset], ...] = ()  # (operand position, ops it may be)
        self.children = None if children is None else frozenset(children)
        self._matcher = None  # compiled on first use (import stays cheap)
        if callable(pattern):
            self.root, self.arity = "*", None
        elif len(pattern) == 2 and pattern[1] is Ellipsis:
            self.root, self.arity = pattern[0], None
        else:
            operands = _operands(pattern)[0]
            self.root, self.arity = pattern[0], len(operands)
            self.guards = tuple((k, g) for k, p in enumerate(operands)
                                if (g := _guard(p)) is not None)

    @property
    def _match(self):
        if self._matcher is None and self.arity is not None:
            self._matcher = _compile_node(self.pattern, self._nodes)
        return self._matcher

    def match(self, graph: Graph, i: int) -> dict | None:
        """The captures (node ids, attribute values) if node ``i`` of ``graph``, already
        built, matches the pattern; else None. The same matcher the driver runs."""
        n = graph.nodes[i]
        if n.op != self.root or self._match is None:
            return None
        if not self.applies(tuple([graph.nodes[a].op for a in n.args])):
            return None
        caps: dict = {}
        if not self._match(graph, n.args, n.attrs, caps):
            return None
        me = _operands(self.pattern)[1].get("@")
        return caps if me is None or _bind(caps, me, i) else None

    def applies(self, child_ops: tuple[str, ...]) -> bool:
        """Whether the rule can match a node whose operands have these ops (a cheap test
        the driver caches per root op and operand ops)."""
        if self.children is not None and not all(c in self.children for c in child_ops):
            return False
        return all(k < len(child_ops) and child_ops[k] in ops for k, ops in self.guards)

    def __repr__(self) -> str:
        return f"Rule({self.pattern!r})"

    def captures(self, graph: Graph, op: Op, args: tuple, attrs: dict, shape, dtype):
        """The keyword arguments for ``build`` if the proposed node matches, else None."""
        if self._match is None:
            n = Proposed(graph, op, args, attrs, shape, dtype)
            return self.pattern(n) if self.root == "*" else {"n": n}
        caps: dict = {}
        if not self._match(graph, args, attrs, caps):
            return None
        return {k: Expr(graph, v) if k in self._nodes else v for k, v in caps.items()}


_CONSTANT_OPS = frozenset({"const", "broadcast_to"})  # what a constant pattern can match


def _guard(p: Any) -> frozenset | None:
    """The ops a node matching operand pattern ``p`` can have (None: any)."""
    if isinstance(p, (Const, int, float)):
        return _CONSTANT_OPS
    if isinstance(p, tuple):
        return frozenset({p[0]})
    if isinstance(p, OneOf):
        found = [_guard(q) for q in p.alternatives]
        return None if any(g is None for g in found) else frozenset().union(*found)
    return None


@dataclass(frozen=True)
class Pass:
    """A named pass: a one-line ``doc``, the ``stages`` that run it (:mod:`.registry`), and
    what it does, one of two kinds:

    * a *rule pass* (``run`` is None): local rewrites, its ``rules``, offered each node as
      it is built (a stage rebuilds the graph through its consecutive rule passes at once;
      ``cse`` has no rules: the rebuild alone);
    * a *whole-graph pass*: ``run(graph, ids, ctx) -> (graph, ids)`` (:data:`~.context.
      GraphPass`) takes the outputs and returns their new form, reading and leaving what
      the run shares on the :class:`~.context.Context`.
    """

    name: str
    doc: str
    rules: tuple[Rule, ...] = ()
    run: GraphPass | None = None
    stages: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.run is not None and self.rules:
            raise ValueError(f"pass {self.name}: rules or a run, not both")

    def __str__(self) -> str:
        return f"{self.name:18} {self.doc}"


class Proposed:
    """The node about to be built, as a rule sees it: ``op``, ``args`` (Exprs), ``attrs``,
    ``shape``, ``dtype`` and ``graph``."""

    __slots__ = ("graph", "op", "arg_ids", "attrs", "shape", "dtype")

    def __init__(self, graph: Graph, op: Op, arg_ids: tuple, attrs: dict, shape, dtype):
        self.graph, self.op, self.arg_ids, self.attrs = graph, op, arg_ids, attrs
        self.shape, self.dtype = shape, dtype

    @property
    def args(self) -> tuple[Expr, ...]:
        return tuple(Expr(self.graph, a) for a in self.arg_ids)


# -- constants --------------------------------------------------------------------------------

def stored_constant(graph: Graph, i: int) -> np.ndarray | None:
    """The stored constant behind node ``i`` (itself, or what it broadcasts), or None."""
    n = graph.nodes[i]
    if n.is_const:
        return n.attrs["value"]
    caps: dict = {}
    if _REPEATED(graph, i, caps) and graph.nodes[caps["x"]].is_const:
        return graph.nodes[caps["x"]].attrs["value"]
    return None


def constant_value(graph: Graph, i: int) -> np.ndarray | None:
    """The value of node ``i`` if it is a constant or a broadcast of one, else None."""
    v = stored_constant(graph, i)
    return None if v is None else np.broadcast_to(v, graph.nodes[i].shape)


def _uniform(graph: Graph, i: int, value: Any) -> bool:
    """Whether node ``i`` is a constant equal to ``value`` everywhere (maybe broadcast)."""
    v = stored_constant(graph, i)
    if v is None or v.size == 0:
        return False
    return bool(v.flat[0] == value) and (v.size == 1 or bool(np.all(v == value)))


# -- compiling patterns ---------------------------------------------------------------------


def _operands(pattern: tuple) -> tuple[tuple, dict]:
    """A node pattern's operand patterns and its attribute captures."""
    rest = pattern[1:]
    if rest and isinstance(rest[-1], dict):
        return rest[:-1], rest[-1]
    return rest, {}


def _compile_node(pattern: tuple, nodes: set[str], any_operands: bool = False):
    """A matcher ``(graph, args, attrs, caps) -> bool`` for a node pattern's operands (only
    its attributes with ``any_operands``)."""
    operands, named = _operands(pattern)
    subs = [compile_pattern(p, nodes) for p in operands]
    attrs = [(k, v) for k, v in named.items() if k != "@" and isinstance(v, str)]
    literals = [(k, v) for k, v in named.items() if not isinstance(v, str)]
    # the ops operands must be: checked first, as most rules fail there
    guards = [(k, p[0]) for k, p in enumerate(operands) if isinstance(p, tuple)]
    count = len(subs)

    def match(graph: Graph, args: tuple, node_attrs: dict, caps: dict) -> bool:
        if len(args) != count and not any_operands:
            return False
        nodes = graph.nodes
        for k, op in guards:
            if nodes[args[k]].op != op:
                return False
        for attr, value in literals:
            if node_attrs.get(attr) != value:
                return False
        for attr, cap in attrs:
            value = node_attrs[attr]
            if caps.setdefault(cap, value) != value:
                return False
        if any_operands:
            return True
        for m, a in zip(subs, args):
            if not m(graph, a, caps):
                return False
        return True

    return match


def compile_pattern(pattern: Any, nodes: set[str]) -> Matcher:
    """A matcher for an operand pattern (see the module docstring)."""
    if isinstance(pattern, str):
        nodes.add(pattern)
        return lambda graph, i, caps: _bind(caps, pattern, i)
    if isinstance(pattern, (int, float)):
        return lambda graph, i, caps: _uniform(graph, i, pattern)
    if isinstance(pattern, Const):
        if pattern.name is not None:
            nodes.add(pattern.name)
        return lambda graph, i, caps: _const(graph, i, caps, pattern)
    if isinstance(pattern, OneOf):
        return _one_of([compile_pattern(p, nodes) for p in pattern.alternatives])
    if len(pattern) >= 2 and pattern[1] is Ellipsis:  # any operands: (op, ..., {attrs})
        pattern = (pattern[0], *pattern[2:])
        any_operands = True
    else:
        any_operands = False
    op, inner = pattern[0], _compile_node(pattern, nodes, any_operands)
    me = _operands(pattern)[1].get("@")
    if me is not None:
        nodes.add(me)

    def match(graph: Graph, i: int, caps: dict) -> bool:
        n = graph.nodes[i]
        if n.op != op or not inner(graph, n.args, n.attrs, caps):
            return False
        return me is None or _bind(caps, me, i)

    return match


def _one_of(matchers: list[Matcher]) -> Matcher:
    def match(graph: Graph, i: int, caps: dict) -> bool:
        for m in matchers:
            trial = dict(caps)
            if m(graph, i, trial):
                caps.update(trial)
                return True
        return False

    return match


def _const(graph: Graph, i: int, caps: dict, pattern: Const) -> bool:
    if stored_constant(graph, i) is None:
        return False
    if pattern.value is not None and not _uniform(graph, i, pattern.value):
        return False
    return pattern.name is None or _bind(caps, pattern.name, i)


def _bind(caps: dict, name: str, i: int) -> bool:
    found = caps.setdefault(name, i)
    return found == i


_REPEATED = compile_pattern(("broadcast_to", "x"), set())  # a result that only repeats its operand


# -- the driver -----------------------------------------------------------------------------


class _Dispatch:
    """Which of a list of rules can match a node, by its op and its operands' ops: built
    once per list of rules (:func:`_dispatch`) and shared by every rewriter of that list
    (the answer depends on the rules and the ops only)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.every = [r for r in rules if r.root == "*"]
        table: dict[tuple[str, int | None], list[Rule]] = {}
        for r in rules:
            if r.root != "*":
                table.setdefault((r.root, r.arity), []).append(r)
        self.table = {k: tuple(v) for k, v in table.items()}
        # (op, operand ops) -> the rules that can match: the driver's dispatch, cached
        self.merged: dict[tuple, tuple[Rule, ...]] = {}

    def rules(self, key: tuple[str, ...]) -> tuple[Rule, ...]:
        """The rules that can match a node of op ``key[0]`` whose operands' ops are
        ``key[1:]``."""
        found = self.merged.get(key)
        if found is None:
            name, child_ops = key[0], key[1:]
            candidates = (*self.every, *self.table.get((name, len(child_ops)), ()),
                          *self.table.get((name, None), ()))
            found = self.merged[key] = tuple(r for r in candidates if r.applies(child_ops))
        return found


_DISPATCH: dict[tuple[Rule, ...], _Dispatch] = {}
_MAX_DISPATCH = 64  # lists of rules remembered (the stages' lists: a handful)


def _dispatch(rules: tuple[Rule, ...]) -> _Dispatch:
    found = _DISPATCH.get(rules)
    if found is None:
        if len(_DISPATCH) >= _MAX_DISPATCH:
            _DISPATCH.clear()
        found = _DISPATCH[rules] = _Dispatch(rules)
    return found


class _Rewriter:
    """The hook a graph calls for each node it is about to build (see :func:`rewriter`)."""

    def __init__(self, graph: Graph, rules: Sequence[Rule]) -> None:
        self.graph = graph
        self.dispatch = _dispatch(tuple(rules))
        # a proposal seen before -> the answer (an id, or None): reverse mode proposes many
        # nodes again (hash-consing finds them), and the rules' answer for one proposal
        # never changes (operands are immutable). Forgotten when a failed transform's
        # rollback removed nodes: their ids may name other nodes since
        self._answers: dict[tuple, int | None] = {}
        self._rollbacks = graph.rollbacks
        self.depth = 0

    def __call__(self, op: Op, args: tuple, attrs: dict, shape: tuple, dtype: str) -> int | None:
        nodes = self.graph.nodes
        rules = self.dispatch.rules((op.name, *[nodes[a].op for a in args]))
        if not rules or self.depth >= MAX_DEPTH:
            return None
        if self._rollbacks != self.graph.rollbacks:
            self._answers.clear()
            self._rollbacks = self.graph.rollbacks
        seen = (op.name, args, freeze(attrs) if attrs else ())
        answers = self._answers
        if seen in answers:
            return answers[seen]
        self.depth += 1
        try:
            i = answers[seen] = self._answer(rules, op, args, attrs, shape, dtype)
        finally:
            self.depth -= 1
        return i

    def _answer(self, rules, op: Op, args: tuple, attrs: dict, shape: tuple, dtype: str):
        graph = self.graph
        for rule in rules:
            caps = rule.captures(graph, op, args, attrs, shape, dtype)
            if caps is None:
                continue
            out = rule.build(**caps)
            if out is None:
                continue
            n = graph.nodes[out.node]
            if n.shape == shape and n.dtype == dtype:
                return n.id
        return None


def rewriter(graph: Graph, passes: Sequence[Pass]) -> _Rewriter:
    """The hook that offers every node built in ``graph`` to the rules of ``passes``."""
    return _Rewriter(graph, [r for p in passes for r in p.rules])
