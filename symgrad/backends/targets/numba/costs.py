"""The cost model of ``backend="numba"``: where compiled code beats NumPy's calls.

Two estimates for a set of nodes, in nanoseconds: NumPy's (one call per node, a fixed
cost and a cost per element of the op's loop) and a compiled function's (one call, a cost
per argument, and per element of each op inside the function). An op whose NumPy loop is
much faster per element than a compiled scalar loop — NumPy's SIMD kernels of ``exp``,
``log``, ``tanh``, ... — stays NumPy's call on large arrays; a matrix product large enough
to be BLAS-bound stays NumPy's call (the same BLAS, without splitting a kernel's work);
a kernel of one op never pays (NumPy's call does the same pass). A sum that keeps the last
axis costs a compiled loop what an add does (each row added into the result's row,
vectorized), one over the last axis a sequential accumulator's. :func:`numpy_better`
says which nodes and why; :func:`pays` whether a kernel beats its nodes' calls.

The figures are medians measured on an AVX-512 x86-64 machine, one thread; where NumPy
has no SIMD kernel for an op on the machine it runs on (no AVX-512), its loop costs what
the compiled one does.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(100_000,))
>>> e = sg.exp(x)
>>> numpy_better(e.graph.nodes[e.node], e.graph.nodes) is not None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

__all__ = ["CHOICES", "NUMPY_CALL", "PLAIN_COMPILED", "VIEW_OPS", "chosen", "compiled_cost",
           "compiled_per_element", "numpy_better", "numpy_cost", "pays", "simd_here", "size",
           "unpaid", "view_better"]

NUMPY_CALL = 400.0  # one NumPy call on a small array
# one compiled call, and each array it takes (np.ascontiguousarray's call) or returns
KERNEL_CALL, KERNEL_ARG = 250.0, 80.0
BLAS_FLOPS = 1 << 15  # a product at least this large is BLAS-bound
STRIDED_COPY = 1.0  # ns per element of a copy reading a transposed or sliced operand
VIEW_CALLS = 5  # a view left to NumPy: its call, and a copy a later kernel may make
# ops that only view their operand: no work in NumPy (a view), nor in a loop that reads them
VIEW_OPS = frozenset({"transpose", "matrix_transpose", "reshape", "squeeze", "expand_dims",
                      "broadcast_to", "stop_gradient"})

# ns per element: (NumPy's loop, a compiled scalar loop); ops not listed: _PLAIN
_PLAIN = (0.3, 0.3)
PLAIN_COMPILED = _PLAIN[1]  # ns per element of a compiled add, multiply, ...
_SIMD = {  # NumPy's SIMD kernels (AVX-512: SVML, and its own exp/log)
    "exp": (0.8, 4.3), "log": (0.8, 5.4), "tanh": (1.7, 11.6), "log1p": (1.2, 9.6),
    "expm1": (1.2, 12.2), "power": (3.2, 16.0), "arctan": (1.2, 9.1), "exp2": (0.9, 5.0),
    "log2": (0.9, 6.0), "log10": (0.9, 6.0), "cbrt": (1.0, 8.0), "arcsin": (1.3, 9.0),
    "arccos": (1.3, 9.0), "sinh": (1.5, 10.0), "cosh": (1.5, 10.0), "arcsinh": (2.0, 14.0),
    "arccosh": (2.0, 14.0), "arctanh": (2.0, 12.0), "tan": (2.5, 12.0), "arctan2": (3.0, 15.0),
    "softplus": (17.0, 25.0), "logaddexp": (17.0, 25.0),
}
# sigmoid: NumPy's four passes (negative, exp, add, divide) and their temporaries
_OTHER = {"sin": (8.2, 8.8), "cos": (9.5, 8.6), "sqrt": (1.2, 0.6), "divide": (0.4, 0.4),
          "where": (1.4, 0.3), "sigmoid": (9.0, 8.5)}
_REDUCE = (0.3, 0.8)  # a sum: NumPy's pairwise SIMD sum, a compiled sequential one
_EXTREMA = (0.15, 1.0)  # max / min: NumPy's SIMD loop, a compiled compare-and-branch
# NumPy reduces in inner loops over the operand's trailing axes that it can collapse (all
# summed, or all kept): each inner loop costs a call, which dominates on short ones (a sum
# over a last axis of 10 costs NumPy 2 ns per element, a compiled loop 0.3)
_INNER_CALL = {"max": 35.0, "min": 35.0}  # ns per inner loop; other reductions: 17
_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "logsumexp"})
_ROW_REDUCTIONS = frozenset({"sum", "mean", "prod"})  # written by rows where the last axis stays
_SORT = (3.0, 30.0)  # per element: NumPy's AVX-512 sort, Numba's quicksort


@functools.cache
def simd_here() -> bool:
    """Whether NumPy runs SIMD transcendental kernels on this machine (AVX-512: SVML)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as found
    except ImportError:  # pragma: no cover - NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as found
    return bool(found.get("AVX512_SKX"))


