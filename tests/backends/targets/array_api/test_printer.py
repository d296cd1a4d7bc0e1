"""The array API, JAX and PyTorch backends, registry-driven.

For every op of the registry:

(a) each backend's table has an entry (``None`` only with a reason in ``UNSUPPORTED``, and
    that list is pinned: empty);
(b) conformance: the array API template, evaluated here with ``xp = array_api_strict``
    (float64), equals the op's NumPy ``impl`` to 1e-12;
(c) end to end: ``compile(..., backend=b)`` of the op and of the gradient of
    ``sum(op(...) * c)`` (random ``c``) equals ``sg.evaluate`` on the registry examples to
    1e-12 in float64, on ``array_api_strict`` arrays, NumPy arrays (``array_api``), JAX
    arrays (``jax``, with ``jax_enable_x64`` on for the test) and torch tensors (``torch``);
(d) devices: the results are on the inputs' device: ``array_api_strict``'s second device
    in (c) (the library refuses to combine arrays of two devices), and PyTorch's ``meta``
    device for the ``torch`` and ``array_api`` backends (shapes and dtypes only: a meta
    tensor has no values). The GPUs themselves are those of
    ``tests/backends/targets/array_api/test_gpu.py``.

``partition``/``argpartition``: NumPy leaves the order within each side of ``kth``
unspecified, and the array API backends sort; they are compared by the partition property
(the same value at ``kth``, the same values on each side). Eigenvectors and singular
vectors (``eigh_vectors``, ``svd_u``, ``svd_vh``) are compared up to the sign of each
vector, which the libraries' LAPACK drivers choose differently.
"""

from __future__ import annotations

import math
import subprocess
import sys
import zlib

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends import TABLES
from symgrad.backends.targets import TARGETS
from symgrad.backends.targets.array_api.loader import dtype_name
from symgrad.backends.targets.array_api.sparse import UNSUPPORTED as SPARSE_SOLVES
from symgrad.backends.targets.array_api.table import ARRAY_API, DEVICE, SOLVERS
from symgrad.errors import BackendError
from symgrad.ir.body import Body
from symgrad.ir.shapes import is_float
from symgrad.ops import REGISTRY
from tests.support.registry_cases import Case, impl, registry_cases

FAMILIES = [(), (3, 4), (3, 1), (1, 4)]
BUILTIN = {n for n, op in REGISTRY.items() if op.builtin and n != "const"}
CASES = [c for c in registry_cases(FAMILIES) if c.values[0].op.name in BUILTIN
         and ARRAY_API[c.values[0].op.name] is not None]  # (the sparse solves: numpy only)
UNSPECIFIED_ORDER = {"partition", "argpartition"}
# eigenvectors and singular vectors: each is unique only up to its sign, which LAPACK's
# drivers choose differently (eigh with UPLO='U', hermitian svd); the axis each runs along
# results (op, which) fixed up to the sign of each vector, and the axis the vectors run along
SIGN_FREE = {("eigh", 1): -2, ("svd", 0): -2, ("svd", 2): -1}
ARRAY_BACKENDS = ["array_api", "jax", "torch"]
TOL = 1e-12
# the libraries' own accuracy, where it is below TOL: PyTorch's polygamma (trigamma and
# above: digamma's derivative) agrees with SciPy's to about 1e-9
LIBRARY_TOL = {("torch", "digamma"): 1e-8, ("torch", "polygamma"): 1e-8}


_impl = impl


def _lanes(x: np.ndarray, axis) -> np.ndarray:
    return x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)


def _assert_partition(got, ref, attrs, values=None):
    """``got`` and ``ref`` are partitions of the same lanes around ``kth`` (of ``values``
    by index when given: argpartition)."""
    axis = attrs.get("axis", -1)
    if values is not None:
        v = _lanes(values, axis)
        got, ref = np.take_along_axis(v, _lanes(got, axis), -1), np.take_along_axis(
            v, _lanes(ref, axis), -1)
    else:
        got, ref = _lanes(got, axis), _lanes(ref, axis)
    kth = np.atleast_1d(attrs["kth"])
    np.testing.assert_array_equal(np.sort(got, -1), np.sort(ref, -1))
    np.testing.assert_array_equal(got[..., kth], ref[..., kth])


