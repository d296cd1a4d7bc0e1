"""What a derivative rule sees of a node (:class:`NodeView`): its operands and itself as
Exprs, its attributes, which operands' contributions the transform uses, and for a call
with several results its results and which of their tangents forward mode reads.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> y = sg.sin(x)
>>> view = NodeView(y.graph, y.data)
>>> [str(a) for a in view.args], str(view.out), view.needs(0)
(['x'], 'sin(x)', True)
"""

from __future__ import annotations

from .expr import Expr, projections
from .graph import Graph, Node


class NodeView:
    """What a backprop rule sees of a node: ``args`` and ``out`` as Exprs, ``attrs``."""

    __slots__ = ("graph", "data", "_args", "_needed", "_wanted")

    def __init__(self, graph: Graph, data: Node, needed: tuple[bool, ...] | None = None,
                 wanted: tuple[bool, ...] | None = None) -> None:
        self.graph, self.data, self._args, self._needed = graph, data, None, needed
        self._wanted = wanted

    def needs(self, k: int) -> bool:
        """Whether the transform uses operand ``k``'s contribution (a rule may skip building
        it otherwise: ``x * 2.0`` needs no adjoint for the constant)."""
        return self._needed is None or self._needed[k]

    def wants(self, k: int) -> bool:
        """For a call with several results: whether forward mode reads result ``k``'s
        tangent (a rule gives None for one it does not, and never refuses it: the gradient
        of ``svd``'s ``U`` of a wide matrix is not defined, ``S``'s is), or the sparsity
        propagation its pattern."""
        return self._wanted is None or self._wanted[k]

    @property
    def args(self) -> tuple[Expr, ...]:
        if self._args is None:
            graph = self.graph
            self._args = tuple([Expr(graph, a) for a in self.data.args])
        return self._args

    @property
    def out(self) -> Expr:
        return Expr(self.graph, self.data.id)

    @property
    def results(self) -> tuple[Expr, ...]:
        """A call's results (its projections, :func:`projections`)."""
        return projections(Expr(self.graph, self.data.id))

    @property
    def attrs(self) -> dict:
        return self.data.attrs

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> str:
        return self.data.dtype


__all__ = ["NodeView"]
