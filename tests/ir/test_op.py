"""The op record and its registry: a signature spec parsed into parameters, a call's
arguments bound into operands and exact attributes with errors naming the op, registration
refusing duplicate names and differentiable ops without rules, ``define_rules`` setting a
rule once, lookups through aliases, and the results of a call with several outputs."""

from __future__ import annotations

import numpy as np
import pytest

from symgrad.ir import op as O


class Sneaky(int):
    def __index__(self):
        raise AssertionError("__index__ ran")


def test_a_spec_parses_into_parameters_and_defaults():
    s = O.sig("x", "?w", "=axis", "=spec:str", axis=None, spec="ij", keepdims=False)
    assert [(p.name, p.kind, p.text) for p in s.params] == [
        ("x", "operand", False), ("w", "optional", False), ("axis", "static", False),
        ("spec", "static", True)]
    assert s.arity == 1 and s.positional_statics == ("axis", "spec")  # required operands
    assert s.takes_string("spec") and not s.takes_string("axis")
    assert s.describe() == "(x, w=None, axis, spec)" and s.keywords_text() == "keepdims=False"
    assert O.sig("*xs").arity is None
    assert O.sig("[xs]", "=axis", axis=0).describe() == "([xs], axis)"
    with pytest.raises(ValueError, match="static parameters without a default"):
        O.sig("x", "=axis")


def test_binding_splits_operands_from_exact_attributes():
    s = O.sig("x", "=axis", "=keepdims", axis=None, keepdims=False)
    operands, attrs = s.bind("sum", ("X", Sneaky(1)), {"keepdims": True})
    assert operands == ["X"] and attrs == {"axis": 1, "keepdims": True}
    assert type(attrs["axis"]) is int  # the user's subclass never reaches a shape rule
    assert s.bind("sum", ("X",), {}) == (["X"], {"axis": None, "keepdims": False})
    listed = O.sig("[xs]", "=axis", axis=0)
    assert listed.bind("stack", (["a", "b"], 1), {}) == (["a", "b"], {"axis": 1})
    spec = O.sig("=spec:str", "*operands", spec=None)
    assert spec.bind("einsum", ("a", "b"), {"spec": "i,i->"}) == (["a", "b"], {"spec": "i,i->"})
    for args, kwargs, match in [
            ((), {}, r"sum\(\) is missing its argument 'x'"),
            (("X", 0, True, 5), {}, r"takes \(x, axis, keepdims\); got extra"),
            (("X",), {"axes": 0}, "unexpected keyword 'axes' .*axis, keepdims")]:
        with pytest.raises(O.SignatureError, match=match):
            s.bind("sum", args, kwargs)
    with pytest.raises(O.SignatureError, match="non-empty list"):
        listed.bind("stack", ([],), {})


@pytest.fixture
def scratch(monkeypatch):
    """A registry and alias table of the test's own, so nothing leaks into the process."""
    monkeypatch.setattr(O, "REGISTRY", dict(O.REGISTRY))
    monkeypatch.setattr(O, "ALIASES", dict(O.ALIASES))
    return O


def _op(name, **kw):
    base = dict(name=name, infer=lambda s, d, a: (s[0], d[0]), impl=np.negative,
                backprop=lambda n, g: (-g,), forward=lambda n, t: -t[0])
    return O.Op(**{**base, **kw})


def test_registration_refuses_duplicates_and_missing_rules(scratch):
    op = scratch.register(_op("flip_sign_test", aliases=("fst",)))
    assert scratch.lookup("fst") is op and scratch.lookup("flip_sign_test") is op
    assert scratch.public_op("fst") is op
    with pytest.raises(ValueError, match="registered twice"):
        scratch.register(_op("fst"))
    with pytest.raises(ValueError, match="registered twice"):
        scratch.register(_op("negative"))
    with pytest.raises(ValueError, match="no backprop rule"):
        scratch.register(_op("no_rule_test", backprop=None))
    with pytest.raises(ValueError, match=r"no forward \(JVP\) rule"):
        scratch.register(_op("no_fwd_test", forward=None))
    hidden = scratch.register(_op("hidden_test", public=False, differentiable=False,
                                  backprop=None, forward=None))
    assert scratch.public_op("hidden_test") is None and scratch.lookup("hidden_test") is hidden
    with pytest.raises(KeyError):
        scratch.lookup("no_such_op")


def test_define_rules_sets_each_rule_once(scratch):
    scratch.register(_op("later_test", backprop=None, forward=None, rules="tests.ir"))
    rule = lambda n, g: (g,)  # noqa: E731
    op = scratch.define_rules("later_test", backprop=rule)
    assert op.backprop is rule
    with pytest.raises(ValueError, match="its backprop rule is already set"):
        scratch.define_rules("later_test", backprop=rule)
    with pytest.raises(ValueError, match="'impl' is not a rule"):
        scratch.define_rules("later_test", impl=rule)


def test_the_results_of_a_call_print_and_mark_the_node_as_a_call():
    shape, results = O.results_of([((3,), "float64"), ((2, 2), "int64")])
    assert shape == () and str(results) == "(f64[3], i64[2,2])"

    class Node:
        dtype = results

    assert O.is_call(Node()) and not O.is_call(type("N", (), {"dtype": "float64"})())
    eigh = O.REGISTRY["eigh"]
    assert eigh.differentiable and eigh.backprop is not None
