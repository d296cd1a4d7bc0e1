"""Front ends: text (:mod:`.parse`, a safe parser over Python's ``ast``) and Python code on
symbolic variables (:mod:`.functions`: one function per public op, read from its signature).
Both build the same graph for the same expression."""

from .functions import function_for
from .parse import parse

__all__ = ["function_for", "parse"]
