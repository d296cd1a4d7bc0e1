"""A fuzz campaign on the public API: random text to the parser, random expressions through
every transform and backend, and hostile or malformed arguments to every public function.
Each example may only succeed or raise a SymgradError; nothing may run that the input did
not ask for (an audit hook watches, and hostile objects report any method of theirs that
runs), and no example may hang (a timer stops one that runs over a generous bound).

``make test`` runs a bounded, derandomized number of examples; ``make fuzz`` runs
``SYMGRAD_FUZZ_EXAMPLES`` (default 3000) per test with fresh random seeds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import symgrad as sg
from symgrad.testing import random_expressions
from tests.support import hostile

EXAMPLES = int(os.environ.get("SYMGRAD_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 60, deadline=None, derandomize=not EXAMPLES,
    suppress_health_check=list(HealthCheck),
)
HANG_SECONDS = 60  # not a speed limit: an example this slow is stuck

_WATCHING = threading.local()
_EVENTS: list[str] = []
# never: running a program, a file written; while parsing text, also: exec, compile, import
ALWAYS = ("os.system", "os.exec", "os.spawn", "os.posix_spawn", "subprocess.Popen",
          "socket.connect", "shutil")
PARSING = (*ALWAYS, "exec", "compile", "import")


def _audit(event: str, args: tuple) -> None:
    forbidden = getattr(_WATCHING, "forbid", ())
    if not forbidden:
        return
    if event.startswith(forbidden):
        _EVENTS.append(event)
    elif event == "open" and len(args) > 1 and isinstance(args[1], str) and \
            any(m in args[1] for m in "wax+") and \
            not os.path.abspath(str(args[0])).startswith(hostile.SANDBOX):
        _EVENTS.append(f"open {args[0]!s:.60} for writing")


sys.addaudithook(_audit)  # inert unless a fuzz example is running in this thread


@pytest.fixture(scope="module", autouse=True)
def _matplotlib_font_cache():
    """Matplotlib builds its font cache on first use (it runs ``fc-list`` and writes
    ``fontlist-*.json``): its own one-time set-up, done here so that a fresh machine's
    first ``sg.draw`` inside a watched example is not taken for symgrad running a program."""
    with contextlib.suppress(ImportError):
        from matplotlib import font_manager

        font_manager.findfont("DejaVu Sans")


@contextlib.contextmanager
def _watched(forbid: tuple[str, ...] = ALWAYS):
    """Run one example: hostile methods armed, audit events recorded, a hang timer set."""
    _EVENTS.clear()
    hostile.TRIPPED.clear()

    def hang(signum, frame):
        raise TimeoutError(f"a fuzz example ran for more than {HANG_SECONDS} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)
    cwd = os.getcwd()
    os.chdir(hostile.SANDBOX)  # a file a call is asked to write lands in the sandbox
    hostile.ARMED, _WATCHING.forbid = True, forbid
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    except sg.SymgradError:
        pass
    finally:
        hostile.ARMED, _WATCHING.forbid = False, ()
        os.chdir(cwd)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert hostile.TRIPPED == [], hostile.TRIPPED
    assert _EVENTS == [], _EVENTS


# -- random text --------------------------------------------------------------------------

_PIECES = [
    "x", "y", "A", "i", "sin", "exp", "sum", "einsum", "where", "linalg.matmul", "np.sin",
    "sni", "lambda", "if", "else", "for", "in", "not", "and", "None", "True", "__import__",
    "1", "2.5", "1e308", "1e999", "0x1f", "1j", "10**100", "9" * 30, "'ij,j->i'", "'a'",
    "f'{x}'", "b'x'", "+", "-", "*", "/", "**", "@", "//", "%", "^", "~", "<", "<=", "==",
    "!=", ":=", "=", ",", ":", ".", "...", "(", ")", "[", "]", "{", "}", ".T", "axis=0",
    "keepdims=True", " ", "\n", "\t", "#", "\\", ";", "\x00", "é", "𝐱",
]


@FUZZ
@given(st.lists(st.sampled_from(_PIECES), max_size=40) | st.text(max_size=60))
def test_random_text_parses_or_raises_a_symgrad_error(text):
    text = "".join(text) if isinstance(text, list) else text
    with _watched(PARSING):
        e = sg.parse(text, shapes={"x": (3,), "A": (2, 3), "y": (3,)},
                     dtypes={"i": "int64"})
        assert isinstance(e, sg.Expr)
        str(e)


@FUZZ
@given(st.integers(1, 3000), st.sampled_from(["+", "*", "-", "**", "@", " + -"]))
def test_long_chains_parse_or_raise_a_symgrad_error(n, op):
    text = "x" + f" {op} x" * n
    with _watched(PARSING):
        e = sg.parse(text, shapes={"x": ()})
        assert isinstance(e, sg.Expr)


# -- random expressions through the pipeline ----------------------------------------------


@FUZZ
@given(random_expressions())
def test_random_expressions_go_through_every_transform_and_backend(case):
    assume(case.wrt)
    f = case.expr
    scalar = sg.sum(f) if f.shape else f
    with _watched():  # compile() runs exec on the generated source, by design
        grads = sg.grad(scalar, case.wrt)
        values = sg.evaluate([scalar, *grads], case.inputs, unknown="ignore")
        used = sorted(scalar.graph.variables)
        fn = sg.compile([scalar, *grads], inputs=used, scalars="math")
        fn(*[case.inputs[k] for k in used])
        sg.to_source(sg.hessian(scalar, case.wrt[0]))
        back = sg.parse(str(scalar), shapes={k: np.shape(v) for k, v in case.inputs.items()})
        assert np.isfinite(values[0]) in (True, False) and back.shape == scalar.shape


# -- hostile and malformed arguments to every public function -----------------------------

_CALLS = hostile.public_calls()
_JUNK = [None, b"x", object(), {"a": 1}, {1, 2}, -1, 0, 2**70, -(2**70), float("nan"),
         float("inf"), -0.0, 1e308, "", "x" * 500, "__class__", "\n", [[1, 2], [3]], [],
         (), [None], np.float32(1.5), np.int8(-3), np.array([1, 2]), np.array("s"),
         np.ones((2, 2)), slice(None), ..., True, 1 + 2j, sg.var("junk"), range(3)]


def _positions(args: tuple, kwargs: dict) -> list:
    return [("arg", k) for k in range(len(args))] + [("kw", k) for k in kwargs]


@FUZZ
@given(st.data())
def test_hostile_arguments_to_public_functions(data):
    label, fn, args, kwargs = data.draw(st.sampled_from(_CALLS), label="call")
    variants = [(a, kwargs) for a in hostile.variants(args)]
    variants += [(args, {**kwargs, k: v}) for k, item in kwargs.items()
                 for v in hostile.variants(item)]
    assume(variants)
    a, kw = data.draw(st.sampled_from(variants), label="variant")
    hostile.CURRENT = label
    with _watched():
        fn(*a, **kw)


@FUZZ
@given(st.data())
def test_malformed_arguments_to_public_functions(data):
    label, fn, args, kwargs = data.draw(st.sampled_from(_CALLS), label="call")
    places = _positions(args, kwargs)
    assume(places)
    kind, where = data.draw(st.sampled_from(places), label="position")
    junk = data.draw(st.sampled_from(_JUNK), label="junk")
    if kind == "arg":
        args = args[:where] + (junk,) + args[where + 1:]
    else:
        kwargs = {**kwargs, where: junk}
    hostile.CURRENT = label
    with _watched():
        fn(*args, **kwargs)


# -- dtypes x backends, and special points -------------------------------------------------

SMALL = settings(  # each example compiles for several backends: a smaller slice in make test
    max_examples=EXAMPLES or 12, deadline=None, derandomize=not EXAMPLES,
    suppress_health_check=list(HealthCheck),
)
_DTYPES = ["float64", "float32", "int64", "int32"]
_BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
           "floor_divide", "mod", "arctan2", "hypot", "less", "equal"]
_SPECIAL = [-np.inf, -2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, np.inf, np.nan]


@SMALL
@given(st.sampled_from(_BINARY), st.sampled_from(_DTYPES), st.sampled_from(_DTYPES),
       st.lists(st.integers(1, 4), min_size=3, max_size=3),
       st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_dtype_pairs_on_every_array_backend_equal_evaluate(name, da, db, a, b):
    """The array backends give ``evaluate``'s dtype and values for mixed operand dtypes."""
    x, y = sg.var("x", shape=(3,), dtype=da), sg.var("y", shape=(3,), dtype=db)
    e = getattr(sg, name)(x, y)
    xv, yv = np.array(a).astype(da), np.array(b).astype(db)
    with np.errstate(all="ignore"):
        want = sg.evaluate(e, {"x": xv, "y": yv})
    libs = [("numpy", np.asarray)]
    for backend, module in (("array_api", "array_api_strict"), ("torch", "torch")):
        try:
            libs.append((backend, __import__(module).asarray))
        except ImportError:
            pass
    for backend, asarray in libs:
        got = sg.compile(e, inputs=["x", "y"], backend=backend)(asarray(xv), asarray(yv))
        assert str(got.dtype).rsplit(".")[-1] == want.dtype.name, backend
        np.testing.assert_allclose(np.asarray(got, dtype=float), want.astype(float),
                                   rtol=1e-6, err_msg=backend)