def _signed(a: np.ndarray, along: int) -> np.ndarray:
    """Each vector of ``a`` (running along axis ``along``) with its largest entry positive."""
    k = np.argmax(np.abs(a), axis=along, keepdims=True)
    return a * np.sign(np.take_along_axis(a, k, axis=along))


def _kind(case: Case) -> tuple:
    """``(op, result)``: which result of which op a case is (SIGN_FREE's keys; svd's S is
    result 1, also where it is the only one)."""
    attrs = {**case.op.attrs, **case.attrs}
    if case.op.name == "svd" and not attrs["compute_uv"]:
        return "svd", 1
    return case.op.name, case.result


def _close(got, ref, what: str, op: tuple = (), tol: float = TOL):
    if op in SIGN_FREE:
        got, ref = _signed(np.asarray(got), SIGN_FREE[op]), _signed(np.asarray(ref),
                                                                    SIGN_FREE[op])
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, evaluate {ref.shape}"
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    scale = max(1.0, float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale, err_msg=what,
                               equal_nan=True)


# -- (a) every op has an entry -------------------------------------------------------------


@pytest.mark.parametrize("backend", ARRAY_BACKENDS)
def test_every_op_has_an_entry_or_an_explicit_reason(backend):
    tgt = TARGETS[backend]
    assert TABLES[backend] is tgt.table
    ops = {n for n in REGISTRY if n != "const"}
    assert set(tgt.table) == ops
    missing = sorted(n for n, t in tgt.table.items() if t is None)
    assert set(missing) <= set(tgt.unsupported), "a None entry needs a reason"
    missing = [n for n in missing if n in BUILTIN]  # user ops (sg.extend) are NumPy only
    # only the sparse solves (no sparse LU; no Krylov info), SciPy's solver calls (SciPy
    # on NumPy arrays: refused by name, _refused below) and the unbounded while loop (a
    # run-time trip count: max_steps= makes it a scan) have no form there
    assert missing == sorted({*SPARSE_SOLVES, *SOLVERS, "while_loop", "while_vjp"}), (
        f"ops the {backend!r} backend cannot write: {missing}")


