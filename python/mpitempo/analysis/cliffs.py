"""Performance cliffs: a message size or process count where an operation's time jumps by more than its
performance model allows (e.g. Open MPI PR 8186: a 4-byte bcast on 128 ranks 10x slower than on 127,
because the library's fixed decision switched to a linear algorithm).

Method (per series: one op, one configuration, one process count over the sizes, or one size over the
process counts), on the medians of the per-mpirun medians y_i at the points x_1 < x_2 < ...:

1. The model is T(x) = a + b x with a, b >= 0 (the LogGP-style latency + per-byte cost, Alexandrov et al.
   1995; over process counts the same linear form bounds linear and tree algorithms), fitted by
   non-negative least squares on relative errors to the points of the current segment left of x_i
   (from the last cliff on). With one point on the left, the model is the steepest linear one through
   it, T(x) = y_{i-1} x / x_{i-1} (pure bandwidth, a = 0): the most the model can allow.
2. The allowance is the larger of ``min_factor`` (1.5) and (1 + r)(1 + z d): r is the largest relative
   residual of the fit on the segment, d the run-to-run dispersion (1.4826 MAD / median of the mpirun
   medians) at x_{i-1} or x_i, whichever is larger, z = 3.
3. x_i is a cliff if y_i > allowance x T(x_i) and the step itself y_i / y_{i-1} exceeds ``min_factor``;
   the segment then restarts at x_i (the new level has its own model). A drop by more than the allowance
   (y_i < y_{i-1} / allowance) also restarts the segment, without being reported.

Only jumps up are cliffs. With sparse points (sizes far apart) the bandwidth term is poorly determined;
sweeps by powers of two are what the method is made for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

MIN_FACTOR = 1.5
Z = 3.0


@dataclass
class Cliff:
    x_before: int
    x: int
    factor: float            # y_i / y_{i-1}: the jump as measured
    excess: float            # y_i / model prediction: how far beyond the model
    allowance: float         # the factor over the prediction that would have been accepted
    y_before_s: float
    y_s: float


def fit_linear(xs, ys) -> tuple[float, float, float]:
    """(a, b, largest relative residual) of T = a + b x, a, b >= 0, least squares on relative errors."""
    xs = np.asarray(xs, dtype=float)
    ys = np.asarray(ys, dtype=float)
    w = 1.0 / ys
    A = np.column_stack([w, xs * w])
    (a, b), _ = nnls(A, np.ones_like(ys))
    fit = a + b * xs
    resid = float(np.max(np.abs(ys - fit) / np.maximum(fit, 1e-300))) if len(xs) else 0.0
    return float(a), float(b), resid


def dispersion(runs) -> float:
    """Relative run-to-run dispersion: 1.4826 x MAD / median of the mpirun medians (the MAD scaled to a
    normal standard deviation; robust to one distorted mpirun among three, which an IQR is not)."""
    r = np.asarray(runs, dtype=float)
    if len(r) < 3:
        return 0.0
    med = float(np.median(r))
    return float(1.4826 * np.median(np.abs(r - med)) / med) if med > 0 else 0.0


def find(points: list[tuple[int, list[float]]], min_factor: float = MIN_FACTOR, z: float = Z) -> list[Cliff]:
    """Cliffs of one series: points = [(x, per-mpirun medians)], any order."""
    pts = sorted((int(x), list(r)) for x, r in points if len(r))
    xs = [p[0] for p in pts]
    ys = [float(np.median(p[1])) for p in pts]
    ds = [dispersion(p[1]) for p in pts]
    out: list[Cliff] = []
    start = 0
    for i in range(1, len(pts)):
        if i - start >= 2:
            a, b, resid = fit_linear(xs[start:i], ys[start:i])
            pred = a + b * xs[i]
        else:
            pred = ys[i - 1] * xs[i] / xs[i - 1] if xs[i - 1] > 0 else ys[i - 1]
            resid = 0.0
        pred = max(pred, ys[i - 1])
        allow = max(min_factor, (1 + resid) * (1 + z * max(ds[i - 1], ds[i])))
        step = ys[i] / ys[i - 1] if ys[i - 1] > 0 else float("inf")
        if ys[i] > allow * pred and step > min_factor:
            out.append(Cliff(xs[i - 1], xs[i], step, ys[i] / pred, allow, ys[i - 1], ys[i]))
            start = i
        elif ys[i] * allow < ys[i - 1]:
            start = i       # a drop the model cannot fit either: judge what follows against the new level
    return out


def matching_algorithm(default_runs, algs: dict[str, list[float]], alpha: float = 0.05) -> str | None:
    """The forced algorithm whose mpirun medians the default's are indistinguishable from (two-sided
    rank-sum p > alpha) and closest to in median: which algorithm the library's default selection ran,
    as far as the measurements can tell; None when none matches."""
    from scipy.stats import mannwhitneyu

    d = np.asarray(default_runs, dtype=float)
    best, best_gap = None, None
    for name, runs in algs.items():
        r = np.asarray(runs, dtype=float)
        if len(r) < 3 or len(d) < 3:
            continue
        p = mannwhitneyu(d, r, alternative="two-sided").pvalue
        gap = abs(np.log(np.median(r) / np.median(d)))
        if p > alpha and gap < np.log(1.25) and (best_gap is None or gap < best_gap):
            best, best_gap = name, gap
    return best


def campaign_cliffs(samples: dict[tuple, list[float]], oversubscribed: dict[int, bool] | None = None,
                    table=None, min_factor: float = MIN_FACTOR, z: float = Z) -> list[dict]:
    """Every cliff of a tune campaign. samples: (config, op, msize, nprocs) -> per-mpirun medians; config
    ``default`` or ``<op>.<algorithm>``. Over sizes per (op, config, nprocs), over process counts per
    (op, config, msize) when several were measured. For the default, each side names the forced
    algorithm it matches (``matching_algorithm``) and, when ``table(op, msize, nprocs)`` is given (MPICH:
    the library's MPIR-level table), what that table selects."""
    over = oversubscribed or {}
    series: dict[tuple, list[tuple[int, list[float]]]] = {}
    for (cfg, op, msize, nprocs), runs in samples.items():
        if "." in cfg and not cfg.startswith(op + "."):
            continue      # another op's algorithm
        series.setdefault(("msize", op, cfg, nprocs), []).append((msize, runs))
        series.setdefault(("nprocs", op, cfg, msize), []).append((nprocs, runs))
    out = []
    for (axis, op, cfg, fixed), pts in sorted(series.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        if len(pts) < 2 or (op == "barrier" and axis == "msize"):
            continue
        for c in find(pts, min_factor, z):
            alg = cfg.split(".", 1)[1] if "." in cfg else cfg
            rec = {"op": op, "algorithm": alg, "axis": axis,
                   "msize": fixed if axis == "nprocs" else None, "nprocs": fixed if axis == "msize" else None,
                   "before": c.x_before, "at": c.x, "factor": round(c.factor, 3), "beyond_model": round(c.excess, 3),
                   "allowance": round(c.allowance, 3), "median_before_s": c.y_before_s, "median_at_s": c.y_s}
            np_b, np_a = (fixed, fixed) if axis == "msize" else (c.x_before, c.x)
            rec["oversubscribed"] = bool(over.get(np_b) or over.get(np_a))
            if cfg == "default":
                def side(m, n):
                    algs = {cf.split(".", 1)[1]: v for (cf, o, ms, npx), v in samples.items()
                            if o == op and ms == m and npx == n and cf.startswith(op + ".")}
                    return matching_algorithm(samples.get(("default", op, m, n), []), algs)
                mb, ma = (c.x_before, c.x) if axis == "msize" else (fixed, fixed)
                rec["default_matches_before"] = side(mb, np_b)
                rec["default_matches_at"] = side(ma, np_a)
                if table is not None:
                    rec["table_before"] = table(op, mb, np_b)
                    rec["table_at"] = table(op, ma, np_a)
            out.append(rec)
    return out


def describe(c: dict) -> str:
    where = (f"{c['op']} on {c['nprocs']} ranks from {c['before']} B to {c['at']} B" if c["axis"] == "msize"
             else f"{c['op']} at {c['msize']} B from {c['before']} to {c['at']} ranks")
    s = (f"cliff: {where} ({c['algorithm']}): x{c['factor']:.2f} "
         f"({c['beyond_model']:.2f}x beyond the a+b*x model, allowed {c['allowance']:.2f}x)")
    if c["algorithm"] == "default":
        b, a = c.get("default_matches_before"), c.get("default_matches_at")
        if b or a:
            s += f"; the default matches {b or 'no measured algorithm'} before and {a or 'no measured algorithm'} at it"
        if c.get("table_before") or c.get("table_at"):
            s += f"; the library's MPIR table selects {c.get('table_before')} -> {c.get('table_at')}"
    if c["oversubscribed"]:
        s += " [OVERSUBSCRIBED: function only]"
    return s
