"""Scatter loops folded into the loop that produces their operands, before translation.

The Numba target writes a gradient's sum of shifted slices (``x[1:] `` and ``x[:-1]``'s
adjoints) as local arrays a loop fills, a zeroed result, then one loop per part adding it
in::

    t = np.empty((n,), dtype=np.float64)
    for i in range(n):
        ...
        t[i] = v
    out = np.zeros((m,), dtype=np.float64)
    for j in range(n):
        out[c + j] += t[j]

:func:`fused_scatters` writes ``out = np.zeros(...)`` before the producing loop and
``out[c + i] += v`` in place of ``t[i] = v``: no local array, one loop instead of several
(less for the C compiler to optimize, and less memory traffic). It applies only where the
result is bit-identical: float64 arrays; ``t`` used nowhere else; ``out`` not used between
its zeroing and the loops adding into it, every one of which is folded; indices
``j + c`` with literal ``c`` (each element of ``out`` gets one term per part), and each
element's terms added in the same order: the parts' offsets ``c`` do not increase along
the loops (then the earlier part's term comes at an earlier iteration, or at the same one
earlier in the loop's body), or there are at most two parts (``(0 + a) + b == (0 + b) + a``
in IEEE arithmetic).

>>> import ast
>>> src = '''
... def k(x):
...     t = np.empty((3,), dtype=np.float64)
...     for i in range(3):
...         v = x[i] * 2.0
...         t[i] = v
...     out = np.zeros((4,), dtype=np.float64)
...     for j in range(3):
...         out[1 + j] += t[j]
...     return out
... '''
>>> fn = ast.parse(src).body[0]
>>> print(ast.unparse(fused_scatters(fn.body, ["out"])))
out = np.zeros((4,), dtype=np.float64)
for i in range(3):
    v = x[i] * 2.0
    out[1 + i] += v
return out
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["fused_scatters"]

_WORD = re.compile(r"[A-Za-z_]\w*")


def fused_scatters(body: list[ast.stmt], outputs: list[str], text: str | None = None,
                   returned: Iterable[str] = ()) -> list[ast.stmt]:
    """``body`` with each zeroed array's scatter loops folded into the loop producing
    their operands, where the result is the same (see the module); ``outputs``: the names
    the function hands back (never folded away); ``text``: the source of ``body``, where
    given, and ``returned`` the names its returns read: each name's uses outside returns
    are its words in the text less those (cheaper than walking the tree; a word counted
    that is no name can only prevent a fold)."""
    if not any(_zeros(s) is not None and _scatter(t, s.targets[0].id) is not None
               for s, t in zip(body, body[1:])):
        return body  # (the common case: nothing to fold, no walk)
    if text is not None:
        uses = Counter(_WORD.findall(text))
        uses.subtract(returned)
    else:
        uses = Counter(n.id for s in body if not isinstance(s, ast.Return)
                       for n in ast.walk(s) if isinstance(n, ast.Name))
    # one pass: a fold changes the counts of its own names only (the others' stay right)
    new: list[ast.stmt] = []
    made: dict[str, ast.Assign] = {}  # the arrays allocated so far
    dropped: set[int] = set()
    k = 0
    while k < len(body):
        s = body[k]
        name = _zeros(s)
        if name is not None and new and isinstance(new[-1], ast.For):
            end, folded = _fold(new[-1], body, k, uses, outputs, made)
            if folded is not None:  # the zeroing before the loop, which now adds into it
                dropped.update(id(made[t]) for t in folded[1])
                new[-1:] = [s, folded[0]]
                k = end
                continue
        if name is not None:
            made[name] = s
        new.append(s)
        k += 1
    return [s for s in new if id(s) not in dropped]


def _zeros(s: ast.stmt) -> str | None:
    """The name ``s`` binds to a float64 ``np.zeros``/``np.empty`` call (None: not one)."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call)):
        return None
    f = s.value.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            and f.value.id == "np" and f.attr in ("zeros", "empty")):
        return None
    kw = {k.arg: k.value for k in s.value.keywords}
    dt = kw.get("dtype")
    if not (isinstance(dt, ast.Attribute) and dt.attr == "float64"):
        return None
    return s.targets[0].id


def _vector(s: ast.Assign) -> bool:
    """Whether allocation ``s`` makes a 1-d array (its shape a literal ``(n,)``)."""
    shape = s.value.args[0] if s.value.args else None
    return (isinstance(shape, ast.Tuple) and len(shape.elts) == 1
            and isinstance(shape.elts[0], ast.Constant) and type(shape.elts[0].value) is int)


