"""The pipeline runs the stages, and each stage runs its passes in the order the registry
lists them: a probe records every pass as it runs (a whole-graph pass when it is called, a
rule pass when its rules are first offered a node), through every entry point — the loop
stage of the derivative transforms, reverse mode, ``compile``'s stages for each kind of
target, ``simplify`` with and without SymPy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.expr import Expr
from symgrad.passes import pipeline, registry
from symgrad.passes.context import Context
from symgrad.passes.pattern import Rule
from symgrad.passes.simplify import simplify

Record = tuple[str, str]  # (how it ran: "graph" or the role of the node offered, pass name)


def _probed(log: list[Record]) -> tuple:
    """Every pass of the registry, recording itself in ``log`` as it runs."""

    def whole(p):
        def run(graph, ids, ctx):
            log.append(("graph", p.name))
            return p.run(graph, ids, ctx)

        return dataclasses.replace(p, run=run)

    def rules(p):
        def first(n):  # offered every node before the pass's own rules; matches none
            log.append((n.graph._state.role, p.name))

        return dataclasses.replace(p, rules=(Rule(first, lambda **_: None), *p.rules))

    return tuple(whole(p) if p.run is not None else rules(p) for p in registry.PASSES)


@pytest.fixture
def log(monkeypatch) -> list[Record]:
    found: list[Record] = []
    monkeypatch.setattr(registry, "PASSES", _probed(found))
    return found


def _firsts(log: list[Record], kinds: set[str] | None = None) -> list[str]:
    """The pass names of ``log`` (of those kinds) in the order each first ran."""
    seen: dict[str, None] = {}
    for kind, name in log:
        if kinds is None or kind in kinds:
            seen.setdefault(name)
    return list(seen)


def _names(*stages: str) -> list[str]:
    return [p.name for s in stages for p in registry.query(s)]


def _loop_and_chain():
    """A traced loop (it rolls) whose result feeds a chain over ``x``'s elements (it
    reduces), with constants to fold and a product to reorder."""
    x, h0 = sg.var("x", shape=(12,)), sg.var("h")
    h = h0
    for _ in range(10):
        h = sg.sin(h) * h + sg.cos(h)
    total = h * 1.0
    for i in range(12):
        total = total + x[i] ** 2
    return total * 2.0 * 3.0, x, h0


def test_the_loop_stage_runs_its_passes_in_order(log):
    f, _, _ = _loop_and_chain()
    (out,) = pipeline.loop_stage([f])
    assert _firsts(log) == _names("loops") == ["reductions", "rolling"]
    ops = {out.graph.nodes[i].op for i in out.graph.ancestors([out.node])}
    assert {"scan", "sum"} <= ops


def test_reverse_mode_runs_the_loop_stage_then_the_reverse_stage(log):
    x = sg.var("x", shape=(3,))
    f = sg.sum(1 / (1 + sg.exp(-x)) * 1.0)
    g = sg.grad(f, x)
    assert _firsts(log) == _names("loops", "reverse")
    assert _firsts(log, {"graph"}) == ["reductions", "rolling", "idioms"]
    v = np.array([0.5, -1.0, 2.0])
    s = 1 / (1 + np.exp(-v))
    np.testing.assert_allclose(sg.evaluate(g, {"x": v}), s * (1 - s), rtol=1e-14)


@pytest.mark.parametrize("fast_math", [False, True])
@pytest.mark.parametrize("target", [(), ("promote",), ("arrays", "promote")])
def test_compile_runs_its_stages_in_order(log, fast_math, target):
    f, x, _ = _loop_and_chain()
    graph = f.graph
    g = sg.grad(f, x)
    del log[:]
    stages = pipeline.compile_stages(True, fast_math, target)
    first = ("loops", "fast_math") if fast_math else ("rolling", "compile")
    assert stages == (*first, *target, "calls")
    new, (ids,) = pipeline.optimize(graph, [[f.node, g.node]], fast_math, target)
    assert _firsts(log) == _names(*stages)
    xv = np.linspace(-1.0, 1.0, 12)
    want = sg.evaluate([f, g], {"x": xv, "h": 0.3})
    got = sg.evaluate([Expr(new, i) for i in ids], {"x": xv, "h": 0.3})
    for w, v in zip(want, got):
        np.testing.assert_allclose(v, w, rtol=1e-12)


def test_compile_without_optimizing_runs_only_what_the_target_needs(log):
    i, x = sg.var("i", dtype="int64"), sg.var("x", dtype="float32")
    e = i + x
    assert pipeline.compile_stages(False, False, ("arrays", "promote")) == ("promote", "calls")
    assert pipeline.compile_stages(False, True, ()) == ("calls",)
    fn = sg.compile(e, [i, x], optimize=False, backend="array_api")
    assert _firsts(log) == ["promote", "merge_calls"]
    assert fn(np.int64(3), np.float32(0.5)) == 3.5


def test_the_emitted_function_goes_through_the_same_stages(log):
    f, x, h = _loop_and_chain()
    src = sg.to_source([f], [x, h])
    assert _firsts(log) == _names("rolling", "compile", "calls")
    assert "def " in src


@pytest.mark.parametrize("sympy", [False, True])
def test_simplify_runs_sympy_then_its_stage_by_role(log, sympy):
    x = sg.var("x")
    f = sg.log(1 + sg.exp(x) * 1.0) + sg.sin(x) ** 2 + sg.cos(x) ** 2
    g = sg.grad(f, x)
    del log[:]
    fs, gs = simplify([f, g], sympy=sympy)
    assert _firsts(log, {"graph"}) == (["sympy"] if sympy else [])
    assert _firsts(log, {"forward"}) == _names("simplify")[:len(_firsts(log, {"forward"}))]
    assert set(_firsts(log, {"forward"})) == set(_names("simplify"))
    assert _firsts(log, {"adjoint"}) == _names("simplify_adjoint")
    for v in (0.3, -2.0):
        want = sg.evaluate([f, g], {"x": v})
        assert sg.evaluate([fs, gs], {"x": v}) == pytest.approx(want, rel=1e-12)


def test_every_stage_is_run_by_one_of_the_entry_points_above():
    """The tests above cover every stage of the registry."""
    covered = {"loops", "rolling", "reverse", "sympy", "compile", "fast_math", "simplify",
               "simplify_adjoint", "arrays", "promote", "calls"}
    assert covered == set(registry.STAGES)


def test_a_run_walks_each_graph_once_for_its_loop_passes(monkeypatch):
    """The reductions and the rolling walk the same outputs: one walk per run (on the
    context), none kept after it."""
    from symgrad.passes import steps

    walks = []
    real = steps.Walk.__init__

    def counted(self, graph, order):
        walks.append(len(order))
        real(self, graph, order)

    monkeypatch.setattr(steps.Walk, "__init__", counted)
    x = sg.var("x")
    f = sg.sin(x) * x  # nothing to reduce or roll: one walk serves both passes
    (out,) = pipeline.loop_stage([f])
    assert out.node == f.node and walks == [len(f.graph.ancestors([f.node]))]
    ctx = Context()
    assert ctx.walk(f.graph, [f.node]) is ctx.walk(f.graph, [f.node])
    assert Context().walk(f.graph, [f.node]) is not ctx.walk(f.graph, [f.node])


def test_what_the_rolling_found_is_kept_with_the_graph_not_the_run():
    """``compile`` after ``grad`` finds the loop ``grad`` rolled without searching again:
    the replacement is kept with the graph (emptied when a failed transform removes
    nodes), not in a module-level table."""
    h = x = sg.var("x")
    for _ in range(12):
        h = sg.sin(h) * h + sg.cos(h)
    (r1,) = pipeline.loop_stage([h])
    assert r1.node != h.node and Context.rolled(h.graph).replaced
    (r2,) = pipeline.loop_stage([h])
    assert r2.node == r1.node
    with pytest.raises(KeyError), h.graph.budget(10, lambda: sg.LimitError("no room")):
        sg.tanh(x * 5.0)
        raise KeyError("the block fails: its nodes are removed")
    assert not h.graph.derived  # a rollback forgets what was found
    (r3,) = pipeline.loop_stage([h])
    assert r3.node == r1.node  # found again, the same scan (hash-consing)
