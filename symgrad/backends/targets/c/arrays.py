"""Arrays inside a C function of the C target: an :class:`Arr` is a pointer, an element
offset and static shape and strides (a view costs nothing: its strides are known when the C
is written), and matrix products are BLAS calls or loops over them (:func:`gemm_lines`);
``inv``, ``solve``, ``det`` and ``cholesky`` of one matrix are LAPACK's calls (SciPy's
``getrf``/``getri``/``getrs``/``potrf``, bound by the loader: :data:`LAPACK_PRELUDE`) on a
copy of the row-major matrix, which LAPACK reads as its transpose (:func:`lapack_lines`).

>>> a = Arr("p_x", "float64", (2, 3), c_strides((2, 3)))
>>> a.at(["i", "j"]), Arr(a.base, a.dtype, (3, 2), (1, 3)).at(["i", "j"])
('p_x[3 * i + j]', 'p_x[i + 3 * j]')
>>> blas_layout(a, 2, 3), blas_layout(Arr("q", "float64", (3, 2), (1, 3)), 3, 2)
(('N', 3), ('T', 3))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .scalars import CTYPE, paren

__all__ = ["Arr", "BLAS_MIN", "CFunction", "LAPACK_OPS", "LAPACK_PRELUDE", "blas_layout",
           "c_strides", "gemm_lines", "lapack_lines"]


@dataclass
class Arr:
    """An array value: ``base`` (a C pointer), element ``offset`` (C text), ``shape`` and
    ``strides`` (in elements), all static but the offset."""

    base: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: str = "0"
    owned: bool = False  # a local allocation (writable)

    def contiguous(self) -> bool:
        """Whether its elements are in C order without gaps."""
        return self.strides == c_strides(self.shape) or math.prod(self.shape) <= 1

    def at(self, idx: list[str]) -> str:
        """The C text of the element at ``idx`` (one index text per axis)."""
        terms = [self.offset] if self.offset != "0" else []
        for i, s in zip(idx, self.strides):
            if s and i != "0":
                terms.append(i if s == 1 else f"{s} * {paren(i)}")
        return f"{self.base}[{' + '.join(terms) or '0'}]"


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides (in elements) of a C-contiguous array of ``shape``."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


@dataclass
class CFunction:
    """One C function: its name, text lines, and per parameter its kind: ``"p"`` (an
    array's data pointer) or a scalar dtype; outputs are pointers after the inputs."""

    name: str
    lines: list[str]
    params: list[str]
    raises: bool = False  # whether it can report an index out of range (returns 1)
    outs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # (dtype, shape)


BLAS_MIN = 8  # a product with a smaller dimension runs as loops (a call costs more)


def blas_layout(X: Arr, rows: int, cols: int) -> tuple[str, int] | None:
    """How BLAS (column-major) reads matrix ``X`` (``rows`` x ``cols``, row-major
    indexing) as its transpose: ``("N", ld)`` for rows of unit stride, ``("T", ld)`` for
    columns of unit stride; None where neither (a broadcast, a strided view)."""
    s0, s1 = X.strides
    if (s1 == 1 or cols == 1) and (s0 >= max(cols, 1) or rows == 1):
        return "N", max(s0 if rows > 1 else cols, cols, 1)
    if (s0 == 1 or rows == 1) and (s1 >= max(rows, 1) or cols == 1):
        return "T", max(s1 if cols > 1 else rows, rows, 1)
    return None

def gemm_lines(A: Arr, B: Arr, C: Arr, m: int, k: int, n: int,
               fresh: Callable[[str], str]) -> tuple[list[str], dict[str, str]]:
    """The lines of ``C = A @ B`` (``C`` contiguous, ``m`` x ``n``; ``fresh``: new local
    names) and the scalars they declare: BLAS's gemm where both operands are matrices it
    reads (rows or columns of unit stride, :func:`blas_layout`) and the loader bound it,
    else loops (i, p, j: unit stride over j where B's rows are contiguous), summing over p
    in order."""
    a, b = blas_layout(A, m, k), blas_layout(B, k, n)
    if m * n == 0:
        return [], {}
    out: list[str] = []
    pad = ""
    if a is not None and b is not None and min(m, n, k) >= BLAS_MIN:
        f = "sg_dgemm" if C.dtype == "float64" else "sg_sgemm"
        T = CTYPE[C.dtype]
        v = fresh("blas")
        out += [f"if ({f}) {{",
                f"    int {v}[6] = {{{n}, {m}, {k}, {b[1]}, {a[1]}, {n}}};",
                f"    {T} {v}_one = 1, {v}_zero = 0;",
                f"    {f}(\"{b[0]}\", \"{a[0]}\", &{v}[0], &{v}[1], &{v}[2], &{v}_one, "
                f"({T} *)&{B.at(['0', '0'])}, &{v}[3], ({T} *)&{A.at(['0', '0'])}, "
                f"&{v}[4], &{v}_zero, &{C.at(['0', '0'])}, &{v}[5]);",
                "} else {"]
        pad = "    "
    i, p, j, x = fresh("i"), fresh("p"), fresh("j"), fresh("a")
    loops = [f"for (int64_t {i} = 0; {i} < {m}; {i}++) {{",
             f"    for (int64_t {j} = 0; {j} < {n}; {j}++) {C.at([i, j])} = 0;",
             f"    for (int64_t {p} = 0; {p} < {k}; {p}++) {{",
             f"        {x} = {A.at([i, p])};",
             f"        for (int64_t {j} = 0; {j} < {n}; {j}++) "
             f"{C.at([i, j])} += {x} * {B.at([p, j])};",
             "    }", "}"]
    out += [pad + line for line in loops]
    if pad:
        out.append("}")
    return out, {x: CTYPE[C.dtype]}


LAPACK_OPS = frozenset({"inv", "solve", "det", "cholesky"})
LAPACK_PRELUDE = r"""
/* LAPACK (Fortran's, column-major), bound by the loader to SciPy's (sg_set_lapack); a
   matrix is passed as void * (the double and float routines share these types) */
typedef void (*sg_getrf_t)(int *, int *, void *, int *, int *, int *);
typedef void (*sg_getri_t)(int *, void *, int *, int *, void *, int *, int *);
typedef void (*sg_getrs_t)(char *, int *, int *, void *, int *, int *, void *, int *, int *);
typedef void (*sg_potrf_t)(char *, int *, void *, int *, int *);
static sg_getrf_t sg_getrf[2];
static sg_getri_t sg_getri[2];
static sg_getrs_t sg_getrs[2];
static sg_potrf_t sg_potrf[2];
void sg_set_lapack(void **p) {
    for (int k = 0; k < 2; k++) {
        sg_getrf[k] = (sg_getrf_t)p[4 * k]; sg_getri[k] = (sg_getri_t)p[4 * k + 1];
        sg_getrs[k] = (sg_getrs_t)p[4 * k + 2]; sg_potrf[k] = (sg_potrf_t)p[4 * k + 3];
    }
}
"""


def lapack_lines(op: str, W: Arr, n: int, piv: str, info: str, X: Arr | None = None,
                 nrhs: int = 0, work: str = "", result: str = "") -> list[str]:
    """The lines of LAPACK op ``op`` on ``W`` (an ``n`` x ``n`` row-major copy of the
    matrix, overwritten; ``piv``: ``n`` ints; ``info``: an int): ``inv`` leaves A's
    inverse in ``W`` (the inverse of the transpose is the transpose of the inverse);
    ``solve`` overwrites ``X`` (the right-hand sides as LAPACK's columns) with the
    solution; ``det`` assigns ``result``; ``cholesky`` leaves the lower factor in ``W``.
    A singular matrix (not positive definite: ``cholesky``) returns 3, as NumPy raises
    ``LinAlgError``; unbound LAPACK (no SciPy) returns 4."""
    k = 0 if W.dtype == "float64" else 1
    a = f"&{W.at(['0', '0'])}"
    out = [f"if (!sg_getrf[{k}]) return 4;", f"int {info}_n = {n};"]
    if op == "cholesky":
        out += [f"sg_potrf[{k}](\"U\", &{info}_n, {a}, &{info}_n, &{info});",
                f"if ({info} != 0) return 3;",
                f"for (int64_t {info}_i = 0; {info}_i < {n}; {info}_i++)",
                f"    for (int64_t {info}_j = {info}_i + 1; {info}_j < {n}; {info}_j++) "
                f"{W.at([f'{info}_i', f'{info}_j'])} = 0;"]
        return out
    out.append(f"sg_getrf[{k}](&{info}_n, &{info}_n, {a}, &{info}_n, {piv}, &{info});")
    if op == "det":  # the product of U's diagonal, its sign from the row swaps
        out += [f"if ({info} < 0) return 3;", f"{result} = 1;",
                f"for (int64_t {info}_i = 0; {info}_i < {n}; {info}_i++) {{",
                f"    {result} *= {W.at([f'{info}_i', f'{info}_i'])};",
                f"    if ({piv}[{info}_i] != {info}_i + 1) {result} = -{result};", "}"]
        return out
    out.append(f"if ({info} != 0) return 3;")
    if op == "inv":
        out += [f"int {info}_w = {max(1, n * n)};",
                f"sg_getri[{k}](&{info}_n, {a}, &{info}_n, {piv}, {work}, &{info}_w, &{info});",
                f"if ({info} != 0) return 3;"]
        return out
    assert X is not None
    out += [f"int {info}_r = {nrhs};",
            f"sg_getrs[{k}](\"T\", &{info}_n, &{info}_r, {a}, &{info}_n, {piv}, "
            f"&{X.at(['0'] * len(X.shape))}, &{info}_n, &{info});",
            f"if ({info} != 0) return 3;"]
    return out
