"""``symgrad.testing``: gradient checks against finite differences, and hypothesis strategies
for random expressions and sparse functions (the face of :mod:`symgrad.tools.testing`)."""

from .tools.testing import (
    DEFAULT_ATOL,
    DEFAULT_EPS,
    DEFAULT_RTOL,
    CheckArgumentError,
    GradientCheckError,
    RandomCase,
    check_grads,
    check_jvps,
    comparison_ops,
    numeric_jacobian,
    random_expressions,
    smooth_ops,
    sparse_functions,
)

__all__ = ["DEFAULT_ATOL", "DEFAULT_EPS", "DEFAULT_RTOL", "CheckArgumentError",
           "GradientCheckError", "RandomCase", "check_grads", "check_jvps", "comparison_ops",
           "numeric_jacobian", "random_expressions", "smooth_ops", "sparse_functions"]
