"""W3: the extended Rosenbrock function: gradient, Hessian-vector product, full Hessian.

``f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2`` (the chained form, as
``scipy.optimize.rosen``), at n=100 and n=1000. The hand-written gradient, HVP and
tridiagonal Hessian are written out below; the smoke test also checks them against SciPy's
``rosen_der``/``rosen_hess_prod``/``rosen_hess``.
"""

from __future__ import annotations

import numpy as np

from . import common

TITLE = "W3 extended Rosenbrock"
CONFIGS = {"n100": {"n": 100}, "n1000": {"n": 1000}}
SMOKE_CONFIG = {"n": 7}
PARAMS = ("x",)
DATA = ()


def inputs(cfg: dict, seed: int = 0) -> tuple[tuple, tuple]:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.0, 2.0, cfg["n"]),), ()


def direction(cfg: dict, seed: int = 1) -> np.ndarray:
    """The vector ``v`` of the Hessian-vector product."""
    return np.random.default_rng(seed).standard_normal(cfg["n"])


def numpy_forward(params: tuple, data: tuple, cfg: dict) -> float:
    (x,) = params
    a, b = x[:-1], x[1:]
    return float(np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2))


def numpy_grad(params: tuple, data: tuple, cfg: dict) -> tuple[float, tuple]:
    (x,) = params
    a, b = x[:-1], x[1:]
    r = b - a * a
    value = float(np.sum(100.0 * r * r + (1.0 - a) ** 2))
    out = np.zeros_like(x)
    out[:-1] = -400.0 * r * a - 2.0 * (1.0 - a)
    out[1:] += 200.0 * r
    return value, (out,)


def _hess_bands(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = x[:-1], x[1:]
    diag = np.zeros_like(x)
    diag[:-1] = 1200.0 * a * a - 400.0 * b + 2.0
    diag[1:] += 200.0
    return diag, -400.0 * a


def numpy_hvp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Hand-written ``H v`` from the Hessian's three bands."""
    diag, off = _hess_bands(x)
    out = diag * v
    out[:-1] += off * v[1:]
    out[1:] += off * v[:-1]
    return out


def numpy_hessian(x: np.ndarray) -> np.ndarray:
    diag, off = _hess_bands(x)
    n = x.size
    H = np.zeros((n, n))
    i = np.arange(n)
    H[i, i] = diag
    H[i[:-1], i[1:]] = off
    H[i[1:], i[:-1]] = off
    return H


def _generic(xp, x):
    a, b = x[:-1], x[1:]
    return xp.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)


def symgrad_loss(cfg: dict):
    import symgrad as sg

    x = sg.var("x", (cfg["n"],))
    return _generic(sg, x), (x,), ()


def jax_loss(jax, cfg: dict):
    return lambda params, data: _generic(jax.numpy, params[0])


def torch_loss(torch, cfg: dict):
    return lambda params, data: _generic(torch, params[0])


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp

    return lambda params, data: _generic(anp, params[0])


# --- the second-order tasks: one function per system returning (hvp, hessian, build times) --


def second_order(system: str, cfg: dict, budget: float) -> list[dict]:
    """Rows for the ``hvp`` and ``hessian`` tasks of ``system`` (``symgrad`` includes NumPy)."""
    (x,), _ = inputs(cfg)
    v = direction(cfg)
    ref_hv, ref_h = numpy_hvp(x, v), numpy_hessian(x)
    makers = {"symgrad": _sg_fns, "jax": _jax_fns, "torch": _torch_fns, "autograd": _ag_fns}
    fns = makers[system](cfg, x, v)
    rows = []
    if system == "symgrad":
        t_hand, t_sg, t_hand_h, t_sg_h = common.interleaved(
            [lambda: numpy_hvp(x, v), fns["hvp"], lambda: numpy_hessian(x), fns["hessian"]],
            budget,
        )
        rows.append(_row("numpy", "hvp", t_hand, 0.0, None))
        rows.append(_row("numpy", "hessian", t_hand_h, 0.0, None))
        rows.append(_row("symgrad", "hvp", t_sg, common.rel_err(fns["hvp"](), ref_hv),
                         fns["hvp_build"], vs_numpy=common.paired_ratio(t_sg, t_hand)))
        rows.append(_row("symgrad", "hessian", t_sg_h,
                         common.rel_err(fns["hessian"](), ref_h), fns["hessian_build"],
                         vs_numpy=common.paired_ratio(t_sg_h, t_hand_h)))
        return rows
    t_hv, t_h = common.interleaved([fns["hvp"], fns["hessian"]], budget)
    rows.append(_row(system, "hvp", t_hv, common.rel_err(fns["hvp"](), ref_hv), fns["hvp_build"]))
    rows.append(_row(system, "hessian", t_h, common.rel_err(fns["hessian"](), ref_h),
                     fns["hessian_build"]))
    return rows


