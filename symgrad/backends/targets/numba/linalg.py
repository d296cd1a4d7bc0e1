"""Linear algebra inside compiled code: Numba's ``np.linalg`` (LAPACK, the routines NumPy
calls: ``gesv``, ``potrf``, ``syevd``, ``gesdd``, ``geqrf``/``orgqr``, ``gelsd``) on each
matrix of a stack, and NumPy's own formulas around them where NumPy computes more than one
LAPACK call (``pinv``, ``norm``, ``matrix_rank``, ``band``).

Each form writes the lines that assign one node (see :mod:`.nests`): a loop over the
stacked (leading) axes, the call on one matrix, the result stored. A call with several
results (``eigh``, ``svd``, ``qr``, ``slogdet``, ``lstsq``) is one LAPACK call per matrix
assigning each result something reads (``Site.outs``). Numba's functions take one dtype:
an operand of another is converted first, as NumPy's would be.

>>> import symgrad as sg
>>> from .nest_base import Site
>>> a = sg.var("a", shape=(2, 3, 3))
>>> e = sg.linalg.inv(a)
>>> nodes = e.graph.nodes
>>> names = iter(f"_k{j}" for j in range(99))
>>> site = Site(nodes[e.node], nodes, ["a"], "ai", lambda p: next(names))
>>> print("\\n".join(LINALG_FORMS["inv"](site)))
ai = np.empty((2, 3, 3), dtype=np.float64)
for _k0 in range(2):
    _k1 = np.linalg.inv(a[_k0])
    for _k2 in range(3):
        for _k3 in range(3):
            ai[_k0, _k2, _k3] = _k1[_k2, _k3]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....ir.shapes import is_complex
from ..numpy.table import NUMPY_TYPE, scalar_source
from .nest_base import Site, Writer, aligned, at

__all__ = ["LINALG_FORMS", "linalg_form_missing"]


def _shape(n: Any) -> tuple[int, ...]:
    return tuple(n.shape)


def _operand(site: Site, k: int, idx: Sequence[str], core: int = 2) -> str:
    """Operand ``k`` at stack position ``idx`` (its leading axes aligned to the result's
    stack, broadcast), converted to the result's dtype."""
    a, text = site.args[k], site.ins[k]
    lead = _shape(a)[:len(a.shape) - core]
    stack = _stack_of(site)
    key = aligned(lead, stack, idx) if lead else []
    value = f"{text}[{', '.join(key)}]" if key else text
    dtype = _work_dtype(site)
    return value if a.dtype == dtype else f"{value}.astype({NUMPY_TYPE[dtype]})"


_INEXACT = ("float64", "float32", "complex128", "complex64")


def _work_dtype(site: Site) -> str:
    """The dtype the LAPACK call works in (NumPy converts integers to float64): the
    result's, or for a call with several results its operand's."""
    d = site.args[0].dtype if site.node.is_call else site.node.dtype
    return d if d in _INEXACT else "float64"


def _stack_of(site: Site) -> tuple[int, ...]:
    """The stacked axes of the result (the leading axes of the first operand's matrices,
    broadcast with the others')."""
    core = _CORE.get(site.node.op, (2, 2))
    leads = [_shape(a)[:len(a.shape) - c] for a, c in zip(site.args, core) if len(a.shape) >= c]
    return tuple(np.broadcast_shapes(*leads)) if leads else ()


# the axes of one call's operands (the rest are stacked): a matrix, or solve's b
_CORE = {"solve": (2, 2)}


def _stacked(site: Site, one: Callable[[Writer, list[str]], str], out_core: int) -> list[str]:
    """``out[idx] = one(w, idx)`` for every position ``idx`` of the stack; ``one`` writes
    any lines it needs and returns the text of one matrix's result."""
    n, w = site.node, Writer(site)
    stack = _stack_of(site)
    if not stack:
        w(f"{site.out} = {one(w, [])}")
        return w.lines
    w.alloc(site.out, _shape(n), n.dtype)
    idx = w.loops(stack)
    t = w.new("m")
    w(f"{t} = {one(w, idx)}")
    w.put(site.out, idx, t, _shape(n)[len(stack):])
    w.end(len(stack))
    return w.lines


