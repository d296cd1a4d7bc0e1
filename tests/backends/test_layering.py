"""How the modules of symgrad/backends/ import each other: no circle even counting the
imports run inside functions and through ``importlib`` strings, no private name imported
from another module, and the shared modules reach a target only through the registry."""

from __future__ import annotations

import ast
from pathlib import Path

import symgrad as sg

PACKAGE = Path(sg.__file__).parent
BACKENDS = PACKAGE / "backends"


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _module_names()


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` that runs at some time (the ``if TYPE_CHECKING:`` blocks
    left out: they never run)."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        if _type_checking(node):
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def run_time_imports(name: str, tree: ast.AST) -> dict[str, list[str]]:
    """``{module imported: [names taken from it]}`` of module ``name``: its ``import``
    statements wherever they stand (inside functions too) and its
    ``importlib.import_module("...")`` strings, as dotted names under symgrad."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, list[str]] = {}

    def resolve(module: str, level: int) -> str:
        if not level:
            return module
        base = package.split(".")[: len(package.split(".")) - level + 1]
        return ".".join([*base, module] if module else base)

    for node in _statements(tree):
        if isinstance(node, ast.ImportFrom):
            target = resolve(node.module or "", node.level)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    out.setdefault(sub, [])
                else:
                    out.setdefault(target, []).append(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                out.setdefault(alias.name, [])
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant)):
            text = node.args[0].value
            level = len(text) - len(text.lstrip("."))
            out.setdefault(resolve(text.lstrip("."), level), [])
    return {m: names for m, names in out.items() if m.split(".")[0] == "symgrad"}


def _edges() -> dict[str, set[str]]:
    """Module -> the modules importing it runs, with the packages whose ``__init__`` such an
    import runs first (those the importer is not already inside)."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target in run_time_imports(name, ast.parse(path.read_text(encoding="utf-8"))):
            parts = target.split(".")
            for k in range(1, len(parts) + 1):
                prefix = ".".join(parts[:k])
                inside = name == prefix or name.startswith(prefix + ".")
                if prefix in MODULES and prefix != name and not (k < len(parts) and inside):
                    edges[name].add(prefix)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def test_no_import_circle_through_backends_counting_imports_inside_functions():
    found = [c for c in circles(_edges()) if any(m.startswith("symgrad.backends") for m in c)]
    assert not found, found


def test_the_import_walk_sees_function_bodies_and_importlib_strings():
    tree = ast.parse("""
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from .printer import Printer
def f():
    from .stages import lower
    import importlib
    return importlib.import_module("symgrad.backends.loops")
""")
    found = run_time_imports("symgrad.backends.layout", tree)
    assert set(found) == {"symgrad.backends.stages", "symgrad.backends.loops"}
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert circles(edges) == [["a", "b", "c"]]


# Emitted helper functions keep the ``_sg_`` prefix: the name is part of the generated
# module (no user variable may take it), not a mark of privacy in symgrad.
def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("_sg_")


def test_no_private_name_is_imported_across_backends_modules():
    found = []
    for name, path in MODULES.items():
        if not name.startswith("symgrad.backends"):
            continue
        for target, names in run_time_imports(name, ast.parse(path.read_text())).items():
            found += [f"{name} imports {target}.{n}" for n in names if _private(n)]
    assert not found, found


def test_shared_backends_modules_reach_targets_only_through_the_registry():
    """``backends/*.py`` (the package face aside) import ``backends.targets`` (``TARGETS``,
    ``target``) at most, never a target's own modules; the printer base, the loop emitter
    and the stages know no target."""
    found = []
    for path in sorted(BACKENDS.glob("*.py")):
        if path.name == "__init__.py":
            continue
        name = f"symgrad.backends.{path.stem}"
        for target in run_time_imports(name, ast.parse(path.read_text())):
            if target.startswith("symgrad.backends.targets."):
                found.append(f"{path.name} imports {target}")
    assert not found, found
