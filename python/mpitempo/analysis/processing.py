"""`summary --process`: the processing schemes PS1-PS8 (stats/processing.py) applied to the
per-rank raw times of a campaign, next to mpitempo's own (``reprompi``) processing. The per-rank
times are those of the ranks whose times are the op's (meta.json ``timed_ranks``,
analysis/timed.py): an idle rank, e.g. the target of a passive-target one-sided op, is left out.

Per (config, op, msize, nprocs) and scheme: the scheme is applied to each mpirun separately (what
the benchmark would have printed after that mpirun), and the row reports the median over the
mpiruns of each number, with the per-run values in ``run_values_s``.
"""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpitempo.errors import MtError
from mpitempo.io.perrank import FILE_NAME, experiment_calls, read_perrank
from mpitempo.analysis.timed import timed_rows
from mpitempo.io.rundir import check_root, find_runs, load_meta
from mpitempo.stats import processing as ps
from mpitempo.stats.outliers import Filter, keep_mask
from mpitempo import kinds

HOW_TO_RECORD = "record it with `mpitempo run --per-rank` (or per_rank = true in the campaign file)"
HOW_TO_SYNC = "record with `mpitempo run --per-rank --sync hca3` (a synchronised global clock)"


def _reprompi_run(csv_path: Path, filt: Filter) -> dict[int, dict]:
    """Per experiment of one run: the median of the valid runtimes after the outlier filter
    (Hunold and Carpen-Amarie 2016, Alg. 3)."""
    by_exp: dict[int, list[float]] = defaultdict(list)
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["valid"] == "1":
                by_exp[int(row["exp"])].append(float(row["runtime_s"]))
    out = {}
    for exp, vals in by_exp.items():
        x = np.asarray(vals)
        kept = x[keep_mask(x, filt)]
        out[exp] = {"value_s": float(np.median(kept)), "median_s": float(np.median(kept)),
                    "mean_s": float(np.mean(kept)), "outliers": int(len(x) - len(kept))}
    return out