def test_unknown_backend_lists_the_valid_ones():
    x = sg.var("x")
    with pytest.raises(BackendError, match="'numpy', 'array_api', 'jax', 'torch'"):
        sg.to_source(sg.sin(x), backend="cupy")
    with pytest.raises(BackendError, match="backend must be a string, one of 'numpy', "):
        sg.compile(sg.sin(x), backend=None)

    class Sneaky(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    with pytest.raises(BackendError, match="unknown backend"):
        sg.to_source(sg.sin(x), backend=Sneaky("gpu"))


def test_an_op_without_a_template_names_op_and_backend(monkeypatch):
    monkeypatch.setitem(ARRAY_API, "sin", None)
    monkeypatch.setitem(TARGETS["array_api"].unsupported, "sin", "a reason")
    with pytest.raises(BackendError, match=r"op 'sin' .* backend 'array_api': a reason"):
        sg.to_source(sg.sin(sg.var("x")), backend="array_api")


def test_sparse_outputs_need_the_numpy_backend():
    x = sg.var("x", shape=(4,))
    h = sg.hessian(sg.sum(x[1:] * x[:-1]), x, sparse=True)
    with pytest.raises(BackendError, match="sparse derivatives .* backend='numpy'"):
        sg.compile(h, backend="array_api")


def test_import_symgrad_imports_no_backend_library():
    code = ("import sys, symgrad as sg; x = sg.var('x', shape=(2,)); "
            "sg.to_source(sg.grad(sg.sum(sg.exp(x)), x), backend='array_api'); "
            "sg.to_source(sg.sin(x), backend='jax'); "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'torch', 'array_api_compat', 'array_api_strict', 'dask')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == []


# -- (b) conformance: every template under array_api_strict ---------------------------------


@pytest.mark.parametrize("case", CASES)
def test_array_api_template_runs_under_array_api_strict(case):
    if is_loop(case):
        pytest.skip("a loop's text is written by backends/loops.py (test_loops.py)")
    xs = pytest.importorskip("array_api_strict")
    attrs, ref = _impl(case)
    names = [f"a{k}" for k in range(len(case.arrays))]
    template = ARRAY_API[case.op.name]
    text = template.render(names, attrs)
    dev = xs.Device("device1")  # not the default: what the template creates must follow
    space = {"xp": xs, "math": math, DEVICE: dev,
             **{fn.__name__: fn for fn in template.helpers},
             **{n: xs.asarray(a, device=dev) for n, a in zip(names, case.arrays)}}
    got = eval(text, space)  # noqa: S307 - our own template
    if case.result is not None:  # a call's template gives the tuple of its results
        got = got[case.result]
    assert got.device == dev, f"{text}: on {got.device}"
    got = np.asarray(xs.asarray(got, device=xs.Device("CPU_DEVICE")))
    ref = np.asarray(ref)
    if case.op.name in UNSPECIFIED_ORDER:
        values = case.arrays[0] if case.op.name == "argpartition" else None
        _assert_partition(got, ref, attrs, values)
        return
    assert got.dtype == ref.dtype, f"{text}: dtype {got.dtype}, NumPy {ref.dtype}"
    _close(got, ref, text, _kind(case))


def test_constant_makers_under_array_api_strict():
    xs = pytest.importorskip("array_api_strict")
    for name in ("eye", "zeros", "ones", "full", "arange", "linspace"):
        op = REGISTRY[name]
        for _arrays, attrs in op.examples(np.random.default_rng(0)):
            attrs = {**op.attrs, **attrs}
            if op.prepare is not None:
                attrs = op.prepare((), (), attrs)
            text = ARRAY_API[name].render([], attrs)
            dev = xs.Device("device1")
            got = eval(text, {"xp": xs, "math": math, DEVICE: dev})  # noqa: S307
            assert got.device == dev, text
            got = np.asarray(xs.asarray(got, device=xs.Device("CPU_DEVICE")))
            ref = np.asarray(op.impl(**attrs))
            assert got.dtype == ref.dtype, text
            _close(got, ref, text)


# -- (c) end to end: compile(backend=...) against evaluate ----------------------------------


def _outputs(case: Case):
    """The op applied to variables, and the gradients of ``sum(op * c)`` wrt its float
    operands; with the inputs."""
    out, xs, inputs = case.build()
    outs = [out]
    wrt = [x for x in xs if is_float(x.dtype)]
    if case.op.differentiable and is_float(out.dtype) and wrt:
        rng = np.random.default_rng(zlib.crc32(case.op.name.encode()))
        c = (np.ones(out.shape) if case.op.name in UNSPECIFIED_ORDER
             else rng.uniform(0.5, 1.5, out.shape))
        if _kind(case) in SIGN_FREE:  # a function of the vectors that their signs leave alone
            out = out * out
        outs += sg.grad(sg.sum(out * c), wrt)
    return outs, inputs


class _Lib:
    """How one backend's tests make arrays and read results."""

    def __init__(self, backend: str, module: str, to_native, to_numpy):
        self.backend, self.module = backend, module
        self.to_native, self.to_numpy = to_native, to_numpy


def _device(a):
    """The device of array ``a`` as array-api-compat sees it (``None`` for a non-array)."""
    from array_api_compat import device, is_array_api_obj

    return device(a) if is_array_api_obj(a) else None


def _read_only(a) -> np.ndarray:
    """A read-only copy: the code must never write into its inputs."""
    a = np.array(a)
    a.flags.writeable = False
    return a


def _lib(kind: str) -> _Lib:
    if kind == "array_api-strict":
        xs = pytest.importorskip("array_api_strict")
        pytest.importorskip("array_api_compat")
        other = xs.Device("device1")  # not the default: every array created must follow
        return _Lib("array_api", "array_api_strict",
                    lambda a: xs.asarray(a, device=other),
                    lambda a: np.asarray(xs.asarray(a, device=xs.Device("CPU_DEVICE"))))
    if kind == "array_api-numpy":
        pytest.importorskip("array_api_compat")
        return _Lib("array_api", "numpy", _read_only, np.asarray)
    if kind == "jax":
        jnp = pytest.importorskip("jax.numpy")
        return _Lib("jax", "jax", jnp.asarray, np.asarray)
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    return _Lib("torch", "torch", torch.asarray,
                lambda t: t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t))



