"""The registry: every pass listed once, with one line of doc, a kind (rules or a
whole-graph run) and the stages that run it; each stage's pipeline is the query of its tag;
``sg.passes()`` is a plain function that lists them whatever was imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest

import symgrad as sg
from symgrad.passes import registry
from symgrad.passes.pattern import Pass, Rule


def test_passes_are_named_and_listed_once_with_one_line_each():
    listed = sg.passes()
    names = [p.name for p in listed]
    assert listed == list(registry.PASSES) and listed is not registry.PASSES
    assert len(set(names)) == len(names)
    for p in listed:
        assert p.doc and "\n" not in p.doc and len(str(p)) <= 110, p.name
        assert p.stages and set(p.stages) <= set(registry.STAGES), p.name
        assert p.run is None or not p.rules, p.name


def test_every_stage_is_the_query_of_its_tags_pinned_by_name():
    """Where a pass runs is said once, by its tags: each stage's passes are pinned here by
    name, so a tag changed by mistake fails."""
    expected = {
        "loops": "reductions rolling",
        "rolling": "rolling",
        "reverse": "idioms constant_folding identities negations normal_form adjoint_cleanup "
                   "nan_guards lowering",
        "sympy": "sympy",
        "compile": "constant_folding identities negations normal_form canonical_order "
                   "nan_guards",
        "fast_math": "constant_folding identities negations normal_form canonical_order "
                     "fast_math adjoint_cleanup lowering stability",
        "simplify": "constant_folding identities negations normal_form stability cse",
        "simplify_adjoint": "constant_folding identities negations normal_form "
                            "adjoint_cleanup nan_guards lowering stability",
        "arrays": "sums_as_sums",
        "promote": "promote",
        "calls": "merge_calls",
    }
    assert list(expected) == list(registry.STAGES)
    for stage, names in expected.items():
        assert [p.name for p in registry.query(stage)] == names.split(), stage
    ran = {p for stage in registry.STAGES for p in registry.query(stage)}
    assert ran == set(registry.PASSES)  # every listed pass runs somewhere
    with pytest.raises(ValueError, match="unknown stage 'compiler'"):
        registry.query("compiler")


def test_the_stage_table_is_generated_from_the_tags():
    doc = registry.__doc__
    for stage, where in registry.STAGES.items():
        line = next(x for x in doc.splitlines() if x.startswith(f"``{stage}``"))
        assert where in line
        assert line.endswith(", ".join(p.name for p in registry.query(stage)))


def test_a_pass_has_rules_or_a_run_never_both():
    def run(graph, ids, ctx):
        return graph, ids

    with pytest.raises(ValueError, match="rules or a run"):
        Pass("both", "both kinds", rules=(Rule(("negative", "x"), lambda x: None),), run=run,
             stages=("compile",))


def test_sg_passes_is_a_function_whatever_was_imported_first():
    """``sg.passes()`` lists the passes, and the modules of the ``symgrad.passes`` package
    import, in either order and before anything else touched ``symgrad`` (a fresh
    interpreter)."""
    code = ("import symgrad as sg; n = len(sg.passes()); from symgrad.passes import rolling; "
            "import symgrad.passes.reductions; import types; "
            "assert isinstance(sg.passes, types.FunctionType) and sg.numpy.sin; "
            "print(n, rolling.__name__)")
    for order in (code, "import symgrad.passes.rolling; " + code,
                  "from symgrad.passes import registry; " + code):
        out = subprocess.run([sys.executable, "-c", order], capture_output=True, text=True,
                             check=True, timeout=120).stdout.split()
        assert out == [str(len(sg.passes())), "symgrad.passes.rolling"]
