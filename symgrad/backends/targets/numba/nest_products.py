"""Loop-nest forms of products (BLAS through ``np.dot``, einsum as explicit loops, chains,
powers, traces, convolutions) and of sorting (``np.sort``, ``np.argsort``,
``np.searchsorted`` along the last axis), for :mod:`.nests`' table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....ops.products import parse_spec
from ....ops.structure import matmul_spec
from .nest_base import FLOATS, Site, Writer, affine, aligned, at, cast, copy_map, shape_of

# -- products ------------------------------------------------------------------------------------


def _blas(site: Site) -> bool:
    """Operands BLAS takes: vectors or matrices of the result's floating dtype."""
    return (site.node.dtype in FLOATS and all(a.dtype == site.node.dtype for a in site.args)
            and all(1 <= len(a.shape) <= 2 for a in site.args))


def einsum_lines(w: Writer, site: Site, spec: str, ins: Sequence[str],
                 shapes: Sequence[Sequence[int]], dtypes: Sequence[str]) -> None:
    """``out = einsum(spec, *ins)`` as loops: the output's letters outside, the summed
    ones inside, each term the product of the operands in order (an operand's axis of
    length 1 against a longer one is broadcast)."""
    n = site.node
    terms, right, sizes = parse_spec(spec, [tuple(s) for s in shapes])
    out = shape_of(n)
    T = site.ctor
    if out:
        w.alloc(site.out, out, n.dtype)
    index = {c: w.loop(sizes[c]) for c in right}
    summed = [c for c in dict.fromkeys("".join(terms)) if c not in index]
    acc = w.new("acc")
    w(f"{acc} = {T}(0)")
    for c in summed:
        index[c] = w.loop(sizes[c])
    factors = []
    for text, term, shape, dt in zip(ins, terms, shapes, dtypes):
        idx = ["0" if s == 1 and sizes[c] != 1 else index[c] for c, s in zip(term, shape)]
        factors.append(cast(n.dtype, at(text, shape, idx), dt))
    w(f"{acc} += {' * '.join(factors)}")
    w.end(len(summed))
    w.set(site.out, out, [index[c] for c in right], acc)
    w.end(len(right))


def _einsum(site: Site) -> list[str]:
    w = Writer(site)
    einsum_lines(w, site, site.attrs["spec"], site.ins, [shape_of(a) for a in site.args],
                 [a.dtype for a in site.args])
    return w.lines


def _matmul(site: Site) -> list[str]:
    """matmul and dot: BLAS (``np.dot``) for vectors and matrices of one floating dtype, a
    loop over the stacked matrices around it when batched, else the loops of the einsum
    it equals (integers, mixed dtypes, broadcast stacks)."""
    n, (a, b) = site.node, site.args
    if not a.shape or not b.shape:  # dot with a scalar: a product
        return copy_map(site, lambda idx: " * ".join(
            cast(n.dtype, at(t, shape_of(x), aligned(shape_of(x), shape_of(n), idx)), x.dtype)
            for t, x in zip(site.ins, site.args)))
    if _blas(site):
        summed = _sum_of_ones_product(site)
        return summed or [f"{site.out} = np.dot({site.ins[0]}, {site.ins[1]})"]
    w = Writer(site)
    if (n.dtype in FLOATS and a.dtype == b.dtype == n.dtype and len(a.shape) >= 2
            and len(b.shape) >= 2 and a.shape[:-2] == b.shape[:-2]):
        w.alloc(site.out, shape_of(n), n.dtype)
        idx = w.loops(a.shape[:-2])
        key, t = ", ".join(idx), w.new("p")
        w(f"{t} = np.dot({site.ins[0]}[{key}], {site.ins[1]}[{key}])")
        w.put(site.out, idx, t, shape_of(n)[len(idx):])
        w.end(len(idx))
        return w.lines
    spec = matmul_spec(shape_of(a), shape_of(b), shape_of(n))
    einsum_lines(w, site, spec, site.ins, [shape_of(a), shape_of(b)], [a.dtype, b.dtype])
    return w.lines


