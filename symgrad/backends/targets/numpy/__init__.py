"""The NumPy target (``backend="numpy"``, the default) and its all-scalar variant
(``scalars="math"``).

* :mod:`.printer` — :class:`~.printer.NumpyPrinter` and :class:`~.printer.ScalarMathPrinter`;
* :mod:`.table` — each op's NumPy template; :mod:`.math_table` — each op's ``math`` form;
* :mod:`.loops` — how a scan's loop function looks (and its version over Python floats);
* :mod:`.literals` — constants as NumPy source; :mod:`.target` — its
  :class:`~symgrad.backends.target.Target`.
"""