def _call(text: str, out_core: int = 2) -> Callable[[Site], list[str]]:
    """A form calling ``text`` (``{a}``: the one matrix) on each matrix."""
    def form(site: Site) -> list[str]:
        return _stacked(site, lambda w, idx: text.format(a=_operand(site, 0, idx)), out_core)

    return form


def _solve(site: Site) -> list[str]:
    n, (a, b) = site.node, site.args
    if len(b.shape) == 1:  # one vector for every matrix of the stack
        stack = _shape(a)[:-2]
        w = Writer(site)
        rhs = site.ins[1] if b.dtype == _work_dtype(site) else \
            f"{site.ins[1]}.astype({NUMPY_TYPE[_work_dtype(site)]})"
        if not stack:
            return [f"{site.out} = np.linalg.solve({_operand(site, 0, [])}, {rhs})"]
        w.alloc(site.out, _shape(n), n.dtype)
        idx = w.loops(stack)
        t = w.new("m")
        w(f"{t} = np.linalg.solve({_operand(site, 0, idx)}, {rhs})")
        w.put(site.out, idx, t, _shape(n)[len(stack):])
        w.end(len(stack))
        return w.lines
    return _stacked(site, lambda w, idx: f"np.linalg.solve({_operand(site, 0, idx)}, "
                                         f"{_operand(site, 1, idx)})", 2)


def _uplo(site: Site, idx: list[str]) -> str:
    """The matrix whose lower triangle Numba's ``eigh`` reads (``UPLO="U"``: the upper
    triangle of the operand, as the lower one of its transpose)."""
    a = _operand(site, 0, idx)
    return a if site.attrs.get("UPLO", "L") == "L" else f"np.ascontiguousarray({a}.T)"


def _svdvals(site: Site) -> list[str]:
    return _stacked(site, lambda w, idx: f"np.linalg.svd({_operand(site, 0, idx)}, False)[1]",
                    1)


def _eigvalsh(site: Site) -> list[str]:
    return _stacked(site, lambda w, idx: f"np.linalg.eigh({_uplo(site, idx)})[0]", 1)


def _cholesky(site: Site) -> list[str]:
    tail = ".T.copy()" if site.attrs.get("upper") else ""
    return _stacked(site, lambda w, idx: f"np.linalg.cholesky({_operand(site, 0, idx)}){tail}",
                    2)


def _pinv(site: Site) -> list[str]:
    """NumPy's pinv: the reduced SVD, 1/s where s > rcond * max(s) (0 elsewhere), then
    vt.T @ (s[:, None] * u.T)."""
    rcond = scalar_source(site.attrs["rcond"])

    def one(w: Writer, idx: list[str]) -> str:
        u, s, vt, cut, k = (w.new(p) for p in ("u", "s", "vt", "cut", "k"))
        w(f"{u}, {s}, {vt} = np.linalg.svd({_operand(site, 0, idx)}, False)")
        w(f"{cut} = {rcond} * np.max({s})")
        w(f"for {k} in range({s}.shape[0]):")
        w(f"    {s}[{k}] = 1.0 / {s}[{k}] if {s}[{k}] > {cut} else 0.0")
        return f"np.dot({vt}.T, {s}.reshape(({s}.shape[0], 1)) * {u}.T)"

    return _stacked(site, one, 2)


