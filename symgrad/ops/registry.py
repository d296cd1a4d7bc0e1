"""The op registry: one :class:`Op` stanza per op, and the only place that knows about ops.

Every other module reads :data:`REGISTRY`: the builder (shape rules, folding), the parser
(function names, keyword arguments), the evaluator (``impl``), the code generator
(``source``), the printer (``infix``), the reverse-mode transform (``backprop``), the sympy
bridge (``sympy``) and the registry-driven tests (``domain``, ``examples``).

Conventions for a stanza
------------------------
``params``
    The call signature shared by the Python API and the parser. A plain name is an operand
    (an expression); ``"*xs"`` takes any number of operands; ``"[xs]"`` takes one list of
    operands; ``"=name"`` is a static attribute given positionally (a literal). Keyword
    arguments are the keys of ``attrs`` (with their defaults).
``prepare(shapes, dtypes, attrs) -> attrs``
    Normalises attributes once operand shapes are known (``axis=None`` becomes a tuple of
    negative axes, ...), so that equal nodes hash-cons to one node.
``infer(shapes, dtypes, attrs) -> (shape, dtype)``
    The shape and dtype rule; raises :class:`~symgrad.errors.ShapeError` naming the op and
    the operand shapes.
``impl(*arrays, **attrs)``
    The NumPy implementation used by the evaluator.
``source``
    The NumPy source template used by codegen: a ``str.format`` pattern over operand names
    ``{0} {1} ...`` and attributes ``{axis}`` (formatted with ``repr``), or a callable
    ``(names, attrs) -> str``.
``helpers``
    NumPy-only functions named ``_sg_*`` that the ``source`` template calls: codegen emits
    their source once at the top of a generated module. Using the same function as ``impl``
    makes the evaluator and the emitted code agree by construction.
``scalar_source``
    Optional template over Python floats (``math.sin({0})``), used by codegen's
    ``scalars="math"`` mode for functions whose every value is a scalar. It may raise where
    NumPy returns inf/NaN (the generated code then falls back to the NumPy version).
``sympy``
    For elementwise ops: the sympy function's name (``"sin"``: translated both ways), or
    ``lambda sp, *args: ...`` building the sympy expression (one way).
``examples(rng) -> [(operand arrays, attrs), ...]``
    Test cases for the registry-driven tests (values inside the op's domain). When absent,
    an elementwise op is tested over ``domain`` and the broadcasting shape families.
``backprop(n, g) -> tuple``
    One adjoint contribution per operand, or ``None`` where no gradient flows. ``n`` is a
    :class:`NodeView` (``n.args`` are Exprs, ``n.out`` is the node itself as an Expr) and
    ``g`` the incoming adjoint, which may carry extra *leading* batch axes: rules use
    negative axes, so one pass with an identity seed gives a whole Jacobian. Rules build
    graph from registered ops only and never simplify; broadcasting is undone centrally.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import SymgradError

Shape = tuple[int, ...]


class SignatureError(SymgradError, TypeError):
    """An op called with the wrong number or kind of arguments."""


@dataclass(frozen=True, eq=False)
class Op:
    """One op: everything symgrad knows about it, in one place."""

    name: str
    arity: int | None
    infer: Callable[..., tuple[Shape, str]]
    impl: Callable[..., Any]
    source: str | Callable[[list[str], dict], str]
    backprop: Callable[..., tuple] | None = None
    params: tuple[str, ...] = ("x",)
    attrs: dict[str, Any] = field(default_factory=dict)
    prepare: Callable[..., dict] | None = None
    fold: Callable[..., Any] | None = None
    infix: tuple[str, int] | None = None
    sympy: str | Callable[..., Any] | None = None
    elementwise: bool = False
    domain: tuple[float, float] | None = (-2.0, 2.0)
    differentiable: bool = True
    public: bool = True
    aliases: tuple[str, ...] = ()
    helpers: tuple[Callable, ...] = ()
    scalar_source: str | None = None
    examples: Callable[[Any], list[tuple[list, dict]]] | None = None
    doc: str = ""

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, dict]:
        """Split a call's arguments into operands and static attributes."""
        operands: list = []
        attrs = dict(self.attrs)
        args = list(args)
        for p in self.params:
            if p.startswith("*"):
                operands.extend(args)
                args = []
            elif not args:
                if p.startswith("="):
                    continue
                raise SignatureError(f"{self.name}() is missing its argument '{p.strip('[]')}'")
            elif p.startswith("["):
                seq = args.pop(0)
                if not isinstance(seq, (list, tuple)) or not seq:
                    raise SignatureError(f"{self.name}() takes a non-empty list of arrays")
                operands.extend(seq)
            elif p.startswith("=") and p[1:] in kwargs:
                continue  # given by keyword: einsum(a, b, spec="i,i->")
            elif p.startswith("="):
                attrs[p[1:]] = args.pop(0)
            else:
                operands.append(args.pop(0))
        if args:
            raise SignatureError(f"{self.name}() takes {self._describe()}; got extra arguments")
        for k, v in kwargs.items():
            if k not in self.attrs:
                ok = ", ".join(self.attrs) or "no keyword arguments"
                raise SignatureError(f"{self.name}() got an unexpected keyword '{k}' (takes {ok})")
            attrs[k] = v
        return operands, attrs

    def namespace(self) -> dict[str, Any]:
        """The names this op's ``source`` template may use: ``np`` and its helpers."""
        import numpy

        return {"np": numpy, **{fn.__name__: fn for fn in self.helpers}}

    def _describe(self) -> str:
        return "(" + ", ".join(p.lstrip("=") for p in self.params) + ")"


