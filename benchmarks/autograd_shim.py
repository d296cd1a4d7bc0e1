"""A pytest plugin that runs HIPS autograd's own test suite through symgrad.

Loaded by :mod:`benchmarks.autograd_suite` (``-p benchmarks.autograd_shim``) with an autograd
checkout first on ``sys.path``; it needs ``autograd`` importable, which symgrad's
environment does not install. Before the suite's modules are imported it

* makes ``autograd.numpy`` (and ``.linalg``), ``autograd.scipy.special``, ``.linalg``,
  ``.stats`` and ``.signal`` symgrad's (``symgrad.numpy``, ``symgrad.scipy``; ``signal``'s
  ``convolve``, with autograd's ``axes=`` and ``dot_axes=``, on symgrad's ``convolution``
  op) wherever an argument is a symgrad Expr, and NumPy's / SciPy's otherwise (what
  ``autograd.numpy`` does on plain values: the tests compare results with
  ``np.allclose``); ``autograd.numpy.random`` is NumPy's; autograd's private helpers the
  tests call (``np.linalg._dot``, ``np.linalg.T``) are written here with symgrad's
  functions;
* keeps autograd's differential operators and ``test_util`` (``check_grads``: numerical
  VJP and JVP checks to order 2) as they are, with their two primitives ``make_vjp`` and
  ``make_jvp`` replaced by ``symgrad.vjp`` and ``symgrad.jvp`` (symbol to symbol, traced and
  compiled; nested calls build expressions), ``jacobian`` by ``symgrad.jacrev``, and a
  VSpace registered for Exprs.

A *case* is one top-level ``check_grads`` call (``combo_check`` makes one per combination of
its arguments): it is recorded and the test goes on to the next; a test that makes none is
one case, its outcome. A call inside ``with pytest.raises(...)`` raises as it would in
autograd: pytest's check of the exception is that case's outcome. Per test: the list of
case outcomes (``pass`` or the exception's class) and the first messages, written as JSON
to ``$AG_OUT`` at the end of the session.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import sys
import types
from typing import Any

import autograd
import autograd.core
import autograd.differential_operators as do
import autograd.numpy.numpy_vspaces as nvs
import autograd.scipy.linalg  # noqa: F401
import autograd.scipy.signal  # noqa: F401
import autograd.scipy.special  # noqa: F401
import autograd.scipy.stats  # noqa: F401
import autograd.test_util as tu
import numpy as onp
import pytest
import scipy.linalg
import scipy.special
import scipy.stats
from autograd.extend import VSpace
from autograd.wrap_util import unary_to_nary

import symgrad as sg
import symgrad.numpy as snp
import symgrad.scipy.linalg as sla
import symgrad.scipy.special as ssp
import symgrad.scipy.stats as sst
from symgrad.ops import F

Expr = sg.Expr
DISTRIBUTIONS = ("norm", "t", "gamma", "beta", "chi2", "multivariate_normal", "poisson",
                 "dirichlet")
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "pmf", "logpmf")


def has_expr(v: Any, depth: int = 0) -> bool:
    """Whether ``v`` (or a list, tuple or dict in it) holds an Expr."""
    if isinstance(v, Expr):
        return True
    if depth < 4 and isinstance(v, (list, tuple)):
        return any(has_expr(u, depth + 1) for u in v)
    if depth < 4 and isinstance(v, dict):
        return any(has_expr(u, depth + 1) for u in v.values())
    return False


class _DualIndex:
    """``np.r_`` / ``np.c_``: symgrad's where the key holds an Expr, NumPy's otherwise."""

    def __init__(self, sym: Any, plain: Any) -> None:
        self.sym, self.plain = sym, plain

    def __getitem__(self, key: Any) -> Any:
        return (self.sym if has_expr(key) else self.plain)[key]


def dual(sym: Any, plain: Any) -> Any:
    """``sym`` where an argument is an Expr, ``plain`` (NumPy's, SciPy's) otherwise."""
    if plain is None:
        return sym
    if sym is None or isinstance(sym, type):
        return plain
    if not callable(sym):
        return _DualIndex(sym, plain) if hasattr(sym, "__getitem__") else plain

    @functools.wraps(plain if callable(plain) else sym)
    def call(*args: Any, **kwargs: Any) -> Any:
        if has_expr(args) or has_expr(tuple(kwargs.values())):
            return sym(*args, **kwargs)
        return plain(*args, **kwargs)

    return call


def shim(name: str, sym_mod: Any, plain_mod: Any, extra: dict | None = None):
    """A module ``name`` in ``sys.modules`` whose attributes are :func:`dual`'s."""
    module = types.ModuleType(name)
    cache: dict[str, Any] = {}

    def lookup(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr not in cache:
            sym = getattr(sym_mod, attr, None) if sym_mod is not None else None
            plain = getattr(plain_mod, attr, None) if plain_mod is not None else None
            if sym is None and plain is None:
                raise AttributeError(f"{name} has no {attr!r}")
            cache[attr] = dual(sym, plain)
        return cache[attr]

    module.__getattr__ = lookup
    for k, v in (extra or {}).items():
        setattr(module, k, v)
    sys.modules[name] = module
    return module


def _swap_numpy() -> None:
    def mT(x: Any) -> Any:  # autograd.numpy.linalg.T
        return snp.swapaxes(x, -1, -2) if has_expr(x) else onp.swapaxes(x, -1, -2)

    linalg = shim("autograd.numpy.linalg", snp.linalg, onp.linalg,
                  {"T": mT, "_dot": dual(snp.dot, onp.dot)})
    fft = shim("autograd.numpy.fft", snp.fft, onp.fft)
    np_shim = shim("autograd.numpy", snp, onp,
                   {"linalg": linalg, "random": onp.random, "fft": fft})
    sys.modules["autograd.numpy.random"] = onp.random
    autograd.numpy = np_shim
    do.np = np_shim


def _axes(a: Any, conv: list, dot: list) -> tuple[Any, list]:
    """``a`` laid out for :func:`ag_convolve` (its ignored axes, conv axes, dot axes) and
    the lengths of its ignored axes."""
    ignored = [k for k in range(a.ndim) if k not in conv and k not in dot]
    a = F.transpose(a, axes=tuple(ignored + conv + dot))
    return a, [a.shape[k] for k in range(len(ignored))]


def ag_convolve(A: Any, B: Any, axes: Any = None, dot_axes: Any = ((), ()),
                mode: str = "full") -> Any:
    """autograd's ``scipy.signal.convolve``: SciPy's convolution along the axis pairs
    ``axes`` (all axes by default), a dot product along the pairs ``dot_axes``, an outer
    product along the rest; the result's axes are A's ignored ones, B's, then the convolved
    ones (``same``: A's lengths). One ``convolution`` op: an ignored axis meets a length-1
    axis of the other operand, a dot axis is a ``valid`` axis against the reversed other."""
    A, B = snp.asarray(A), snp.asarray(B)
    if axes is None:
        axes = (list(range(A.ndim)), list(range(A.ndim)))
    ca, cb = [int(k) for k in axes[0]], [int(k) for k in axes[1]]
    da, db = [int(k) for k in dot_axes[0]], [int(k) for k in dot_axes[1]]
    a, ia = _axes(A, ca, da)
    b, ib = _axes(B, cb, db)
    conv = [A.shape[k] for k in ca]
    a = F.reshape(a, tuple(ia) + (1,) * len(ib) + a.shape[len(ia):])
    b = F.reshape(b, (1,) * len(ia) + tuple(ib) + b.shape[len(ib):])
    if db:  # the dot axes: reversed, so that 'valid' pairs equal indices
        b = b[(slice(None),) * (b.ndim - len(db)) + (slice(None, None, -1),) * len(db)]
    cmode = "valid" if mode == "valid" else "full"
    modes = ("full",) * (len(ia) + len(ib)) + (cmode,) * len(ca) + ("valid",) * len(da)
    out = F.convolution(a, b, modes=modes)
    out = F.reshape(out, out.shape[:out.ndim - len(da)])
    if mode != "same":
        return out
    lead = (slice(None),) * (len(ia) + len(ib))
    return out[lead + tuple(slice((B.shape[k] - 1) // 2, (B.shape[k] - 1) // 2 + n)
                            for k, n in zip(cb, conv))]


def _swap_scipy() -> None:
    shim("autograd.scipy.signal", None, None,
         {"convolve": dual(ag_convolve, autograd.scipy.signal.convolve)})
    shim("autograd.scipy.special", ssp, scipy.special)
    shim("autograd.scipy.linalg", sla, scipy.linalg)
    dists = {}
    for name in DISTRIBUTIONS:
        sym, plain = getattr(sst, name, None), getattr(scipy.stats, name)
        if sym is None:  # autograd's own module: it fails on Exprs, counted as such
            dists[name] = sys.modules.get(f"autograd.scipy.stats.{name}")
            continue
        methods = {}
        for meth in METHODS:
            p = getattr(plain, meth, None)
            s = getattr(sym, meth) if hasattr(type(sym), meth) else None
            if p is not None or s is not None:
                methods[meth] = dual(s, p)
        # the rest (rvs, ...) SciPy's
        dists[name] = shim(f"autograd.scipy.stats.{name}", None, plain, methods)
    shim("autograd.scipy.stats", None, None, dists)
    for sub_name in ("special", "linalg", "stats", "signal"):
        setattr(autograd.scipy, sub_name, sys.modules[f"autograd.scipy.{sub_name}"])


class ExprVSpace(nvs.ArrayVSpace):
    """autograd's vector space of an array, for an Expr (its shape and dtype)."""

    def __init__(self, value: Expr) -> None:
        self.shape = tuple(value.shape)
        self.dtype = onp.dtype(value.dtype)


class ComplexExprVSpace(nvs.ComplexArrayVSpace):
    """autograd's vector space of a complex array, for a complex Expr."""

    def __init__(self, value: Expr) -> None:
        self.shape = tuple(value.shape)
        self.dtype = onp.dtype(value.dtype)


def expr_vspace(value: Expr) -> nvs.ArrayVSpace:
    """The vector space of an Expr: complex for complex dtypes, as autograd's arrays."""
    if onp.dtype(value.dtype).kind == "c":
        return ComplexExprVSpace(value)
    return ExprVSpace(value)


def make_vjp(fun: Any, x: Any) -> tuple:
    """autograd's ``make_vjp(fun, x) -> (vjp, value)`` as ``symgrad.vjp``."""
    y, pull = sg.vjp(fun, x)
    return (lambda g: pull(g)[0]), y


def make_jvp(fun: Any, x: Any) -> Any:
    """autograd's ``make_jvp(fun, x)(v) -> (value, tangent)`` as ``symgrad.jvp``."""
    return lambda v: sg.jvp(fun, (x,), (v,))


@unary_to_nary
def jacobian(fun: Any, x: Any) -> Any:
    return sg.jacrev(fun)(x)


def _swap_operators() -> None:
    VSpace.register(Expr, expr_vspace)
    autograd.core.make_vjp, autograd.core.make_jvp = make_vjp, make_jvp
    do._make_vjp, do._make_jvp = make_vjp, make_jvp
    do.make_vjp, do.make_jvp = unary_to_nary(make_vjp), unary_to_nary(make_jvp)
    autograd.make_vjp, autograd.make_jvp = do.make_vjp, do.make_jvp
    tu.make_vjp, tu.make_jvp = make_vjp, make_jvp
    do.jacobian = autograd.jacobian = jacobian


# -- cases ------------------------------------------------------------------------------------

_depth = [0]
_cases: list[BaseException | None] = []
RESULTS: dict[str, dict] = {}


@functools.cache
def _raises_blocks(filename: str) -> tuple[tuple[int, int], ...]:
    """The line spans of the ``with pytest.raises(...)`` blocks of a test file."""
    try:
        with open(filename) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return ()
    return tuple((node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                 if isinstance(node, ast.With) and any(
                     "raises" in ast.unparse(item.context_expr) for item in node.items))


def _expects_raise() -> bool:
    """Whether the test's ``check_grads`` call sits inside a ``pytest.raises`` block."""
    frame = sys._getframe(2)
    line, name = frame.f_lineno, frame.f_code.co_filename
    return any(a <= line <= b for a, b in _raises_blocks(name))


def _counting(check: Any) -> Any:
    def check_grads(*a: Any, **k: Any) -> Any:
        inner = check(*a, **k)

        def run(*args: Any, **kw: Any) -> None:
            if _depth[0]:
                return inner(*args, **kw)
            expected = _expects_raise()
            _depth[0] += 1
            try:
                inner(*args, **kw)
                _cases.append(None)
            except Exception as e:  # one case: recorded; the test goes on to the next
                # inside pytest.raises, pytest judges the exception: a wrong one fails the test
                _cases.append(None if expected else e)
                if expected or os.environ.get("AG_RAISE"):
                    raise
            finally:
                _depth[0] -= 1

        return run

    return check_grads


_swap_numpy()
_swap_scipy()
_swap_operators()
tu.check_grads = _counting(tu.check_grads)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    _cases.clear()
    outcome = yield
    err = outcome.excinfo[1] if outcome.excinfo is not None else None
    if isinstance(err, pytest.skip.Exception):
        return
    kinds = ["pass" if e is None else type(e).__name__ for e in _cases]
    msgs = [str(e)[:300] for e in _cases if e is not None]
    if err is not None:
        if all(e is None for e in _cases):  # the test failed outside its checks
            kinds = kinds[:-1] + [type(err).__name__]
        msgs.append(str(err)[:300])
    elif not kinds:
        kinds = ["pass"]
    RESULTS[item.nodeid] = {"cases": kinds, "msgs": msgs[:3]}


def pytest_sessionfinish(session: Any) -> None:
    with open(os.environ.get("AG_OUT", "autograd_suite.json"), "w") as f:
        json.dump(RESULTS, f)
