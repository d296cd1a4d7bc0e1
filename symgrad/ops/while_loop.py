"""The loop op ``while_loop`` (``jax.lax.while_loop``'s meaning) and its reverse sweep
``while_vjp``.

``while_loop`` is one call with several results: the final carries, the number of steps it
ran (an int64 scalar), then, when its ``tape`` attribute asks for it (reverse mode's call;
:attr:`~symgrad.ir.op.Op.selects`, so the value's call and reverse mode's are one run), the
tape: an opaque value (dtype ``object``, a Python list) that only ``while_vjp`` reads. Its
attributes are two traced bodies, ``cond_fun`` (carries, its captured values -> a bool
scalar) and ``body_fun`` (carries, its captured values -> the new carries), and
``carries``; its operands the initial carries, then the values ``body_fun`` captured, then
those ``cond_fun`` captured. Both bodies are printed as functions of their own
(:mod:`symgrad.backends.callbacks`) that the run-time loop :func:`_sg_while` calls: the
trip count is a run-time value, nothing about it is static.

Recording, the loop stores at most ``snapshots`` of the carries it passes, placed online
with no bound known in advance by the dynamic checkpointing of Wang, Moin and Iaccarino
("Minimal repetition dynamic checkpointing algorithm for unsteady adjoint calculation", SIAM
J. Sci. Comput. 31(4), 2009; the online problem of Stumm and Walther, SIAM J. Sci. Comput.
32(2), 2010): each carry is stored as it arrives, in a free slot or in place of a
dispensable one, the positions kept such that no step is run forward more often than
Revolve would with the trip count known.

``while_vjp`` is the reverse sweep of one such loop: for the cotangents ``seeds`` of the
final float carries it gives those of the initial float carries and of the captured values
``wrt`` names. Its run (:func:`_sg_while_vjp`) takes the tape, reverses the stretch after
its last carry, drops that carry, and so on back to the initial carries; each stretch is
reversed by binomial checkpointing (Griewank and Walther's Revolve, ACM TOMS 26(1), 2000)
in the slots the stored carries leave free. The memory is ``snapshots + 1`` carries (and
the few one step and its reverse hold) whatever the trip count; the forward steps of the
loop and the sweep together are at most one pass more than Revolve's optimum, ``t T -
C(snapshots + 1 + t, t - 1)`` for ``T`` steps (``t`` the smallest with ``C(snapshots + 1
+ t, t) >= T``: :func:`revolve_repeats` with ``snapshots + 1``), within 15% of it from
100 steps on. ``wrt`` values the step reads one row of (a scan's ``xs``) get one row of
cotangent per step, added in place (:func:`row_reads`). A tape already
read (a second sweep of the same loop) or none: the sweep runs from the initial carries,
Revolve's schedule exactly. Its own derivative is refused (a second derivative of a
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
from ..ir.shapes import TAPE, fmt

__all__ = ["DEFAULT_SNAPSHOTS", "WHILE_LOOP", "WHILE_VJP", "revolve_repeats", "row_reads",
           "run_while",
           "run_while_vjp", "while_call", "while_vjp_call"]



# -- run time (emitted as they are by the NumPy target) ------------------------------------------

def _sg_while(cond, step, carries, ks, kcs, dtypes, record=0):
    """``while cond(*c, *kcs): c = step(*c, *ks)`` from ``carries``: the final carries (as
    ``dtypes``) and the number of steps run; with ``record`` > 0 also the tape, a list
    holding ``{step index: carry entering it}``, at most ``record`` carries placed online
    (dynamic checkpointing: :func:`_sg_while_vjp` reads it)."""
    import numpy as np

    c = tuple(carries)
    one = len(c) == 1
    n = 0
    if not record:
        while cond(*c, *kcs):
            out = step(*c, *ks)
            c = (np.array(out) if type(out) is list else out,) if one else out
            n += 1
        return (*(np.asarray(v, dtype=d) for v, d in zip(c, dtypes)), np.int64(n))
    # Wang, Moin & Iaccarino's levels: every carry is stored on arrival, as level 0 while a
    # slot is free or a stored one is dispensable (a later one has a higher level: the most
    # recent such goes), else in place of the last one with that one's level + 1. The last
    # one (`held`, at `hn`, level `hl`) is only a name until a later one arrives beside it.
    where, kept = [0] * record, [None] * record  # the slots: step index, carry
    spots, levels = [], []  # the slots not dispensable, by index: levels non-increasing
    spare = []  # the dispensable slots, the most recent last
    held, hn, hl, used = None, 0, 0, 0
    while cond(*c, *kcs):
        if n:
            if spare or used < record - 1 or not hn:
                if hn:  # the last one stays: into a dispensable slot, else a free one
                    j = spare.pop() if spare else used
                    used += j == used
                    where[j], kept[j] = hn, held
                    spots.append(j)
                    levels.append(hl)
                hl = 0
            else:  # replaced: the ones of its level before it become dispensable
                if levels and levels[-1] == hl:
                    while levels and levels[-1] == hl:
                        levels.pop()
                        spare.append(spots.pop())
                    spare.reverse()
                hl += 1
            held, hn = c, n
        out = step(*c, *ks)
        c = (np.array(out) if type(out) is list else out,) if one else out
        n += 1
    kept = dict(sorted([(where[j], kept[j]) for j in range(used)] + [(hn, held)] * (hn > 0)))
    return (*(np.asarray(v, dtype=d) for v, d in zip(c, dtypes)), np.int64(n), [kept])


def _sg_while_vjp(step, vjp, snapshots, count, carries, ks, seeds, avals, tape=None, rows=(),
                  batch=0):
    """The reverse sweep of ``count`` steps of ``step`` from ``carries``: ``vjp(*c, *ks,
    *cbar) -> (cbar', kbar)`` run from the last step to the first on the carry entering
    each. Each stretch between two carries of ``tape`` (what the forward loop recorded; it
    is emptied as read, a tape already read or none meaning the first carry only) is
    reversed, last first, by binomial checkpointing (Revolve) in the slots of ``snapshots``
    the stored ones leave. ``vjp``'s results ``rows`` are one row's cotangent, added at
    the index its extra results give (after ``batch`` axes). Returns the cotangents, of
    ``(shape, dtype)`` ``avals``: the initial float carries' then the captured values'."""
    import numpy as np

    nf = len(seeds)
    one = len(carries) == 1

    def ahead(c, k):  # k steps from carry c
        for _ in range(k):
            out = step(*c, *ks)
            c = (np.array(out) if type(out) is list else out,) if one else out
        return c

    def split(length, free):  # Revolve: how far ahead to store the next of `free` carries
        # the split where t (the steps' most forward runs) is the least, the left part's
        # runs t - 1 and the right's t: the total t * length - C(free + 1 + t, t - 1)
        t, beta = 0, 1  # beta = C(free + 1 + t, t)
        while beta < length:
            t += 1
            beta = beta * (free + 1 + t) // t
        left = beta * t // (free + 1 + t)  # C(free + t, t - 1): the left part's most
        right = beta * (free + 1) // (free + 1 + t)  # C(free + t, t): one fewer carry's
        lower = left * (t - 1) // (free + t)  # C(free + t - 1, t - 2)
        return max(1, length - right, lower)

    outs = [np.zeros(s, dtype=d) for s, d in avals]
    cbar = tuple(np.asarray(g, dtype=d) for g, (_, d) in zip(seeds, avals))
    sums = [(j, len(outs) + rows.index(j) if j in rows else -1) for j in range(nf, len(outs))]
    lead = (slice(None),) * batch
    stored = tape.pop() if tape else {}
    points = [(0, tuple(carries)), *stored.items()]
    stored.clear()
    end = int(count)
    while points:
        base = points.pop()
        free = snapshots - len(points)  # the carries besides those stored
        stack = [base]
        while end > base[0]:
            at, c = stack[-1]
            if end - at > 1:
                if len(stack) <= free:
                    m = at + split(end - at, free - len(stack) + 1)
                    stack.append((m, ahead(c, m - at)))
                    continue
                c = ahead(c, end - 1 - at)  # no slot free: Revolve runs on from here
            got = vjp(*c, *ks, *cbar)
            got = got if type(got) is tuple else (got,)
            cbar = got[:nf]
            for j, r in sums:  # the sums are this sweep's own arrays: added in place
                if r < 0:
                    outs[j] += got[j]
                else:
                    outs[j][(*lead, got[r])] += got[j]
            end -= 1
            if at == end:
                stack.pop()
    outs[:nf] = cbar
    return tuple(np.asarray(v, dtype=d) for v, (_, d) in zip(outs, avals))


def revolve_repeats(steps: int, snapshots: int) -> int:
    """The smallest ``t`` with ``C(snapshots + t, t) >= steps``: about how many times the
    reverse sweep of :func:`_sg_while_vjp` runs a step forward (the initial carry is one
    more stored state).

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
              dtypes: tuple, snapshots: int = DEFAULT_SNAPSHOTS, tape: tuple = ()) -> tuple:
    """Every result of a ``while_loop`` call over ``arrays`` (its operands)."""
    nc, kb = carries, carries + body_args
    arrays = [np.asarray(a) for a in arrays]
    with np.errstate(all="ignore"):
        return _sg_while(_Fn(cond_fun), _Fn(body_fun), arrays[:nc], arrays[nc:kb],
                         arrays[kb:], dtypes, snapshots if tape else 0)


