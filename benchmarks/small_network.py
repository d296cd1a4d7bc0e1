"""The notes' network at its own size (W 4x3, V 2x4): hand-written NumPy value+gradient vs
symgrad's emitted source vs ``sg.evaluate``, in one process.

Run: ``python -m benchmarks.small_network``. At this size per-call overhead dominates; the
batched version of the same network is workload W1 of ``make bench``.
"""

from __future__ import annotations

import timeit

import numpy as np

import symgrad as sg
from symgrad.cli.demo import DTYPES, INPUTS, NETWORK, SHAPES, WRT, example_inputs


def hand(W, x, b, V, g, y):
    """Value and gradients (W, b, V, g) of -log_softmax(V @ tanh(W @ x + b) + g)[y]."""
    h = np.tanh(W @ x + b)
    logits = V @ h + g
    shifted = logits - logits.max()
    e = np.exp(shifted)
    s = e.sum()
    dl = e / s
    dl[y] -= 1.0
    dz = (V.T @ dl) * (1.0 - h * h)
    return np.log(s) - shifted[y], np.outer(dz, x), dz, np.outer(dl, h), dl


def main() -> None:
    at = example_inputs()
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes=DTYPES)
    outs = [f, *sg.grad(f, WRT)]
    fn = sg.compile(outs, inputs=INPUTS).raw
    args = [at[k] for k in INPUTS]
    for a, b in zip(hand(*args), fn(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)

    def best(call, number):
        return min(timeit.repeat(call, number=number, repeat=7)) / number * 1e6

    t_hand = best(lambda: hand(*args), 2000)
    t_emit = best(lambda: fn(*args), 2000)
    t_eval = best(lambda: sg.evaluate(outs, at), 200)
    print(f"hand-written NumPy {t_hand:6.1f} us")
    print(f"emitted source     {t_emit:6.1f} us ({t_emit / t_hand:.2f}x)")
    print(f"sg.evaluate        {t_eval:6.1f} us ({t_eval / t_hand:.2f}x)")


if __name__ == "__main__":
    main()
