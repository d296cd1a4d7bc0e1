"""One sympy translator (symgrad.frontend.sympy_io) for sg.to_sympy/sg.from_sympy and the
sympy bridge of simplify(sympy=True): the two directions agree on every op of the registry
that has a sympy form, sqrt written by sympy as Pow(t, 1/2) included; the bridge reads the
same table and counts the forward values a derivative shares as free."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import symgrad as sg
from symgrad.backends import TABLES
from symgrad.frontend import sympy_io
from symgrad.ir.expr import Expr, call
from symgrad.ir.graph import Graph
from symgrad.ops import REGISTRY
from symgrad.passes import sympy_bridge

SYMPY_OPS = sorted(n for n, op in REGISTRY.items() if op.elementwise and op.sympy is not None)


def _sample(op, k: int) -> dict[str, float]:
    lo, hi = op.domain
    rng = np.random.default_rng(k)
    return {f"a{j}": float(rng.uniform(lo, hi)) for j in range(op.arity)}


@pytest.mark.parametrize("name", SYMPY_OPS)
def test_round_trip_over_the_registry(name):
    """to_sympy then from_sympy gives the op back where its form names a sympy function,
    and the same values everywhere else; what does not come back is a SymgradError naming
    sympy's class, never a wrong expression."""
    op = REGISTRY[name]
    f = call(name, *[sg.var(f"a{k}") for k in range(op.arity)])
    try:
        back = sg.from_sympy(sg.to_sympy(f))
    except sg.SymgradError as exc:
        assert not isinstance(op.sympy, str), exc  # a named form always comes back
        assert "has no symgrad op" in str(exc)
        return
    if isinstance(op.sympy, str) and name not in ("add", "multiply", "power"):
        assert back.op == name
    for k in range(3):
        at = _sample(op, k)
        want = sg.evaluate(f, at)
        assert sg.evaluate(back, at) == pytest.approx(want, rel=1e-12, abs=1e-14), at


@pytest.mark.parametrize("name", SYMPY_OPS)
def test_the_bridge_translates_as_from_sympy_does(name):
    """The bridge's direction (region leaves as given nodes, sympy.cse first) builds the
    same ops as sg.from_sympy."""
    op = REGISTRY[name]
    f = call(name, *[sg.var(f"a{k}") for k in range(op.arity)])
    form = sg.to_sympy(f)
    try:
        want = sg.from_sympy(form)
    except sg.SymgradError:
        with pytest.raises(sympy_bridge.Untranslatable):
            sympy_bridge._from_sympy(form, {}, Graph())
        return
    graph = Graph()
    leaves = {s: Expr(graph, graph.var(s.name, (), "float64")) for s in form.free_symbols}
    got = sympy_bridge._from_sympy(form, leaves, graph)
    ops = sorted(graph.nodes[i].op for i in graph.ancestors([got.node]))
    assert ops == sorted(want.graph.nodes[i].op for i in want.graph.ancestors([want.node]))


def test_sqrt_written_as_a_power_comes_back_as_sqrt_in_both():
    t = sympy.Symbol("t", real=True)
    assert sympy.sqrt(t).func is sympy.Pow  # how sympy writes it
    assert sg.from_sympy(sympy.sqrt(t)).op == "sqrt"
    graph = Graph()
    leaf = Expr(graph, graph.var("t", (), "float64"))
    assert sympy_bridge._from_sympy(sympy.sqrt(t), {t: leaf}, graph).op == "sqrt"
    assert sg.from_sympy(sympy.polygamma(0, t)).op == "digamma"  # digamma's sympy form


def test_one_table_for_both_directions():
    table = sympy_io.back_table(sympy)
    for op in REGISTRY.values():
        if op.elementwise and isinstance(op.sympy, str):
            assert table.names.get(op.sympy) is not None
    assert [op for _, _, op in table.patterns["Pow"]] == ["sqrt"]


def test_cube_root_of_a_negative_number_is_real():
    """np.cbrt(-8) is -2; sympy's cbrt is the principal (complex) root there: the form is
    the real root."""
    x = sg.var("x")
    fn = sympy.lambdify([sympy.Symbol("x", real=True)], sg.to_sympy(sg.cbrt(x)), "numpy")
    assert fn(-8.0) == pytest.approx(-2.0) and fn(27.0) == pytest.approx(3.0)
    back = sg.from_sympy(sg.to_sympy(sg.cbrt(x)))
    assert sg.evaluate(back, {"x": -8.0}) == pytest.approx(-2.0)


def test_an_op_without_a_sympy_form_is_named():
    """A user op (or a new one) without a ``sympy`` field: to_sympy names it; the bridge
    leaves it where it is."""
    softsign = sg.extend.defop("softsign_nosympy", lambda x: x / (1 + np.abs(x)),
                               lambda n, g: (g / (1 + sg.abs(n.args[0])) ** 2,),
                               numpy="{0} / (1 + np.abs({0}))")
    try:
        x = sg.var("x")
        with pytest.raises(sg.SymgradError, match="'softsign_nosympy' has no sympy form"):
            sg.to_sympy(softsign(x) + 1.0)
        s = sg.simplify(softsign(x) * 1.0 + sg.sin(x) ** 2 + sg.cos(x) ** 2, sympy=True)
        assert sg.evaluate(s, {"x": 0.5}) == pytest.approx(0.5 / 1.5 + 1.0)
    finally:  # the registry-wide tests that run later see the registry as it was
        for table in (REGISTRY, *TABLES.values()):
            table.pop("softsign_nosympy", None)


def test_bridge_counts_forward_values_as_free():
    """expm1's derivative reuses the forward value (expm1(x) + 1): sympy's exp(x) is not
    cheaper than that once the forward pass has computed expm1(x)."""
    x, y = sg.var("x"), sg.var("y")
    f = sg.expm1(x)
    value, dx = sg.simplify([f, sg.grad(f * y + x, x)], sympy=True)
    ops = [dx.graph.nodes[i].op for i in dx.graph.ancestors([dx.node])]
    assert "exp" not in ops and ops.count("expm1") == 1
    at = {"x": 0.3, "y": 1.7}
    assert sg.evaluate(dx, at) == pytest.approx(1 + 1.7 * np.exp(0.3), rel=1e-14)