_HAS_SIMD = simd_here()


def _size(n: Any) -> int:
    return math.prod(n.shape)


size = _size  # the elements of a node's value


_COSTS = {**{op: (c if _HAS_SIMD else (c[1], c[1])) for op, c in _SIMD.items()}, **_OTHER,
          "sort": _SORT, "argsort": _SORT,
          **dict.fromkeys(("sum", "mean", "prod", "logsumexp"), _REDUCE),
          **dict.fromkeys(("max", "min"), _EXTREMA)}
_EXPONENT = {"power": 1}  # op -> its operand that is an exponent
_PRODUCTS = frozenset({"matmul", "dot", "einsum", "multi_dot", "matrix_power", "outer"})
_MATRIX_PRODUCTS = frozenset({"matmul", "dot"})  # contracting the first operand's last axis


def _per_element(n: Any, nodes: Any) -> tuple[float, float, int]:
    """(NumPy ns, compiled ns) per element of node ``n``, and its number of elements."""
    size = max(_size(n), *(_size(nodes[a]) for a in n.args)) if n.args else _size(n)
    k = _EXPONENT.get(n.op)
    if k is not None and _squares(nodes[n.args[k]]):
        return (*_PLAIN, size)  # x * x: NumPy's fast path, and LLVM's for pow(x, 2.0)
    if n.op in VIEW_OPS:
        return 0.0, 0.0, size
    numpy, compiled = _COSTS.get(n.op, _PLAIN)
    if n.op in _REDUCTIONS and len(n.args) == 1:
        shape = nodes[n.args[0]].shape
        numpy += _INNER_CALL.get(n.op, 17.0) / _inner(n, shape)
        if n.op in _ROW_REDUCTIONS and _keeps_last(n, shape):
            compiled = _PLAIN[1]  # accumulated into the result's rows: a vectorized loop
    return numpy, compiled, size


def _keeps_last(n: Any, shape: tuple[int, ...]) -> bool:
    """Whether reduction node ``n`` of an operand of ``shape`` reduces some axes but not
    the last: its compiled loop adds each element into a row of the result (one
    independent sum per element of the row, which LLVM vectorizes), not into one
    sequential accumulator."""
    axis = n.attrs.get("axis")
    if not shape or axis is None:
        return False
    axes = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
    return bool(axes) and len(shape) - 1 not in axes


def compiled_per_element(n: Any, nodes: Any) -> float:
    """ns per element of node ``n`` in a compiled loop."""
    return _per_element(n, nodes)[1]


