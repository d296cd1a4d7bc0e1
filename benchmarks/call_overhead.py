"""Per-call overhead of ``sg.grad(fun)`` and of ``sg.compile(...)`` (with input checks)
over the raw emitted function, in the same process, one thread.

The workload is SciPy's Rosenbrock at n = 10 (where the overhead is the run time inside an
optimizer), a closure logistic loss reading a global minibatch (the hidden inputs read at
every call), a bound method reading an array and a number from ``self``, and
``sg.grad(rosen)(x)`` written inside the loop (autograd's idiom: the transform is kept per
function). They are sampled in turn in one loop; the figures are the fastest sample of
each (the machine's interference only ever adds time) and the paired medians: µs over raw
and × raw. Target: at most 5 µs over raw.

``backend="c"``'s calls (:func:`measure_c`, where a C compiler is found): one C function
of two arrays called through :mod:`ctypes` with each array passed as the object (the C
reads its data pointer: the C target's way), as ``c_void_p`` of ``arr.ctypes.data`` and of
``arr.__array_interface__``; and the raw gradient of Rosenbrock at n = 10 compiled by the C,
Numba and NumPy backends (µs per call, fastest sample).

Run: ``PYTHONPATH=. python -m benchmarks.call_overhead`` (prints one JSON line per case).
"""

from __future__ import annotations

import json
import os

import numpy as np

from benchmarks import common


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


X_BATCH = np.random.default_rng(0).standard_normal((32, 10))
Y_BATCH = np.sign(np.random.default_rng(1).standard_normal(32))


def logistic(w):
    return np.mean(np.log1p(np.exp(-Y_BATCH * (X_BATCH @ w))))


class Model:
    """A model as users write one: parameters and a setting on ``self``."""

    def __init__(self) -> None:
        self.W = np.random.default_rng(2).standard_normal((10, 10))
        self.scale = 0.5

    def loss(self, w):
        return self.scale * np.sum(np.tanh(self.W @ w) ** 2)


def cases() -> list[tuple[str, list]]:
    import symgrad as sg

    x = np.linspace(0.5, 1.5, 10)
    g = sg.grad(rosen)
    g(x)
    raw = g.compiled(x).raw
    v = sg.var("x", shape=(10,))
    checked = sg.compile(sg.grad(rosen_expr(v), v), name="rosen_grad")
    lg = sg.grad(logistic)
    lg(x)
    lraw = lg.compiled(x).raw
    data = {"w": x, "X_BATCH": X_BATCH, "Y_BATCH": Y_BATCH}
    largs = [data[name] for name in lraw.inputs]
    model = Model()
    mg = sg.grad(model.loss)
    mg(x)
    mraw = mg.compiled(x).raw
    margs = [{"w": x, "W": model.W}[name] for name in mraw.inputs]
    return [
        ("grad(fun) rosen n=10", [lambda: raw(x), lambda: g(x)]),
        ("compile() checked rosen n=10", [lambda: checked.raw(x), lambda: checked(x)]),
        ("grad(fun) closure logistic", [lambda: lraw(*largs), lambda: lg(x)]),
        ("grad(method) reading self.W, self.scale", [lambda: mraw(*margs), lambda: mg(x)]),
        ("sg.grad(rosen)(x) inside a function", [lambda: raw(x), lambda: sg.grad(rosen)(x)]),
    ]


def rosen_expr(x):
    return rosen(x)


def measure(budget: float = 3.0) -> list[dict]:
    out = []
    for label, (raw, wrapped) in cases():
        t_raw, t_wrapped = common.interleaved([raw, wrapped], budget=budget, min_samples=41,
                                              max_samples=401)
        out.append({
            "case": label,
            "raw_us": round(float(t_raw.min()) * 1e6, 2),
            "call_us": round(float(t_wrapped.min()) * 1e6, 2),
            "over_raw_us": round(float(t_wrapped.min() - t_raw.min()) * 1e6, 2),
            "ratio": round(float(t_wrapped.min() / t_raw.min()), 3),
            "paired_median_over_raw_us": round(float(np.median(t_wrapped - t_raw)) * 1e6, 2),
            "paired_median_ratio": round(common.paired_ratio(t_wrapped, t_raw), 3),
        })
    return out


_C_TEXT = """
#define SG_DATA(o) (*(void **)((char *)(o) + SG_DATA_OFFSET))
static int copy(const double *x, double *y) { y[0] = x[0]; return 0; }
int by_object(void *x, void *y) { return copy(SG_DATA(x), SG_DATA(y)); }
int by_pointer(const double *x, double *y) { return copy(x, y); }
"""


def measure_c(budget: float = 2.0) -> list[dict]:
    """The C target's call costs (see the module): µs per call, the fastest sample."""
    import ctypes
    import shutil

    if shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None:
        return []
    import symgrad as sg
    from symgrad.backends.targets.c import build

    lib = build.load_library(_C_TEXT, {"by_object": ("p", "p")})
    by_pointer = lib.by_pointer
    by_pointer.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    by_pointer.restype = ctypes.c_int
    x, y = np.arange(10.0), np.empty(10)
    calls = {
        "ctypes: arrays as objects (py_object)": lambda: lib.by_object(x, y),
        "ctypes: c_void_p of arr.ctypes.data": lambda: by_pointer(x.ctypes.data, y.ctypes.data),
        "ctypes: c_void_p of __array_interface__": lambda: by_pointer(
            x.__array_interface__["data"][0], y.__array_interface__["data"][0]),
    }
    v = sg.var("x", shape=(10,))
    for backend in ("c", "numba", "numpy"):
        try:
            raw = sg.compile(sg.grad(rosen_expr(v), v), backend=backend).raw
        except ImportError:  # no Numba
            continue
        raw(x)
        calls[f"raw gradient, rosen n=10, backend={backend!r}"] = lambda raw=raw: raw(x)
    samples = common.interleaved(list(calls.values()), budget=budget, min_samples=41,
                                 max_samples=401)
    return [{"case": label, "call_us": round(float(t.min()) * 1e6, 2),
             "median_us": round(float(np.median(t)) * 1e6, 2)}
            for label, t in zip(calls, samples)]


if __name__ == "__main__":
    common.with_thread_env("benchmarks.call_overhead")
    for row in [*measure(), *measure_c()]:
        print(json.dumps(row))
