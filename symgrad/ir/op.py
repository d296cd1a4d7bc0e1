"""The op record and the registry the IR looks ops up in by name.

An :class:`Op` states what an op *means*, nothing else: how it is called (its
:class:`Signature`), its shape/dtype rule, its NumPy implementation (what the interpreter
runs), its backprop rule, its sympy name and where tests may sample it. How an op is
*emitted* belongs to each backend's table (:mod:`symgrad.backends`); how it is *rewritten*
belongs to the passes (:mod:`symgrad.passes`). The stanzas themselves live in
:mod:`symgrad.ops`, which fills :data:`REGISTRY` when it is imported.

Fields of a stanza
------------------
``signature``
    How the op is called, parsed once from a spec (see :func:`sig`) and used by the
    builder, the text parser, the printer and the user-facing functions alike.
``prepare(shapes, dtypes, attrs) -> attrs``
    Normalises attributes once operand shapes are known (``axis=None`` becomes a tuple of
    negative axes, ...), so that equal nodes hash-cons to one node.
``infer(shapes, dtypes, attrs) -> (shape, dtype)``
    The shape and dtype rule; raises :class:`~symgrad.errors.ShapeError` naming the op and
    the operand shapes.
``impl(*arrays, **attrs)``
    The NumPy implementation the interpreter runs (the meaning of the op).
``backprop(n, g) -> tuple``
    One adjoint contribution per operand, or ``None`` where no gradient flows. ``n`` is a
    :class:`~symgrad.ir.expr.NodeView` (``n.args`` are Exprs, ``n.out`` is the node itself)
    and ``g`` the incoming adjoint, which may carry extra *leading* batch axes: rules use
    negative axes, so one pass with an identity seed gives a whole Jacobian. Rules build
    graph from registered ops only and never simplify; broadcasting is undone centrally.
    ``n.needs(k)`` says whether the transform uses operand ``k``'s contribution: a rule may
    return None for it without building anything (``x * 2.0``: no adjoint for ``2.0``).
    For a call with several results ``g`` is a tuple, the adjoint of each result or None
    (``n.results`` are the results' Exprs); the rule is asked once per call.
``forward(n, t) -> tangent``
    The forward-mode (JVP) rule: ``t`` holds one tangent per operand (an Expr of shape
    ``batch + operand shape``, or None where the tangent is zero) and the rule returns the
    output's tangent (shape ``batch + n.shape``, or anything that broadcasts to it), or None
    for a zero tangent. Rules build graph from registered ops only (so forward-over-reverse
    and reverse-over-forward compose) and accept tangents with extra leading batch axes,
    which is how ``jacfwd`` is one pass. Every differentiable op has one. A call with
    several results returns a tuple, one tangent (or None) per result; ``n.wants(k)`` says
    whether result ``k``'s is read.
``taylor(n, s, K) -> series``
    The Taylor-mode rule ``derivative(f, x, n)`` uses for a scalar ``x``: ``s`` holds one
    series per operand (``K + 1`` entries, entry ``k`` the ``k``-th derivative along ``x``
    or None where it is zero; entry 0 the operand) and the rule returns the output's, or
    None to decline (see :mod:`symgrad.ops.series`). Left out: an op whose forward rule is
    :func:`~symgrad.ops.tangent.linear` pushes every order through the op; any other op
    makes ``derivative`` use repeated reverse mode.
``sparsity(n) -> maps``
    The structural sparsity rule: for each operand, the pairs ``(output element, operand
    element)`` (flat indices, two int arrays) of its local Jacobian that may be non-zero, or
    None where there are none. Left out: elementwise ops get their broadcasting map, other
    ops the dense one (every output element depends on every operand element). A call with
    several results gives one such tuple per result (``n.wants(k)`` false: result ``k`` is
    not read, and its maps may be all None).
``sympy``
    For elementwise ops: the sympy function's name (translated both ways), or
    ``lambda sp, *args: ...`` building the sympy expression (one way).
``domain`` / ``examples(rng)``
    Where the registry-driven tests sample the op: an interval for elementwise ops, or a
    list of ``(operand arrays, attrs)`` cases.
``ieee``
    Facts about non-finite values the exact passes may rely on (:mod:`symgrad.passes.nan_guards`),
    a subset of ``"bounded"`` (``|f| <= 1`` wherever it is finite), ``"finite_with"`` (finite
    exactly where its operand is), ``"nan_at_inf"`` (NaN wherever its operand is infinite or
    NaN) and ``"nan_in_nan_out"`` (NaN wherever an operand is NaN, elementwise).
``rules``
    For an op whose derivative rules are built where the transforms live (a loop's, a
    custom rule's): the module that sets them with :func:`define_rules` when it is
    imported (``import symgrad`` imports it), as JAX's rule files fill
    ``ad.primitive_jvps`` for their primitive; for the projection :data:`RESULT`, the
    transforms themselves (its adjoint and tangent are its call's). Left out, a
    differentiable op states its rules in its stanza.
``selects``
    For a call whose last results are chosen by an attribute (a scan's ``stacked``: a
    sorted tuple, one result per entry after the fixed ones): that attribute's name. Calls
    equal but for it run one loop: the interpreter and the compile pipeline run one call
    giving the union of their results (:mod:`symgrad.passes.calls`).
``batch(args, batched, attrs, shape) -> Expr``
    For ``sg.vmap``: the op on ``args``, those flagged in ``batched`` with one extra leading
    (batch) axis, giving ``(batch,) + shape`` (``shape`` the unbatched result's). Left out,
    the op is rebuilt as it is and its result checked (see
    :mod:`symgrad.transforms.batching`); ops that would mix the rows need it (``outer``).
``front``
    The user-facing function, when it is more than :meth:`Signature.bind` (``x[key]``).
``write(key_marks, attrs) -> str``
    How the op is written in expression text when it is neither a call nor an infix
    operator (``x[1:, y]``); the printer fills the operand marks.

Calls with several results
--------------------------
A call that gives several values (a loop's final carries and stacked outputs, ``eigh``'s
eigenvalues and eigenvectors, a custom rule's results) is ONE node, as an equation of a
jaxpr with its ``outvars`` or PyTensor's ``Apply`` with its ``outputs``: its op's shape rule
returns ``((), Results(...))``, the ``(shape, dtype)`` of each result as the node's dtype,
and each result is read through a light *projection* node, op :data:`RESULT` with attribute
``index`` (hash-consing keeps one per call and index). The IR keeps its two invariants —
ordered int operands, one shape and dtype per node — and a walk over nodes meets the call
once: the interpreter runs it once for all its results, reverse mode asks its ``backprop``
once with ``g`` a tuple holding the adjoint of each result (None where a result has none),
forward mode asks its ``forward`` once for a tuple of tangents, printers write it as one
statement assigning its results' names. A call node is read by projections only (checked
by the builder and by :meth:`~symgrad.ir.graph.Graph.verify`). Projections rather than a
node of tuple type read by ``index`` ops everywhere: a projection is the one place a
result's shape and dtype live, so every pass, rule and printer that reads ``node.shape``
of an operand keeps working on results unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..base.describe import PLAIN, describe
from ..base.errors import SymgradError
from .values import exact

Shape = tuple[int, ...]


class SignatureError(SymgradError, TypeError):
    """An op called with the wrong number or kind of arguments."""


@dataclass(frozen=True)
class Param:
    """One parameter of an op: an ``operand``, an ``optional`` operand (``?x``: may be left
    out), ``operands`` (``*xs``: any number), a ``list`` of operands (``[xs]``: one list
    argument) or a ``static`` attribute."""

    name: str
    kind: str
    text: bool = False  # a static string (einsum's subscripts)


@dataclass(frozen=True)
class Signature:
    """How an op is called, parsed once from its spec.

    ``params`` in call order; ``defaults`` maps every static attribute (positional or
    keyword) to its default; ``infix`` is ``(symbol, Python precedence)`` for operators.

    >>> s = sig("x", "=axis", "=keepdims", axis=None, keepdims=False)
    >>> s.bind("sum", ("X", 0), {"keepdims": True})
    (['X'], {'axis': 0, 'keepdims': True})
    >>> s.describe()
    '(x, axis, keepdims)'
    """

    params: tuple[Param, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    infix: tuple[str, int] | None = None
    strings: frozenset[str] = frozenset()  # static attributes that take a string

    def takes_string(self, name: str) -> bool:
        """Whether static attribute ``name`` takes a string (einsum's subscripts, a dtype)."""
        return name in self.strings

    @property
    def arity(self) -> int | None:
        """The number of operands, or None when it varies."""
        if any(p.kind in ("operands", "list") for p in self.params):
            return None
        return sum(p.kind == "operand" for p in self.params)

    @cached_property
    def _operands_only(self) -> int:
        """The arity of an op taking fixed operands and nothing else, or -1."""
        plain = not self.defaults and all(p.kind == "operand" for p in self.params)
        return len(self.params) if plain else -1

    @property
    def positional_statics(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == "static")

    def bind(self, op: str, args: tuple, kwargs: Mapping[str, Any]) -> tuple[list, dict]:
        """Split a call's arguments into operands and static attributes; the attributes
        made exact (:func:`~symgrad.ir.values.exact`): a user's subclass of ``int`` or
        ``str`` never reaches a shape rule or emitted code."""
        if not kwargs and self._operands_only == len(args):
            return list(args), {}  # operands only: the common case in backprop rules
        operands: list = []
        attrs = dict(self.defaults)
        args = list(args)
        for p in self.params:
            if p.kind == "operands":
                operands.extend(args)
                args = []
            elif not args:
                if p.kind in ("static", "optional"):
                    continue
                raise SignatureError(f"{op}() is missing its argument '{p.name}'")
            elif p.kind == "list":
                seq = args.pop(0)
                if not isinstance(seq, (list, tuple)) or not seq:
                    raise SignatureError(f"{op}() takes a non-empty list of arrays")
                operands.extend(seq)
            elif p.kind == "static" and p.name in kwargs:
                continue  # given by keyword: einsum(a, b, spec="i,i->")
            elif p.kind == "static":
                attrs[p.name] = args.pop(0)
            else:
                operands.append(args.pop(0))
        if args:
            raise SignatureError(f"{op}() takes {self.describe()}; got extra arguments")
        for k, v in kwargs.items():
            k = exact(k)
            if k not in self.defaults:
                ok = ", ".join(self.defaults) or "no keyword arguments"
                raise SignatureError(f"{op}() got an unexpected keyword {describe(k)} "
                                     f"(takes {ok})")
            attrs[k] = v
        return operands, {k: v if type(v) in PLAIN else exact(v) for k, v in attrs.items()}

    def describe(self) -> str:
        """``(x, axis, keepdims)``: the parameters as a person reads them."""
        marks = {"operands": "*", "list": "[", "static": "", "operand": "", "optional": ""}
        ends = {"list": "]", "optional": "=None"}
        return "(" + ", ".join(f"{marks[p.kind]}{p.name}{ends.get(p.kind, '')}"
                               for p in self.params) + ")"

    def keywords_text(self) -> str:
        """Keyword-only attributes with their defaults: ``src_ndim=None``."""
        positional = set(self.positional_statics)
        return ", ".join(f"{k}={v!r}" for k, v in self.defaults.items() if k not in positional)


def sig(*spec: str, infix: tuple[str, int] | None = None, strings: tuple[str, ...] = (),
        **defaults: Any) -> Signature:
    """A :class:`Signature` from a spec: ``"x"`` an operand, ``"?x"`` an operand that may be
    left out, ``"*xs"`` any number of operands, ``"[xs]"`` one list of operands, ``"=name"``
    a static attribute given positionally (``"=spec:str"`` for a string); keyword arguments
    are the static
    attributes' defaults (every static attribute needs one); ``strings`` names keyword
    attributes that take a string (``dtype``).

    >>> sig("=spec:str", "*operands", spec=None).params[0]
    Param(name='spec', kind='static', text=True)
    """
    params = []
    for p in spec:
        if p.startswith("*"):
            params.append(Param(p[1:], "operands"))
        elif p.startswith("["):
            params.append(Param(p.strip("[]"), "list"))
        elif p.startswith("="):
            name, _, kind = p[1:].partition(":")
            params.append(Param(name, "static", kind == "str"))
        elif p.startswith("?"):
            params.append(Param(p[1:], "optional"))
        else:
            params.append(Param(p, "operand"))
    missing = [p.name for p in params if p.kind == "static" and p.name not in defaults]
    if missing:
        raise ValueError(f"static parameters without a default: {missing}")
    texts = {p.name for p in params if p.text} | set(strings)
    return Signature(tuple(params), dict(defaults), infix, frozenset(texts))


UNARY = sig("x")
BINARY = sig("x", "y")


@dataclass(frozen=True, eq=False)
class Op:
    """One op: what it means, in one place (see the module docstring for the fields)."""

    name: str
    infer: Callable[..., tuple[Shape, str]]
    impl: Callable[..., Any] | None
    backprop: Callable[..., tuple] | None = None
    forward: Callable[..., Any] | None = None
    sparsity: Callable[..., tuple] | None = None
    signature: Signature = UNARY
    prepare: Callable[..., dict] | None = None
    sympy: str | Callable[..., Any] | None = None
    elementwise: bool = False
    domain: tuple[float, float] | None = (-2.0, 2.0)
    differentiable: bool = True
    public: bool = True
    aliases: tuple[str, ...] = ()
    examples: Callable[[Any], list[tuple[list, dict]]] | None = None
    front: Callable[..., Any] | None = None
    write: Callable[[list[str], dict], str] | None = None
    doc: str = ""
    builtin: bool = True  # False for ops defined with symgrad.extend
    rules: str | None = None  # the module that sets its derivative rules (define_rules)
    selects: str | None = None  # the attribute choosing a call's last results (a scan's)
    batch: Callable[..., Any] | None = None  # the op on operands with a batch axis (vmap)
    taylor: Callable[..., Any] | None = None
    ieee: frozenset[str] = frozenset()  # facts about inf and NaN (see the module docstring)

    @property
    def arity(self) -> int | None:
        return self.signature.arity

    @property
    def attrs(self) -> Mapping[str, Any]:
        """The static attributes and their defaults."""
        return self.signature.defaults


RESULT = "result"  # the projection op: result ``index`` of a call with several results


class Results(tuple):
    """The ``(shape, dtype)`` of each result of a call with several results: the dtype of
    its node (whose shape is ``()``; see "Calls with several results" above).

    >>> r = Results([((3,), "float64"), ((3, 3), "float64")])
    >>> str(r), r[1]
    ('(f64[3], f64[3,3])', ((3, 3), 'float64'))
    """

    __slots__ = ()

    def __str__(self) -> str:
        short = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32"}
        return "(" + ", ".join(f"{short.get(d, d)}[{','.join(map(str, s))}]"
                               for s, d in self) + ")"


def results_of(avals: Any) -> tuple[tuple[()], Results]:
    """What a call op's shape rule returns for results of ``(shape, dtype)`` ``avals``."""
    return (), Results((tuple(s), d) for s, d in avals)


def is_call(node: Any) -> bool:
    """Whether ``node`` (a :class:`~symgrad.ir.graph.Node`) is a call with several results."""
    return type(node.dtype) is Results


REGISTRY: dict[str, Op] = {}
ALIASES: dict[str, str] = {}  # public name -> op name (``sub`` -> ``subtract``)

# NumPy's names for functions that are not one op (``var``, ``clip``, ``linalg.norm`` ...), or
# that take more of NumPy's keywords than their op (``sum(..., dtype=, where=)``). The front
# end fills it (symgrad.frontend.numpy_functions); the array protocols of Expr look names up
# here first, then in REGISTRY/ALIASES. Each function carries its parsed ``signature``.
FUNCTIONS: dict[str, Callable[..., Any]] = {}
# NumPy names symgrad deliberately does not trace, with what to use instead.
UNSUPPORTED: dict[str, str] = {}
# sparse matrices as operands (SciPy's, symgrad's SparseArray): the front end registers "is"
# (whether an operand is one) and "call" (NumPy's function or the op ``name`` on operands
# among which one is, ``call(name, args, kwargs)``) and "as" (an operand as symgrad's
# SparseArray); builders and NumPy's names ask it first.
SPARSE: dict[str, Callable[..., Any]] = {}


def register(op: Op) -> Op:
    """Add an op to the registry; each name (and alias) once."""
    for name in (op.name, *op.aliases):
        if name in REGISTRY or name in ALIASES:
            raise ValueError(f"op name {name!r} registered twice")
    deferred = op.rules is not None  # set by define_rules from the module named
    if op.differentiable and op.backprop is None and op.arity != 0 and not deferred:
        raise ValueError(f"op {op.name!r} is differentiable but has no backprop rule")
    if op.differentiable and op.forward is None and op.arity != 0 and not deferred:
        raise ValueError(f"op {op.name!r} is differentiable but has no forward (JVP) rule")
    REGISTRY[op.name] = op
    ALIASES.update({a: op.name for a in op.aliases})
    return op


_RULES = ("backprop", "forward", "taylor", "batch", "sparsity")


def define_rules(name: str, **rules: Callable[..., Any]) -> Op:
    """Set the derivative rules of registered op ``name`` from the module its stanza names
    in ``rules`` (``backprop=``, ``forward=``, ...; each once). Rules point down: the op
    never imports the module that builds them.

    >>> REGISTRY["scan"].rules, REGISTRY["scan"].backprop is not None
    ('symgrad.transforms.loops', True)
    """
    op = REGISTRY[name]
    for field_name, rule in rules.items():
        if field_name not in _RULES:
            raise ValueError(f"{name}: {field_name!r} is not a rule ({', '.join(_RULES)})")
        if getattr(op, field_name) is not None:
            raise ValueError(f"{name}: its {field_name} rule is already set")
        object.__setattr__(op, field_name, rule)  # the stanza is frozen for everyone else
    return op


def lookup(name: str) -> Op:
    """The op called ``name`` or one of its aliases; ``KeyError`` if none."""
    return REGISTRY[ALIASES.get(name, name)]


def public_op(name: str) -> Op | None:
    """The public op called ``name`` (or an alias of it), or None."""
    op = REGISTRY.get(ALIASES.get(name, name))
    return op if op is not None and op.public else None
