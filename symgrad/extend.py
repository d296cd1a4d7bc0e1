"""``symgrad.extend``: your own op in one call, :func:`defop` (the face of
:mod:`symgrad.tools.extend`)."""

from .tools.extend import ExtensionError, defop, elementwise, norm_axis, same

__all__ = ["ExtensionError", "defop", "elementwise", "norm_axis", "same"]
