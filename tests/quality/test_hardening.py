"""Hardening: user ops that cannot inject, results that are never silently wrong, budgets
that leave the graph as it was. Checks that define ops run in a
fresh interpreter (``run_script``) so the registry of this process stays as collected."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg

ROOT = Path(__file__).resolve().parents[2]


def run_script(code: str, tmp_path: Path | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path or ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_user_op_attributes_are_plain_data_and_never_run(tmp_path):
    """An attribute object's ``__repr__``/``__hash__`` never runs nor reaches source; an
    ``inf``/``nan`` attribute is emitted as valid source."""
    report = run_script("""
        import json, numpy as np, symgrad as sg
        from symgrad.extend import defop
        ran = []
        class Evil:
            def __repr__(self):
                ran.append("repr"); return "open('PWNED', 'w') and -1"
            __str__ = __repr__
            def __format__(self, spec):
                ran.append("format"); return "open('PWNED', 'w') and -1"
            def __hash__(self):
                ran.append("hash"); return 1
            def __eq__(self, other):
                ran.append("eq"); return True
        class Name(str):
            def __repr__(self):
                ran.append("str repr"); return "open('PWNED', 'w')"
        def clipto(x, bound):
            return np.minimum(x, bound)
        rowsum = defop("rowsum", impl=lambda x, axis: np.sum(x, axis=axis),
                       backprop=lambda n, g: (sg.broadcast_to(g, n.args[0].shape),),
                       shape=lambda s, d, a: ((), d[0]), params=("x", "=axis"),
                       attrs={"axis": None}, numpy="np.sum({0}, axis={axis!r})")
        cap = defop("cap", impl=clipto, backprop=lambda n, g: (g,), shape="same",
                    params=("x", "=bound"), attrs={"bound": 0.0},
                    numpy="np.minimum({0}, {bound!r})", math="min({0}, {bound})")
        tag = defop("tag", impl=lambda x, label: x, backprop=lambda n, g: (g,),
                    shape="same", params=("x", "=label"), attrs={"label": ""},
                    numpy="{0}")
        x = sg.var("x", shape=(3,))
        refused = []
        for bad in (Evil(), [Evil()], {"k": Evil()}, (1, Evil()), np.array([0]), 1j):
            try:
                rowsum(x, bad)
            except sg.SymgradError as e:
                refused.append(type(e).__name__)
        e = tag(rowsum(x, np.int32(0)), Name("a"))
        attrs = [n.attrs for n in e.graph.nodes if n.op in ("rowsum", "tag")]
        types = [type(v).__name__ for a in attrs for v in a.values()]
        text = str(e) + sg.to_source(e) + sg.to_dot(e) + sg.latex(e)
        xv = np.array([1.0, -2.0, 5.0])
        vals = {}
        for bound in (float("inf"), -float("inf"), float("nan")):
            y = sg.sum(cap(x, bound))
            got = sg.compile(y)(xv)
            want = sg.evaluate(y, {"x": xv})
            vals[repr(bound)] = [float(got), float(want)]
        s = sg.var("s")
        scal = sg.compile(cap(s, float("inf")), scalars="math")(2.0)
        print(json.dumps({"ran": ran, "refused": refused, "types": types,
                          "pwned": "PWNED" in text, "vals": vals, "scal": scal}))
    """, tmp_path)
    assert report["ran"] == []
    assert report["refused"] == ["ArgumentError"] * 6
    assert report["types"] == ["int", "str"]
    assert not report["pwned"] and not list(tmp_path.iterdir())
    assert report["vals"]["inf"] == [4.0, 4.0]
    assert report["vals"]["-inf"] == [-np.inf, -np.inf]
    assert np.isnan(report["vals"]["nan"]).all()
    assert report["scal"] == 2.0


def test_plain_is_what_the_attribute_check_reads():
    from symgrad.ir.values import plain

    assert plain([np.float32(0.5), (np.bool_(True), slice(None, np.int64(2)))], "a") == \
        [0.5, (True, slice(None, 2))]
    with pytest.raises(sg.SymgradError, match="attribute"):
        plain(object(), "attribute")


def test_defop_without_a_rule_helpers_and_math_templates(tmp_path):
    """No rule is an error naming the op (never a zero); a ``math=``
    template may call what NumPy lacks; an unreadable or non-self-contained helper is
    refused at ``defop``; a helper importing SciPy is named in the module's header."""
    (tmp_path / "ops_erfc.py").write_text(textwrap.dedent('''
        import numpy as np, symgrad as sg
        from symgrad.extend import defop

        def _sg_erfc(x):
            from scipy.special import erfc
            return erfc(x)

        erfc = defop("erfc_user", impl=_sg_erfc, numpy="_sg_erfc({0})", helpers=(_sg_erfc,),
                     math="math.erfc({0})",
                     backprop=lambda n, g: (-2 / np.sqrt(np.pi) * g * sg.exp(-n.args[0] ** 2),))
        cube = defop("cube_norule", impl=lambda x: x ** 3, numpy="{0} ** 3")

        import numpy as npy

        def _sg_npy(x):
            return npy.sum(x)
    '''))
    report = run_script("""
        import json, math, warnings, numpy as np, symgrad as sg
        from symgrad.extend import defop, ExtensionError
        from ops_erfc import erfc, cube, _sg_npy
        x, y = sg.var("x", shape=(3,)), sg.var("y", shape=(3,))
        f = sg.sum(cube(x) * y)
        errors = {}
        for name, call in [("grad", lambda: sg.grad(f, x)),
                           ("jvp", lambda: sg.jvp(f, x, np.ones(3))),
                           ("hessian", lambda: sg.hessian(f, x)),
                           ("jacfwd", lambda: sg.jacobian(cube(x), x, mode="forward"))]:
            try:
                call()
                errors[name] = "none"
            except sg.DifferentiationError as e:
                errors[name] = str(e)
        at = {"x": np.array([1.0, 2.0, 3.0]), "y": np.ones(3)}
        other = sg.evaluate(sg.grad(f, y), at).tolist()
        pattern = np.asarray(sg.jacobian_sparsity(cube(x), x).todense()).tolist()
        s = sg.var("s")
        fn = sg.compile(erfc(s) + sg.exp(s), scalars="math")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scal = [fn(0.5), fn(1000.0)]
        src = sg.to_source(sg.sum(erfc(x)))
        refused = []
        ns = {}
        exec("def _sg_dbl(x):\\n    return 2 * x\\n", ns)
        for h in (ns["_sg_dbl"], _sg_npy):
            try:
                defop("dbl" + h.__name__, impl=h, numpy=h.__name__ + "({0})", helpers=(h,))
            except ExtensionError as e:
                refused.append(str(e))
        print(json.dumps({"errors": errors, "other": other, "pattern": pattern,
                          "scal": scal, "want": math.erfc(0.5) + math.exp(0.5),
                          "header": src.splitlines()[0], "refused": refused}))
    """, tmp_path)
    for name, msg in report["errors"].items():
        assert "'cube_norule' has no derivative rule" in msg, name
    assert report["other"] == [1.0, 8.0, 27.0]
    assert report["pattern"] == np.eye(3, dtype=bool).tolist()
    assert report["scal"][0] == pytest.approx(report["want"], rel=1e-15)
    assert report["scal"][1] == np.inf
    assert "scipy" in report["header"] and "only NumPy" not in report["header"]
    assert "cannot be read" in report["refused"][0] and "'npy'" in report["refused"][1]


