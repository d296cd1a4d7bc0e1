"""Pictures and text of graphs for people: jaxpr-style listings and infix text (from the IR),
Graphviz DOT and matplotlib drawings of the forward graph and B."""

from ..ir.text import infix, listing
from .dot import to_dot
from .draw import draw

__all__ = ["draw", "infix", "listing", "to_dot"]
