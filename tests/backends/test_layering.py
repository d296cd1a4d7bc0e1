"""How the shared modules of symgrad/backends/ reach a target: only through the registry
(``backends.targets``' ``TARGETS`` and ``target``), never a target's own modules, counting
imports run inside functions and through ``importlib`` strings. (No circle and no private
name across modules, package-wide: tests/quality/test_imports.py.)"""

from __future__ import annotations

from tests.support.imports import PACKAGE, modules, named_imports

BACKENDS = PACKAGE / "backends"


def test_shared_backends_modules_reach_targets_only_through_the_registry():
    """``backends/*.py`` (the package face aside) import ``backends.targets`` (``TARGETS``,
    ``target``) at most, never a target's own modules; the printer base, the loop emitter
    and the stages know no target."""
    mods = modules()
    found = []
    for path in sorted(BACKENDS.glob("*.py")):
        if path.name == "__init__.py":
            continue
        name = f"symgrad.backends.{path.stem}"
        for target, _ in named_imports(name, path, mods):
            if target.startswith("symgrad.backends.targets."):
                found.append(f"{path.name} imports {target}")
    assert not found, found


def test_the_check_above_sees_an_import_inside_a_function(tmp_path):
    """A shared module importing a target's printer inside a function is found."""
    path = tmp_path / "layout.py"
    path.write_text("def f():\n    from .targets.numba import printer\n    return printer\n")
    got = [t for t, _ in named_imports("symgrad.backends.layout", path, modules())]
    assert "symgrad.backends.targets.numba.printer" in got
