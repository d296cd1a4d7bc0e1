"""The import graph of the symgrad package as its source says it, counting every import
that can run: at module level, inside functions, through ``importlib.import_module`` with a
literal name, and the package faces an import runs first; ``if TYPE_CHECKING:`` bodies do
not run. Used by the quality suite's import tests and the backends' layering test."""

from __future__ import annotations

import ast
from pathlib import Path

import symgrad

PACKAGE = Path(symgrad.__file__).parent
ROOT = "symgrad"


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join([ROOT, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def run_time_nodes(tree: ast.AST):
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


def named_imports(name: str, path: Path, modules: dict[str, Path]):
    """``(module imported, names taken from it)`` for each import statement and
    ``importlib.import_module`` call with a literal name that can run."""
    package = _package(name, path)
    for node in run_time_nodes(ast.parse(path.read_text())):
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
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        found: set[str] = set()
        for target, _ in named_imports(name, path, mods):
            parts = target.split(".")
            found.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
        edges[name] = {t for t in found if t in mods and t != name
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


def reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether ``goal`` is reached from ``start`` along ``edges``."""
    seen, stack = {start}, [start]
    while stack:
        v = stack.pop()
        if v == goal:
            return True
        for w in edges[v] - seen:
            seen.add(w)
            stack.append(w)
    return False


def private_imports() -> set[tuple[str, str, str]]:
    """``(importer, module, name)`` for every underscore name a module imports from
    another (dunders aside), or reads off a module it imported (``mod._name``)."""
    mods = modules()
    found = set()
    for name, path in mods.items():
        bound: dict[str, str] = {}  # local name -> the symgrad module it is bound to
        for target, names in named_imports(name, path, mods):
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
                    if f"{target}.{alias.name}" in mods:
                        bound[alias.asname or alias.name] = f"{target}.{alias.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith(("__", "_sg_"))):
                found.add((name, bound[node.value.id], node.attr))
    return {f for f in found if f[0] != f[1]}
