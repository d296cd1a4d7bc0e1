"""``compile(..., backend=...)`` for the array API targets: the emitted source, loaded.

The returned callable has :class:`~symgrad.backends.loaded.CompiledFunction`'s surface
(``source``, ``inputs``, ``raw``). Inputs that are arrays of a library (anything with a
``shape`` and ``dtype`` that is not NumPy's) pass through unconverted after their shape and
dtype are checked, so the function runs where the arrays live; lists, numbers and NumPy
arrays are checked as ``sg.evaluate`` checks them and then, for ``backend="torch"``, made
tensors (on the device of the tensors given beside them). For ``backend="jax"`` the
function is ``jax.jit`` of the generated one (``raw`` is the jitted function).

JAX computes in float32 unless ``jax_enable_x64`` is on; symgrad never changes JAX's
configuration. Run ``jax.config.update("jax_enable_x64", True)`` before calling a float64
function (JAX converts float64 inputs to float32 otherwise, with a warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ....base.errors import EvaluationError
from ....ir.shapes import fmt
from ...interpreter import check_input
from ...loaded import CompiledFunction

if TYPE_CHECKING:
    from .target import ArrayTarget

__all__ = ["ArrayFunction", "dtype_name", "is_native"]


def dtype_name(dtype: Any) -> str:
    """``float64`` for NumPy's, JAX's, PyTorch's (``torch.float64``) or array-api-strict's
    float64 dtype."""
    name = getattr(dtype, "name", None)
    return name if isinstance(name, str) else str(dtype).rsplit(".", 1)[-1]


def is_native(value: Any) -> bool:
    """Whether ``value`` is an array of some library other than NumPy."""
    return (hasattr(value, "shape") and hasattr(value, "dtype")
            and not isinstance(value, (np.ndarray, np.generic)))


class ArrayFunction(CompiledFunction):
    """A compiled array API function: checks its inputs without moving them."""

    fast_path = False  # every input goes through checked_input (NumPy arrays become torch's)

    def __init__(self, raw: Callable, params: list, source: str, filename: str,
                 tgt: ArrayTarget) -> None:
        super().__init__(raw, params, source, filename)
        self.backend = tgt.name
        self.target = tgt

    def checked_input(self, node: Any, given: dict) -> Any:
        value = given.get(node.name)
        if is_native(value):
            shape = tuple(int(d) for d in value.shape)
            if shape != node.shape:
                raise EvaluationError(f"input '{node.name}' has shape {fmt(shape)}, but the "
                                      f"variable has shape {fmt(node.shape)}")
            if dtype_name(value.dtype) != node.dtype:
                raise EvaluationError(f"input '{node.name}' has dtype "
                                      f"{dtype_name(value.dtype)}, but the variable has dtype "
                                      f"{node.dtype}{self.target.dtype_hint}")
            return value
        return self.target.from_numpy(check_input(node, given), given)
