"""One graph built, differentiated and evaluated from several threads at once: the same
nodes, values and gradients as one thread gets, a graph that verifies, and no transform's
rewrite passes, provenance or budget leaking into what another thread builds."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

import symgrad as sg

THREADS = 8


@pytest.fixture(autouse=True)
def contention():
    """Switch threads as often as CPython allows, so that races show."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _run(workers: list[Callable[[], object]]) -> list[object]:
    start = threading.Barrier(len(workers))
    results: list[object] = [None] * len(workers)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            start.wait()
            results[k] = workers[k]()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _model(x: sg.Expr, w: sg.Expr, k: int) -> sg.Expr:
    """A chain that differs a little per thread and shares most of its nodes."""
    h = x
    for i in range(30):
        h = sg.tanh(w[i % 3] * h + float((i + k) % 4)) + sg.sin(h) * 0.5
    return sg.sum(h * h)


def test_extending_one_graph_from_many_threads_gives_the_one_thread_result():
    graph = sg.Graph()
    x, w = graph.expr(graph.var("x", (4,))), graph.expr(graph.var("w", (3,)))
    at = {"x": np.linspace(-1, 1, 4), "w": np.array([0.3, -0.7, 1.1])}

    def worker(k: int) -> Callable[[], tuple]:
        def work():
            f = _model(x, w, k)
            gx, gw = sg.grad(f, [x, w])
            return sg.evaluate([f, gx, gw], at)

        return work

    got = _run([worker(k) for k in range(THREADS)])
    graph.verify()
    keys = [(n.op, n.args, sg.ir.values.freeze(n.attrs)) for n in graph.nodes if not n.is_var]
    assert len(keys) == len(set(keys)), "a node was built twice"
    for k in range(THREADS):  # the same numbers one thread gets, in a fresh graph
        x1, w1 = sg.var("x", shape=(4,)), sg.var("w", shape=(3,))
        f = _model(x1, w1, k)
        want = sg.evaluate([f, *sg.grad(f, [x1, w1])], at)
        for a, b in zip(got[k], want):
            np.testing.assert_array_equal(a, b)


def test_a_transform_in_one_thread_does_not_rewrite_another_threads_nodes():
    """While threads differentiate (rewrite passes installed, provenance set), other
    threads build forward nodes in the same graph: those stay exactly as written."""
    x = sg.var("x", shape=(5,))
    graph = x.graph
    seen: list[tuple[str, str, object]] = []

    def differentiate():
        for k in range(40):
            f = sg.sum(sg.where(x > 0, sg.sqrt(x), 0.0) * float(k + 2))
            sg.grad(f, x)

    def build_forward(k: int):
        def work():
            for i in range(200):
                c = float(i * THREADS + k + 3)
                e = (x * 1.0 + c) * 1.0  # x * 1 would fold if a pass leaked in
                n = graph.nodes[e.node]
                seen.append((n.op, n.role, n.origin))
        return work

    _run([differentiate, differentiate] + [build_forward(k) for k in range(THREADS - 2)])
    assert seen and all(s == ("multiply", "forward", None) for s in seen), \
        [s for s in seen if s != ("multiply", "forward", None)][:5]
    graph.verify()


def test_evaluate_and_compiled_functions_from_many_threads():
    x = sg.var("x", shape=(50,))
    f = sg.sum(sg.log1p(sg.exp(x)) * x)
    g = sg.grad(f, x)
    fn = sg.compile([f, g])
    rng = np.random.default_rng(7)
    inputs = [rng.normal(size=50) for _ in range(THREADS)]

    def worker(k: int):
        return lambda: [(sg.evaluate([f, g], {"x": inputs[k]}), fn(inputs[k]))
                        for _ in range(20)]

    for k, rounds in enumerate(_run([worker(k) for k in range(THREADS)])):
        want = np.logaddexp(0, inputs[k]) * inputs[k]
        for (ev_f, ev_g), (c_f, c_g) in rounds:
            assert ev_f == pytest.approx(want.sum(), rel=1e-13) and c_f == ev_f
            np.testing.assert_array_equal(ev_g, c_g)


def test_a_budget_in_one_thread_does_not_stop_another():
    x = sg.var("x")
    h = x
    for _ in range(50):
        h = sg.sin(h) * h
    outcome = {}

    def tight():
        with sg.limits(transform_nodes=5):
            try:
                sg.derivative(h, x, 3)
                outcome["tight"] = "finished"
            except sg.LimitError:
                outcome["tight"] = "stopped"

    def free():
        outcome["free"] = sg.evaluate(sg.derivative(h * 1.0, x, 2), {"x": 0.3})

    _run([tight, free, tight, free])
    assert outcome["tight"] == "stopped" and np.isfinite(outcome["free"])
    x.graph.verify()