def _refused(backend: str, case: Case) -> bool:
    """An op the backend cannot write (a SciPy solver): compiling refuses it by name."""
    if case.op.name not in TARGETS[backend].unsupported:
        return False
    outs, inputs = _outputs(case)
    with pytest.raises(BackendError, match=case.op.name):
        sg.compile(outs, inputs=sorted(inputs), backend=backend)
    return True


def _run_case(kind: str, case: Case):
    lib = _lib(kind)
    if _refused(lib.backend, case):
        return
    outs, inputs = _outputs(case)
    ref = sg.evaluate(outs, inputs)
    fn = sg.compile(outs, inputs=sorted(inputs), backend=lib.backend)
    args = [lib.to_native(inputs[k]) for k in sorted(inputs)]
    with np.errstate(all="ignore"):
        got = fn(*args)
    assert len(got) == len(ref)
    for k, (g, r) in enumerate(zip(got, ref)):
        what = f"{case.op.name} output {k} on {kind}"
        if args and kind != "array_api-numpy":
            assert _device(g) == _device(args[0]), f"{what}: on {_device(g)}"
        g = lib.to_numpy(g)
        if k == 0 and case.op.name in UNSPECIFIED_ORDER:
            attrs = _impl(case)[0]
            values = case.arrays[0] if case.op.name == "argpartition" else None
            _assert_partition(np.asarray(g), np.asarray(r), attrs, values)
            continue
        if k == 0 and hasattr(g, "dtype"):
            assert dtype_name(g.dtype) == np.asarray(r).dtype.name, what
        _close(g, r, what, _kind(case) if k == 0 else (),
               LIBRARY_TOL.get((lib.backend, case.op.name), TOL))


@pytest.mark.parametrize("case", CASES)
def test_array_api_backend_on_array_api_strict_equals_evaluate(case):
    _run_case("array_api-strict", case)


@pytest.mark.parametrize("case", CASES)
def test_array_api_backend_on_numpy_equals_evaluate(case):
    _run_case("array_api-numpy", case)


@pytest.mark.parametrize("case", CASES)
def test_jax_backend_equals_evaluate(case, x64):
    _run_case("jax", case)


@pytest.mark.parametrize("case", CASES)
def test_torch_backend_equals_evaluate(case):
    _run_case("torch", case)


# -- the compiled functions' surface --------------------------------------------------------


def test_jax_compile_is_jitted_and_checks_native_arrays(x64):
    jax = pytest.importorskip("jax")
    x = sg.var("x", shape=(3,))
    f = sg.sum(sg.sin(x) * x)
    fn = sg.compile([f, sg.grad(f, x)], backend="jax")
    assert fn.inputs == ("x",) and "import jax.numpy as xp" in fn.source
    assert hasattr(fn.raw, "lower")  # jax.jit's wrapper
    a = np.array([0.5, -1.0, 2.0])
    value, grad = fn(jax.numpy.asarray(a))
    assert isinstance(grad, jax.Array)
    np.testing.assert_allclose(np.asarray(grad), np.sin(a) + a * np.cos(a), rtol=1e-14)
    with pytest.raises(sg.SymgradError, match="has shape"):
        fn(jax.numpy.zeros(4))
    with pytest.raises(sg.SymgradError, match="dtype float32.*jax_enable_x64"):
        fn(jax.numpy.zeros(3, dtype=jax.numpy.float32))
    fast = sg.compile([f, sg.grad(f, x)], backend="jax", check_inputs=False)
    assert fast.raw is fast and fast.inputs == ("x",) and "jax.numpy" in fast.source
    np.testing.assert_allclose(np.asarray(fast(a)[1]), np.asarray(grad), rtol=1e-15)


def test_torch_compile_takes_lists_and_returns_tensors():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    x = sg.var("x", shape=(2,))
    fn = sg.compile(sg.grad(sg.sum(sg.exp(x)), x), backend="torch")
    got = fn([0.0, 1.0])
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), np.exp([0.0, 1.0]), rtol=1e-15)


