"""The NumPy target (``backend="numpy"``, the default) and its all-scalar variant
(``scalars="math"``).

* :mod:`.printer` — :class:`~.printer.NumpyPrinter` and :class:`~.printer.ScalarMathPrinter`;
* :mod:`.table` — each op's NumPy template; :mod:`.math_table` — each op's ``math`` form.
"""
