"""The PyTorch backend's table: the array API table run on ``array_api_compat.torch``.

PyTorch's own namespace differs from the standard; ``array_api_compat.torch`` wraps it, so
the array API templates run unchanged (scatter-add is ``Tensor.index_add``, out of place,
taken by the shared helper).

>>> TORCH["sin"].render(["x"], {})
'xp.sin(x)'
"""

from __future__ import annotations

from ...template import Template
from .helpers import _sg_xp_lu
from .sparse import UNSUPPORTED as SPARSE_UNSUPPORTED
from .table import ARRAY_API, SOLVER_UNSUPPORTED, SORTING

UNSUPPORTED: dict[str, str] = {**SPARSE_UNSUPPORTED, **SOLVER_UNSUPPORTED}
"""Ops this backend cannot write, with the reason (the sparse solves, SciPy's solvers)."""
COMPLEX_UNSUPPORTED: dict[str, str] = {
    **dict.fromkeys(SORTING, "PyTorch cannot sort complex values (torch.sort refuses "
                    "them), and symgrad writes NumPy's order for sort, argsort and the "
                    "comparisons only"),
    **dict.fromkeys(("erf", "erfc"), "torch.special has no complex erf (SciPy's is "
                    "Faddeeva's)"),
}
"""Ops this backend cannot write for complex operands, with the reason."""

_NATIVE = ("erf", "erfc", "erfinv", "erfcx", "ndtr", "ndtri", "log_ndtr", "logit", "gammaln",
           "digamma", "i0", "i1", "i0e", "i1e", "sinc")


def _torch(text: str) -> Template:
    return Template(text, imports=("torch",))


def _sg_torch_betaln(a, b):
    """log |B(a, b)| through lgamma (PyTorch has no betaln); a number beside a tensor is
    made a tensor like it (lgamma takes tensors only), integers become float64."""
    import torch

    like = a if isinstance(a, torch.Tensor) else b
    dtype = torch.result_type(a, b)
    dtype = dtype if dtype.is_floating_point else torch.float64
    a = torch.as_tensor(a, dtype=dtype, device=like.device)
    b = torch.as_tensor(b, dtype=dtype, device=like.device)
    return torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)


SPECIAL: dict[str, Template] = {
    **{name: _torch(f"torch.special.{name}({{0}})") for name in _NATIVE},
    "lu_permutation": Template("_sg_xp_lu(xp, {0}, 2)", (_sg_xp_lu,)),
    "xlogy": _torch("torch.special.xlogy({0}, {1})"),
    "xlog1py": _torch("torch.special.xlog1py({0}, {1})"),
    "polygamma": _torch("torch.special.polygamma({n!r}, {0})"),
    # PyTorch has no erfcinv, betaln or gamma: erfcinv(y) = -ndtri(y / 2) / sqrt(2); betaln
    # and gamma through lgamma (gamma's sign: negative on (-1, 0), (-3, -2), ...)
    "erfcinv": _torch("-torch.special.ndtri({0} * 0.5) * 0.7071067811865476"),
    "betaln": Template("_sg_torch_betaln({0}, {1})", (_sg_torch_betaln,)),
    # K0 and K1 (scaled too) as PyTorch's (as accurate as SciPy's); its J and Y are accurate
    # to about 1e-7 only: those (and the functions of an order v) are SciPy's, on the host
    "k0": _torch("torch.special.modified_bessel_k0({0})"),
    "k1": _torch("torch.special.modified_bessel_k1({0})"),
    "k0e": _torch("torch.special.scaled_modified_bessel_k0({0})"),
    "k1e": _torch("torch.special.scaled_modified_bessel_k1({0})"),
    "expm": _torch("torch.linalg.matrix_exp({0})"),
    # LAPACK's factors; PyTorch's pivots count from 1
    "lu_factor": _torch("torch.linalg.lu_factor({0})[0]"),
    "lu_pivots": _torch("torch.linalg.lu_factor({0})[1].to(torch.int64) - 1"),
    "gamma": _torch("torch.where(({0} > 0) | (torch.remainder(torch.floor({0}), 2) == 0), "
                    "1.0, -1.0) * torch.exp(torch.lgamma({0}))"),
}
"""SciPy's special functions (ops/special.py) as ``torch.special``'s."""

TORCH: dict[str, Template | None] = {**ARRAY_API, **SPECIAL}