@SMALL
@given(st.data())
def test_scalar_code_equals_evaluate_at_special_points(data):
    """``scalars="math"`` values and gradients at signed zeros, infinities and NaN equal
    ``evaluate``'s, the sign of a zero included (ops that may round differently by an ulp:
    to 1e-13)."""
    from symgrad.backends.targets.numpy.math_table import MATH

    names = sorted(n for n, op in sg.ops.REGISTRY.items()
                   if MATH.get(n) is not None and op.builtin and op.elementwise
                   and op.arity in (1, 2) and op.differentiable)
    name = data.draw(st.sampled_from(names))
    op = sg.ops.REGISTRY[name]
    point = data.draw(st.lists(st.sampled_from(_SPECIAL), min_size=op.arity,
                               max_size=op.arity))
    xs = [sg.var("x"), sg.var("y")][: op.arity]
    e = getattr(sg, name)(*xs)
    if e.dtype != "float64":
        return
    outs = [e, *sg.grad(e, xs)]
    fn = sg.compile(outs, inputs=["x", "y"][: op.arity], scalars="math")
    with np.errstate(all="ignore"):
        want = sg.evaluate(outs, dict(zip(["x", "y"], point)))
        got = fn(*point)
    for u, v in zip(want, got):
        u, v = np.float64(u), np.float64(v)
        if np.isnan(u) or (np.isfinite(u) and u != 0 and v == pytest.approx(u, rel=1e-13)):
            assert np.isnan(u) == np.isnan(v), (name, point)
            continue
        assert u == v and np.signbit(u) == np.signbit(v), (name, point, u, v)


def test_the_campaign_sees_a_bare_exception_and_an_execution():
    """The harness itself: a non-SymgradError fails the example, an audit event too."""
    with pytest.raises(ZeroDivisionError), _watched():
        _ = 1 / 0
    with pytest.raises(AssertionError, match="exec"), _watched(PARSING):
        exec("1")
    with pytest.raises(AssertionError, match="os.system"), _watched():
        os.system("true")
