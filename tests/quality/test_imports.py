"""Imports: no module imports one that imports it back, counting every import that runs —
at module level, inside functions, through ``importlib.import_module("symgrad....")`` and
the package faces an import runs first (``import symgrad.a.b`` runs ``symgrad/a/__init__``)
— and no module imports another's private (underscore) name. What other work still has to
untie is pinned below by name, and may only shrink."""

from __future__ import annotations

import ast
from pathlib import Path

import symgrad

PACKAGE = Path(symgrad.__file__).parent
ROOT = "symgrad"

# Imports that still close a circle, each (importer, imported): the op stanzas that load
# symgrad.transforms for their derivative rules. Remove an entry when its circle is untied
# (the test says which ones are); add none.
CIRCLES_LEFT: frozenset[tuple[str, str]] = frozenset()


def _triples(table: dict[str, dict[str, str]]) -> frozenset[tuple[str, str, str]]:
    """``{importer: {module: "names"}}`` (dotted names under symgrad) as triples."""
    return frozenset((f"{ROOT}.{imp}", f"{ROOT}.{mod}", n) for imp, mods in table.items()
                     for mod, names in mods.items() for n in names.split())


# Private names still imported from another module, by importer. None is left; add none.
# (The helpers generated code calls are named ``_sg_*`` so they never clash with a user's
# names in an emitted module; that prefix is a namespace, not privacy: not counted.)
PRIVATE_LEFT: frozenset[tuple[str, str, str]] = _triples({})


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join([ROOT, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_time_nodes(tree: ast.AST):
    """Every node of ``tree`` that can run: all but the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _absolute(module: str, level: int, package: str) -> str:
    if not level:
        return module
    base = package.split(".")
    base = base[: len(base) - level + 1]
    return ".".join([*base, module]) if module else ".".join(base)


def _named_imports(name: str, path: Path, modules: dict[str, Path]):
    """``(module imported, names taken from it)`` for each import statement and
    ``importlib.import_module`` call with a literal name that can run."""
    package = _package(name, path)
    for node in _run_time_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node.module or "", node.level, package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub, ()) if sub in modules else (target, (alias.name,))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            text = node.args[0].value
            level = len(text) - len(text.lstrip("."))
            yield _absolute(text.lstrip("."), level, package), ()


def run_time_imports() -> dict[str, set[str]]:
    """``{module: the modules importing it runs}``: its imports that can run, each with
    the packages above the imported module (their faces run first; the root's, which is
    lazy, aside). A module's own packages are not counted: they are loaded before it."""
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for target, _ in _named_imports(name, path, modules):
            parts = target.split(".")
            found.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
        edges[name] = {t for t in found if t in modules and t != name
                       and not name.startswith(t + ".")}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (iterative
    Tarjan)."""
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
                    work.append((w, iter(sorted(edges[w]))))
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


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        v = stack.pop()
        if v == goal:
            return True
        for w in edges[v] - seen:
            seen.add(w)
            stack.append(w)
    return False


def test_no_import_circle_beyond_the_ones_left_to_untie():
    edges = run_time_imports()
    cut = {m: {t for t in ts if (m, t) not in CIRCLES_LEFT} for m, ts in edges.items()}
    assert not circles(cut), circles(cut)
    untied = sorted(e for e in CIRCLES_LEFT
                    if e[1] not in edges.get(e[0], ()) or not _reaches(edges, e[1], e[0]))
    assert not untied, f"these imports no longer close a circle: drop them from the list: " \
                       f"{untied}"


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
    ran = {a.name for n in _run_time_nodes(tree) if isinstance(n, ast.Import)
           for a in n.names}
    assert ran == {"b", "c"}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def private_imports() -> set[tuple[str, str, str]]:
    """``(importer, module, name)`` for every underscore name a module imports from
    another (dunders aside), or reads off a module it imported (``mod._name``)."""
    modules = _modules()
    found = set()
    for name, path in modules.items():
        bound: dict[str, str] = {}  # local name -> the symgrad module it is bound to
        for target, names in _named_imports(name, path, modules):
            if not target.startswith(ROOT):
                continue
            for n in names:
                if n.startswith("_") and not n.startswith(("__", "_sg_")):
                    found.add((name, target, n))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _absolute(node.module or "", node.level, _package(name, path))
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{target}.{alias.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith(("__", "_sg_"))):
                found.add((name, bound[node.value.id], node.attr))
    return {f for f in found if f[0] != f[1]}


def test_no_private_name_is_imported_from_another_module():
    found = private_imports()
    new = sorted(found - PRIVATE_LEFT)
    assert not new, f"private names imported from another module (make them public where " \
                    f"they are shared): {new}"
    gone = sorted(PRIVATE_LEFT - found)
    assert not gone, f"no longer imported: drop them from PRIVATE_LEFT: {gone}"
