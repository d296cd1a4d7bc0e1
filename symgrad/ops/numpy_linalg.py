"""``numpy.linalg``: matrix functions and decompositions, with NumPy's semantics.

``inv det slogdet solve cholesky eigh eigvalsh svd svdvals pinv norm qr lstsq matrix_power
multi_dot`` (registered with NumPy's dotted names as aliases, ``linalg.inv``, ...) and
``trace``. Each acts on the trailing two axes and broadcasts leading (batch) axes exactly as
NumPy 2 does (``lstsq`` and ``multi_dot`` take no batch axes, as in NumPy), and its value is
NumPy's own result, bit for bit: the implementation *is* the ``numpy.linalg`` call.

A NumPy function with several results (``slogdet``, ``eigh``, ``svd``, ``qr``, ``lstsq``)
is one call node with several results (:mod:`symgrad.ir.op`): ``sg.eigh(A)`` returns NumPy's
named tuple of two Exprs, the projections of one ``eigh`` call, so NumPy's function runs
once for all of them; its backprop rule gets the adjoints of every result at once. Each
result prints as NumPy code reads, ``eigh(A)[1]`` (a call with one result, ``svd`` with
``compute_uv=False``, as the call).

Backprop rules (each builds graph from registered ops only, so it is differentiated again
for Hessians; each accepts a cotangent with extra leading batch axes):

* ``inv det slogdet solve pinv lstsq``: M. B. Giles, "Collected matrix derivative results
  for forward and reverse mode algorithmic differentiation" (2008), with the
  pseudo-inverse's derivative of Golub & Pereyra (1973);
* ``cholesky``: I. Murray, "Differentiation of the Cholesky decomposition" (2016);
* ``eigh``: Giles (2008), section 3.1; ``qr``: M. Seeger, A. Hetzel, Z. Dai, E. Meissner,
  N. D. Lawrence, "Auto-differentiating linear algebra" (2017), and S. F. Walter,
  L. Lehmann, "Algorithmic differentiation of linear algebra functions with application
  in optimum experimental design" (2013); the wide case (more columns than rows) as in
  H.-J. Liao et al., "Differentiable programming tensor networks" (2019);
* ``svd``: J. Townsend, "Differentiating the singular value decomposition" (2016).

Forward (JVP) rules follow the same papers (Giles 2008 gives both modes; Murray 2016 eq. 8
for Cholesky; Townsend 2016 for the SVD; Walter & Lehmann 2013 for QR); functions that read
one triangle see ``tril(dA) + tril(dA, -1)^T`` (for ``UPLO="L"``). Sparsity: dense per
matrix, leading axes batched.

Complex matrices (every function here; :mod:`symgrad.ops.complex` states the conventions,
JAX's): a holomorphic function (``inv det solve matrix_power``) keeps its real rule; the
others' rules are written once for the pairing ``Re tr(G^H dA)`` (the papers' formulas with
``^H`` for ``^T``) and conjugated in and out into JAX's (:func:`adjoint_pairing`); a
function reading one triangle reads a Hermitian matrix (the diagonal's real part, as
LAPACK), and eigenvector, QR and SVD factors take JAX's gauges (``diag(V^H dV) = 0``,
``R``'s diagonal real, the phase term ``i Im(diag(U^H dA V)) / S`` in ``dU``).

Conditions (where the derivative exists, and what symgrad gives where it does not):

* ``cholesky`` and ``eigh``/``eigvalsh`` (and ``hermitian=True`` in ``svd``/``pinv``) read
  only one triangle of their operand, as LAPACK does; the gradient is the derivative of
  that function, so it lies in that triangle (off-diagonal entries counted twice). Its
  symmetric part ``(G + G.T) / 2`` is the gradient with respect to a symmetric matrix (what
  JAX and autograd report). For a matrix built symmetric (``K = X @ X.T``), the chain rule
  gives the same numbers either way.
* ``eigh``: the eigenvector gradient divides by eigenvalue gaps; repeated eigenvalues give
  inf or NaN gradients (the eigenvectors are not unique there). Eigenvalue-only gradients
  are finite.
* ``svd``: distinct, non-zero singular values for the gradients of ``U`` and ``Vh``;
  those need the reduced factors (``full_matrices=False``, or a square matrix), otherwise
  differentiation raises :class:`~symgrad.errors.DifferentiationError`.
* ``qr``: a full-rank operand; ``Q`` of ``mode="complete"`` only for square matrices.
* ``det``, ``slogdet``, ``inv``, ``solve``: an invertible matrix. The gradient of ``det``
  (the cofactor matrix) is computed as ``det(A) * inv(A).T``: accurate for nearly singular
  matrices, but at an exactly singular one evaluating it raises NumPy's "Singular matrix".
* ``pinv`` and ``lstsq``: the rank must be locally constant (the pseudo-inverse is not
  continuous where the rank changes).
* ``norm``: at ``x = 0`` the 2-norm's gradient is 0 (as ``abs'(0) = 0``); ties in the
  ``inf``/``1``-type norms and in the largest singular value (``ord=2``) share the gradient
  equally, as ``max`` does; ``ord=0`` (a count) has zero gradient.

>>> import numpy as np, symgrad as sg
>>> A = sg.var("A", shape=(2, 2))
>>> sign, logdet = sg.slogdet(A)
>>> sg.evaluate(sg.grad(logdet, A), {"A": [[2.0, 0.0], [0.0, 4.0]]})   # inv(A).T
array([[0.5 , 0.  ],
       [0.  , 0.25]])
>>> w, v = sg.eigh(A)
>>> str(v)
'eigh(A)[1]'
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ..base.describe import describe
from ..base.errors import DifferentiationError, ShapeError
from ..ir.expr import Expr, F, call, const
from ..ir.op import Op, SignatureError, register, results_of, sig
from ..ir.shapes import (
    broadcast,
    float_dtype,
    fmt,
    is_complex,
    is_float,
    norm_axes,
    real_dtype,
    reduced,
    result_dtype,
)
from .complex import conjugated, real_part
from .products import matmul_jvp
from .reductions import extreme_share
from .structure import batched_map, dense_maps, gather_map, reduce_map
from .tangent import align, first, linear, total

_INF = float("inf")

# NumPy 2's result types (named tuples of Exprs here)
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


# -- shape rules ------------------------------------------------------------------------------


def _matrix(name: str, shape: tuple) -> tuple[int, int]:
    if len(shape) < 2:
        raise ShapeError(f"{name}: needs a matrix (or a stack of matrices) in the last two "
                         f"axes, got shape {fmt(shape)}")
    return shape[-2], shape[-1]


def _square(name: str, shape: tuple) -> int:
    m, n = _matrix(name, shape)
    if m != n:
        raise ShapeError(f"{name}: needs square matrices in the last two axes, got shape "
                         f"{fmt(shape)}")
    return n


def _plain_matrix(name: str, shape: tuple) -> tuple[int, int]:
    if len(shape) != 2:
        raise ShapeError(f"{name}: needs a 2-D array (NumPy's {name} takes no batch axes), "
                         f"got shape {fmt(shape)}")
    return shape


def on_squares(name: str, drop: int = 0):
    """The rule of a function of square matrices whose result drops ``drop`` trailing axes
    (0: a matrix, 1: a vector such as eigenvalues, 2: a number per matrix)."""
    def infer(shapes, dtypes, attrs):
        _square(name, shapes[0])
        return shapes[0][: len(shapes[0]) - drop], float_dtype(dtypes[0])

    return infer


def _flag(name: str, what: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise SignatureError(f"{name}: {what} must be True or False, got {describe(value)}")
    return bool(value)


def _check_static(name: str, attrs: dict, **checks) -> dict:
    """``attrs`` with each flag in ``checks`` checked (``checks[k]`` is its description)."""
    out = dict(attrs)
    for k, what in checks.items():
        out[k] = _flag(name, what, attrs[k])
    return out


# -- graph helpers used by the rules (trailing axes only: cotangents carry batch axes) --------


def mT(x: Expr) -> Expr:
    return F.matrix_transpose(x)


def mH(x: Expr) -> Expr:
    """The conjugate transpose (the transpose of a real ``x``: no conj node)."""
    return conjugated(mT(x))


def adjoint_pairing(rule):
    """A backprop rule written for the textbook pairing ``Re tr(G^H dA)`` (the real rule
    with ``^H`` for ``^T``) as a rule of JAX's pairing ``Re sum(G * dA)``: its adjoint is
    ``conj(rule(conj(G)))`` (the same rule on real values, with no conj node)."""
    def jax_rule(n, g):
        g = tuple(None if x is None else conjugated(x) for x in g) \
            if isinstance(g, (tuple, list)) else conjugated(g)
        return tuple(None if x is None else conjugated(x) for x in rule(n, g))

    jax_rule.__doc__ = rule.__doc__
    return jax_rule


def _reshape(x: Expr, shape: tuple) -> Expr:
    return x if x.shape == tuple(shape) else F.reshape(x, tuple(shape))


def _scale_columns(x: Expr, v: Expr) -> Expr:
    """``x @ diag(v)``: column ``j`` of ``x`` times ``v[..., j]``."""
    return x * _reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def _scale_rows(x: Expr, v: Expr) -> Expr:
    """``diag(v) @ x``: row ``i`` of ``x`` times ``v[..., i]``."""
    return x * _reshape(v, v.shape + (1,))


def _as_matrix_entry(v: Expr) -> Expr:
    """``v[..., None, None]``: a per-matrix scalar ready to broadcast over matrices."""
    return _reshape(v, v.shape + (1, 1))


def _half_triangle(x: Expr, uplo: str = "L") -> Expr:
    """The ``uplo`` triangle of ``x`` with its diagonal halved (Murray's Phi for "L")."""
    lo, hi = (None, 0) if uplo == "L" else (0, None)
    return F.band(x, lo=lo, hi=hi, diagonal=0.5)


def _diagonal_matrix(x: Expr) -> Expr:
    """``x`` with its off-diagonal entries zeroed (the last two axes)."""
    return F.band(x, lo=0, hi=0)


def _fold(g: Expr, uplo: str) -> Expr:
    """The gradient of ``f(A)`` where ``f`` reads only the ``uplo`` triangle of ``A`` and
    ``g`` is ``f``'s gradient valid against symmetric perturbations: an off-diagonal entry
    of the triangle stands for both mirror entries, so the result is the triangle of
    ``g + g^H`` with its diagonal halved (for a complex matrix, the Hermitian one whose
    diagonal is real, as LAPACK reads it)."""
    return _half_triangle(g + mH(g), uplo)


def gap_inverse(w: Expr) -> Expr:
    """``E[..., i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it (no division by 0
    there; equal entries of ``w`` give inf, as the derivative does)."""
    n = w.shape[-1]
    d = _reshape(w, w.shape[:-1] + (1, n)) - _reshape(w, w.shape + (1,))
    ones = F.ones_like(d)
    eye = _diagonal_matrix(ones)
    return (ones - eye) / (d + eye)


def _from_triangle(t: Expr, uplo: str) -> Expr:
    """The symmetric (Hermitian) tangent a function reading the ``uplo`` triangle sees:
    ``tril(t) + tril(t, -1)^H`` for ``"L"`` (the diagonal halved, then mirrored: exact;
    a complex diagonal keeps its real part, as LAPACK reads it)."""
    half = _half_triangle(t, uplo)
    return half + mH(half)


def _right_solve(x: Expr, r: Expr) -> Expr:
    """``x @ inv(r)`` as a solve: ``solve(r.T, x.T).T``."""
    return mT(F.solve(mT(r), mT(x)))


def _squares(drop: int = 0, operands: int = 1):
    """Sparsity of a function of square matrices whose result drops ``drop`` trailing axes."""
    return lambda n: batched_map(n, (2,) * operands, 2 - drop)


def _results_squares(*drops: int):
    """Sparsity of a call on square matrices (its one operand) whose result ``k`` drops
    ``drops[k]`` trailing axes."""
    return lambda n: tuple(batched_map(n, (2,), 2 - d, shape)
                           for d, (shape, _) in zip(drops, n.dtype))


def _right_solve_transposed(x: Expr, r: Expr) -> Expr:
    """``x @ inv(r).T`` as a solve: ``solve(r, x.T).T``."""
    return mT(F.solve(r, mT(x)))


# -- band: the triangles and diagonal the rules need (internal) --------------------------------


def _sg_band(x, lo, hi, diagonal=1.0, _masks={}):  # noqa: B006 - the cache of masks
    """``x`` with the entries outside ``lo <= j - i <= hi`` (last two axes) set to 0 and the
    main diagonal multiplied by ``diagonal``."""
    n, m = np.shape(x)[-2:]
    key = (n, m, lo, hi)
    keep = _masks.get(key)
    if keep is None:
        offset = np.arange(m) - np.arange(n)[:, None]
        keep = np.ones((n, m), dtype=bool)
        if lo is not None:
            keep &= offset >= lo
        if hi is not None:
            keep &= offset <= hi
        keep.flags.writeable = False
        if len(_masks) < 64:
            _masks[key] = keep
    out = np.where(keep, x, np.zeros((), dtype=np.asarray(x).dtype))
    if diagonal != 1.0 and (lo is None or lo <= 0) and (hi is None or hi >= 0):
        k = np.arange(min(n, m))
        out[..., k, k] *= diagonal
    return out


def _band_prepare(shapes, dtypes, attrs):
    out = {}
    for k in ("lo", "hi"):
        v = attrs[k]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise SignatureError(f"band: {k} must be an int or None, got {describe(v)}")
        out[k] = None if v is None else int(v)
    d = attrs["diagonal"]
    if isinstance(d, bool) or not isinstance(d, (int, float, np.number)):
        raise SignatureError(f"band: diagonal must be a number, got {describe(d)}")
    out["diagonal"] = float(d)
    return out


def _band_infer(shapes, dtypes, attrs):
    _matrix("band", shapes[0])
    return shapes[0], dtypes[0]


register(Op(
    name="band", signature=sig("x", "=lo", "=hi", "=diagonal", lo=None, hi=None, diagonal=1.0),
    complex=True,
    prepare=_band_prepare, infer=_band_infer, impl=_sg_band,
    backprop=lambda n, g: (F.band(g, **n.attrs),), public=False, forward=linear,
    sparsity=lambda n: gather_map(n, attrs={**n.attrs, "diagonal": 1.0}),
    examples=lambda rng: [([rng.standard_normal((3, 3))], {"lo": None, "hi": 0}),
                          ([rng.standard_normal((2, 3, 4))], {"lo": 1, "hi": None}),
                          ([rng.standard_normal((4, 3))], {"lo": -1, "hi": 1, "diagonal": 0.5}),
                          ([rng.standard_normal((3, 3))], {"lo": 0, "hi": 0}),
                          ([rng.standard_normal((2, 3))], {"lo": 1, "hi": 1, "diagonal": 3.0})],
    doc="x with entries outside lo <= j - i <= hi (last two axes) set to 0 and the main "
        "diagonal times `diagonal`: tril is band(x, None, k), triu band(x, k, None)",
))


# -- text: a result of a multi-output function prints as NumPy code reads --------------------


def _keyword_text(attrs: dict, defaults: dict) -> str:
    parts = []
    for k, default in defaults.items():
        v = attrs.get(k, default)
        if v != default or type(v) is not type(default):
            parts.append(f"{k}={_value(v)}")
    return "".join(", " + p for p in parts)


def _value(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else repr(v)


def _item_writer(function: str, index: int | None, defaults: dict):
    def write(marks, attrs):
        inner = f"{function}({', '.join(marks)}{_keyword_text(attrs, defaults)})"
        return inner if index is None else f"{inner}[{index}]"

    return write


def _with_graph(*operands):
    """Operands as Exprs in one graph (constants made where the first Expr lives)."""
    home = next((o for o in operands if isinstance(o, Expr)), None)
    if home is None:
        home = const(operands[0])
        operands = (home,) + operands[1:]
    return tuple(o if isinstance(o, Expr) else const(o, like=home) for o in operands)


# -- inv, det, slogdet, solve -----------------------------------------------------------------


def _inv_rule(n, g):
    """Giles (2008) 2.2.3: C = inv(A): A_bar = -C^T C_bar C^T."""
    c = n.out
    return (-(mT(c) @ g @ mT(c)),)


register(Op(
    name="inv", complex=True,
    infer=on_squares("inv"), impl=np.linalg.inv, backprop=_inv_rule,
    forward=first(lambda n, t: -(n.out @ t @ n.out)), sparsity=_squares(),
    aliases=("linalg.inv",),
    examples=lambda rng: [([_well_conditioned(rng, (3, 3))], {}),
                          ([_well_conditioned(rng, (2, 2, 2))], {})],
    doc="the inverse of a square matrix (stacked over leading axes)",
))


def _det_rule(n, g):
    """Giles (2008) 2.2.4: A_bar = d_bar * det(A) * inv(A)^T (no value at a singular A)."""
    return (_as_matrix_entry(g * n.out) * mT(F.inv(n.args[0])),)


register(Op(
    name="det", complex=True,
    infer=on_squares("det", 2), impl=np.linalg.det, backprop=_det_rule,
    forward=first(lambda n, t: n.out * _trace_of_solve(n, t)), sparsity=_squares(2),
    aliases=("linalg.det",),
    examples=lambda rng: [([_well_conditioned(rng, (3, 3))], {}),
                          ([_well_conditioned(rng, (2, 3, 3))], {}),
                          ([rng.standard_normal((1, 1)) + 2.0], {})],
    doc="the determinant of a square matrix (stacked over leading axes)",
))


def _trace_of_solve(n, t):
    """Giles (2008) 2.2.4: d log|det A| = tr(inv(A) dA) = sum(inv(A)^T * dA)."""
    return F.sum(mT(F.inv(n.args[0])) * t, axis=(-2, -1))


def _slogdet_rule(n, g):
    """d log|det A| = Re tr(inv(A) dA): A_bar = g * inv(A)^T; the sign of a real matrix is
    piecewise constant (no term), a complex one's moves by d sign = i Im(tr(inv(A) dA))
    sign (JAX's): A_bar = i Im(g sign) inv(A)^T."""
    g_sign, g_log = g
    if g_sign is not None and is_complex(g_sign.data.dtype):
        turn = F.imag(g_sign * n.results[0]) * 1j
        g_log = turn if g_log is None else g_log + turn
    return (None if g_log is None else _as_matrix_entry(g_log) * mT(F.inv(n.args[0])),)


def _slogdet_forward(n, t):
    if t[0] is None:
        return None
    trace = _trace_of_solve(n, t[0])
    if not is_complex(trace.data.dtype):
        return None, trace
    return F.imag(trace) * 1j * n.results[0], F.real(trace)


def _slogdet_infer(shapes, dtypes, attrs):
    shape, dtype = on_squares("slogdet", 2)(shapes, dtypes, attrs)
    return results_of([(shape, dtype), (shape, real_dtype(dtype))])


def _sg_slogdet(a):
    return tuple(np.linalg.slogdet(a))


def slogdet(a) -> SlogdetResult:
    """``(sign, logabsdet)`` of ``numpy.linalg.slogdet``: ``det(a) = sign * exp(logabsdet)``.

    Only ``logabsdet`` carries a gradient (``inv(a).T``); ``sign`` is piecewise constant.

    >>> import symgrad as sg
    >>> sign, logdet = sg.slogdet(sg.var("A", shape=(2, 2)))
    >>> sg.evaluate([sign, logdet], {"A": [[0.0, 2.0], [1.0, 0.0]]})
    [-1.0, 0.6931471805599453]
    """
    (a,) = _with_graph(a)
    return SlogdetResult(*call("slogdet", a))


register(Op(
    name="slogdet", complex=True, infer=_slogdet_infer, impl=_sg_slogdet, backprop=_slogdet_rule,
    forward=_slogdet_forward, sparsity=_results_squares(2, 2),
    aliases=("linalg.slogdet",), front=slogdet, write=_item_writer("slogdet", None, {}),
    examples=lambda rng: [([_well_conditioned(rng, (3, 3))], {}),
                          ([-_well_conditioned(rng, (2, 3, 3))], {}),
                          ([_well_conditioned(rng, (2, 3, 3)) * [[[1.0]], [[-1.0]]]], {}),
                          ([_well_conditioned(rng, (3, 3)) * np.exp(0.7j)], {})],
    doc="(sign, log |det(a)|) of square matrices, one call",
))


def _solve_infer(shapes, dtypes, attrs):
    a, b = shapes
    m = _square("solve", a)
    if len(b) == 1:  # NumPy 2: b is a vector only when it is 1-D
        if b[0] != m:
            raise ShapeError(f"solve: a has shape {fmt(a)} but b has shape {fmt(b)} "
                             f"(needs {m} entries)")
        out = a[:-2] + b
    else:
        if len(b) < 2 or b[-2] != m:
            raise ShapeError(f"solve: a has shape {fmt(a)} but b has shape {fmt(b)}; b must "
                             f"be ({m},) or a stack of ({m}, k) matrices")
        out = broadcast("solve", a[:-2], b[:-2]) + b[-2:]
    return out, float_dtype(result_dtype(*dtypes))


def _solve_rule(n, g):
    """Giles (2008) 2.3.1: x = solve(A, b): b_bar = solve(A^T, x_bar), A_bar = -b_bar x^T."""
    a, b = n.args
    x = n.out
    if b.ndim == 1:  # columns, so that g's batch axes stay batch axes of the solve
        col = F.solve(mT(a), _reshape(g, g.shape + (1,)))
        return -(col * _reshape(x, x.shape[:-1] + (1, x.shape[-1]))), _reshape(col, g.shape)
    gb = F.solve(mT(a), g)
    return -(gb @ mT(x)), gb


def _solve_forward(n, t):
    """Giles (2008) 2.3.1: dx = solve(A, db - dA x)."""
    a, b = n.args
    ta, tb = (None if tk is None else align(tk, arg, len(n.shape)) for tk, arg in zip(t, n.args))
    x = n.out
    if b.ndim == 1:  # columns, so that the tangents' batch axes stay batch axes of the solve
        rhs = total(tb, None if ta is None else
                    -F.sum(ta * _reshape(x, x.shape[:-1] + (1,) + x.shape[-1:]), axis=-1))
        col = F.solve(a, _reshape(rhs, rhs.shape + (1,)))
        return _reshape(col, col.shape[:-1])
    return F.solve(a, total(tb, None if ta is None else -(ta @ x)))


def _solve_sparsity(n):
    core = 1 if n.args[1].ndim == 1 else 2
    return batched_map(n, (2, core), core)


register(Op(
    name="solve", complex=True,
    signature=sig("a", "b"), infer=_solve_infer, impl=np.linalg.solve,
    backprop=_solve_rule, aliases=("linalg.solve",), forward=_solve_forward,
    sparsity=_solve_sparsity,
    examples=lambda rng: [
        ([_well_conditioned(rng, (3, 3)), rng.standard_normal(3)], {}),
        ([_well_conditioned(rng, (3, 3)), rng.standard_normal((3, 2))], {}),
        ([_well_conditioned(rng, (2, 3, 3)), rng.standard_normal(3)], {}),
        ([_well_conditioned(rng, (3, 3)), rng.standard_normal((2, 3, 2))], {}),
        ([_well_conditioned(rng, (2, 1, 2, 2)), rng.standard_normal((3, 2, 1))], {})],
    doc="the solution x of a @ x = b (b a vector if 1-D, else a stack of matrices)",
))


# -- cholesky -----------------------------------------------------------------------------------


def _cholesky_rule(n, g):
    """Murray (2016): with L = chol(A), A_bar = L^-T Phi(L^T L_bar) L^-1 on symmetric
    perturbations (Phi: the lower triangle, diagonal halved), folded onto the triangle
    LAPACK reads (the upper one for ``upper=True``, where U = L^T)."""
    factor = n.out
    inverse = F.inv(factor)
    if n.attrs["upper"]:  # U = L^H: L^H L_bar = U U_bar^H, and L^-1 = U^-H
        inner = factor @ mH(g)
        left, right = inverse, mH(inverse)
    else:
        inner = mH(factor) @ g
        left, right = mH(inverse), inverse
    return (_fold(left @ _half_triangle(inner) @ right, "U" if n.attrs["upper"] else "L"),)


def _cholesky_forward(n, t):
    """Murray (2016), eq. 8: dL = L Phi(L^-1 dA L^-T), dA read from the triangle LAPACK
    reads; for ``upper=True``, U = L^T and dU = dL^T."""
    upper = n.attrs["upper"]
    low = mH(n.out) if upper else n.out
    inverse = F.inv(low)
    inner = inverse @ _from_triangle(t, "U" if upper else "L") @ mH(inverse)
    d = low @ _half_triangle(inner)
    return mH(d) if upper else d


register(Op(
    name="cholesky", complex=True, signature=sig("a", upper=False),
    forward=first(_cholesky_forward),
    sparsity=_squares(),
    prepare=lambda s, d, attrs: _check_static("cholesky", attrs, upper="upper"),
    infer=on_squares("cholesky"), impl=lambda a, upper: np.linalg.cholesky(a, upper=upper),
    backprop=adjoint_pairing(_cholesky_rule), aliases=("linalg.cholesky",),
    examples=lambda rng: [([_spd(rng, 3)], {"upper": False}),
                          ([_spd(rng, 3)], {"upper": True}),
                          ([np.stack([_spd(rng, 2), _spd(rng, 2)])], {"upper": False}),
                          ([_hpd(rng, 3)], {"upper": False}),
                          ([_hpd(rng, 3)], {"upper": True}),
                          ([np.stack([_hpd(rng, 2), _hpd(rng, 2)])], {"upper": False})],
    doc="the Cholesky factor of a symmetric (Hermitian) positive-definite matrix (lower, or "
        "upper with upper=True); reads one triangle",
))


# -- eigh, eigvalsh -----------------------------------------------------------------------------


def _uplo_prepare(name: str):
    def prepare(shapes, dtypes, attrs):
        uplo = attrs["UPLO"]
        if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
            raise SignatureError(f"{name}: UPLO must be 'L' or 'U', got {describe(uplo)}")
        return {"UPLO": uplo.upper()}

    return prepare


def _eigenvalues_term(v: Expr, g: Expr, uplo: str) -> Expr:
    """Giles (2008) 3.1: w_bar -> V diag(w_bar) V^H, folded onto the triangle read."""
    return _fold(_scale_columns(v, g) @ mH(v), uplo)


def _eigenvectors_term(w: Expr, v: Expr, g: Expr, uplo: str) -> Expr:
    """Giles (2008) 3.1: V_bar -> V (E o (V^H V_bar)) V^H, E_ij = 1 / (w_j - w_i) (JAX's
    gauge for a complex V: the diagonal of V^H dV is 0)."""
    return _fold(v @ (gap_inverse(w) * (mH(v) @ g)) @ mH(v), uplo)


def _eigh_rule(n, g):
    """Giles (2008) 3.1: the terms of the adjoints of the eigenvalues and eigenvectors."""
    uplo = n.attrs["UPLO"]
    w, v = n.results
    gw, gv = g
    terms = ([] if gw is None else [_eigenvalues_term(v, gw, uplo)]) + (
        [] if gv is None else [_eigenvectors_term(w, v, gv, uplo)])
    return (terms[0] if len(terms) == 1 else terms[0] + terms[1],)


def _eigenvalues_forward(v: Expr, t: Expr, uplo: str) -> Expr:
    """Giles (2008) 3.1: dw_i = v_i^H dA v_i (real: dA is Hermitian)."""
    return real_part(F.sum(conjugated(v) * (_from_triangle(t, uplo) @ v), axis=-2))


def _eigh_forward(n, t):
    """Giles (2008) 3.1: dw_i = v_i^H dA v_i, dV = V (E o (V^H dA V)), E_ij = 1/(w_j - w_i)."""
    if t[0] is None:
        return None
    uplo = n.attrs["UPLO"]
    w, v = n.results
    dw = _eigenvalues_forward(v, t[0], uplo)
    return dw, v @ (gap_inverse(w) * (mH(v) @ _from_triangle(t[0], uplo) @ v))


def _eigvalsh_rule(n, g):
    uplo = n.attrs["UPLO"]
    return (_eigenvalues_term(F.eigh(n.args[0], UPLO=uplo)[1], g, uplo),)


def _eigvalsh_forward(n, t):
    uplo = n.attrs["UPLO"]
    return _eigenvalues_forward(F.eigh(n.args[0], UPLO=uplo)[1], t, uplo)


def _eigvalsh_infer(shapes, dtypes, attrs):
    shape, dtype = on_squares("eigvalsh", 1)(shapes, dtypes, attrs)
    return shape, real_dtype(dtype)


def _eigh_infer(shapes, dtypes, attrs):
    return results_of([_eigvalsh_infer(shapes, dtypes, attrs),
                       on_squares("eigh")(shapes, dtypes, attrs)])


def _sg_eigh(a, UPLO):  # noqa: N803 - NumPy's keyword
    return tuple(np.linalg.eigh(a, UPLO))


def eigh(a, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's keyword
    """``(eigenvalues, eigenvectors)`` of a symmetric matrix, as ``numpy.linalg.eigh``.

    Reads the ``UPLO`` triangle only. The eigenvector gradient divides by eigenvalue gaps:
    repeated eigenvalues give inf/NaN gradients (eigenvalue gradients stay finite).

    >>> import symgrad as sg
    >>> A = sg.var("A", shape=(2, 2))
    >>> w, v = sg.eigh(A)
    >>> sg.evaluate(sg.grad(w[1], A), {"A": [[2.0, 0.0], [0.0, 1.0]]})
    array([[1., 0.],
           [0., 0.]])
    """
    (a,) = _with_graph(a)
    return EighResult(*call("eigh", a, UPLO=UPLO))


def _eigh_examples(rng, vectors: bool = False) -> list:
    """Symmetric and Hermitian cases (with ``vectors``, no complex ``UPLO="U"`` one: the
    phases of its eigenvectors are LAPACK's for the upper triangle, which the other targets,
    reading a Hermitian matrix whole, need not share)."""
    return [([_symmetric(rng, 3)], {"UPLO": "L"}), ([_symmetric(rng, 3)], {"UPLO": "U"}),
            ([np.stack([_symmetric(rng, 2), _symmetric(rng, 2)])], {"UPLO": "L"}),
            ([_hermitian(rng, 3)], {"UPLO": "L"}),
            ([np.stack([_hermitian(rng, 2), _hermitian(rng, 2)])], {"UPLO": "L"})] + (
        [] if vectors else [([_hermitian(rng, 3)], {"UPLO": "U"})])


_UPLO = sig("a", "=UPLO:str", UPLO="L")
register(Op(
    name="eigh", complex=True, signature=_UPLO, prepare=_uplo_prepare("eigh"),
    infer=_eigh_infer, impl=_sg_eigh, backprop=adjoint_pairing(_eigh_rule),
    aliases=("linalg.eigh",), front=eigh,
    forward=_eigh_forward, sparsity=_results_squares(1, 0),
    write=_item_writer("eigh", None, {"UPLO": "L"}),
    examples=lambda rng: _eigh_examples(rng, vectors=True),
    doc="(eigenvalues ascending, eigenvectors in columns) of a symmetric (Hermitian) matrix, "
        "one call",
))
register(Op(
    name="eigvalsh", complex=True, signature=_UPLO, prepare=_uplo_prepare("eigvalsh"),
    infer=_eigvalsh_infer, impl=lambda a, UPLO: np.linalg.eigvalsh(a, UPLO),
    backprop=adjoint_pairing(_eigvalsh_rule), aliases=("linalg.eigvalsh",),
    examples=_eigh_examples,
    forward=first(_eigvalsh_forward), sparsity=_squares(1),
    doc="the eigenvalues of a symmetric (Hermitian) matrix, ascending (reads the UPLO "
        "triangle)",
))


# -- svd, svdvals -------------------------------------------------------------------------------


def _svd_prepare(shapes, dtypes, attrs):
    return _check_static("svd", attrs, full_matrices="full_matrices", compute_uv="compute_uv",
                         hermitian="hermitian")


def _svd_factor_infer(which: str):
    def infer(shapes, dtypes, attrs):
        m, n = _matrix("svd", shapes[0])
        if attrs.get("hermitian") and m != n:
            raise ShapeError(f"svd: hermitian=True needs square matrices, got shape "
                             f"{fmt(shapes[0])}")
        k = min(m, n)
        lead = shapes[0][:-2]
        if which == "s":
            return lead + (k,), real_dtype(float_dtype(dtypes[0]))
        full = attrs.get("full_matrices", False)
        if which == "u":
            return lead + (m, m if full else k), float_dtype(dtypes[0])
        return lead + (n if full else k, n), float_dtype(dtypes[0])

    return infer


def _reduced_factors(a: Expr, attrs: dict, need_uv: bool) -> tuple[Expr, Expr, Expr]:
    """``(U, S, Vh)`` of the reduced SVD of ``a`` (the user's call where its factors are
    reduced)."""
    m, n = a.shape[-2:]
    full = attrs["full_matrices"] and m != n
    if need_uv and full:
        raise DifferentiationError(
            f"svd: the gradient of U or Vh of a {m}x{n} matrix with full_matrices=True is not "
            "defined (the extra columns are not unique); use full_matrices=False")
    return F.svd(a, full_matrices=attrs["full_matrices"] and not full, compute_uv=True,
                 hermitian=attrs["hermitian"])


def _townsend(a: Expr, attrs: dict, which: str, g: Expr) -> Expr:
    """Townsend (2016), one result's term: A_bar for the adjoint ``g`` of U, S or Vh (for
    the pairing Re tr(G^H dA): ^H for ^T; JAX's gauge for complex factors puts the phase
    term i Im(diag(U^H U_bar)) / S into U's)."""
    u, s, vh = _reduced_factors(a, attrs, need_uv=which != "s")
    m, n = a.shape[-2:]
    if which == "s":
        out = _scale_columns(u, g) @ vh
        return _fold(out, "L") if attrs["hermitian"] else out
    if which == "u":
        inner = mH(u) @ g
        core = gap_inverse(s * s) * (inner - mH(inner))
        out = _scale_columns(u @ core, s) @ vh
        if is_complex(u.dtype):
            phase = F.imag(F.sum(conjugated(u) * g, axis=-2)) / s * 1j
            out = out + _scale_columns(u, phase) @ vh
        if m > n:  # (I - U U^H) U_bar S^-1 Vh: zero for a square U
            out = out + (g - u @ inner) @ _scale_rows(vh, 1.0 / s)
    else:
        inner = vh @ mH(g)
        core = gap_inverse(s * s) * (inner - mH(inner))
        out = _scale_columns(u, s) @ core @ vh
        if n > m:  # U S^-1 Vh_bar (I - V V^H)
            out = out + _scale_columns(u, 1.0 / s) @ (g - mH(inner) @ vh)
    return _fold(out, "L") if attrs["hermitian"] else out


def _townsend_forward(a: Expr, attrs: dict, which: str, t: Expr) -> Expr:
    """Townsend (2016), forward: with dP = U^H dA V, dS = Re diag(dP),
    dU = U (F o (dP S + S dP^H)) + (I - U U^H) dA V S^-1,
    dV = V (F o (S dP + dP^H S)) + (I - V V^H) dA^H U S^-1, F_ij = 1 / (s_j^2 - s_i^2);
    complex factors take JAX's gauge: dU gains U diag(i Im(diag(dP)) / S)."""
    u, s, vh = _reduced_factors(a, attrs, need_uv=which != "s")
    if attrs["hermitian"]:
        t = _from_triangle(t, "L")
    v = mH(vh)
    tv = t @ v
    diagonal = F.sum(conjugated(u) * tv, axis=-2)
    if which == "s":
        return real_part(diagonal)
    m, n = a.shape[-2:]
    dp = mH(u) @ tv
    gaps = gap_inverse(s * s)
    if which == "u":
        du = u @ (gaps * (_scale_columns(dp, s) + _scale_rows(mH(dp), s)))
        if is_complex(du.dtype):
            du = du + _scale_columns(u, F.imag(diagonal) / s * 1j)
        if m > n:
            du = du + _scale_columns(tv - u @ (mH(u) @ tv), 1.0 / s)
        return du
    tu = mH(t) @ u
    dv = v @ (gaps * (_scale_rows(dp, s) + _scale_columns(mH(dp), s)))
    if n > m:
        dv = dv + _scale_columns(tu - v @ (vh @ tu), 1.0 / s)
    return mH(dv)


def _svd_infer(shapes, dtypes, attrs):
    s = _svd_factor_infer("s")(shapes, dtypes, attrs)
    if not attrs["compute_uv"]:
        return results_of([s])
    return results_of([_svd_factor_infer("u")(shapes, dtypes, attrs), s,
                       _svd_factor_infer("vh")(shapes, dtypes, attrs)])


def _sg_svd(a, full_matrices, compute_uv, hermitian):
    out = np.linalg.svd(a, full_matrices, compute_uv, hermitian)
    return tuple(out) if compute_uv else (out,)


def _svd_parts(attrs: dict) -> tuple[str, ...]:
    return ("u", "s", "vh") if attrs["compute_uv"] else ("s",)


@adjoint_pairing
def _svd_rule(n, g):
    """Townsend (2016): the terms of the adjoints of the results that have one."""
    terms = [_townsend(n.args[0], n.attrs, which, gk)
             for which, gk in zip(_svd_parts(n.attrs), g) if gk is not None]
    return (sum(terms[1:], terms[0]),)


def _svd_forward(n, t):
    if t[0] is None:
        return None
    return tuple(_townsend_forward(n.args[0], n.attrs, which, t[0]) if n.wants(k) else None
                 for k, which in enumerate(_svd_parts(n.attrs)))


def _svd_sparsity(n):
    return tuple(batched_map(n, (2,), 1 if which == "s" else 2, shape)
                 for which, (shape, _) in zip(_svd_parts(n.attrs), n.dtype))


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """``numpy.linalg.svd``: ``(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, or ``S`` alone
    with ``compute_uv=False``.

    Gradients need distinct non-zero singular values, and for ``U``/``Vh`` the reduced
    factors (``full_matrices=False`` or a square ``a``); ``S`` alone always differentiates.

    >>> import symgrad as sg
    >>> A = sg.var("A", shape=(3, 2))
    >>> U, S, Vh = sg.svd(A, full_matrices=False)
    >>> U.shape, S.shape, Vh.shape
    ((3, 2), (2,), (2, 2))
    """
    (a,) = _with_graph(a)
    results = call("svd", a, full_matrices=full_matrices, compute_uv=compute_uv,
                   hermitian=hermitian)
    return SVDResult(*results) if len(results) == 3 else results[0]


def _svd_examples(rng) -> list:
    r = rng.standard_normal
    return [([r((3, 2))], {"full_matrices": False}), ([r((2, 3))], {"full_matrices": False}),
            ([r((3, 3))], {}), ([r((2, 3, 2))], {"full_matrices": False}),
            ([_symmetric(rng, 3)], {"hermitian": True}),
            ([_complex(rng, (3, 2))], {"full_matrices": False}),
            ([_complex(rng, (2, 3))], {"full_matrices": False}),
            ([_complex(rng, (3, 3))], {}),
            ([_complex(rng, (2, 3, 2))], {"full_matrices": False})]


_SVD_DEFAULTS = {"full_matrices": True, "compute_uv": True, "hermitian": False}
_PLAIN = {"full_matrices": False, "hermitian": False}
register(Op(
    name="svd", complex=True, signature=sig("a", "=full_matrices", "=compute_uv", "=hermitian",
                              **_SVD_DEFAULTS),
    prepare=_svd_prepare, infer=_svd_infer, impl=_sg_svd, backprop=_svd_rule,
    forward=_svd_forward, sparsity=_svd_sparsity, aliases=("linalg.svd",), front=svd,
    write=_item_writer("svd", None, _SVD_DEFAULTS),
    examples=lambda rng: _svd_examples(rng) + [
        ([rng.standard_normal((3, 2))], {"compute_uv": False}),
        ([rng.standard_normal((2, 4))], {"full_matrices": True, "compute_uv": False}),
        ([_complex(rng, (2, 4))], {"full_matrices": True, "compute_uv": False})],
    doc="(U, S, Vh) of the singular value decomposition, one call (S alone with "
        "compute_uv=False)",
))

register(Op(
    name="svdvals", complex=True, infer=_svd_factor_infer("s"), impl=np.linalg.svdvals,
    aliases=("linalg.svdvals",),
    backprop=adjoint_pairing(lambda n, g: (_townsend(n.args[0], _PLAIN, "s", g),)),
    forward=first(lambda n, t: _townsend_forward(n.args[0], _PLAIN, "s", t)),
    sparsity=_squares(1),
    examples=lambda rng: [([rng.standard_normal((3, 2))], {}),
                          ([rng.standard_normal((2, 2, 3))], {}),
                          ([_complex(rng, (3, 2))], {}), ([_complex(rng, (2, 2, 3))], {})],
    doc="the singular values, descending (svd with compute_uv=False)",
))


# -- pinv -------------------------------------------------------------------------------------


class _NoValue:
    """NumPy's "not given" marker for ``pinv``'s ``rtol``."""

    def __repr__(self) -> str:
        return "<no value>"


_NOT_GIVEN = _NoValue()


def _pinv_prepare(shapes, dtypes, attrs):
    rcond, rtol = attrs["rcond"], attrs.get("rtol", _NOT_GIVEN)
    if rcond is not None and rtol is not _NOT_GIVEN:
        raise SignatureError("pinv: `rtol` and `rcond` can't be both set")
    if rcond is None:
        if rtol is _NOT_GIVEN:
            rcond = 1e-15
        elif rtol is None:
            m, n = _matrix("pinv", shapes[0])
            rcond = max(m, n) * float(np.finfo(float_dtype(dtypes[0])).eps)
        else:
            rcond = rtol
    if isinstance(rcond, bool) or not isinstance(rcond, (int, float, np.number)):
        raise SignatureError(f"pinv: rcond must be a number, got {describe(rcond)}")
    return {"rcond": float(rcond), "hermitian": _flag("pinv", "hermitian", attrs["hermitian"])}


def _pinv_infer(shapes, dtypes, attrs):
    m, n = _matrix("pinv", shapes[0])
    if attrs["hermitian"] and m != n:
        raise ShapeError(f"pinv: hermitian=True needs square matrices, got {fmt(shapes[0])}")
    return shapes[0][:-2] + (n, m), float_dtype(dtypes[0])


def _pinv_vjp(a: Expr, p: Expr, g: Expr, full: Expr) -> Expr:
    """Golub & Pereyra (1973), as reverse mode: P = pinv(A) of locally constant rank,
    A_bar = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A) (the pairing
    Re tr(G^H dA))."""
    pt, gt = mH(p), mH(g)
    z = gt @ (p @ pt)
    w = (pt @ p) @ gt
    rows, cols = _full_rank_zero(a, full, z - a @ (p @ z), w - (w @ p) @ a)
    return -(pt @ g @ pt) + rows + cols


def _pinv_jvp(a: Expr, p: Expr, t: Expr, full: Expr) -> Expr:
    """Golub & Pereyra (1973): dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P."""
    tt = mH(t)
    left = (p @ mH(p)) @ tt
    right = tt @ (mH(p) @ p)
    rows, cols = _full_rank_zero(a, full, left - (left @ a) @ p, right - p @ (a @ right))
    return -(p @ t @ p) + rows + cols


def _full_rank_zero(a: Expr, full: Expr, rows: Expr, cols: Expr) -> tuple[Expr, Expr]:
    """The terms of ``I - A P`` (``rows``) and ``I - P A`` (``cols``), each an exact 0
    where it vanishes identically: ``A P = I`` when ``A`` has full row rank, ``P A = I``
    when it has full column rank (``full``: the rank is ``min(M, N)``). Computed, they are
    rounding noise of size eps * cond(A) multiplied by ``P P^T`` (size cond^2), whose
    derivatives cancel only in exact arithmetic: the Hessian of ``pinv(X.T @ X)`` at cond
    9e4 was off by 1e-3, as JAX's is; with the exact zeros it is as accurate as ``inv``'s.
    Full rank is an open condition, so the zeros are exact to every order."""
    m, n = a.shape[-2:]
    mask = _reshape(full, full.shape + (1, 1))
    if m <= n:
        rows = F.where(mask, 0.0, rows)
    if n <= m:
        cols = F.where(mask, 0.0, cols)
    return rows, cols


def _has_full_rank(a: Expr, rcond: float, hermitian: bool = False) -> Expr:
    """Whether each matrix of ``a`` has rank ``min(M, N)`` by pinv's and lstsq's cutoff
    (singular values above ``rcond`` times the largest count)."""
    return F.matrix_rank(a, hermitian=hermitian, rtol=rcond) == min(a.shape[-2:])


def _pinv_parts(n) -> tuple[Expr, Expr]:
    """The operand as pinv reads it (its ``L`` triangle mirrored for ``hermitian``: the
    rule must depend on what the function reads, or its own derivative is wrong), and
    whether it has full rank."""
    a, hermitian = n.args[0], n.attrs["hermitian"]
    full = _has_full_rank(a, n.attrs["rcond"], hermitian)
    return (_from_triangle(a, "L") if hermitian else a), full


@adjoint_pairing
def _pinv_rule(n, g):
    a, full = _pinv_parts(n)
    out = _pinv_vjp(a, n.out, g, full)
    return (_fold(out, "L") if n.attrs["hermitian"] else out,)


def _pinv_forward(n, t):
    a, full = _pinv_parts(n)
    return _pinv_jvp(a, n.out, _from_triangle(t, "L") if n.attrs["hermitian"] else t, full)


register(Op(
    name="pinv", signature=sig("a", "=rcond", "=hermitian", rcond=None, hermitian=False,
                               rtol=_NOT_GIVEN),
    prepare=_pinv_prepare, infer=_pinv_infer,
    impl=lambda a, rcond, hermitian: np.linalg.pinv(a, rcond=rcond, hermitian=hermitian),
    backprop=_pinv_rule, aliases=("linalg.pinv",), sparsity=_squares(),
    forward=first(_pinv_forward), complex=True,
    examples=lambda rng: [([rng.standard_normal((3, 2))], {}),
                          ([rng.standard_normal((2, 3))], {"rtol": None}),
                          ([rng.standard_normal((2, 3, 3))], {"rcond": 1e-10}),
                          ([_symmetric(rng, 3)], {"hermitian": True}),
                          ([_complex(rng, (3, 2))], {}),
                          ([_complex(rng, (2, 3))], {"rtol": None}),
                          ([_complex(rng, (2, 3, 3))], {"rcond": 1e-10}),
                          ([_hermitian(rng, 3)], {"hermitian": True})],
    doc="the Moore-Penrose pseudo-inverse (singular values at most rcond * the largest "
        "count as zero)",
))


# -- lstsq --------------------------------------------------------------------------------------


def _lstsq_prepare(shapes, dtypes, attrs):
    rcond = attrs["rcond"]
    if rcond is not None and (isinstance(rcond, bool)
                              or not isinstance(rcond, (int, float, np.number))):
        raise SignatureError(f"lstsq: rcond must be a number or None, got {describe(rcond)}")
    return {"rcond": None if rcond is None else float(rcond)}


def _lstsq_shapes(shapes) -> tuple[int, int, tuple]:
    a, b = shapes
    m, n = _plain_matrix("lstsq", a)
    if len(b) not in (1, 2) or b[0] != m:
        raise ShapeError(f"lstsq: a has shape {fmt(a)} but b has shape {fmt(b)}; b must be "
                         f"({m},) or ({m}, k)")
    return m, n, b[1:]


def _lstsq_infer(shapes, dtypes, attrs):
    m, n, cols = _lstsq_shapes(shapes)
    dtype = float_dtype(result_dtype(*dtypes))
    residuals = ((cols[0] if cols else 1),) if m > n else (0,)
    real = real_dtype(dtype)
    return results_of([((n,) + cols, dtype), (residuals, real), ((), "int32"),
                       ((min(m, n),), real)])


def _sg_lstsq(a, b, rcond):
    """``numpy.linalg.lstsq``'s ``(x, residuals, rank, s)``; where NumPy gives no residuals
    for a rank-deficient ``a`` (an empty array, a shape no one can know before the values)
    they are computed, ``sum((b - a @ x) ** 2)`` at its ``x``, as for a full-rank ``a``."""
    x, residuals, rank, sv = np.linalg.lstsq(a, b, rcond)
    m, n = np.shape(a)
    if m > n and rank < n:
        r = np.asarray(b) - np.asarray(a) @ x
        residuals = np.atleast_1d(np.sum(np.abs(r) ** 2, axis=0))
    return x, residuals, rank, sv


def _effective_rcond(a: Expr, rcond: float | None) -> float:
    m, n = a.shape
    return float(np.finfo(np.float64).eps) * max(m, n) if rcond is None else rcond


def _x_term(n, g):
    """x = pinv(A) b (the minimum-norm solution, with lstsq's cut-off): b_bar = P^H x_bar,
    and A_bar is pinv's rule for P_bar = x_bar b^H."""
    a, b = n.args
    rcond = _effective_rcond(a, n.attrs["rcond"])
    p, full = F.pinv(a, rcond=rcond), _has_full_rank(a, rcond)
    if b.ndim == 1:
        p_bar = _reshape(g, g.shape + (1,)) * _reshape(conjugated(b), (1, b.shape[0]))
        return _pinv_vjp(a, p, p_bar, full), g @ conjugated(p)
    return _pinv_vjp(a, p, g @ mH(b), full), mH(p) @ g


def _residuals_term(n, g):
    """Sum of |r|^2 of r = b - A x at the least-squares x, where dr/dx is orthogonal to r:
    A_bar = -2 r x^H g, b_bar = 2 r g."""
    a, b = n.args
    x = n.results[0]
    r = b - a @ x
    if b.ndim == 1:
        r_bar = 2.0 * r * g
        return (-(_reshape(r_bar, r_bar.shape + (1,)) * _reshape(conjugated(x), (1, x.shape[0]))),
                r_bar)
    r_bar = 2.0 * r * _reshape(g, g.shape[:-1] + (1, g.shape[-1]))
    return -(r_bar @ mH(x)), r_bar


@adjoint_pairing
def _lstsq_rule(n, g):
    """The terms of the adjoints of x, the residuals and the singular values (the rank has
    no derivative)."""
    gx, gr, _, gs = g
    terms = [] if gx is None else [_x_term(n, gx)]
    if gr is not None and 0 not in gr.shape:
        terms.append(_residuals_term(n, gr))
    if gs is not None:
        terms.append((_townsend(n.args[0], _PLAIN, "s", gs), None))
    a_bar = [t[0] for t in terms]
    b_bar = [t[1] for t in terms if t[1] is not None]
    return (sum(a_bar[1:], a_bar[0]) if a_bar else None,
            sum(b_bar[1:], b_bar[0]) if b_bar else None)


def _x_forward(n, t):
    """x = P b with P = pinv(A): dx = dP b + P db."""
    a, b = n.args
    ta, tb = t
    rcond = _effective_rcond(a, n.attrs["rcond"])
    p = F.pinv(a, rcond=rcond)
    return matmul_jvp(p, b, None if ta is None else _pinv_jvp(a, p, ta, _has_full_rank(a, rcond)),
                      tb)


def _residuals_forward(n, t):
    """d sum(|r|^2) = 2 Re sum(conj(r) * (db - dA x)) at the least-squares x (A^H r = 0)."""
    a, b = n.args
    ta, tb = t
    if 0 in n.dtype[1][0]:
        return None
    x = n.results[0]
    r = b - a @ x
    d = total(tb, None if ta is None else -matmul_jvp(a, x, ta, None))
    axis = -1 if b.ndim == 1 else -2
    return 2.0 * real_part(F.sum(conjugated(r) * d, axis=axis, keepdims=b.ndim == 1))


def _lstsq_forward(n, t):
    if t[0] is None and t[1] is None:
        return None
    sv = _townsend_forward(n.args[0], _PLAIN, "s", t[0]) \
        if n.wants(3) and t[0] is not None else None
    return (_x_forward(n, t) if n.wants(0) else None,
            _residuals_forward(n, t) if n.wants(1) else None, None, sv)


def _lstsq_sparsity(n):
    (x, _), (res, _), _, (sv, _) = n.dtype
    cores = (2, n.args[1].ndim)
    empty = 0 in res  # a wide a's residuals: no element to depend on anything
    return (batched_map(n, cores, len(x), x),
            (None, None) if empty else batched_map(n, cores, len(res), res),
            (None, None), (batched_map(n, (2,), 1, sv)[0], None))


def lstsq(a, b, rcond=None) -> tuple:
    """``(x, residuals, rank, s)`` of ``numpy.linalg.lstsq``: the minimum-norm ``x``
    minimising ``|b - a @ x|``, with ``rcond`` NumPy 2's (machine epsilon times
    ``max(M, N)`` when None).

    ``residuals`` has NumPy's shape for a full-rank ``a``; for a rank-deficient ``a`` with
    ``M > N`` (where NumPy's is empty) it is ``sum((b - a @ x) ** 2)``. ``rank`` is int32;
    gradients need a locally constant rank.

    >>> import symgrad as sg
    >>> a, b = sg.var("a", shape=(3, 2)), sg.var("b", shape=(3,))
    >>> x, res, rank, s = sg.lstsq(a, b)
    >>> sg.evaluate(x, {"a": [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], "b": [1.0, 2.0, 3.0]})
    array([1., 2.])
    """
    a, b = _with_graph(a, b)
    return call("lstsq", a, b, rcond=rcond)


def _lstsq_examples(rng) -> list:
    r = rng.standard_normal
    c = lambda shape: _complex(rng, shape)  # noqa: E731
    return [([r((4, 2)), r(4)], {}), ([r((4, 3)), r((4, 2))], {"rcond": 1e-12}),
            ([r((2, 3)), r(2)], {}), ([c((4, 2)), c(4)], {}),
            ([c((4, 3)), c((4, 2))], {"rcond": 1e-12}), ([c((2, 3)), c(2)], {}),
            ([c((4, 2)), r(4)], {})]


_LSTSQ = sig("a", "b", "=rcond", rcond=None)
register(Op(
    name="lstsq", complex=True, signature=_LSTSQ, prepare=_lstsq_prepare, infer=_lstsq_infer,
    impl=_sg_lstsq, backprop=_lstsq_rule, forward=_lstsq_forward, sparsity=_lstsq_sparsity,
    aliases=("linalg.lstsq",), front=lstsq, write=_item_writer("lstsq", None, {"rcond": None}),
    examples=_lstsq_examples,
    doc="(x, residuals, rank, s) of the least-squares problem, one call",
))


# -- qr -----------------------------------------------------------------------------------------

_QR_MODES = ("reduced", "complete", "r")


def _qr_prepare(shapes, dtypes, attrs):
    mode = attrs["mode"]
    if mode not in _QR_MODES:
        hint = (" (the Householder form of mode='raw' is not supported)" if mode == "raw"
                else "")
        raise SignatureError(f"qr: mode must be one of {', '.join(map(repr, _QR_MODES))}, got "
                             f"{mode!r}{hint}")
    return {"mode": mode}


def _copyltu(m: Expr) -> Expr:
    """The lower triangle of ``m`` mirrored to the upper one (conjugated: Hermitian)."""
    half = _half_triangle(m)
    return half + mH(half)


def _qr_square_vjp(q: Expr, r: Expr, q_bar: Expr | None, r_bar: Expr | None) -> Expr:
    """Seeger et al. (2017), Walter & Lehmann (2013): A = QR with m >= n,
    M = R R_bar^H - Q_bar^H Q, A_bar = (Q_bar + Q copyltu(M)) R^-H (the pairing
    Re tr(G^H dA))."""
    m = r @ mH(r_bar) if r_bar is not None else None
    if q_bar is not None:
        m = -(mH(q_bar) @ q) if m is None else m - mH(q_bar) @ q
    top = q @ _copyltu(m)
    return _right_solve_transposed(top if q_bar is None else q_bar + top, conjugated(r))


def _qr_vjp(a: Expr, which: str, g: Expr, mode: str) -> Expr:
    rows, cols = a.shape[-2:]
    if mode == "complete" and rows > cols:
        if which == "q":
            raise DifferentiationError(
                f"qr: the gradient of Q of a {rows}x{cols} matrix with mode='complete' is not "
                "defined (its extra columns are not unique); use mode='reduced'")
        g = g[..., :cols, :]  # R = [R1; 0]: only R1 depends on a
    q, r = F.qr(a, mode="reduced")
    q_bar, r_bar = (g, None) if which == "q" else (None, g)
    if rows >= cols:
        return _qr_square_vjp(q, r, q_bar, r_bar)
    # Liao et al. (2019): A = [X | Y], R = [U | V] with X = QU, V = Q^T Y
    y, u = a[..., :, rows:], r[..., :, :rows]
    if r_bar is None:
        x_bar = _qr_square_vjp(q, u, q_bar, None)
        y_bar = F.zeros(shape=x_bar.shape[:-1] + (cols - rows,), dtype=x_bar.dtype)
        return F.concatenate([x_bar, y_bar], axis=-1)
    u_bar, v_bar = r_bar[..., :, :rows], r_bar[..., :, rows:]
    x_bar = _qr_square_vjp(q, u, y @ mH(v_bar), u_bar)
    return F.concatenate([x_bar, q @ v_bar], axis=-1)


def _qr_square_jvp(q: Expr, r: Expr, t: Expr) -> tuple[Expr, Expr]:
    """Walter & Lehmann (2013): A = QR with m >= n, X = Q^H dA R^-1, Omega = L - L^H with L
    the strictly lower part of X: dQ = dA R^-1 - Q (X - Omega), dR = (X - Omega) R; a
    complex X adds i Im(diag(X)) to Omega (JAX's gauge: R's diagonal stays real)."""
    y = _right_solve(t, r)
    x = mH(q) @ y
    low = F.band(x, lo=None, hi=-1)
    core = x - (low - mH(low))
    if is_complex(x.dtype):
        core = core - F.imag(_diagonal_matrix(x)) * 1j
    return y - q @ core, core @ r


def _qr_jvp(a: Expr, which: str, t: Expr, mode: str) -> Expr:
    rows, cols = a.shape[-2:]
    if mode == "complete" and rows > cols and which == "q":
        raise DifferentiationError(
            f"qr: the derivative of Q of a {rows}x{cols} matrix with mode='complete' is not "
            "defined (its extra columns are not unique); use mode='reduced'")
    q, r = F.qr(a, mode="reduced")
    if rows >= cols:
        dq, dr = _qr_square_jvp(q, r, t)
        if which == "r" and mode == "complete" and rows > cols:
            pad = F.zeros(shape=dr.shape[:-2] + (rows - cols, cols), dtype=dr.dtype)
            return F.concatenate([dr, pad], axis=-2)
        return dq if which == "q" else dr
    # Liao et al. (2019): A = [X | Y] with X = QU square, R = [U | V], V = Q^T Y
    dq, du = _qr_square_jvp(q, r[..., :, :rows], t[..., :, :rows])
    if which == "q":
        return dq
    dv = mH(dq) @ a[..., :, rows:] + mH(q) @ t[..., :, rows:]
    return F.concatenate([du, dv], axis=-1)


def _qr_infer(shapes, dtypes, attrs):
    m, n = _matrix("qr", shapes[0])
    k = m if attrs["mode"] == "complete" else min(m, n)
    lead, dtype = shapes[0][:-2], float_dtype(dtypes[0])
    r = (lead + (k, n), dtype)
    return results_of([r] if attrs["mode"] == "r" else [(lead + (m, k), dtype), r])


def _sg_qr(a, mode):
    out = np.linalg.qr(a, mode)
    return (out,) if mode == "r" else tuple(out)


def _qr_parts(attrs: dict) -> tuple[str, ...]:
    return ("r",) if attrs["mode"] == "r" else ("q", "r")


@adjoint_pairing
def _qr_rule(n, g):
    """Seeger et al. (2017), Walter & Lehmann (2013), Liao et al. (2019): the terms of the
    adjoints of Q and R."""
    terms = [_qr_vjp(n.args[0], which, gk, n.attrs["mode"])
             for which, gk in zip(_qr_parts(n.attrs), g) if gk is not None]
    return (sum(terms[1:], terms[0]),)


def _qr_forward(n, t):
    if t[0] is None:
        return None
    return tuple(_qr_jvp(n.args[0], which, t[0], n.attrs["mode"]) if n.wants(k) else None
                 for k, which in enumerate(_qr_parts(n.attrs)))


def qr(a, mode: str = "reduced"):
    """``numpy.linalg.qr``: ``(Q, R)`` with ``a = Q @ R`` (``mode="reduced"`` or
    ``"complete"``), or ``R`` alone (``mode="r"``).

    Gradients need a full-rank ``a``; ``Q`` of ``mode="complete"`` only for ``M <= N``.

    >>> import symgrad as sg
    >>> Q, R = sg.qr(sg.var("A", shape=(3, 2)))
    >>> Q.shape, R.shape
    ((3, 2), (2, 2))
    """
    (a,) = _with_graph(a)
    results = call("qr", a, mode=mode)
    return results[0] if mode == "r" else QRResult(*results)


def _qr_examples(rng) -> list:
    r = rng.standard_normal
    return [([r((3, 2))], {}), ([r((3, 3))], {"mode": "complete"}), ([r((2, 3))], {}),
            ([r((2, 3, 2))], {}), ([r((3, 2))], {"mode": "r"}),
            ([_complex(rng, (3, 2))], {}), ([_complex(rng, (3, 3))], {"mode": "complete"}),
            ([_complex(rng, (2, 3, 2))], {}), ([_complex(rng, (3, 2))], {"mode": "r"})]


register(Op(
    name="qr", complex=True, signature=sig("a", "=mode:str", mode="reduced"), prepare=_qr_prepare,
    infer=_qr_infer, impl=_sg_qr, backprop=_qr_rule, forward=_qr_forward,
    sparsity=lambda n: tuple(batched_map(n, (2,), 2, shape) for shape, _ in n.dtype),
    aliases=("linalg.qr",), front=qr, write=_item_writer("qr", None, {"mode": "reduced"}),
    examples=_qr_examples,
    doc="(Q, R) of the QR decomposition, one call (R alone with mode='r')",
))


# -- matrix_power, multi_dot, trace -----------------------------------------------------------


def _power_prepare(shapes, dtypes, attrs):
    k = attrs["n"]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise SignatureError(f"matrix_power: the exponent must be an integer, got {k!r}")
    return {"n": int(k)}


def _power_infer(shapes, dtypes, attrs):
    _square("matrix_power", shapes[0])
    return shapes[0], dtypes[0] if attrs["n"] >= 0 else float_dtype(dtypes[0])


def _power_vjp(b: Expr, k: int, g: Expr) -> Expr:
    """The adjoint of ``b`` in ``b^k`` (k >= 1) by the binary powering NumPy uses, one level
    per bit: ``b^2j = h @ h`` with ``h = b^j``, and ``b^(j+1) = b^j @ b``."""
    direct = []
    adj = g
    while k > 1:
        if k % 2:
            direct.append(mT(F.matrix_power(b, k - 1)) @ adj)
            adj = adj @ mT(b)
            k -= 1
        else:
            h = F.matrix_power(b, k // 2)
            adj = adj @ mT(h) + mT(h) @ adj
            k //= 2
    for d in direct:
        adj = adj + d
    return adj


def _power_rule(n, g):
    a, k = n.args[0], n.attrs["n"]
    if k == 0:
        return (None,)
    if k > 0:
        return (_power_vjp(a, k, g),)
    b = F.inv(a)
    return (-(mT(b) @ _power_vjp(b, -k, g) @ mT(b)),)


def _power_jvp(b: Expr, k: int, db: Expr) -> Expr:
    """d(b^k) for k >= 1 by the binary powering NumPy uses: d(h @ h) = dh @ h + h @ dh
    with h = b^(k/2), and d(b^(k-1) @ b) = d(b^(k-1)) @ b + b^(k-1) @ db."""
    if k == 1:
        return db
    if k % 2:
        return _power_jvp(b, k - 1, db) @ b + F.matrix_power(b, k - 1) @ db
    h = F.matrix_power(b, k // 2)
    dh = _power_jvp(b, k // 2, db)
    return dh @ h + h @ dh


def _power_forward(n, t):
    a, k = n.args[0], n.attrs["n"]
    if k == 0:
        return None
    if k > 0:
        return _power_jvp(a, k, t)
    b = F.inv(a)
    return _power_jvp(b, -k, -(b @ t @ b))


register(Op(
    name="matrix_power", complex=True,
    signature=sig("a", "=n", n=None), prepare=_power_prepare,
    infer=_power_infer, impl=lambda a, n: np.linalg.matrix_power(a, n), backprop=_power_rule,
    forward=first(_power_forward), sparsity=_squares(),
    aliases=("linalg.matrix_power",),
    examples=lambda rng: [([0.5 * rng.standard_normal((3, 3))], {"n": k})
                          for k in (0, 1, 2, 3, 6, 7)] + [
        ([_well_conditioned(rng, (2, 2, 2))], {"n": -1}),
        ([_well_conditioned(rng, (3, 3))], {"n": -3})],
    doc="a square matrix to an integer power n (n < 0: the inverse's power)",
))


def _multi_dot_infer(shapes, dtypes, attrs):
    if len(shapes) < 2:
        raise ShapeError("multi_dot: needs at least 2 arrays")
    for k, s in enumerate(shapes):
        ends = k in (0, len(shapes) - 1)
        if len(s) not in ((1, 2) if ends else (2,)):
            raise ShapeError(f"multi_dot: array {k} has shape {fmt(s)}; the first and last "
                             "may be 1-D, every array must be 2-D otherwise")
    dims = [(1,) + shapes[0] if len(shapes[0]) == 1 else shapes[0], *shapes[1:-1],
            shapes[-1] + (1,) if len(shapes[-1]) == 1 else shapes[-1]]
    for k in range(len(dims) - 1):
        if dims[k][1] != dims[k + 1][0]:
            raise ShapeError(f"multi_dot: shapes {fmt(shapes[k])} and {fmt(shapes[k + 1])} "
                             f"(arrays {k} and {k + 1}) are not aligned")
    out = shapes[0][:1] * (len(shapes[0]) == 2) + shapes[-1][1:] * (len(shapes[-1]) == 2)
    return out, result_dtype(*dtypes)


def _multi_dot_rule(n, g):
    """A_k_bar = (A_0 ... A_k-1)^T G (A_k+1 ... A_last)^T, with running products from both
    ends (1-D end arrays as a row and a column)."""
    arrays = list(n.args)
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    batch = g.shape[: g.ndim - len(n.shape)]
    if first:
        arrays[0] = _reshape(arrays[0], (1,) + arrays[0].shape)
    if last:
        arrays[-1] = _reshape(arrays[-1], arrays[-1].shape + (1,))
    g = _reshape(g, batch + (arrays[0].shape[0], arrays[-1].shape[1]))
    suffix: list[Expr | None] = [None] * len(arrays)
    for k in range(len(arrays) - 2, -1, -1):
        nxt = arrays[k + 1]
        suffix[k] = nxt if suffix[k + 1] is None else nxt @ suffix[k + 1]
    out, left = [], g
    for k, x in enumerate(arrays):
        adj = left if suffix[k] is None else left @ mT(suffix[k])
        out.append(_reshape(adj, batch + n.args[k].shape))
        left = mT(x) @ left
    return tuple(out)


def _multi_dot_forward(n, t):
    """The product rule along the chain: d(T @ A) = dT @ A + T @ dA, 1-D end arrays as a
    row and a column."""
    arrays, tangents = list(n.args), list(t)
    batch = next(tk.shape[: tk.ndim - a.ndim] for a, tk in zip(arrays, tangents)
                 if tk is not None)
    for k, shape in ((0, lambda a: (1,) + a.shape), (-1, lambda a: a.shape + (1,))):
        if arrays[k].ndim == 1:
            if tangents[k] is not None:
                tangents[k] = _reshape(tangents[k], batch + shape(arrays[k]))
            arrays[k] = _reshape(arrays[k], shape(arrays[k]))
    prod, dprod = arrays[0], tangents[0]
    for a, ta in zip(arrays[1:], tangents[1:]):
        dprod = total(None if dprod is None else dprod @ a, None if ta is None else prod @ ta)
        prod = prod @ a
    return _reshape(dprod, batch + n.shape)


register(Op(
    name="multi_dot", complex=True,
    signature=sig("[arrays]"), infer=_multi_dot_infer,
    impl=lambda *arrays: np.linalg.multi_dot(arrays), backprop=_multi_dot_rule,
    forward=_multi_dot_forward, sparsity=dense_maps,
    aliases=("linalg.multi_dot",),
    examples=lambda rng: [([rng.standard_normal(s) for s in shapes], {}) for shapes in (
        [(2, 3), (3, 4)], [(3,), (3, 4), (4, 2)], [(2, 3), (3, 4), (4,)],
        [(5,), (5, 2), (2, 3), (3, 4), (4,)], [(2, 5), (5, 1), (1, 3), (3, 4)])],
    doc="the product of a chain of matrices, multiplied in the cheapest order",
))


def _trace_prepare(shapes, dtypes, attrs):
    ndim = len(shapes[0])
    if ndim < 2:
        raise ShapeError(f"trace: needs at least 2 axes, got shape {fmt(shapes[0])}")
    offset = attrs["offset"]
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise SignatureError(f"trace: offset must be an int, got {describe(offset)}")
    a1 = norm_axes("trace", attrs["axis1"], ndim)[0]
    a2 = norm_axes("trace", attrs["axis2"], ndim)[0]
    if a1 == a2:
        raise ShapeError(f"trace: axis1 and axis2 are the same axis ({attrs['axis1']!r}, "
                         f"{attrs['axis2']!r})")
    return {"offset": int(offset), "axis1": a1, "axis2": a2}


def _trace_infer(shapes, dtypes, attrs):
    shape = shapes[0]
    dtype = dtypes[0] if is_float(dtypes[0]) else "int64"
    return reduced(shape, (attrs["axis1"], attrs["axis2"]), False), dtype


def _trace_rule(n, g):
    """g on the offset diagonal of each (axis1, axis2) plane."""
    x, off, a1, a2 = n.args[0], n.attrs["offset"], n.attrs["axis1"], n.attrs["axis2"]
    size = (x.shape[a1], x.shape[a2])
    plane = F.band(F.broadcast_to(_as_matrix_entry(g), g.shape + size), lo=off, hi=off)
    ndim = x.ndim
    rest = [ax for ax in range(-ndim, 0) if ax not in (a1, a2)]
    source = {**{ax: k for k, ax in enumerate(rest)}, a1: ndim - 2, a2: ndim - 1}
    perm = tuple(source[ax] for ax in range(-ndim, 0))
    return (plane if perm == tuple(range(ndim)) else F.transpose(plane, axes=perm),)


register(Op(
    name="trace", complex=True,
    signature=sig("a", "=offset", "=axis1", "=axis2", offset=0, axis1=0, axis2=1),
    prepare=_trace_prepare, infer=_trace_infer,
    impl=lambda a, offset, axis1, axis2: np.trace(a, offset, axis1, axis2),
    backprop=_trace_rule, forward=linear,
    sparsity=lambda n: (reduce_map(n, (n.attrs["axis1"], n.attrs["axis2"])),),
    examples=lambda rng: [([rng.standard_normal((3, 3))], {}),
                          ([rng.standard_normal((3, 4))], {"offset": 1}),
                          ([rng.standard_normal((2, 3, 4))], {"offset": -1, "axis1": 2,
                                                              "axis2": 0}),
                          ([rng.standard_normal((2, 3, 4))], {"axis1": -2, "axis2": -1})],
    doc="the sum along the offset diagonal of the (axis1, axis2) planes",
))


# -- norm ---------------------------------------------------------------------------------------

_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, _INF, -_INF)


def _norm_prepare(shapes, dtypes, attrs):
    ndim = len(shapes[0])
    order, axis = attrs["ord"], attrs["axis"]
    if order == "f":
        order = "fro"
    if isinstance(order, (np.integer, np.floating)):
        order = order.item()
    if not (order is None or order in ("fro", "nuc")
            or (isinstance(order, (int, float)) and not isinstance(order, bool))):
        raise SignatureError(f"norm: ord must be None, a number, inf, 'fro' or 'nuc', got "
                             f"{describe(order)}")
    if isinstance(order, float) and order.is_integer():
        order = int(order)
    if axis is None:
        if order is not None and ndim not in (1, 2):
            raise ShapeError(f"norm: ord={describe(order)} without axis needs a 1-D or 2-D array, "
                             f"got shape {fmt(shapes[0])}")
        axes = None
    else:
        seq = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if len(seq) not in (1, 2):
            raise ShapeError(f"norm: axis must name 1 axis (a vector norm) or 2 (a matrix "
                             f"norm), got {describe(axis)}")
        axes = tuple(norm_axes("norm", a, ndim)[0] for a in seq)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"norm: duplicate axes in {describe(axis)}")
    matrix = len(axes) == 2 if axes is not None else (order is not None and ndim == 2)
    if matrix and order not in _MATRIX_ORDS:
        raise SignatureError(f"norm: ord={describe(order)} is not a matrix norm (use None, 'fro', "
                             "'nuc', 1, -1, 2, -2, inf or -inf)")
    if not matrix and isinstance(order, str):
        raise SignatureError(f"norm: ord={describe(order)} is a matrix norm; this is a vector norm")
    return {"ord": order, "axis": axes, "keepdims": _flag("norm", "keepdims", attrs["keepdims"])}


def _norm_axes(ndim: int, attrs: dict) -> tuple[int, ...]:
    """The reduced axes (negative, matrix norms as (row, col))."""
    axes = attrs["axis"]
    if axes is not None:
        return axes
    if attrs["ord"] is None:
        return tuple(range(-ndim, 0))
    return (-2, -1) if ndim == 2 else (-1,)


def _norm_infer(shapes, dtypes, attrs):
    axes = _norm_axes(len(shapes[0]), attrs)
    return (reduced(shapes[0], tuple(sorted(axes)), attrs["keepdims"]),
            real_dtype(float_dtype(dtypes[0])))


def _norm_rule(n, g):
    x = n.args[0]
    kept = reduced(x.shape, tuple(sorted(_norm_axes(x.ndim, n.attrs))), True)
    batch = g.shape[: g.ndim - len(n.shape)]
    return (_norm_terms(n, _reshape(g, batch + kept)),)


def _norm_forward(n, t):
    """The norm is a reduction: its tangent is the (real part of the) sum over the reduced
    axes of t times the local derivative, which is the backprop rule's term with t in place
    of g."""
    x = n.args[0]
    terms = _norm_terms(n, t)
    if terms is None:
        return None
    axes = tuple(sorted(_norm_axes(x.ndim, n.attrs)))
    return real_part(F.sum(terms, axis=axes, keepdims=n.attrs["keepdims"]))


def _norm_terms(n, gk):
    """``gk`` (the adjoint with the reduced axes kept, or a tangent) times d(norm)/dx (of a
    complex x, JAX's: the conjugate of the real formula with x / |x| for sign(x), so that
    d(norm) = Re(sum(t * term)))."""
    x = n.args[0]
    order = n.attrs["ord"]
    axes = _norm_axes(x.ndim, n.attrs)
    kept = reduced(x.shape, tuple(sorted(axes)), True)
    matrix = len(axes) == 2 and not (n.attrs["axis"] is None and order is None)
    if order is None or order == "fro" or (order == 2 and not matrix):
        r = _reshape(n.out, kept)
        return gk * conjugated(x) / F.where(r == 0.0, F.ones_like(r), r)
    if order == 0:
        return None
    if matrix and order in ("nuc", 2, -2):
        return gk * conjugated(_spectral(x, axes, order))
    sign = _conj_sign(x)
    if not matrix:
        if order in (_INF, -_INF):
            return gk * extreme_share(F.abs(x), axes, order > 0) * sign
        r = _reshape(n.out, kept)
        ratio = F.abs(x) / F.where(r == 0.0, F.ones_like(r), r)
        return gk * sign if order == 1 else gk * sign * ratio ** float(order - 1)
    row, col = axes
    summed, across = (row, col) if order in (1, -1) else (col, row)
    sums = F.sum(F.abs(x), axis=summed, keepdims=True)
    return gk * extreme_share(sums, (across,), order > 0) * sign


def _conj_sign(x: Expr) -> Expr:
    """``sign(x)``, or of a complex x ``conj(x) / |x|`` (0 at 0, as ``abs'(0)``)."""
    if not is_complex(x.dtype):
        return F.sign(x)
    size = F.abs(x)
    return F.where(size == 0.0, 0.0, conjugated(x) / F.where(size == 0.0, 1.0, size))


def _spectral(x: Expr, axes: tuple[int, int], order) -> Expr:
    """d(norm)/dx for the nuclear norm (U Vh) and ord=+-2 (u v^T of the extreme singular
    value, ties sharing), with the matrix axes moved last and back."""
    ndim = x.ndim
    row, col = axes
    rest = [ax for ax in range(-ndim, 0) if ax not in axes]
    perm = tuple(ax + ndim for ax in (*rest, row, col))
    moved = x if perm == tuple(range(ndim)) else F.transpose(x, axes=perm)
    u, s, vh = F.svd(moved, full_matrices=False, compute_uv=True, hermitian=False)
    if order == "nuc":
        d = u @ vh
    else:
        d = _scale_columns(u, extreme_share(s, (-1,), order == 2)) @ vh
    if moved is x:
        return d
    inverse = tuple(sorted(range(ndim), key=lambda i: perm[i]))
    return F.transpose(d, axes=inverse)


def _norm_examples(rng) -> list:
    r = rng.standard_normal
    v, m, t = r(5), r((3, 4)), r((2, 3, 4))
    cases = [(v, None, None), (v, 1, None), (v, _INF, None), (v, -_INF, None), (v, 0, None),
             (v, 3, None), (v, 0.5, None), (v, -2, None), (t, None, None),
             (m, None, None), (m, "fro", None), (m, "nuc", None), (m, 1, None), (m, -1, None),
             (m, 2, None), (m, -2, None), (m, _INF, None), (m, -_INF, None),
             (t, 2, -1), (t, 1, (0, 2)), (t, "nuc", (2, 0)), (t, -_INF, (1, 2)),
             (t, None, (0, 1))]
    out = [([x], {"ord": o, "axis": a, "keepdims": False}) for x, o, a in cases]
    out += [([m], {"ord": 2, "axis": 0, "keepdims": True}),
            ([t], {"ord": "fro", "axis": (1, 2), "keepdims": True}),
            ([t], {"ord": None, "axis": None, "keepdims": True})]
    return out


register(Op(
    name="norm", signature=sig("x", "=ord:str", "=axis", "=keepdims", ord=None, axis=None,
                               keepdims=False),
    prepare=_norm_prepare, infer=_norm_infer,
    impl=lambda x, ord, axis, keepdims: np.linalg.norm(x, ord, axis, keepdims),
    backprop=_norm_rule, aliases=("linalg.norm",), examples=_norm_examples,
    forward=first(_norm_forward),
    sparsity=lambda n: (reduce_map(n, _norm_axes(n.args[0].ndim, n.attrs)),),
    complex=True,
    doc="a vector norm (ord None/2, 1, inf, -inf, 0, p) or a matrix norm (ord None/'fro', "
        "'nuc', 1, -1, 2, -2, inf, -inf) over axis",
))


# -- matrix_rank ---------------------------------------------------------------------------------


def _rank_prepare(shapes, dtypes, attrs):
    out = {"hermitian": _flag("matrix_rank", "hermitian", attrs["hermitian"])}
    for k in ("tol", "rtol"):
        v = attrs[k]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.number))):
            raise SignatureError(f"matrix_rank: {k} must be a number or None, got {describe(v)}")
        out[k] = None if v is None else float(v)
    return out


register(Op(
    name="matrix_rank", signature=sig("A", "=tol", "=hermitian", tol=None, hermitian=False,
                                      rtol=None),
    prepare=_rank_prepare,
    infer=lambda shapes, dtypes, attrs: (shapes[0][:-2] if len(shapes[0]) >= 2 else (),
                                         "int64"),
    impl=lambda A, tol, hermitian, rtol: np.asarray(
        np.linalg.matrix_rank(A, tol, hermitian, rtol=rtol), dtype=np.int64),
    differentiable=False, aliases=("linalg.matrix_rank",), complex=True,
    examples=lambda rng: [([rng.standard_normal((4, 2)) @ rng.standard_normal((2, 3))], {}),
                          ([np.stack([np.eye(3), np.diag([1.0, 1e-9, 0.0])])], {"tol": 1e-6}),
                          ([np.zeros(3)], {}), ([_symmetric(rng, 3)], {"hermitian": True}),
                          ([np.diag([1.0, 1e-3, 1e-12])], {"rtol": 1e-6}),
                          ([_complex(rng, (4, 2)) @ _complex(rng, (2, 3))], {}),
                          ([_hermitian(rng, 3)], {"hermitian": True})],
    doc="the number of singular values above tol (an integer: no gradient)",
))


# -- well-posed test inputs -------------------------------------------------------------------


def _well_conditioned(rng, shape: tuple) -> np.ndarray:
    n = shape[-1]
    return rng.standard_normal(shape) + 2.0 * np.sqrt(n) * np.eye(n)


def _spd(rng, n: int) -> np.ndarray:
    x = rng.standard_normal((n, n))
    return x @ x.T + n * np.eye(n)


def _symmetric(rng, n: int) -> np.ndarray:
    """A symmetric matrix with well-separated eigenvalues."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = np.arange(1, n + 1) * 1.5 - 0.7 + 0.2 * rng.random(n)
    return (q * w) @ q.T


def _hpd(rng, n: int) -> np.ndarray:
    """A Hermitian positive-definite complex matrix."""
    x = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return x @ x.conj().T + n * np.eye(n)


def _hermitian(rng, n: int) -> np.ndarray:
    """A Hermitian complex matrix with well-separated eigenvalues."""
    x = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    q, _ = np.linalg.qr(x)
    w = np.arange(1, n + 1) * 1.5 - 0.7 + 0.2 * rng.random(n)
    return (q * w) @ q.conj().T


def _complex(rng, shape: tuple) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
