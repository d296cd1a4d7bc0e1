"""Graph colourings of sparsity patterns, and where each derivative entry is found in the
compressed result (Gebremedhin, Manne & Pothen, "What color is your Jacobian? Graph coloring
for computing derivatives", SIAM Review 47(4), 2005; Coleman & Moré, 1983 and 1984).

* Jacobians: a **distance-1 colouring of the column intersection graph** (two columns
  conflict when some row has both): columns of one colour are summed into one column of
  ``J S``, and each entry is read back directly, ``J[i, j] = (J S)[i, colour(j)]``
  (:func:`column_colouring`; of ``J^T`` for rows and reverse mode).
* Symmetric Hessians: a **star colouring** of the adjacency graph (a proper colouring in
  which every path on four vertices uses at least three colours): each entry is read from
  ``H S`` either at ``(i, colour(j))`` or, by symmetry, at ``(j, colour(i))``
  (:func:`star_colouring`, :func:`recovery`); or the distance-2 colouring (the column
  colouring of ``H``), which never needs symmetry and may need more colours.

Both colourings are greedy, in largest-first order (GMP 2005, Section 4: the order and the
greedy rule; the star rule here checks the two ways a new colour can close a two-coloured
path on four vertices). They are exact: :func:`recovery` refuses a colouring that would mix
two entries. Cost: ``O(sum of squared degrees)``, budgeted (``LimitError``).

>>> import numpy as np
>>> from symgrad.transforms.sparsity import Pattern
>>> tridiagonal = Pattern.from_pairs((5, 5), np.array([0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4]),
...                                  np.array([0, 1, 0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4]))
>>> column_colouring(tridiagonal).tolist()
[2, 0, 1, 2, 0]
>>> int(star_colouring(tridiagonal).max()) + 1
3
"""

from __future__ import annotations

import numpy as np

from ..base.errors import LimitError
from .sparsity import Pattern

STEP_LIMIT = 200_000_000  # inner-loop steps a colouring may take


def _order(degrees: np.ndarray) -> np.ndarray:
    """Largest degree first; ties by index (a band is then coloured in its natural order)."""
    return np.argsort(-degrees, kind="stable")


def _budget(pattern: Pattern, what: str) -> None:
    lens = np.diff(pattern.indptr)
    steps = int(np.sum(lens.astype(np.int64) ** 2))
    if steps > STEP_LIMIT:
        raise LimitError(f"{what}: colouring this pattern would take about {steps:,} steps "
                         f"(limit {STEP_LIMIT:,}): some rows are too dense for a sparse "
                         "derivative to pay off")


def column_colouring(pattern: Pattern) -> np.ndarray:
    """A distance-1 colouring of the columns' intersection graph: ``colour[j]``, so that no
    row has two columns of one colour. Greedy, largest-first."""
    _budget(pattern, "column colouring")
    m, n = pattern.shape
    by_col = pattern.T
    col_rows = [by_col.row(j).tolist() for j in range(n)]
    row_cols = [pattern.row(i).tolist() for i in range(m)]
    colour = [-1] * n
    mark = [-1] * (n + 1)
    for j in _order(np.diff(by_col.indptr)).tolist():
        for r in col_rows[j]:
            for k in row_cols[r]:
                c = colour[k]
                if c >= 0:
                    mark[c] = j
        c = 0
        while mark[c] == j:
            c += 1
        colour[j] = c
    return np.asarray(colour, dtype=np.int64)


def star_colouring(pattern: Pattern) -> np.ndarray:
    """A star colouring of the adjacency graph of a symmetric pattern (the diagonal is
    ignored): proper, and no path on four vertices has only two colours. Greedy,
    largest-first; a colour is forbidden for vertex ``v`` when it is a neighbour's, or when
    taking it would close a two-coloured path ``v-w-x-y`` (``v`` and ``x`` alike, ``w`` and
    ``y`` alike) or ``a-v-w-y`` (``a`` and ``w`` alike, ``v`` and ``y`` alike)."""
    _budget(pattern, "star colouring")
    n = pattern.shape[0]
    adj = [[k for k in pattern.row(i).tolist() if k != i] for i in range(n)]
    colour = [-1] * n
    counts: list[dict[int, int]] = [{} for _ in range(n)]  # colours among each one's neighbours
    mark = [-1] * (n + 2)
    for v in _order(np.array([len(a) for a in adj], dtype=np.int64)).tolist():
        mine = counts[v]
        for w in adj[v]:
            d = colour[w]
            if d < 0:
                continue
            mark[d] = v
            pair = mine.get(d, 0) >= 2  # v has two neighbours of colour d: a-v-w-y
            for x in adj[w]:
                e = colour[x]
                if x == v or e < 0:
                    continue
                if pair or counts[x].get(d, 0) >= 2:  # v-w-x-y with y another d-neighbour of x
                    mark[e] = v
        c = 0
        while mark[c] == v:
            c += 1
        colour[v] = c
        for w in adj[v]:
            counts[w][c] = counts[w].get(c, 0) + 1
    return np.asarray(colour, dtype=np.int64)


def seed_rows(colour: np.ndarray) -> np.ndarray:
    """The seed ``S^T``: row ``c`` has ones at the columns of colour ``c``."""
    p = int(colour.max()) + 1 if colour.size else 0
    seed = np.zeros((p, colour.size))
    seed[colour, np.arange(colour.size)] = 1.0
    return seed


def recovery(pattern: Pattern, colour: np.ndarray, symmetric: bool) -> np.ndarray:
    """Where each entry of ``pattern`` (in row-major order) is found in the compressed
    result ``B`` of shape ``(colours, rows)``, ``B[c, i] = sum over j of colour c of
    A[i, j]``, flattened: ``B.ravel()[positions]`` is the entries' ``data``.

    Entry ``(i, j)`` is ``B[colour[j], i]`` when ``j`` is the only column of its colour in
    row ``i``; for a ``symmetric`` matrix it may instead be ``B[colour[i], j]`` when ``i`` is
    the only one of its colour in row ``j``. A :class:`ValueError` if neither holds (the
    colouring does not fit the pattern)."""
    m, _ = pattern.shape
    rows, cols = pattern.rows, pattern.cols
    p = int(colour.max()) + 1 if colour.size else 1
    keys = rows * p + colour[cols]
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    direct = counts[inverse] == 1
    positions = colour[cols] * m + rows
    if direct.all():
        return positions
    if not symmetric:
        raise ValueError("the colouring does not fit the pattern: two columns of one colour "
                         "share a row")
    other = cols * p + colour[rows]
    found = np.searchsorted(uniq, other)
    ok = (found < uniq.size) & (uniq[np.minimum(found, uniq.size - 1)] == other)
    ok &= counts[np.minimum(found, uniq.size - 1)] == 1
    if not np.all(direct | ok):
        raise ValueError("the colouring does not fit the pattern: an entry is mixed with "
                         "another in both places it could be read")
    return np.where(direct, positions, colour[rows] * m + cols)


__all__ = ["column_colouring", "recovery", "seed_rows", "star_colouring"]
