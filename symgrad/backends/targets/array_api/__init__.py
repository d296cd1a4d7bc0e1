"""The array API targets: ``backend="array_api"`` (any conforming namespace), ``"jax"`` and
``"torch"``.

* :mod:`.printer` — :class:`~.printer.ArrayApiPrinter`, with :class:`~.printer.JaxPrinter`
  and :class:`~.printer.TorchPrinter` as thin variants;
* :mod:`.table` — each op's array API template (helpers in :mod:`.helpers`), with
  :mod:`.jax_table` and :mod:`.torch_table` overriding the entries that differ;
* :mod:`.literals` — constants as Python data the call's namespace makes arrays;
* the dtype promotion the array API leaves out is made explicit before they emit, by the
  ``promote`` stage each lists in its ``Target.passes`` (:mod:`symgrad.passes.promotion`);
* :mod:`.loader` — the compiled function, checking inputs without moving them;
* :mod:`.target` — the three :class:`~symgrad.backends.target.Target` objects: loading
  on their library, JAX's ``jit``, PyTorch's tensors.
"""
