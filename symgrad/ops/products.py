"""Linear algebra: ``matmul`` (``@``), ``dot``, ``outer``, ``transpose``, ``matrix_transpose``
and ``einsum``, with NumPy's semantics and closed-form vector-Jacobian products.

No rule ever materialises a Jacobian: ``matmul``'s adjoints are ``g @ B^T`` and ``A^T @ g``
(outer-product broadcasting for 1-D operands), ``einsum``'s are einsums with permuted
subscripts. Every rule accepts a cotangent with extra leading batch axes: matmul broadcasts
over them, transposes permute trailing axes only, einsum gives them fresh letters.

Deliberate differences from NumPy: ``outer`` takes 1-D operands only (NumPy flattens);
``dot`` takes operands of at most 2 axes (use ``matmul`` or ``einsum`` beyond); ``einsum``
takes letters, commas and one ``->`` (no ``...``) and requires equal sizes for a repeated
letter (NumPy also broadcasts size 1); ``transpose(x, axes)`` with fewer axes than ``x`` has
permutes the trailing ones.

>>> import symgrad as sg
>>> A, x = sg.var("A", shape=(2, 3)), sg.var("x", shape=(3,))
>>> sg.evaluate(sg.grad(sg.sum(A @ x), x), {"A": [[1., 2., 3.], [4., 5., 6.]], "x": [1., 1., 1.]})
array([5., 7., 9.])
>>> sg.evaluate(sg.einsum("ij,j->i", A, x), {"A": [[1., 2., 3.], [4., 5., 6.]], "x": [1., 0., 0.]})
array([1., 4.])
"""

from __future__ import annotations

import string
from collections import Counter

import numpy as np

from ..base.describe import describe
from ..base.errors import LimitError, ShapeError
from ..ir.expr import Expr, F
from ..ir.op import Op, SignatureError, register, sig
from ..ir.shapes import broadcast, fmt, result_dtype
from . import series
from .structure import einsum_map, gather_map, matmul_spec
from .tangent import align, batch_of, linear, total

# -- matmul and dot -------------------------------------------------------------------------


def _matmul_shape(name: str, a: tuple, b: tuple) -> tuple:
    """NumPy matmul's result shape (1-D operands promoted, then the added axis dropped)."""
    if not a or not b:
        raise ShapeError(f"{name}: shapes {fmt(a)} and {fmt(b)}: scalar operands are not "
                         "allowed, use * instead")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"{name}: shapes {fmt(a)} and {fmt(b)} are not aligned: "
                         f"{a2[-1]} != {b2[-2]}")
    try:
        batch = broadcast(name, a2[:-2], b2[:-2])
    except ShapeError:
        raise ShapeError(f"{name}: shapes {fmt(a)} and {fmt(b)}: the leading (batch) "
                         f"dimensions {fmt(a2[:-2])} and {fmt(b2[:-2])} cannot be broadcast "
                         "together") from None
    return batch + a2[-2:-1] * (len(a) > 1) + b2[-1:] * (len(b) > 1)


def _matmul_infer(shapes, dtypes, attrs):
    return _matmul_shape("matmul", *shapes), result_dtype(*dtypes)


def _reshape(x, shape):
    return x if x.shape == tuple(shape) else F.reshape(x, tuple(shape))


def matmul_vjp(a, b, g) -> tuple:
    """Adjoints of ``a @ b`` for cotangent ``g`` (which may carry leading batch axes)."""
    if a.ndim >= 2 and b.ndim >= 2:
        return g @ F.matrix_transpose(b), F.matrix_transpose(a) @ g
    if a.ndim >= 2:  # (..., n, k) @ (k,) -> (..., n)
        if g.ndim == 1:
            return F.outer(g, b), g @ a
        row = _reshape(g, g.shape[:-1] + (1, g.shape[-1])) @ a
        return _reshape(g, g.shape + (1,)) * b, _reshape(row, row.shape[:-2] + row.shape[-1:])
    if b.ndim >= 2:  # (k,) @ (..., k, m) -> (..., m)
        if g.ndim == 1:
            return b @ g, F.outer(a, g)
        col = b @ _reshape(g, g.shape + (1,))
        outer = _reshape(a, a.shape + (1,)) * _reshape(g, g.shape[:-1] + (1, g.shape[-1]))
        return _reshape(col, col.shape[:-1]), outer
    if g.ndim == 0:  # (k,) @ (k,) -> ()
        return g * b, g * a
    col = _reshape(g, g.shape + (1,))
    return col * b, col * a


