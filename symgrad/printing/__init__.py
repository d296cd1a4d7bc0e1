"""What people read about a graph: jaxpr-style listings and infix text (from the IR); the
backprop table (:mod:`.explain`) and the cost of each compile pass (:mod:`.stats`); one
picture of the forward graph beside its derivative subgraph B (:mod:`.scene`, made of
:mod:`.model`'s boxes placed by :mod:`.layout`) rendered by matplotlib (:func:`draw`),
Graphviz (:func:`to_dot`) and as an interactive HTML page (:func:`to_html`); and how an Expr
shows itself in Jupyter (:mod:`.notebook`)."""

from ..ir.text import infix, listing
from .dot import to_dot
from .draw import draw
from .html import to_html
from .notebook import register

register()  # Exprs show their formula, and derivatives their picture, in Jupyter

__all__ = ["draw", "infix", "listing", "to_dot", "to_html"]
