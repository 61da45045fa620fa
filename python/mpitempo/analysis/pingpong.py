"""From a Run to result records: one per (msize, npp), the timer study, the
loop-averaged comparison, the npp sweep (Luecke et al. 2009, sections 3.1-3.4 and Table 4.1).
The statistics are ``stats.pingpong`` (describe() and the cut_coef filter with the ping-pong
conventions). Pure: no I/O, no printing."""
from __future__ import annotations

import math

import numpy as np

from mpitempo.stats import pingpong as stats
from mpitempo.io.pingpong import Run
from mpitempo.analysis.simulated import record


def _stats_block(msize: int, t: np.ndarray) -> dict:
    s = stats.summarize(t)
    d = s.to_dict()
    d.update(stats.rates(msize, s))
    return d


def timer_study(run: Run, bins: int = 40) -> dict:
    st = run.meta["timer"]["study"]
    spt = run.s_per_tick
    freq = [(int(t), int(c)) for t, c in st.get("freq", [])]
    vals = [t * spt for t, _ in freq]
    cnts = [c for _, c in freq]
    s = stats.weighted_summary(vals, cnts) if freq else stats.summarize([])
    out = {"timer": run.meta["timer"]["name"], "n": int(st["n"]), "seconds": float(st["seconds"]),
           "res_timing_s": float(st["res_timing_s"]), "min_ov_s": float(st["min_ov_s"]),
           "negative": int(st.get("negative", 0)), "dropped": int(st.get("dropped", 0))}
    out.update({k: v for k, v in s.to_dict().items() if k != "n"})
    upper = min(s.max_s, 5 * s.median_s) if freq else None
    out["histogram"] = stats.histogram(vals, bins=bins, upper=upper, weights=cnts) if freq else None
    out["frequency"] = [[v, c] for v, c in zip(vals, cnts)]
    return out


def analyse(run: Run, cut_coef: float = stats.DEFAULT_CUT_COEF, bins: int = 40, details: bool = False) -> dict:
    """The full analysis. details adds histograms and exact frequency tables."""
    stats.check_cut_coef(cut_coef)
    spt = run.s_per_tick
    st = run.meta["timer"]["study"]
    res, ov = float(st["res_timing_s"]), float(st["min_ov_s"])
    results = []
    for ser in sorted(run.get("pingpong"), key=lambda s: (s.msize, s.npp)):
        t = ser.one_way_s(spt)
        est = run.estimates.get(ser.msize, {})
        rec = {"msize": ser.msize, "npp": ser.npp, "npp_calculated": est.get("npp_calculated"),
               "median_ppt_s": est.get("median_ppt_s"), "ntrial": int(t.size), "res_timing_s": res,
               "min_ov_s": ov}
        rec.update(_stats_block(ser.msize, t))
        kept, removed = stats.filter_cut(t, cut_coef)
        filt = {"cut_coef": cut_coef, "removed": removed}
        filt.update(_stats_block(ser.msize, kept))
        rec["filtered"] = filt
        if details:
            med = rec["median_s"]
            rec["histogram"] = stats.histogram(t, bins=bins, upper=min(rec["max_s"], 2 * cut_coef * med)
                                               if med > 0 else None)
            rec["frequency"] = [[v, c] for v, c in stats.frequency_table(ser.ticks, spt / (2.0 * ser.npp))]
        results.append(rec)
    loops = []
    for ser in sorted(run.get("loop"), key=lambda s: s.msize):
        t = ser.one_way_s(spt)
        lp = run.loops.get(ser.msize, {})
        s = stats.summarize(t)
        rec = {"msize": ser.msize, "iters": ser.npp, "skip": lp.get("skip"), "reps": int(t.size),
               "avg_s": [float(x) for x in t], "min_s": s.min_s, "median_s": s.median_s, "mean_s": s.mean_s,
               "max_s": s.max_s}
        ours = [r for r in results if r["msize"] == ser.msize]
        if ours:
            # compare with the set at the calculated npp, else the first one
            o = next((r for r in ours if r["npp"] == r["npp_calculated"]), ours[0])
            ref = s.median_s
            rec["ours_npp"] = o["npp"]
            rec["ours_min_s"], rec["ours_median_s"], rec["ours_mean_s"] = o["min_s"], o["median_s"], o["mean_s"]
            rec["ours_max_s"], rec["ours_std_s"] = o["max_s"], o["std_s"]
            rec["min_vs_loop"] = o["min_s"] / ref - 1 if ref > 0 else float("nan")
            rec["median_vs_loop"] = o["median_s"] / ref - 1 if ref > 0 else float("nan")
        loops.append(rec)

    return {"simulated": record(run.meta), "nprocs": run.meta.get("nprocs"), "source": run.meta["pingpong"]["source"],
            "dest": run.meta["pingpong"]["dest"], "timer_study": timer_study(run, bins),
            "params": run.meta["pingpong"], "cut_coef": cut_coef, "results": results, "loop": loops,
            "bidir": bidir_records(run, results, cut_coef)}


def bidir_records(run: Run, results: list[dict], cut_coef: float) -> list[dict]:
    """Bidirectional exchanges (--bidir): per message size the time of one exchange (both ranks
    send and receive msize bytes at once), filtered by cut_coef x median, the rate counting both
    directions (2 x msize / time), and the one-way ping-pong rate of the same size for comparison."""
    out = []
    for ser in sorted(run.get("bidir"), key=lambda s: s.msize):
        t = ser.ticks.astype(float) * run.s_per_tick / ser.npp
        kept, removed = stats.filter_cut(t, cut_coef)
        s = stats.summarize(kept)
        rec = {"msize": ser.msize, "npp": ser.npp, "ntrial": int(t.size), "removed": removed, "min_s": s.min_s,
               "median_s": s.median_s, "mean_s": s.mean_s, "max_s": s.max_s,
               "rate_both_median_mb_s": stats.rate_mb_s(2 * ser.msize, s.median_s)}
        uni = next((r for r in results if r["msize"] == ser.msize), None)
        if uni is not None:
            med = (uni.get("filtered") or {}).get("median_s", uni["median_s"])
            rec["pingpong_one_way_median_s"] = med
            rec["rate_uni_median_mb_s"] = stats.rate_mb_s(ser.msize, med)
        out.append(rec)
    return out


def sweep_table(results: list[dict], msize: int) -> dict:
    """Table 4.1's shape for one message size: rows min, median, mean, max,
    variance, std (µs, µs^2), one column per npp."""
    rows = sorted((r for r in results if r["msize"] == msize), key=lambda r: r["npp"])
    return {"msize": msize, "npp": [r["npp"] for r in rows],
            "minimum time": [r["min_s"] * 1e6 for r in rows], "median time": [r["median_s"] * 1e6 for r in rows],
            "average time": [r["mean_s"] * 1e6 for r in rows], "maximum time": [r["max_s"] * 1e6 for r in rows],
            "Variance": [r["variance_s2"] * 1e12 for r in rows],
            "Standard deviation": [r["std_s"] * 1e6 for r in rows],
            "ntrial": [r["ntrial"] for r in rows]}


def json_records(a: dict, details: bool = False) -> dict:
    """The --json document: NaN becomes None."""
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    ts = dict(a["timer_study"])
    if not details:
        ts.pop("frequency", None)
        ts.pop("histogram", None)
    sim = {"simulated": a["simulated"]} if a.get("simulated") else {}
    return clean({**sim, "nprocs": a["nprocs"], "source": a["source"], "dest": a["dest"], "cut_coef": a["cut_coef"],
                  "timer_study": ts, "results": a["results"], "loop": a["loop"], "bidir": a.get("bidir", [])})
