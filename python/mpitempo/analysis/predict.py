"""Predicting the best algorithm at message sizes that were not measured.

Model: per (op, process count, algorithm) the linear cost T(m) = a + b m with a, b >= 0 (the LogGP-style
latency plus per-byte cost of Alexandrov et al. 1995), fitted by non-negative least squares on relative
errors to the medians of the per-mpirun medians at the measured sizes. As a cliff shows, an algorithm's
cost is not one line over all sizes (protocol switches, segmenting, caches), so the fit is local: the
prediction at m uses the measured sizes nearest to m in log-size, ``k`` of them (default 4) per side
at most. The predicted best algorithm at m is the one with the smallest predicted time (the library's
default is one of the candidates).

Error on held-out points (leave-one-out over the measured sizes): each measured size in turn is left out,
the models are refitted without it and predict there; compared with what was measured there:
- ``hit``: the predicted best is the measured best (smallest median of mpirun medians);
- ``regret_pct``: 100 x (measured time of the predicted best / measured time of the best - 1): what
  following the prediction would have cost at that size (0 when it is right);
- ``time_err_pct``: 100 x (predicted / measured - 1) for the predicted algorithm's time.
"""
from __future__ import annotations

import numpy as np

from mpitempo.analysis.cliffs import fit_linear

K_NEAR = 4


def _local_fit(pts: list[tuple[int, float]], m: int, k: int = K_NEAR) -> float | None:
    if not pts:
        return None
    below = sorted((p for p in pts if p[0] < m), key=lambda p: -p[0])[:k]
    above = sorted((p for p in pts if p[0] > m), key=lambda p: p[0])[:k]
    use = below + above + [p for p in pts if p[0] == m]
    if len(use) == 1:
        return use[0][1]
    a, b, _ = fit_linear([p[0] for p in use], [p[1] for p in use])
    return a + b * m


def predict(curves: dict[str, list[tuple[int, float]]], m: int, k: int = K_NEAR) -> dict[str, float]:
    """Predicted time of every algorithm at size m: curves = {algorithm: [(msize, median time)]}."""
    out = {}
    for alg, pts in curves.items():
        t = _local_fit(pts, m, k)
        if t is not None and t > 0:
            out[alg] = t
    return out


def best(curves: dict[str, list[tuple[int, float]]], m: int, k: int = K_NEAR) -> tuple[str, float] | None:
    p = predict(curves, m, k)
    if not p:
        return None
    alg = min(p, key=p.get)
    return alg, p[alg]


def leave_one_out(curves: dict[str, list[tuple[int, float]]], k: int = K_NEAR) -> list[dict]:
    """One record per measured size where every algorithm has at least 2 other sizes."""
    sizes = sorted({m for pts in curves.values() for m, _ in pts})
    out = []
    for m in sizes:
        measured = {a: dict(pts)[m] for a, pts in curves.items() if m in dict(pts)}
        if len(measured) < 2:
            continue
        rest = {a: [p for p in pts if p[0] != m] for a, pts in curves.items() if a in measured}
        if any(len(v) < 2 for v in rest.values()):
            continue
        bp = best(rest, m, k)
        if bp is None:
            continue
        alg, t = bp
        true_best = min(measured, key=measured.get)
        out.append({"msize": m, "predicted": alg, "measured_best": true_best, "hit": alg == true_best,
                    "regret_pct": 100 * (measured[alg] / measured[true_best] - 1),
                    "time_err_pct": 100 * (t / measured[alg] - 1)})
    return out


def summarize(records: list[dict]) -> dict:
    if not records:
        return {"points": 0}
    reg = np.array([r["regret_pct"] for r in records])
    err = np.abs([r["time_err_pct"] for r in records])
    return {"points": len(records), "hit_rate": float(np.mean([r["hit"] for r in records])),
            "regret_median_pct": float(np.median(reg)), "regret_max_pct": float(np.max(reg)),
            "abs_time_err_median_pct": float(np.median(err)), "abs_time_err_max_pct": float(np.max(err))}


def curves_from(samples: dict[tuple, list[float]], op: str, nprocs: int,
                allowed: set[str] | None = None) -> dict[str, list[tuple[int, float]]]:
    """{algorithm or "default": [(msize, median of mpirun medians)]} of one (op, nprocs) of a tune campaign."""
    out: dict[str, list[tuple[int, float]]] = {}
    for (cfg, o, m, n), runs in samples.items():
        if o != op or n != nprocs or not runs:
            continue
        if cfg == "default":
            alg = "default"
        elif cfg.startswith(op + "."):
            alg = cfg.split(".", 1)[1]
        else:
            continue
        if allowed is not None and alg not in allowed:
            continue
        out.setdefault(alg, []).append((m, float(np.median(runs))))
    return {a: sorted(p) for a, p in out.items()}
