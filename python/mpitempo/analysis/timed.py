"""Whose per-rank times are an op's times (meta.json ``experiments[].timed_ranks``).

The C core names per experiment the ranks whose local time is the op's: ``"all"`` (collectives,
ring and all-pairs ops, one-sided ops with fence), or a list: ``[0, p/2]`` for the pair ops
(bw, bibw, pingping) and one-sided ops with pscw, ``[0]`` for the passive-target one-sided ops
(lock, flush, flush_local, lock_all), whose target makes no MPI call and returns at once. A
statistic over ranks (OSU's and IMB's mean over ranks) must use these ranks only: with the idle
ranks' near-zero times in it, the mean of a passive-target latency on 2 ranks is half the origin's.
Runs recorded before the key existed have no ``timed_ranks``: every rank counts, as before.
"""
from __future__ import annotations

from mpitempo.errors import MtError


def timed_rows(exp: dict, nprocs: int, where: str = "meta.json") -> list[int] | None:
    """The ranks (sorted, unique) whose times are the op's for one experiment record of meta.json,
    or None for every rank."""
    t = exp.get("timed_ranks", "all")
    if t == "all" or t is None:
        return None
    if not isinstance(t, list) or not t or not all(isinstance(r, int) and not isinstance(r, bool) for r in t):
        raise MtError(f"{where}: experiment {exp.get('exp')} has timed_ranks {t!r}: expected \"all\" or a "
                      f"non-empty list of ranks")
    bad = [r for r in t if not 0 <= r < nprocs]
    if bad:
        raise MtError(f"{where}: experiment {exp.get('exp')} names rank {bad[0]} in timed_ranks, but the run has "
                      f"{nprocs} ranks (allowed: 0..{nprocs - 1})")
    rows = sorted(set(t))
    return None if len(rows) == nprocs else rows
