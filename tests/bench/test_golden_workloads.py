"""Golden emitted source for small versions of the benchmark workloads, written as users
write them: W1 with a hand-written max-shifted log-softmax, W2 with a hand-written
log-sum-exp, W3's gradient and Hessian-vector product. The files show what the passes do
(the idioms' backprop reusing the forward ``exp(a - m)`` and its sum, no gradient of the
shift ``m``; scatters as concatenate; scalars collected). Regenerate with
``SYMGRAD_REGEN_GOLDEN=1 pytest tests/bench/test_golden_workloads.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from tests.support.golden_files import GOLDEN, check_golden

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import w2_gmm_user, w3_rosenbrock  # noqa: E402


def w1_user():
    """The notes' network, batched, with log-softmax written out max-shifted."""
    W, b = sg.var("W", (3, 5)), sg.var("b", (3,))
    V, g = sg.var("V", (2, 3)), sg.var("g", (2,))
    X, onehot = sg.var("X", (4, 5)), sg.var("onehot", (4, 2))
    s = sg.tanh(X @ W.T + b) @ V.T + g
    m = sg.max(s, axis=1, keepdims=True)
    logp = s - m - sg.log(sg.sum(sg.exp(s - m), axis=1, keepdims=True))
    loss = -sg.sum(onehot * logp)
    return [loss, *sg.grad(loss, [W, b, V, g])], ["W", "b", "V", "g", "X", "onehot"]


def w2_user():
    f, params, data = w2_gmm_user.symgrad_loss(w2_gmm_user.SMOKE_CONFIG)
    return [f, *sg.grad(f, list(params))], [e.name for e in (*params, *data)]


def w3():
    f, (x,), _ = w3_rosenbrock.symgrad_loss(w3_rosenbrock.SMOKE_CONFIG)
    v = sg.var("v", x.shape)
    return [f, sg.grad(f, x), sg.hvp(f, x, v)], ["x", "v"]


CASES = {"w1_user_grad.py": w1_user, "w2_user_grad.py": w2_user, "w3_grad_hvp.py": w3}


@pytest.mark.parametrize("filename", sorted(CASES))
def test_golden_workload_source(filename):
    outs, inputs = CASES[filename]()
    check_golden(filename, sg.to_source(outs, inputs=inputs, name=filename[:-3]))


def test_golden_workloads_show_the_idioms():
    w1 = (GOLDEN / "w1_user_grad.py").read_text().split("def w1_user_grad")[1]
    body = w1.split('"""')[-1]
    assert "== " not in body and "np.where" not in body  # no gradient of the max-shift
    w2 = (GOLDEN / "w2_user_grad.py").read_text().split('"""')[-1]
    assert "np.where" not in w2 and "np.concatenate" in w2
    assert "_sg_scatter_sum" not in w2


@pytest.mark.parametrize("filename", sorted(CASES))
def test_golden_workload_values(filename):
    outs, inputs = CASES[filename]()
    rng = np.random.default_rng(7)
    graph = outs[0].graph
    at = {}
    for name in inputs:
        n = graph.nodes[graph.variables[name]]
        at[name] = rng.normal(size=n.shape)
    ns: dict = {}
    exec(compile((GOLDEN / filename).read_text(), filename, "exec"), ns)  # our golden text
    got = ns[filename[:-3]](*[at[n] for n in inputs])
    want = sg.evaluate(outs, at)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
