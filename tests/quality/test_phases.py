"""The compiler's phases stay apart: the builder builds and passes rewrite (a forward value
never depends on what was differentiated before), no module outside ``ops/`` and the
backend tables switches on an op name, and the folders import only downwards (no circle
between modules: ``test_imports.py``)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgrad as sg
from symgrad.ir.expr import Expr
from symgrad.ops import REGISTRY
from symgrad.passes.pattern import Const
from symgrad.passes.registry import PASSES
from symgrad.testing import random_expressions

PACKAGE = Path(sg.__file__).parent


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- the builder builds ---------------------------------------------------------------------


def test_a_forward_expression_gives_nan_before_and_after_a_gradient():
    x = sg.var("x")
    h = sg.where(x > 0, 1.0, 0.0) / (2.0 * sg.sqrt(x))
    assert np.isnan(sg.evaluate(h, {"x": -1.0}))  # fresh graph: what NumPy computes
    x2 = sg.var("x2")
    assert sg.evaluate(sg.grad(sg.where(x2 > 0, sg.sqrt(x2), 0.0), x2), {"x2": -1.0}) == 0.0
    h2 = sg.where(x2 > 0, 1.0, 0.0) / (2.0 * sg.sqrt(x2))
    assert np.isnan(sg.evaluate(h2, {"x2": -1.0}))  # the same, after a gradient


def test_the_adjoint_cleanup_does_not_depend_on_history_either():
    """The raw node built first (forward) does not stop B from masking its own product."""
    x = sg.var("x")
    raw = sg.where(x > 0, 1.0, 0.0) / (2.0 * sg.sqrt(x))
    g = sg.grad(sg.where(x > 0, sg.sqrt(x), 0.0), x)
    assert sg.evaluate(g, {"x": -1.0}) == 0.0 and np.isnan(sg.evaluate(raw, {"x": -1.0}))


def test_cleanup_false_builds_b_as_the_rules_write_it():
    x = sg.var("x", shape=(3,))
    f = sg.sum(sg.where(x > 0, sg.sqrt(x), 0.0) * 2.0)
    clean, raw = sg.grad(f, x), sg.grad(f, x, cleanup=False)
    at = {"x": np.array([-1.0, 0.0, 4.0])}
    np.testing.assert_array_equal(sg.evaluate(clean, at), [0.0, 0.0, 0.5])
    got = sg.evaluate(raw, at)  # the mask is not re-applied: 0 * inf where x <= 0
    assert np.isnan(got[0]) and got[2] == 0.5
    ok = {"x": np.array([1.0, 2.0, 4.0])}
    np.testing.assert_allclose(sg.evaluate(raw, ok), sg.evaluate(clean, ok), rtol=1e-15)
    assert len(f.graph.ancestors([raw.node])) > len(f.graph.ancestors([clean.node]))


def test_written_identities_are_kept_in_forward_graphs_and_removed_by_passes():
    x = sg.var("x", shape=(2,))
    e = sg.reshape(x * 1.0, (2,)) ** 1
    assert e.op == "power" and str(e) == "reshape(x * 1.0, shape=2) ** 1"
    assert str(sg.simplify(e)) == "x"
    c = sg.const(2.0) * 3.0
    assert c.op == "multiply" and sg.evaluate(c) == 6.0  # folded by passes, not the builder
    assert str(sg.simplify(c)) == "6.0"


TRANSFORMS = st.lists(st.sampled_from(["grad", "hessian", "jacobian", "hvp"]), max_size=3)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(first=random_expressions(), second=random_expressions(), transforms=TRANSFORMS)
def test_forward_values_do_not_depend_on_earlier_transforms(first, second, transforms):
    """Any random forward expression gives the same values, bit for bit, whether it is built
    in a fresh graph or after any number of transforms of another expression over the same
    variables (it then shares their nodes and every node those transforms built)."""
    fresh = sg.evaluate(second.expr, second.inputs)
    graph = first.expr.graph
    f = sg.sum(first.expr) if first.expr.shape else first.expr
    for kind in transforms:
        for name in first.wrt:
            if kind == "grad":
                f = sg.sum(sg.grad(f, name))
            elif kind == "hessian":
                sg.hessian(f, name)
            elif kind == "jacobian":
                sg.jacobian(first.expr, name)
            else:
                sg.hvp(f, name, np.ones(graph.nodes[graph.variables[name]].shape))
    rebuilt = Expr(graph, graph.import_node(second.expr.graph, second.expr.node))
    assert _same_bits(sg.evaluate(rebuilt, second.inputs), fresh), second


# -- passes ---------------------------------------------------------------------------------


def _op_names(pattern):
    if isinstance(pattern, tuple):
        yield pattern[0]
        for sub in pattern[1:]:
            yield from _op_names(sub)


def test_every_rule_pattern_names_registered_ops():
    for p in PASSES:
        for rule in p.rules:
            if callable(rule.pattern):
                continue
            for name in _op_names(rule.pattern):
                assert name in REGISTRY, f"pass {p.name}: {rule} names unknown op {name!r}"


def test_pattern_captures_repeated_names_must_be_the_same_node():
    x, y = sg.var("x"), sg.var("y")
    assert sg.simplify(x * x).op == "square"
    assert sg.simplify(x * y).op == "multiply"
    assert isinstance(Const("z", 0.0), Const)


# -- per-transform results ------------------------------------------------------------------


def test_each_transform_keeps_its_own_adjoint_map():
    x = sg.var("x", shape=(2,))
    f = sg.sum(sg.sin(x) * x)
    g = sg.grad(f, x)
    h = sg.hessian(f, x)
    graph = f.graph
    first, *rest = graph.transforms
    assert first.adjoint_of[x.node] == g.node
    assert graph.adjoint(x, transform=first).node == g.node
    assert graph.adjoint(x).node == h.node  # the latest transform, as documented
    assert any(t.adjoint_of.get(x.node) == h.node for t in rest)
    graph.verify()
    src = sg.to_source([f, g, h])
    # the gradient is dx, the Hessian says what it is
    assert re.search(r"\n    return value, dx, hess_x\n", src), src


# -- layout ---------------------------------------------------------------------------------

# Modules allowed to name ops in code: the stanzas, and each backend's own table.
OP_TABLES = {"ops", "backends/targets/numpy/table.py", "backends/targets/numpy/math_table.py"}


def _allowed(path: Path) -> bool:
    rel = path.relative_to(PACKAGE).as_posix()
    return rel.split("/")[0] in OP_TABLES or rel in OP_TABLES


def _names_an_op(node: ast.AST) -> bool:
    """``x.op`` or ``op.name``: an expression holding an op's name."""
    if not isinstance(node, ast.Attribute):
        return False
    return node.attr == "op" or (node.attr == "name" and isinstance(node.value, ast.Name)
                                 and node.value.id == "op")


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_literal(e) for e in node.elts)
    return False


