"""``symgrad.flatten_util``: ``ravel_pytree`` as ``jax.flatten_util`` has it (the face of
:mod:`symgrad.functional.flatten_util`)."""

from .functional.flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