def test_grad_of_a_function_traces_again_for_static_values_that_differ():
    """Static keywords equal under ``==`` but not alike (0.0 and -0.0, 1 and 1.0)
    get their own trace; a static NaN is found again (the cache does not grow)."""
    df = sg.grad(lambda x, *, c: np.sum(x / c))
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(df(x, c=0.0), [np.inf, np.inf])
    np.testing.assert_array_equal(df(x, c=-0.0), [-np.inf, -np.inf])
    df(x, c=np.float32(2.0))
    df(x, c=2.0)
    assert df.cache_size == 4
    dt = sg.grad(lambda x, *, c: np.sum(x * c[0]))
    dt(x, c=(1,))
    dt(x, c=(1.0,))
    assert dt.cache_size == 2
    for _ in range(3):
        assert np.isnan(df(x, c=float("nan"))).all()
    assert df.cache_size == 5


def _eval_and_compiled(e, names):
    yield lambda *vals: sg.evaluate(e, dict(zip(names, vals)))
    yield sg.compile(e, inputs=names)


@pytest.mark.parametrize("dtype, value", [
    ("int64", np.uint64(2**64 - 1)), ("int64", 2**63), ("int64", np.array([0, 2**64 - 1],
                                                                          dtype=np.uint64)),
    ("int32", 2**32 + 1), ("int32", np.int64(-(2**31) - 1)),
])
def test_integer_inputs_that_do_not_fit_are_refused(dtype, value):
    """An integer input ``i`` whose values do not fit its variable's dtype is refused
    like an out-of-range constant (``w[i]`` would otherwise wrap to another element)."""
    shape = np.shape(value)
    w, i = sg.var("w", shape=(3,)), sg.var("i", shape=shape, dtype=dtype)
    for fn in _eval_and_compiled(w[i], ["w", "i"]):
        with pytest.raises(sg.EvaluationError, match="do not fit"):
            fn(np.array([10.0, 20.0, 30.0]), value)
        assert float(np.sum(fn(np.array([10.0, 20.0, 30.0]),
                               np.zeros(shape, np.uint64) + 2))) == 30.0 * max(1, np.size(value))


