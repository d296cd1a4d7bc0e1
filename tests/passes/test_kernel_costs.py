"""The committed table of measured kernel costs: every grid point of every kernel the
lowering pass asks about is there (a missing one would fail a compile), each cost is a
positive number of microseconds, and the grids are increasing."""

from __future__ import annotations

import itertools
import math

from symgrad.passes import kernel_costs as K

KERNELS = [f"{kind}/{how}" for kind in ("sum_rows", "sum_cols") for how in ("matmul", "reduce")]


def test_the_grids_are_increasing_positive_sizes():
    for grid in (K.BATCH, K.N, K.M):
        assert all(type(v) is int and v >= 1 for v in grid)
        assert list(grid) == sorted(set(grid))


def test_every_kernel_has_a_positive_cost_at_every_grid_point():
    want = {(k, b, n, m) for k, b, n, m in itertools.product(KERNELS, K.BATCH, K.N, K.M)}
    assert set(K.COSTS) == want
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in K.COSTS.values())


def test_costs_grow_with_the_work_on_the_large_end_of_the_grid():
    """Measurements are noisy at the small end; a thousand times the elements is not
    cheaper for any kernel."""
    for k in KERNELS:
        small = K.COSTS[(k, K.BATCH[0], K.N[0], K.M[0])]
        large = K.COSTS[(k, K.BATCH[-1], K.N[-1], K.M[-1])]
        assert large > small
