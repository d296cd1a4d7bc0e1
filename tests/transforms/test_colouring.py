"""Colourings of sparsity patterns: on random patterns the column colouring never puts two
columns of one row in one colour and the star colouring is proper with no two-coloured path
on four vertices (both checked by brute force); compressed products read back through
``recovery`` give every entry of the matrix exactly; known patterns get their known colour
counts; a colouring that does not fit is refused and a too-dense pattern stops at a limit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse

import symgrad as sg
from symgrad.transforms import colouring as C
from symgrad.transforms.sparsity import Pattern

R = np.random.default_rng(23)


def _pattern(a) -> Pattern:
    a = scipy.sparse.coo_array(a)
    return Pattern.from_pairs(a.shape, a.row.astype(np.int64), a.col.astype(np.int64))


def _random(m, n, density, symmetric=False):
    a = scipy.sparse.random(m, n, density=density, random_state=R, format="csr")
    if symmetric:
        a = a + a.T + scipy.sparse.eye(n)
    return a.toarray() != 0


@pytest.mark.parametrize("seed", range(6))
def test_column_colouring_has_no_two_columns_of_a_colour_in_one_row(seed):
    mask = _random(12, 9, 0.2 + 0.05 * seed)
    colour = C.column_colouring(_pattern(mask))
    for row in mask:
        used = colour[np.flatnonzero(row)]
        assert len(set(used.tolist())) == used.size
    a = np.where(mask, R.standard_normal(mask.shape), 0.0)
    compressed = (a @ C.seed_rows(colour).T).T  # (colours, rows)
    positions = C.recovery(_pattern(mask), colour, symmetric=False)
    rows, cols = np.nonzero(mask)  # row-major, as the pattern's entries
    np.testing.assert_array_equal(compressed.ravel()[positions], a[rows, cols])


def _has_two_coloured_path_on_four(adj: np.ndarray, colour: np.ndarray) -> bool:
    n = len(adj)
    for v, w, x, y in itertools.permutations(range(n), 4):
        if adj[v, w] and adj[w, x] and adj[x, y] and colour[v] == colour[x] \
                and colour[w] == colour[y]:
            return True
    return False


@pytest.mark.parametrize("seed", range(4))
def test_star_colouring_is_a_star_colouring_and_recovers_a_symmetric_matrix(seed):
    mask = _random(8, 8, 0.15 + 0.04 * seed, symmetric=True)
    colour = C.star_colouring(_pattern(mask))
    adj = mask & ~np.eye(8, dtype=bool)
    assert not any(colour[i] == colour[j] for i, j in zip(*np.nonzero(adj)))  # proper
    assert not _has_two_coloured_path_on_four(adj, colour)
    b = np.where(mask, R.standard_normal(mask.shape), 0.0)
    h = b + b.T
    compressed = (h @ C.seed_rows(colour).T).T
    positions = C.recovery(_pattern(mask), colour, symmetric=True)
    rows, cols = np.nonzero(mask)
    np.testing.assert_allclose(compressed.ravel()[positions], h[rows, cols], rtol=1e-15)


def test_known_patterns_get_their_known_colour_counts():
    n = 7
    tridiagonal = _pattern(np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1))
    assert C.column_colouring(tridiagonal).max() + 1 == 3
    assert C.star_colouring(tridiagonal).max() + 1 == 3
    arrow = np.eye(n, dtype=bool)
    arrow[0, :] = arrow[:, 0] = True
    assert C.column_colouring(_pattern(arrow)).max() + 1 == n  # a dense row: all apart
    assert C.star_colouring(_pattern(arrow)).max() + 1 == 2  # the hub, then the leaves
    diagonal = _pattern(np.eye(n))
    assert C.column_colouring(diagonal).max() == 0


def test_a_colouring_that_does_not_fit_is_refused():
    mask = np.eye(4, dtype=bool)
    mask[0, 1] = mask[1, 0] = True
    with pytest.raises(ValueError, match="two columns of one colour share a row"):
        C.recovery(_pattern(mask), np.zeros(4, dtype=np.int64), symmetric=False)
    with pytest.raises(ValueError, match="mixed with another in both places"):
        C.recovery(_pattern(mask), np.zeros(4, dtype=np.int64), symmetric=True)


def test_a_too_dense_pattern_stops_at_a_limit(monkeypatch):
    monkeypatch.setattr(C, "STEP_LIMIT", 50)
    with pytest.raises(sg.LimitError, match="column colouring: .*too dense"):
        C.column_colouring(_pattern(np.ones((4, 8), dtype=bool)))