def _range(loop: ast.stmt) -> tuple[str, str] | None:
    """``(loop variable, range text)`` of ``for v in range(<literal>):`` (None: other)."""
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
            and not loop.orelse and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"
            and len(loop.iter.args) == 1 and not loop.iter.keywords
            and isinstance(loop.iter.args[0], ast.Constant)
            and type(loop.iter.args[0].value) is int):
        return None
    return loop.target.id, ast.dump(loop.iter)


def _scatter(loop: ast.stmt, out: str) -> tuple[str, int, str] | None:
    """``(operand, offset, range)`` of ``for j in range(n): out[j + c] += t[j]`` (None:
    another statement)."""
    head = _range(loop)
    if head is None or len(loop.body) != 1:
        return None
    j, rng = head
    s = loop.body[0]
    if not (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
            and isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name)
            and s.target.value.id == out and _is(s.value, j) is not None):
        return None
    offset = _offset(s.target.slice, j)
    if offset is None:
        return None
    return _is(s.value, j), offset, rng


def _is(e: ast.expr, j: str) -> str | None:
    """The array name of ``t[j]`` (None: another expression)."""
    if (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
            and isinstance(e.slice, ast.Name) and e.slice.id == j):
        return e.value.id
    return None


def _offset(e: ast.expr, j: str) -> int | None:
    """``c`` of index ``j``, ``j + c`` or ``c + j`` (literal ``c``; None: another)."""
    if isinstance(e, ast.Name) and e.id == j:
        return 0
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        for a, b in ((e.left, e.right), (e.right, e.left)):
            if (isinstance(a, ast.Name) and a.id == j and isinstance(b, ast.Constant)
                    and type(b.value) is int):
                return b.value
    return None


def _fold(loop: ast.stmt, body: list[ast.stmt], z: int, uses: Counter, outputs: list[str],
          made: dict[str, ast.Assign]) -> tuple[int, tuple[ast.For, list[str]] | None]:
    """The scatter loops after ``body[z]`` (a zeroing) folded into ``loop`` (the
    statement before it): the index after them, and the new loop with the local arrays it
    no longer fills (None: they cannot be folded)."""
    zero = body[z]
    out = zero.targets[0].id
    parts = []
    k = z + 1
    while k < len(body) and (p := _scatter(body[k], out)) is not None:
        parts.append(p)
        k += 1
    if (not parts or zero.value.func.attr != "zeros" or uses[out] != 1 + len(parts)
            or not _vector(zero)):
        return k, None  # out is used elsewhere
    head = _range(loop)
    if head is None or any(rng != head[1] for _, _, rng in parts):
        return k, None
    offsets = [c for _, c, _ in parts]
    if len(parts) > 2 and any(a < b for a, b in zip(offsets, offsets[1:])):
        return k, None
    i = head[0]
    stores = _stores(loop, i)
    position = []
    for t, _, _ in parts:
        # t: made by np.empty, filled once by the loop, read once by its scatter loop
        if (t not in stores or t not in made or t in outputs or uses[t] != 3
                or made[t].value.func.attr != "empty" or not _vector(made[t])):
            return k, None
        position.append(stores[t])
    if len(parts) > 2 and any(a == b and pa > pb for (a, b), (pa, pb) in zip(
            zip(offsets, offsets[1:]), zip(position, position[1:]))):
        return k, None
    return k, (_folded(loop, {t: c for t, c, _ in parts}, out, i), [t for t, _, _ in parts])


def _stores(loop: ast.For, i: str) -> dict[str, int]:
    """Array -> the position of its one store ``t[i] = v`` at the top of ``loop``'s body
    (arrays stored more than once, or elsewhere, left out)."""
    found: dict[str, int] = {}
    seen: Counter = Counter()
    for k, s in enumerate(loop.body):
        if (isinstance(s, ast.Assign) and len(s.targets) == 1
                and _is(s.targets[0], i) is not None):
            t = _is(s.targets[0], i)
            found[t] = k
            seen[t] += 1
    return {t: k for t, k in found.items() if seen[t] == 1}


def _folded(loop: ast.For, offsets: dict[str, int], out: str, i: str) -> ast.For:
    """``loop`` with each ``t[i] = v`` (``t`` in ``offsets``) written ``out[i + c] += v``."""
    body = []
    for s in loop.body:
        t = _is(s.targets[0], i) if isinstance(s, ast.Assign) and len(s.targets) == 1 \
            else None
        if t in offsets:
            c = offsets[t]
            index: ast.expr = ast.Name(i, ast.Load()) if c == 0 else ast.BinOp(
                ast.Constant(c), ast.Add(), ast.Name(i, ast.Load()))
            s = ast.copy_location(ast.AugAssign(ast.Subscript(
                ast.Name(out, ast.Load()), index, ast.Store()), ast.Add(), s.value), s)
        body.append(s)
    return ast.copy_location(ast.For(loop.target, loop.iter, body, [], None), loop)