def _matrix_rank(site: Site) -> list[str]:
    """NumPy's matrix_rank: the singular values above tol (rtol * max(s) by default)."""
    a = site.args[0]
    if len(a.shape) < 2:  # int(not all(A == 0))
        w = Writer(site)
        k = w.new("nz")
        w(f"{k} = np.int64(0)")
        idx = w.loops(_shape(a))
        w(f"if {at(site.ins[0], _shape(a), idx)} != 0:")
        w(f"    {k} = np.int64(1)")
        w.end(len(idx))
        w(f"{site.out} = {k}")
        return w.lines
    tol, rtol = site.attrs.get("tol"), site.attrs.get("rtol")
    eps = float(np.finfo(_work_dtype(site)).eps)

    def one(w: Writer, idx: list[str]) -> str:
        s, t, r, k = (w.new(p) for p in ("s", "tol", "r", "k"))
        w(f"{s} = np.linalg.svd({_operand(site, 0, idx)}, False)[1]")
        if tol is not None:
            w(f"{t} = {scalar_source(tol)}")
        else:
            rel = rtol if rtol is not None else max(a.shape[-2:]) * eps
            w(f"{t} = np.max({s}) * {scalar_source(rel)}")
        w(f"{r} = np.int64(0)")
        w(f"for {k} in range({s}.shape[0]):")
        w(f"    if {s}[{k}] > {t}:")
        w(f"        {r} += 1")
        return r

    return _stacked(site, one, 0)


def _band(site: Site) -> list[str]:
    """Entries outside lo <= j - i <= hi set to 0, the diagonal times ``diagonal``."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    lo, hi, d = site.attrs.get("lo"), site.attrs.get("hi"), float(site.attrs["diagonal"])
    w.alloc(site.out, xs, n.dtype)
    idx = w.loops(xs)
    i, j = idx[-2], idx[-1]
    tests = ([f"{j} - {i} >= {lo}"] if lo is not None else []) + \
            ([f"{j} - {i} <= {hi}"] if hi is not None else [])
    value = at(site.ins[0], xs, idx)
    if d != 1.0 and (lo is None or lo <= 0) and (hi is None or hi >= 0):
        # NumPy's weak float: the factor in x's dtype
        factor = scalar_source(d) if n.dtype == "float64" else \
            f"{NUMPY_TYPE[n.dtype]}({scalar_source(d)})"
        value = f"({value} * {factor} if {i} == {j} else {value})"
    zero = f"{NUMPY_TYPE[n.dtype]}(0)"
    cond = " and ".join(tests)
    w(f"{at(site.out, xs, idx)} = {value if not cond else f'{value} if {cond} else {zero}'}")
    w.end(len(xs))
    return w.lines


# -- calls with several results -------------------------------------------------------------


def _results(site: Site, text: Callable[[list[str]], str], size: int,
             positions: Sequence[int] | None = None) -> list[str]:
    """The results of one call per matrix of the stack: ``text(idx)`` calls it on the
    matrices at stack position ``idx`` and gives a tuple of ``size``; result ``k`` of the
    node is its item ``positions[k]``. Each result something reads (``site.outs``) is
    assigned: a C-contiguous array (LAPACK's are Fortran's: a carry keeps one layout), or
    a scalar of the result's dtype."""
    n, w = site.node, Writer(site)
    outs = site.outs or [None] * len(n.dtype)
    positions = list(positions if positions is not None else range(size))
    parts = [w.new("r") for _ in range(size)]
    stack = _stack_of(site)
    avals = [(tuple(s), d) for s, d in n.dtype]
    if not stack:
        w(f"{', '.join(parts)} = {text([])}")
        for out, p, (shape, dtype) in zip(outs, positions, avals):
            if out is not None:
                w(f"{out} = {_owned(parts[p], shape, dtype)}")
        return w.lines
    for out, (shape, dtype) in zip(outs, avals):
        if out is not None:
            w.alloc(out, shape, dtype)
    idx = w.loops(stack)
    w(f"{', '.join(parts)} = {text(idx)}")
    for out, p, (shape, _) in zip(outs, positions, avals):
        if out is not None:
            w.put(out, idx, parts[p], shape[len(stack):])
    w.end(len(stack))
    return w.lines


def _owned(part: str, shape: tuple, dtype: str) -> str:
    if len(shape) >= 2:
        return f"np.ascontiguousarray({part})"
    return part if shape else f"{NUMPY_TYPE[dtype]}({part})"


