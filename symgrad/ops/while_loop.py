"""The loop op ``while_loop`` (``jax.lax.while_loop``'s meaning) and its reverse sweep
``while_vjp``.

``while_loop`` is one call with several results: the final carries, then the number of
steps it ran (an int64 scalar, what reverse mode reads). Its attributes are two traced
bodies, ``cond_fun`` (carries, its captured values -> a bool scalar) and ``body_fun``
(carries, its captured values -> the new carries), and ``carries``; its operands the initial
carries, then the values ``body_fun`` captured, then those ``cond_fun`` captured. Both bodies
are printed as functions of their own (:mod:`symgrad.backends.callbacks`) that the run-time
loop :func:`_sg_while` calls: the trip count is a run-time value, nothing about it is static.

``while_vjp`` is the reverse sweep of one such loop: for the cotangents ``seeds`` of the
final float carries it gives those of the initial float carries and of the captured values
``wrt`` names. Its run (:func:`_sg_while_vjp`) takes the trip count from the forward call and
reverses the steps by binomial checkpointing (Griewank's Revolve): at most ``snapshots``
carries are held besides the initial one, and the carries between two are computed again
from the nearer, so the memory is ``snapshots + 1`` carries whatever the trip count, for
about ``t`` forward passes where ``t`` is the smallest with ``C(snapshots + t, t) >=
steps`` (:func:`revolve_repeats`). Its own derivative is refused (a second derivative of a
``while_loop``).

The rules are built by :mod:`symgrad.transforms.while_loop`.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> y = sg.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)   # x**k, k steps
>>> sg.evaluate([y, sg.grad(y, x)], {"x": 3.0})   # 3**3 = 27, d/dx x**3 = 27
[27.0, 27.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import ShapeError
from ..ir.body import DEFAULT_SNAPSHOTS, Body, call_results, while_call
from ..ir.expr import Expr
from ..ir.op import Op, register, results_of, sig
from ..ir.shapes import fmt

__all__ = ["DEFAULT_SNAPSHOTS", "WHILE_LOOP", "WHILE_VJP", "revolve_repeats", "run_while",
           "run_while_vjp", "while_call", "while_vjp_call"]



# -- run time (emitted as they are by the NumPy target) ------------------------------------------

def _sg_while(cond, step, carries, ks, kcs, dtypes):
    """``while cond(*c, *kcs): c = step(*c, *ks)`` from ``carries``: the final carries (as
    ``dtypes``) and the number of steps run."""
    import numpy as np

    c = tuple(carries)
    one = len(c) == 1
    n = 0
    while cond(*c, *kcs):
        out = step(*c, *ks)
        c = (np.array(out) if type(out) is list else out,) if one else out
        n += 1
    return (*(np.asarray(v, dtype=d) for v, d in zip(c, dtypes)), np.int64(n))


def _sg_while_vjp(step, vjp, snapshots, count, carries, ks, seeds, avals):
    """The reverse sweep of ``count`` steps of ``step`` from ``carries``: ``vjp(*c, *ks,
    *cbar) -> (cbar', kbar)`` run from the last step to the first on the carry entering
    each, the carries recomputed from at most ``snapshots`` stored ones (binomial
    checkpointing). Returns the cotangents, of ``(shape, dtype)`` ``avals``: the initial
    float carries' then the captured values'."""
    import numpy as np

    nf = len(seeds)
    one = len(carries) == 1

    def ahead(c, k):  # k steps from carry c
        for _ in range(k):
            out = step(*c, *ks)
            c = (np.array(out) if type(out) is list else out,) if one else out
        return c

    def split(length, free):  # Revolve: how far ahead to store the next carry
        t, beta = 0, 1  # beta = C(free + t, t): the most steps `free` snapshots reverse
        while beta < length:
            t += 1
            beta = beta * (free + t) // t
        right = beta * free // (free + t)  # C(free - 1 + t, t): what one fewer reverses
        return max(1, length - right)

    outs = [np.zeros(s, dtype=d) for s, d in avals]
    outs[:nf] = [np.asarray(g, dtype=d) for g, (_, d) in zip(seeds, avals)]
    stack, end = [(0, tuple(carries))], int(count)
    while end > 0:
        at, c = stack[-1]
        if end - at > 1:
            if len(stack) <= snapshots:
                m = at + split(end - at, snapshots - len(stack) + 1)
                stack.append((m, ahead(c, m - at)))
                continue
            c = ahead(c, end - 1 - at)  # no snapshot left (the schedule never gets here)
        got = vjp(*c, *ks, *outs[:nf])
        got = got if type(got) is tuple else (got,)
        outs[:nf] = got[:nf]
        for j in range(nf, len(outs)):
            outs[j] = outs[j] + got[j]
        end -= 1
        if at == end and at > 0:
            stack.pop()
    return tuple(np.asarray(v, dtype=d) for v, (_, d) in zip(outs, avals))


def revolve_repeats(steps: int, snapshots: int) -> int:
    """The smallest ``t`` with ``C(snapshots + t, t) >= steps``: how many times, at most,
    the reverse sweep of :func:`_sg_while_vjp` runs a step forward.

    >>> revolve_repeats(10 ** 5, 20), revolve_repeats(10, 32)
    (6, 1)
    """
    t, beta = 0, 1
    while beta < steps:
        t += 1
        beta = beta * (snapshots + t) // t
    return t


# -- the interpreter's run ----------------------------------------------------------------------

class _Fn:
    """``body`` as a function of arrays: its one result, or the tuple of its results (what
    an emitted callback returns)."""

    __slots__ = ("body",)

    def __init__(self, body: Body) -> None:
        self.body = body

    def __call__(self, *values: Any) -> Any:
        out = self.body.run(values)
        return out[0] if len(out) == 1 else tuple(out)


def run_while(*arrays: Any, cond_fun: Body, body_fun: Body, carries: int, body_args: int,
              dtypes: tuple, snapshots: int = DEFAULT_SNAPSHOTS) -> tuple:
    """Every result of a ``while_loop`` call over ``arrays`` (its operands)."""
    nc, kb = carries, carries + body_args
    arrays = [np.asarray(a) for a in arrays]
    with np.errstate(all="ignore"):
        return _sg_while(_Fn(cond_fun), _Fn(body_fun), arrays[:nc], arrays[nc:kb],
                         arrays[kb:], dtypes)


def run_while_vjp(*arrays: Any, body_fun: Body, vjp_fun: Body, carries: int, body_args: int,
                  snapshots: int, avals: tuple) -> tuple:
    """Every result of a ``while_vjp`` call: operands the trip count, the initial carries,
    the values ``body_fun`` captured, then the seeds."""
    kb = 1 + carries + body_args
    arrays = [np.asarray(a) for a in arrays]
    with np.errstate(all="ignore"):
        return _sg_while_vjp(_Fn(body_fun), _Fn(vjp_fun), snapshots, arrays[0],
                             arrays[1:1 + carries], arrays[1 + carries:kb], arrays[kb:],
                             avals)


# -- building the calls ------------------------------------------------------------------------

def while_vjp_call(graph: Any, body: Body, vjp: Body, nc: int, operands: Sequence[Expr],
                   snapshots: int) -> tuple[Expr, ...]:
    """The results of the reverse sweep of ``body`` by its backward step ``vjp`` over
    ``operands`` (the trip count, the initial carries, ``body``'s captured values, the
    seeds), built in ``graph``."""
    attrs = {"body_fun": body, "vjp_fun": vjp, "carries": nc,
             "body_args": len(body.inputs) - nc, "snapshots": snapshots,
             "avals": tuple((tuple(s), d) for s, d in vjp.avals(vjp.outputs))}
    return call_results(graph, "while_vjp", operands, attrs)


# -- the stanzas --------------------------------------------------------------------------------

_WHILE = sig("*operands", cond_fun=None, body_fun=None, carries=0, body_args=0, dtypes=(),
             snapshots=DEFAULT_SNAPSHOTS)
_VJP = sig("*operands", body_fun=None, vjp_fun=None, carries=0, body_args=0,
           snapshots=DEFAULT_SNAPSHOTS, avals=())


def _check(what: str, got: list, want: list, first: int) -> None:
    if len(got) != len(want):
        raise ShapeError(f"{what}: takes {len(want)} values, the call gives {len(got)}")
    for k, ((s, d), (ws, wd)) in enumerate(zip(got, want)):
        if tuple(s) != tuple(ws) or d != wd:
            raise ShapeError(f"{what}: operand {first + k} has shape {fmt(s)} {d}, the loop "
                             f"reads {fmt(ws)} {wd}")


def _infer_while(shapes, dtypes, attrs):
    cond, body, nc = attrs["cond_fun"], attrs["body_fun"], attrs["carries"]
    if not isinstance(cond, Body) or not isinstance(body, Body):
        raise ShapeError("while_loop: cond_fun and body_fun must be traced bodies (use "
                         "sg.while_loop)")
    got = list(zip(shapes, dtypes))
    kb = attrs["body_args"]
    if kb != len(body.inputs) - nc or tuple(attrs["dtypes"]) != tuple(
            d for _, d in body.avals()[:nc]):
        raise ShapeError("while_loop: body_args and dtypes must match body_fun's inputs")
    _check("while_loop: body_fun", got[:nc + kb], body.avals(), 0)
    _check("while_loop: cond_fun", got[:nc] + got[nc + kb:], cond.avals(), 0)
    if cond.avals(cond.outputs) != [((), "bool")]:
        raise ShapeError("while_loop: cond_fun must return a boolean scalar")
    if body.avals(body.outputs) != body.avals()[:nc]:
        raise ShapeError("while_loop: body_fun must return carries of init's shapes and "
                         "dtypes")
    return results_of([*body.avals()[:nc], ((), "int64")])


def _infer_vjp(shapes, dtypes, attrs):
    body, vjp, nc = attrs["body_fun"], attrs["vjp_fun"], attrs["carries"]
    if not isinstance(body, Body) or not isinstance(vjp, Body):
        raise ShapeError("while_vjp: built by the reverse mode of sg.while_loop only")
    if shapes[:1] != ((),) or dtypes[0] != "int64":
        raise ShapeError("while_vjp: operand 0 must be the trip count (an int64 scalar)")
    got = list(zip(shapes[1:], dtypes[1:]))
    _check("while_vjp", got, vjp.avals(), 1)
    if attrs["body_args"] != len(body.inputs) - nc or attrs["snapshots"] < 1:
        raise ShapeError("while_vjp: body_args must match body_fun, snapshots be >= 1")
    avals = attrs["avals"]
    if vjp.avals(vjp.outputs) != [(tuple(s), d) for s, d in avals]:
        raise ShapeError("while_vjp: avals must be the reverse step's results")
    return results_of(avals)


def _examples(rng) -> list:
    from ..ir.body import trace
    from ..ir.expr import F

    # halve a vector until its norm is below a bound, counting the steps
    body, _ = trace(lambda c, n, k: [c * k, n + 1], [((3,), "float64"), ((), "int64"),
                                                     ((), "float64")])
    cond, _ = trace(lambda c, n, b: [F.sum(c * c) > b], [((3,), "float64"), ((), "int64"),
                                                          ((), "float64")])
    attrs = {"cond_fun": cond, "body_fun": body, "carries": 2, "body_args": 1,
             "dtypes": ("float64", "int64")}
    c = rng.uniform(1.0, 2.0, 3)
    return [([c, np.int64(0), np.float64(0.5), np.float64(0.01)], attrs)]


def _vjp_examples(rng) -> list:
    from ..ir.body import trace
    from ..ir.expr import F

    # c -> c * k reversed over 5 steps: cbar -> cbar * k, kbar += cbar . c
    avals = [((3,), "float64"), ((), "float64")]
    body, _ = trace(lambda c, k: [c * k], avals)
    vjp, _ = trace(lambda c, k, g: [g * k, F.sum(g * c)], [*avals, ((3,), "float64")])
    attrs = {"body_fun": body, "vjp_fun": vjp, "carries": 1, "body_args": 1,
             "avals": (((3,), "float64"), ((), "float64"))}
    c, k, g = rng.uniform(-1.0, 1.0, 3), np.float64(0.9), rng.uniform(-1.0, 1.0, 3)
    return [([np.int64(5), c, k, g], attrs), ([np.int64(40), c, k, g],
                                              {**attrs, "snapshots": 2})]


WHILE_LOOP = register(Op(
    name="while_loop", signature=_WHILE, infer=_infer_while, impl=run_while, public=False,
    differentiable=False, domain=None, examples=_examples,
    rules="symgrad.transforms.while_loop",
    doc="a loop run while a traced condition holds (jax.lax.while_loop's meaning; see "
        "sg.while_loop): its final carries and its trip count"))

WHILE_VJP = register(Op(
    name="while_vjp", signature=_VJP, infer=_infer_vjp, impl=run_while_vjp, public=False,
    differentiable=False, domain=None, examples=_vjp_examples,
    rules="symgrad.transforms.while_loop",
    doc="the reverse sweep of a while_loop, by binomial checkpointing: the cotangents of "
        "its initial carries and captured values"))
