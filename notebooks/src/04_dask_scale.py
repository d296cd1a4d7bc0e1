# %% [markdown]
# # Scale-out: a logistic regression on 10^7 rows, fitted on a Dask cluster
#
# The loss that outgrows one machine is usually a sum over data,
# $L(\theta) = \sum_i \ell(\theta; x_i) + r(\theta)$, with more rows than memory.
# `sg.dask.value_and_grad` takes such a loss written as an ordinary symgrad expression on
# variables with the **full data shape** $(N, d)$, and the `dask.array` arrays holding the
# data in chunks of rows. It emits the value and gradient of **one chunk** as NumPy source
# once, runs it on every chunk wherever Dask runs its tasks (here: a `LocalCluster` of two
# worker processes), and adds the chunks' results up as a tree.
#
# This notebook fits a logistic regression on $N = 10^7$ rows × 10 features (763 MB of
# features: generated lazily from a seed and stored chunk by chunk, never whole in one
# process) with `scipy.optimize.minimize` — L-BFGS-B with `jac=True`, then Newton-CG
# with Hessian-vector products — every call of the objective one Dask computation.
# The stored outputs are from $N = 10^7$ (times vary from run to run); set the environment
# variable
# `SYMGRAD_NOTEBOOK_ROWS` for a smaller run (the tests use 20,000 rows). Run it in Jupyter
# or with `python notebooks/build.py 04`: as a plain script, Dask's worker processes would
# re-read it on start (Python's `spawn`), which needs an `if __name__ == "__main__"` guard.

# %%
import os
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import scipy.optimize
from distributed import Client, LocalCluster

import symgrad as sg

ROWS = int(os.environ.get("SYMGRAD_NOTEBOOK_ROWS", "10000000"))
D = 10
CHUNK = max(ROWS // 40, 1)  # 40 chunks: 250,000 rows (19 MB of features) each at N = 10^7
_store = tempfile.TemporaryDirectory(prefix="symgrad-dask-notebook-")  # removed at exit
STORE = Path(_store.name)

# %% [markdown]
# ## 1. The data: generated lazily, stored in chunks
#
# `dask.array`'s random generator makes each chunk from the seed when a task asks for it;
# the labels are drawn from a logistic model with known weights `w_true`. `to_npy_stack`
# writes one `.npy` file per chunk, and `from_npy_stack` reads them back lazily: each task
# of the fit loads only its own chunk.

# %%
rng = da.random.default_rng(2026)
w_true = np.linspace(-1.0, 1.0, D)
b_true = 0.25
X_lazy = rng.standard_normal((ROWS, D), chunks=(CHUNK, D))
p = 1.0 / (1.0 + da.exp(-(X_lazy @ w_true + b_true)))
y_lazy = (rng.random(ROWS, chunks=CHUNK) < p).astype(np.float64)
with dask.config.set(scheduler="threads", num_workers=2):
    da.to_npy_stack(STORE / "X", X_lazy)
    da.to_npy_stack(STORE / "y", y_lazy)
X_data, y_data = da.from_npy_stack(STORE / "X"), da.from_npy_stack(STORE / "y")
print(f"{ROWS:,} rows x {D} features = {X_data.nbytes / 2**20:,.0f} MB in "
      f"{X_data.numblocks[0]} chunks of {CHUNK:,} rows ({CHUNK * D * 8 / 2**20:.1f} MB)")

# %% [markdown]
# ## 2. The loss, on the full data shape
#
# The mean logistic loss plus a small ridge penalty. `sg.mean` over the rows means the mean
# over all $N$ rows, as on one machine (the chunk graph has a sum times $1/N$), and the
# penalty, which does not depend on the data, is counted once, not once per chunk.

# %%
X, y = sg.var("X", (ROWS, D)), sg.var("y", (ROWS,))
w, b = sg.var("w", (D,)), sg.var("b")
z = X @ w + b
loss = sg.mean(sg.logaddexp(0.0, z) - y * z) + 1e-4 * sg.sum(w * w)

objective = sg.dask.value_and_grad(loss, [w, b], {X: X_data, y: y_data})
print(objective)
print("the chunk function is length-polymorphic:", objective.polymorphic)
print(objective.source)

# %% [markdown]
# The chunk function is emitted for two chunk lengths and the two texts compared (their
# docstrings aside): they are the same code, so this one function serves every chunk,
# whatever its length. (When a chunk length shows up in the code — a backprop that reshapes
# to `(c, 1)` — one function per distinct length is emitted instead, and `polymorphic` is
# False.)
#
# ## 3. One evaluation on a cluster of two worker processes
#
# With a `distributed.Client` active, each call is computed on the cluster. We check the
# result against a single-process loop over the same chunk files calling the same chunk
# function, and time both.

# %%
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=":0")
client = Client(cluster)
w0, b0 = np.zeros(D), 0.0
objective(w0, b0)  # the first call checks the loss is a sum over rows
start = time.perf_counter()
value, (dw, db) = objective(w0, b0)
dask_s = time.perf_counter() - start