def _eigh(site: Site) -> list[str]:
    """(w, v) of ``eigh`` (``syevd``)."""
    return _results(site, lambda idx: f"np.linalg.eigh({_uplo(site, idx)})", 2)


def _svd(site: Site) -> list[str]:
    """(U, S, Vh) of ``svd`` (``gesdd``), or S alone (``compute_uv=False``)."""
    full = bool(site.attrs.get("full_matrices", False)) and site.attrs.get("compute_uv", True)
    positions = None if site.attrs.get("compute_uv", True) else [1]
    return _results(site, lambda idx: f"np.linalg.svd({_operand(site, 0, idx)}, {full})", 3,
                    positions)


def _qr(site: Site) -> list[str]:
    """(Q, R) of the reduced ``qr`` (``geqrf``/``orgqr``), or R alone (``mode="r"``)."""
    positions = [1] if site.attrs.get("mode") == "r" else None
    return _results(site, lambda idx: f"np.linalg.qr({_operand(site, 0, idx)})", 2, positions)


def _slogdet(site: Site) -> list[str]:
    """(sign, logabsdet) of ``slogdet`` (``getrf``)."""
    return _results(site, lambda idx: f"np.linalg.slogdet({_operand(site, 0, idx)})", 2)


def _lstsq(site: Site) -> list[str]:
    """(x, residuals, rank, s) of ``lstsq`` (``gelsd``) with NumPy's default ``rcond``
    (eps * max(m, n)); residuals as :func:`symgrad.lstsq` defines them: none for m <= n,
    ``sum((b - a @ x) ** 2)`` where ``a`` (m > n) is rank-deficient (NumPy gives none)."""
    a, b = site.args
    rcond = site.attrs.get("rcond")
    if rcond is None:
        rcond = float(np.finfo(_work_dtype(site)).eps) * max(a.shape)
    m, n = a.shape
    outs = site.outs or [None] * 4
    (_, xd), (rs, rd), _, (_, sd) = [(tuple(s), d) for s, d in site.node.dtype]
    w = Writer(site)
    x, res, rank, sv = (w.new(p) for p in ("x", "res", "rank", "sv"))
    am, bm = _operand(site, 0, [], core=2), _operand(site, 1, [], core=len(b.shape))
    w(f"{x}, {res}, {rank}, {sv} = np.linalg.lstsq({am}, {bm}, {scalar_source(rcond)})")
    if outs[1] is not None and m > n:
        w(f"{outs[1]} = {res}.copy()")
        w(f"if {rank} < {n}:")
        w.depth += 1
        r, i = w.new("r"), w.new("i")
        w(f"{r} = {bm} - np.dot({am}, {x})")
        w(f"{outs[1]} = np.zeros({rs!r}, dtype={NUMPY_TYPE[rd]})")
        w(f"for {i} in range({m}):")
        w(f"    {outs[1]}[:] += {r}[{i}] * {r}[{i}]")
        w.end()
    elif outs[1] is not None:  # NumPy returns no residuals for m <= n
        w(f"{outs[1]} = np.zeros(0, dtype={NUMPY_TYPE[rd]})")
    for k, text in ((0, f"np.ascontiguousarray({x})"), (2, f"np.int32({rank})"), (3, sv)):
        if outs[k] is not None:
            w(f"{outs[k]} = {text}")
    return w.lines


# -- norm ----------------------------------------------------------------------------------------


