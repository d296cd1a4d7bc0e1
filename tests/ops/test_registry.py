"""Registry-driven tests: every op's stanza is checked, so a new op is tested by existing.

Cases per op: its ``examples(rng)`` if it has them; otherwise (elementwise ops) random
values in its ``domain`` over the broadcasting shape families ``()``, ``(3, 4)``,
``(3, 1)``, ``(1, 4)``: every pair for binary ops, every triple for ``where``. For each
case we check

(a) the shape/dtype rule against the NumPy result, and the evaluator against ``impl``;
(b) every backend table has an entry for every op, and the NumPy source template (evaluated
    here, in the test only) equals ``impl``; the scalar ``math`` template too, on scalars;
(c) for differentiable ops, gradients of order 1 and 2 against finite differences;
(d) the batched cotangent: ``jacobian`` (one pass, identity seed) against one ``vjp`` per
    output element;
(e) ``graph.verify()`` after every transform;
(f) forward mode: every differentiable op has a forward rule; ``jvp`` against finite
    differences and against ``vjp`` (``<u, J v> = <J^T u, v>``) to second order, forward
    over reverse, and the forward-mode Jacobian (one batched pass) against the reverse one;
(g) complex values, for every op that takes them (``complex_cases``): (a) and (b) as above,
    and the derivatives against JAX's, which differentiates the op as the JAX target writes
    it: the gradient of a real-valued loss of the op's value, reverse over reverse, the JVP,
    the VJP with a complex cotangent and the JVP of the gradient (forward over reverse).
"""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends import TABLES
from symgrad.backends.targets.numpy.math_table import (
    CMATH,
    MATH,
    cmath_fallback_names,
    fallback_names,
)
from symgrad.backends.targets.numpy.table import NUMPY
from symgrad.ir.body import Body
from symgrad.ir.op import RESULT
from symgrad.ir.shapes import FLOATS, fmt, is_complex
from symgrad.ops import REGISTRY, Op, register
from symgrad.testing import check_grads, check_jvps
from tests.support.registry_cases import Case, complex_cases, impl, registry_cases

FAMILIES = [(), (3, 4), (3, 1), (1, 4)]


CASES = registry_cases(FAMILIES)
DIFFERENTIABLE = [c for c in CASES if c.values[0].op.differentiable]
COMPLEX = complex_cases(FAMILIES)
# JAX refuses eig's eigenvectors' derivatives, so it has no reference for them nor for the
# second order of eigenvalues (whose rule reads the eigenvectors): tests/ops/test_eig.py
# checks those against central differences of NumPy's eig
FIRST_ORDER_ONLY = {"eig", "eigvals"}
COMPLEX_DIFFERENTIABLE = [c for c in COMPLEX if c.values[0].op.differentiable
                          and (c.values[0].op.name, c.values[0].result) != ("eig", 1)]


def is_float(dtype) -> bool:
    """A real floating dtype (the complex cases have tests of their own, below)."""
    return str(dtype) in FLOATS


def test_every_op_with_operands_is_covered():
    covered = {c.values[0].op.name for c in CASES + COMPLEX}
    if any(c.values[0].result is not None for c in CASES):  # calls: read by projections
        covered.add("result")
    missing = sorted(n for n, op in REGISTRY.items() if op.arity != 0 and n not in covered)
    assert not missing, f"ops with neither examples nor an elementwise domain: {missing}"


_impl = impl


def test_every_op_taking_complex_values_has_complex_cases():
    covered = {c.values[0].op.name for c in COMPLEX}
    missing = sorted(n for n, op in REGISTRY.items()
                     if op.complex is True and op.arity != 0 and n not in covered)
    assert not missing, f"ops taking complex values without complex cases: {missing}"