def run_while_vjp(*arrays: Any, body_fun: Body, vjp_fun: Body, carries: int, body_args: int,
                  snapshots: int, avals: tuple, taped: bool = False, rows: tuple = (),
                  batch: int = 0) -> tuple:
    """Every result of a ``while_vjp`` call: operands the tape (``taped``), the trip count,
    the initial carries, the values ``body_fun`` captured, then the seeds."""
    tape = arrays[0] if taped else None
    arrays = [np.asarray(a) for a in arrays[int(taped):]]
    kb = 1 + carries + body_args
    with np.errstate(all="ignore"):
        return _sg_while_vjp(_Fn(body_fun), _Fn(vjp_fun), snapshots, arrays[0],
                             arrays[1:1 + carries], arrays[1 + carries:kb], arrays[kb:],
                             avals, tape, rows, batch)


def row_reads(body: Body, nc: int, wrt_k: tuple[int, ...]) -> dict[int, int]:
    """The captured values among ``wrt_k`` that loop step ``body`` reads only as one row
    ``k[i]`` at a run-time index (a scan's ``xs``): each one's ``index`` node. Their
    cotangent per step is that row's (the reverse step of
    :mod:`symgrad.transforms.while_loop`), added in place by the sweep (linear in the steps,
    where a whole array per step would be quadratic)."""
    nodes = body.graph.nodes
    uses: dict[int, list[int]] = {}
    for n in nodes:
        for a in set(n.args):
            uses.setdefault(a, []).append(n.id)
    found = {}
    for i in wrt_k:
        users = uses.get(body.inputs[nc + i], [])
        if len(users) != 1 or body.inputs[nc + i] in body.outputs:
            continue
        n = nodes[users[0]]
        attrs = n.attrs or {}
        key = attrs.get("key", ())
        if (n.op == "index" and n.args[:1] == (body.inputs[nc + i],) and len(n.args) == 2
                and n.args[1] != n.args[0] and attrs.get("batch", 0) == 0
                and key[:1] == ("@",) and all(k == slice(None) for k in key[1:])
                and nodes[n.args[1]].shape == ()
                and nodes[n.args[1]].dtype in ("int64", "int32")):
            found[i] = n.id
    return found


