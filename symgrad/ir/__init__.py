"""The intermediate representation: the graph (a networkx DAG with ordered operands,
hash-consed), the Expr handle, the op record the graph looks ops up in by name, shape and
dtype rules, and the IR as text (listing, infix). Nothing here knows an individual op."""

from .expr import Expr, F, build, call, const, var
from .graph import Graph, GraphError, Node
from .nodeview import NodeView
from .op import REGISTRY, Op, Signature, lookup, register, sig

__all__ = ["Expr", "F", "Graph", "GraphError", "Node", "NodeView", "REGISTRY", "Op",
           "Signature", "build", "call", "const", "lookup", "register", "sig", "var"]