REGISTRY: dict[str, Op] = {}
ALIASES: dict[str, str] = {}  # public name -> op name (``sub`` -> ``subtract``)


def register(op: Op) -> Op:
    """Add an op to the registry; each name (and alias) once."""
    for name in (op.name, *op.aliases):
        if name in REGISTRY or name in ALIASES:
            raise ValueError(f"op name {name!r} registered twice")
    if op.differentiable and op.backprop is None and op.arity != 0:
        raise ValueError(f"op {op.name!r} is differentiable but has no backprop rule")
    REGISTRY[op.name] = op
    ALIASES.update({a: op.name for a in op.aliases})
    return op


def first_fold(*folds: Callable) -> Callable:
    """A ``fold`` trying each of ``folds`` in turn; the first answer that is not None wins."""

    def fold(*args: Any) -> Any:
        for f in folds:
            out = f(*args)
            if out is not None:
                return out
        return None

    return fold


def lookup(name: str) -> Op:
    """The op called ``name`` or one of its aliases; ``KeyError`` if none."""
    return REGISTRY[ALIASES.get(name, name)]


def call(name: str, *args: Any, **kwargs: Any):
    """Build op ``name`` applied to ``args`` (Exprs, numbers or arrays); returns an Expr."""
    op = REGISTRY[name]
    operands, attrs = op.bind(args, kwargs)
    return _builder()(op, operands, attrs)


def _builder() -> Callable:
    global _build
    if _build is None:
        from ..graph import build

        _build = build
    return _build


_build: Callable | None = None


class _OpFunctions:
    """``F.exp(x)`` builds an ``exp`` node: what backprop rules use to write graph."""

    def __getattr__(self, name: str) -> Callable:
        if name not in REGISTRY:
            raise AttributeError(name)
        return lambda *a, **k: call(name, *a, **k)


F = _OpFunctions()


def function_for(name: str) -> Callable:
    """The user-facing function of op ``name`` (or alias): ``sg.exp``, ``sg.sum``, ..."""
    op = lookup(name)

    def fn(*args: Any, **kwargs: Any):
        return call(op.name, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    sig = ", ".join(p.lstrip("=") for p in op.params)
    kws = ", ".join(f"{k}={v!r}" for k, v in op.attrs.items() if f"={k}" not in op.params)
    fn.__doc__ = f"{name}({sig}{', ' if sig and kws else ''}{kws}): {op.doc or op.name}"
    return fn
