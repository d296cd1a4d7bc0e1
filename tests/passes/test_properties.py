"""Properties of every pass on random expressions (hypothesis, ``symgrad.testing``): the
exact passes keep the values bit for bit (NaN payloads aside), ``fast_math`` to 1e-12; a
pass applied twice changes nothing the second time; the cost model never goes up; the
rebuilt graph verifies. The passes that shape B are checked through ``grad``: B with them
agrees with B as the rules write it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgrad as sg
from symgrad.ir.expr import Expr
from symgrad.passes import pipeline
from symgrad.passes.cost import cost
from symgrad.passes.registry import query
from symgrad.passes.simplify import rebuild
from symgrad.testing import random_expressions

EXACT = [*query("compile"), query("compile")]  # each exact pass, and all of them in order
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _name(p) -> str:
    return p.name if hasattr(p, "name") else "compile"


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return bool(np.array_equal(nan_a, nan_b)) and a[~nan_a].tobytes() == b[~nan_b].tobytes()


def _structure(graph, ids) -> list:
    """The graph under ``ids`` with node ids replaced by positions: equal for equal graphs."""
    order = graph.ancestors(ids)
    pos = {i: k for k, i in enumerate(order)}
    out = []
    for i in order:
        n = graph.nodes[i]
        value = n.attrs.get("value") if n.is_const else None
        out.append((n.op, tuple(pos[a] for a in n.args), n.name, n.shape, n.dtype,
                    None if value is None else value.tobytes(),
                    repr(sorted((k, v) for k, v in n.attrs.items() if k != "value"))))
    return out


def _close_where_finite(got, want, tol: float, case) -> None:
    """``got`` equals ``want`` to ``tol`` (relative to the largest value) where ``want`` is
    finite; elsewhere the rewrite may differ (an overflow of the written form)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    ok = np.isfinite(want)
    scale = float(np.max(np.abs(want[ok]), initial=1.0))
    np.testing.assert_allclose(got[ok], want[ok], rtol=tol, atol=tol * scale, err_msg=repr(case))


def _outputs(case, transforms: str):
    """The random expression, plus its gradient when ``transforms`` asks for it."""
    f = case.expr
    outs = [f]
    if transforms == "grad" and case.wrt:
        s = sg.sum(f) if f.shape else f
        outs += list(sg.grad(s, case.wrt))
    return outs


@pytest.mark.parametrize("transforms", ["forward", "grad"])
@pytest.mark.parametrize("stage", EXACT, ids=_name)
def test_exact_passes_keep_values_are_idempotent_and_never_cost_more(stage, transforms):
    passes = tuple(stage) if isinstance(stage, tuple) else (stage,)

    @SETTINGS
    @given(case=random_expressions())
    def run(case):
        outs = _outputs(case, transforms)
        graph = max((e.graph for e in outs), key=len)
        ids = [graph.find(e) for e in outs]
        new, new_ids = rebuild(graph, ids, passes, passes)
        new.verify()
        with np.errstate(all="ignore"):
            want = sg.evaluate([Expr(graph, i) for i in ids], case.inputs)
            got = sg.evaluate([Expr(new, i) for i in new_ids], case.inputs)
        for w, g in zip(want, got):
            assert _same_bits(w, g), (case, w, g)
        assert cost(new_ids, new).flops <= cost(ids, graph).flops
        again, again_ids = rebuild(new, new_ids, passes, passes)
        assert _structure(again, again_ids) == _structure(new, new_ids)

    run()


def test_fast_math_agrees_to_1e12_and_never_costs_more():
    @SETTINGS
    @given(case=random_expressions(), transforms=st.sampled_from(["forward", "grad"]))
    def run(case, transforms):
        outs = _outputs(case, transforms)
        graph = max((e.graph for e in outs), key=len)
        ids = [graph.find(e) for e in outs]
        new, (new_ids,) = pipeline.optimize(graph, [ids], fast_math=True)
        new.verify()
        with np.errstate(all="ignore"):
            want = sg.evaluate([Expr(graph, i) for i in ids], case.inputs)
            got = sg.evaluate([Expr(new, i) for i in new_ids], case.inputs)
        for w, g in zip(want, got):
            _close_where_finite(g, w, 1e-12, case)

    run()


def test_b_with_its_passes_agrees_with_b_as_the_rules_write_it():
    """adjoint_cleanup, normal_form, lowering and idioms shape B while it is built:
    ``grad`` with them and ``grad(..., cleanup=False)`` give the same derivative."""
    smooth = [op for op in sg.ops.REGISTRY.values() if op.name in (
        "add", "subtract", "multiply", "divide", "exp", "log", "tanh", "sin", "cos",
        "sigmoid", "softplus", "square", "power", "negative")]

    @SETTINGS
    @given(case=random_expressions(ops=smooth, where=False))
    def run(case):
        if not case.wrt:
            return
        f = sg.sum(case.expr) if case.expr.shape else case.expr
        clean = sg.grad(f, case.wrt)
        raw = sg.grad(f, case.wrt, cleanup=False)
        f.graph.verify()
        with np.errstate(all="ignore"):
            a = sg.evaluate(list(clean), case.inputs)
            b = sg.evaluate(list(raw), case.inputs)
        for x, y in zip(a, b):
            _close_where_finite(x, y, 1e-10, case)

    run()


def test_compiled_code_is_the_evaluator_bit_for_bit():
    @SETTINGS
    @given(case=random_expressions(), transforms=st.sampled_from(["forward", "grad"]))
    def run(case, transforms):
        outs = _outputs(case, transforms)
        names = sorted(case.inputs)
        graph = max((e.graph for e in outs), key=len)
        used = {graph.nodes[i].name for i in graph.ancestors([graph.find(e) for e in outs])
                if graph.nodes[i].is_var}
        names = [n for n in names if n in used]
        fn = sg.compile(outs, inputs=names, scalars="numpy")
        with np.errstate(all="ignore"):
            got = fn(*[case.inputs[n] for n in names])
            want = sg.evaluate(outs, case.inputs)
        for w, g in zip(want, got):
            assert _same_bits(np.asarray(w), np.asarray(g)), case

    run()
