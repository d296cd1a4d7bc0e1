"""``symgrad.tree_util``: pytrees as ``jax.tree_util`` has them (the face of
:mod:`symgrad.base.tree_util`)."""

from .base.tree_util import (
    PyTreeDef,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = ["PyTreeDef", "register_pytree_node", "tree_flatten", "tree_leaves", "tree_map",
           "tree_structure", "tree_unflatten"]