def test_no_module_outside_ops_and_backend_tables_switches_on_an_op_name():
    """``x.op == "exp"``, ``n.op in ("var", "const")``, ``op.name != "sum"`` ... are found
    anywhere but the op stanzas and the backend tables (leaves: ``Node.is_var/is_const``)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if _allowed(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_names_an_op(s) for s in sides) and any(_is_literal(s) for s in sides):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"op names switched on outside ops/ and the backend tables: {found}"


def test_the_check_above_catches_a_switch():
    tree = ast.parse('if n.op == "exp" or node.op in ("var", "const"): pass')
    hits = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)
            and any(_names_an_op(s) for s in [n.left, *n.comparators])
            and any(_is_literal(s) for s in [n.left, *n.comparators])]
    assert len(hits) == 2


# The phases, bottom up: a module imports from its own folder or from lower floors only.
FLOORS = {"base": 0, "ir": 1, "ops": 2, "frontend": 2, "numpy": 3, "passes": 3,
          "transforms": 4, "scipy": 5, "backends": 5, "functional": 6,
          "printing": 7, "tools": 8, "api": 9, "cli": 10, "__main__": 11, "__init__": 11}
# The public module paths whose code lives in a folder: each a face of re-exports, on top,
# so nothing inside the package imports one.
FACES = {"errors": "base", "progress": "base", "tree_util": "base", "testing": "tools",
         "extend": "tools", "dask": "backends", "flatten_util": "functional"}
FLOORS.update(dict.fromkeys(FACES, 10))


def _part(module: str) -> str:
    return module.split(".")[0]


def _imports(path: Path) -> set[str]:
    rel = path.relative_to(PACKAGE).with_suffix("")
    package = list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module or ""]).strip(".")
            elif (node.module or "").startswith("symgrad"):
                target = node.module.removeprefix("symgrad").strip(".")
            else:
                continue
            if target:
                out.add(target)
            else:  # from . import ops
                out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("symgrad.") for a in node.names
                       if a.name.startswith("symgrad."))
    return out


def test_folders_import_only_downwards():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        here = _part(rel.with_suffix("").as_posix().replace("/", "."))
        for target in _imports(path):
            there = _part(target)
            if there != here and FLOORS[there] >= FLOORS[here]:
                wrong.append(f"{rel} imports {target}")
    assert not wrong, f"imports that run sideways or up the phases: {wrong}"


@pytest.mark.parametrize("folder", ["base", "ir", "ops", "frontend", "numpy", "passes",
                                    "transforms", "scipy", "backends", "functional",
                                    "printing", "tools", "cli"])
def test_every_folder_says_what_it_is(folder):
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text()))
    assert doc and len(doc) > 60, folder


def test_import_symgrad_loads_every_module_that_registers_something():
    """Doctest collection imports every module; a stanza file missing from its package's
    imports would look registered in the test session and be absent for users. (``import
    symgrad`` is lazy: the first public name read loads the compiler.)"""
    code = ("import sys, symgrad; symgrad.var; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('symgrad.')))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    for path in sorted((PACKAGE / "ops").glob("*.py")):
        assert f"symgrad.ops.{path.stem}" in loaded or path.stem == "__init__", path.name


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["grad", "--help"]])
def test_the_command_answers_version_and_help_without_the_compiler(argv):
    """``symgrad --version`` / ``--help`` import neither NumPy, SymPy, networkx nor symgrad's
    phases (their speed, as a time difference, is measured in benchmarks/cli_startup.py)."""
    code = ("import sys, runpy; sys.argv = ['symgrad', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('symgrad', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('LOADED', *sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'sympy', 'networkx') or m.startswith('symgrad.')))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True).stdout
    loaded = out.rsplit("LOADED", 1)[1].split()
    # symgrad.passes: the package's face, which imports nothing (see symgrad/__init__.py)
    assert loaded == ["symgrad.base", "symgrad.base.errors", "symgrad.cli",
                      "symgrad.cli.commands", "symgrad.passes"], loaded


def test_import_symgrad_is_light_and_the_first_name_loads_the_rest():
    code = ("import sys, symgrad as sg; before = 'numpy' in sys.modules; x = sg.var('x'); "
            "print(before, 'symgrad.api' in sys.modules, sg.evaluate(sg.grad(sg.sin(x), x), "
            "{'x': 0.0}), 'sin' in dir(sg), sg.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:4] == ["False", "True", "1.0", "True"] and out[4][0].isdigit(), out


def test_the_public_module_paths_are_faces_of_the_same_objects():
    """``symgrad.errors``, ``symgrad.testing``, ... re-export what their folders define (the
    same objects, so ``except symgrad.errors.ShapeError`` catches the package's own), and
    each is an attribute of the package on first use, as before the move."""
    import importlib

    for face, folder in FACES.items():
        module = importlib.import_module(f"symgrad.{face}")
        home = importlib.import_module(f"symgrad.{folder}.{face}")
        assert module.__all__ and module.__doc__, face
        for name in module.__all__:
            assert getattr(module, name) is getattr(home, name), (face, name)
        body = ast.parse((PACKAGE / f"{face}.py").read_text()).body
        assert all(isinstance(s, (ast.Expr, ast.ImportFrom, ast.Assign)) for s in body), face
    code = ("import symgrad as sg; print(sg.testing.check_grads.__module__, "
            "sg.errors.ShapeError.__module__, sg.tree_util.tree_map.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["symgrad.tools.testing", "symgrad.errors", "symgrad.base.tree_util"], out


def test_only_faces_api_and_the_entry_points_stay_at_the_top():
    """The top level is no drawer: every module there is a face of a folder, the public
    names (``api``), or the package's entry points."""
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top - set(FACES) <= {"__init__", "__main__", "api"}, top
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        == {k for k in FLOORS if k not in FACES and (PACKAGE / k).is_dir()}


def test_no_module_outside_the_op_stanzas_is_over_700_lines():
    """One module, one job: past ~700 lines a module does several (``ops/`` is exempt: a
    stanza file holds one family of ops, each stanza its own job)."""
    long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text().splitlines())
        if rel.split("/")[0] != "ops" and lines > 700:
            long[rel] = lines
    assert not long, f"modules over 700 lines: {long}"
