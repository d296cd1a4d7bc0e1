"""A target of ``to_source``/``compile``: what its modules look like and how they load.

A :class:`Target` is one object per ``backend=`` name, declared in its folder
(:mod:`symgrad.backends.targets`): its printer (which holds the op table), the module's
import lines, the namespace the templates call, the docstring's first line, the libraries
the code needs, the pip extra that installs them and the pipeline stages it runs after the
compile passes (``passes``), as data; and as behaviour, how a module of its text is run
(:meth:`Target.load`) and what ``compile`` hands back for one of its functions
(:meth:`Target.wrap`). The defaults are NumPy's: the module is run from its text,
its function wrapped with the input checks of ``sg.evaluate``.

>>> from symgrad.backends.targets import target
>>> tgt = target("jax")
>>> tgt.namespace, tgt.printer.__name__, tgt.numpy_only
('xp', 'JaxPrinter', False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .loaded import CompiledFunction, load_source

if TYPE_CHECKING:
    from ..ir.graph import Node
    from .printer import Printer
    from .template import Template

__all__ = ["Target"]


@dataclass(frozen=True, kw_only=True)
class Target:
    """One backend of ``to_source``/``compile``: see the module docstring."""

    name: str
    printer: type[Printer]  # prints the module; holds the op table
    header: tuple[str, ...]  # the module's first lines (comment, imports)
    namespace: str  # the name the templates call (``np.sin``, ``xp.sin``)
    label: str  # the first line of each function's docstring
    libraries: tuple[str, ...]  # the imports that must succeed for the code to run
    extra: str  # the pip extra that installs them
    # op -> why this target's printer has no form for it (its table says None)
    unsupported: dict[str, str] = field(default_factory=dict)
    # op -> why this target cannot write it for complex operands (complex values in order)
    complex_unsupported: dict[str, str] = field(default_factory=dict)
    # the module's functions take and return NumPy arrays (SciPy's helpers and sparse
    # patterns need that)
    numpy_only: bool = True
    # the pipeline stages this target runs after the compile passes (symgrad.passes.registry):
    # "arrays" (batched sums written back as sums), "promote" (NumPy's dtype promotion)
    passes: tuple[str, ...] = ()

    @property
    def table(self) -> dict[str, Template | None]:
        """The op table of this target's printer."""
        return self.printer.table

    def load(self, source: str, tag: str) -> tuple[dict[str, Any], str]:
        """Run generated ``source`` as a fresh module: its namespace and its file name
        (``tag`` names it)."""
        return load_source(source, tag)

    def review(self, fn: Callable) -> None:
        """Say what a compiled function ``fn`` did not get from this target (a warning);
        nothing here."""

    def wrap(self, raw: Callable, params: list[Node], source: str, filename: str,
             check: bool) -> Callable:
        """What ``compile`` returns for generated function ``raw`` of ``params``: with
        ``check``, a :class:`~.loaded.CompiledFunction` checking its inputs as
        ``sg.evaluate`` does; else ``raw`` itself. Either has ``source``, ``inputs``,
        ``raw`` and ``filename``."""
        raw.source, raw.inputs, raw.filename = source, tuple(n.name for n in params), filename
        if not check:
            raw.raw = raw
            return raw
        return CompiledFunction(raw, params, source, filename)