def _norm(site: Site) -> list[str]:
    """NumPy's norm: the same cases, each its loops (the SVD for 2, -2 and 'nuc')."""
    n, (x,) = site.node, site.args
    xs, nd = _shape(x), len(x.shape)
    order, axis, keep = site.attrs["ord"], site.attrs["axis"], bool(site.attrs["keepdims"])
    T = NUMPY_TYPE[n.dtype]
    if axis is None and (order is None or (order == "fro" and nd == 2)
                         or (order == 2 and nd == 1)):
        return _vector(site, list(range(nd)), keep, "sq")
    axes = [a % nd for a in (axis if axis is not None else
                             ((-2, -1) if nd == 2 and order is not None else (-1,)))]
    if len(axes) == 1:
        kind = {np.inf: "max", -np.inf: "min", 0: "nonzero", 1: "abs"}.get(order)
        if order is None or order == 2:
            kind = "sq"
        return _vector(site, axes, keep, kind or "p")
    r, c = axes
    if order in (None, "fro"):
        return _vector(site, sorted(axes), keep, "sq")
    if order in (2, -2, "nuc"):
        return _svd_norm(site, r, c, keep, {2: "max", -2: "min", "nuc": "sum"}[order])
    outer, inner = (c, r) if order in (1, -1) else (r, c)
    w = Writer(site)
    idx, rest = _open_rest(w, axes)
    best = w.new("best")
    w(f"{best} = {T}({'-np.inf' if order in (1, np.inf) else 'np.inf'})")
    idx[outer] = w.loop(xs[outer])
    s = w.new("s")
    w(f"{s} = {T}(0)")
    idx[inner] = w.loop(xs[inner])
    w(f"{s} += abs({_elem(site, idx)})")
    w.end()
    cmp = ">" if order in (1, np.inf) else "<"
    w(f"if {s} {cmp} {best} or {s} != {s}:")
    w(f"    {best} = {s}")
    w.end()
    return _close_rest(w, idx, rest, keep, best)


def _open_rest(w: Writer, axes: list[int]) -> tuple[list[str], list[int]]:
    """Allocate the norm's result and open a loop on each axis of its operand outside
    ``axes``: the operand's index (those loops' names, "0" on ``axes``) and those axes."""
    n, x = w.site.node, w.site.args[0]
    if _shape(n):
        w.alloc(w.site.out, _shape(n), n.dtype)
    xs = _shape(x)
    idx = ["0"] * len(xs)
    rest = [a for a in range(len(xs)) if a not in axes]
    for a in rest:
        idx[a] = w.loop(xs[a])
    return idx, rest


def _close_rest(w: Writer, idx: list[str], rest: list[int], keep: bool,
                value: str) -> list[str]:
    """Store ``value`` at the result's element of the loops :func:`_open_rest` opened, and
    close them: the lines."""
    oidx = [idx[a] if a in rest else "0" for a in range(len(idx)) if a in rest or keep]
    w.set(w.site.out, _shape(w.site.node), oidx, value)
    w.end(len(rest))
    return w.lines


def _elem(site: Site, idx: list[str]) -> str:
    x = site.args[0]
    v = at(site.ins[0], _shape(x), idx)
    return v if x.dtype == site.node.dtype else f"{NUMPY_TYPE[site.node.dtype]}({v})"


def _vector(site: Site, axes: list[int], keep: bool, kind: str) -> list[str]:
    """A vector norm over ``axes``: ``sq`` sqrt(sum x*x), ``abs`` sum |x|, ``max``/``min``
    of |x|, ``nonzero`` the count, ``p`` (sum |x|**p)**(1/p)."""
    n, (x,) = site.node, site.args
    xs, w = _shape(x), Writer(site)
    T = NUMPY_TYPE[n.dtype]
    idx, rest = _open_rest(w, axes)
    acc = w.new("acc")
    start = {"max": "-np.inf", "min": "np.inf"}.get(kind, "0")
    w(f"{acc} = {T}({start})")
    for a in axes:
        idx[a] = w.loop(xs[a])
    v = w.new("x")
    w(f"{v} = {_elem(site, idx)}")
    order = site.attrs["ord"]
    if kind == "sq":
        w(f"{acc} += {v} * {v}")
    elif kind == "abs":
        w(f"{acc} += abs({v})")
    elif kind == "nonzero":
        w(f"if {v} != 0:")
        w(f"    {acc} += 1")
    elif kind == "p":
        w(f"{acc} += abs({v}) ** {T}({scalar_source(float(order))})")
    else:
        cmp = ">" if kind == "max" else "<"
        w(f"if abs({v}) {cmp} {acc} or {v} != {v}:")
        w(f"    {acc} = abs({v})")
    w.end(len(axes))
    value = f"np.sqrt({acc})" if kind == "sq" else acc
    if kind == "p":
        value = f"{acc} ** {T}(1.0 / {T}({scalar_source(float(order))}))"
    return _close_rest(w, idx, rest, keep, value)


