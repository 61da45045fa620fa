"""Levels (modes) of run medians and runs grossly off their siblings: pure functions.

* ``modes(x)``: split the sorted run medians at gaps on a log scale. A gap separates two levels
  when it is at least GAP_FACTOR times the within-level spread (median absolute deviations on the
  log scale of both sides, weighted by their sizes, at least MIN_REL_SPREAD, or SMALL_LEVEL_SPREAD when a
  side has at most SMALL_LEVEL_RUNS values) and each level holds at least MIN_RUNS values.
  Returns one level (not multimodal) or several, each with its centre, share of runs and the
  indices of its runs; the recursion splits each level again (at most MAX_MODES levels).
  This is the "two groups of run medians" of MPI_Allreduce on a VM (0.55 vs 1.3 µs): each level
  is a state of the machine, and the centre of all runs is a mixture of them.
* ``outlier_runs(x)``: runs whose median is at least RATIO_GROSS times (or at most 1/RATIO_GROSS)
  the median of the other runs: a distorted run (time slices of a shared CPU, another process),
  not a level of the machine.
"""
from __future__ import annotations

import numpy as np

GAP_FACTOR = 6.0        # a gap of 6 within-level spreads separates levels
MIN_REL_SPREAD = 0.01   # within-level spread floor (1%): levels closer than ~6% are not split
MIN_RUNS = 2            # runs per level
SMALL_LEVEL_RUNS = 2    # a level of this many runs or fewer cannot show a spread of its own (its MAD is
SMALL_LEVEL_SPREAD = 0.05  # half a difference): its spread floor is 5%, a gap of 30% (4 runs of one level,
                        # log-sd 2.7%, fell into two pairs 6% apart, a false level, at the floor of 1%)
MAX_MODES = 4
RATIO_GROSS = 3.0       # a run 3x off the median of the others is grossly off


def _mad(v: np.ndarray) -> float:
    return float(np.median(np.abs(v - np.median(v)))) * 1.4826 if v.size else 0.0


def _split(idx: np.ndarray, lx: np.ndarray, out: list) -> None:
    v = lx[idx]
    if idx.size >= 2 * MIN_RUNS and len(out) < MAX_MODES:
        gaps = np.diff(v)
        best = None
        for g in np.argsort(gaps)[::-1]:
            left, right = v[: g + 1], v[g + 1:]
            if left.size < MIN_RUNS or right.size < MIN_RUNS:
                continue
            # within-level spread: the size-weighted mean of both sides' MADs (a level of two
            # runs has a poor MAD of its own), at least MIN_REL_SPREAD
            floor = SMALL_LEVEL_SPREAD if min(left.size, right.size) <= SMALL_LEVEL_RUNS else MIN_REL_SPREAD
            spread = max((left.size * _mad(left) + right.size * _mad(right)) / v.size, floor)
            if gaps[g] >= GAP_FACTOR * spread:
                best = g
            break   # only the largest admissible gap is considered
        if best is not None:
            _split(idx[: best + 1], lx, out)
            _split(idx[best + 1:], lx, out)
            return
    out.append(idx)


def modes(x) -> list[dict]:
    """[{center_s, share, runs: [indices into x], n}] sorted by centre; one entry when unimodal,
    [] for no values."""
    x = np.asarray(x, dtype=float)
    ok = np.flatnonzero(np.isfinite(x) & (x > 0))
    if ok.size == 0:
        return []
    order = ok[np.argsort(x[ok], kind="stable")]
    lx = np.full(x.shape, np.nan)
    lx[ok] = np.log(x[ok])
    groups: list = []
    _split(order, lx, groups)
    return [{"center_s": float(np.median(x[g])), "share": g.size / ok.size, "runs": sorted(int(i) for i in g),
             "n": int(g.size)} for g in groups]


def outlier_runs(x) -> list[dict]:
    """[{index, ratio}]: runs whose median is >= RATIO_GROSS x (or <= 1/RATIO_GROSS x) the median
    of the other runs (needs >= 2 runs)."""
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return []
    out = []
    for i in range(x.size):
        rest = np.delete(x, i)
        ref = float(np.median(rest))
        if ref <= 0 or not np.isfinite(x[i]):
            continue
        ratio = float(x[i] / ref)
        if ratio >= RATIO_GROSS or ratio <= 1.0 / RATIO_GROSS:
            out.append({"index": i, "ratio": ratio})
    return out
