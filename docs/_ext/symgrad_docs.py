"""Sphinx directives of symgrad's site: the API reference made from the live public lists,
and the benchmark tables made from ``benchmarks/measured/``.

``symgrad-api`` writes one autodoc entry per public name, so the reference follows the code:
a name added to ``symgrad.__all__``, to the op registry (``symgrad.numpy``), to a
``symgrad.scipy`` module's ``__all__`` or to ``symgrad.extend`` is documented at the next
build without editing a page::

    ```{symgrad-api} symgrad
    :names: var const parse
    ```

    ```{symgrad-api} symgrad.numpy
    :select: ufuncs
    ```

    ```{symgrad-api} symgrad
    :select: rest
    ```

``:select: rest`` documents the module's public names that no earlier entry of the page
documented (the page's curated groups come first). ``symgrad-benchmark`` includes a table of
:mod:`benchmarks.tables`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import types
from typing import Any

import numpy as np
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def public_names(modname: str) -> list[str]:
    """The public names of a documented module, as a user reaches them.

    ``symgrad``: its ``__all__`` and every op function of :mod:`symgrad.api`;
    ``symgrad.numpy``: every name without an underscore (``linalg.solve`` spelled so);
    other modules: their ``__all__``.
    """
    module = importlib.import_module(modname)
    if modname == "symgrad":
        api = importlib.import_module("symgrad.api")
        ops = [n for n in vars(api) if not n.startswith("_") and n != "annotations"]
        return sorted({*module.__all__, *ops})
    if modname == "symgrad.numpy":
        names = {n for n in dir(module) if not n.startswith("_") and n != "annotations"}
        return sorted(names | {f"linalg.{n}" for n in dir(module.linalg)})
    return list(module.__all__)


def resolve(modname: str, name: str) -> Any:
    obj: Any = importlib.import_module(modname)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# -- which names a group holds ----------------------------------------------------------------


@functools.cache
def _traced_names() -> frozenset[str]:
    """The names ``symgrad.numpy`` traces (read once: making the list walks the registry)."""
    return frozenset(importlib.import_module("symgrad.frontend.functions").traced_names())


def _numpy_groups(name: str) -> str:
    """The group of a ``symgrad.numpy`` name on its reference page."""
    if name.startswith("linalg."):
        return "linalg"
    if name not in _traced_names():
        return "numpy-own" if name in _NUMPY_OWN else "tools"
    if isinstance(getattr(np, name, None), np.ufunc):
        return "ufuncs"
    return "functions" if hasattr(np, name) else "beyond"


# NumPy's own constants and types, re-exported unchanged by symgrad.numpy
_NUMPY_OWN = {"pi", "e", "inf", "nan", "newaxis", "euler_gamma", "float64", "float32", "int64",
              "int32", "bool_", "bool", "double", "single", "int_", "intp", "floating",
              "integer", "dtype", "finfo", "iinfo", "errstate", "ndarray", "broadcast_shapes",
              "result_type", "can_cast", "r_", "c_", "random"}


@functools.cache
def _op_functions() -> frozenset[str]:
    """``sg.<name>`` functions that are the op functions of ``symgrad.numpy``."""
    sg = importlib.import_module("symgrad")
    return frozenset(n for n in public_names("symgrad") if n not in sg.__all__)


# -- one entry per name -----------------------------------------------------------------------


def _entry(modname: str, name: str) -> list[str]:
    """The reStructuredText of one public name."""
    obj = resolve(modname, name)
    full = f"{modname}.{name}"
    here = [f"   :module: {modname}", ""]
    if modname == "symgrad.numpy" and name in _NUMPY_OWN:
        return [f".. py:data:: {name}", *here,
                f"   NumPy's own ``numpy.{name}``, re-exported unchanged.", ""]
    if isinstance(obj, type) and modname != "symgrad" and _top_level(obj):
        kind = "exception" if issubclass(obj, BaseException) else "class"
        return [f".. py:{kind}:: {name}", *here,
                f"   The same class as :{kind[:3]}:`symgrad.{obj.__name__}`.", ""]
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return [f".. autoexception:: {full}", ""]
    if isinstance(obj, type):
        return [f".. autoclass:: {full}", "   :members:", ""]
    if isinstance(obj, types.ModuleType) and inspect.isfunction(getattr(obj, name, None)):
        # a callable package (``sg.passes()``): documented by the function it calls
        fn = getattr(obj, name)
        return [f".. py:function:: {name}{_signature(fn)}", *here,
                *_indented(inspect.getdoc(fn) or ""), ""]
    if isinstance(obj, types.ModuleType):
        if name == "linalg":
            return [f".. py:data:: {name}", *here,
                    "   The namespace of NumPy's ``linalg`` functions: "
                    "``symgrad.numpy.linalg``, listed on the :mod:`symgrad.numpy` page as "
                    "``linalg.<name>``.", ""]
        # the module's own page holds its entry (``py:module``)
        return [f"``sg.{name}``: the module :mod:`{modname}.{name}`, its own page in this "
                "reference.", ""]
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return [f".. autofunction:: {full}", ""]
    methods = _public_methods(obj)
    if methods:  # an object of methods (``scipy.stats.norm``): its class's text, then each
        lines = [f".. py:data:: {name}", *here, *_indented(inspect.getdoc(type(obj)) or ""), ""]
        for method in methods:
            lines += [f"   .. autofunction:: {full}.{method}", ""]
        return lines
    if callable(obj):  # an instance (``sg.limits``): documented by its class's module
        doc = inspect.getdoc(importlib.import_module(type(obj).__module__)) or ""
        return [f".. py:data:: {name}", *here, *_indented(doc), ""]
    if len(repr(obj)) <= 60:
        return [f".. py:data:: {name}", f"   :module: {modname}", f"   :value: {obj!r}", ""]
    size = f" of {len(obj)} entries" if hasattr(obj, "__len__") else ""
    return [f".. py:data:: {name}", f"   :module: {modname}", f"   :type: {type(obj).__name__}",
            "", f"   A ``{type(obj).__name__}``{size}.", ""]


def _top_level(cls: type) -> bool:
    """Whether a class is documented on the ``symgrad`` page (``sg.UnsupportedError``)."""
    sg = importlib.import_module("symgrad")
    return getattr(sg, cls.__name__, None) is cls and cls.__name__ in sg.__all__


def _public_methods(obj: Any) -> list[str]:
    if isinstance(obj, types.ModuleType) or callable(obj):
        return []
    return [n for n in dir(type(obj)) if not n.startswith("_")
            and inspect.isfunction(getattr(type(obj), n))]


def _indented(doc: str) -> list[str]:
    return ["   " + ln if ln else "" for ln in doc.splitlines()]


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(*args, **kwargs)"


def _documented(env: Any) -> set[str]:
    """The Python objects the page being read has documented so far."""
    objects = env.domaindata.get("py", {}).get("objects", {})
    return {name for name, entry in objects.items() if entry.docname == env.docname}


class SymgradApi(SphinxDirective):
    """Autodoc entries for public names of a module (``:names:`` or ``:select:``)."""

    required_arguments = 1
    option_spec = {"names": directives.unchanged, "select": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        names = self._names(modname)
        lines: list[str] = []
        for name in names:
            lines += _entry(modname, name)
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=f"<{modname} reference>"),
                                self.content_offset, container)
        return container.children

    def _names(self, modname: str) -> list[str]:
        if "names" in self.options:
            wanted = self.options["names"].split()
            missing = sorted(set(wanted) - set(public_names(modname)))
            if missing:
                raise self.error(f"{modname} has no public names {missing}")
            return wanted
        select = self.options.get("select", "all")
        everything = public_names(modname)
        if modname == "symgrad":
            everything = [n for n in everything if n not in _op_functions()]
        if select == "all":
            return everything
        if select == "rest":
            done = _documented(self.env)
            return [n for n in everything if f"{modname}.{n}" not in done]
        if modname == "symgrad.numpy":
            return [n for n in everything if _numpy_groups(n) == select]
        raise self.error(f"unknown selection {select!r} for {modname}")


class SymgradSubmodules(SphinxDirective):
    """A section per submodule of a package's ``__all__`` (``symgrad.scipy.special``, ...),
    each with its module text and an entry per public name."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        package = importlib.import_module(self.arguments[0])
        lines: list[str] = []
        for name in package.__all__:
            full = f"{package.__name__}.{name}"
            if not isinstance(getattr(package, name), types.ModuleType):
                continue
            title = f"``{full}``"
            lines += [title, "-" * len(title), "", f".. py:module:: {full}", "",
                      f".. automodule:: {full}", "   :no-members:", "   :no-index:", "",
                      f".. symgrad-api:: {full}", ""]
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=f"<{package.__name__}>"),
                                 container)
        return container.children


