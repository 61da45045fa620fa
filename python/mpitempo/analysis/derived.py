"""Quantities derived from the times: bandwidth, message rate and overlap, per mpirun and per group.

The measurements stay times (measurements.csv); what one call moved and, for the overlap ops, what
its compute took are in each run's meta.json (``experiments[]``: ``bytes_per_call``,
``msgs_per_call``, ``overlap``). Everything here is computed once, in this module, from the
per-run rows of ``analysis.summary.per_run_table`` (or any rows with campaign, run_id, op, msize,
nprocs, median_s) and the runs' meta.json:

* bandwidth of one mpirun = bytes_per_call / its median time, in MB/s (1 MB = 1e6 B, OSU's and
  IMB's unit); message rate = msgs_per_call / its median time, in messages/s (rate ops only);
* across mpiruns: the median of the per-run values with the same distribution-free CI of the
  median as the times (``stats.describe.median_ci``, applied to the per-run values), min and max;
* overlap of one mpirun (OSU's definition, ``overlap_pct``) from the run median of the overlap op
  (t_overall), the measured compute (t_compute) and the pure communication time (t_pure: the run
  median of the matching pure op in the same run and size when measured, else the calibration
  ``overlap.pure_s``);
* the per-run deviation of the compute from its target (``compute_deviation``), from which
  ``analysis.flags`` raises ``compute_miscalibrated`` (threshold ``flags.COMPUTE_TOLERANCE``).
"""
from __future__ import annotations

import numpy as np

from mpitempo.stats.describe import median_ci

MB = 1e6                      # bytes in one MB of "MB/s" (OSU Micro-Benchmarks, IMB: 1e6)
RATE_OPS = ("mbw_mr",)        # ops whose message rate is a result (OSU osu_mbw_mr's Messages/s)
OVERLAP_SUFFIX = "_overlap"


def exp_info(meta: dict, op: str, msize: int) -> dict:
    """The ``experiments[]`` entry of (op, msize) in one run's meta.json ({} when absent)."""
    for e in (meta or {}).get("experiments") or []:
        if isinstance(e, dict) and e.get("op") == op and _int(e.get("msize")) == int(msize):
            return e
    return {}


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) else 0.0


def bandwidth_MBps(bytes_per_call: float, time_s: float) -> float | None:
    """MB/s of one call that moved bytes_per_call in time_s (None without a positive time)."""
    return bytes_per_call / time_s / MB if time_s and time_s > 0 and bytes_per_call > 0 else None


def msg_rate_per_s(msgs_per_call: float, time_s: float) -> float | None:
    return msgs_per_call / time_s if time_s and time_s > 0 and msgs_per_call > 0 else None


def overlap_pct(t_overall: float, t_compute: float, t_pure: float) -> float:
    """OSU's overlap of communication and computation, in %:
    max(0, 100 x (1 - (t_overall - t_compute) / t_pure)) (OSU Micro-Benchmarks 7.x,
    c/util/osu_util_mpi.c, print_stats_nbc: ``MAX(0, 100 - ((overall - compute) / pure) * 100)``).
    100 % = the communication hid completely behind the compute."""
    return max(0.0, 100.0 * (1.0 - (t_overall - t_compute) / t_pure))


def pure_op(op: str) -> str | None:
    """The pure op of an overlap op: iallreduce_overlap -> iallreduce; None for others."""
    return op[: -len(OVERLAP_SUFFIX)] if op.endswith(OVERLAP_SUFFIX) else None


def compute_deviation(ov: dict) -> float | None:
    """|compute_median_s / compute_target_s - 1| of one run's overlap entry (None without a target)."""
    t, m = _num((ov or {}).get("compute_target_s")), _num((ov or {}).get("compute_median_s"))
    return abs(m / t - 1.0) if t > 0 else None