def _ones(node: Any) -> bool:
    """Whether ``node`` is a stored constant of ones (the vector a sum was written with)."""
    if not node.is_const:
        return False
    value = node.attrs["value"]
    return value.size > 0 and bool(np.all(value == 1))


def _sum_of_ones_product(site: Site) -> list[str] | None:
    """``x @ ones`` and ``ones @ x`` with ``x`` a matrix and the ones a column (a row)
    vector (sums the lowering wrote as products for NumPy's BLAS) as the loops of the sums
    they are, or None (a matrix of ones makes a product of repeated sums: BLAS's call):
    Numba's typing of an ``np.dot`` call costs 0.2-0.45 s of a cold build, a sum's loop
    next to nothing."""
    n, (a, b) = site.node, site.args
    out, w = shape_of(n), Writer(site)
    if (len(a.shape) == 2 and tuple(b.shape) in ((a.shape[1], 1), (a.shape[1],))
            and _ones(b) and not _ones(a)):
        w.alloc(site.out, out, n.dtype)
        i, acc = w.loop(a.shape[0]), w.new("acc")
        w(f"{acc} = {site.ctor}(0)")
        j = w.loop(a.shape[1])
        w(f"{acc} += {site.ins[0]}[{i}, {j}]")
        w.end()
        w.set(site.out, out, [i, "0"][:len(out)], acc)
        w.end()
        return w.lines
    if len(b.shape) == 2 and tuple(a.shape) in ((1, b.shape[0]), (b.shape[0],)) and _ones(a):
        w.alloc(site.out, out, n.dtype, fill="zeros")
        i, j = w.loop(b.shape[0]), w.loop(b.shape[1])
        w(f"{at(site.out, out, ['0', j][-len(out):])} += {site.ins[1]}[{i}, {j}]")
        w.end(2)
        return w.lines
    return None


def _outer(site: Site) -> list[str]:
    n = site.node
    (a, b) = site.args
    return copy_map(site, lambda idx: f"{cast(n.dtype, f'{site.ins[0]}[{idx[0]}]', a.dtype)} * "
                                       f"{cast(n.dtype, f'{site.ins[1]}[{idx[1]}]', b.dtype)}")


def _multi_dot(site: Site) -> list[str]:
    """np.linalg.multi_dot: NumPy's order of the products (the cheapest, from the static
    shapes), each one ``np.dot``; a first (last) vector is a row (column)."""
    shapes = [shape_of(a) for a in site.args]
    mats = [(1, s[0]) if len(s) == 1 and k == 0 else (s[0], 1) if len(s) == 1 else s
            for k, s in enumerate(shapes)]
    w = Writer(site)
    names = []
    for text, s, m in zip(site.ins, shapes, mats):
        if len(s) == 1:
            t = w.new("m")
            w(f"{t} = np.ascontiguousarray({text}).reshape({m!r})")
            names.append(t)
        else:
            names.append(text)
    order = _chain_order(mats)

    def product(i: int, j: int) -> str:
        if i == j:
            return names[i]
        k = order[i][j]
        left, right = product(i, k), product(k + 1, j)
        t = w.new("p")
        w(f"{t} = np.dot({left}, {right})")
        return t

    result = product(0, len(names) - 1)
    out = shape_of(site.node)
    w(f"{site.out} = {result}.reshape({out!r})" if out else f"{site.out} = {result}[0, 0]")
    return w.lines