def process_campaigns(roots, names: list[str], filt: Filter | None = None) -> tuple[list[dict], list[str]]:
    """(rows, notes) for the processing schemes `names` on the campaign directories `roots`."""

    filt = filt or Filter()
    need_pr = [n for n in names if n != "reprompi"]
    rows, notes = [], []
    many = len(roots) > 1
    for root in roots:
        root = Path(root)
        check_root(root)
        kind = kinds.of_campaign(root)
        if kind.name != "bench":
            raise MtError(f"summary --process needs a campaign of kind bench; '{root}' is of kind {kind.name}")
        complete, _, _ = find_runs(root, kind)
        if not complete:
            raise MtError(f"campaign '{root}' has no complete runs")
        without = [d.name for d in complete if not (d / FILE_NAME).exists()]
        if need_pr and without:
            which = need_pr[0] if len(need_pr) == 1 else "the processing schemes PS1-PS8"
            raise MtError(f"{which} need(s) per-rank raw times, but {len(without)} of {len(complete)} runs of "
                          f"'{root}' have no {FILE_NAME} (e.g. {without[0]}); {HOW_TO_RECORD}")
        # group -> scheme -> per-run results
        groups: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        clt_sample: dict[tuple, tuple[int, np.ndarray]] = {}   # group -> (fewest valid per run, lmax of one run)
        mscheme: dict[tuple, set] = defaultdict(set)
        local_clock_runs = 0
        for d in complete:
            meta = load_meta(d / "meta.json")
            cfg, nprocs = str(meta.get("config", "default")), int(meta.get("nprocs", 0))
            exps = {int(e["exp"]): (e["op"], int(e["msize"]), timed_rows(e, nprocs, str(d / "meta.json")))
                    for e in meta.get("experiments", [])}
            sname = str((meta.get("scheme") or {}).get("name", ""))
            rp = _reprompi_run(d / "measurements.csv", filt) if "reprompi" in names else {}
            pr = read_perrank(d / FILE_NAME, root) if need_pr else None
            calls_by_exp = experiment_calls(meta)
            if pr is not None and pr.nprocs != nprocs:   # a file of another run: processed as if of this one
                raise MtError(f"'{d / FILE_NAME}' has {pr.nprocs} ranks, but its run's meta.json says {nprocs}; "
                              f"refusing to use it")
            if pr is not None and not pr.global_clock:
                local_clock_runs += 1
            for exp, (op, msize, timed) in exps.items():
                key = (root.name if many else None, cfg, op, msize, nprocs)
                mscheme[key].add(sname)
                if exp in rp:
                    groups[key]["reprompi"].append(rp[exp])
                if pr is None:
                    continue
                start, end = pr.experiment(exp)
                if start.shape[1] == 0:
                    continue
                if timed is not None:   # only the ranks whose times are the op's (an idle target is not)
                    start, end = start[timed], end[timed]
                calls = pr.calls_of(exp, calls_by_exp)
                lmax = ((end - start) / calls).max(axis=0)
                prev = clt_sample.get(key)
                clt_sample[key] = (min(prev[0], lmax.size) if prev else lmax.size,
                                   lmax if not prev or lmax.size > prev[1].size else prev[1])
                for n in need_pr:
                    if n == "ps4_mpiblib_global" and not pr.global_clock:
                        if names == [n]:
                            raise MtError(f"ps4_mpiblib_global needs per-rank times on a global clock, but run "
                                          f"'{d.name}' of '{root}' recorded local times; {HOW_TO_SYNC}")
                        continue
                    groups[key][n].append(ps.process(n, start, end, calls=calls, global_clock=pr.global_clock))
        if local_clock_runs and "ps4_mpiblib_global" in names:
            notes.append(f"ps4_mpiblib_global left out for {local_clock_runs} run(s) of '{root}' with local "
                         f"per-rank times (it needs a global clock; {HOW_TO_SYNC})")
        if any(n in ps.MEAN_CI_SCHEMES for n in names):
            notes += _clt_notes(clt_sample)
        for key in sorted(groups, key=lambda k: (k[0] or "", k[1], k[2], k[3], k[4])):
            camp, cfg, op, msize, nprocs = key
            for n in names:
                per_run = groups[key].get(n)
                if not per_run:
                    continue
                row = {"config": cfg, "op": op, "msize": msize, "nprocs": nprocs,
                       "scheme": ",".join(sorted(mscheme[key])), "process": n,
                       "benchmark": "mpitempo (ReproMPI method)" if n == "reprompi" else ps.SCHEMES[n][0],
                       "runs": len(per_run)}
                if camp is not None:
                    row = {"campaign": camp, **row}
                row.update(ps.across_runs(per_run))
                if n == "reprompi":
                    row["filter"] = filt.settings()
                rows.append(row)
    return rows, notes


def _clt_notes(clt_sample: dict, limit: int = 3) -> list[str]:
    """Warnings for groups with fewer than CLT_NREP measurements per mpirun, where PS2/PS4 give a
    Student-t interval of the mean, with a CLT check on the group's own data."""
    small = {k: v for k, v in clt_sample.items() if v[0] < ps.CLT_NREP}
    if not small:
        return []
    out = [f"warning: {len(small)} group(s) have fewer than {ps.CLT_NREP} valid measurements per mpirun: the "
           "confidence intervals of the mean of ps2_mpiblib and ps4_mpiblib_global assume normal means, "
           "which Hunold and Carpen-Amarie (2016) saw only from about 500 measurements"]
    for key, (n, x) in sorted(small.items(), key=lambda kv: kv[1][0])[:limit]:
        if x.size < 10:
            continue
        c = ps.clt_check(x, n)
        name = f"{key[1]} {key[2]} {key[3]} B"
        verdict = (f"means of {n} look normal (Shapiro-Wilk p = {c['shapiro_p_at_nrep']:.2g})" if c["normal_at_nrep"]
                   else f"means of {n} do not look normal (Shapiro-Wilk p = {c['shapiro_p_at_nrep']:.2g})")
        more = (f"; normal from n = {c['normal_from_n']}" if c["normal_from_n"]
                else "; not normal even at the largest n tried: prefer the median")
        out.append(f"CLT check ({name}, resampled): {verdict}{more}")
    return out