def test_array_api_results_stay_in_the_input_library():
    xs = pytest.importorskip("array_api_strict")
    x = sg.var("x", shape=(2, 3))
    f = sg.sum(sg.log_softmax(x, axis=1)[:, 1:])
    fn = sg.compile([f, sg.grad(f, x)], backend="array_api")
    a = np.arange(6.0).reshape(2, 3)
    value, grad = fn(xs.asarray(a))
    assert type(grad).__module__.startswith("array_api_strict")
    want = sg.evaluate([f, sg.grad(f, x)], {"x": a})
    _close(np.asarray(grad), want[1], "grad")
    assert "xp = array_namespace(x)" in fn.source and "import numpy" not in fn.source


def test_a_long_function_in_parts_passes_the_namespace():
    """Past ``layout.PART_LINES`` lines the body is split into functions; each takes xp
    and the device."""
    xs = pytest.importorskip("array_api_strict")
    x = sg.var("x", shape=(3,))
    y = x
    for k in range(1500):  # sin or tanh by the Thue-Morse sequence: straight-line code
        op = sg.tanh if bin(k).count("1") % 2 else sg.sin
        y = op(y) * (1.0001 + k * 1e-9) + x[::-1] * 0.5
    f = sg.sum(y * np.arange(3.0))
    outs = [f, sg.grad(f, x)]
    fn = sg.compile(outs, backend="array_api")
    assert fn.source.count("(_v, xp, dev)") > 1
    a = np.array([0.1, 0.2, 0.3])
    dev = xs.Device("device1")
    for got, want in zip(fn(xs.asarray(a, device=dev)), sg.evaluate(outs, {"x": a})):
        assert got.device == dev
        _close(np.asarray(xs.asarray(got, device=xs.Device("CPU_DEVICE"))), want,
               "long function")


@pytest.mark.parametrize("backend", ARRAY_BACKENDS)
def test_emitted_array_sources_pass_ruff(backend, tmp_path):
    import shutil
    from pathlib import Path

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    x, W = sg.var("x", shape=(3,)), sg.var("W", shape=(2, 3))
    i = sg.var("i", shape=(2,), dtype="int64")
    f = sg.sum(sg.tanh(W @ x) * np.array([1.0, 2.0])) + sg.logsumexp(x) + sg.sum(x[i] ** 2)
    sources = [sg.to_source([f, *sg.grad(f, [x, W])], backend=backend),
               sg.to_source(sg.sin(x), backend=backend)]
    for k, src in enumerate(sources):
        (tmp_path / f"m{k}.py").write_text(src)
    root = Path(__file__).resolve().parents[4]
    out = subprocess.run([ruff, "check", "--no-cache", "--config", str(root / "pyproject.toml"),
                          str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_docs_backends_example_runs():
    """The backends page's first example: the array API and JAX gradients are right."""
    pytest.importorskip("array_api_strict")
    pytest.importorskip("jax")
    import contextlib
    import io

    from tests.support import docs

    block = docs.block("guide/backends", 'backend="array_api"')
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, "docs/guide/backends.md", "exec"), namespace)  # our own docs
    a = np.array([0.5, 1.0, 2.0])
    _close(np.asarray(namespace["grad"]), np.sin(a) + a * np.cos(a), "docs")
    assert "import jax.numpy as xp" in out.getvalue()


def _mixed_loss():
    x, W = sg.var("x", shape=(6,)), sg.var("W", shape=(3, 6))
    i = sg.var("i", shape=(4,), dtype="int64")
    f = (sg.sum(sg.tanh(W @ x)) + sg.logsumexp(x) + sg.sum(x[i] ** 2)
         + sg.sum(sg.softmax(W, axis=1) * W))
    values = {"x": np.linspace(-1, 1, 6), "W": np.arange(18.0).reshape(3, 6) / 10,
              "i": np.array([0, 2, 2, 5])}
    return [f, *sg.grad(f, [x, W])], values


def test_array_api_backend_on_dask_arrays_stays_lazy():
    da = pytest.importorskip("dask.array")
    pytest.importorskip("array_api_compat")
    outs, values = _mixed_loss()
    fn = sg.compile(outs, inputs=["x", "W", "i"], backend="array_api")
    got = fn(*[da.from_array(values[k], chunks=2) for k in ("x", "W", "i")])
    assert all(isinstance(g, da.Array) for g in got)
    for g, want in zip(got, sg.evaluate(outs, values)):
        _close(np.asarray(g), want, "dask")


