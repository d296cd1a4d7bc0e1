"""The backprop table (``sg.explain``): Collins' Example 4 row by row (values, adjoints in
reverse topological order, each adjoint's terms), the network's adjoints against backprop by
hand, the symbolic table without values, and refusals that say why."""

from __future__ import annotations

import numpy as np

import symgrad as sg
from tests.support.pictures import SHAPES, hand_gradients
from tests.support.pictures import network_loss as network


def test_explain_collins_example_table():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u4 = u2 * (u1 + u2)
    n = len(u4.graph)
    table = sg.explain(u4, at={"u1": 2.0, "u2": 3.0})
    assert len(u4.graph) == n  # explaining does not add nodes to the caller's graph
    values = {r["label"]: r["value"] for r in table.rows}
    assert values == {"u1": 2.0, "u2": 3.0, "u3": 5.0, "u4": 15.0,
                      "P4": 1.0, "P3": 3.0, "P2": 8.0, "P1": 3.0}
    adjoints = [r["label"] for r in table.rows if r["section"] == "adjoint"]
    assert adjoints == ["P4", "P3", "P2", "P1"]  # reverse topological order
    p2 = next(r for r in table.rows if r["label"] == "P2")
    assert [(t["consumer"], t["local"], t["contribution"]) for t in p2["terms"]] == [
        ("u3", 1.0, 3.0), ("u4", 5.0, 5.0)]      # P3 J(2->3) + P4 J(2->4) = 3*1 + 1*5
    text = str(table)
    assert "u1 + u2" in text and "3*1 + 1*5" in text
    html = table._repr_html_()
    assert html.count("<table>") == 2 and "P2" in html


def test_explain_network_shapes_and_symbolic_table(rng):
    f = network()
    at = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    at["y"] = np.int64(1)
    table = sg.explain(f, wrt=["W", "b"], at=at)
    want = hand_gradients(at)
    rows = {r.get("of"): r for r in table.rows if r["section"] == "adjoint"}
    labels = {r["definition"]: r["label"] for r in table.rows if r["section"] == "forward"}
    np.testing.assert_allclose(rows[labels["W"]]["value"], want["W"], rtol=1e-12)
    np.testing.assert_allclose(rows[labels["b"]]["value"], want["b"], rtol=1e-12)
    assert labels["V"] not in rows  # not on a path to W or b
    symbolic = sg.explain(f)
    assert all(r["value"] is None for r in symbolic.rows)
    assert "Backward pass" in str(symbolic)


def test_explain_keeps_the_mechanical_table():
    """An idiom in B (the sigmoid's) leaves the table every chain-rule row of the forward
    graph."""
    x = sg.var("x")
    table = sg.explain(1 / (1 + sg.exp(-x)), at={"x": 0.5})
    assert len([r for r in table.rows if r.get("kind", "") != "forward"]) >= 4
