"""``sg.while_loop`` under ``backend="numba"``: its forward loop one compiled function.

The NumPy target runs a while loop as the run-time loop ``_sg_while`` over two callbacks
(the condition and the step, module-level functions: :mod:`symgrad.backends.callbacks`),
and its reverse sweep as ``_sg_while_vjp`` over the step and its vector-Jacobian product
(:mod:`symgrad.ops.while_loop`). Here, where every op of the condition and of the step has
a form inside compiled code (:func:`.loops.missing`), the callbacks are ``numba.njit``
functions (typed at their first call) and the loop itself is a compiled function per
while loop, ``_sg_whileN_run`` (the loop alone) and ``_sg_whileN_rec`` (the loop recording
the tape of its reverse sweep: the same online placement of at most ``snapshots``
carries, Wang, Moin and Iaccarino's levels, as ``_sg_while``), called by a Python
function ``_sg_whileN`` of ``_sg_while``'s signature that gives the tape and the results
in the NumPy target's form. The reverse sweep stays ``_sg_while_vjp``, calling the
compiled step and vector-Jacobian product (0-d arrays handed to them as scalars).
Where an op lacks a compiled form the loop is the NumPy target's, and the module's
statistics say so.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> y = sg.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
>>> src = sg.to_source(y, backend="numba")
>>> print(src[src.index("@_jit\\ndef _sg_while1_run"):src.index("@_jit\\ndef _sg_while1_rec")])
@_jit
def _sg_while1_run(c0, k0):
    \"\"\"while_loop: the loop over its compiled condition and step (symgrad).\"\"\"
    n = 0
    while _sg_fn1(c0):
        _r = (_sg_fn2(c0, k0),)
        c0 = np.float64(_r[0])
        n += 1
    return (c0, n)
<BLANKLINE>
<BLANKLINE>
<BLANKLINE>
"""

from __future__ import annotations

from typing import Any

from ...lines import call
from ..numpy.table import NUMPY_TYPE

__all__ = ["SCALARS", "SPLIT", "WHILE_OPS", "callback_names", "is_while", "loop_functions",
           "sweep_functions"]

#: the module helper handing 0-d arrays to compiled callbacks as scalars (the reverse sweep
#: passes its cotangents as 0-d arrays; a compiled step reads a 0-d value as a scalar)
SCALARS = ["def _sg_scalars(f):",
           '    """``f`` (a compiled callback) called with 0-d arrays as scalars."""',
           "    def g(*args):",
           "        return f(*[a[()] if type(a) is np.ndarray and a.ndim == 0 else a "
           "for a in args])",
           "    return g"]

#: Revolve's split (as ``_sg_while_vjp``'s), compiled: how far ahead of a carry to store
#: the next of ``free`` carries reversing ``length`` steps
SPLIT = ["@_jit",
         "def _sg_split(length, free):",
         '    """Revolve\'s split of ``length`` steps with ``free`` carries (symgrad)."""',
         "    t, beta = 0, 1",
         "    while beta < length:",
         "        t += 1",
         "        beta = beta * (free + 1 + t) // t",
         "    left = beta * t // (free + 1 + t)",
         "    right = beta * (free + 1) // (free + 1 + t)",
         "    lower = left * (t - 1) // (free + t)",
         "    return max(1, length - right, lower)"]


