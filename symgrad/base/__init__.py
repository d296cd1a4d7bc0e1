"""The ground floor every phase may import: the error types users catch (:mod:`.errors`),
the progress reports of long steps (:mod:`.progress`), pytrees (:mod:`.tree_util`), and
the helpers the phases share: error-message text for any value (:mod:`.describe`) and the
garbage collector paused while a large graph is built (:mod:`.memory`). Nothing here
imports the rest of symgrad; users reach the first three as :mod:`symgrad.errors`,
:mod:`symgrad.progress` and :mod:`symgrad.tree_util`."""
