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


CHUNK_ELEMENTS = 4_000_000   # the largest temporary array (elements): 32 MB


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


def block_distances(blocks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(B, sizes): B[a, b] = sum over i in block a, j in block b of |x_i - x_j|. Splits lie between blocks,
    so every sum the statistic needs is a sum of entries of B (a permutation of blocks permutes B)."""
    x = np.concatenate(blocks)
    sizes = np.array([b.size for b in blocks])
    cum = _cum(sizes)
    starts = cum[:-1]
    bmat = np.empty((len(blocks), len(blocks)))
    step = max(1, int(CHUNK_ELEMENTS // max(1, x.size)))      # rows of the distance matrix at a time
    for a0 in range(0, x.size, step):
        a1 = min(x.size, a0 + step)
        part = np.add.reduceat(np.abs(x[a0:a1, None] - x[None, :]), starts, axis=1)   # rows x blocks
        owner = np.searchsorted(cum, np.arange(a0, a1), side="right") - 1
        if a0 == 0:
            bmat[:] = 0.0
        np.add.at(bmat, owner, part)
    return bmat, sizes


def _best_split(p: np.ndarray, cum: np.ndarray, b0: int, b1: int, min_blocks: int, min_obs: int):
    """(best first-block-after index, its Q) over blocks [b0, b1); p: prefix sums of the block distance
    matrix, cum[k]: observations in blocks before k."""
    ks = np.arange(b0 + min_blocks, b1 - min_blocks + 1)
    if ks.size == 0:
        return None, -np.inf
    m = (cum[ks] - cum[b0]).astype(float)
    n = (cum[b1] - cum[ks]).astype(float)
    ok = (m >= min_obs) & (n >= min_obs)
    if not ok.any():
        return None, -np.inf
    ks, m, n = ks[ok], m[ok], n[ok]
    between = _box(p, b0, ks, ks, b1)
    within_x = _box(p, b0, ks, b0, ks) / 2.0
    within_y = _box(p, ks, b1, ks, b1) / 2.0
    e = 2.0 * between / (m * n) - within_x / (m * (m - 1) / 2.0) - within_y / (n * (n - 1) / 2.0)
    q = m * n / (m + n) * e
    j = int(np.argmax(q))
    return int(ks[j]), float(q[j])


def _max_q_permuted(sub: np.ndarray, sizes: np.ndarray, perms: np.ndarray, min_blocks: int, min_obs: int):
    """The largest Q over the splits of the blocks in each order of perms (R x nb), all at once."""
    r, nb = perms.shape
    step = max(1, int(CHUNK_ELEMENTS // (nb * nb)))              # bounded memory for long histories
    if r > step:
        return np.concatenate([_max_q_permuted(sub, sizes, perms[i:i + step], min_blocks, min_obs)
                               for i in range(0, r, step)])
    b = sub[perms[:, :, None], perms[:, None, :]]                 # R x nb x nb
    p = np.zeros((r, nb + 1, nb + 1))
    p[:, 1:, 1:] = b.cumsum(1).cumsum(2)
    cum = np.zeros((r, nb + 1))
    cum[:, 1:] = sizes[perms].cumsum(1)
    ks = np.arange(min_blocks, nb - min_blocks + 1)
    if ks.size == 0:
        return np.full(r, -np.inf)
    m = cum[:, ks]                                                # R x K
    n = cum[:, nb][:, None] - m
    end = nb
    between = p[:, ks, end] - p[:, ks, :][:, np.arange(ks.size), ks] - p[:, 0, end][:, None] + p[:, 0, ks]
    within_x = p[:, ks, :][:, np.arange(ks.size), ks] / 2.0
    within_y = (p[:, end, end][:, None] - p[:, ks, end] - p[:, end, ks] + p[:, ks, :][:, np.arange(ks.size), ks]) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        e = 2.0 * between / (m * n) - within_x / (m * (m - 1) / 2.0) - within_y / (n * (n - 1) / 2.0)
        q = m * n / (m + n) * e
    q = np.where((m >= min_obs) & (n >= min_obs), q, -np.inf)
    return q.max(axis=1)


def _cum(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


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
    bmat, sizes = block_distances(blocks)
    p, cum = _prefix(bmat), _cum(sizes)
    bounds = [0, nb]
    found: list[Change] = []
    while len(found) < max_changes:
        best = (None, -np.inf, None)
        for b0, b1 in zip(bounds[:-1], bounds[1:]):
            k, q = _best_split(p, cum, b0, b1, min_blocks, min_obs)
            if k is not None and q > best[1]:
                best = (k, q, (b0, b1))
        k, q, seg = best
        if k is None:
            break
        # permutation test: the blocks of the segment shuffled, the largest Q over its splits
        sub, ssz = bmat[seg[0]:seg[1], seg[0]:seg[1]], sizes[seg[0]:seg[1]]
        perms = np.array([rng.permutation(len(ssz)) for _ in range(permutations)])
        qp = _max_q_permuted(sub, ssz, perms, min_blocks, min_obs)
        exceed = int(np.count_nonzero(qp >= q - 1e-12 * abs(q)))
        pval = (1 + exceed) / (permutations + 1)
        if pval > alpha:
            break
        found.append(Change(block=k, q=q, p_value=pval))
        bounds = sorted(bounds + [k])
    return sorted(found, key=lambda c: c.block)
