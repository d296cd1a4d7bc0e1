"""Defining your own op: ``defop`` registers it in one call, and it then works everywhere.

In the spirit of autograd's ``defvjp`` and JAX's ``custom_vjp``, but symbol to symbol: an op
is its NumPy implementation, a shape rule, a backprop rule written with symgrad ops (so it
is differentiated again for higher orders), optionally a forward (JVP) rule and a
sparsity rule, and a NumPy source template. After ``defop`` the
op is ``sg.<name>`` and a function name in ``sg.parse`` text; ``grad``, ``hessian``,
``evaluate``, ``to_source``/``compile``, the printers and ``simplify`` treat it like a
built-in op. Its stanza goes into the registry and its templates into each backend's table
(``math=None`` says it has no scalar form: functions using it are emitted with NumPy).

>>> import numpy as np, symgrad as sg
>>> from symgrad.extend import defop
>>> softsign = defop(
...     "softsign_doc", impl=lambda x: x / (1 + np.abs(x)),
...     backprop=lambda n, g: (g / (1 + sg.abs(n.args[0])) ** 2,),
...     numpy="{0} / (1 + np.abs({0}))", sympy=lambda sp, x: x / (1 + sp.Abs(x)))
>>> x = sg.var("x")
>>> sg.evaluate(sg.grad(softsign(x), x), {"x": 1.0})
0.25
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from typing import Any

from ..backends.targets import TARGETS
from ..backends.targets.numpy.math_table import MATH
from ..backends.targets.numpy.table import NUMPY
from ..backends.template import Template
from ..base.errors import DifferentiationError, SymgradError
from ..frontend.functions import function_for
from ..ir.expr import Expr
from ..ir.op import ALIASES, REGISTRY, Op, register, sig
from ..ir.shapes import broadcast, float_dtype, norm_axis, result_dtype
from ..ops.tangent import elementwise as elementwise_forward
from ..transforms.forward import by_transposition

Infer = Callable[[tuple, tuple, dict], tuple]
_SHAPES = ("elementwise", "same")


class ExtensionError(SymgradError, ValueError):
    """An op definition that cannot be registered (name taken, template missing, ...)."""


def elementwise(shapes: tuple, dtypes: tuple, attrs: dict) -> tuple:
    """Shape rule of an elementwise op: operands broadcast; a floating result dtype."""
    return broadcast("elementwise op", *shapes), float_dtype(result_dtype(*dtypes))


def same(shapes: tuple, dtypes: tuple, attrs: dict) -> tuple:
    """Shape rule of an op whose result has its first operand's shape and dtype."""
    return shapes[0], dtypes[0]


def defop(
    name: str,
    impl: Callable[..., Any],
    backprop: Callable[..., tuple] | None = None,
    *,
    numpy: str | Callable[[list[str], dict], str],
    forward: Callable[..., Any] | None = None,
    sparsity: Callable[..., tuple] | None = None,
    shape: str | Infer = "elementwise",
    params: Sequence[str] = ("x",),
    attrs: dict[str, Any] | None = None,
    prepare: Callable[..., dict] | None = None,
    helpers: Sequence[Callable] = (),
    math: str | None = None,
    sympy: str | Callable | None = None,
    domain: tuple[float, float] | None = (-2.0, 2.0),
    examples: Callable | None = None,
    doc: str = "",
) -> Callable[..., Expr]:
    """Register op ``name``; returns its function (also ``sg.<name>``).

    Parameters
    ----------
    name
        A Python identifier not used by another op or by a ``symgrad`` function.
    impl
        ``impl(*arrays, **attrs)``: the NumPy implementation (what ``evaluate`` runs).
    backprop
        ``backprop(n, g) -> tuple``: one adjoint contribution per operand (or None), built
        with symgrad ops from ``n.args``, ``n.out``, ``n.attrs`` and the incoming adjoint
        ``g``, which may carry extra leading batch axes (use negative axes). None: the op
        has no derivative, and differentiating through it raises
        :class:`~symgrad.errors.DifferentiationError` (it is never taken to be zero).
    forward
        ``forward(n, t) -> tangent``: the output's tangent from ``t``, one tangent per
        operand (None where zero), each with the operand's shape plus the same leading batch
        axes, built with symgrad ops. Default: for ``shape="elementwise"`` the backprop rule
        with each operand's tangent in place of ``g`` (the Jacobian is diagonal); otherwise
        derived from the backprop rule by transposition (a reverse pass over the rule's
        nodes: correct, about twice the nodes of a written rule).
    sparsity
        ``sparsity(n) -> maps``: per operand, ``(rows, cols)`` flat indices of the local
        Jacobian's possible non-zeros (see :mod:`symgrad.ops.structure`). Default: the
        broadcasting map for elementwise ops, dense otherwise (always a valid superset).
    numpy
        The NumPy source template: ``"{0} / (1 + np.abs({0}))"`` (operands ``{0} {1}``,
        attributes ``{axis!r}``) or ``(names, attrs) -> str``; it may call ``helpers``.
    shape
        ``"elementwise"`` (operands broadcast, floating result), ``"same"`` (the first
        operand's shape and dtype), or ``infer(shapes, dtypes, attrs) -> (shape, dtype)``.
    params, attrs, prepare
        The call signature: operand names (``"*xs"`` any number, ``"=axis"`` a static
        attribute given positionally), the static attributes' defaults, and an optional
        ``prepare(shapes, dtypes, attrs) -> attrs`` that normalises them (e.g. to negative
        axes, so batched adjoints keep the meaning).
    helpers
        Module-level functions the template calls, copied into emitted modules once as
        their source text: defined with ``def`` in a file; any module other than ``np``
        and ``math`` imported inside the function (the module's header then names it).
    math
        A template over Python floats and ``math`` for ``to_source(scalars="math")``, or
        None (functions using the op are then emitted with NumPy).
    sympy, domain, examples, doc
        The sympy translation (elementwise ops), where tests may sample it, test cases
        ``examples(rng) -> [(arrays, attrs), ...]``, and a one-line description.

    Examples
    --------
    >>> import numpy as np, symgrad as sg
    >>> cube = defop("cube_doc", impl=lambda x: x ** 3,
    ...              backprop=lambda n, g: (3.0 * g * n.args[0] ** 2,), numpy="{0} ** 3")
    >>> x = sg.var("x")
    >>> sg.evaluate(sg.derivative(sg.parse("cube_doc(x)"), x, 2), {"x": 2.0})
    12.0
    """
    name = _check_name(name)
    infer = _shape_rule(shape, name)
    defaults = dict(attrs or {})
    try:
        signature = sig(*params, **defaults)
    except ValueError as e:
        raise ExtensionError(f"defop {name!r}: {e}") from None
    template = _template(name, numpy, helpers)
    differentiable = backprop is not None
    if backprop is None:  # no rule: differentiating through it is an error, never a zero
        backprop, forward = _no_rule(name), _no_rule(name)
    elif forward is None:
        forward = (elementwise_forward(backprop) if shape == "elementwise"
                   else by_transposition(backprop))
    op = Op(
        name=name, infer=infer, impl=impl, backprop=backprop, forward=forward,
        sparsity=sparsity, signature=signature,
        prepare=prepare, sympy=sympy, elementwise=shape == "elementwise",
        domain=domain, differentiable=differentiable, examples=examples,
        doc=doc or f"user-defined op {name}", builtin=False,
    )
    register(op)
    NUMPY[name] = template
    MATH[name] = None if math is None else Template(math)
    for target in TARGETS.values():  # the array API backends: said explicitly, with why
        if not target.numpy_only:
            target.table[name] = None
            target.unsupported[name] = "a user-defined op (defop gives a NumPy template only)"
    return function_for(name)


