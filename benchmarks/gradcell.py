"""One measurement cell of a gradient workload (W1, W2, W3's gradient, W5) for one system.

A workload module provides ``inputs(cfg)``, ``numpy_forward``/``numpy_grad(params, data,
cfg)``, ``symgrad_loss(cfg)`` and ``jax_loss``/``torch_loss``/``autograd_loss(lib, cfg)``
(each a function ``loss(params, data)``). The ``symgrad`` cell measures the hand-written
NumPy code and symgrad (emitted source and ``sg.evaluate``) interleaved in one process, so
``vs_numpy`` is a paired ratio. Rows: ``system, task, forward_s, grad_s, grad_over_fwd``
(paired median), ``build_s`` (symgrad: expression + grad + source + compile; JAX: trace + jit
first call), ``first_call_s`` (eager systems), ``err`` (max relative error of the gradient
against the hand-written one), ``value_err``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import common


def sg_compile(outputs: Any, inputs: list, **options: Any) -> Any:
    """``sg.compile`` and the unchecked generated function (``.raw``) when there is one."""
    import symgrad as sg

    fn = sg.compile(outputs, inputs=inputs, **options)
    return getattr(fn, "raw", fn)


def build_symgrad(mod: Any, cfg: dict) -> tuple[Any, Any, list]:
    """(gradient function returning [f, *grads], the Exprs [f, *grads], input names).

    This is what ``build_s`` times: expression, reverse pass, source, compile.
    """
    import symgrad as sg

    f, params, data = mod.symgrad_loss(cfg)
    grads = sg.grad(f, list(params))
    grad_fn = sg_compile([f, *grads], [*params, *data])
    return grad_fn, [f, *grads], [e.name for e in (*params, *data)]


def _row(system, t_fwd, t_grad, err, value_err, **extra) -> dict:
    row = {
        "system": system, "task": "grad",
        "forward_s": common.median(t_fwd), "grad_s": common.median(t_grad),
        "grad_over_fwd": common.paired_ratio(t_grad, t_fwd),
        "err": err, "value_err": value_err, "samples": int(len(t_grad)),
    }
    row.update(extra)
    return row


def measure(mod: Any, cfg: dict, system: str, budget: float) -> list[dict]:
    params, data = mod.inputs(cfg)
    ref_value, ref_grads = mod.numpy_grad(params, data, cfg)
    return {"symgrad": _symgrad, "jax": _jax, "torch": _torch, "autograd": _autograd}[system](
        mod, cfg, params, data, ref_value, ref_grads, budget
    )


def _value_err(got: float, ref: float) -> float:
    return abs(float(got) - ref) / max(abs(ref), 1e-300)


def _symgrad(mod, cfg, params, data, ref_value, ref_grads, budget) -> list[dict]:
    import symgrad as sg

    args = (*params, *data)
    np_fwd = lambda: mod.numpy_forward(params, data, cfg)  # noqa: E731
    np_grad = lambda: mod.numpy_grad(params, data, cfg)  # noqa: E731
    try:
        build_symgrad(mod, mod.SMOKE_CONFIG)  # warm-up: first-use imports, not this build
        build_s, (grad_fn, exprs, names) = common.once(lambda: build_symgrad(mod, cfg))
        fwd_fn = sg_compile(exprs[0], names)
    except Exception as exc:  # the symgrad side is broken: still measure NumPy
        t_f, t_g = common.interleaved([np_fwd, np_grad], budget)
        return [_row("numpy", t_f, t_g, 0.0, 0.0),
                {"system": "symgrad", "task": "grad", "error": f"{type(exc).__name__}: {exc}"}]
    t_nf, t_ng, t_sf, t_sg = common.interleaved(
        [np_fwd, np_grad, lambda: fwd_fn(*args), lambda: grad_fn(*args)], budget
    )
    out = grad_fn(*args)
    rows = [_row("numpy", t_nf, t_ng, 0.0, 0.0)]
    rows.append(_row(
        "symgrad", t_sf, t_sg, common.rel_err(list(out[1:]), list(ref_grads)),
        _value_err(out[0], ref_value), build_s=build_s,
        vs_numpy=common.paired_ratio(t_sg, t_ng),
        fwd_vs_numpy=common.paired_ratio(t_sf, t_nf),
    ))
    inputs = dict(zip(names, args))
    t_f, t_g = common.interleaved(
        [lambda: sg.evaluate(exprs[0], inputs), lambda: sg.evaluate(exprs, inputs)],
        budget / 2, min_samples=3,
    )
    out = sg.evaluate(exprs, inputs)
    rows.append(_row("symgrad-eval", t_f, t_g, common.rel_err(list(out[1:]), list(ref_grads)),
                     _value_err(out[0], ref_value)))
    return rows


def _jax(mod, cfg, params, data, ref_value, ref_grads, budget) -> list[dict]:
    jax = common.load("jax")
    loss = mod.jax_loss(jax, cfg)
    p = tuple(jax.numpy.asarray(a) for a in params)
    d = tuple(jax.numpy.asarray(a) for a in data)
    small = mod.inputs(mod.SMOKE_CONFIG)  # warm-up: JAX's first-use work, not this trace
    jax.block_until_ready(jax.jit(jax.value_and_grad(mod.jax_loss(jax, mod.SMOKE_CONFIG)))(
        *small))
    fwd = jax.jit(loss)
    vg = jax.jit(jax.value_and_grad(loss))
    build_s, _ = common.once(lambda: jax.block_until_ready(vg(p, d)))
    fwd_first, _ = common.once(lambda: jax.block_until_ready(fwd(p, d)))
    t_f, t_g = common.interleaved(
        [lambda: jax.block_until_ready(fwd(p, d)), lambda: jax.block_until_ready(vg(p, d))],
        budget,
    )
    value, grads = vg(p, d)
    return [_row("jax", t_f, t_g, common.rel_err([np.asarray(g) for g in grads], list(ref_grads)),
                 _value_err(value, ref_value), build_s=build_s, fwd_build_s=fwd_first)]


def _torch(mod, cfg, params, data, ref_value, ref_grads, budget) -> list[dict]:
    torch = common.load("torch")
    loss = mod.torch_loss(torch, cfg)
    p = [torch.from_numpy(np.array(a)).requires_grad_(True) for a in params]
    d = [torch.from_numpy(np.array(a)) for a in data]

    def fwd():
        with torch.no_grad():
            return loss(p, d)

    def vg():
        value = loss(p, d)
        return value, torch.autograd.grad(value, p)

    first, _ = common.once(vg)
    t_f, t_g = common.interleaved([fwd, vg], budget)
    value, grads = vg()
    return [_row("torch", t_f, t_g, common.rel_err([g.numpy() for g in grads], list(ref_grads)),
                 _value_err(value.item(), ref_value), first_call_s=first)]


def _autograd(mod, cfg, params, data, ref_value, ref_grads, budget) -> list[dict]:
    autograd = common.load("autograd")
    loss = mod.autograd_loss(autograd, cfg)
    vg_fn = autograd.value_and_grad(loss)
    p, d = tuple(params), tuple(data)
    first, _ = common.once(lambda: vg_fn(p, d))
    t_f, t_g = common.interleaved([lambda: loss(p, d), lambda: vg_fn(p, d)], budget)
    value, grads = vg_fn(p, d)
    return [_row("autograd", t_f, t_g, common.rel_err(list(grads), list(ref_grads)),
                 _value_err(value, ref_value), first_call_s=first)]