def _chain_order(mats: Sequence[Sequence[int]]) -> list[list[int]]:
    """NumPy's multi_dot parenthesisation: for three matrices the cheaper of (AB)C and
    A(BC) (ties: (AB)C), else the matrix-chain dynamic programme (``s[i][j]``: the split)."""
    n = len(mats)
    dims = [m[0] for m in mats] + [mats[-1][1]]
    split = [[0] * n for _ in range(n)]
    if n == 3:
        a0, a1b0, b1c0, c1 = dims
        cost1 = a0 * b1c0 * (a1b0 + c1)
        cost2 = a1b0 * c1 * (a0 + b1c0)
        split[0][2] = 1 if cost1 < cost2 else 0
        split[0][1], split[1][2] = 0, 1
        return split
    cost = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _matrix_power(site: Site) -> list[str]:
    """NumPy's binary powering (n static): products of squares, ``inv`` first for n < 0,
    the identity for n = 0; a stack of matrices one at a time."""
    n, (a,) = site.node, site.args
    p = int(site.attrs["n"])
    w = Writer(site)
    lead = shape_of(a)[:-2]
    m = a.shape[-1]
    if lead:
        w.alloc(site.out, shape_of(n), n.dtype)
        idx = w.loops(lead)
        src, dst = f"{site.ins[0]}[{', '.join(idx)}]", w.new("mp")
    else:
        src, dst = site.ins[0], site.out

    def mul(x: str, y: str) -> str:
        t = w.new("z")
        if n.dtype in FLOATS:
            w(f"{t} = np.dot({x}, {y})")
            return t
        w.alloc(t, (m, m), n.dtype, "zeros")
        i, j, k = w.loop(m), w.loop(m), w.loop(m)
        w(f"{t}[{i}, {j}] += {x}[{i}, {k}] * {y}[{k}, {j}]")
        w.end(3)
        return t

    if p == 0:
        w(f"{dst} = np.eye({m}, dtype={site.ctor})")
    else:
        base = src
        if p < 0:
            base = w.new("ai")
            w(f"{base} = np.linalg.inv({src})")
            p = -p
        if p <= 3:
            result = base if p == 1 else mul(base, base) if p == 2 else mul(mul(base, base),
                                                                             base)
        else:
            z = result = None
            while p > 0:
                z = base if z is None else mul(z, z)
                p, bit = divmod(p, 2)
                if bit:
                    result = z if result is None else mul(result, z)
        w(f"{dst} = np.ascontiguousarray({result}).copy()" if result in (src, base)
          else f"{dst} = {result}")
    if lead:
        w.put(site.out, idx, dst, (m, m))
        w.end(len(lead))
    return w.lines