def test_float32_inputs_that_would_overflow_are_refused():
    x = sg.var("x", shape=(2,), dtype="float32")
    for fn in _eval_and_compiled(x * 2, ["x"]):
        with pytest.raises(sg.EvaluationError, match="do not fit"):
            fn(np.array([1.0, 1e300]))
        got = fn(np.array([np.inf, 3.0]))
        assert got.dtype == np.float32 and got.tolist() == [np.inf, 6.0]


def test_a_failed_transform_leaves_the_graph_as_it_was():
    """A LimitError (or any error) inside grad/derivative/hessian removes what it
    built: retries neither grow the graph nor succeed by reusing a failed try's nodes."""
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * sg.exp(x) + y
    g = f.graph
    _, ff = sg.grad(f, y), f * f  # a transform before: kept
    before = (len(g), len(g.transforms), dict(g.adjoint_of), dict(g.variables))
    lines = g.nx.number_of_nodes()
    for _ in range(20):
        with pytest.raises(sg.LimitError), sg.limits(transform_nodes=5):
            sg.derivative(f, x, 6)
    with pytest.raises(sg.LimitError), sg.limits(transform_nodes=25):
        sg.hessian(ff, [x, y])  # its inner gradient succeeded, the whole did not
    assert (len(g), len(g.transforms), g.adjoint_of, g.variables) == before
    assert g.nx.number_of_nodes() == lines
    g.verify()
    d = sg.derivative(f, x, 3)  # the graph still works, and gives the right value
    assert sg.evaluate(d, {"x": 0.3, "y": 1.0}) == pytest.approx(
        2 * np.exp(0.3) * (np.cos(0.3) - np.sin(0.3)), rel=1e-13)


def _float32_cases():
    from symgrad.ir.op import REGISTRY

    for name, op in sorted(REGISTRY.items()):
        if (op.builtin and op.public and op.differentiable and op.arity in (1, 2)
                and op.elementwise and op.domain and op.examples is None):
            yield name
    yield from ("max", "clip", "where")


def _float32_expr(name, x, y):
    if name == "max":
        return sg.max(x * y)
    if name == "clip":
        return sg.clip(x, -0.5, 0.5) * y
    if name == "where":
        return sg.where(x > 0.5, x * y, 1.0)
    op = sg.ops.REGISTRY[name]
    return getattr(sg, name)(x) + y if op.arity == 1 else getattr(sg, name)(x, y)


@pytest.mark.parametrize("name", list(_float32_cases()))
def test_float32_gradients_stay_float32_in_the_graph_evaluate_and_emitted_code(name):
    """The gradient of a float32 function is float32 everywhere: the tie weights of
    maximum/max and the literals of where in emitted code included."""
    op = sg.ops.REGISTRY.get(name)
    lo, hi = op.domain if op is not None else (-1.0, 1.0)
    x, y = sg.var("x", shape=(3,), dtype="float32"), sg.var("y", shape=(3,), dtype="float32")
    at = {"x": np.array([lo + 0.37 * (hi - lo)] * 2 + [lo + 0.61 * (hi - lo)], np.float32),
          "y": np.full(3, lo + 0.61 * (hi - lo), np.float32)}
    e = _float32_expr(name, x, y)
    if e.dtype != "float32":
        pytest.skip(f"{name} of float32 is {e.dtype}")
    first = sg.grad(sg.sum(e), [x, y])
    outs = [*first, sg.grad(sg.sum(first[0]), x)]
    with np.errstate(all="ignore"):
        got = [sg.evaluate(outs, at), sg.compile(outs, inputs=["x", "y"])(at["x"], at["y"])]
    assert [o.dtype for o in outs] == ["float32"] * 3
    for values in got:
        assert [np.asarray(v).dtype for v in values] == [np.float32] * 3
    np.testing.assert_array_equal(got[0][0], got[1][0])


