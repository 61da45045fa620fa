"""E-divisive means (Matteson and James 2014), as used for performance histories by Daly et al. (2020):
change points of a sequence of blocks of observations, found by bisection with the energy statistic and
a permutation test. Pure numpy.

The observations are grouped into blocks (a block: the per-mpirun medians of one history entry, i.e. one
campaign), in time order. A change point can only lie between two blocks, and the permutation test
shuffles whole blocks: the null hypothesis is that the entries are exchangeable, so the night-to-night
variation of a machine counts as noise, and the several mpiruns of one night are not taken as independent
evidence (which would make every night-to-night wobble "significant").

Statistic (alpha = 1): for a split of a segment into X (m observations) and Y (n observations),

    E = 2/(mn) sum|X_i - Y_j| - 1/C(m,2) sum_{i<k}|X_i - X_k| - 1/C(n,2) sum_{j<k}|Y_j - Y_k|
    Q = mn/(m+n) E

The best split of every current segment is found; the largest Q over segments is tested by R permutations
(the blocks of that segment shuffled, the maximum Q over its splits recomputed); it is kept when
p = (1 + #{Q_perm >= Q}) / (R + 1) <= alpha, and bisection continues in the two halves; it stops at the first
split that is not significant (Matteson and James 2014, section 3.2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Change:
    block: int          # index of the first block after the change
    q: float            # the energy statistic of the split
    p_value: float      # the permutation p-value


def _prefix(d: np.ndarray) -> np.ndarray:
    """2-D prefix sums S with S[i, j] = sum of d[:i, :j]."""
    s = np.zeros((d.shape[0] + 1, d.shape[1] + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    return s


def _box(s: np.ndarray, r0, r1, c0, c1):
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def _best_split(s: np.ndarray, starts: np.ndarray, b0: int, b1: int, min_blocks: int, min_obs: int):
    """(best first-block-after index, its Q) of blocks [b0, b1) given prefix sums s of the distance matrix
    of the observations ordered by block; starts[k] = first observation of block k (starts[-1] = total)."""
    ks = np.arange(b0 + min_blocks, b1 - min_blocks + 1)
    if ks.size == 0:
        return None, -np.inf
    a, b = starts[b0], starts[b1]
    t = starts[ks]
    m = (t - a).astype(float)
    n = (b - t).astype(float)
    ok = (m >= min_obs) & (n >= min_obs)
    if not ok.any():
        return None, -np.inf
    ks, t, m, n = ks[ok], t[ok], m[ok], n[ok]
    between = _box(s, a, t, t, b)
    within_x = _box(s, a, t, a, t) / 2.0
    within_y = _box(s, t, b, t, b) / 2.0
    e = 2.0 * between / (m * n) - within_x / (m * (m - 1) / 2.0) - within_y / (n * (n - 1) / 2.0)
    q = m * n / (m + n) * e
    j = int(np.argmax(q))
    return int(ks[j]), float(q[j])


def _order_blocks(blocks: list[np.ndarray]):
    x = np.concatenate(blocks) if blocks else np.zeros(0)
    starts = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(int)
    return x, starts


def _segment_max(blocks: list[np.ndarray], min_blocks: int, min_obs: int) -> float:
    x, starts = _order_blocks(blocks)
    s = _prefix(np.abs(x[:, None] - x[None, :]))
    return _best_split(s, starts, 0, len(blocks), min_blocks, min_obs)[1]


def e_divisive(blocks: list, alpha: float = 0.05, permutations: int = 199, min_blocks: int = 2,
               min_obs: int = 3, rng: np.random.Generator | int | None = 0, max_changes: int = 20) -> list[Change]:
    """Change points of a sequence of blocks (each an array of observations, e.g. log run medians of one
    entry). Returns the changes sorted by block index. min_blocks: blocks on each side of a split at least;
    min_obs: observations on each side at least. Empty blocks are not allowed (drop them first)."""
    blocks = [np.asarray(b, dtype=float) for b in blocks]
    if any(b.size == 0 for b in blocks):
        raise ValueError("empty block")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    nb = len(blocks)
    if nb < 2 * min_blocks:
        return []
    x, starts = _order_blocks(blocks)
    s = _prefix(np.abs(x[:, None] - x[None, :]))
    bounds = [0, nb]
    found: list[Change] = []
    while len(found) < max_changes:
        best = (None, -np.inf, None)
        for b0, b1 in zip(bounds[:-1], bounds[1:]):
            k, q = _best_split(s, starts, b0, b1, min_blocks, min_obs)
            if k is not None and q > best[1]:
                best = (k, q, (b0, b1))
        k, q, seg = best
        if k is None:
            break
        # permutation test: the blocks of the segment shuffled, the largest Q over its splits
        seg_blocks = blocks[seg[0]:seg[1]]
        exceed = 0
        for _ in range(permutations):
            perm = rng.permutation(len(seg_blocks))
            if _segment_max([seg_blocks[i] for i in perm], min_blocks, min_obs) >= q - 1e-12 * abs(q):
                exceed += 1
        p = (1 + exceed) / (permutations + 1)
        if p > alpha:
            break
        found.append(Change(block=k, q=q, p_value=p))
        bounds = sorted(bounds + [k])
    return sorted(found, key=lambda c: c.block)
