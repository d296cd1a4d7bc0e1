"""Structural sparsity rules: which elements of an op's result may depend on which elements
of each operand (the non-zeros of its local Jacobian), as index pairs.

A rule ``sparsity(n)`` returns, per operand, ``(rows, cols)``: two int64 arrays of flat
indices, output element ``rows[k]`` depends on operand element ``cols[k]``; or None where
the operand has no derivative. The propagation (:mod:`symgrad.transforms.sparsity`) composes
them. One rule per kind of op:

* elementwise ops keep the pattern (each result element depends on the operand element it
  broadcasts from: :func:`broadcast_map`);
* slicing, indexing, reshaping, transposing, concatenating shift it: the op's own
  implementation run on element ids says where each result element comes from
  (:func:`gather_map`);
* scatters (the adjoints of indexing) union it (:func:`scatter_map`);
* reductions and scans densify it along their axes (:func:`reduce_map`, :func:`lane_map`);
  products along shared indices (matmul, einsum) follow their index structure, skipping
  terms whose constant factor is zero (:func:`einsum_map`); matrix functions
  (``inv``, ``solve``, decompositions) are dense per matrix (:func:`batched_map`).

Every rule is a superset of the true non-zeros: that is all the colouring needs. The sizes
are budgeted (:data:`PAIR_LIMIT`): a map with more pairs raises ``LimitError``.

>>> import numpy as np
>>> rows, cols = broadcast_map((3, 1), (3, 2))
>>> rows.tolist(), cols.tolist()
([0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 2])
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from ..base.errors import LimitError
from ..ir.op import REGISTRY
from ..ir.shapes import Shape, fmt, is_float, reduced

PAIR_LIMIT = 50_000_000  # (output, operand) pairs one local map may have

Map = tuple[np.ndarray, np.ndarray]


def _check(count: int, what: str) -> None:
    if count > PAIR_LIMIT:
        raise LimitError(f"sparsity: {what} has {count:,} (output, operand) element pairs, "
                         f"more than the limit of {PAIR_LIMIT:,}; its Jacobian is too dense "
                         "for a sparsity pattern (use the dense derivative)")


def _ids(shape: Shape) -> np.ndarray:
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def broadcast_map(arg: Shape, out: Shape) -> Map:
    """Each element of an ``out``-shaped result depends on the element of the ``arg``-shaped
    operand it broadcasts from."""
    cols = np.broadcast_to(_ids(arg), out).ravel()
    return np.arange(cols.size, dtype=np.int64), np.ascontiguousarray(cols)


def elementwise_maps(n: Any) -> tuple[Map | None, ...]:
    """The broadcasting map of every float operand of an elementwise op."""
    return tuple(broadcast_map(a.shape, n.shape) if is_float(a.data.dtype) else None
                 for a in n.args)


def dense_map(arg: Shape, out: Shape) -> Map:
    """Every result element depends on every operand element."""
    m, k = math.prod(out), math.prod(arg)
    _check(m * k, f"a dense map {fmt(arg)} -> {fmt(out)}")
    rows = np.repeat(np.arange(m, dtype=np.int64), k)
    return rows, np.tile(np.arange(k, dtype=np.int64), m)


def dense_maps(n: Any) -> tuple[Map | None, ...]:
    """The fallback rule: dense for every float operand."""
    return tuple(dense_map(a.shape, n.shape) if is_float(a.data.dtype) else None for a in n.args)


def constant(a: Any) -> np.ndarray | None:
    """The value of operand Expr ``a`` if it is a constant node, else None."""
    data = a.data
    return data.attrs["value"] if data.is_const else None


def gather_map(n: Any, impl=None, attrs: dict | None = None) -> tuple[Map | None, ...]:
    """The maps of an op that only moves elements (a selection, a permutation, a copy):
    the op's implementation (or ``impl``) is run on element ids, which says which operand
    element each result element is. Integer operands must be constants (their values
    decide the selection); otherwise every result element may be any element (dense)."""
    fn = impl or REGISTRY[n.data.op].impl
    sizes = [a.size if is_float(a.data.dtype) else 0 for a in n.args]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    operands = []
    for k, a in enumerate(n.args):
        if is_float(a.data.dtype):
            operands.append(_ids(a.shape) + offsets[k] + 1)
        else:
            value = constant(a)
            if value is None:
                return dense_maps(n)
            operands.append(value)
    out = np.asarray(fn(*operands, **(attrs if attrs is not None else n.attrs))).ravel()
    rows = np.flatnonzero(out)
    src = out[rows] - 1
    which = np.searchsorted(offsets, src, side="right") - 1
    maps: list[Map | None] = []
    for k, a in enumerate(n.args):
        if not is_float(a.data.dtype):
            maps.append(None)
            continue
        pick = which == k
        maps.append((rows[pick].astype(np.int64), (src[pick] - offsets[k]).astype(np.int64)))
    return tuple(maps)


def scatter_map(n: Any, gather_impl, key_attrs: dict, values: int = 0,
                index_operands: tuple[int, ...] = ()) -> Map | None:
    """The map of a scatter (values ``n.args[values]`` added into a buffer at a key): each
    value element goes to the buffer element that indexing the buffer's element ids with
    the same key gives (several may add into one: they union)."""
    g = n.args[values]
    dyn = []
    for k in index_operands:
        value = constant(n.args[k])
        if value is None:
            return dense_map(g.shape, n.shape)
        dyn.append(value)
    dest = np.asarray(gather_impl(_ids(n.shape), *dyn, **key_attrs)).ravel()
    return dest.astype(np.int64), np.arange(dest.size, dtype=np.int64)


def reduce_map(n: Any, axes: tuple[int, ...] | None = None) -> Map:
    """A reduction over ``axes`` (default ``n.attrs["axis"]``, negative): each result element
    depends on the operand elements of its reduced group."""
    x = n.args[0]
    axes = n.attrs["axis"] if axes is None else axes
    kept = reduced(x.shape, tuple(sorted(axes)), True)
    rows = np.broadcast_to(_ids(kept), x.shape).ravel()
    return np.ascontiguousarray(rows), np.arange(x.size, dtype=np.int64)


def lane_map(n: Any, axis: int | None = None, flat: bool = False) -> Map:
    """A result of the operand's shape (flattened if ``flat``) whose elements depend on every
    element of their lane along ``axis`` (default ``n.attrs["axis"]``; all elements when
    ``flat``): softmax, cumulative sums, sorting."""
    x = n.args[0]
    if flat or x.ndim == 0:
        return dense_map(x.shape, n.shape)
    axis = n.attrs["axis"] if axis is None else axis
    lanes = np.moveaxis(_ids(x.shape), axis, -1).reshape(-1, x.shape[axis])
    m = lanes.shape[1]
    _check(lanes.size * m, f"a map along an axis of length {m}")
    rows = np.repeat(lanes, m, axis=1).ravel()
    cols = np.tile(lanes, (1, m)).ravel()
    return rows, cols


def batched_map(n: Any, cores: tuple[int, ...], out_core: int, shape: Shape | None = None
                ) -> tuple[Map | None, ...]:
    """Matrix functions: the last ``cores[k]`` axes of operand ``k`` and the last
    ``out_core`` axes of the result (of ``shape``: a call's result; default ``n``'s) are
    mixed densely; leading (batch) axes broadcast."""
    out = n.shape if shape is None else shape
    lead = out[: len(out) - out_core]
    oc = math.prod(out[len(out) - out_core:])
    maps: list[Map | None] = []
    for a, core in zip(n.args, cores):
        if not is_float(a.data.dtype):
            maps.append(None)
            continue
        ic = math.prod(a.shape[a.ndim - core:])
        _check(math.prod(lead) * oc * ic, f"a matrix function {fmt(a.shape)} -> {fmt(out)}")
        batch_ids = np.broadcast_to(_ids(a.shape[: a.ndim - core]), lead).reshape(-1)
        orow = _ids(lead + (oc,)).reshape(-1, oc)  # (B, oc)
        icol = batch_ids[:, None] * ic + np.arange(ic)[None, :]  # (B, ic)
        rows = np.broadcast_to(orow[:, :, None], orow.shape + (ic,)).ravel()
        cols = np.broadcast_to(icol[:, None, :], (icol.shape[0], oc, ic)).ravel()
        maps.append((np.ascontiguousarray(rows), np.ascontiguousarray(cols)))
    return tuple(maps)


def einsum_map(spec: str, n: Any) -> tuple[Map | None, ...]:
    """A sum of products over index letters (``"ij,jk->ik"``): result element ``[i, k]``
    depends on operand element ``[i, j]`` for each ``j`` where every other factor may be
    non-zero (a constant factor's zeros are skipped)."""
    lhs, out = spec.split("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for t, a in zip(terms, n.args):
        sizes.update(zip(t, a.shape))
    letters = "".join(dict.fromkeys(out + "".join(terms)))
    maps: list[Map | None] = []
    for k, (t, a) in enumerate(zip(terms, n.args)):
        if not is_float(a.data.dtype):
            maps.append(None)
            continue
        used = "".join(c for c in letters if c in out or c in t)
        space = tuple(sizes[c] for c in used)
        _check(math.prod(space), f"einsum {spec!r}")
        keep = np.ones(space, dtype=bool)
        for j, (tj, b) in enumerate(zip(terms, n.args)):
            value = constant(b)
            if j == k or value is None or not set(tj) <= set(used):
                continue
            keep &= _spread(value != 0, tj, used, sizes)
        where = np.nonzero(keep)
        rows = _flat_index(where, used, out, sizes)
        cols = _flat_index(where, used, t, sizes)
        maps.append((rows, cols))
    return tuple(maps)


def _spread(mask: np.ndarray, term: str, used: str, sizes: dict[str, int]) -> np.ndarray:
    """``mask`` (indexed by ``term``, possibly with repeated letters) over the letter space
    ``used``."""
    if len(set(term)) != len(term):  # a diagonal: take it first
        mask = np.einsum(f"{term}->{''.join(dict.fromkeys(term))}", mask.astype(np.int64)) != 0
        term = "".join(dict.fromkeys(term))
    perm = sorted(range(len(term)), key=lambda i: used.index(term[i]))
    view = np.transpose(mask, perm)
    shape = tuple(sizes[c] if c in term else 1 for c in used)
    return view.reshape(shape)


def _flat_index(where: tuple, used: str, term: str, sizes: dict[str, int]) -> np.ndarray:
    if not term:
        return np.zeros(len(where[0]) if where else 1, dtype=np.int64)
    coords = tuple(where[used.index(c)] for c in term)
    return np.ravel_multi_index(coords, tuple(sizes[c] for c in term)).astype(np.int64)


def matmul_spec(a: Shape, b: Shape, out: Shape) -> str:
    """An einsum spec equal to NumPy's ``matmul`` of shapes ``a`` and ``b`` (batch letters
    for broadcast axes; a broadcast axis of length 1 gets its own letter)."""
    letters = iter(string.ascii_letters)
    row, inner, col = next(letters), next(letters), next(letters)
    nb = len(out) - (len(a) > 1) - (len(b) > 1)
    batch = [next(letters) for _ in range(nb)]

    def own(shape: Shape, core: str) -> str:
        lead = shape[: len(shape) - len(core)]
        marks = []
        for d, c in zip(lead, batch[nb - len(lead):]):
            marks.append(c if d != 1 or out[batch.index(c)] == 1 else next(letters))
        return "".join(marks) + core

    ta = own(a, row + inner if len(a) > 1 else inner)
    tb = own(b, inner + col if len(b) > 1 else inner)
    to = "".join(batch) + (row if len(a) > 1 else "") + (col if len(b) > 1 else "")
    return f"{ta},{tb}->{to}"


__all__ = ["PAIR_LIMIT", "batched_map", "broadcast_map", "constant", "dense_map", "dense_maps",
           "einsum_map", "elementwise_maps", "gather_map", "lane_map", "matmul_spec",
           "reduce_map", "scatter_map"]