SPECIAL = [-np.inf, -2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, np.inf, np.nan]
# docs/guide/limits.md, "Numerics across backends": math and NumPy may round these differently
ROUNDING = {"exp", "log1p", "expm1", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos",
            "arcsinh", "arctanh", "exp2", "log10", "power", "arctan2", "hypot", "sigmoid",
            "arccosh", "float_power", "erf", "erfc", "ndtr"}  # math vs SciPy: the last bit


def _scalar_cases():
    from symgrad.backends.targets.numpy.math_table import MATH

    return [n for n, op in sorted(sg.ops.REGISTRY.items())
            if MATH.get(n) is not None and op.builtin and op.elementwise and op.arity in (1, 2)]


@pytest.mark.parametrize("name", _scalar_cases())
def test_scalar_math_code_equals_evaluate_at_special_points(name):
    """``scalars="math"`` values and first derivatives equal ``evaluate``'s at
    signed zeros, infinities and NaN, the sign of a zero included (floor/ceil/trunc of
    -0.0, x ** 0.5 at -inf, fmod's gradient, logical_xor of two non-zero floats)."""
    op = sg.ops.REGISTRY[name]
    xs = [sg.var("x"), sg.var("y")][: op.arity]
    e = getattr(sg, name)(*xs)
    outs = [e]
    if op.differentiable and e.dtype == "float64":
        outs += sg.grad(e, xs)
    fn = sg.compile(outs, inputs=["x", "y"][: op.arity], scalars="math")
    assert "math=_numpy_math" in fn.source  # the scalar form is what runs
    with np.errstate(all="ignore"):
        for point in itertools.product(SPECIAL, repeat=op.arity):
            want = sg.evaluate(outs, dict(zip(["x", "y"], point)))
            got = fn(*point)
            for k, (u, v) in enumerate(zip(want, got)):
                u, v = np.float64(u), np.float64(v)
                if name in ROUNDING and np.isfinite(u) and u != 0:
                    assert v == pytest.approx(u, rel=1e-13), (point, k)
                else:
                    assert (np.isnan(u) and np.isnan(v)) or (
                        u == v and np.signbit(u) == np.signbit(v)), (point, k, u, v)


def test_scalar_power_takes_numpys_square_root_path_at_one_half():
    x = sg.var("x")
    fn = sg.compile(x ** 0.5, scalars="math")
    with np.errstate(all="ignore"):
        for a in (-np.inf, -0.0, -1.0, 2.0):
            want, got = np.float64(sg.evaluate(x ** 0.5, {"x": a})), np.float64(fn(a))
            assert (np.isnan(want) and np.isnan(got)) or (
                want == got and np.signbit(want) == np.signbit(got)), a


def test_from_sympy_refuses_two_symbols_of_one_name_and_numbers_beyond_float64():
    """``a - Dummy("a")`` is not 0 (two symbols of one name are refused), and
    ``Integer(10**400)`` is not inf (numbers beyond float64 are refused)."""
    sympy = pytest.importorskip("sympy")
    a = sympy.Symbol("a")
    for e in (a - sympy.Dummy("a"), a * sympy.Symbol("a", positive=True)):
        with pytest.raises(sg.SymgradError, match="two different sympy symbols are named 'a'"):
            sg.from_sympy(e)
    for n in (sympy.Integer(10**400), sympy.Rational(-(10**400), 3)):
        with pytest.raises(sg.SymgradError, match="does not fit a float64"):
            sg.from_sympy(n * a)
    assert sg.evaluate(sg.from_sympy(sympy.Integer(10**300) * a), {"a": 2.0}) == 2e300
    assert sg.evaluate(sg.from_sympy(a - sympy.Symbol("b")), {"a": 2.0, "b": 0.5}) == 1.5


