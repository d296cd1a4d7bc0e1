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
    if "..." in spec:
        spec, ops = _expand_ellipsis(spec.replace(" ", ""), ops)
    return F.einsum(spec, *ops)


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