@pytest.mark.parametrize("case", CASES + COMPLEX)
def test_shape_dtype_rule_matches_numpy(case):
    out, _, inputs = case.build()
    _, ref = _impl(case)
    ref = np.asarray(ref)
    assert out.shape == ref.shape, f"{case.op.name}: rule says {fmt(out.shape)}, NumPy {ref.shape}"
    assert out.dtype == ref.dtype.name, f"{case.op.name}: rule {out.dtype}, NumPy {ref.dtype}"
    got = np.asarray(sg.evaluate(out, inputs))
    if np.iscomplexobj(ref):  # complex products: NumPy's loops may round one ulp apart
        np.testing.assert_allclose(got, ref, rtol=4 * np.finfo(ref.dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got, ref)
    out.graph.verify()


@pytest.mark.parametrize("backend", sorted(TABLES))
def test_every_backend_has_an_entry_for_every_op(backend):
    """No silent fallbacks: a new op without a line in a backend's table fails here (the
    leaves, variables and ``const``, are written by the emitters themselves)."""
    table = TABLES[backend]
    ops = {n for n in REGISTRY if n != "const"}
    missing, extra = sorted(ops - set(table)), sorted(set(table) - ops)
    assert not missing, f"ops without an entry in the {backend!r} backend table: {missing}"
    assert not extra, f"entries of the {backend!r} table for ops that do not exist: {extra}"


@pytest.mark.parametrize("case", CASES + COMPLEX)
def test_source_template_matches_impl(case):
    if is_loop(case):
        pytest.skip("a loop's or callback's text is written by backends/loops.py and "
                    "backends/callbacks.py (test_loops.py, test_callbacks.py)")
    _, inputs = case.build()[1:]
    attrs, ref = _impl(case)
    names = [f"a{k}" for k in range(len(case.arrays))]
    template = NUMPY[case.op.name]
    text = template.render(names, attrs)
    with np.errstate(all="ignore"):
        got = eval(text, {**template.namespace(), **inputs})  # noqa: S307 - our own template
    if case.result is not None:  # a call's template gives the tuple of its results
        got = got[case.result]
    got = np.asarray(got)
    assert got.shape == np.shape(ref) and got.dtype == np.asarray(ref).dtype, text
    np.testing.assert_array_equal(got, ref, err_msg=f"source: {text}")


SCALAR = [c for c in CASES if MATH.get(c.values[0].op.name) is not None
          and all(np.ndim(a) == 0 for a in c.values[0].arrays)]


@pytest.mark.parametrize("case", SCALAR)
def test_scalar_template_matches_impl(case):
    """The ``math`` form over Python floats equals NumPy's to rounding; where ``math``
    raises, the same text over NumPy scalars with the derived fallback equals it exactly."""
    attrs, ref = _impl(case)
    names = [f"a{k}" for k in range(len(case.arrays))]
    template = MATH[case.op.name]
    text = template.render(names, attrs)
    floats = {n: a.item() for n, a in zip(names, case.arrays)}
    got = eval(text, {"math": math, **floats})  # noqa: S307 - our own template
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0, err_msg=text)
    numpy_scalars = {n: np.asarray(a)[()] for n, a in zip(names, case.arrays)}
    fallback = type("numpy_math", (), {m: eval(n, {"np": np, "math": math})  # noqa: S307
                                       for m, n in fallback_names().items()})
    with np.errstate(all="ignore"):
        got = eval(text, {"math": fallback, **numpy_scalars})  # noqa: S307
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0, err_msg=text)


COMPLEX_SCALAR = [c for c in COMPLEX if CMATH.get(c.values[0].op.name) is not None
                  and all(np.ndim(a) == 0 for a in c.values[0].arrays)]


@pytest.mark.parametrize("case", COMPLEX_SCALAR)
def test_complex_scalar_template_matches_impl(case):
    """The ``cmath`` form over Python complex numbers equals NumPy's to rounding, and over
    NumPy scalars with the derived fallback too."""
    attrs, ref = _impl(case)
    names = [f"a{k}" for k in range(len(case.arrays))]
    text = CMATH[case.op.name].render(names, attrs)
    scalars = {n: a.item() for n, a in zip(names, case.arrays)}
    got = eval(text, {"cmath": cmath, "math": math, **scalars})  # noqa: S307 - our own
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15, err_msg=text)
    numpy_scalars = {n: np.asarray(a)[()] for n, a in zip(names, case.arrays)}
    fallback = type("numpy_cmath", (), {m: eval(n, {"np": np})  # noqa: S307
                                        for m, n in cmath_fallback_names().items()})
    with np.errstate(all="ignore"):
        got = eval(text, {"cmath": fallback, "math": math, **numpy_scalars})  # noqa: S307
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15, err_msg=text)


