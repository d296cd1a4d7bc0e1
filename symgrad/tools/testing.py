"""Gradient checking: symbolic derivatives against float64 central finite differences.

:func:`check_grads` is the method of JAX's and autograd's checkers: draw a random cotangent
``u`` (shape of ``f``) and a random direction ``v`` (shape of a ``wrt`` variable), and
compare the symbolic vector-Jacobian product contracted with ``v``, ``<v, vjp(f, x, u)>``,
with the central difference of ``<u, f(x + h v)>`` in ``h``. One reverse pass and two
forward evaluations check any shape. Order ``k`` recurses: the symbolic VJP graph is
itself checked the same way, so order 2 tests the derivative of the derivative graph.

:func:`check_jvps` checks forward mode the same way: the tangent ``J v`` along a random
direction against the central difference of ``f`` along it, and against reverse mode
(``<u, J v> = <J^T u, v>``); order ``k`` differentiates the tangent graph again.

:func:`sparse_functions` is a hypothesis strategy for random residual vectors of one vector
variable with local (banded, block or arrow-head) structure: the test bed of the sparse
Jacobians and Hessians.

:func:`numeric_jacobian` is the element-by-element finite-difference Jacobian (for small
inputs, where it localises a wrong entry), and :func:`random_expressions` is a hypothesis
strategy for random well-typed expressions built from the op registry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.interpreter import evaluate
from ..base.describe import describe, type_name
from ..base.errors import InputError, SymgradError
from ..ir.expr import Expr, F, build, const
from ..ir.graph import Graph
from ..ir.op import REGISTRY, Op
from ..ir.shapes import broadcast, fmt, is_float
from ..ir.values import exact
from ..transforms.derivatives import Wrt, jvp, resolve_wrt, vjp

# Central differences have truncation error ~h^2 |f'''| and rounding error ~eps_mach |f| / h;
# the sum is smallest near h = eps_mach^(1/3) ~ 6e-6 (relative to the size of x). h = 1e-5
# gives a difference quotient good to ~1e-10 relative on smooth functions, so rtol = 1e-5
# at order 1 leaves five orders of margin while still catching any wrong rule (a wrong
# rule is off by O(1)). Each further order differentiates a larger graph whose values have
# a wider dynamic range, so the default rtol loosens tenfold per order.
DEFAULT_EPS = 1e-5
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8
_EPS_MACH = np.finfo(np.float64).eps


MAX_ORDER = 10


class CheckArgumentError(SymgradError, ValueError, TypeError):
    """An argument of check_grads that cannot be used (a ValueError/TypeError as well)."""


class GradientCheckError(SymgradError, AssertionError):
    """A symbolic derivative that disagrees with finite differences (or is not finite)."""


def check_grads(
    f: Expr,
    wrt: Wrt | Sequence[Wrt],
    at: Mapping[Any, Any],
    order: int = 2,
    *,
    eps: float = DEFAULT_EPS,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> None:
    """Check the symbolic derivatives of ``f`` against finite differences, up to ``order``.

    Parameters
    ----------
    f
        Scalar or tensor expression (float).
    wrt
        One variable or a list of them (Exprs or names); each is checked separately so a
        failure names it.
    at
        Input values, keyed by variable name or variable Expr (all of ``f``'s inputs).
    order
        1 checks the gradient; 2 also checks the derivative of the gradient graph, etc.
    eps
        Finite-difference step, scaled by ``max(1, max |x|)``.
    rtol, atol
        Tolerances on each directional derivative. ``rtol`` defaults to ``1e-5`` at order 1
        and ten times looser per further order; ``atol`` defaults to ``1e-8``. An estimate
        of the rounding error of the difference quotient is always added.
    seed
        Seed of the random cotangents and directions.

    Raises
    ------
    GradientCheckError
        Naming the variable, the order, and the symbolic and numeric values.

    Examples
    --------
    >>> import symgrad as sg
    >>> x, W = sg.var("x", shape=(3,)), sg.var("W", shape=(2, 3))
    >>> f = sg.tanh(W @ x) * 2.0
    >>> at = {"x": [0.1, -0.4, 0.3], "W": [[1.0, 2.0, 0.5], [-1.0, 0.3, 0.2]]}
    >>> sg.check_grads(f, [x, W], at, order=2)   # passes silently
    >>> sg.check_grads(sg.sin(x), x, {"x": [3.0, 4.0, 5.0]}, order=1)
    """
    order, eps, rtol, atol, seed = exact((order, eps, rtol, atol, seed))
    f, targets, inputs = _prepare("check_grads", f, wrt, at, order, (eps, rtol, atol, seed))
    for w in targets:
        if w.dtype != "float64":
            raise SymgradError(f"check_grads needs float64 variables (finite differences in "
                               f"{w.dtype} are too coarse); '{w.name}' is {w.dtype}")
    rng = np.random.default_rng(seed)
    stack = [(f, 1, "f")]
    try:
        while stack:  # iterative over orders: each entry is one function to check
            g, level, what = stack.pop()
            derivs = _check_one(g, targets, inputs, level, what, eps, rtol, atol, rng)
            if level < order:
                for w, d in zip(targets, derivs):
                    stack.append((d, level + 1, f"d({what})/d{w.name}"))
    except GradientCheckError as e:
        text = str(f)
        text = text if len(text) <= 120 else text[:117] + "..."
        raise GradientCheckError(f"{e}\n  where f = {text}") from None


def _prepare(who: str, f: Expr, wrt: Any, at: Mapping[Any, Any], order: Any,
             tolerances: tuple) -> tuple[Expr, list[Expr], dict[str, Any]]:
    """The checks' arguments checked: ``f`` in a private copy of its graph (the checks add
    nodes and transforms: the caller's graph stays as it is), the wrt variables in it, the
    inputs by name."""
    if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= MAX_ORDER:
        raise CheckArgumentError(f"order must be an int from 1 to {MAX_ORDER} (finite "
                                 f"differences of higher orders keep no digits), got "
                                 f"{describe(order)}")
    if not isinstance(f, Expr):
        raise CheckArgumentError(f"{who} needs a symgrad expression, got {type_name(f)}")
    _check_tolerances(*tolerances)
    many = isinstance(wrt, (list, tuple))
    f = _private_copy(f)
    targets = [resolve_wrt(f, w) for w in (wrt if many else [wrt])]
    inputs = _inputs(at)
    for w in targets:
        if w.name not in inputs:
            raise InputError(f"{who}: no value given for variable '{w.name}'")
    return f, targets, inputs


def _check_tolerances(eps: Any, rtol: Any, atol: Any, seed: Any) -> None:
    def positive(v: Any) -> bool:
        return type(v) in (int, float) and math.isfinite(v) and v > 0

    if not positive(eps) or eps > 1.0:
        raise CheckArgumentError(f"eps must be a step in (0, 1], got {describe(eps)}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v is not None and not (positive(v) or v == 0):
            raise CheckArgumentError(f"{name} must be None or a number >= 0, got {describe(v)}")
    if seed is not None and (type(seed) is not int or seed < 0):
        raise CheckArgumentError(f"seed must be a non-negative int, got {describe(seed)}")


def _private_copy(f: Expr) -> Expr:
    graph = Graph()
    return Expr(graph, graph.import_node(f.graph, f.node))


def _check_one(f, targets, inputs, level, what, eps, rtol, atol, rng) -> tuple[Expr, ...]:
    """Check every target's directional derivative of ``f``; return the VJP Exprs."""
    if not is_float(f.dtype):
        raise GradientCheckError(f"{what} has dtype {f.dtype}; only float outputs have gradients")
    u = rng.standard_normal(f.shape)
    derivs = vjp(f, list(targets), Expr(f.graph, f.graph.const(u)))
    for w, d in zip(targets, derivs):
        if d.shape != w.shape or d.dtype != w.dtype:
            raise GradientCheckError(
                f"order {level}: the derivative of {what} with respect to '{w.name}' has shape "
                f"{fmt(d.shape)} and dtype {d.dtype}; the variable has {fmt(w.shape)} {w.dtype}"
            )
    values = evaluate(list(derivs), inputs)
    rtol = DEFAULT_RTOL * 10.0 ** (level - 1) if rtol is None else rtol
    atol = DEFAULT_ATOL if atol is None else atol
    for w, d in zip(targets, values):
        v = rng.standard_normal(w.shape)
        symbolic = float(np.sum(v * d))
        numeric, noise = _directional(f, u, [w.name], [v], inputs, eps)
        scale = max(abs(symbolic), abs(numeric), float(np.sum(np.abs(v * d))))
        if not (np.isfinite(symbolic) and np.isfinite(numeric)):
            bad = "symbolic" if not np.isfinite(symbolic) else "numeric"
            raise GradientCheckError(
                f"order {level}: the {bad} derivative of {what} with respect to '{w.name}' is "
                f"not finite (symbolic {symbolic!r}, numeric {numeric!r}); is the point inside "
                "the function's domain?"
            )
        if abs(symbolic - numeric) > atol + rtol * scale + noise:
            raise GradientCheckError(
                f"order {level}: the derivative of {what} with respect to '{w.name}' disagrees "
                f"with finite differences along a random direction: symbolic {symbolic!r}, "
                f"numeric {numeric!r} (difference {abs(symbolic - numeric):.3g}, allowed "
                f"{atol + rtol * scale + noise:.3g})"
            )
    return derivs


def check_jvps(
    f: Expr,
    wrt: Wrt | Sequence[Wrt],
    at: Mapping[Any, Any],
    order: int = 2,
    *,
    eps: float = DEFAULT_EPS,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> None:
    """Check forward mode: ``jvp(f, wrt, v)`` against finite differences and against ``vjp``.

    For random directions ``v`` (one per variable, all moved together) and a random
    cotangent ``u``: ``<u, J v>`` must match the central difference of ``<u, f>`` along
    ``v`` (within the tolerances of :func:`check_grads`) and ``<J^T u, v>`` from reverse
    mode (to rounding: ``1e-10`` relative). Order ``k`` repeats the checks on the tangent
    graph ``J v`` itself (forward over forward, and reverse over forward).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> sg.testing.check_jvps(sg.exp(x) * x, x, {"x": [0.1, -0.4, 0.3]}, order=2)
    """
    order, eps, rtol, atol, seed = exact((order, eps, rtol, atol, seed))
    f, targets, inputs = _prepare("check_jvps", f, wrt, at, order, (eps, rtol, atol, seed))
    rng = np.random.default_rng(seed)
    g, what = f, "f"
    try:
        for level in range(1, order + 1):
            g = _check_tangent(g, targets, inputs, level, what, eps, rtol, atol, rng)
            what = f"J({what}) v"
    except GradientCheckError as e:
        text = str(f)
        text = text if len(text) <= 120 else text[:117] + "..."
        raise GradientCheckError(f"{e}\n  where f = {text}") from None


def _check_tangent(f, targets, inputs, level, what, eps, rtol, atol, rng) -> Expr:
    """Check ``J v`` of ``f`` for random ``v``; return the tangent Expr."""
    if not is_float(f.dtype):
        raise GradientCheckError(f"{what} has dtype {f.dtype}; only float outputs have tangents")
    vs = [rng.standard_normal(w.shape) for w in targets]
    t = jvp(f, list(targets), [Expr(f.graph, f.graph.const(v)) for v in vs])
    if t.shape != f.shape:
        raise GradientCheckError(f"order {level}: the tangent of {what} has shape "
                                 f"{fmt(t.shape)}; the expression has {fmt(f.shape)}")
    u = rng.standard_normal(f.shape)
    cot = vjp(f, list(targets), Expr(f.graph, f.graph.const(u)))
    tangent, *adjoints = evaluate([t, *cot], inputs)
    symbolic = float(np.sum(u * tangent))
    reverse = float(sum(np.sum(v * a) for v, a in zip(vs, adjoints)))
    numeric, noise = _directional(f, u, [w.name for w in targets], vs, inputs, eps)
    scale = max(abs(symbolic), abs(numeric), float(np.sum(np.abs(u * tangent))))
    if not (np.isfinite(symbolic) and np.isfinite(numeric)):
        raise GradientCheckError(
            f"order {level}: the tangent of {what} is not finite (symbolic {symbolic!r}, "
            f"numeric {numeric!r}); is the point inside the function's domain?")
    rtol = DEFAULT_RTOL * 10.0 ** (level - 1) if rtol is None else rtol
    atol = DEFAULT_ATOL if atol is None else atol
    if abs(symbolic - numeric) > atol + rtol * scale + noise:
        raise GradientCheckError(
            f"order {level}: the tangent (forward mode) of {what} disagrees with finite "
            f"differences along a random direction: symbolic {symbolic!r}, numeric "
            f"{numeric!r} (difference {abs(symbolic - numeric):.3g})")
    # rounding is relative to the terms summed on either side, with a floor far below unit
    # scale (an exact zero tangent can meet a reverse sum whose terms cancel to 1e-19)
    terms = max(scale, float(sum(np.sum(np.abs(v * a)) for v, a in zip(vs, adjoints))))
    if abs(symbolic - reverse) > 1e-10 * terms + _EPS_MACH:
        raise GradientCheckError(
            f"order {level}: forward and reverse mode disagree for {what}: <u, J v> = "
            f"{symbolic!r} but <J^T u, v> = {reverse!r}")
    return t


def _directional(f, u, names, vs, inputs, eps) -> tuple[float, float]:
    """Central difference of ``<u, f>`` when every variable ``names[k]`` moves along
    ``vs[k]`` (one step for all), and its rounding error estimate."""
    scale = max([1.0] + [float(np.max(np.abs(inputs[n]), initial=0.0)) for n in names])
    h = eps * scale
    plus = dict(inputs, **{n: inputs[n] + h * v for n, v in zip(names, vs)})
    minus = dict(inputs, **{n: inputs[n] - h * v for n, v in zip(names, vs)})
    fp = np.asarray(evaluate(f, plus), dtype=np.float64)
    fm = np.asarray(evaluate(f, minus), dtype=np.float64)
    numeric = float(np.sum(u * fp) - np.sum(u * fm)) / (2.0 * h)
    noise = 16.0 * _EPS_MACH * float(np.sum(np.abs(u * fp)) + np.sum(np.abs(u * fm))) / h
    return numeric, noise


def numeric_jacobian(
    f: Expr, wrt: Wrt, at: Mapping[Any, Any], eps: float = DEFAULT_EPS
) -> np.ndarray:
    """The finite-difference Jacobian of ``f`` with respect to one variable, entry by entry.

    Shape ``f.shape + wrt.shape``. Costs two evaluations per element of ``wrt``: for small
    inputs, where the full matrix localises a wrong entry.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> J = numeric_jacobian(x * x, x, {"x": [1.0, 3.0]})
    >>> np.round(J, 6)
    array([[2., 0.],
           [0., 6.]])
    """
    w = resolve_wrt(f, wrt)
    inputs = _inputs(at)
    x = inputs[w.name]
    h = eps * max(1.0, float(np.max(np.abs(x), initial=0.0)))
    out = np.zeros(f.shape + w.shape)
    for k in np.ndindex(*w.shape):
        step = np.zeros(w.shape)
        step[k] = h
        plus = evaluate(f, {**inputs, w.name: x + step})
        minus = evaluate(f, {**inputs, w.name: x - step})
        out[(Ellipsis, *k)] = (np.asarray(plus) - np.asarray(minus)) / (2.0 * h)
    return out


def _inputs(at: Mapping[Any, Any]) -> dict[str, Any]:
    """Inputs keyed by name; float values as float64 arrays (so they can be perturbed)."""
    if not isinstance(at, Mapping):
        raise CheckArgumentError(f"at must be a dict of input values, got {type_name(at)}")
    out = {}
    for k, value in at.items():
        name = k.name if isinstance(k, Expr) else exact(k)
        arr = np.asarray(value if isinstance(value, np.ndarray) else exact(value))
        out[name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    return out


# -- random expressions (hypothesis) --------------------------------------------------------

DEFAULT_SHAPES: dict[str, tuple[int, ...]] = {"x": (), "v": (3,), "M": (2, 3)}


@dataclass
class RandomCase:
    """A random expression with its inputs: ``expr``, ``inputs`` (name -> array), ``wrt``
    (the variable names it uses) and ``steps`` (how it was built, for failure reports)."""

    expr: Expr
    inputs: dict[str, np.ndarray]
    wrt: list[str]
    steps: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={np.array2string(v, precision=17)}"
                           for k, v in self.inputs.items())
        return "RandomCase(\n  " + "\n  ".join(self.steps) + f"\n  at {values}\n)"


def smooth_ops() -> list[Op]:
    """Registry ops usable in random expressions: differentiable elementwise ops (arity 1
    or 2, no ``examples``, a sampling ``domain``)."""
    return [op for op in REGISTRY.values()
            if op.differentiable and op.public and op.examples is None
            and op.domain is not None and op.arity in (1, 2)]


def comparison_ops() -> list[Op]:
    """Registry ops that compare two floats elementwise into a boolean (for ``where``)."""
    out = []
    for op in REGISTRY.values():
        if op.arity == 2 and not op.differentiable and op.public:
            try:
                if op.infer(((), ()), ("float64", "float64"), dict(op.attrs))[1] == "bool":
                    out.append(op)
            except SymgradError:
                pass
    return out


def _into_domain(t: Expr, domain: tuple[float, float]) -> Expr:
    """Map any real ``t`` strictly inside ``domain`` (mid + 0.95 half tanh t)."""
    lo, hi = domain
    return F.tanh(t) * (0.475 * (hi - lo)) + 0.5 * (lo + hi)


def random_expressions(
    max_steps: int = 6,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    ops: Sequence[Op] | None = None,
    where: bool = True,
):
    """A hypothesis strategy of :class:`RandomCase`: random well-typed expressions.

    An expression is a short program over the variables of ``shapes`` (default: a scalar
    ``x``, a vector ``v`` of 3 and a 2x3 matrix ``M``): each step applies a registry op to
    values already built (so subterms are shared), mapping every operand into the op's
    ``domain`` first. Steps also use ``where`` with a comparison, ``sum`` and ``@`` when
    registered; a step whose operand shapes do not fit is skipped. Input values are drawn
    in [-2, 2].

    Kinks (``maximum`` ties, ``where`` switching) make finite differences meaningless at
    some points; pass ``ops`` without ``maximum``/``minimum`` and ``where=False`` for
    expressions that are smooth everywhere.

    >>> import symgrad as sg
    >>> from hypothesis import given, settings
    >>> smooth = [REGISTRY[n] for n in ("add", "multiply", "tanh", "exp", "log")]
    >>> @settings(max_examples=5, deadline=None, derandomize=True)
    ... @given(random_expressions(ops=smooth, where=False))
    ... def test(case):
    ...     if case.wrt:
    ...         check_grads(sg.sin(case.expr), case.wrt, case.inputs, order=1)
    >>> test()
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    shapes = dict(DEFAULT_SHAPES if shapes is None else shapes)
    pool_ops = list(smooth_ops() if ops is None else ops)
    compares = comparison_ops()
    extras = [n for n in ("sum", "matmul") if n in REGISTRY]
    use_where = where and "where" in REGISTRY and compares
    kinds = ["op"] * 4 + (["where"] if use_where else []) + extras

    @st.composite
    def strategy(draw: Callable) -> RandomCase:
        from ..ir.expr import var

        names = list(shapes)
        pool: list[Expr] = [var(n, shapes[n]) for n in names]
        labels = list(names)
        steps: list[str] = []
        out = pool[0]
        wanted = draw(st.integers(1, max_steps))
        for _ in range(4 * wanted):
            if len(steps) == wanted:
                break
            pick = st.integers(0, len(pool) - 1)
            if draw(st.integers(0, 5)) == 0:  # sometimes a constant operand
                c = draw(st.floats(-2.0, 2.0, allow_nan=False, width=64))
                pool.append(_const(c))
                labels.append(repr(c))
                continue
            kind = draw(st.sampled_from(kinds))
            try:
                out, text = _step(draw, kind, pool, labels, pick, pool_ops, compares)
            except SymgradError:  # shapes that do not fit this op: skip the step
                continue
            labels.append(f"t{len(pool)}")
            steps.append(f"t{len(pool)} = {text}")
            pool.append(out)
        nodes = out.graph.nodes
        used = [nodes[i].name for i in out.graph.ancestors([out.node]) if nodes[i].is_var]
        inputs = {n: draw(hnp.arrays(np.float64, shapes[n],
                                     elements=st.floats(-2.0, 2.0, allow_nan=False, width=64)))
                  for n in names}
        return RandomCase(out, inputs, used, steps or [f"t = {labels[0]}"])

    return strategy()


def _const(c: float) -> Expr:
    return const(c)


def sparse_functions(n: int = 12, max_terms: int = 4, ops: Sequence[Op] | None = None):
    """A hypothesis strategy of :class:`RandomCase` whose ``expr`` is a residual vector
    ``r(x)`` of one vector variable ``x`` of ``n`` elements, with sparse structure.

    ``r`` concatenates a few terms; each term combines shifted windows ``x[o:o + m]``
    (offsets below a random width: a band) with random elementwise ops of the registry
    (``ops``, default :func:`smooth_ops`), mapped into each op's domain, and then maybe sums
    blocks of it (``reshape`` then ``sum``: dense blocks) or multiplies it by a sum over a
    slice of ``x`` (a dense row and column: an arrow head). ``sum(r * r)`` is then a scalar
    with a sparse Hessian.

    >>> import symgrad as sg
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=3, deadline=None, derandomize=True)
    ... @given(sparse_functions(n=8))
    ... def test(case):
    ...     assert sg.jacobian_sparsity(case.expr, "x").shape == (case.expr.size, 8)
    >>> test()
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    pool = list(smooth_ops() if ops is None else ops)
    unary_ops = [op for op in pool if op.arity == 1]
    binary_ops = [op for op in pool if op.arity == 2]

    @st.composite
    def strategy(draw: Callable) -> RandomCase:
        from ..ir.expr import var

        x = var("x", (n,))
        terms, steps = [], []
        for _ in range(draw(st.integers(1, max_terms))):
            width = draw(st.integers(1, min(4, n)))
            m = n - width + 1
            offsets = draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=3))
            out, text = x[offsets[0]:offsets[0] + m], f"x[{offsets[0]}:{offsets[0] + m}]"
            for o in offsets[1:]:
                op = draw(st.sampled_from(binary_ops))
                out = build(op, [_into_domain(out, op.domain),
                                 _into_domain(x[o:o + m], op.domain)], dict(op.attrs))
                text = f"{op.name}({text}, x[{o}:{o + m}])"
            if unary_ops and draw(st.booleans()):
                op = draw(st.sampled_from(unary_ops))
                out = build(op, [_into_domain(out, op.domain)], dict(op.attrs))
                text = f"{op.name}({text})"
            kind = draw(st.sampled_from(["band", "block", "arrow"]))
            blocks = [b for b in range(2, m + 1) if m % b == 0]
            if kind == "block" and blocks:
                b = draw(st.sampled_from(blocks))
                out = F.sum(F.reshape(out, (m // b, b)), axis=-1)
                text = f"block_sums({text}, {b})"
            elif kind == "arrow":
                lo = draw(st.integers(0, n - 1))
                out = out * F.sum(x[lo:])
                text = f"{text} * sum(x[{lo}:])"
            terms.append(out)
            steps.append(f"term{len(steps)} = {text}")
        r = terms[0] if len(terms) == 1 else F.concatenate(terms)
        values = draw(hnp.arrays(np.float64, (n,),
                                 elements=st.floats(-2.0, 2.0, allow_nan=False, width=64)))
        return RandomCase(r, {"x": values}, ["x"], steps)

    return strategy()


def _step(draw, kind, pool, labels, pick, ops, compares) -> tuple[Expr, str]:
    """One random step: returns the new Expr and a text describing it."""
    from hypothesis import strategies as st

    i = draw(pick)
    if kind == "sum":
        axis = draw(st.sampled_from([None, -1, 0])) if pool[i].ndim else None
        return F.sum(pool[i], axis=axis), f"sum({labels[i]}, axis={axis})"
    if kind == "matmul":
        j = draw(pick)
        return F.matmul(pool[i], pool[j]), f"{labels[i]} @ {labels[j]}"
    if kind == "where":
        cmp = draw(st.sampled_from(compares))
        j, k, m = draw(pick), draw(pick), draw(pick)
        cond = build(cmp, [pool[i], pool[j]], dict(cmp.attrs))
        broadcast("where", cond.shape, pool[k].shape, pool[m].shape)
        text = f"where({cmp.name}({labels[i]}, {labels[j]}), {labels[k]}, {labels[m]})"
        return F.where(cond, pool[k], pool[m]), text
    op = draw(st.sampled_from(ops))
    idx = [i] + [draw(pick) for _ in range(op.arity - 1)]
    operands = [_into_domain(pool[a], op.domain) for a in idx]
    text = f"{op.name}(" + ", ".join(f"in{op.domain}({labels[a]})" for a in idx) + ")"
    return build(op, operands, dict(op.attrs)), text
