"""W2 as users write it: the GMM objective of :mod:`.w2_gmm` with the log-sum-exp written
out max-shifted, as in the hand-written NumPy code (``m + log(sum(exp(a - m)))``), in every
system: no symgrad-only op. The hand-written NumPy value and gradient are W2's.
"""

from __future__ import annotations

from . import w2_gmm
from .w2_gmm import (  # noqa: F401 - the workload interface, shared with W2
    CONFIGS,
    DATA,
    PARAMS,
    SMOKE_CONFIG,
    _generic,
    inputs,
    numpy_forward,
    numpy_grad,
    scatter,
)

TITLE = "W2 GMM as users write it (max-shifted log-sum-exp by hand)"


def lse(xp, a, axis: int, amax=None, squeeze=None):
    """``max + log(sum(exp(a - max)))`` over ``axis``, the spelling of the NumPy reference."""
    mx = (amax or xp.max)(a, axis=axis, keepdims=True)
    return (squeeze or xp.squeeze)(mx, axis) + xp.log(xp.sum(xp.exp(a - mx), axis=axis))


def symgrad_loss(cfg: dict):
    import symgrad as sg

    return w2_gmm.symgrad_loss(cfg, lambda a, ax: lse(sg, a, ax))


def jax_loss(jax, cfg: dict):
    jnp = jax.numpy
    consts = tuple(jnp.asarray(c) for c in scatter(cfg["d"]))
    return lambda params, data: _generic(jnp, params, data, cfg, consts,
                                         lambda a, ax: lse(jnp, a, ax), jnp.reshape,
                                         lambda a: jnp.swapaxes(a, 1, 2))


def torch_loss(torch, cfg: dict):
    consts = tuple(torch.from_numpy(c) for c in scatter(cfg["d"]))

    def amax(a, axis, keepdims):
        return torch.amax(a, dim=axis, keepdim=keepdims)

    def torch_lse(a, ax):
        mx = amax(a, ax, True)
        return torch.squeeze(mx, ax) + torch.log(torch.sum(torch.exp(a - mx), dim=ax))

    return lambda params, data: _generic(torch, params, data, cfg, consts, torch_lse,
                                         torch.reshape, lambda a: a.transpose(1, 2))


def autograd_loss(autograd, cfg: dict):
    import autograd.numpy as anp

    consts = scatter(cfg["d"])
    return lambda params, data: _generic(anp, params, data, cfg, consts,
                                         lambda a, ax: lse(anp, a, ax), anp.reshape,
                                         lambda a: anp.swapaxes(a, 1, 2))