def matmul_jvp(a, b, ta, tb):
    """Tangent of ``a @ b`` for tangents ``ta``/``tb`` (None: zero) with leading batch axes:
    ``ta @ b + a @ tb``, 1-D operands promoted (and the added axis dropped) explicitly so
    that batch axes stay in front of the broadcast matrix axes."""
    return total(None if ta is None else _batched_matmul(ta, a, b, True),
                 None if tb is None else _batched_matmul(tb, b, a, False))


def _batched_matmul(t, own, other, left: bool):
    """``t @ other`` (``left``) or ``other @ t``, where ``t`` is a tangent of ``own``."""
    lead = batch_of(t, own)
    a2 = own.shape if own.ndim > 1 else ((1,) + own.shape if left else own.shape + (1,))
    o2 = other.shape if other.ndim > 1 else (other.shape + (1,) if left else (1,) + other.shape)
    nb = max(len(a2), len(o2)) - 2
    t2 = _reshape(t, lead + (1,) * (nb - (len(a2) - 2)) + a2)
    o = _reshape(other, o2)
    out = t2 @ o if left else o @ t2
    drop = [k for k, flat in ((-2, (own if left else other).ndim == 1),
                              (-1, (other if left else own).ndim == 1)) if flat]
    shape = tuple(d for k, d in enumerate(out.shape) if k - out.ndim not in drop)
    return _reshape(out, shape)


def _matmul_sparsity(n):
    a, b = n.args
    return einsum_map(matmul_spec(a.shape, b.shape, n.shape), n)


def _matmul_examples(rng) -> list:
    r = rng.standard_normal
    pairs = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
             ((2, 2, 3), (3, 4)), ((3,), (2, 3, 4)), ((2, 3, 4), (4,)),
             ((2, 1, 2, 3), (3, 3, 2)), ((4, 3), (2, 3, 2))]
    return [([r(p), r(q)], {}) for p, q in pairs]


def _matmul_batch(args, batched, attrs, shape):
    """``a @ b`` for every row: a vector operand becomes a matrix (a row ``(1, n)`` on the
    left, a column ``(n, 1)`` on the right) and a batched one gets unit axes after its batch
    axis, so NumPy's broadcasting of stacked matrices pairs the rows; then the unit axes
    are dropped."""
    a, b = args
    ra, rb = a.ndim - batched[0], b.ndim - batched[1]
    rank = max(ra, rb, 2)
    if ra == 1:
        a = _reshape(a, a.shape[:-1] + (1, a.shape[-1]))
    if rb == 1:
        b = _reshape(b, b.shape + (1,))
    parts = []
    for x, flag in ((a, batched[0]), (b, batched[1])):
        if flag and x.ndim - 1 < rank:
            x = _reshape(x, x.shape[:1] + (1,) * (rank + 1 - x.ndim) + x.shape[1:])
        parts.append(x)
    out = parts[0] @ parts[1]
    size = (a if batched[0] else b).shape[0]
    return _reshape(out, (size, *shape))


register(Op(
    name="matmul", complex=True, signature=sig("a", "b", infix=("@", 12)), infer=_matmul_infer,
    impl=np.matmul, backprop=lambda n, g: matmul_vjp(*n.args, g), examples=_matmul_examples,
    batch=_matmul_batch,
    forward=lambda n, t: matmul_jvp(*n.args, *t), sparsity=_matmul_sparsity,
    taylor=series.bilinear,
    doc="matrix product a @ b with NumPy semantics (1-D promotion, broadcast batch axes)",
))


def _dot_infer(shapes, dtypes, attrs):
    a, b = shapes
    if not a or not b:
        return broadcast("dot", a, b), result_dtype(*dtypes)
    if len(a) > 2 or len(b) > 2:
        raise ShapeError(f"dot: shapes {fmt(a)} and {fmt(b)}: operands with more than 2 axes "
                         "are not supported; use matmul (batched) or einsum")
    return _matmul_shape("dot", a, b), result_dtype(*dtypes)


def _dot_rule(n, g):
    a, b = n.args
    if a.ndim == 0 or b.ndim == 0:
        return g * b, g * a
    return matmul_vjp(a, b, g)


def _dot_forward(n, t):
    a, b = n.args
    ta, tb = t
    if a.ndim == 0 or b.ndim == 0:  # a product: tangents broadcast like the operands
        nd = len(n.shape)
        return total(None if ta is None else align(ta, a, nd) * b,
                     None if tb is None else align(tb, b, nd) * a)
    return matmul_jvp(a, b, ta, tb)