def test_page_title_and_path_are_exact_and_the_script_is_allowed_by_its_hash(tmp_path):
    """A title is an exact string (a subclass's methods never run, other
    types are refused), the page's one script runs by its hash (no 'unsafe-inline'), and
    a file descriptor is not a path."""
    import base64
    import hashlib
    import re

    ran = []

    class Title(str):
        def replace(self, *args):
            ran.append("replace")
            return "<script>alert(1)</script>"

        def __str__(self):
            ran.append("str")
            return "<script>alert(1)</script>"

        def __len__(self):
            ran.append("len")
            return 3

    x = sg.var("x")
    page = sg.to_html(sg.exp(x), title=Title("a title"), path=tmp_path / "p.html")
    dot = sg.to_dot(sg.exp(x), title=Title("a title"))
    assert ran == [] and "alert" not in page + dot and "a title" in page and "a title" in dot
    assert (tmp_path / "p.html").read_text(encoding="utf-8") == page
    for bad in (3, b"t", ["t"]):
        for fn in (sg.to_html, sg.to_dot):
            with pytest.raises(sg.SymgradError, match="title must be a string"):
                fn(sg.exp(x), title=bad)
    with pytest.raises(sg.SymgradError, match="path must be a file name"):
        sg.to_html(sg.exp(x), path=1)
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "unsafe-inline" not in policy.split("script-src")[1]
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert len(scripts) == 1 and f"script-src 'sha256-{digest}'" in policy


def test_explain_of_a_constant_and_unknown_at_names_on_the_command_line(capsys):
    """``explain(const(3.0))`` is an error that says why; ``symgrad html``/``explain``
    refuse an ``--at`` name that is no variable."""
    from symgrad.cli import main

    for c in (sg.const(3.0), sg.const([1.0, 2.0])):
        with pytest.raises(sg.SymgradError, match="is a constant"):
            sg.explain(c)
    assert main(["explain", "3.0"]) == 2
    assert main(["explain", "sin(x)", "--at", "x=1,zz=2"]) == 2
    assert main(["html", "sin(x)", "--at", "zz=2"]) == 2
    err = capsys.readouterr().err
    assert "is a constant" in err and err.count("'zz', not a variable") == 2
    assert "Traceback" not in err
    assert main(["explain", "sin(x)", "--at", "x=1"]) == 0


def _mutated_while_running(fn, table, *args):
    """Run ``fn(*args)``; at its fifth line event (inside its loop) add a key to ``table``
    (what a ``defop`` in another thread does at that moment), remove it after."""
    import sys

    lines = []

    def local(frame, event, arg):
        if event == "line":
            lines.append(frame.f_lineno)
            if len(lines) == 5:
                table["_sg_probe"] = next(iter(table.values()))
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code is fn.__code__ else None

    sys.settrace(tracer)
    try:
        return fn(*args)
    finally:
        sys.settrace(None)
        table.pop("_sg_probe", None)


def test_tables_read_while_another_thread_defines_an_op():
    """What compile/simplify/from_sympy read of the registry and tables is a snapshot: a
    defop in another thread during the read does not raise "dictionary changed size
    during iteration"."""
    sympy = pytest.importorskip("sympy")
    from symgrad.backends.targets.numpy.math_table import MATH, fallback_names
    from symgrad.frontend import sympy_io
    from symgrad.ir.op import REGISTRY

    assert _mutated_while_running(fallback_names, MATH) == fallback_names()
    assert _mutated_while_running(sympy_io.back_table, REGISTRY, sympy) == \
        sympy_io.back_table(sympy)  # the one table both sympy_io and the bridge read


