"""``symgrad.dask``: a loss summed over data rows, its value, gradient and Hessian-vector
products computed chunk by chunk on Dask (the face of :mod:`symgrad.backends.dask`; importing
it imports Dask)."""

from .backends.dask import DaskObjective, ScipyObjective, chunk_graph, value_and_grad

__all__ = ["DaskObjective", "ScipyObjective", "chunk_graph", "value_and_grad"]
