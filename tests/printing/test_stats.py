"""``sg.stats`` and the cost model: nodes, lines, op histogram, flops and bytes, before and
after the compile passes; ``symgrad source --stats``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import symgrad as sg
from symgrad.ops import REGISTRY
from symgrad.passes.cost import cost, node_cost
from symgrad.testing import random_expressions


def test_cost_of_a_product_and_of_views():
    A, B = sg.var("A", (20, 30)), sg.var("B", (30, 40))
    c = cost(A @ B)
    assert c.flops == 2 * 20 * 30 * 40 and c.bytes == 20 * 40 * 8
    v = sg.var("v", (10,))
    views = sg.reshape(v, (2, 5)).T
    assert cost(views).flops == 0 and cost(views).bytes == 0
    assert cost(sg.exp(v)).flops > 10 * cost(v + v).flops
    s = sg.einsum("ij,jk->ik", A, B)
    assert cost(s).flops == c.flops


def test_stats_before_and_after_the_passes():
    x = sg.var("x", (50,))
    f = sg.sum(x * 100.0 + 100.0 * x) + sg.sum(sg.reshape(x * 1.0, (50,)))
    s = sg.stats([f, sg.grad(f, x)])
    assert [r.name for r in s.rows] == ["as built", "constant_folding", "identities",
                                        "negations", "normal_form", "canonical_order",
                                        "nan_guards"]
    assert s.after.nodes < s.before.nodes and s.after.flops < s.before.flops
    assert s.before.ops["multiply"] > s.after.ops["multiply"]
    assert "canonical_order" in str(s) and "ops after:" in str(s)
    assert sg.stats(f, fast_math=True).rows[-1].name == "stability"
    with pytest.raises(sg.SymgradError):
        sg.stats([])


def test_every_op_has_a_cost():
    """No op breaks the cost model (ops it does not list cost a flop per element)."""
    from tests.support.registry_cases import registry_cases

    for param in registry_cases([(), (3, 4)]):
        case = param.values[0]
        out, _, _ = case.build()
        flops, written = node_cost(out.graph, out.node)
        assert flops >= 0 and written >= 0, case.op.name
    assert set(REGISTRY)  # the registry is not empty


def test_cli_source_stats(tmp_path):
    out = tmp_path / "f.py"
    proc = subprocess.run([sys.executable, "-m", "symgrad", "source", "sum(x*100.0 + 100.0*x)",
                           "--shape", "x=5", "--stats", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "symgrad stats:" in proc.stderr and "flops" in proc.stderr
    assert "def f(" in out.read_text()


def test_stats_of_random_expressions():
    from hypothesis import given, settings

    @settings(max_examples=30, deadline=None, derandomize=True, database=None)
    @given(random_expressions())
    def run(case):
        s = sg.stats(case.expr)
        assert s.after.flops <= s.before.flops
        assert all(r.flops >= 0 and r.lines <= r.nodes for r in s.rows)

    run()
