"""Processing schemes PS1-PS8 of the established MPI benchmarks (Hunold and Carpen-Amarie 2016,
Table 4): what each benchmark would have printed from the same raw measurements.

Every function takes the raw data of one experiment (one op and message size) of one mpirun:

* ``start``, ``end``: arrays of shape (nprocs, nrep), every rank's start and end time of every
  measurement in seconds (``perrank.bin``). ``global_clock`` says whether the times are on a
  synchronised global clock (comparable across ranks) or each rank's own timer.
* ``calls``: MPI calls per measurement (1, or ``--inner`` of the loop schemes); a rank's local
  runtime of one call is ``(end - start) / calls``.

Invalid measurements (clock-based schemes) are dropped by the caller; the functions see only
valid ones. Each returns a dict with ``value_s`` (the one number the benchmark reports first) and
the other numbers it prints, in seconds. Pure functions: numpy and scipy only.
"""
from __future__ import annotations

import numpy as np

from mpitempo.errors import MtError

# name -> (benchmark(s), source, needs a global clock, one-line method)
SCHEMES = {
    "ps1_skampi": ("SKaMPI", "Reussner et al. 1998; Hunold and Carpen-Amarie 2016, Table 4 (PS1)", False,
                   "max over ranks per measurement, sorted, mean and stdev of the middle half"),
    "ps2_mpiblib": ("MPIBlib, mpicroscope", "Lastovetsky et al. 2008; Worsch et al. 2002; Hunold and "
                    "Carpen-Amarie 2016, Table 4 (PS2)", False,
                    "max over ranks per measurement; mean with 95% CI (MPIBlib), min, max (mpicroscope)"),
    "ps3_osu": ("OSU Micro-Benchmarks", "Hunold and Carpen-Amarie 2016, Table 4 (PS3)", False,
                "per-rank average over measurements; min, max, mean over ranks (avg latency reported)"),
    "ps4_mpiblib_global": ("MPIBlib (global timing)", "Lastovetsky et al. 2008; Hunold and Carpen-Amarie 2016, "
                           "Table 4 (PS4)", True,
                           "global time: max over ranks of the end minus the root's start; mean with 95% CI"),
    "ps5_mpibench": ("MPIBench", "Grove and Coddington 2001; Hunold and Carpen-Amarie 2016, Table 4 (PS5)", False,
                     "all ranks' runtimes pooled, above 2 x 99th percentile removed; min, max, mean"),
    "ps6_nbcbench": ("NBCBench", "Hoefler et al. 2008; Hunold and Carpen-Amarie 2016, Table 4 (PS6)", False,
                     "OP (min, max, mean, median) of each rank's runtimes, max over ranks (value: OP = mean)"),
    "ps7_imb": ("Intel MPI Benchmarks, Phloem", "Hunold and Carpen-Amarie 2016, Table 4 (PS7)", False,
                "per-rank mean runtime; t_min, t_max, t_avg over ranks (value: t_avg)"),
    "ps8_mpptest": ("mpptest", "Gropp and Lusk 1999; Hunold and Carpen-Amarie 2016, Table 4 (PS8)", False,
                    "the root's runtime, minimum over the repetitions"),
}
PROCESS_NAMES = ("reprompi",) + tuple(SCHEMES)

CLT_NREP = 500       # measurements per mpirun Hunold and Carpen-Amarie (2016, section 4.1) needed for normal means
MEAN_CI_SCHEMES = ("ps2_mpiblib", "ps4_mpiblib_global")
MPIBENCH_A = 2.0     # MPIBench outlier threshold: t_thresh = a x t99 (Grove 2003; a = 2 by default)
CI_LEVEL = 0.95


def check_process(name: str) -> list[str]:
    """The scheme names that `--process NAME` selects (``all``: every one)."""
    if name == "all":
        return list(PROCESS_NAMES)
    if name not in PROCESS_NAMES:
        raise MtError(f"unknown processing scheme '{name}' (allowed: all, {', '.join(PROCESS_NAMES)})")
    return [name]


def _local(start, end, calls: int) -> np.ndarray:
    s, e = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    if s.ndim != 2 or s.shape != e.shape or s.shape[1] == 0:
        raise MtError(f"per-rank data must be two arrays of shape (nprocs, nrep >= 1), got {s.shape} and {e.shape}")
    return (e - s) / calls


def _mean_ci(x: np.ndarray, level: float = CI_LEVEL) -> tuple[float | None, float | None]:
    """Student-t confidence interval of the mean (None with fewer than 2 values)."""
    if len(x) < 2:
        return None, None
    from scipy import stats

    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x))
    m = float(np.mean(x))
    return m - float(half), m + float(half)


def _std(x: np.ndarray) -> float | None:
    return float(np.std(x, ddof=1)) if len(x) > 1 else None


def ps1_skampi(start, end, calls: int = 1, global_clock: bool = False) -> dict:
    lmax = np.sort(_local(start, end, calls).max(axis=0))
    n = len(lmax)
    q = n // 4
    lt = lmax[q:n - q]
    return {"value_s": float(np.mean(lt)), "mean_s": float(np.mean(lt)), "std_s": _std(lt), "n_used": int(len(lt))}


