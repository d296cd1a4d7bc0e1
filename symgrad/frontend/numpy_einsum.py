"""NumPy's ``einsum`` in full: the ``...`` of broadcast dimensions and the sublist form
(``einsum(op0, [0, 1], op1, [1, 2])``), written as the one ``einsum`` op.

>>> import symgrad as sg
>>> A = sg.var("A", shape=(2, 3, 4))
>>> sg.numpy.einsum("...ij->...ji", A).shape, sg.numpy.einsum(A, [0, 1, 2], [2, 1, 0]).shape
((2, 4, 3), (4, 3, 2))
"""

from __future__ import annotations

import string

import numpy as np

from ..base.errors import ShapeError
from ..ir.expr import Expr, F
from ..ir.op import SignatureError
from .numpy_define import as_expr, define, no_out

_LETTERS = string.ascii_letters


def _sublist_spec(args: tuple) -> tuple[str, list]:
    """NumPy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a string."""
    out = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if len(args) % 2 else args
    ops, terms = list(pairs[0::2]), list(pairs[1::2])
    if not terms or not all(isinstance(t, (list, tuple)) and all(
            s is Ellipsis or (isinstance(s, (int, np.integer)) and not isinstance(s, bool))
            for s in t) for t in terms):
        raise SignatureError("einsum: the first argument must be a subscripts string like "
                             "'ij,jk->ik' (or use NumPy's sublist form op0, [0, 1], ...)")

    def word(sub):
        return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)

    spec = ",".join(word(t) for t in terms) + ("" if out is None else "->" + word(out))
    return spec, ops


@define("einsum", "=subscripts:str", "*operands", subscripts=None, out=None, optimize=False,
        dtype=None, order="K", casting="safe")
def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """NumPy's einsum, including ``...`` (broadcast over the dimensions it stands for)."""
    no_out("einsum", out)
    if operands and not isinstance(operands[0], str):
        spec, ops = _sublist_spec(operands)
    else:
        spec, ops = operands[0], list(operands[1:])
    ops = [as_expr(o) for o in ops]
    if dtype is not None:
        ops = [F.astype(o, np.dtype(dtype).name) for o in ops]
    spec = spec.replace(" ", "") if isinstance(spec, str) else spec
    if isinstance(spec, str) and "..." in spec:
        spec, ops = _expand_ellipsis(spec, ops)
    if isinstance(spec, str):
        ops = _broadcast_unit_labels(spec, ops)
        product = _as_matmul(spec, ops)
        if product is not None:
            return product
    return F.einsum(spec, *ops)


def _terms(spec: str, count: int) -> tuple[list[str], str] | None:
    """The operand terms and the output of a spec without ``...`` (the output made as NumPy
    makes it when the spec has none), or None where the spec is not well formed (the op
    says why)."""
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != count or not all(t.isalpha() for t in terms) or (
            arrow and out and not out.isalpha()):
        return None
    if not arrow:
        joined = "".join(terms)
        out = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    return terms, out


def _broadcast_unit_labels(spec: str, ops: list[Expr]) -> list[Expr]:
    """Operands whose axis of size 1 meets a larger one of the same index broadcast to it,
    as NumPy's einsum does (``mnd,mdo->mno`` of shapes (1, 40, 1) and (20, 1, 20))."""
    parsed = _terms(spec, len(ops))
    if parsed is None:
        return ops
    terms = parsed[0]
    if any(len(t) != op.ndim for t, op in zip(terms, ops)):
        return ops
    size: dict[str, int] = {}
    for t, op in zip(terms, ops):
        for c, d in zip(t, op.shape):
            size[c] = max(size.get(c, d), d) if size.get(c, d) in (1, d) or d == 1 else -1
    out = []
    for t, op in zip(terms, ops):
        target = tuple(size[c] if d == 1 and size[c] > 1 else d for c, d in zip(t, op.shape))
        out.append(op if target == op.shape else F.broadcast_to(op, target))
    return out


def _as_matmul(spec: str, ops: list[Expr]) -> Expr | None:
    """A two-operand einsum that is a batched matrix product, as ``matmul`` of the
    operands' axes permuted: ``mnd,mdo->mno`` is ``a @ b`` per ``m``, ``bij,bkj->bik``
    ``a @ b.T`` per ``b``. BLAS computes it, where ``np.einsum`` loops over the batch
    label; its derivative is matmuls too. None for any other spec."""
    parsed = _terms(spec, len(ops))
    if parsed is None or len(ops) != 2:
        return None
    (ta, tb), out = parsed
    a, b = ops
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out) or \
            len(ta) != a.ndim or len(tb) != b.ndim:
        return None
    batch = [c for c in out if c in ta and c in tb]
    if not batch:  # a plain product: einsum's own text and rules (NumPy's einsum uses BLAS)
        return None
    summed = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]
    if len(summed) != 1 or len(left) > 1 or len(right) > 1 or \
            any(c not in out for c in left + right) or \
            sorted(out) != sorted(batch + left + right) or \
            any(a.shape[ta.index(c)] != b.shape[tb.index(c)] for c in batch + summed):
        return None
    if left and right and out[-1] == left[0]:
        # the product the other way round: its result's last axis is the output's, so the
        # permutation to the output keeps rows contiguous (later loops read it unit-stride)
        (a, ta), (b, tb), left, right = (b, tb), (a, ta), right, left
    nb = len(batch)
    x = _ordered(a, ta, batch + left + summed)
    y = _ordered(b, tb, batch + summed + right)
    if not left:  # a row vector per batch element
        x = F.reshape(x, x.shape[:nb] + (1,) + x.shape[nb:])
    if not right:
        y = F.reshape(y, y.shape + (1,))
    r = x @ y
    labels = batch + left + right
    r = F.reshape(r, tuple(d for k, d in enumerate(r.shape)
                           if k < nb or (k == nb and left) or (k == nb + 1 and right)))
    return _ordered(r, "".join(labels), list(out))


def _ordered(e: Expr, labels: str, order: list[str]) -> Expr:
    perm = tuple(labels.index(c) for c in order)
    return e if perm == tuple(range(len(perm))) else F.transpose(e, perm)


def _expand_ellipsis(spec: str, ops: list[Expr]) -> tuple[str, list[Expr]]:
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise ShapeError(f"einsum: {spec!r} names {len(terms)} operands, got {len(ops)}")
    used = set(spec) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    dims = [op.ndim - len(t.replace("...", "")) for t, op in zip(terms, ops)]
    nd = max([d for t, d in zip(terms, dims) if "..." in t], default=0)
    ell = "".join(free[:nd])
    shapes = []
    new_terms, new_ops = [], []
    for t, op, d in zip(terms, ops, dims):
        if "..." not in t:
            new_terms.append(t)
            new_ops.append(op)
            continue
        at = t.index("...")
        shapes.append(op.shape[at: at + d])
        new_terms.append(t.replace("...", ell[nd - d:]))
        new_ops.append(op)
    full = np.broadcast_shapes(*shapes) if shapes else ()
    for k, (t, op, d) in enumerate(zip(terms, new_ops, dims)):  # size-1 dims broadcast
        if "..." in t:
            at = t.index("...")
            target = op.shape[:at] + full[nd - d:] + op.shape[at + d:]
            if target != op.shape:
                new_ops[k] = F.broadcast_to(op, target)
    if not arrow:
        rest = sorted(c for c in set("".join(new_terms)) - set(ell)
                      if "".join(new_terms).count(c) == 1)
        out = ell + "".join(rest)
    else:
        out = out.replace("...", ell)
    return ",".join(new_terms) + "->" + out, new_ops
