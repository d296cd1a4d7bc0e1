"""Every rewrite symgrad does, as named passes; the builder builds, passes rewrite.

``sg.passes()`` lists them, each with its one-line doc and the stages that run it, in the
order they run; :mod:`.registry` holds that list (:data:`~.registry.PASSES`), says where each
stage runs, and generates its table of stages and their passes from the passes' own tags.
:mod:`.pipeline` runs the stages: ``compile`` and ``to_source`` rebuild what they emit
through theirs (the exact passes by default; with ``fast_math=True`` the others too), the
derivative transforms roll and reduce traced loops first, reverse mode runs its stage on B
as it builds it, and :func:`.simplify.simplify` runs the rest on request. Rules are data
(:mod:`.pattern`): op names appear in patterns, and the driver applies them to each node as
it is built; a whole-graph pass shares what one run needs on a :mod:`.context`.

This package face imports nothing, so ``import symgrad`` stays light (the face of
``symgrad`` imports it first; ``sg.passes`` is the function of :mod:`symgrad.api`). Its
modules are imported as ``from symgrad.passes import rolling`` or ``import
symgrad.passes.rolling``: ``import symgrad.passes.rolling as R`` reads ``symgrad.passes``,
which is the function.
"""
