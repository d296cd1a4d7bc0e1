"""The Numba target (``backend="numba"``): a NumPy driver whose fused elementwise regions
and loops are compiled by Numba.

* :mod:`.printer` — :class:`~.printer.NumbaPrinter`, the NumPy printer calling kernels;
* :mod:`.fusion` — which regions become one kernel; :mod:`.source` — a kernel's source;
* :mod:`.loops` — a scan compiled whole as one loop function;
* :mod:`.table` — each op's scalar form inside a kernel;
* :mod:`.target` — its :class:`~symgrad.backends.target.Target`, whose modules are files
  Numba compiles or reads from its disk cache.
"""
