"""OSU's and IMB's Avg / Min / Max over ranks, from the per-rank raw times of `run --per-rank`.

OSU Micro-Benchmarks (collective latency tests, osu_util ``print_stats`` after three
``MPI_Reduce`` of each rank's latency) and IMB-MPI1 (t_min / t_max / t_avg) print, per message
size, one number per rank first: the rank's own average time of one call over the timed iterations
(OSU: the sum of the iteration times divided by the iterations; IMB: (t2 - t1) / n_sample around
the loop). Avg (t_avg), Min (t_min) and Max (t_max) are the mean, smallest and largest of those
per-rank averages (Hunold and Carpen-Amarie 2016, Table 4: PS3 and PS7; ``stats.processing``).

Here, per (campaign, config, op, msize, nprocs) group:

1. per mpirun, the measurements kept by the same outlier filter as `summary` (per mpirun, on
   ``runtime_s``, ``analysis.filtering``) select the records of perrank.bin; each rank's average
   time of one call is the mean of (end - start) / calls over them; Avg / Min / Max over the
   ranks are what OSU (and IMB) would have printed after that mpirun;
2. across the mpiruns, each of the three numbers is the median of its per-mpirun values;
   ``iterations`` is the lower median over the mpiruns of the MPI calls timed per rank
   (kept measurements x calls per measurement).
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpitempo.analysis.filtering import filtered_view
from mpitempo.errors import MtError
from mpitempo.io.perrank import FILE_NAME, read_perrank
from mpitempo.stats import processing as ps
from mpitempo.stats.outliers import Filter

HOW_TO_RECORD = "record them with `mpitempo run --per-rank` (or per_rank = true in the campaign file)"


def perrank_path(run_file: str) -> Path:
    """perrank.bin next to a run's measurements file (runs.file)."""
    return Path(run_file).parent / FILE_NAME


def run_coverage(data) -> dict[tuple, tuple[int, int]]:
    """Per (campaign, config, op, nprocs): (mpiruns with perrank.bin, mpiruns) among those that
    measured the op."""
    rows = data.con.execute("""SELECT m.campaign, m.config, m.op, m.nprocs, m.run_no, r.file
        FROM (SELECT DISTINCT run_no, campaign, config, op, nprocs FROM meas) m JOIN runs r USING (run_no)""").fetchall()
    out: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    have: dict[str, bool] = {}
    for camp, cfg, op, nprocs, _, f in rows:
        if f not in have:
            have[f] = perrank_path(f).exists()
        c = out[(camp, cfg, op, int(nprocs))]
        c[0] += int(have[f])
        c[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _keep_flags(con, filt: Filter, run_nos: list[int]):
    """(run_no, op, msize, exp, rep, keep) of the measurements of the given runs, as numpy arrays."""
    src = filtered_view(con, filt)
    ids = ", ".join(str(int(r)) for r in run_nos)
    return con.execute(f"""SELECT run_no, op, msize, exp, rep, keep FROM {src}
        WHERE run_no IN ({ids}) ORDER BY run_no, exp, rep""").fetchnumpy()


def per_run_values(data, filt: Filter, groups: set[tuple] | None = None) -> dict[tuple, list[dict]]:
    """Per (campaign, config, op, msize, nprocs): one dict per mpirun with a perrank.bin:
    avg_s, min_s, max_s (OSU / IMB over ranks), calls_per_rank, run_id. Only the
    (campaign, config, op, nprocs) groups in ``groups`` when given."""
    runs = data.con.execute("SELECT run_no, campaign, run_id, config, nprocs, file FROM runs ORDER BY run_no"
                            ).fetchall()
    todo = {}
    for run_no, camp, run_id, cfg, nprocs, f in runs:
        p = perrank_path(f)
        if p.exists():
            todo[int(run_no)] = (camp, run_id, cfg, int(nprocs), p)
    out: dict[tuple, list[dict]] = defaultdict(list)
    if not todo:
        return out
    flags = _keep_flags(data.con, filt, sorted(todo))
    run_col = flags["run_no"]
    bounds = np.flatnonzero(np.diff(run_col)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(run_col)]])
    for a, b in zip(starts, ends):
        if a == b:
            continue
        run_no = int(run_col[a])
        camp, run_id, cfg, nprocs, path = todo[run_no]
        ops = flags["op"][a:b]
        if groups is not None and not any((camp, cfg, str(o), nprocs) in groups for o in set(ops.tolist())):
            continue
        pr = read_perrank(path)
        exp, rep, keep = flags["exp"][a:b].astype(np.int64), flags["rep"][a:b].astype(np.int64), \
            np.asarray(flags["keep"][a:b], dtype=bool)
        if pr.nprocs != nprocs or len(pr.exp) != len(exp):
            raise MtError(f"'{path}' does not match its run '{run_id}': {len(pr.exp)} records of {pr.nprocs} "
                          f"ranks, measurements.csv has {len(exp)} rows of {nprocs} ranks")
        # records of perrank.bin are in the order of measurements.csv; match on (exp, rep) anyway
        order = np.lexsort((pr.rep, pr.exp))
        if not (np.array_equal(pr.exp[order], exp) and np.array_equal(pr.rep[order], rep)):
            raise MtError(f"'{path}' does not match its run '{run_id}': its (exp, rep) records differ from "
                          "measurements.csv")
        start, end = pr.start[order], pr.end[order]
        msize = flags["msize"][a:b]
        for e in np.unique(exp):
            sel = (exp == e) & keep
            n = int(sel.sum())
            if n == 0:
                continue
            op = str(ops[exp == e][0])
            if groups is not None and (camp, cfg, op, nprocs) not in groups:
                continue
            r = ps.ps3_osu(start[sel].T, end[sel].T, calls=pr.calls)
            out[(camp, cfg, op, int(msize[exp == e][0]), nprocs)].append(
                {"run_id": run_id, "avg_s": r["mean_s"], "min_s": r["min_s"], "max_s": r["max_s"],
                 "calls_per_rank": n * pr.calls})
    return out


def across_runs(per_run: list[dict]) -> dict:
    """The medians over the mpiruns of Avg / Min / Max, the lower median of the calls per rank."""
    return {"avg_s": float(np.median([r["avg_s"] for r in per_run])),
            "min_s": float(np.median([r["min_s"] for r in per_run])),
            "max_s": float(np.median([r["max_s"] for r in per_run])),
            "iterations": int(statistics.median_low([r["calls_per_rank"] for r in per_run])),
            "runs": len(per_run), "run_avg_s": [r["avg_s"] for r in per_run]}


def rank_rows(data, filt: Filter, groups: set[tuple] | None = None) -> dict[tuple, dict]:
    """Per (campaign, config, op, msize, nprocs): across_runs() of per_run_values()."""
    return {k: across_runs(v) for k, v in per_run_values(data, filt, groups).items() if v}
