"""Many-pairs ping-pong (`mpitempo pingpong --pairs`): the one-way latency of every chosen rank
pair of a job, measured one pair per mpirun with the method of Luecke et al. (the other ranks of
the job idle in a sleeping barrier), as a latency matrix."""
from __future__ import annotations

import statistics

from mpitempo.errors import MtError


def parse_pairs(text: str, np: int) -> list[tuple[int, int]]:
    """'all' (every pair i < j), or 'A-B,C-D,...' with 0 <= A, B < np and A != B."""
    text = str(text).strip()
    if np < 2:
        raise MtError(f"--pairs needs at least 2 ranks, got -n {np}")
    if text == "all":
        return [(i, j) for i in range(np) for j in range(i + 1, np)]
    out = []
    for item in text.split(","):
        a, sep, b = item.strip().partition("-")
        try:
            pa, pb = int(a), int(b)
        except ValueError:
            raise MtError(f"invalid --pairs item '{item.strip()}': expected A-B with rank numbers, or 'all'") from None
        if not sep or pa == pb or not (0 <= pa < np and 0 <= pb < np):
            raise MtError(f"invalid --pairs item '{item.strip()}': ranks must differ and lie in 0..{np - 1}")
        if (pa, pb) in out:
            raise MtError(f"--pairs lists {pa}-{pb} twice")
        out.append((pa, pb))
    return out


def config_name(a: int, b: int) -> str:
    return f"pair-{a}-{b}"


def matrix(analyses: list[tuple[int, int, dict]], np: int) -> dict:
    """analyses: (source, dest, analysis of one run). Per message size: the np x np matrix of the
    median over the pair's mpiruns of the filtered median one-way latency (s), symmetric (a
    ping-pong measures both directions), None where no pair was measured."""
    vals: dict[int, dict[tuple[int, int], list[float]]] = {}
    for a, b, an in analyses:
        for r in an["results"]:
            med = (r.get("filtered") or {}).get("median_s", r.get("median_s"))
            if med is not None and med == med:
                vals.setdefault(int(r["msize"]), {}).setdefault((a, b), []).append(float(med))
    out = {}
    for m, pairs in sorted(vals.items()):
        mat = [[None] * np for _ in range(np)]
        for (a, b), v in pairs.items():
            mat[a][b] = mat[b][a] = statistics.median(v)
        flat = [x for row in mat for x in row if x is not None]
        out[m] = {"latency_s": mat, "min_s": min(flat), "max_s": max(flat),
                  "runs": {f"{a}-{b}": len(v) for (a, b), v in pairs.items()}}
    return out