def _dot_sparsity(n):
    a, b = n.args
    if a.ndim == 0 or b.ndim == 0:
        return einsum_map(f"{'ij'[:a.ndim]},{'ij'[:b.ndim]}->{'ij'[:len(n.shape)]}", n)
    return _matmul_sparsity(n)


register(Op(
    name="dot", signature=sig("a", "b"), infer=_dot_infer, impl=np.dot, backprop=_dot_rule,
    complex=True,
    forward=_dot_forward, sparsity=_dot_sparsity,
    taylor=series.bilinear,
    examples=lambda rng: [([rng.standard_normal(p), rng.standard_normal(q)], {}) for p, q in (
        ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((), (2, 3)))],
    doc="NumPy dot for operands of at most 2 axes (a scalar operand multiplies)",
))


def _outer_infer(shapes, dtypes, attrs):
    a, b = shapes
    if len(a) != 1 or len(b) != 1:
        raise ShapeError(f"outer: operands must be 1-D, got shapes {fmt(a)} and {fmt(b)}")
    return a + b, result_dtype(*dtypes)


register(Op(
    name="outer", complex=True, signature=sig("a", "b"), infer=_outer_infer, impl=np.outer,
    backprop=lambda n, g: (g @ n.args[1], n.args[0] @ g),
    forward=lambda n, t: total(
        None if t[0] is None else _reshape(t[0], t[0].shape + (1,)) * n.args[1],
        None if t[1] is None else _reshape(n.args[0], n.args[0].shape + (1,)) * _reshape(
            t[1], t[1].shape[:-1] + (1, t[1].shape[-1]))),
    sparsity=lambda n: einsum_map("i,j->ij", n),
    batch=lambda args, batched, attrs, shape: _reshape(args[0], args[0].shape + (1,)) * (
        _reshape(args[1], args[1].shape[:-1] + (1, args[1].shape[-1]))),
    taylor=series.bilinear,
    examples=lambda rng: [([rng.standard_normal(3), rng.standard_normal(4)], {})],
    doc="outer product of two 1-D arrays: out[i, j] = a[i] * b[j]",
))

# -- transposes -----------------------------------------------------------------------------


def _permutation(axes, ndim: int) -> tuple[int, ...]:
    """``axes`` (a permutation of the LAST ``len(axes)`` axes) as a full negative permutation.

    ``None`` reverses all axes. Leading axes not named stay in place, which is what lets a
    backprop rule apply the same attribute to a cotangent with extra leading batch axes.
    """
    if axes is None:
        block = tuple(range(ndim))[::-1]
    else:
        seq = (axes,) if isinstance(axes, (int, np.integer)) else axes
        try:
            seq = tuple(seq)
        except TypeError:
            raise ShapeError(f"transpose: axes must be a tuple of ints, got "
                             f"{describe(axes)}") from None
        k = len(seq)
        if k > ndim or any(isinstance(a, bool) or not isinstance(a, (int, np.integer))
                           or not -k <= a < k for a in seq):
            raise ShapeError(f"transpose: axes {describe(axes)} are not a permutation of the "
                             "axes of "
                             f"an array of rank {ndim}")
        block = tuple(int(a) % k for a in seq)
        if sorted(block) != list(range(k)):
            raise ShapeError(f"transpose: axes {describe(axes)} repeat an axis (not a permutation)")
    lead = ndim - len(block)
    return tuple(range(-ndim, lead - ndim)) + tuple(p + lead - ndim for p in block)


def _transpose_prepare(shapes, dtypes, attrs):
    return {"axes": _permutation(attrs["axes"], len(shapes[0]))}


def _transpose_infer(shapes, dtypes, attrs):
    shape = shapes[0]
    return tuple(shape[p] for p in _permutation(attrs["axes"], len(shape))), dtypes[0]


def _transpose_rule(n, g):
    perm = n.attrs["axes"]
    inverse = sorted(range(len(perm)), key=lambda i: perm[i])
    return (F.transpose(g, axes=tuple(i - len(perm) for i in inverse)),)


register(Op(
    name="transpose", signature=sig("x", "=axes", axes=None), prepare=_transpose_prepare,
    complex=True,
    infer=_transpose_infer,
    impl=lambda x, axes=None: np.transpose(x, _permutation(axes, np.ndim(x))),
    backprop=_transpose_rule, forward=linear, sparsity=gather_map,
    examples=lambda rng: [([rng.standard_normal((2, 3))], {"axes": None}),
                          ([rng.standard_normal((2, 3, 4))], {"axes": (1, 0, 2)}),
                          ([rng.standard_normal((2, 3, 4))], {"axes": None}),
                          ([rng.standard_normal((2, 3, 4))], {"axes": (2, 0, 1)})],
    doc="permute axes (reverse them when axes is None); x.T is transpose(x)",
))