def loop_functions(name: str, cond: str, step: str, avals: list[tuple[tuple, str]],
                   nk: int, nq: int) -> list[str]:
    """The lines of ``name`` (``_sg_while``'s signature), ``name_run`` and ``name_rec``
    for a while loop of condition ``cond`` and step ``step`` (compiled callbacks), carries
    of ``avals`` (shape, dtype), ``nk`` values the step captures and ``nq`` the
    condition's."""
    nc = len(avals)
    cs = [f"c{j}" for j in range(nc)]
    ks, qs = [f"k{j}" for j in range(nk)], [f"q{j}" for j in range(nq)]
    params = [*cs, *ks, *qs]
    call_cond = f"{cond}({', '.join([*cs, *qs])})"
    call_step = f"{step}({', '.join([*cs, *ks])})"
    stepped = f"_r = {call_step}" if nc > 1 else f"_r = ({call_step},)"
    moves = [f"{c} = {_own(f'_r[{j}]', s, d)}" for j, (c, (s, d)) in enumerate(zip(cs, avals))]
    run = ["@_jit", *call(f"def {name}_run(", params, "):", ""),
           '    """while_loop: the loop over its compiled condition and step (symgrad)."""',
           "    n = 0", f"    while {call_cond}:", f"        {stepped}",
           *(f"        {m}" for m in moves), "        n += 1",
           f"    return ({', '.join([*cs, 'n'])})"]
    hs, kept = [f"h{j}" for j in range(nc)], [f"kept{j}" for j in range(nc)]
    rec = ["@_jit", *call(f"def {name}_rec(", [*params, "record"], "):", ""),
           '    """while_loop: the loop recording at most ``record`` carries online (as '
           '_sg_while) (symgrad)."""',
           "    n, hn, hl, used = 0, 0, 0, 0",
           "    where = np.zeros(record, dtype=np.int64)",
           *(f"    kept{j} = [{c} for _ in range(record)]" for j, c in enumerate(cs)),
           "    spots = [0 for _ in range(0)]",
           "    levels = [0 for _ in range(0)]",
           "    spare = [0 for _ in range(0)]",
           *(f"    {h} = {c}" for h, c in zip(hs, cs)),
           f"    while {call_cond}:",
           "        if n:",
           "            if len(spare) > 0 or used < record - 1 or hn == 0:",
           "                if hn:",
           "                    j = spare.pop() if len(spare) > 0 else used",
           "                    if j == used:",
           "                        used += 1",
           "                    where[j] = hn",
           *(f"                    kept{j}[j] = {h}" for j, h in enumerate(hs)),
           "                    spots.append(j)",
           "                    levels.append(hl)",
           "                hl = 0",
           "            else:",
           "                if len(levels) > 0 and levels[-1] == hl:",
           "                    while len(levels) > 0 and levels[-1] == hl:",
           "                        levels.pop()",
           "                        spare.append(spots.pop())",
           "                    spare.reverse()",
           "                hl += 1",
           *(f"            {h} = {c}" for h, c in zip(hs, cs)),
           "            hn = n",
           f"        {stepped}",
           *(f"        {m}" for m in moves), "        n += 1",
           f"    return ({', '.join([*cs, 'n', 'where', *kept, 'used', 'hn', *hs])})"]
    init = [_initial(f"carries[{j}]", s, d) for j, (s, d) in enumerate(avals)]
    back = f"tuple(np.asarray(v, dtype=d) for v, d in zip(_o[:{nc}], dtypes))"
    wrapper = [
        f"def {name}(cond, step, carries, ks, kcs, dtypes, record=0):",
        f'    """_sg_while over {cond} and {step}: {name}_run, or {name}_rec with the tape '
        '(symgrad)."""',
        *call("_c = (", init, ",)" if nc == 1 else ")"),
        f"    ks, kcs = {_SCALAR_ARGS % 'ks'}, {_SCALAR_ARGS % 'kcs'}",
        "    if not record:",
        f"        _o = {name}_run(*_c, *ks, *kcs)",
        f"        return (*{back}, np.int64(_o[{nc}]))",
        f"    _o = {name}_rec(*_c, *ks, *kcs, record)",
        f"    where, kept, used, hn = _o[{nc + 1}], _o[{nc + 2}:{2 * nc + 2}], "
        f"_o[{2 * nc + 2}], _o[{2 * nc + 3}]",
        f"    held = tuple(_o[{2 * nc + 4}:])",
        "    tape = dict(sorted([(int(where[j]), tuple(k[j] for k in kept)) "
        "for j in range(used)] + [(hn, held)] * (hn > 0)))",
        f"    return (*{back}, np.int64(_o[{nc}]), [tape])"]
    return [*run, "", "", *rec, "", "", *wrapper]


# captured values as compiled callbacks read them: a 0-d array as a scalar
_SCALAR_ARGS = "tuple(v[()] if type(v) is np.ndarray and v.ndim == 0 else v for v in %s)"


def _own(value: str, shape: tuple, dtype: str) -> str:
    """A new carry of one type across the steps: a C-contiguous array, or a scalar of
    its dtype."""
    return f"np.ascontiguousarray({value})" if shape else f"{NUMPY_TYPE[dtype]}({value})"


def _held(value: str, shape: tuple, dtype: str) -> str:
    """A stored carry as the compiled sweep takes it: of one type with the others (a
    writable C-contiguous array: copied only where it is not one), or a scalar."""
    if shape:
        return f"np.require({value}, {NUMPY_TYPE[dtype]}, 'CW')"
    return f"{NUMPY_TYPE[dtype]}({value})"


def _initial(value: str, shape: tuple, dtype: str) -> str:
    """An initial carry as the compiled loop takes it: an array of its own (writable,
    C-contiguous: the step's results are), or a scalar of its dtype."""
    if shape:
        return f"np.array({value}, dtype={NUMPY_TYPE[dtype]}, order='C')"
    return f"{NUMPY_TYPE[dtype]}({value})"


WHILE_OPS = frozenset({"while_loop", "while_vjp"})  # a while loop, its reverse sweep


def is_while(n: Any) -> bool:
    """Whether node ``n`` is a while loop or its reverse sweep."""
    return n.op in WHILE_OPS


def callback_names(text: str) -> list[str]:
    """The two callbacks a while loop's (or sweep's) call ``text`` passes first."""
    head = text[text.index("(") + 1:]
    return [name.strip() for name in head.split(",", 2)[:2]]