def _trace(site: Site) -> list[str]:
    """The sum of a diagonal (offset, axes) for every position of the other axes."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    a1, a2 = int(site.attrs["axis1"]) % len(xs), int(site.attrs["axis2"]) % len(xs)
    off = int(site.attrs["offset"])
    out = shape_of(n)
    if out:
        w.alloc(site.out, out, n.dtype)
    idx = ["0"] * len(xs)
    rest = [d for d in range(len(xs)) if d not in (a1, a2)]
    for d in rest:
        idx[d] = w.loop(xs[d])
    acc = w.new("acc")
    w(f"{acc} = {site.ctor}(0)")
    lo, hi = max(0, -off), min(xs[a1], xs[a2] - off)
    if hi > lo:
        k = w.loop(hi, lo)
        idx[a1], idx[a2] = k, affine(off, 1, k)
        w(f"{acc} += {at(site.ins[0], xs, idx)}")
        w.end()
    w.set(site.out, out, [idx[d] for d in rest], acc)
    w.end(len(rest))
    return w.lines


def _convolution(site: Site) -> list[str]:
    """``out[k] = sum_j a[k - j] b[j]`` over every axis at once, ``full`` or ``valid`` per
    axis (the overlaps of the two operands)."""
    n, (a, b) = site.node, site.args
    A, B = shape_of(a), shape_of(b)
    out, w = shape_of(n), Writer(site)
    if not A:
        return copy_map(site, lambda idx: f"{cast(n.dtype, site.ins[0], a.dtype)} * "
                                           f"{cast(n.dtype, site.ins[1], b.dtype)}")
    modes = (site.attrs["modes"] or "").split(",")
    w.alloc(site.out, out, n.dtype)
    k = w.loops(out)
    acc = w.new("acc")
    w(f"{acc} = {site.ctor}(0)")
    js = []
    for d, (na, nb) in enumerate(zip(A, B)):
        pos = k[d] if modes[d] == "full" else affine(min(na, nb) - 1, 1, k[d])
        kk = w.new("k")
        w(f"{kk} = {pos}")
        js.append(w.loop(f"min({nb}, {kk} + 1)", f"max(0, {kk} - {na - 1})"))
        js[-1] = (js[-1], kk)
    ai = [f"{kk} - {j}" for j, kk in js]
    bi = [j for j, _ in js]
    w(f"{acc} += {cast(n.dtype, at(site.ins[0], A, ai), a.dtype)} * "
      f"{cast(n.dtype, at(site.ins[1], B, bi), b.dtype)}")
    w.end(len(js))
    w(f"{site.out}[{', '.join(k)}] = {acc}")
    w.end(len(out))
    return w.lines


# -- sorting -------------------------------------------------------------------------------------


def _lanes(site: Site, body: Callable[[Writer, str, str], None], out_dtype: str) -> list[str]:
    """A sort-like op along one axis (or of the flattened array): each lane copied into
    a contiguous buffer, ``body(w, buffer, result)`` writes the lane's result, which is
    copied back."""
    n, (x,) = site.node, site.args
    xs, w = shape_of(x), Writer(site)
    axis = site.attrs.get("axis")
    if axis is None:
        buf = w.new("b")
        w(f"{buf} = np.ascontiguousarray({site.ins[0]}).reshape({math.prod(xs)})" if xs
          else f"{buf} = np.full(1, {site.ins[0]})")
        body(w, buf, site.out)
        return w.lines
    a = int(axis) % len(xs)
    w.alloc(site.out, shape_of(n), out_dtype)
    idx = ["0"] * len(xs)
    for d in range(len(xs)):
        if d != a:
            idx[d] = w.loop(xs[d])
    lane = ", ".join(":" if d == a else idx[d] for d in range(len(xs)))
    buf, res = w.new("b"), w.new("s")
    w(f"{buf} = {site.ins[0]}[{lane}].copy()")
    body(w, buf, res)
    k = w.loop(xs[a])
    w(f"{site.out}[{', '.join(k if d == a else idx[d] for d in range(len(xs)))}] = {res}[{k}]")
    w.end(len(xs))
    return w.lines


def _sort(site: Site) -> list[str]:
    """np.sort (NaN last)."""
    return _lanes(site, lambda w, b, r: w(f"{r} = np.sort({b})"), site.node.dtype)


def _argsort(site: Site) -> list[str]:
    """np.argsort: a stable sort (equal elements keep their order; NumPy's quicksort leaves
    ties in an order of its own)."""
    return _lanes(site, lambda w, b, r: w(f"{r} = np.argsort({b}, kind='mergesort')"), "int64")


def _searchsorted(site: Site) -> list[str]:
    side = site.attrs["side"]
    v = site.args[1]
    text = f"np.searchsorted({site.ins[0]}, {site.ins[1]}, side={side!r})"
    return [f"{site.out} = np.int64({text})" if not v.shape else f"{site.out} = {text}"]


FORMS: dict[str, Callable[[Site], list[str]]] = {
    **dict.fromkeys(("matmul", "dot"), _matmul), "outer": _outer, "einsum": _einsum,
    "multi_dot": _multi_dot, "matrix_power": _matrix_power, "trace": _trace,
    "convolution": _convolution,
    "sort": _sort, "argsort": _argsort, "searchsorted": _searchsorted,
}
"""The forms of this module by op name (:data:`.nests.FORMS` holds them with the others)."""
