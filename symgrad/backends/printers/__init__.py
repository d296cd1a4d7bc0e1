"""Printers: one class per kind of target, each a few hooks over :class:`Printer`.

* :mod:`.base` — :class:`Printer`: one assignment per node, names, provenance comments,
  ``del``, the parts of a long function;
* :mod:`.numpy` — :class:`NumpyPrinter` (the default) and :class:`ScalarMathPrinter`
  (``scalars="math"``: Python floats with ``math``);
* :mod:`.array_api` — :class:`ArrayApiPrinter`, with :class:`JaxPrinter` and
  :class:`TorchPrinter` as thin variants;
* :mod:`.numba` — :class:`NumbaPrinter`: the NumPy printer whose fused regions call
  compiled loops (``backend="numba"``).

A :class:`~symgrad.backends.target.Target` names its printer; the printer holds its table.
"""

from .array_api import ArrayApiPrinter, JaxPrinter, TorchPrinter
from .base import Printer
from .numpy import NumpyPrinter, ScalarMathPrinter

__all__ = ["ArrayApiPrinter", "JaxPrinter", "NumpyPrinter", "Printer", "ScalarMathPrinter",
           "TorchPrinter"]