def _matrix_transpose_infer(shapes, dtypes, attrs):
    s = shapes[0]
    if len(s) < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 axes, got shape {fmt(s)}")
    return s[:-2] + (s[-1], s[-2]), dtypes[0]


register(Op(
    name="matrix_transpose", complex=True, infer=_matrix_transpose_infer,
    impl=lambda x: np.swapaxes(x, -1, -2),
    backprop=lambda n, g: (F.matrix_transpose(g),), forward=linear, sparsity=gather_map,
    examples=lambda rng: [([rng.standard_normal((2, 3))], {}),
                          ([rng.standard_normal((4, 2, 3))], {})],
    doc="swap the last two axes",
))

# -- einsum ---------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


def parse_spec(spec, shapes) -> tuple[list[str], str, dict[str, int]]:
    """Validate an einsum subscripts string against operand shapes.

    Returns the input terms, the explicit output term (NumPy's implicit rule when there is
    no ``->``: the letters used once, sorted) and each letter's size.
    """
    if not isinstance(spec, str):
        raise SignatureError(f"einsum: the first argument must be a subscripts string like "
                             f"'ij,jk->ik', got {spec!r}")
    s = spec.replace(" ", "")
    if "..." in s:
        raise ShapeError(f"einsum: {spec!r}: '...' (ellipsis) is not supported; name every "
                         "axis with a letter")
    bad = sorted(set(s) - set(_LETTERS + ",->"))
    if bad or s.count("->") > 1 or s.count("-") != s.count("->") or s.count(">") != s.count("->"):
        what = f"invalid character {bad[0]!r}" if bad else "misplaced '-' or '>'"
        raise ShapeError(f"einsum: {what} in subscripts {spec!r}; use letters, commas and at "
                         "most one '->'")
    lhs, arrow, out = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise SignatureError(f"einsum: subscripts {spec!r} name {len(terms)} operand(s), but "
                             f"{len(shapes)} were given")
    sizes: dict[str, int] = {}
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        if len(t) != len(shape):
            raise ShapeError(f"einsum: operand {i} has shape {fmt(shape)} ({len(shape)} axes) "
                             f"but its subscripts {t!r} name {len(t)}")
        for c, d in zip(t, shape):
            if sizes.setdefault(c, d) != d:
                listed = " and ".join(fmt(sh) for sh in shapes)
                raise ShapeError(f"einsum: index {c!r} has sizes {sizes[c]} and {d} in "
                                 f"{spec!r} with shapes {listed}")
    counts = Counter(lhs.replace(",", ""))
    if not arrow:
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    elif len(set(out)) != len(out) or set(out) - set(counts):
        raise ShapeError(f"einsum: the output subscripts {out!r} of {spec!r} must be distinct "
                         "letters that appear in the inputs")
    return terms, out, sizes


def _einsum_prepare(shapes, dtypes, attrs):
    if not shapes:
        raise SignatureError("einsum() needs at least one operand after the subscripts")
    terms, out, _ = parse_spec(attrs["spec"], shapes)
    return {"spec": ",".join(terms) + "->" + out}


def _einsum_infer(shapes, dtypes, attrs):
    _, out, sizes = parse_spec(attrs["spec"], shapes)
    return tuple(sizes[c] for c in out), result_dtype(*dtypes)


def _einsum(*operands, spec):
    return np.einsum(spec, *operands, optimize=len(operands) >= 3)


def _einsum_rule(n, g):
    """Operand k's adjoint: einsum of g and the other operands into k's subscripts.

    g's leading batch axes get fresh letters; a letter repeated in operand k (a diagonal)
    gets a fresh letter plus an identity matrix; a letter summed only inside operand k is
    left size-1 (the reverse pass broadcasts it back).
    """
    terms, out, sizes = parse_spec(n.attrs["spec"], [a.shape for a in n.args])
    fresh = [c for c in _LETTERS if c not in sizes]
    nbatch = g.ndim - len(out)
    if nbatch > len(fresh):
        raise LimitError(f"einsum: {n.attrs['spec']!r} with {nbatch} batch axes needs more "
                         "than 52 index letters")
    lead, fresh = "".join(fresh[:nbatch]), fresh[nbatch:]
    return tuple(_einsum_adjoint(k, terms, lead, out, g, n.args, dict(sizes), list(fresh))
                 for k in range(len(terms)))