def test_array_api_backend_on_cupy_when_a_gpu_is_present():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU")
    except Exception as e:  # CUDA absent: cupy imports but finds no runtime
        pytest.skip(f"no GPU ({e})")
    outs, values = _mixed_loss()
    fn = sg.compile(outs, inputs=["x", "W", "i"], backend="array_api")
    got = fn(*[cp.asarray(values[k]) for k in ("x", "W", "i")])
    for g, want in zip(got, sg.evaluate(outs, values)):
        _close(cp.asnumpy(g), want, "cupy")


def test_cli_source_writes_a_module_for_a_backend(tmp_path):
    xs = pytest.importorskip("array_api_strict")
    from symgrad.cli import main

    out = tmp_path / "m.py"
    code = main(["source", "a*a*b + sum(x*a) + sum(x**3)", "--shape", "x=2", "--wrt", "a,b,x",
                 "--hessian", "flat", "--backend", "array_api", "-o", str(out)])
    assert code == 0
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # the test's own output
    assert namespace["HESS_LAYOUT"] == (("a", 0, 1), ("b", 1, 2), ("x", 2, 4))
    *_, hess = namespace["f"](xs.asarray(3.0), xs.asarray(2.0), xs.asarray([0.5, -1.0]))
    want = np.array([[4.0, 6.0, 1.0, 1.0], [6.0, 0.0, 0.0, 0.0], [1.0, 0.0, 3.0, 0.0],
                     [1.0, 0.0, 0.0, -6.0]])
    _close(np.asarray(hess), want, "cli hessian")


# -- (d) devices: PyTorch's meta device -------------------------------------------------------

# array_api_compat's torch ``sign`` writes NaN through a boolean mask, which reads the mask's
# value (``.item()``) on a 0-d tensor; a meta tensor has none. abs and cbrt differentiate
# through sign.
_META_0D = {"sign-()", "abs-()", "cbrt-()", "i0e-()", "i1e-()"}


# LU's row order (and the gradient of lu_factor, which uses it) is read from the pivots'
# values: a meta tensor has none to read.
# Special functions torch.special lacks run through SciPy on host copies (_sg_xp_host); so do
# the derivatives of i1 and i1e ((i0 + iv(2, x)) / 2: no division by x).
_META_VALUES = ("lu_factor-", "lu_permutation-", "betaln-", "erfcinv-", "gamma-(", "betainc-",
                "stdtr-", "j0-", "j1-", "y0-", "y1-", "jv-", "yv-", "yn-", "iv-", "ive-", "kv-",
                "kve-", "i1-", "i1e-")


def _meta_case(p):
    if p.id.startswith(_META_VALUES):
        return pytest.param(*p.values, id=p.id, marks=pytest.mark.xfail(
            raises=(NotImplementedError, RuntimeError),
            reason="read on the host: LU's pivots, SciPy's special functions"))
    if p.id in _META_0D:
        return pytest.param(*p.values, id=p.id, marks=pytest.mark.xfail(
            raises=RuntimeError, reason="array_api_compat's torch sign reads a 0-d mask"))
    return p


