"""Complex values for tests of NumPy's order of complex numbers: ties, signed zeros and NaN
in either part, and an exact comparison that tells ``nan+0j`` from ``1+nanj``."""

from __future__ import annotations

import numpy as np

NAN = float("nan")
POOL = np.array([1 + 2j, 1 + 3j, 0.5 + 9j, -2j, complex(-0.0, 1.0), complex(0.0, -2.0),
                 complex(NAN, 0.0), complex(1.0, NAN), complex(NAN, NAN), complex(NAN, -1.0)])


def draw(rng: np.random.Generator, shape: tuple[int, ...], nan: bool = True) -> np.ndarray:
    """Complex values of ``shape`` drawn from :data:`POOL` (without its NaNs: ``nan``
    False), so that ties and equal real parts are common."""
    pool = POOL if nan else POOL[~np.isnan(POOL)]
    return pool[rng.integers(len(pool), size=shape)]


def same(got, want) -> bool:
    """Whether ``got`` equals ``want`` exactly: real and imaginary parts each, NaN equal to
    NaN, and the dtype's kind."""
    got, want = np.asarray(got), np.asarray(want)
    return (got.dtype.kind == want.dtype.kind and got.shape == want.shape
            and np.array_equal(got.real, want.real, equal_nan=True)
            and np.array_equal(np.imag(got), np.imag(want), equal_nan=True))