def ps2_mpiblib(start, end, calls: int = 1, global_clock: bool = False) -> dict:
    lmax = _local(start, end, calls).max(axis=0)
    lo, hi = _mean_ci(lmax)
    return {"value_s": float(np.mean(lmax)), "mean_s": float(np.mean(lmax)), "ci_lo_s": lo, "ci_hi_s": hi,
            "min_s": float(np.min(lmax)), "max_s": float(np.max(lmax))}


def ps3_osu(start, end, calls: int = 1, global_clock: bool = False) -> dict:
    avg = _local(start, end, calls).mean(axis=1)       # each rank: t / nrep
    return {"value_s": float(np.mean(avg)), "mean_s": float(np.mean(avg)), "min_s": float(np.min(avg)),
            "max_s": float(np.max(avg))}


def ps4_mpiblib_global(start, end, calls: int = 1, global_clock: bool = False, root: int = 0) -> dict:
    if not global_clock:
        raise MtError("ps4_mpiblib_global needs per-rank times on a global clock")
    s, e = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    _local(s, e, calls)
    lt = (e.max(axis=0) - s[root]) / calls
    lo, hi = _mean_ci(lt)
    return {"value_s": float(np.mean(lt)), "mean_s": float(np.mean(lt)), "ci_lo_s": lo, "ci_hi_s": hi}


def ps5_mpibench(start, end, calls: int = 1, global_clock: bool = False, a: float = MPIBENCH_A) -> dict:
    t = _local(start, end, calls).ravel()
    thresh = a * float(np.percentile(t, 99))
    kept = t[t <= thresh]
    return {"value_s": float(np.mean(kept)), "mean_s": float(np.mean(kept)), "min_s": float(np.min(kept)),
            "max_s": float(np.max(kept)), "threshold_s": thresh, "removed": int(len(t) - len(kept))}


def ps6_nbcbench(start, end, calls: int = 1, global_clock: bool = False) -> dict:
    loc = _local(start, end, calls)
    ops = {"min": np.min, "max": np.max, "mean": np.mean, "median": np.median}
    out = {f"{k}_s": float(np.max(f(loc, axis=1))) for k, f in ops.items()}
    return {"value_s": out["mean_s"], **out}


def ps7_imb(start, end, calls: int = 1, global_clock: bool = False) -> dict:
    means = _local(start, end, calls).mean(axis=1)
    return {"value_s": float(np.mean(means)), "t_avg_s": float(np.mean(means)), "min_s": float(np.min(means)),
            "max_s": float(np.max(means)), "mean_s": float(np.mean(means))}


def ps8_mpptest(start, end, calls: int = 1, global_clock: bool = False, root: int = 0) -> dict:
    t = _local(start, end, calls)[root]
    return {"value_s": float(np.min(t)), "min_s": float(np.min(t))}


FUNCTIONS = {"ps1_skampi": ps1_skampi, "ps2_mpiblib": ps2_mpiblib, "ps3_osu": ps3_osu,
             "ps4_mpiblib_global": ps4_mpiblib_global, "ps5_mpibench": ps5_mpibench, "ps6_nbcbench": ps6_nbcbench,
             "ps7_imb": ps7_imb, "ps8_mpptest": ps8_mpptest}


def process(name: str, start, end, calls: int = 1, global_clock: bool = False) -> dict:
    """Apply one scheme PS1-PS8 by name."""
    if name not in FUNCTIONS:
        raise MtError(f"unknown processing scheme '{name}' (allowed: {', '.join(FUNCTIONS)})")
    return FUNCTIONS[name](start, end, calls=calls, global_clock=global_clock)


def across_runs(per_run: list[dict]) -> dict:
    """One scheme's values over the mpiruns of a group: every field is the median of its per-run
    values (None-valued fields are skipped), and ``run_values_s`` lists the per-run ``value_s``."""
    keys = [k for k in per_run[0] if k != "n_used"]
    out = {}
    for k in keys:
        vals = [r[k] for r in per_run if r.get(k) is not None]
        if not vals:
            out[k] = None
        elif k == "removed":
            out[k] = int(sum(vals))
        else:
            out[k] = float(np.median(vals))
    out["run_values_s"] = [r["value_s"] for r in per_run]
    return out


def clt_check(x, nrep: int, sizes=(10, 30, 100, 300, 500), nboot: int = 500, alpha: float = 0.05,
              seed: int = 1) -> dict:
    """Are means of `nrep` measurements like x near normal (the central limit theorem at work)?
    Resamples means of n values for each n (and nrep), Shapiro-Wilk on them: ``normal_at_nrep``
    and ``normal_from_n`` (the smallest n tried whose means pass, or None)."""
    from mpitempo.stats.diagnostics import clt_means

    x = np.asarray(x, dtype=float)
    ns = sorted(set(int(n) for n in sizes) | {int(nrep)})
    res = clt_means(x, sizes=ns, nboot=nboot, seed=seed)
    ok = {n: res[n]["shapiro_p"] > alpha for n in ns}
    return {"nrep": int(nrep), "shapiro_p_at_nrep": res[int(nrep)]["shapiro_p"], "normal_at_nrep": ok[int(nrep)],
            "normal_from_n": next((n for n in ns if all(ok[m] for m in ns if m >= n)), None)}