# -- building the calls ------------------------------------------------------------------------

def while_vjp_call(graph: Any, body: Body, vjp: Body, nc: int, operands: Sequence[Expr],
                   snapshots: int, taped: bool = False, rows: tuple[int, ...] = (),
                   batch: tuple = (), avals: Sequence | None = None) -> tuple[Expr, ...]:
    """The results of the reverse sweep of ``body`` by its backward step ``vjp`` over
    ``operands`` (the forward call's tape if ``taped``, the trip count, the initial
    carries, ``body``'s captured values, the seeds), built in ``graph``; ``vjp`` gives, for
    its results ``rows``, the cotangent of one row (of the index its last results give,
    after the ``batch`` axes), the results ``(shape, dtype)`` ``avals``."""
    avals = vjp.avals(vjp.outputs) if avals is None else avals
    attrs = {"body_fun": body, "vjp_fun": vjp, "carries": nc,
             "body_args": len(body.inputs) - nc, "snapshots": snapshots,
             "avals": tuple((tuple(s), d) for s, d in avals), "taped": taped,
             "rows": tuple(rows), "batch": len(batch)}
    return call_results(graph, "while_vjp", operands, attrs)


# -- the stanzas --------------------------------------------------------------------------------

_WHILE = sig("*operands", cond_fun=None, body_fun=None, carries=0, body_args=0, dtypes=(),
             snapshots=DEFAULT_SNAPSHOTS, tape=())
