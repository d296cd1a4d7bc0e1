"""symgrad's benchmark suite: symgrad against hand-written NumPy, JAX, PyTorch and autograd.

Run it with ``make bench`` (or ``python -m benchmarks.run``). Every measurement cell runs in a
fresh process started by :mod:`benchmarks.run` with one thread per library and fixed glibc
malloc thresholds; :mod:`benchmarks.cell` is what such a process runs. One module per
workload (``w1_mlp`` ... ``w5_lstm``) holds the NumPy forward, the hand-written NumPy
gradient, the symgrad expression and the JAX / PyTorch / autograd versions.
"""

WORKLOADS = ("w1_mlp", "w2_gmm", "w3_rosenbrock", "w4_chain", "w5_lstm")