def _svd_norm(site: Site, r: int, c: int, keep: bool, op: str) -> list[str]:
    """max, min or sum of the singular values of the (r, c) matrices."""
    (x,) = site.args
    nd, w = len(x.shape), Writer(site)
    idx, rest = _open_rest(w, [r, c])
    key = [":" if a in (r, c) else idx[a] for a in range(nd)]
    m = f"{site.ins[0]}[{', '.join(key)}]" if rest else site.ins[0]
    if r > c:
        m = f"{m}.T"
    dtype = _work_dtype(site)
    if site.args[0].dtype != dtype:
        m = f"{m}.astype({NUMPY_TYPE[dtype]})"
    s = w.new("s")
    w(f"{s} = np.linalg.svd(np.ascontiguousarray({m}), False)[1]")
    return _close_rest(w, idx, rest, keep, f"np.{op}({s})")


LINALG_FORMS: dict[str, Callable[[Site], list[str]]] = {
    "inv": _call("np.linalg.inv({a})"), "det": _call("np.linalg.det({a})", 0),
    "solve": _solve, "cholesky": _cholesky, "eigvalsh": _eigvalsh, "svdvals": _svdvals,
    "pinv": _pinv, "matrix_rank": _matrix_rank, "band": _band, "norm": _norm,
    # calls with several results: each result the call assigns (Site.outs)
    "slogdet": _slogdet, "eigh": _eigh, "svd": _svd, "qr": _qr, "lstsq": _lstsq,
}


def _hermitian(n: Any) -> str | None:
    if n.attrs.get("hermitian"):
        return ("hermitian=True: NumPy orders equal singular values by its own quicksort of "
                "the eigenvalues")
    return None


def _complete(n: Any) -> str | None:
    if n.attrs.get("mode") != "complete":
        return None
    (q, _), (r, _) = n.dtype
    if q[-1] > r[-1]:  # a tall matrix: Q is (m, m), R (m, n) with m > n
        return ("qr mode='complete' of a tall matrix: Numba's qr computes the reduced "
                "factors only")
    return None  # a square or wide matrix: the complete factors are the reduced ones


def _upper(n: Any) -> str | None:
    if n.attrs.get("UPLO", "L") == "U":
        return ("eigh UPLO='U': Numba's eigh reduces the lower triangle (syevd 'L'), whose "
                "eigenvectors' signs differ from NumPy's reduction of the upper one")
    return None


def _real(check: Callable[[Any], str | None] | None = None) -> Callable[[Any, Any], str | None]:
    """``check``, after refusing complex operands (these forms work in float64/float32)."""
    def missing(n: Any, nodes: Any) -> str | None:
        if any(is_complex(str(nodes[a].dtype)) for a in n.args):
            return "a complex matrix: the compiled forms work in float64/float32"
        return None if check is None else check(n)

    return missing


# op -> why a node of it (by its attributes or dtypes) has no compiled form, or None
LINALG_CASES = {**{name: _real() for name in LINALG_FORMS},
                "svd": _real(_hermitian), "pinv": _real(_hermitian),
                "matrix_rank": _real(_hermitian), "qr": _real(_complete),
                "eigh": _real(_upper)}


def linalg_form_missing(n: Any, nodes: Any) -> str | None:
    """Why linalg node ``n`` (of graph ``nodes``) has no compiled form (None: it has one)."""
    check = LINALG_CASES.get(n.op)
    return None if check is None else check(n, nodes)