class SymgradOpTable(SphinxDirective):
    """The ``sg.<name>`` op functions, each linked to its ``symgrad.numpy`` entry."""

    def run(self) -> list[nodes.Node]:
        names = sorted(_op_functions())
        text = ", ".join(f":func:`{n} <symgrad.numpy.{n}>`" for n in names)
        container = nodes.container()
        self.state.nested_parse(StringList([text]), self.content_offset, container)
        return container.children


class SymgradBenchmark(SphinxDirective):
    """A table of ``benchmarks/measured/<name>.json``, as :mod:`benchmarks.tables` writes it."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        from benchmarks import tables

        path = tables.MEASURED / f"{self.arguments[0]}.json"
        self.env.note_dependency(str(path))
        markdown = tables.markdown(tables.load(path))
        container = nodes.container()
        self.state.nested_parse(StringList(markdown.splitlines(), source=str(path)),
                                self.content_offset, container)
        return container.children


_OP_SUMMARY = re.compile(r"^[\w.]+(\(.*?\))?: ")


def op_docstrings(app: Any, what: str, name: str, obj: Any, options: Any,
                  lines: list[str]) -> None:
    """The op functions' text is the stanza's one-line summary (``abs(x): |x|``), plain text,
    not reStructuredText: escape what docutils would read as markup. A ``symgrad.numpy``
    function without text of its own is NumPy's function of that name: say so."""
    if len([ln for ln in lines if ln.strip()]) == 1 and _OP_SUMMARY.match(lines[0]):
        lines[0] = lines[0].replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
    short = name.removeprefix("symgrad.numpy.")
    if not any(lines) and name.startswith("symgrad.numpy.") and _numpy_function(short):
        lines.append(f"NumPy's ``numpy.{short}``: the same signature and meaning, traced.")


def _numpy_function(name: str) -> bool:
    obj: Any = np
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj is not None


def setup(app: Any) -> dict:
    app.connect("autodoc-process-docstring", op_docstrings)
    app.add_directive("symgrad-api", SymgradApi)
    app.add_directive("symgrad-ops", SymgradOpTable)
    app.add_directive("symgrad-submodules", SymgradSubmodules)
    app.add_directive("symgrad-benchmark", SymgradBenchmark)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
