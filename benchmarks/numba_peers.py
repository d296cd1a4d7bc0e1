"""The systems :mod:`.numba_backend` measures for one row, each built the same way: a
function ``make(...) -> System`` that builds the system's gradient (timing the build) and
returns the call to time and the arrays it computes (checked against the reference).

* ``numba`` / ``numpy``: symgrad's gradient compiled with ``backend="numba"`` /
  ``"numpy"``; the build is the expression (the workload's loss traced), ``sg.grad``, the
  passes, emitting, Numba's compile and the first call; the call is the unchecked function
  (``fn.raw``).
* ``hand``: the workload's hand-written NumPy value and gradient (no build).
* ``jax``: ``jax.jit(jax.grad(loss))`` (float64); the build is the first call: tracing,
  XLA's compile, the run. Loop rows: ``jax.jit(jax.value_and_grad)`` of ``lax.scan``.
* ``pytensor``: ``pytensor.function(params + data, pytensor.grad(loss, params),
  mode="NUMBA")`` called with ``trust_input = True`` (PyTensor's unchecked call, as
  symgrad's ``.raw``); the build is the graph, ``pytensor.grad``, the rewrites, Numba's
  compile and the first call, with PyTensor's Numba disk cache pointed at a fresh folder.
  Loop rows: ``pytensor.scan``.
* ``casadi`` (W3, W4): an ``SX`` expression, ``casadi.gradient`` and a ``casadi.Function``
  evaluated by CasADi's virtual machine; the build is all of that and the first call.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import common


@dataclass
class System:
    """A built system: ``call`` (timed), ``result()`` (arrays to check), build seconds."""

    call: Callable[[], Any]
    result: Callable[[], list]
    build_s: float
    extra: dict = field(default_factory=dict)


def _arrays(out: Any) -> list:
    return [np.asarray(a, dtype=np.float64) for a in out]


# --- symgrad ---------------------------------------------------------------------------------


def _forget_c_libraries(backend: str) -> None:
    """For ``backend="c"``: no library already loaded in this process is reused, so a cold
    build compiles and a warm one reads its library from the disk cache."""
    if backend == "c":
        from symgrad.backends.targets.c import build

        build._LOADED.clear()


def symgrad_grad(mod: Any, wcfg: dict, args: tuple, backend: str, cache: str) -> System:
    """symgrad's gradient of the workload's loss for ``backend``, cache folder ``cache``."""
    import symgrad as sg

    _forget_c_libraries(backend)
    os.environ["SYMGRAD_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    f, params, data = mod.symgrad_loss(wcfg)
    grads = sg.grad(f, list(params))
    fn = sg.compile(grads, inputs=[*params, *data], backend=backend)
    raw = fn.raw
    raw(*args)
    build = time.perf_counter() - t0
    return System(lambda: raw(*args), lambda: _arrays(raw(*args)), build,
                  {"fn": fn, "outputs": grads})


def symgrad_loop(model: Callable[[], tuple], backend: str, cache: str) -> System:
    """symgrad's value and gradient of a loop row (``model() -> (outs, inputs, args)``)."""
    import symgrad as sg

    _forget_c_libraries(backend)
    os.environ["SYMGRAD_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    outs, inputs, args = model()
    fn = sg.compile(outs, inputs, backend=backend)
    raw = fn.raw
    raw(*args)
    build = time.perf_counter() - t0
    return System(lambda: raw(*args), lambda: _arrays(raw(*args)), build,
                  {"fn": fn, "outputs": outs})


# --- JAX ---------------------------------------------------------------------------------------


def jax_grad(mod: Any, wcfg: dict, params: tuple, data: tuple) -> System:
    jax = common.load("jax")
    p = tuple(jax.numpy.asarray(a) for a in params)
    d = tuple(jax.numpy.asarray(a) for a in data)
    t0 = time.perf_counter()
    fn = jax.jit(jax.grad(mod.jax_loss(jax, wcfg)))
    jax.block_until_ready(fn(p, d))
    build = time.perf_counter() - t0
    return System(lambda: jax.block_until_ready(fn(p, d)), lambda: _arrays(fn(p, d)), build)


def jax_w4(L: int) -> System:
    jax = common.load("jax")
    jnp, lax = jax.numpy, jax.lax
    x = jnp.asarray(0.5)

    def f(x):
        h, _ = lax.scan(lambda h, _: (jnp.sin(h) * h + jnp.cos(h), None), x, None, length=L)
        return h

    t0 = time.perf_counter()
    fn = jax.jit(jax.value_and_grad(f))
    jax.block_until_ready(fn(x))
    build = time.perf_counter() - t0
    return System(lambda: jax.block_until_ready(fn(x)), lambda: _arrays(fn(x)), build)


def jax_rk4(steps: int, args: tuple) -> System:
    from . import loops

    jax = common.load("jax")
    jnp, lax = jax.numpy, jax.lax
    dt = 10.0 / steps

    def f(p, obs):
        def step(s, o):
            x, y = loops.rk4_step(s[0], s[1], (p[0], p[1], p[2], p[3]), dt)
            return (x, y), (x - o[0]) ** 2 + (y - o[1]) ** 2

        _, m = lax.scan(step, (jnp.asarray(loops.S0[0]), jnp.asarray(loops.S0[1])), obs)
        return jnp.sum(m)

    p, obs = jnp.asarray(args[:4]), jnp.asarray(args[4])
    t0 = time.perf_counter()
    fn = jax.jit(jax.value_and_grad(f))
    jax.block_until_ready(fn(p, obs))
    build = time.perf_counter() - t0

    def result():
        value, grad = fn(p, obs)
        return [np.asarray(value), *np.asarray(grad)]

    return System(lambda: jax.block_until_ready(fn(p, obs)), result, build)


# --- PyTensor ----------------------------------------------------------------------------------


def load_pytensor() -> Any:
    """PyTensor (its base compile folder: ``PYTENSOR_FLAGS``, set by the caller)."""
    import pytensor

    return pytensor


def _fresh_pytensor_cache() -> None:
    """Point PyTensor's Numba disk cache at an empty folder (a cold build)."""
    from pytensor.link.numba import cache

    path = Path(tempfile.mkdtemp(prefix="pytensor-numba-"))
    cache.NUMBA_CACHE_PATH = path


def _pytensor_function(inputs: list, outputs: list, args: tuple) -> Any:
    """The compiled function (unchecked calls), called once."""
    pytensor = load_pytensor()
    fn = pytensor.function(inputs, outputs, mode="NUMBA")
    fn.trust_input = True
    fn(*args)
    return fn


def pytensor_grad(mod: Any, wcfg: dict, args: tuple) -> System:
    pytensor = load_pytensor()
    import pytensor.tensor as pt

    _fresh_pytensor_cache()
    t0 = time.perf_counter()
    loss, params, data = mod.pytensor_loss(pt, wcfg)
    fn = _pytensor_function([*params, *data], pytensor.grad(loss, list(params)), args)
    build = time.perf_counter() - t0
    return System(lambda: fn(*args), lambda: _arrays(fn(*args)), build)


def pytensor_w4(L: int) -> System:
    pytensor = load_pytensor()
    import pytensor.tensor as pt

    _fresh_pytensor_cache()
    x0 = np.asarray(0.5)
    t0 = time.perf_counter()
    x = pt.dscalar("x")
    hs, _ = pytensor.scan(lambda h: pt.sin(h) * h + pt.cos(h), outputs_info=[x], n_steps=L)
    h = hs[-1]
    fn = _pytensor_function([x], [h, pytensor.grad(h, x)], (x0,))
    build = time.perf_counter() - t0
    return System(lambda: fn(x0), lambda: _arrays(fn(x0)), build)


# --- CasADi ------------------------------------------------------------------------------------


def casadi_rosenbrock(n: int, x0: np.ndarray) -> System:
    import casadi as ca

    t0 = time.perf_counter()
    x = ca.SX.sym("x", n)
    a, b = x[:-1], x[1:]
    f = ca.sum1(100.0 * (b - a ** 2) ** 2 + (1.0 - a) ** 2)
    fn = ca.Function("grad", [x], [ca.gradient(f, x)])
    fn(x0)
    build = time.perf_counter() - t0
    return System(lambda: fn(x0), lambda: [np.asarray(fn(x0)).ravel()], build)


def casadi_w4(L: int) -> System:
    import casadi as ca

    t0 = time.perf_counter()
    x = ca.SX.sym("x")
    h = x
    for _ in range(L):
        h = ca.sin(h) * h + ca.cos(h)
    fn = ca.Function("chain", [x], [h, ca.gradient(h, x)])
    fn(0.5)
    build = time.perf_counter() - t0
    return System(lambda: fn(0.5), lambda: [float(v) for v in fn(0.5)], build)
