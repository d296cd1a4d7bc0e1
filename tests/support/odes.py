"""ODE test problems (Lotka-Volterra with observations, Robertson's stiff kinetics) and
central differences of a scalar function, for the integrator tests."""

from __future__ import annotations

import numpy as np


def lotka_volterra(t, y, a, b, c, d):
    return [a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]]


def robertson(t, y, k1, k2, k3):
    return [-k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
            k2 * y[1] ** 2]


LV_TIMES = np.linspace(0.0, 10.0, 21)
LV_OBS = 5.0 + np.cos(LV_TIMES)[None] * np.array([[1.0], [0.5]])
LV_AT = {"a": 1.1, "b": 0.4, "c": 0.1, "d": 0.4, "y0": np.array([10.0, 5.0])}
