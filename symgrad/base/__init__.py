"""The ground floor every phase may import: the error types users catch (:mod:`.errors`),
the progress reports of long steps (:mod:`.progress`) and pytrees (:mod:`.tree_util`).
Nothing here imports the rest of symgrad; users reach them as :mod:`symgrad.errors`,
:mod:`symgrad.progress` and :mod:`symgrad.tree_util`."""