def _einsum_adjoint(k, terms, lead, out, g, args, sizes, fresh):
    ins, ops = [lead + out], [g]
    for j, t in enumerate(terms):
        if j != k:
            ins.append(t)
            ops.append(args[j])
    target: list[str] = []
    for c in terms[k]:
        if c in target:  # a diagonal: adj[..., i, i'] = v[..., i] * eye[i, i']
            f = fresh.pop()
            ins.append(c + f)
            ops.append(F.eye(sizes[c]))
            sizes[f] = sizes[c]
            c = f
        target.append(c)
    have = set("".join(ins))
    kept = "".join(c for c in target if c in have)
    if len(ops) == 1 and ins[0] == lead + kept:
        v = g
    else:
        v = F.einsum(",".join(ins) + "->" + lead + kept, *ops)
    if len(kept) < len(target):
        v = F.reshape(v, g.shape[: len(lead)] + tuple(sizes[c] if c in have else 1
                                                      for c in target))
    return v


def _einsum_forward(n, t):
    """The sum over operands of the einsum with that operand's tangent in its place (the
    tangent's batch axes get fresh letters, kept in front)."""
    terms, out, sizes = parse_spec(n.attrs["spec"], [a.shape for a in n.args])
    terms_out = []
    for k, tk in enumerate(t):
        if tk is None:
            continue
        fresh = [c for c in _LETTERS if c not in sizes]
        nbatch = tk.ndim - n.args[k].ndim
        if nbatch > len(fresh):
            raise LimitError(f"einsum: {n.attrs['spec']!r} with {nbatch} batch axes needs "
                             "more than 52 index letters")
        lead = "".join(fresh[:nbatch])
        ins = [lead + term if j == k else term for j, term in enumerate(terms)]
        ops = [tk if j == k else a for j, a in enumerate(n.args)]
        terms_out.append(F.einsum(",".join(ins) + "->" + lead + out, *ops))
    return total(*terms_out)


def _einsum_examples(rng) -> list:
    r = rng.standard_normal
    cases = [("ij,jk->ik", (2, 3), (3, 4)), ("ij->ji", (2, 3)), ("ii->", (3, 3)),
             ("ij,j->i", (2, 3), (3,)), ("i,i->", (3,), (3,)), ("ij->i", (2, 3)),
             ("ij,jk", (2, 3), (3, 4)), ("bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
             ("ijk,jl,kl->il", (2, 3, 4), (3, 2), (4, 2)), (",i->i", (), (3,)),
             ("iij->j", (2, 2, 3)), ("ii->i", (3, 3))]
    return [([r(s) for s in shapes], {"spec": spec}) for spec, *shapes in cases]


register(Op(
    name="einsum", complex=True, signature=sig("=spec:str", "*operands", spec=None),
    prepare=_einsum_prepare, infer=_einsum_infer, impl=_einsum, backprop=_einsum_rule,
    forward=_einsum_forward, sparsity=lambda n: einsum_map(n.attrs["spec"], n),
    examples=_einsum_examples,
    doc="Einstein summation over letter subscripts ('ij,jk->ik'); no '...' (ellipsis)",
))


# -- a sum of matrix products, as terms (what scan's reverse mode sums after its loop) ------


def product_terms(a: Expr) -> tuple[list[tuple[Expr, Expr, bool, Expr, bool]], list[Expr]]:
    """``a`` as a sum: its terms that are products of two matrices ``A @ B`` (``A`` or
    ``B`` perhaps a ``matrix_transpose``: ``(term, A, ta, B, tb)`` with the transposes taken
    off) or ``outer(a, b)`` (two vectors, flags False), and the other terms."""
    products, rest = [], []
    stack = [a]
    while stack:
        e = stack.pop()
        args = [Expr(e.graph, a) for a in e.data.args]
        if e.op == "add" and all(x.shape == e.shape for x in args):
            stack += reversed(args)
        elif e.op == "outer" and args[0].ndim == args[1].ndim == 1:
            products.append((e, args[0], False, args[1], False))
        elif e.op == "matmul" and args[0].ndim == args[1].ndim == 2:
            (x, tx), (y, ty) = (_untransposed(v) for v in args)
            products.append((e, x, tx, y, ty))
        else:
            rest.append(e)
    return products, rest


def _untransposed(e: Expr) -> tuple[Expr, bool]:
    return (Expr(e.graph, e.data.args[0]), True) if e.op == "matrix_transpose" else (e, False)