def _no_rule(name: str) -> Callable[..., Any]:
    """The backprop and forward rule of an op defined without one: raises when used."""
    def rule(n: Any, g: Any) -> tuple:
        raise DifferentiationError(
            f"op {name!r} has no derivative rule (defop was given no backprop=): define it "
            "again with one to differentiate through it; symgrad will not assume it is 0")

    return rule


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise ExtensionError(f"an op name must be a string, got {type(name).__name__}")
    name = str.__str__(name)  # an exact str, whatever subclass was given
    import symgrad

    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ExtensionError(f"op name {name!r} must be a public Python identifier")
    if name in REGISTRY or name in ALIASES:
        raise ExtensionError(f"an op named {name!r} is already registered")
    if name in dir(symgrad):  # dir, not vars: the face imports its names on first use
        raise ExtensionError(f"{name!r} is a symgrad function; choose another op name")
    return name


def _shape_rule(shape: str | Infer, name: str) -> Infer:
    if callable(shape):
        return shape
    if shape not in _SHAPES:
        raise ExtensionError(f"defop {name!r}: shape must be one of {_SHAPES} or a function "
                             f"(shapes, dtypes, attrs) -> (shape, dtype), got {shape!r}")
    return elementwise if shape == "elementwise" else same


def _template(name: str, numpy: Any, helpers: Sequence[Callable]) -> Template:
    if not (isinstance(numpy, str) or callable(numpy)):
        raise ExtensionError(f"defop {name!r}: numpy= must be a template string such as "
                             "'np.tanh({0})' or a function (names, attrs) -> str")
    taken = {fn.__name__: fn for t in list(NUMPY.values()) for fn in t.helpers}
    for fn in helpers:
        if not callable(fn) or not getattr(fn, "__name__", "").isidentifier():
            raise ExtensionError(f"defop {name!r}: helpers must be named functions")
        if taken.get(fn.__name__, fn) is not fn:
            raise ExtensionError(f"defop {name!r}: a different helper named {fn.__name__!r} "
                                 "is already emitted by another op")
        _check_helper_source(name, fn, {h.__name__ for h in helpers})
    return Template(numpy if isinstance(numpy, str) else numpy, tuple(helpers))


def _check_helper_source(name: str, fn: Callable, helpers: set[str]) -> None:
    """A helper is copied into emitted modules as its source text: that text must be
    readable, and every global name it uses defined there (``np``, ``math``, builtins, the
    op's other helpers) or imported inside it."""
    import ast
    import builtins
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        raise ExtensionError(
            f"defop {name!r}: the source of helper {fn.__name__!r} cannot be read (it is "
            "copied into generated code): define it with def in a module file, not in "
            "exec'd code, a lambda or an interactive session read from stdin") from None
    bound = {"np", "numpy", "math", *helpers, *dir(builtins)}
    loaded: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.append(node.id)
        elif isinstance(node, ast.Name):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    free = sorted(set(loaded) - bound)
    if free:
        raise ExtensionError(
            f"defop {name!r}: helper {fn.__name__!r} uses {', '.join(map(repr, free))}, "
            "which generated code does not define (it holds np, math, builtins and the "
            "op's helpers): import modules inside the helper, pass values as attributes")


__all__ = ["ExtensionError", "defop", "elementwise", "norm_axis", "same"]
