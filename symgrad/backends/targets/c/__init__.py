"""The C target (``backend="c"``): the Numba target's plan — which regions become one
compiled kernel, by the same cost model — with each kernel written in C99, compiled by the
system C compiler and loaded with :mod:`ctypes` (each kernel's entry a built-in
function Python calls directly).

* :mod:`.translate` — a kernel's body, as the Numba target writes it, in C; its arrays
  (views, products, LAPACK) in :mod:`.arrays`, its scalars (types, NumPy's functions) in
  :mod:`.scalars`, what it reads of the text in :mod:`.syntax`; scatter loops folded into
  the loop producing their operands first (:mod:`.fuse`);
* :mod:`.build` — compiling a module's C text (cached on disk by its hash) and loading it;
  a large text in parts built side by side (:mod:`.parts`);
* :mod:`.printer` — :class:`~.printer.CPrinter`, the NumPy driver calling the C functions;
* :mod:`.target` — its :class:`~symgrad.backends.target.Target`.
"""