def test_flags_take_booleans_and_choices_are_compared_as_exact_values():
    """``sparse="no"`` is not True, an array as ``sparse=``/``mode=``/``method=``
    is refused by name (not NumPy's "truth value is ambiguous"); a function's parameter
    named ``np`` is traced (the user chose no variable name)."""
    x = sg.var("x", shape=(3,))
    f = sg.sum(x ** 3)
    calls = [lambda v: sg.jacobian(x * x, x, sparse=v), lambda v: sg.jacobian(x * x, x, mode=v),
             lambda v: sg.hessian(f, x, sparse=v), lambda v: sg.hessian(f, x, method=v),
             lambda v: sg.grad(f, x, cleanup=v), lambda v: sg.jvp(f, x, np.ones(3), cleanup=v)]
    for call in calls:
        for bad in ("no", np.array([True, False]), 1.0):
            with pytest.raises(sg.DifferentiationError, match="must be one of"):
                call(bad)
    assert sg.hessian(f, x, sparse=np.True_).todense().shape == (3, 3)
    df = sg.grad(lambda np, numpy: (np * numpy).sum())
    np.testing.assert_array_equal(df(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [3.0, 4.0])


def test_dask_workers_keep_a_bounded_number_of_compiled_chunk_functions():
    """The per-process cache of compiled chunk sources is bounded (LRU)."""
    from symgrad.backends import dask as sgd

    sources = [f"def chunk():\n    return {k}\n" for k in range(sgd._MAX_LOADED + 10)]
    for src in sources:
        assert sgd._function(src)() == int(src.split()[-1])
    assert len(sgd._LOADED) == sgd._MAX_LOADED
    assert sources[0] not in sgd._LOADED and sources[-1] in sgd._LOADED
    sgd._function(sources[10])  # a hit moves to the end: the next eviction spares it
    sgd._function(sources[0])
    assert sources[10] in sgd._LOADED and sources[11] not in sgd._LOADED


@pytest.mark.parametrize("backend", ["array_api", "torch"])
def test_order_statistic_gradients_on_the_array_backends(backend):
    """The gradients of median, quantile and percentile run on the array backends with
    their dtypes (no ``xp.where`` of two scalars, which array-api-strict refuses and torch
    computes in float32)."""
    module = pytest.importorskip("array_api_strict" if backend == "array_api" else "torch")
    for n in (5, 6):  # an odd count takes the middle element, an even one two
        x = sg.var("x", shape=(n,))
        at = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.5][:n])
        for e in (sg.median(x), sg.quantile(x, 0.3), sg.percentile(x, 70.0)):
            g = sg.grad(e, x)
            got = sg.compile(g, backend=backend)(module.asarray(at))
            assert str(got.dtype).endswith("float64")
            np.testing.assert_allclose(np.asarray(got), sg.evaluate(g, {"x": at}), rtol=1e-15)


def test_torch_backend_takes_a_reversed_numpy_view():
    """A NumPy view with negative strides is copied for torch (torch refuses such views
    with a bare ValueError)."""
    pytest.importorskip("torch")
    x = sg.var("x", shape=(2, 3))
    f = sg.sum(sg.sin(x) * x)
    at = np.arange(6.0).reshape(2, 3)[::-1, ::-1]
    got = sg.compile([f, sg.grad(f, x)], backend="torch")(at)
    want = sg.evaluate([f, sg.grad(f, x)], {"x": at})
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-15)
    np.testing.assert_allclose(got[1].numpy(), want[1], rtol=1e-15)


MIXED = ["float64", "float32", "int64", "int32"]


@pytest.mark.parametrize("backend", ["array_api", "torch", "jax"])
def test_mixed_dtypes_follow_numpys_promotion_on_the_array_backends(backend):
    """Int/float operand pairs give NumPy's float64 on the array backends: the emitted code
    casts where NumPy promotes (array-api-strict refuses mixed kinds; torch would compute
    in float32)."""
    if backend == "jax":
        jax = pytest.importorskip("jax")
        before = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)
        try:
            _mixed_dtypes(backend, jax.numpy)
        finally:
            jax.config.update("jax_enable_x64", before)
    else:
        _mixed_dtypes(backend, pytest.importorskip(
            "array_api_strict" if backend == "array_api" else "torch"))


def _mixed_dtypes(backend, module):
    ops = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a ** b,
           lambda a, b: a // b, lambda a, b: a < b, sg.maximum, sg.arctan2,
           lambda a, b: sg.where(a > 1, a, b), lambda a, b: sg.concatenate([a, b])]
    for da in MIXED:
        for db in MIXED:
            x, y = sg.var("x", shape=(3,), dtype=da), sg.var("y", shape=(3,), dtype=db)
            xv, yv = np.array([1, 2, 3]).astype(da), np.array([2, 1, 3]).astype(db)
            outs = [op(x, y) for op in ops]
            want = sg.evaluate(outs, {"x": xv, "y": yv})
            got = sg.compile(outs, inputs=["x", "y"], backend=backend)(
                module.asarray(xv), module.asarray(yv))
            for k, (g, w) in enumerate(zip(got, want)):
                assert str(g.dtype).rsplit(".")[-1] == w.dtype.name, (da, db, k)
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, err_msg=str((da, db, k)))


