"""Functions with a custom derivative: ``custom_vjp`` and ``custom_jvp``, with JAX's
signatures and meanings (``jax.custom_vjp``, ``jax.custom_jvp``).

Called on arrays, a decorated function is the function. Called on symgrad expressions
(inside ``sg.grad(fun)``, ``sg.jacrev``, ``sg.hessian``... or on ``sg.var``), it is traced
once (its primal, inlined in the graph) and its results are nodes whose derivative is the
user's rule (:mod:`symgrad.ops.custom`): every transform uses the rule, and the rule's own
graph is differentiated like any other code, so transforms nest (grad of grad). Backends
write the primal, nothing else.

* ``f = custom_vjp(f, nondiff_argnums=())``; ``f.defvjp(fwd, bwd)``: ``fwd(*args) ->
  (out, residuals)``, ``bwd(*nondiff_args, residuals, g) -> `` a tuple with one cotangent
  per differentiated argument (its structure; ``None`` for zero). Reverse mode uses it;
  forward mode (``jacfwd``, ``hessian``) uses its transpose when ``bwd`` is linear in
  ``g`` and is refused otherwise (JAX refuses it always).
* ``f = custom_jvp(f, nondiff_argnums=())``; ``f.defjvp(jvp)`` with ``jvp(*nondiff_args,
  primals, tangents) -> (out, tangent_out)``, or ``f.defjvps(*jvps)`` with one
  ``jvp_i(t_i, out, *primals)`` per argument. Forward mode uses it; reverse mode its
  transpose (the rule must be linear in the tangents, as in JAX).

Arguments in ``nondiff_argnums`` are passed to the rules as they are (numbers, functions,
options) and get no derivative. A decorated function that closes over a traced value
being differentiated is refused (pass it as an argument).

>>> import numpy as np, symgrad as sg
>>> @sg.custom_vjp
... def clip_gradient(lo, hi, x):
...     return x
>>> clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
...                      lambda res, g: (None, None, np.clip(g, *res)))
>>> float(sg.grad(lambda x: clip_gradient(-0.5, 0.5, 3.0 * x))(1.0))   # 3 * clip(1.0)
1.5
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.describe import describe, type_name
from ..base.errors import ArgumentError, DifferentiationError, UnsupportedError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..ir.body import trace
from ..ir.custom import CustomRule
from ..ir.expr import Expr, F, const, projections
from ..ir.op import REGISTRY
from ..ir.shapes import fmt, is_float
from ..ir.values import as_constant, exact
from .capture import rebound
from .loops import home_graph

__all__ = ["custom_jvp", "custom_vjp"]


class _Custom:
    """What both decorators share: the function, ``nondiff_argnums``, the call."""

    kind = ""

    def __init__(self, fun: Callable, nondiff_argnums: Any = ()) -> None:
        if not callable(fun):
            raise ArgumentError(f"sg.custom_{self.kind} decorates a function, got "
                                f"{type_name(fun)}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _argnums(nondiff_argnums, self.kind)

    @property
    def _label(self) -> str:
        return str(getattr(self.fun, "__name__", "fun"))

    def __repr__(self) -> str:
        return f"<sg.custom_{self.kind} {self._label}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = _positional(self.fun, args, kwargs, self._label)
        if not _has_expr(args):
            return rebound(self.fun)(*args)
        return _call(self, args)


class custom_vjp(_Custom):  # noqa: N801  (JAX's name)
    """A function with a custom vector-Jacobian product (JAX's ``custom_vjp``): define the
    rule with :meth:`defvjp`.

    >>> import symgrad as sg
    >>> @sg.custom_vjp
    ... def f(x):
    ...     return sg.sin(x)
    >>> f.defvjp(lambda x: (f(x), sg.cos(x)), lambda cos_x, g: (2.0 * cos_x * g,))
    >>> float(sg.grad(f)(0.0))                   # twice the true derivative, by the rule
    2.0
    """

    kind = "vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Any = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """The rule: ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff_args,
        residuals, g) -> (cotangent per differentiated argument,)``. ``optimize_remat``
        is accepted and has no effect (symgrad keeps what it needs)."""
        if not callable(fwd) or not callable(bwd):
            raise ArgumentError(f"{self._label}.defvjp(fwd, bwd) takes two functions, got "
                                f"{type_name(fwd)} and {type_name(bwd)}")
        if symbolic_zeros:
            raise UnsupportedError(f"{self._label}.defvjp(..., symbolic_zeros=True): "
                                   "symbolic zeros are not supported; bwd receives zeros "
                                   "as arrays (leave symbolic_zeros out)")
        self.fwd, self.bwd = fwd, bwd


class custom_jvp(_Custom):  # noqa: N801  (JAX's name)
    """A function with a custom Jacobian-vector product (JAX's ``custom_jvp``): define the
    rule with :meth:`defjvp` (or :meth:`defjvps`).

    >>> import numpy as np, symgrad as sg
    >>> @sg.custom_jvp
    ... def log1pexp(x):
    ...     return np.log(1.0 + np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * (1.0 - 1.0 / (1.0 + np.exp(x)))
    >>> float(sg.grad(log1pexp)(100.0))          # the written form gives nan here
    1.0
    """

    kind = "jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Any = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """The rule ``jvp(*nondiff_args, primals, tangents) -> (out, tangent_out)``
        (``primals`` and ``tangents`` tuples of the differentiated arguments); returns
        ``jvp``, so it decorates."""
        if not callable(jvp):
            raise ArgumentError(f"{self._label}.defjvp(jvp) takes a function, got "
                                f"{type_name(jvp)}")
        if symbolic_zeros:
            raise UnsupportedError(f"{self._label}.defjvp(..., symbolic_zeros=True): "
                                   "symbolic zeros are not supported; the rule receives "
                                   "zeros as arrays (leave symbolic_zeros out)")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: ``jvp_i(t_i, out, *primals)`` is the tangent of the
        result along argument ``i``'s tangent (None: no dependence); they are summed."""
        if self.nondiff_argnums:
            raise ArgumentError(f"{self._label}.defjvps cannot be used with "
                                "nondiff_argnums (as in JAX): use defjvp")
        fun = self.fun

        def jvp(primals: tuple, tangents: tuple) -> tuple:
            if len(jvps) != len(primals):
                raise DifferentiationError(
                    f"{self._label}.defjvps got {len(jvps)} rules for a call with "
                    f"{len(primals)} arguments: give one per argument (None for none)")
            out = rebound(fun)(*primals)
            total = None
            for rule, t, in zip(jvps, tangents):
                if rule is None:
                    continue
                part = rebound(rule)(t, out, *primals)
                total = part if total is None else _tree_add(total, part)
            if total is None:
                leaves, tree = tree_flatten(out)
                total = tree_unflatten(tree, [0.0 * e for e in leaves])
            return out, total

        self.jvp = jvp


def _tree_add(a: Any, b: Any) -> Any:
    la, ta = tree_flatten(a)
    lb, tb = tree_flatten(b)
    if ta != tb:
        raise DifferentiationError(f"defjvps: the rules' tangents differ in structure ({ta!r} "
                                   f"and {tb!r})")
    return tree_unflatten(ta, [x + y for x, y in zip(la, lb)])


# -- the call -----------------------------------------------------------------------------

def _call(cf: _Custom, args: tuple) -> Any:
    """The call on expressions: the primal traced and inlined, and one call node (read
    through a projection per result)."""
    name = cf._label
    nondiff = cf.nondiff_argnums
    if any(k >= len(args) for k in nondiff):
        raise ArgumentError(f"{name}: nondiff_argnums {nondiff} does not fit a call with "
                            f"{len(args)} argument(s)")
    diff = tuple(a for k, a in enumerate(args) if k not in nondiff)
    leaves, treedef = tree_flatten(diff)
    xs = [_expr(leaf, name) for leaf in leaves]
    fixed = [args[k] for k in nondiff]
    out_def: list = []
    fun = rebound(cf.fun)

    def merged(values: list) -> list:
        it, out = iter(tree_unflatten(treedef, values)), []
        for k, a in enumerate(args):
            out.append(a if k in nondiff else next(it))
        return out

    def primal(*v: Expr) -> list:
        out_leaves, tree = tree_flatten(fun(*merged(list(v))))
        out_def.append(tree)
        return out_leaves

    if not xs:
        return fun(*args)
    body, captured = trace(primal, [(x.shape, x.dtype) for x in xs])
    graph = home_graph(xs, captured)
    xs = [Expr(graph, graph.find(x)) for x in xs]
    captured = [Expr(graph, graph.find(c)) for c in captured]
    ys = body.inline([*xs, *captured])
    if not ys:
        return tree_unflatten(out_def[0], [])
    key = (id(cf), treedef, out_def[0], tuple(_static_key(a) for a in fixed), len(ys),
           len(xs), len(captured))
    ctx = _Context(cf, treedef, out_def[0], fixed, merged, xs, ys, diff)
    if isinstance(cf, custom_vjp):
        rule = CustomRule("vjp", name, key=key, n_out=len(ys), n_in=len(xs),
                          fwd=lambda v: ctx.forward(v)[1], bwd=ctx.bwd,
                          primal=lambda v: ctx.forward(v)[0])
    else:
        rule = CustomRule("jvp", name, key=key, n_out=len(ys), n_in=len(xs),
                          jvp=lambda v, t: ctx.jvp(v, t)[1],
                          primal=lambda v: ctx.jvp(v, None)[0])
    op = REGISTRY[f"custom_{rule.kind}_call"]
    ids = tuple(e.node for e in [*ys, *xs, *captured])
    results = projections(Expr(graph, graph.add(op, ids, {"rule": rule})))
    return tree_unflatten(out_def[0], list(results))


class _Context:
    """One call's structures, and the user's rules on flat lists of Exprs."""

    def __init__(self, cf: _Custom, treedef: Any, out_def: Any, fixed: list,
                 merged: Callable[[list], list], xs: list[Expr], ys: list[Expr],
                 diff: tuple) -> None:
        self.cf, self.treedef, self.out_def, self.fixed = cf, treedef, out_def, fixed
        self.merged, self.diff = merged, diff
        self.x_avals = [(x.shape, x.dtype) for x in xs]
        self.y_avals = [(y.shape, y.dtype) for y in ys]
        self.name = cf._label

    def forward(self, xs: list[Expr]) -> tuple[list, Any]:
        """``fwd``'s output leaves and residuals."""
        cf = self.cf
        if cf.fwd is None:
            raise DifferentiationError(f"{self.name} (sg.custom_vjp) is differentiated but "
                                       f"has no rule: call {self.name}.defvjp(fwd, bwd)")
        got = rebound(cf.fwd)(*self.merged(list(xs)))
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise DifferentiationError(f"{self.name}: fwd must return a pair (output, "
                                       f"residuals), got {type_name(got)}")
        leaves, tree = tree_flatten(got[0])
        if tree != self.out_def:
            raise DifferentiationError(f"{self.name}: fwd's output has structure {tree!r}, "
                                       f"the function's {self.out_def!r}")
        return leaves, got[1]

    def bwd(self, res: Any, gs: list[Expr]) -> list:
        g = tree_unflatten(self.out_def, list(gs))
        got = rebound(self.cf.bwd)(*self.fixed, res, g)
        if not isinstance(got, (tuple, list)) or len(got) != len(self.diff):
            raise DifferentiationError(
                f"{self.name}: bwd must return a tuple with one cotangent per differentiated "
                f"argument ({len(self.diff)}), got {describe(got, 80)}")
        out: list = []
        for arg, ct in zip(self.diff, got):
            count = len(tree_flatten(arg)[0])
            if ct is None:
                out += [None] * count
                continue
            leaves, tree = tree_flatten(ct)
            if tree != tree_flatten(arg)[1]:
                raise DifferentiationError(
                    f"{self.name}: bwd's cotangent {tree!r} does not have the structure of "
                    f"its argument {tree_flatten(arg)[1]!r} (None stands for zeros)")
            out += leaves
        return self._checked(out, self.x_avals, "bwd's cotangent")

    def jvp(self, xs: list[Expr], ts: list[Expr] | None) -> tuple[list, list]:
        """The JVP rule's primal output leaves and tangent leaves (``ts`` None: zeros)."""
        cf = self.cf
        if cf.jvp is None:
            raise DifferentiationError(f"{self.name} (sg.custom_jvp) is differentiated but "
                                       f"has no rule: call {self.name}.defjvp(jvp)")
        primals = tuple(tree_unflatten(self.treedef, list(xs)))
        if ts is None:
            ts = [F.zeros(x.shape, dtype=x.dtype if is_float(x.dtype) else "float64")
                  for x in xs]
        tangents = tuple(tree_unflatten(self.treedef, list(ts)))
        got = rebound(cf.jvp)(*self.fixed, primals, tangents)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise DifferentiationError(f"{self.name}: the JVP rule must return a pair "
                                       f"(primal_out, tangent_out), got {type_name(got)}")
        leaves, tree = tree_flatten(got[1])
        if tree != self.out_def:
            raise DifferentiationError(f"{self.name}: the JVP rule's tangent has structure "
                                       f"{tree!r}, the function's output {self.out_def!r}")
        p_leaves, p_tree = tree_flatten(got[0])
        if p_tree != self.out_def:
            raise DifferentiationError(f"{self.name}: the JVP rule's primal output has "
                                       f"structure {p_tree!r}, the function's "
                                       f"{self.out_def!r}")
        return p_leaves, self._checked(leaves, self.y_avals, "the JVP rule's tangent")

    def _checked(self, values: list, avals: list, what: str) -> list:
        out: list = []
        for v, (shape, dtype) in zip(values, avals):
            if v is None or not is_float(dtype):
                out.append(None)
                continue
            got = v.shape if isinstance(v, Expr) else np.shape(v)
            if tuple(got) != shape:
                raise DifferentiationError(
                    f"{self.name}: {what} has shape {fmt(tuple(got))} where the value has "
                    f"{fmt(shape)}; they must match")
            out.append(v)
        return out


# -- helpers ------------------------------------------------------------------------------

def _expr(leaf: Any, name: str) -> Expr:
    if isinstance(leaf, Expr):
        return leaf
    try:
        return const(as_constant(leaf))
    except Exception:  # noqa: BLE001  (any value that is no array: say which)
        raise ArgumentError(f"{name}: an argument holds {type_name(leaf)}, not an array; "
                            "pass options in nondiff_argnums") from None


def _has_expr(args: tuple) -> bool:
    return any(isinstance(leaf, Expr) for leaf in tree_flatten(args)[0])


def _argnums(nums: Any, kind: str) -> tuple[int, ...]:
    nums = exact(nums)  # a user's int subclass: the plain int, its methods never run
    if isinstance(nums, (int, np.integer)) and not isinstance(nums, bool):
        nums = (nums,)
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
            for k in nums):
        raise ArgumentError(f"sg.custom_{kind}: nondiff_argnums must be a tuple of "
                            f"non-negative ints, got {describe(nums)}")
    return tuple(sorted({int(k) for k in nums}))


def _positional(fun: Callable, args: tuple, kwargs: dict, name: str) -> tuple:
    """Keyword arguments moved to their positions (as JAX resolves them)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"{name}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise ArgumentError(f"{name}: keyword-only arguments ({', '.join(bound.kwargs)}) "
                            "cannot be passed to a custom-derivative function; make them "
                            "positional")
    return tuple(bound.args)


def _static_key(value: Any) -> Any:
    """A key for a non-differentiated argument: equal only for values that trace alike."""
    t = type(value)
    if t is float:
        return ("float", value.hex())
    if t in (int, bool, str, bytes) or value is None:
        return (t.__name__, value)
    return ("id", id(value))
