"""Imports: no module imports one that imports it back, counting every import that runs —
at module level, inside functions, through ``importlib.import_module("symgrad....")`` and
the package faces an import runs first (``import symgrad.a.b`` runs ``symgrad/a/__init__``)
— and no module imports another's private (underscore) name. The helpers generated code
calls are named ``_sg_*`` so they never clash with a user's names in an emitted module; that
prefix is a namespace, not privacy, and is not counted."""

from __future__ import annotations

import ast

from tests.support.imports import (
    ROOT,
    circles,
    private_imports,
    run_time_imports,
    run_time_nodes,
)


def test_no_import_circle_counting_every_import_that_runs():
    found = circles(run_time_imports())
    assert not found, f"modules that import each other (directly or around a circle): {found}"


def test_the_import_walk_sees_functions_importlib_and_package_faces_not_type_checking():
    edges = run_time_imports()
    # inside a function: the sympy bridge is loaded on first use
    assert "symgrad.passes.sympy_bridge" in edges["symgrad.passes.rebuild"]
    # importing symgrad.passes.pattern runs the face of symgrad.passes first; a module's
    # own package is not counted (it is loaded before the module)
    assert "symgrad.passes" in edges["symgrad.transforms.reverse"]
    assert "symgrad.passes" not in edges["symgrad.passes.reductions"]
    # a string given to importlib.import_module
    assert "symgrad.api" in edges[ROOT]
    # the annotations under TYPE_CHECKING run nothing
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
                     "else:\n    import b\ndef f():\n    import c\n")
    ran = {a.name for n in run_time_nodes(tree) if isinstance(n, ast.Import)
           for a in n.names}
    assert ran == {"b", "c"}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_from_another_module():
    found = sorted(private_imports())
    assert not found, f"private names imported from another module (make them public where " \
                      f"they are shared): {found}"