def test_default_hessian_of_a_dense_problem_stops_the_pattern_early(monkeypatch):
    """Deciding whether to go sparse stops early on a dense problem: a node past n^2 / 4
    pairs decides "dense" without building the whole n x n pattern."""
    from symgrad.transforms import sparsity

    biggest = [0]
    real = sparsity.Pattern.from_pairs.__func__

    def from_pairs(cls, shape, rows, cols):
        biggest[0] = max(biggest[0], rows.size)
        return real(cls, shape, rows, cols)

    monkeypatch.setattr(sparsity.Pattern, "from_pairs", classmethod(from_pairs))
    n = 300
    A = np.random.default_rng(0).standard_normal((n, n))
    x = sg.var("x", shape=(n,))
    f = sg.sum(x * (A @ x)) + sg.sum(sg.sin(x))
    H = sg.hessian(f, x)
    at = np.linspace(-1.0, 1.0, n)
    np.testing.assert_allclose(sg.evaluate(H, {"x": at}), A + A.T - np.diag(np.sin(at)),
                               rtol=1e-12, atol=1e-12)
    assert biggest[0] <= n * n // 4
    y = sg.var("y", shape=(n,))  # a sparse one still takes the sparse path
    s = sg.hessian(sg.sum((y[1:] - y[:-1] ** 2) ** 2), y, sparse=None)
    assert biggest[0] <= n * n // 4 and s.shape == (n, n)


def test_latex_and_to_sympy_of_a_small_dag_with_a_huge_tree_are_bounded():
    """``e = e * sin(e) + e`` twelve times is 37 nodes but about 10^6 in a formula: the
    tree's size is counted first, against sg.limits.print_tree_nodes."""
    x = sg.var("x")
    e = x
    for _ in range(12):
        e = e * sg.sin(e) + e
    for fn in (sg.latex, sg.to_sympy):
        with pytest.raises(sg.LimitError, match="print_tree_nodes"):
            fn(e)
    small = x * sg.sin(x) + x
    assert sg.latex(small) == sg.latex(small) and "sin" in sg.latex(small)
    with sg.limits(print_tree_nodes=4), pytest.raises(sg.LimitError):
        sg.latex(small)


def test_impossible_intermediates_and_deep_chains_are_symgrad_errors():
    """Impossible intermediates and deep chains raise SymgradErrors: never NumPy's bare
    ``_ArrayMemoryError`` from evaluate and compiled functions, nor sympy's RecursionError
    from to_sympy/latex/from_sympy on a 4,900-deep chain."""
    sympy = pytest.importorskip("sympy")
    x = sg.var("x")
    e = sg.sum(sg.zeros((10**6, 10**6)) + x)  # 7.3 TiB
    for fn in (lambda: sg.evaluate(e, {"x": 1.0}), lambda: sg.compile(e)(1.0)):
        with pytest.raises(sg.EvaluationError, match="does not fit in memory") as info:
            fn()
        assert isinstance(info.value, MemoryError)
    c = x
    for _ in range(4900):
        c = sg.sin(c)
    for fn in (sg.to_sympy, sg.latex):
        with pytest.raises(sg.LimitError, match="nested too deeply"):
            fn(c)
    t = sympy.Symbol("a")
    for _ in range(4900):
        t = sympy.sin(t, evaluate=False)
    with pytest.raises(sg.LimitError, match="nested too deeply"):
        sg.from_sympy(t)


def test_error_messages_never_call_a_user_objects_repr():
    """Error messages describe user objects without calling their ``__repr__``."""
    ran = []

    class Evil:
        def __repr__(self):
            ran.append("repr")
            return "EVIL"

    x = sg.var("x", shape=(3, 4))
    calls = [lambda: sg.sum(x, axis=Evil()), lambda: sg.reshape(x, Evil()),
             lambda: sg.transpose(x, Evil()), lambda: sg.zeros(Evil()),
             lambda: sg.quantile(x, 0.5, method=Evil()), lambda: sg.round(x, Evil()),
             lambda: sg.grad(lambda v: sg.sum(v), argnums=Evil()),
             lambda: sg.to_html(sg.sum(x), collapse=Evil())]
    for call in calls:
        with pytest.raises(sg.SymgradError, match="<Evil object>"):
            call()
    assert ran == []