_VJP = sig("*operands", body_fun=None, vjp_fun=None, carries=0, body_args=0,
           snapshots=DEFAULT_SNAPSHOTS, avals=(), taped=False, rows=(), batch=0)


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
    if tuple(attrs["tape"]) not in ((), ("tape",)):
        raise ShapeError("while_loop: tape must be () or ('tape',) (reverse mode's record)")
    return results_of([*body.avals()[:nc], ((), "int64"), *[((), TAPE)] * len(attrs["tape"])])


def _infer_vjp(shapes, dtypes, attrs):
    body, vjp, nc = attrs["body_fun"], attrs["vjp_fun"], attrs["carries"]
    if not isinstance(body, Body) or not isinstance(vjp, Body):
        raise ShapeError("while_vjp: built by the reverse mode of sg.while_loop only")
    first = int(bool(attrs["taped"]))
    if first and (shapes[0] != () or dtypes[0] != TAPE):
        raise ShapeError("while_vjp: operand 0 must be a while_loop's tape")
    if shapes[first:first + 1] != ((),) or dtypes[first] != "int64":
        raise ShapeError(f"while_vjp: operand {first} must be the trip count (an int64 "
                         "scalar)")
    got = list(zip(shapes[first + 1:], dtypes[first + 1:]))
    _check("while_vjp", got, vjp.avals(), first + 1)
    if attrs["body_args"] != len(body.inputs) - nc or attrs["snapshots"] < 1:
        raise ShapeError("while_vjp: body_args must match body_fun, snapshots be >= 1")
    avals, rows, nb = attrs["avals"], tuple(attrs["rows"]), attrs["batch"]
    want = [(tuple(s[:nb] + s[nb + 1:]) if j in rows else tuple(s), d)
            for j, (s, d) in enumerate(avals)]
    got = vjp.avals(vjp.outputs)
    if (got[:len(avals)] != want or len(got) != len(avals) + len(rows)
            or any(d not in ("int64", "int32") or s != () for s, d in got[len(avals):])):
        raise ShapeError("while_vjp: avals must be the reverse step's results (a row's of "
                         "those in rows, then their indices)")
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
    differentiable=False, domain=None, examples=_examples, selects="tape",
    rules="symgrad.transforms.while_loop",
    doc="a loop run while a traced condition holds (jax.lax.while_loop's meaning; see "
        "sg.while_loop): its final carries and its trip count"))

WHILE_VJP = register(Op(
    name="while_vjp", signature=_VJP, infer=_infer_vjp, impl=run_while_vjp, public=False,
    differentiable=False, domain=None, examples=_vjp_examples,
    rules="symgrad.transforms.while_loop",
    doc="the reverse sweep of a while_loop, by binomial checkpointing: the cotangents of "
        "its initial carries and captured values"))