def spread(values, level: float = 0.95) -> dict:
    """{median, lo, hi, level, need_runs, min, max, runs} of per-run values (the median CI of the times)."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if not v.size:
        return {"median": None, "lo": None, "hi": None, "level": level, "need_runs": None, "min": None,
                "max": None, "runs": 0}
    ci = median_ci(v, level)
    return {"median": float(np.median(v)), "lo": ci["lo_s"], "hi": ci["hi_s"], "level": level,
            "need_runs": ci["need_runs"], "min": float(v.min()), "max": float(v.max()), "runs": int(v.size)}


def per_run_derived(per_run: list[dict], metas_by_campaign: dict) -> list[dict]:
    """One row per per-run row with a median: the keys of the group, run_id, run_index, median_s,
    bytes_per_call, msgs_per_call, bandwidth_MBps, msg_rate_per_s, and for overlap ops overlap_pct
    (None with overlap_why), pure_s, pure_source, compute_median_s, compute_target_s, compute_deviation."""
    med = {(r["campaign"], r["run_id"], r["op"], r["msize"], r["nprocs"]): r.get("median_s") for r in per_run}
    out = []
    for r in per_run:
        t = r.get("median_s")
        meta = metas_by_campaign.get(r["campaign"], {}).get(r["run_id"], {})
        e = exp_info(meta, r["op"], r["msize"])
        b, m = _num(e.get("bytes_per_call")), _num(e.get("msgs_per_call"))
        d = {k: r[k] for k in ("campaign", "config", "op", "msize", "nprocs", "run_id")}
        d.update(run_index=r.get("run_index"), median_s=t, bytes_per_call=b, msgs_per_call=m,
                 bandwidth_MBps=bandwidth_MBps(b, t) if t is not None else None,
                 msg_rate_per_s=msg_rate_per_s(m, t) if t is not None and r["op"] in RATE_OPS else None)
        base = pure_op(r["op"])
        ov = e.get("overlap") if isinstance(e.get("overlap"), dict) else None
        if base is not None:
            ov = ov or {}
            tp = med.get((r["campaign"], r["run_id"], base, r["msize"], r["nprocs"]))
            src = "measured" if tp else None
            if not tp and _num(ov.get("pure_s")) > 0:
                tp, src = _num(ov.get("pure_s")), "calibration"
            tc = _num(ov.get("compute_median_s"))
            d.update(pure_s=tp, pure_source=src, compute_median_s=tc,
                     compute_target_s=_num(ov.get("compute_target_s")), compute_deviation=compute_deviation(ov),
                     overlap_pct=None, overlap_why=None)
            if t is None:
                d["overlap_why"] = "no valid measurement of the overlap op"
            elif not ov:
                d["overlap_why"] = "meta.json has no overlap entry for this experiment"
            elif not tp:
                d["overlap_why"] = (f"no pure time: {base} was not measured in this run and the calibration "
                                    "pure_s is 0 (the compute was given explicitly): add the op "
                                    f"{base} to the run")
            else:
                d["overlap_pct"] = overlap_pct(t, tc, tp)
        out.append(d)
    return out


def group_derived(per_run: list[dict], metas_by_campaign: dict, level: float = 0.95) -> dict:
    """(campaign, config, op, msize, nprocs) -> the derived keys of a summary row:
    ``bandwidth_MBps`` (when bytes_per_call > 0), ``msg_rate_per_s`` (rate ops with msgs_per_call > 0),
    ``overlap_pct`` and ``compute`` (overlap ops; the flag compute_miscalibrated is set by
    analysis.flags from the same per-run deviation, ``compute_deviation``)."""
    groups: dict[tuple, list[dict]] = {}
    for d in per_run_derived(per_run, metas_by_campaign):
        groups.setdefault((d["campaign"], d["config"], d["op"], d["msize"], d["nprocs"]), []).append(d)
    out = {}
    for key, ds in groups.items():
        g: dict = {}
        if any(d["bytes_per_call"] > 0 for d in ds):
            g["bandwidth_MBps"] = dict(spread([d["bandwidth_MBps"] for d in ds], level),
                                       bytes_per_call=sorted({d["bytes_per_call"] for d in ds if d["bytes_per_call"]}))
        if key[2] in RATE_OPS and any(d["msgs_per_call"] > 0 for d in ds):
            g["msg_rate_per_s"] = dict(spread([d["msg_rate_per_s"] for d in ds], level),
                                       msgs_per_call=sorted({d["msgs_per_call"] for d in ds if d["msgs_per_call"]}))
        if pure_op(key[2]) is not None:
            vals = [d["overlap_pct"] for d in ds if d["overlap_pct"] is not None]
            srcs = sorted({d["pure_source"] for d in ds if d["overlap_pct"] is not None})
            s = spread(vals, level)
            why = sorted({d["overlap_why"] for d in ds if d["overlap_why"]})
            g["overlap_pct"] = {"median": s["median"], "lo": s["lo"], "hi": s["hi"], "min": s["min"], "max": s["max"],
                                "runs": s["runs"], "level": level, "need_runs": s["need_runs"],
                                "pure_source": srcs[0] if len(srcs) == 1 else ("mixed" if srcs else None),
                                "why_none": "; ".join(why) if not vals and why else None}
            cm = [d["compute_median_s"] for d in ds if d["compute_median_s"]]
            pure = [d["pure_s"] for d in ds if d["pure_s"]]
            devs = [d["compute_deviation"] for d in ds if d["compute_deviation"] is not None]
            g["compute"] = {"target_s": float(np.median([d["compute_target_s"] for d in ds])) if ds else None,
                            "median_s": float(np.median(cm)) if cm else None,
                            "min_s": float(min(cm)) if cm else None, "max_s": float(max(cm)) if cm else None,
                            "pure_s": float(np.median(pure)) if pure else None,
                            "max_deviation": max(devs) if devs else None}
        out[key] = g
    return out


def run_values(meds: list[float], bytes_per_call: list[float]) -> list[float | None]:
    """Per-run bandwidths (MB/s) of run medians with their runs' bytes_per_call."""
    return [bandwidth_MBps(b, t) for t, b in zip(meds, bytes_per_call)]


def imb_overlap_pct(t_ovrl: float, t_cpu: float, t_pure: float) -> float:
    """IMB-NBC's overlap in % (a different definition from OSU's, for the IMB export only):
    100 x max(0, min(1, (t_pure + t_CPU - t_ovrl) / max(t_pure, t_CPU))) (Intel MPI Benchmarks
    2021.11, src_c/IMB_output.c, IMB_output)."""
    return 100.0 * max(0.0, min(1.0, (t_pure + t_cpu - t_ovrl) / max(t_pure, t_cpu)))