@pytest.mark.parametrize("case", [_meta_case(p) for p in CASES])
def test_torch_and_array_api_backends_keep_meta_tensors_on_meta(case):
    """Every array the code creates (constants, ``zeros``, index grids, scatter buffers) is
    made on the inputs' device: with inputs on ``meta`` every result is on ``meta``, with
    the shape and dtype ``sg.evaluate`` gives (a GPU fails the same way as meta: "Expected
    all tensors to be on the same device")."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    if _refused("torch", case):
        return
    outs, inputs = _outputs(case)
    args = [torch.asarray(inputs[k], device="meta") for k in sorted(inputs)]
    for backend in ("torch", "array_api") if args else ("torch",):  # array_api: NumPy's
        fn = sg.compile(outs, inputs=sorted(inputs), backend=backend)
        got = fn(*args)
        for k, (g, e) in enumerate(zip(got, outs)):
            what = f"{case.op.name} output {k} on {backend}"
            assert isinstance(g, torch.Tensor), what
            assert g.device.type == ("meta" if args else "cpu"), f"{what}: on {g.device}"
            assert tuple(g.shape) == e.shape, what
            if k == 0 or is_float(e.dtype):
                assert dtype_name(g.dtype) == e.dtype, f"{what}: {g.dtype}"


def test_torch_lists_beside_tensors_go_to_the_tensors_device():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    outs, values = _mixed_loss()
    fn = sg.compile(outs, inputs=["x", "W", "i"], backend="torch")
    got = fn(torch.asarray(values["x"], device="meta"), values["W"].tolist(), values["i"])
    assert all(g.device.type == "meta" for g in got)


def test_a_function_without_inputs_makes_its_arrays_on_the_default_device():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    src = sg.to_source(sg.arange(3.0) * 2.0, inputs=[], backend="torch")
    assert "dev = None  # no inputs" in src
    fn = sg.compile(sg.arange(3.0) * 2.0, inputs=[], backend="torch")
    assert fn().device == torch.empty(0).device
    np.testing.assert_array_equal(fn().numpy(), [0.0, 2.0, 4.0])


def test_variables_named_like_the_bindings_are_renamed():
    """``xp``, ``dev`` and the helpers' names are the module's own: a variable of one of
    those names is renamed in the code, not allowed to shadow them."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    xs = [sg.var(n, (3,)) for n in ("xp", "dev", "_sg_xp_device", "_sg_xp_const")]
    f = sg.sum(xs[0] * np.arange(3.0) + xs[1] * xs[2] * xs[3])
    outs = [f, *sg.grad(f, xs)]
    values = {x.name: np.linspace(0.5, 1.5, 3) + k for k, x in enumerate(xs)}
    want = sg.evaluate(outs, values)
    for backend in ("torch", "array_api"):
        fn = sg.compile(outs, inputs=xs, backend=backend)
        got = fn(*[torch.asarray(values[x.name], device="meta") for x in xs])
        assert all(g.device.type == "meta" for g in got)
        got = fn(*[torch.asarray(values[x.name]) for x in xs])
        for g, w in zip(got, want):
            _close(g.numpy(), w, backend)


def test_solve_broadcasts_its_stacks_itself_as_cupy_needs():
    """CuPy's ``linalg.solve`` refuses ``a`` and ``b`` stacks of different shapes (seen on an
    H100: ``solve-example3/4`` failed); the helper broadcasts them before the call."""
    xs = pytest.importorskip("array_api_strict")
    from symgrad.backends.targets.array_api.helpers import _sg_xp_solve

    class CupyLike:
        def __getattr__(self, name):
            return getattr(xs, name)

        class linalg:  # noqa: N801 - the namespace's attribute
            @staticmethod
            def solve(a, b):
                assert b.ndim == 1 or a.shape[:-2] == b.shape[:-2], (a.shape, b.shape)
                return xs.linalg.solve(a, b)

    rng = np.random.default_rng(0)
    for (a, b), _ in REGISTRY["solve"].examples(rng):
        got = _sg_xp_solve(CupyLike(), xs.asarray(a), xs.asarray(b))
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(a, b), rtol=1e-12)
def is_loop(case) -> bool:
    """Whether the case holds a traced body (a loop's step, a solver's callbacks)."""
    return any(isinstance(v, Body) for v in case.attrs.values())


@pytest.mark.parametrize("backend", ["numpy", "jax", "torch", "numba"])
def test_an_out_of_range_traced_index_raises_or_gives_nan_never_a_clamped_element(backend, x64):
    """Negative indices wrap on every target; out of range NumPy, PyTorch and Numba raise,
    JAX (whose compiled code cannot) gives NaN rather than its clamped element."""
    pytest.importorskip({"numpy": "numpy", "jax": "jax", "torch": "torch",
                         "numba": "numba"}[backend])
    x = sg.var("x", shape=(4, 3))
    i = sg.var("i", shape=(2,), dtype="int64")
    fn = sg.compile([x[i, 1:] * 2.0], inputs=[x, i], backend=backend)
    xv = np.arange(12.0).reshape(4, 3)
    got = np.asarray(fn(xv, np.array([-1, 2]))[0])
    np.testing.assert_array_equal(got, xv[[-1, 2], 1:] * 2.0)
    bad = np.array([4, 0])
    if backend != "jax":
        with pytest.raises(sg.EvaluationError):
            fn(xv, bad)
        return
    got = np.asarray(fn(xv, bad)[0])
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], xv[0, 1:] * 2.0)
