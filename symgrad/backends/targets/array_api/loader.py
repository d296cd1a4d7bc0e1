"""``compile(..., backend=...)`` for the array API targets: the emitted source, loaded.

The returned callable has :class:`~symgrad.backends.compiled.CompiledFunction`'s surface
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

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ....base.errors import BackendError, EvaluationError
from ....ir.shapes import fmt
from ...compiled import CompiledFunction
from ...interpreter import check_input
from ...target import Target


def require(tgt: Target) -> None:
    """Import the libraries ``tgt``'s code needs, or a :class:`BackendError` naming the
    extra that installs them."""
    for library in tgt.libraries:
        try:
            importlib.import_module(library)
        except ImportError as e:
            raise BackendError(f"backend {tgt.name!r} needs the {library!r} package ({e}); "
                               f"install it with pip install 'symgrad[{tgt.extra}]'") from None


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

    _fast_path = False  # every input goes through _value (NumPy arrays become torch's)

    def __init__(self, raw: Callable, params: list, source: str, filename: str,
                 tgt: Target) -> None:
        super().__init__(raw, params, source, filename)
        self.backend = tgt.name
        self._torch = importlib.import_module("torch") if tgt.name == "torch" else None

    def _value(self, node: Any, given: dict) -> Any:
        value = given.get(node.name)
        if is_native(value):
            shape = tuple(int(d) for d in value.shape)
            if shape != node.shape:
                raise EvaluationError(f"input '{node.name}' has shape {fmt(shape)}, but the "
                                      f"variable has shape {fmt(node.shape)}")
            if dtype_name(value.dtype) != node.dtype:
                hint = (" (JAX makes float32 arrays unless jax_enable_x64 is on)"
                        if self.backend == "jax" else "")
                raise EvaluationError(f"input '{node.name}' has dtype "
                                      f"{dtype_name(value.dtype)}, but the variable has dtype "
                                      f"{node.dtype}{hint}")
            return value
        value = check_input(node, given)
        if self._torch is not None:  # on the device of the tensors given beside it
            torch = self._torch
            device = next((v.device for v in given.values() if isinstance(v, torch.Tensor)),
                          None)
            if any(st < 0 for st in value.strides):  # torch takes no negative strides
                value = np.ascontiguousarray(value)
            return torch.asarray(value, device=device)
        return value


def load_array_function(tgt: Target, source: str, name: str, params: list, check: bool,
                        load: Callable) -> Callable:
    """``source`` (emitted for ``tgt``) loaded, its function wrapped for ``compile``."""
    require(tgt)
    namespace, filename = load(source, name)
    raw = namespace[name]
    if tgt.name == "jax":
        import jax

        raw = jax.jit(raw)
    raw.source, raw.filename = source, filename
    raw.inputs = tuple(n.name for n in params)
    if not check:  # as for NumPy: the generated function itself (jitted for JAX)
        raw.raw = raw
        return raw
    return ArrayFunction(raw, params, source, filename, tgt)
