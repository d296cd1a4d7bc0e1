"""``sg.vmap`` traced once for the batch against the loop it replaces (the function
compiled for one example and called once per example), in the same process, one thread.

Cases: per-example predictions of a small tanh network and per-example gradients of its
squared loss (``vmap(grad(loss), in_axes=(None, 0, 0))``, the differentially-private-SGD
pattern), at batch sizes 16 and 256. Both forms are sampled in turn in one loop; the
figures are the fastest sample of each and the paired median ratio (loop / batched).

Run: ``PYTHONPATH=. python -m benchmarks.vmap`` (prints one JSON line per case).
"""

from __future__ import annotations

import json

import numpy as np

from benchmarks import common


def net(params, x):
    h = np.tanh(params["W1"] @ x + params["b1"])
    return params["W2"] @ h


def loss(params, x, y):
    return np.sum((net(params, x) - y) ** 2)


def cases() -> list[tuple[str, list]]:
    import symgrad as sg
    from symgrad.functional.vmap import _vmap_call

    rng = np.random.default_rng(0)
    params = {"W1": rng.standard_normal((32, 8)), "b1": rng.standard_normal(32),
              "W2": rng.standard_normal((4, 32))}
    out = []
    for batch in (16, 256):
        X, Y = rng.standard_normal((batch, 8)), rng.standard_normal((batch, 4))
        for label, fun, args, axes in (
                ("predictions", sg.jit(net), (params, X), (None, 0)),
                ("per-example gradients", sg.grad(loss), (params, X, Y), (None, 0, 0))):
            mapped = sg.vmap(fun, in_axes=axes)
            assert mapped.vectorised(*args)
            want = _vmap_call(fun, args, axes, 0)
            got = mapped(*args)
            for a, b in zip(common_leaves(got), common_leaves(want)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            out.append((f"vmap {label} batch={batch}", [
                lambda m=mapped, a=args: m(*a),
                lambda f=fun, a=args, ax=axes: _vmap_call(f, a, ax, 0)]))
    return out


def common_leaves(tree) -> list:
    from symgrad.tree_util import tree_leaves

    return [np.asarray(x) for x in tree_leaves(tree)]


def measure(budget: float = 3.0) -> list[dict]:
    rows = []
    for label, (batched, loop) in cases():
        t_batched, t_loop = common.interleaved([batched, loop], budget=budget,
                                               min_samples=21, max_samples=201)
        rows.append({
            "case": label,
            "batched_us": round(float(t_batched.min()) * 1e6, 1),
            "loop_us": round(float(t_loop.min()) * 1e6, 1),
            "speedup": round(float(t_loop.min() / t_batched.min()), 2),
            "paired_median_speedup": round(common.paired_ratio(t_loop, t_batched), 2),
        })
    return rows


if __name__ == "__main__":
    common.with_thread_env("benchmarks.vmap")
    for row in measure():
        print(json.dumps(row))
