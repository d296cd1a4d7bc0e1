"""The targets: one folder each, holding its printer, its tables and what loads its modules.

* :mod:`.numpy` — :class:`NumpyPrinter` (the default) and :class:`ScalarMathPrinter`
  (``scalars="math"``: Python floats with ``math``);
* :mod:`.array_api` — :class:`ArrayApiPrinter`, with :class:`JaxPrinter` and
  :class:`TorchPrinter` as thin variants;
* :mod:`.numba` — :class:`NumbaPrinter`: the NumPy printer whose fused regions call
  compiled loops (``backend="numba"``).

Each printer is a :class:`~symgrad.backends.printer.Printer` with its table; a
:class:`~symgrad.backends.target.Target` (:data:`~symgrad.backends.target.TARGETS`) names it.
"""

from ..printer import Printer
from .array_api.printer import ArrayApiPrinter, JaxPrinter, TorchPrinter
from .numpy.printer import NumpyPrinter, ScalarMathPrinter

__all__ = ["ArrayApiPrinter", "JaxPrinter", "NumpyPrinter", "Printer", "ScalarMathPrinter",
           "TorchPrinter"]
