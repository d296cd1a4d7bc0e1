"""``sg.custom_vjp`` and ``sg.custom_jvp`` against ``jax.custom_vjp``/``jax.custom_jvp``:
each case is written once, for a namespace (NumPy for symgrad, ``jax.numpy`` for JAX) and a
decorator module, and every transform's numbers are compared (grad, jacfwd, jacrev, hessian,
grad of grad, nondiff_argnums, pytrees in the residuals), plus the combinations symgrad
refuses and the backends that write the primal."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import symgrad as sg
from tests.support.pytree_close import close

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def _x64(x64):
    yield




# -- the cases, written once -----------------------------------------------------------------


def log1pexp_for(xp, lib):
    """JAX's documentation example: log(1 + exp(x)), its JVP stable where the written
    derivative overflows."""

    @lib.custom_jvp
    def log1pexp(x):
        return xp.log(1.0 + xp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + xp.exp(x)))

    return log1pexp


def clip_gradient_for(xp, lib):
    """JAX's documentation example: the identity, its cotangent clipped (not linear)."""

    @partial(lib.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, None

    def bwd(lo, hi, _, g):
        return (xp.clip(g, lo, hi),)

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


def double_sin_for(xp, lib):
    """sin with twice its derivative as the rule: a bwd linear in g whose residual is
    differentiable (so grad of grad goes through the rule's own graph)."""

    @lib.custom_vjp
    def f(x):
        return xp.sin(x)

    f.defvjp(lambda x: (f(x), xp.cos(x)), lambda c, g: (2.0 * c * g,))
    return f


def layer_for(xp, lib):
    """A pytree of parameters, residuals as a dict holding a tuple, two results."""

    @lib.custom_vjp
    def layer(params, x):
        h = xp.tanh(params["w"] * x + params["b"])
        return h, xp.sum(h * h)

    def fwd(params, x):
        h, s = layer(params, x)
        return (h, s), {"h": h, "pair": (params["w"], x)}

    def bwd(res, g):
        gh, gs = g
        h, (w, x) = res["h"], res["pair"]
        dz = (gh + 2.0 * gs * h) * (1.0 - h * h)
        return {"w": dz * x, "b": dz}, dz * w

    layer.defvjp(fwd, bwd)
    return layer


def apply_for(xp, lib):
    """A function as a non-differentiated argument (JAX's nondiff_argnums example)."""

    @partial(lib.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(f, x), 3.0 * t * xp.cos(x)   # deliberately not f's derivative

    return app


def pair_for(xp, lib):
    """Two arguments, two results; the rule by defjvps."""

    @lib.custom_jvp
    def pair(x, y):
        return x * y, xp.sin(x) + y

    pair.defjvps(lambda tx, out, x, y: (tx * y, xp.cos(x) * tx),
                 lambda ty, out, x, y: (x * ty, ty))
    return pair


@pytest.fixture
def x(rng):
    return rng.uniform(-1.5, 1.5, 4)


# -- custom_jvp -----------------------------------------------------------------------------


def test_log1pexp_is_stable_where_the_written_form_is_not():
    sgf, jf = log1pexp_for(np, sg), log1pexp_for(jnp, jax)
    for at in (100.0, 0.0, -30.0, 3.0):
        want = jax.jit(jax.grad(jf))(at)
        assert float(sg.grad(sgf)(at)) == pytest.approx(float(want), rel=1e-14)
    assert float(sg.grad(sgf)(100.0)) == 1.0
    with np.errstate(over="ignore"):  # the primal overflows there; its rule does not
        assert float(sg.grad(sgf)(1000.0)) == 1.0


def test_log1pexp_every_transform_matches_jax(x):
    sgf, jf = log1pexp_for(np, sg), log1pexp_for(jnp, jax)

    def total(v):
        return (v * 0.5 + 1.0) @ sgf(v * v)

    def total_j(v):
        return (v * 0.5 + 1.0) @ jf(v * v)

    close(sg.grad(total)(x), jax.jit(jax.grad(total_j))(x))
    close(sg.jacfwd(lambda v: sgf(v * v))(x), jax.jit(jax.jacfwd(lambda v: jf(v * v)))(x))
    close(sg.jacrev(lambda v: sgf(v * v))(x), jax.jit(jax.jacrev(lambda v: jf(v * v)))(x))
    close(sg.hessian(total)(x), jax.jit(jax.hessian(total_j))(x))
    close(sg.grad(lambda v: sg.sum(sg.grad(total)(v) ** 2))(x),
          jax.jit(jax.grad(lambda v: jnp.sum(jax.grad(total_j)(v) ** 2)))(x))
    close(sg.jacrev(sg.jacrev(total))(x), jax.jit(jax.jacrev(jax.jacrev(total_j)))(x))
    close(sg.jvp(total, (x,), (x[::-1],)), jax.jvp(total_j, (x,), (x[::-1],)))
    close(sg.vjp(lambda v: sgf(v * v), x)[1](x), jax.vjp(lambda v: jf(v * v), x)[1](x))


def test_symbolic_expressions_and_the_value_off_the_trace(x):
    sgf = log1pexp_for(np, sg)
    np.testing.assert_allclose(sgf(x), np.log1p(np.exp(x)), rtol=1e-15)  # plain arrays
    v = sg.var("v", shape=(4,))
    y = sgf(v)
    assert y is not None and y.node == sgf(v).node  # equal calls are one node
    d = sg.grad(sg.sum(y), v)
    np.testing.assert_allclose(sg.evaluate(d, {"v": x}), 1.0 / (1.0 + np.exp(-x)), rtol=1e-14)


def test_nondiff_argnums_with_a_function_argument(x):
    sgf, jf = apply_for(np, sg), apply_for(jnp, jax)
    close(sg.grad(lambda v: np.sum(sgf(np.exp, v)))(x),
          jax.jit(jax.grad(lambda v: jnp.sum(jf(jnp.exp, v))))(x))
    close(sg.hessian(lambda v: np.sum(sgf(np.exp, v) * v))(x),
          jax.jit(jax.hessian(lambda v: jnp.sum(jf(jnp.exp, v) * v)))(x))


def test_defjvps_two_arguments_two_results(x):
    sgf, jf = pair_for(np, sg), pair_for(jnp, jax)
    y = x[::-1] * 0.5

    def use(f, xp):
        def g(a, b):
            p, q = f(a, b)
            return xp.sum(p * q)
        return g

    close(sg.grad(use(sgf, np), (0, 1))(x, y), jax.jit(jax.grad(use(jf, jnp), (0, 1)))(x, y))
    close(sg.jacfwd(lambda a: sgf(a, y), argnums=0)(x), jax.jit(jax.jacfwd(lambda a: jf(a, y)))(x))
    close(sg.jacrev(lambda a: sgf(a, y))(x), jax.jit(jax.jacrev(lambda a: jf(a, y)))(x))
    close(sg.hessian(use(sgf, np), argnums=(0, 1))(x, y),
          jax.jit(jax.hessian(use(jf, jnp), argnums=(0, 1)))(x, y))


# -- custom_vjp -----------------------------------------------------------------------------


def test_clip_gradient_matches_jax(x):
    sgf, jf = clip_gradient_for(np, sg), clip_gradient_for(jnp, jax)

    def loss(xp, f):
        return lambda v: xp.sum(f(-0.75, 0.75, xp.sin(v) * 3.0) ** 2)

    close(sg.grad(loss(np, sgf))(x), jax.jit(jax.grad(loss(jnp, jf)))(x))
    inner_sg = lambda v: sgf(-0.75, 0.75, np.sin(v) * 3.0)  # noqa: E731
    inner_j = lambda v: jf(-0.75, 0.75, jnp.sin(v) * 3.0)  # noqa: E731
    # jacrev seeds with an identity: bwd is not linear, so its rows run in a loop
    close(sg.jacrev(inner_sg)(x), jax.jit(jax.jacrev(inner_j))(x))
    close(sg.jacrev(sg.jacrev(lambda v: inner_sg(v) * v))(x),  # the loop, differentiated
          jax.jit(jax.jacrev(jax.jacrev(lambda v: inner_j(v) * v)))(x))
    second = jax.jit(jax.jacrev(jax.jacrev(loss(jnp, jf))))(x)  # the outer sees fwd's code: x
    close(sg.jacrev(sg.jacrev(loss(np, sgf)))(x), second)
    close(sg.hessian(loss(np, sgf))(x), second)  # reverse over reverse
    close(sg.grad(lambda v: np.sum(sg.grad(loss(np, sgf))(v) * v))(x),
          jax.jit(jax.grad(lambda v: jnp.sum(jax.grad(loss(jnp, jf))(v) * v)))(x))


def test_forward_mode_through_a_nonlinear_bwd_is_refused_as_in_jax(x):
    sgf, jf = clip_gradient_for(np, sg), clip_gradient_for(jnp, jax)
    with pytest.raises(TypeError):  # JAX: "can't apply forward-mode autodiff (jvp) to a
        jax.jit(jax.jacfwd(lambda v: jf(-1.0, 1.0, v)))(x)  # custom_vjp function"
    with pytest.raises(sg.DifferentiationError, match=r"clip_gradient .*sg\.jacrev"):
        sg.jacfwd(lambda v: sgf(-1.0, 1.0, v) ** 2)(x)
    # jacfwd of jacrev: the outer transform sees fwd's code (the identity), as JAX's
    # jacrev of jacrev does; JAX itself refuses jacfwd here
    close(sg.jacfwd(sg.jacrev(lambda v: np.sum(sgf(-1.0, 1.0, v) ** 2)))(x),
          jax.jit(jax.jacrev(jax.jacrev(lambda v: jnp.sum(jf(-1.0, 1.0, v) ** 2))))(x))


def test_a_linear_bwd_gives_forward_mode_by_transposition_and_grad_of_grad(x):
    sgf, jf = double_sin_for(np, sg), double_sin_for(jnp, jax)

    def loss(xp, f):
        return lambda v: xp.sum(f(v) * v[::-1])

    close(sg.grad(loss(np, sgf))(x), jax.jit(jax.grad(loss(jnp, jf)))(x))
    close(sg.grad(loss(np, sgf))(x), 2.0 * np.cos(x) * x[::-1] + np.sin(x)[::-1])
    rev = jax.jit(jax.jacrev(jax.jacrev(loss(jnp, jf))))(x)  # JAX has no forward mode here
    close(sg.hessian(loss(np, sgf))(x), rev)
    close(sg.jacrev(sg.jacrev(loss(np, sgf)))(x), rev)
    close(sg.jacfwd(sgf)(x), np.diag(2.0 * np.cos(x)))
    close(sg.grad(sg.grad(lambda t: sgf(t) * t))(0.3),
          jax.jit(jax.grad(jax.grad(lambda t: jf(t) * t)))(0.3))


def test_pytrees_in_arguments_results_and_residuals(rng, x):
    sgf, jf = layer_for(np, sg), layer_for(jnp, jax)
    params = {"w": rng.standard_normal(4), "b": rng.standard_normal(4)}

    def loss(xp, f):
        def g(p, v):
            h, s = f(p, v)
            return xp.sum(h * v) + 0.5 * s
        return g

    close(sg.grad(loss(np, sgf), (0, 1))(params, x),
          jax.jit(jax.grad(loss(jnp, jf), (0, 1)))(params, x))
    close(sg.jacrev(lambda p: sgf(p, x))(params),
          jax.jit(jax.jacrev(lambda p: jf(p, x)))(params))
    # bwd is linear in g: forward mode by its transpose (JAX has none: compare jacrev)
    close(sg.jacfwd(lambda p: sgf(p, x))(params), jax.jit(jax.jacrev(lambda p: jf(p, x)))(params))
    close(sg.jacrev(sg.grad(loss(np, sgf)))(params, x),
          jax.jit(jax.jacrev(jax.grad(loss(jnp, jf))))(params, x))


def test_backends_write_the_primal(x):
    log1pexp, clip = log1pexp_for(np, sg), clip_gradient_for(np, sg)

    def loss(v):
        return np.sum(log1pexp(clip(-0.5, 0.5, v * 2.0)) * v)

    want = sg.grad(loss)(x)
    for backend in ("array_api", "jax"):
        got = sg.grad(loss, backend=backend)(x)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    torch = pytest.importorskip("torch")
    w = sg.var("w", shape=(4,))
    fn = sg.compile(sg.grad(loss(w), w), backend="torch")
    np.testing.assert_allclose(fn(torch.asarray(x)).numpy(), want, rtol=1e-13)
    v = sg.var("v")
    e = log1pexp(v)
    fn = sg.compile([e, sg.grad(e, v)], scalars="math")
    assert fn(0.0) == pytest.approx([np.log(2.0), 0.5], rel=1e-15)
    assert fn(0.0)[0] == sg.evaluate(e, {"v": 0.0})


def test_inside_a_scan_step():
    f = double_sin_for(np, sg)

    def run(w):
        c, _ = sg.scan(lambda c, _: (f(c * w), None), w, length=3)
        return c

    w0, h = 0.7, 1e-6
    got = float(sg.grad(run)(w0))
    c, dc = w0, 1.0  # the rule's chain, by hand: c' = 2 cos(c w) (c w)'
    for _ in range(3):
        c, dc = np.sin(c * w0), 2.0 * np.cos(c * w0) * (dc * w0 + c)
    assert got == pytest.approx(dc, rel=1e-12)
    assert float(sg.jit(run)(w0)) == pytest.approx(c, rel=1e-15)
    assert abs(dc - (float(sg.jit(run)(w0 + h)) - float(sg.jit(run)(w0 - h))) / (2 * h)) > 0.1


# -- what is refused ------------------------------------------------------------------------


def test_a_rule_missing_or_malformed_is_named(x):
    @sg.custom_vjp
    def f(v):
        return np.sin(v)

    assert np.allclose(sg.jit(f)(x), np.sin(x))  # no rule needed without a derivative
    with pytest.raises(sg.DifferentiationError, match=r"f\.defvjp\(fwd, bwd\)"):
        sg.grad(lambda v: np.sum(f(v)))(x)
    f.defvjp(lambda v: (np.sin(v), v), lambda v, g: (g, g))
    with pytest.raises(sg.DifferentiationError, match="one cotangent per differentiated"):
        sg.grad(lambda v: np.sum(f(v)))(x)
    f.defvjp(lambda v: (np.sin(v), v), lambda v, g: (np.sum(g),))
    with pytest.raises(sg.DifferentiationError, match=r"bwd's cotangent has shape \(\)"):
        sg.grad(lambda v: np.sum(f(v)))(x)

    @sg.custom_jvp
    def h(v):
        return np.sin(v)

    with pytest.raises(sg.DifferentiationError, match=r"h\.defjvp\(jvp\)"):
        sg.grad(lambda v: np.sum(h(v)))(x)
    h.defjvp(lambda p, t: (np.sin(p[0]), t[0] * t[0]))  # not linear in the tangent
    with pytest.raises(sg.DifferentiationError, match="linear in the tangents"):
        sg.grad(lambda v: np.sum(h(v)))(x)
    np.testing.assert_allclose(sg.jvp(lambda v: h(v), (x,), (x,))[1], x * x)  # as JAX
    with pytest.raises(sg.UnsupportedError, match="symbolic_zeros"):
        h.defjvp(lambda p, t: p, symbolic_zeros=True)
    with pytest.raises(sg.ArgumentError, match="nondiff_argnums"):
        partial(sg.custom_jvp, nondiff_argnums=(0,))(lambda a, b: b).defjvps(None, None)
    with pytest.raises(sg.ArgumentError, match="nondiff_argnums"):
        sg.custom_vjp(np.sin, nondiff_argnums="0")


def test_a_closure_over_a_differentiated_value_is_refused(x):
    def outer(w):
        @sg.custom_jvp
        def scaled(v):
            return v * w

        scaled.defjvps(lambda t, out, v: t * w)
        return np.sum(scaled(x))

    with pytest.raises(sg.DifferentiationError, match="pass that value to scaled as an"):
        sg.grad(outer)(1.5)

    def fine(w):  # the same rule with w an argument
        @sg.custom_jvp
        def scaled(v, s):
            return v * s

        scaled.defjvps(lambda t, out, v, s: t * s, lambda t, out, v, s: t * v)
        return np.sum(scaled(x, w))

    assert float(sg.grad(fine)(1.5)) == pytest.approx(np.sum(x), rel=1e-14)