def _row(system, task, samples, err, build, **extra):
    row = {"system": system, "task": task, "time_s": common.median(samples), "err": err,
           "build_s": build, "samples": int(len(samples))}
    row.update(extra)
    return row


def _sg_fns(cfg, x, v):
    import symgrad as sg

    from .gradcell import sg_compile

    def build_hvp():
        f, (xv,), _ = symgrad_loss(cfg)
        vv = sg.var("v", xv.shape)
        return sg_compile(sg.hvp(f, xv, vv), [xv, vv])

    def build_hessian():
        f, (xv,), _ = symgrad_loss(cfg)
        return sg_compile(sg.hessian(f, xv), [xv])

    t_hv, hv = common.once(build_hvp)
    t_h, h = common.once(build_hessian)
    return {"hvp": lambda: hv(x, v), "hessian": lambda: h(x),
            "hvp_build": t_hv, "hessian_build": t_h}


def _jax_fns(cfg, x, v):
    jax = common.load("jax")
    f = lambda y: _generic(jax.numpy, y)  # noqa: E731
    hvp = jax.jit(lambda y, w: jax.jvp(jax.grad(f), (y,), (w,))[1])
    hess = jax.jit(jax.hessian(f))
    xj, vj = jax.numpy.asarray(x), jax.numpy.asarray(v)
    t_hv, _ = common.once(lambda: hvp(xj, vj).block_until_ready())
    t_h, _ = common.once(lambda: hess(xj).block_until_ready())
    return {"hvp": lambda: hvp(xj, vj).block_until_ready(),
            "hessian": lambda: hess(xj).block_until_ready(),
            "hvp_build": t_hv, "hessian_build": t_h}


def _torch_fns(cfg, x, v):
    torch = common.load("torch")
    f = lambda y: _generic(torch, y)  # noqa: E731
    xt, vt = torch.from_numpy(x.copy()), torch.from_numpy(v.copy())

    def hvp():
        y = xt.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(f(y), y, create_graph=True)
        (hv,) = torch.autograd.grad(g, y, grad_outputs=vt)
        return hv.numpy()

    hessian = lambda: torch.func.hessian(f)(xt).numpy()  # noqa: E731
    t_hv, _ = common.once(hvp)
    t_h, _ = common.once(hessian)
    return {"hvp": hvp, "hessian": hessian, "hvp_build": t_hv, "hessian_build": t_h}


def _ag_fns(cfg, x, v):
    autograd = common.load("autograd")
    import autograd.numpy as anp

    f = lambda y: _generic(anp, y)  # noqa: E731
    hvp_fn = autograd.hessian_vector_product(f)
    hess_fn = autograd.hessian(f)
    t_hv, _ = common.once(lambda: hvp_fn(x, v))
    t_h, _ = common.once(lambda: hess_fn(x))
    return {"hvp": lambda: hvp_fn(x, v), "hessian": lambda: hess_fn(x),
            "hvp_build": t_hv, "hessian_build": t_h}


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    """The gradient rows (as every workload) plus the ``hvp`` and ``hessian`` rows."""
    import sys

    from . import gradcell

    rows = gradcell.measure(sys.modules[__name__], cfg, system, budget / 2)
    return rows + second_order(system, cfg, budget / 2)


def pytensor_loss(pt, cfg: dict):
    """(loss, params, data) as PyTensor variables of static shapes."""
    x = pt.tensor("x", shape=(cfg["n"],))
    return _generic(pt, x), (x,), ()