chunk = objective.chunk_function()
files = [sorted((STORE / n).glob("*.npy"), key=lambda f: int(f.stem)) for n in "Xy"]
start = time.perf_counter()
parts = [chunk(w0, b0, np.load(fx), np.load(fy)) for fx, fy in zip(*files)]
loop_s = time.perf_counter() - start
none = chunk(w0, b0, np.zeros((0, D)), np.zeros(0))  # the penalty: once, not per chunk
loop_value = sum(p[0] for p in parts) - (len(parts) - 1) * none[0]
loop_dw = sum(p[1] for p in parts) - (len(parts) - 1) * none[1]
same = np.isclose(value, loop_value, rtol=1e-12) and np.allclose(dw, loop_dw, rtol=1e-10)
print(f"value {value:.6f} (log 2 = {np.log(2):.6f} at w = 0)")
print("dask gradient == single-process loop over the chunks:", bool(same))
print(f"one value+gradient: Dask {dask_s:.2f} s ({ROWS / dask_s / 1e6:.1f} M rows/s), "
      f"single-process loop {loop_s:.2f} s ({ROWS / loop_s / 1e6:.1f} M rows/s)")
assert same

# %% [markdown]
# ## 4. L-BFGS-B: `jac=True`
#
# `objective.scipy()` gives `fun(x) -> (value, gradient)` and `hessp(x, p)` on one flat
# vector (the parameters raveled in order: `w`, then `b`).

# %%
flat = objective.scipy()
x0 = flat.pack(w0, b0)
history = {"L-BFGS-B": [], "Newton-CG": []}  # the largest |gradient| at each evaluation


def recorded(method):
    def fun(x):
        value, gradient = flat.fun(x)
        history[method].append(np.abs(gradient).max())
        return value, gradient

    return fun


start = time.perf_counter()
lbfgs = scipy.optimize.minimize(recorded("L-BFGS-B"), x0, jac=True, method="L-BFGS-B",
                                options={"gtol": 1e-9})
lbfgs_s = time.perf_counter() - start
w_fit, b_fit = flat.unpack(lbfgs.x)
print(f"L-BFGS-B: {lbfgs.message}; {lbfgs.nit} iterations, {lbfgs.nfev} evaluations "
      f"in {lbfgs_s:.1f} s")
print("w =", np.round(w_fit, 3), " b =", round(float(b_fit), 3))
print("w_true =", np.round(w_true, 3), " b_true =", b_true)

# %% [markdown]
# ## 5. Newton-CG: Hessian-vector products on the cluster
#
# `hessp(x, p)` computes $H p$ chunk by chunk with forward mode over the chunk's gradient
# (as `sg.hvp`), summed like the gradient; no Hessian is formed.

# %%
start = time.perf_counter()
newton = scipy.optimize.minimize(recorded("Newton-CG"), x0, jac=True, hessp=flat.hessp,
                                 method="Newton-CG", options={"xtol": 1e-10})
newton_s = time.perf_counter() - start
print(f"Newton-CG: {newton.message}; {newton.nit} iterations, {newton.nfev} evaluations, "
      f"{newton.nhev} Hessian-vector products in {newton_s:.1f} s")
agree = np.allclose(newton.x, lbfgs.x, atol=1e-4)
print("L-BFGS-B and Newton-CG agree:", bool(agree))
assert agree and np.abs(flat.fun(newton.x)[1]).max() < 1e-6

# %% [markdown]
# The largest gradient component at each evaluation of the objective (each one Dask
# computation over all the chunks):

# %% tags=["figure"]
import io  # noqa: E402  (the figure cell of the notebook)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


class PNG:
    """PNG bytes that Jupyter shows inline (through ``_repr_png_``)."""

    def __init__(self, data):
        self.data = data

    def _repr_png_(self):
        return self.data

    def __repr__(self):
        return "<PNG image>"


fig, ax = plt.subplots(figsize=(6, 3.2))
for method, marker in (("L-BFGS-B", "o"), ("Newton-CG", "s")):
    ax.semilogy(range(1, len(history[method]) + 1), history[method], marker=marker,
                label=method)
ax.set_xlabel("evaluation of value + gradient (one Dask computation)")
ax.set_ylabel("max |gradient|")
ax.set_title(f"logistic regression, N = {ROWS:,} rows on 2 Dask workers")
ax.legend()
fig.tight_layout()
buffer = io.BytesIO()
fig.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
plt.close(fig)
PNG(buffer.getvalue())

# %% [markdown]
# ## 6. Memory per worker
#
# Each worker holds one chunk (and the chunk function's temporaries) at a time, so its peak
# resident memory grows with the chunk length, not with $N$.

# %%
def _memory():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


peaks = client.run(_memory)
print("peak RSS per worker:", ", ".join(f"{m:.0f} MB" for m in peaks.values()),
      f"(all the features: {X_data.nbytes / 2**20:,.0f} MB; one chunk: "
      f"{CHUNK * (D + 1) * 8 / 2**20:.0f} MB)")
client.close()
cluster.close()

# %% [markdown]
# At $N = 10^7$ on the 2-core machine of the benchmarks page, the stored outputs above
# show the figures; `python -m benchmarks.dask_scale` measures throughput and worker memory
# for two chunk lengths against a single-process loop and a hand-written NumPy gradient.