def sweep_functions(name: str, step: str, vjp: str, avals: list[tuple[tuple, str]], nk: int,
                    outs: list[tuple[tuple, str]], nf: int, one: bool) -> list[str]:
    """The lines of ``name`` (``_sg_while_vjp``'s signature) and ``name_sweep``: the
    reverse sweep of a while loop (carries of ``avals``, ``nk`` captured values) by its
    compiled ``step`` and vector-Jacobian product ``vjp`` (``one``: which returns one value,
    not a tuple), results of ``outs`` (shape, dtype): the ``nf`` float carries' cotangents
    then the captured values'. As ``_sg_while_vjp``: each stretch between the tape's
    carries reversed, last first, by Revolve in the slots the stored ones leave."""
    nc = len(avals)
    cs, ks = [f"c{j}" for j in range(nc)], [f"k{j}" for j in range(nk)]
    bs, acc = [f"b{j}" for j in range(nf)], [f"a{j}" for j in range(len(outs) - nf)]
    ps, ss = [f"p{j}" for j in range(nc)], [f"s{j}" for j in range(nc)]
    call_step = f"{step}({', '.join([*cs, *ks])})"
    stepped = f"_r = {call_step}" if nc > 1 else f"_r = ({call_step},)"
    moves = [f"{c} = {_own(f'_r[{j}]', s, d)}" for j, (c, (s, d)) in enumerate(zip(cs, avals))]
    call_vjp = f"{vjp}({', '.join([*cs, *ks, *bs])})"

    def ahead(count: str, lead: str) -> list[str]:
        return [f"{lead}for _ in range({count}):", f"{lead}    {stepped}",
                *(f"{lead}    {m}" for m in moves)]

    zeros = [f"    {a} = " + (f"np.zeros({s!r}, dtype={NUMPY_TYPE[d]})" if s
                              else f"{NUMPY_TYPE[d]}(0)")
             for a, (s, d) in zip(acc, outs[nf:])]
    sweep = [
        "@_jit", *call(f"def {name}_sweep(", ["count", "snapshots", "pat", *ps, *ks, *bs],
                       "):", ""),
        '    """while_vjp: the reverse sweep over the compiled step and product (symgrad)."""',
        *zeros,
        "    npts = len(pat)",
        "    end = count",
        "    while npts > 0:",
        "        npts -= 1",
        "        base = pat[npts]",
        "        free = snapshots - npts",
        "        sat = [base]",
        # (popped: a stretch reversed, its carry is released, as _sg_while_vjp's)
        *(f"        {sj} = [{pj}.pop()]" for sj, pj in zip(ss, ps)),
        "        while end > base:",
        "            at = sat[-1]",
        *(f"            {c} = {sj}[-1]" for c, sj in zip(cs, ss)),
        "            if end - at > 1:",
        "                if len(sat) <= free:",
        "                    m = at + _sg_split(end - at, free - len(sat) + 1)",
        *ahead("m - at", "                    "),
        "                    sat.append(m)",
        *(f"                    {sj}.append({c})" for sj, c in zip(ss, cs)),
        "                    continue",
        *ahead("end - 1 - at", "                "),
        f"            _g = ({call_vjp},)" if one else f"            _g = {call_vjp}",
        *(f"            {b} = {_own(f'_g[{j}]', s, d)}"
          for j, (b, (s, d)) in enumerate(zip(bs, outs))),
        *(f"            {a} += _g[{nf + j}]" for j, a in enumerate(acc)),
        "            end -= 1",
        "            if at == end:",
        "                sat.pop()",
        *(f"                {sj}.pop()" for sj in ss),
        f"    return ({', '.join([*bs, *acc])}{',' if nf + len(acc) == 1 else ''})"]
    pts = [f"numba.typed.List([{_held('v', s, d)} for v in "
           f"[carries[{j}], *(c[{j}] for c in stored.values())]])"
           for j, (s, d) in enumerate(avals)]
    seeds = [_initial(f"seeds[{j}]", s, d) for j, (s, d) in enumerate(outs[:nf])]
    wrapper = [
        f"def {name}(step, vjp, snapshots, count, carries, ks, seeds, avals, tape=None, "
        "rows=(), batch=0):",
        f'    """_sg_while_vjp over {step} and {vjp}: {name}_sweep (symgrad)."""',
        "    stored = tape.pop() if tape else {}",
        "    pat = np.array([0, *stored], dtype=np.int64)",
        *call("_p = (", pts, ",)" if nc == 1 else ")"),
        "    stored.clear()",
        f"    ks = {_SCALAR_ARGS % 'ks'}",
        *call("_o = " + f"{name}_sweep(np.int64(count), np.int64(snapshots), pat, *_p, *ks, ",
              seeds, ")"),
        "    return tuple(np.asarray(v, dtype=d) for v, (_, d) in zip(_o, avals))"]
    return [*sweep, "", "", *wrapper]