def _inner(n: Any, shape: tuple[int, ...]) -> int:
    """The length of NumPy's inner loop reducing an operand of ``shape`` (C-contiguous)
    by node ``n``: its trailing axes all reduced or all kept, collapsed into one."""
    if not shape:
        return 1
    axis = n.attrs.get("axis")
    axes = set(range(len(shape))) if axis is None else {
        a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
    last = len(shape) - 1 in axes
    inner = 1
    for d in range(len(shape) - 1, -1, -1):
        if (d in axes) != last:
            break
        inner *= shape[d]
    return max(inner, 1)


def _squares(e: Any) -> bool:
    """Whether exponent node ``e`` is the constant 2."""
    if not (e.is_const and e.shape == ()):
        return False
    try:
        return float(e.attrs["value"]) == 2.0
    except (TypeError, ValueError):
        return False


def _flops(n: Any, nodes: Any) -> int:
    """The multiply-adds of a product node (0 for any other)."""
    if n.op not in _PRODUCTS:
        return 0
    shapes = [nodes[a].shape for a in n.args]
    inner = max((s[-1] for s in shapes if s), default=1)
    return _size(n) * inner * max(1, len(shapes) - 1)


def _product_flops(n: Any, nodes: Any) -> int:
    """The multiply-adds of a product node: a matrix product's contracted axis is its
    first operand's last (0 for a node that is no product)."""
    if n.op in _MATRIX_PRODUCTS and len(n.args) == 2 and nodes[n.args[0]].shape:
        return _size(n) * nodes[n.args[0]].shape[-1]
    return _flops(n, nodes)


# how the reasons for a NumPy call the cost model chose begin (:func:`numpy_better`, and
# fusion.segments' kernel that does not pay)
CHOICES = ("BLAS-bound", "NumPy's SIMD loop", "a kernel does not pay", "a view")


def chosen(why: str) -> bool:
    """Whether ``why`` (a reason for a NumPy call) is the cost model's choice, not the want
    of a compiled form."""
    return why.startswith(CHOICES)


def numpy_better(n: Any, nodes: Any) -> str | None:
    """Why node ``n`` (which has a compiled form) runs faster as NumPy's call, or None."""
    flops = _flops(n, nodes)
    if flops >= BLAS_FLOPS:
        return f"BLAS-bound ({flops:,} multiply-adds): NumPy's call is the same BLAS"
    numpy, compiled, size = _per_element(n, nodes)
    # (a kernel cut in two by the NumPy call costs a call, and arrays handed over)
    if size * (compiled - numpy) > 2 * (NUMPY_CALL + KERNEL_CALL):
        return (f"NumPy's SIMD loop is faster on {size:,} elements "
                f"({numpy:g} vs {compiled:g} ns each)")
    return None


def view_better(n: Any, readers: Iterable[Any], nodes: Any) -> str | None:
    """Why view node ``n``, which no other node of its kernel reads, is better NumPy's call
    (a view, for nothing) than a kernel's result (a copy of its own), or None: where each
    of its ``readers`` is a BLAS-bound product (BLAS reads a transposed or strided operand
    in place) or a view, and the copy would cost more than a few NumPy calls. (An
    elementwise reader, or a small product's loop, reads it strided: slower than the copy
    a kernel makes.)"""
    size = _size(n)
    if size * STRIDED_COPY <= VIEW_CALLS * NUMPY_CALL or not all(
            r.op in VIEW_OPS or _product_flops(r, nodes) >= BLAS_FLOPS for r in readers):
        return None
    return (f"a view: NumPy's call copies nothing where a kernel would return a copy "
            f"({size:,} elements) for a BLAS-bound product to read")


def numpy_cost(members: Iterable[Any], nodes: Any) -> float:
    """ns of NumPy's calls, one per node."""
    total = 0.0
    for n in members:
        numpy, _, size = _per_element(n, nodes)
        total += NUMPY_CALL + size * numpy + _flops(n, nodes) * 0.1
    return total


def compiled_cost(members: Iterable[Any], nodes: Any, arrays: int) -> float:
    """ns of one compiled call computing ``members``, taking and returning ``arrays``
    arrays."""
    total = KERNEL_CALL + KERNEL_ARG * arrays
    for n in members:
        _, compiled, size = _per_element(n, nodes)
        total += size * compiled + _flops(n, nodes) * 0.1
    return total


def pays(members: list[Any], nodes: Any, arrays: int, inputs: int = 1) -> bool:
    """Whether one compiled call of ``members`` is estimated faster than their NumPy
    calls (:func:`unpaid` says why not)."""
    return unpaid(members, nodes, arrays, inputs) is None


def unpaid(members: list[Any], nodes: Any, arrays: int, inputs: int = 1) -> str | None:
    """Why one compiled call of ``members`` (taking and returning ``arrays`` arrays,
    reading ``inputs`` values) does not pay, or None where it is estimated faster than
    their NumPy calls: a kernel of one op besides views never pays (NumPy's call does the
    same pass; its views cost nothing), nor one reading nothing (it only makes constants,
    one cheap NumPy call each: its compile would cost more than it ever saves)."""
    if inputs == 0:
        return "a kernel reading nothing would only make constants: NumPy's calls, no compile"
    if sum(1 for n in members if n.op not in VIEW_OPS) < 2:
        return "a kernel of one op does NumPy's one pass: NumPy's call, no compile"
    if compiled_cost(members, nodes, arrays) >= numpy_cost(members, nodes):
        return "a kernel does not pay: NumPy's calls are estimated as fast"
    return None
