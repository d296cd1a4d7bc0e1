"""Shared test setup: a seeded ``rng`` fixture, the hypothesis profiles, XLA's cheaper
compile flags, and the ops of ``user_ops`` (defined through ``symgrad.extend``) registered
before any test collects."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from tests.support import user_ops  # noqa: F401  (symgrad.extend ops, registered first)

# The tests compile thousands of small XLA programs (the JAX target's functions, the JAX
# references); compiling them without LLVM's expensive passes takes about a quarter less
# CPU and leaves the numbers alone. Read when JAX starts its CPU backend (after this);
# a user's own XLA_FLAGS win.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                      "--xla_llvm_disable_expensive_passes=true")

# Modest example counts and no deadline: graph building is Python, and CI has two cores
# shared with other test files. `HYPOTHESIS_PROFILE=thorough pytest` runs many more.
settings.register_profile(
    "default", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed: every run draws the same numbers."""
    return np.random.default_rng(20240601)


@pytest.fixture(scope="module")
def x64():
    """float64 in JAX for the tests that ask for it (symgrad never flips JAX's
    configuration); nothing where JAX is not installed."""
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        yield
        return
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)