def test_scalar_fallback_names_exist_in_math_and_numpy():
    names = fallback_names()
    assert names, "the scalar table calls no math function"
    for m, n in names.items():
        assert callable(getattr(math, m)), (m, n)
        if n.startswith("math."):  # NumPy has no such ufunc: math's own, which never raises
            assert n == f"math.{m}" and getattr(np, m, None) is None and m in ("erf", "erfc")
        else:
            assert n.startswith("np.") and isinstance(getattr(np, n[3:]), np.ufunc), (m, n)


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_gradients_match_finite_differences(case):
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not wrt or not is_float(out.dtype):
        pytest.skip("no float operand")
    check_grads(out, wrt, inputs, order=2)
    out.graph.verify()


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_jacobian_one_pass_equals_stacked_vjps(case):
    out, xs, inputs = case.build()
    if not is_float(out.dtype):
        pytest.skip("integer output")
    graph = out.graph
    for x in (x for x in xs if is_float(x.dtype)):
        jac = sg.jacobian(out, x)
        graph.verify()
        assert jac.shape == out.shape + x.shape
        full = np.asarray(sg.evaluate(jac, inputs))
        cot = sg.var(f"cot_{x.name}", out.shape)
        single = sg.vjp(out, x, cot)
        graph.verify()
        assert single.shape == x.shape
        rows = []
        for k in range(max(out.size, 1)):
            seed = np.zeros(out.size)
            seed[k] = 1.0
            rows.append(sg.evaluate(single, {**inputs, cot.name: seed.reshape(out.shape)}))
        stacked = np.reshape(rows, out.shape + x.shape)
        np.testing.assert_allclose(full, stacked, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_vjp_is_linear_in_the_cotangent(case, rng):
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not wrt or not is_float(out.dtype):
        pytest.skip("no float operand")
    c = sg.var("cot", out.shape)
    grads = sg.vjp(out, wrt, c)
    c1, c2 = rng.standard_normal(out.shape), rng.standard_normal(out.shape)
    g1 = sg.evaluate(list(grads), {**inputs, "cot": c1})
    g2 = sg.evaluate(list(grads), {**inputs, "cot": c2})
    g12 = sg.evaluate(list(grads), {**inputs, "cot": 2.0 * c1 - 3.0 * c2})
    for a, b, ab in zip(g1, g2, g12):
        np.testing.assert_allclose(ab, 2.0 * np.asarray(a) - 3.0 * np.asarray(b),
                                   rtol=1e-11, atol=1e-11)
    zero = sg.evaluate(list(grads), {**inputs, "cot": np.zeros(out.shape)})
    for z in zero:
        np.testing.assert_array_equal(z, 0.0)


# -- forward mode ---------------------------------------------------------------------------


def test_every_differentiable_op_has_a_forward_rule_and_register_checks_it():
    missing = sorted(n for n, op in REGISTRY.items()  # a projection's tangent: its call's
                     if op.differentiable and op.arity != 0 and op.forward is None
                     and n != RESULT)
    assert not missing, f"differentiable ops without a forward (JVP) rule: {missing}"
    op = Op(name="no_forward_rule", infer=lambda s, d, a: (s[0], d[0]), impl=np.negative,
            backprop=lambda n, g: (-g,))
    with pytest.raises(ValueError, match="no forward"):
        register(op)
    assert "no_forward_rule" not in REGISTRY


def _float_case(case: Case):
    """The case's output, its float operands and inputs (skipped without a float one)."""
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not wrt or not is_float(out.dtype):
        pytest.skip("no float operand")
    return out, wrt, inputs


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_jvp_matches_finite_differences_and_vjp(case):
    """<u, J v> against the central difference and against <J^T u, v>, for all float
    operands moving together; order 2 checks the tangent graph again (forward over forward
    and reverse over forward)."""
    out, wrt, inputs = _float_case(case)
    check_jvps(out, wrt, inputs, order=2)
    out.graph.verify()


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_forward_over_reverse(case, rng):
    """The tangent of a vector-Jacobian product (what hvp builds) against finite differences
    and against reverse over reverse."""
    out, wrt, inputs = _float_case(case)
    cots = sg.vjp(out, wrt, rng.standard_normal(out.shape))
    g = sg.sum(sg.stack([sg.sum(c * rng.standard_normal(c.shape)) for c in cots]))
    check_jvps(g, wrt, inputs, order=1)
    out.graph.verify()


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_jacfwd_equals_the_reverse_jacobian(case):
    out, xs, inputs = case.build()
    if not is_float(out.dtype):
        pytest.skip("integer output")
    for x in (x for x in xs if is_float(x.dtype)):
        fwd, rev = sg.jacobian(out, x, mode="forward"), sg.jacobian(out, x, mode="reverse")
        assert fwd.shape == rev.shape == out.shape + x.shape
        np.testing.assert_allclose(*sg.evaluate([fwd, rev], inputs), rtol=1e-11, atol=1e-12)
    out.graph.verify()


def is_loop(case) -> bool:
    """Whether the case holds a traced body (a loop's step, a solver's callbacks): its text
    names functions the module writes (tests/backends/test_loops.py, test_callbacks.py)."""
    return any(isinstance(v, Body) for v in case.attrs.values())


def test_rules_set_from_the_transforms_are_there_after_import_symgrad():
    """scan's and the custom calls' rules live in symgrad/transforms and are set on the
    ops from there: ``import symgrad`` alone installs them (no op reaches up for them)."""
    import subprocess
    import sys

    code = ("import symgrad\nsymgrad.grad  # the public names: every module loaded\n"
            "from symgrad.ir.op import REGISTRY, RESULT\n"
            "print(sorted(n for n, op in REGISTRY.items() if op.rules and n != RESULT\n"
            "             and (op.backprop is None or op.forward is None)))\n"
            "print(sorted(n for n, op in REGISTRY.items() if op.rules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert {"scan", "custom_vjp_call", "custom_jvp_call"} <= set(eval(out[1]))  # noqa: S307



# -- complex values: derivatives against JAX ------------------------------------------------


def _weights(shape, dtype, rng):
    """Random numbers of ``shape`` and ``dtype``'s precision: complex where it is complex,
    else real."""
    x = rng.standard_normal(shape)
    if is_complex(str(dtype)):
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dtype if str(dtype) in (*FLOATS, "complex64", "complex128")
                      else None)


class _Jax:
    """A complex case built twice: symgrad's graph, and the op as the JAX target writes it,
    which JAX differentiates."""

    def __init__(self, case: Case, rng):
        jax = pytest.importorskip("jax")
        if case.op.name == "eig":
            pytest.skip("JAX refuses eigenvector derivatives through jnp.linalg.eig: eig's "
                        "rules are checked against jnp.linalg.eigvals' and central "
                        "differences of np.linalg.eig in tests/ops/test_eig.py")
        if case.op.name == "sqrtm":
            pytest.skip("JAX's sqrtm has no derivative (its Schur decomposition has none): "
                        "sqrtm's rules are checked against central differences of SciPy's in "
                        "tests/scipy/test_linalg.py")
        if case.op.name in ("erf", "erfc"):
            pytest.skip("JAX has no complex erf: the derivatives are checked against central "
                        "differences of SciPy's in tests/ops/test_special.py")
        if case.op.name == "partition":
            pytest.skip("the order within each side of a partition is unspecified: the JAX "
                        "target's is sorted, NumPy's introselect's is its own (the "
                        "permuted rule is checked by finite differences)")
        self.jnp = jax.numpy
        self.jax = jax
        out, xs, inputs = case.build()
        self.pos = [k for k, x in enumerate(xs)
                    if str(x.dtype) in FLOATS or is_complex(str(x.dtype))]
        self.wrt = [xs[k] for k in self.pos]
        if not self.wrt or not (str(out.dtype) in FLOATS or is_complex(str(out.dtype))):
            pytest.skip("no float operand")
        self.out, self.xs, self.inputs = out, xs, inputs
        self.fn = sg.compile(out, inputs=xs, backend="jax").raw
        self.args = [self.jnp.asarray(inputs[x.name]) for x in xs]
        self.w = _weights(out.shape, out.dtype, rng)

    def loss(self):
        """The real-valued loss sum(real(out * w)), symgrad's and JAX's (of the operands
        differentiated by)."""
        jnp, w = self.jnp, self.w

        def jax_loss(*ws):
            args = list(self.args)
            for p, v in zip(self.pos, ws):
                args[p] = v
            return jnp.sum(jnp.real(self.fn(*args) * w))

        return sg.sum(sg.real(self.out * w)), jax_loss

    def primals(self):
        return [self.args[p] for p in self.pos]


def _close(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    single = np.float32 in (np.finfo(got.dtype).dtype, np.finfo(want.dtype).dtype) \
        if got.dtype.kind in "fc" and want.dtype.kind in "fc" else False
    tol = 2e-4 if single else 1e-9
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("case", COMPLEX_DIFFERENTIABLE)
def test_complex_gradients_match_jax(case, rng, x64):
    """The gradient of a real-valued loss (JAX's convention: df/dx - i df/dy for a complex
    operand), and of a real-valued function of that gradient (order 2)."""
    j = _Jax(case, rng)
    loss, jax_loss = j.loss()
    grads = sg.grad(loss, j.wrt)
    # jitted: one XLA compile per derivative, not one per primitive run eagerly
    want = j.jax.jit(j.jax.grad(jax_loss, argnums=tuple(range(len(j.wrt)))))(*j.primals())
    for g, x, ref in zip(grads, j.wrt, want):
        assert g.dtype == x.dtype, (g.dtype, x.dtype)
        _close(sg.evaluate(g, j.inputs), ref, f"gradient w.r.t. {x.name}")
    if case.op.name in FIRST_ORDER_ONLY:
        return
    cs = [_weights(x.shape, x.dtype, rng) for x in j.wrt]
    second = sg.sum(sg.stack([sg.sum(sg.real(g * c)) for g, c in zip(grads, cs)]))
    grads2 = sg.grad(second, j.wrt)
    jnp = j.jnp

    def jax_second(*ws):
        gs = j.jax.grad(jax_loss, argnums=tuple(range(len(ws))))(*ws)
        return sum(jnp.sum(jnp.real(g * c)) for g, c in zip(gs, cs))

    want2 = j.jax.jit(j.jax.grad(jax_second, argnums=tuple(range(len(j.wrt)))))(*j.primals())
    for g, x, ref in zip(grads2, j.wrt, want2):
        _close(sg.evaluate(g, j.inputs), ref, f"second order w.r.t. {x.name}")
    case.build()[0].graph.verify()


@pytest.mark.parametrize("case", COMPLEX_DIFFERENTIABLE)
def test_complex_jvp_vjp_and_hvp_match_jax(case, rng, x64):
    """Forward mode with complex tangents, reverse mode with a complex cotangent, and the
    tangent of the gradient (forward over reverse), each against JAX."""
    j = _Jax(case, rng)
    jax, jnp = j.jax, j.jnp

    def partial(*ws):
        args = list(j.args)
        for p, v in zip(j.pos, ws):
            args[p] = v
        return j.fn(*args)

    ts = [_weights(x.shape, x.dtype, rng) for x in j.wrt]
    got = sg.jvp(j.out, j.wrt, ts)
    tangents = tuple(jnp.asarray(t) for t in ts)
    want = jax.jit(lambda *p: jax.jvp(partial, p, tangents)[1])(*j.primals())
    _close(sg.evaluate(got, j.inputs), want, "jvp")
    ct = _weights(j.out.shape, j.out.dtype, rng)
    got = sg.vjp(j.out, j.wrt, ct)
    cot = jnp.asarray(ct, dtype=j.fn(*j.args).dtype)
    want = jax.jit(lambda *p: jax.vjp(partial, *p)[1](cot))(*j.primals())
    for g, ref, x in zip(got, want, j.wrt):
        _close(sg.evaluate(g, j.inputs), ref, f"vjp w.r.t. {x.name}")
    if case.op.name in FIRST_ORDER_ONLY:
        return
    loss, jax_loss = j.loss()
    grads = sg.grad(loss, j.wrt)
    got = sg.jvp(list(grads), j.wrt, ts)
    want = jax.jit(lambda *p: jax.jvp(
        lambda *ws: jax.grad(jax_loss, argnums=tuple(range(len(ws))))(*ws), p, tangents)[1])(
        *j.primals())
    for g, ref, x in zip(got, want, j.wrt):
        _close(sg.evaluate(g, j.inputs), ref, f"hvp w.r.t. {x.name}")
