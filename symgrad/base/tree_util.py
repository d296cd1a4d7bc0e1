"""Pytrees as ``jax.tree_util`` has them: nests of containers whose leaves are arrays.

Tuples, lists, dicts (in sorted key order, as JAX), namedtuples, dataclasses and ``None``
(a tree with no leaves) are containers; a class of your own becomes one with
:func:`register_pytree_node`. Everything else is a leaf. The function transforms
(``sg.grad(fun)``, ``sg.jacobian(fun)``, ``sg.vmap``...) take and return pytrees: a
gradient has the structure of the argument it is taken with respect to.

>>> import symgrad as sg
>>> leaves, tree = sg.tree_util.tree_flatten({"b": (1.0, 2.0), "a": [3.0, None]})
>>> leaves
[3.0, 1.0, 2.0]
>>> sg.tree_util.tree_unflatten(tree, [10, 20, 30])
{'a': [10, None], 'b': (20, 30)}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from .errors import ArgumentError

__all__ = ["PyTreeDef", "register_pytree_family", "register_pytree_node", "tree_flatten",
           "tree_leaves", "tree_map", "tree_structure", "tree_unflatten"]

Flatten = Callable[[Any], tuple[Iterable[Any], Hashable]]
Unflatten = Callable[[Hashable, Iterable[Any]], Any]
_REGISTRY: dict[type, tuple[Flatten, Unflatten]] = {}
# a library's classes that become containers when first met (symgrad must not import it):
# module prefix -> cls -> (flatten, unflatten) or None
_FAMILIES: dict[str, Callable[[type], tuple[Flatten, Unflatten] | None]] = {}
_LEAVES: set[type] = set()  # classes a family was asked about and said are leaves
_MAX_DEPTH = 256


class PyTreeDef:
    """The structure of a pytree: hashable and comparable, so it keys caches."""

    __slots__ = ("kind", "aux", "children", "_hash")

    def __init__(self, kind: Any, aux: Hashable, children: tuple[PyTreeDef, ...]) -> None:
        self.kind, self.aux, self.children = kind, aux, children
        self._hash = hash((kind, aux, children))

    @property
    def num_leaves(self) -> int:
        if self.kind is _LEAF:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PyTreeDef) and self._hash == other._hash
                and self.kind == other.kind and self.aux == other.aux
                and self.children == other.children)

    def __repr__(self) -> str:
        if self.kind is _LEAF:
            return "*"
        inner = ", ".join(map(repr, self.children))
        name = self.kind if isinstance(self.kind, str) else self.kind.__name__
        return f"PyTreeDef({name}[{inner}])"


_LEAF = "leaf"
LEAF = PyTreeDef(_LEAF, None, ())


def register_pytree_node(cls: type, flatten: Flatten, unflatten: Unflatten) -> None:
    """Make ``cls`` a container: ``flatten(obj) -> (children, aux)`` (``aux`` hashable,
    static) and ``unflatten(aux, children) -> obj``, as ``jax.tree_util`` takes them.

    >>> import symgrad as sg
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> sg.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
    ...                                   lambda aux, ch: Pair(*ch))
    >>> sg.tree_util.tree_leaves(Pair(1.0, [2.0]))
    [1.0, 2.0]
    """
    if not isinstance(cls, type):
        raise ArgumentError(f"register_pytree_node needs a class, got {_type_name(cls)}")
    if not (callable(flatten) and callable(unflatten)):
        raise ArgumentError("register_pytree_node needs flatten and unflatten functions")
    _REGISTRY[cls] = (flatten, unflatten)


def register_pytree_family(module: str, lookup: Callable[[type], Any]) -> None:
    """Make the classes of library ``module`` (and its submodules) containers when first
    met, without importing it: ``lookup(cls)`` gives ``(flatten, unflatten)`` for a class
    that is one, None for a leaf (``scipy.sparse``'s matrices hold their values)."""
    _FAMILIES[module] = lookup
    _LEAVES.clear()


def _family(cls: type) -> tuple[Flatten, Unflatten] | None:
    """The functions a family registers for ``cls`` (registering them), or None."""
    if cls in _LEAVES:
        return None
    module = getattr(cls, "__module__", "") or ""
    for prefix, lookup in _FAMILIES.items():
        if module == prefix or module.startswith(prefix + "."):
            found = lookup(cls)
            if found is not None:
                _REGISTRY[cls] = found
                return found
    _LEAVES.add(cls)
    return None


def _type_name(value: Any) -> str:
    return type.__dict__["__name__"].__get__(type(value), type)  # never the object's code


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """The leaves of ``tree`` (left to right, dict keys sorted) and its structure."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, is_leaf, 0)


def _flatten(node: Any, leaves: list, is_leaf: Any, depth: int) -> PyTreeDef:
    if depth > _MAX_DEPTH:
        raise ArgumentError(f"a pytree nested more than {_MAX_DEPTH} levels deep")
    if is_leaf is not None and is_leaf(node):
        leaves.append(node)
        return LEAF
    cls = type(node)
    if node is None:
        return PyTreeDef("None", None, ())
    if cls is tuple or cls is list:
        kids = tuple(_flatten(c, leaves, is_leaf, depth + 1) for c in node)
        return PyTreeDef("tuple" if cls is tuple else "list", None, kids)
    if cls is dict:
        keys = _sorted_keys(node)
        kids = tuple(_flatten(node[k], leaves, is_leaf, depth + 1) for k in keys)
        return PyTreeDef("dict", tuple(keys), kids)
    if cls in _REGISTRY:
        children, aux = _REGISTRY[cls][0](node)
        kids = tuple(_flatten(c, leaves, is_leaf, depth + 1) for c in children)
        return PyTreeDef(cls, aux, kids)
    if _is_namedtuple(cls):
        kids = tuple(_flatten(c, leaves, is_leaf, depth + 1) for c in node)
        return PyTreeDef(cls, None, kids)
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        kids = tuple(_flatten(getattr(node, n), leaves, is_leaf, depth + 1) for n in names)
        return PyTreeDef(cls, names, kids)
    if _FAMILIES and _family(cls) is not None:
        return _flatten(node, leaves, is_leaf, depth)
    if hasattr(cls, "__sg_value__"):  # an array a traced function filled: its expression
        value = node.__sg_value__()
        node = value if value is not None else node
    leaves.append(node)
    return LEAF


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:
        raise ArgumentError("a dict in a pytree needs sortable keys (all str, or all "
                            f"numbers), got {', '.join(_type_name(k) for k in d)}") from None


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` holding ``leaves`` in order."""
    it = iter(leaves)
    out = _build(treedef, it)
    if next(it, _END) is not _END:
        raise ArgumentError(f"tree_unflatten: more leaves than {treedef!r} holds")
    return out


_END = object()


def _build(t: PyTreeDef, it: Any) -> Any:
    kind = t.kind
    if kind is _LEAF:
        leaf = next(it, _END)
        if leaf is _END:
            raise ArgumentError(f"tree_unflatten: too few leaves for {t!r}")
        return leaf
    if kind == "None":
        return None
    kids = [_build(c, it) for c in t.children]
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return kids
    if kind == "dict":
        return dict(zip(t.aux, kids))
    if kind in _REGISTRY:
        return _REGISTRY[kind][1](t.aux, kids)
    if _is_namedtuple(kind):
        return kind(*kids)
    return kind(**dict(zip(t.aux, kids)))  # a dataclass


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree``, in flattening order."""
    return tree_flatten(tree)[0]


def tree_structure(tree: Any) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied leaf by leaf (to the matching leaves of ``rest`` too), same structure.

    >>> import symgrad as sg
    >>> sg.tree_util.tree_map(lambda a, b: a + b, {"w": 1.0, "b": 2.0}, {"w": 10, "b": 20})
    {'b': 22.0, 'w': 11.0}
    """
    leaves, treedef = tree_flatten(tree)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r)
        if r_def != treedef:
            raise ArgumentError(f"tree_map: the trees differ in structure: {treedef!r} and "
                                f"{r_def!r}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
