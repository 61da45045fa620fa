"""Adaptive repetitions: what stopped each summary row (docs/methods.md, "Adaptive repetitions").

Within an mpirun the C core measures an experiment until the distribution-free interval of its
median is within +-precision (base/stoprule.c); meta.json records per experiment ``stop``
(precision, cap, time or fixed). Across mpiruns, a campaign with ``max_mpiruns`` adds mpiruns at
fixed looks (``run_looks``: mpiruns, then x1.5, up to max_mpiruns) while a row's interval of the
median of the run medians is wider than the precision (runner.adaptive). Every look's interval
has the level 1 - 0.05 / K for K looks, so the interval reported at whichever look the campaign
stopped covers the median with probability >= 95% whatever the stopping rule did (union bound over
the looks: the repeated-confidence-interval argument of Jennison and Turnbull 1989).

``annotate`` adds to every summary row: ``precision`` (the target, a fraction, or None),
``ci_level`` (the level of its ``median_ci``), ``ci_rel`` (the interval's half-width relative to
the median), ``stop`` (why the row has as many mpiruns as it has: precision, cap, budget, mpiruns or
fixed) and ``stop_reps`` (per reason, the mpiruns in which the core stopped measuring the row's
experiment for it).
"""
from __future__ import annotations

import json
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np

from mpitempo.stats.describe import ALPHA, RUN_GROWTH, looks_level, median_ci, run_looks  # noqa: F401
from mpitempo.errors import MtError
from mpitempo.io.params import percent_value

RECORD = "adaptive.json"     # the runner's record of the looks made (runner.adaptive)

# why a row has the mpiruns it has
STOP_TEXT = {
    "precision": "the interval reached the precision",
    "cap": "max_mpiruns reached before the precision",
    "budget": "the --budget ran out before the precision",
    "mpiruns": "the mpiruns given were made (no max_mpiruns: none added)",
    "fixed": "no precision asked for (--precision off or a fixed --nrep)",
}


def rel_half_width(ci: dict | None, median: float | None) -> float | None:
    """max(median - lo, hi - median) / |median|, or None without an interval or with a median of 0."""
    if not ci or ci.get("lo_s") is None or median is None or not median:
        return None
    return max(median - ci["lo_s"], ci["hi_s"] - median) / abs(median)


def campaign_spec(root: Path) -> dict | None:
    """{precision, mpiruns, max_mpiruns, looks, level} of a campaign directory's campaign.toml (None for
    a store or a campaign without one). The level is 1 - ALPHA / len(looks) when mpiruns are added
    adaptively, else None (the summary's own level)."""

    path = Path(root) / "campaign.toml"
    try:
        if not path.is_file() or path.is_symlink():
            return None
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    try:
        prec = percent_value(spec.get("precision", "off"))
    except MtError:
        prec = 0.0
    m, mx = spec.get("mpiruns"), spec.get("max_mpiruns")
    looks = run_looks(m, mx) if isinstance(m, int) and isinstance(mx, int) and mx > m and prec > 0 else None
    return {"precision": prec or None, "mpiruns": m, "max_mpiruns": mx, "looks": looks,
            "level": looks_level(len(looks)) if looks else None}


def read_record(root: Path) -> dict:
    try:
        rec = json.loads((Path(root) / RECORD).read_text(encoding="utf-8"))
        return rec if isinstance(rec, dict) else {}
    except (OSError, ValueError):
        return {}


def group_medians(per_run: list[dict]) -> dict[tuple, np.ndarray]:
    """(campaign, config, op, msize, nprocs) -> the run medians of the group."""
    out: dict[tuple, list[float]] = {}
    for r in per_run:
        if r.get("median_s") is not None:
            out.setdefault((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]), []).append(r["median_s"])
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def rep_stops(metas_by_campaign: dict) -> dict[tuple, Counter]:
    """(campaign, config, op, msize, nprocs) -> Counter of the core's per-experiment ``stop`` over the mpiruns."""
    out: dict[tuple, Counter] = {}
    for camp, runs in metas_by_campaign.items():
        for meta in runs.values():
            exps = meta.get("experiments") if isinstance(meta, dict) else None
            if not isinstance(exps, list):
                continue
            for e in exps:
                if isinstance(e, dict) and isinstance(e.get("stop"), str):
                    key = (camp, meta.get("config"), e.get("op"), e.get("msize"), meta.get("nprocs"))
                    out.setdefault(key, Counter())[e["stop"]] += 1
    return out


def row_stop(precision: float | None, ci_rel: float | None, spec: dict | None, record: dict, config: str) -> str:
    if not precision:
        return "fixed"
    if ci_rel is not None and ci_rel <= precision:
        return "precision"
    if spec and spec.get("looks"):
        return "budget" if config in (record.get("budget_stopped") or []) else "cap"
    return "mpiruns"


def annotate(rows: list[dict], per_run: list[dict], metas_by_campaign: dict, roots: dict) -> None:
    """Add precision, ci_level, ci_rel, stop, stop_reps to the summary rows (in place); ``roots`` maps a
    campaign label to its directory (absent for a store). The median CI of a row of a campaign that
    added mpiruns adaptively is recomputed at that campaign's level (1 - 0.05 / looks)."""
    specs = {label: campaign_spec(root) for label, root in roots.items()}
    records = {label: read_record(root) for label, root in roots.items()}
    meds = group_medians(per_run)
    stops = rep_stops(metas_by_campaign)
    for r in rows:
        key = (r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"])
        spec = specs.get(r["campaign"])
        cnt = stops.get(key, Counter())
        prec = spec["precision"] if spec else None
        if spec and spec.get("level") and key in meds:
            r["median_ci"] = median_ci(meds[key], spec["level"])
        ci = r.get("median_ci") or {}
        median = (r.get("run_medians") or {}).get("median_s")
        r["precision"] = prec
        r["ci_level"] = ci.get("level")
        r["ci_rel"] = rel_half_width(ci, median)
        r["stop"] = row_stop(prec, r["ci_rel"], spec, records.get(r["campaign"], {}), r["config"])
        r["stop_reps"] = dict(sorted(cnt.items()))


def stop_notes(rows) -> list[str]:
    """One line on what stopped the rows (analysis.adaptive), when any row asked for a precision."""
    asked = [r for r in rows if r.get("precision")]
    if not asked:
        return []
    by = Counter(r["stop"] for r in asked)
    precs = sorted({r["precision"] for r in asked})
    out = [f"stop (precision ±{'/'.join(f'{100 * p:g}%' for p in precs)} of the median, 95% interval): "
           + "; ".join(f"{k} in {n} row(s): {STOP_TEXT.get(k, k)}" for k, n in sorted(by.items()))]
    reps = Counter()
    for r in asked:
        reps.update(r.get("stop_reps") or {})
    if reps:
        out.append("inside the mpiruns, measuring an experiment stopped at: "
                   + ", ".join(f"{k} {n}x" for k, n in sorted(reps.items()))
                   + " (precision: its median's interval within the precision; cap: --nrep; time: --exp-time)")
    return out
