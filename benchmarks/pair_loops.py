"""The Lennard-Jones energy of LJ38 written as users write it, a double loop over the atom
pairs, and its Hessian (the loops issue's target: built in at most 1 s).

Cells, one process, one thread: symgrad's ``sg.hessian(energy)`` of the double loop, built
and called once (trace, the loop passes, both derivatives, compile; the inner loops reduce
to one ``sum`` each, so the Hessian graph grows with the atoms, not the pairs), then the same
with the vectorised energy (``r[:, None] - r[None]`` and ``triu_indices``), and JAX's
``jax.jit(jax.hessian(...))`` of the vectorised energy (trace and compile: its first call).
Every Hessian is checked against JAX's before it is timed.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python -m benchmarks.pair_loops``.
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
N = 38


def loop_energy(x, n: int = N):
    """The double loop over the pairs (``x`` a flat array of positions)."""
    import symgrad.numpy as snp

    r = x.reshape(n, 3)
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = r[i] - r[j]
            inv6 = 1.0 / snp.sum(d * d) ** 3
            e = e + 4.0 * (inv6 ** 2 - inv6)
    return e


def vector_energy(x, xp, n: int = N):
    """The same energy without loops, on the array namespace ``xp``."""
    r = x.reshape(n, 3)
    iu = np.triu_indices(n, 1)
    inv6 = 1.0 / xp.sum((r[:, None] - r[None]) ** 2, axis=-1)[iu] ** 3
    return xp.sum(4.0 * (inv6 ** 2 - inv6))


def _timed(fn, x) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    out = np.asarray(fn(x))
    return time.perf_counter() - t0, out


def measure(n: int = N, seed: int = 0) -> dict:
    """Build-and-first-call seconds per cell, and each Hessian's largest relative error."""
    import jax
    import jax.numpy as jnp

    import symgrad as sg
    import symgrad.numpy as snp

    jax.config.update("jax_enable_x64", True)
    pos = np.random.default_rng(seed).standard_normal(3 * n) * 2.0
    t_jax, want = _timed(jax.jit(jax.hessian(lambda v: vector_energy(v, jnp, n))), pos)
    t_loop, h_loop = _timed(sg.hessian(lambda v: loop_energy(v, n)), pos)
    t_vec, h_vec = _timed(sg.hessian(lambda v: vector_energy(v, snp, n)), pos)
    scale = np.abs(want).max()
    return {"atoms": n, "pairs": n * (n - 1) // 2,
            "symgrad double loop s": round(t_loop, 3),
            "symgrad vectorised s": round(t_vec, 3), "jax jit(hessian) s": round(t_jax, 3),
            "error loop": float(np.abs(h_loop - want).max() / scale),
            "error vectorised": float(np.abs(h_vec - want).max() / scale)}


def main() -> None:
    import symgrad as sg

    _ = sg.var  # import the compiler before timing (its import is not build time)
    print(measure())


if __name__ == "__main__":
    main()
