"""symgrad's benchmark suite: symgrad against hand-written NumPy, JAX, PyTorch and autograd.

Run it with ``make bench`` (or ``python -m benchmarks.run``). Every measurement cell runs in a
fresh process started by :mod:`benchmarks.run` with one thread per library and fixed glibc
malloc thresholds; :mod:`benchmarks.cell` is what such a process runs. One module per
workload (``w1_mlp`` ... ``w5_lstm``) holds the NumPy forward, the hand-written NumPy
gradient, the symgrad expression and the JAX / PyTorch / autograd versions. The
``*_public`` modules write W1, W2, W3 and W5 as public code does (NumPy code traced as it
is); ``python -m benchmarks.numba_backend`` measures both spellings of every workload
against hand NumPy, JAX, PyTensor and CasADi in one process.
"""

WORKLOADS = ("w1_mlp", "w2_gmm", "w3_rosenbrock", "w4_chain", "w5_lstm")