# -- the emitter: names, width, large constants ------------------------------------------------

_BACKENDS = ["numpy", "array_api", "jax", "torch", "numba", "c"]


def _module_names_case(name: str):
    """A function of a variable called ``name`` that needs helpers, a SciPy import, a module
    constant and a loop function: each a module-level name the variable could shadow."""
    import symgrad.scipy.special as ss

    x = sg.var(name, shape=(3,))
    f = sg.sum(sg.softmax(x * sg.const(np.arange(3.0)))) + sg.sum(ss.erf(x))
    carry, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=3)
    return x, f + sg.sum(carry)


@pytest.mark.parametrize("backend", _BACKENDS)
@pytest.mark.parametrize("name", ["_sg_xp_const", "_sg_xp_device", "xp", "dev", "math",
                                  "array_namespace", "_sg_loop1", "_sg_loop1_math", "scipy",
                                  "jax", "torch", "_sg_softmax", "_c1", "_numpy_math", "_C",
                                  "_C_SOURCE", "_failure", "_load_library"])
def test_a_variable_may_take_any_name_the_module_uses(backend, name, x64):
    """A variable named like a helper, an import, a constant or a loop function is
    renamed in the emitted code, never shadows it."""
    pytest.importorskip({"jax": "jax", "torch": "torch", "numba": "numba"}.get(backend, "numpy"))
    x, f = _module_names_case(name)
    fn = sg.compile([f, sg.grad(f, x)], backend=backend)
    v = np.array([0.1, 0.2, 0.3])
    got = fn(v)
    ref = sg.evaluate([f, sg.grad(f, x)], {name: v})
    for a, b in zip(got, ref):
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), b, rtol=1e-12)


def _lines_to_emit(n: int) -> int:
    """Python lines run while emitting the gradient of ``v[0]*1 + v[1]*2 + ...`` (a count,
    not a time: the same on every machine)."""
    import symgrad.backends.source  # noqa: F401 - loaded before counting

    v = sg.var("v", shape=(n,))
    f = v[0] * 1.0
    for i in range(1, n):
        f = f + v[i] * float(i + 1)
    g = sg.grad(f, v)
    lines = [0]

    def count(frame, event, arg):
        lines[0] += 1
        return count

    sys.settrace(count)
    try:
        sg.to_source(g)
    finally:
        sys.settrace(None)
    return lines[0]


def test_emitting_a_wide_node_is_linear_in_its_width():
    """The merged scatter of a wide indexed sum's gradient is written in work linear in
    its operands: 4x the work from 400 to 1,600 terms (quadratic work would grow 16x)."""
    small, large = _lines_to_emit(400), _lines_to_emit(1600)
    assert large / small < 5, (small, large)  # 3.9 now; 7.0 before


@pytest.mark.parametrize("backend", ["numpy", "array_api"])
def test_large_constants_are_bytes_not_lists_and_exact(backend):
    """An array constant of DATA_FROM elements or more is written as its base64 bytes, not
    a list; the value comes back bit for bit, non-finite numbers and -0.0 included."""
    from symgrad.backends.literals import DATA_FROM

    rng = np.random.default_rng(0)
    c = rng.standard_normal(3 * DATA_FROM)
    c[:4] = [np.inf, -np.inf, -0.0, np.nan]
    x = sg.var("x", shape=(3 * DATA_FROM,))
    f = sg.sum(sg.const(c) * x)
    fn = sg.compile([f, sg.grad(f, x)], backend=backend)
    assert len(fn.source) < 3 * 8 * DATA_FROM * 1.4 + 5000  # bytes, not 20-digit reprs
    assert "_sg_data(" in fn.source or "b'" in fn.source
    _, g = fn(np.ones(3 * DATA_FROM))
    np.testing.assert_array_equal(np.asarray(g).view(np.int64), c.view(np.int64))
    small = sg.to_source(sg.sum(sg.const(c[:8]) * x[:8]))  # a small one stays readable
    assert "np.array([" in small and "_sg_data" not in small
    if backend == "numpy":  # the long data line is marked for the linter, the layout PEP 8
        src = fn.source
        assert all(len(ln) <= 100 or ln.endswith("# noqa: E501") for ln in src.splitlines())
        assert "\n\n\n_c1 = _sg_data(" in src
