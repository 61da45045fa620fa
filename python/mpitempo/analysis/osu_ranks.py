"""OSU's and IMB's own statistics over ranks, from the per-rank raw times of `run --per-rank`.

Both suites first reduce each rank's timed iterations to that rank's average time of one call (OSU:
the sum of the iteration times divided by the iterations; IMB: (t2 - t1) / n_sample around the
loop), then combine the ranks' averages, differently per benchmark (read in their sources):

  ``mean``   OSU collective, persistent, neighbourhood and non-blocking tests (osu_util
             ``print_stats`` after ``MPI_Reduce`` of each rank's latency): Avg / Min / Max = the
             mean / smallest / largest over all ranks (Hunold and Carpen-Amarie 2016, Table 4, PS3);
             IMB t_avg / t_min / t_max of the collectives, Sendrecv and Exchange (PS7);
  ``origin`` OSU osu_latency, osu_bw, osu_bibw and every one-sided test: rank 0's time only (rank
             0 is the origin; the target is not timed, so an idle target never enters the number);
  ``first_half`` osu_multi_lat and osu_mbw_mr: the mean over the initiating ranks 0 .. p/2 - 1
             (``MPI_Reduce`` of their times with MPI_SUM over the pairs, divided by the pairs);
  ``max``    IMB's t of PingPong, PingPing, Uniband, Biband, IMB-RMA and the Mbytes/sec of every
             IMB benchmark: the largest rank average (``timing[MAX]`` in IMB_output.c).

Here, per (campaign, config, op, msize, nprocs) group:

1. per mpirun, the measurements kept by the same outlier filter as `summary` (per mpirun, on
   ``runtime_s``, ``analysis.filtering``) select the records of perrank.bin; each rank's average
   time of one call is the mean of (end - start) / calls over them; the statistics above are what
   OSU (and IMB) would have printed after that mpirun, over the ranks whose times are the op's
   (meta.json ``experiments[].timed_ranks`` where recorded: an idle rank makes no call);
2. across the mpiruns, each number is the median of its per-mpirun values; ``iterations`` is the
   lower median over the mpiruns of the MPI calls timed per rank (kept measurements x calls per
   measurement).
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpitempo.analysis.filtering import filtered_view
from mpitempo.errors import MtError
from mpitempo.io.perrank import FILE_NAME, experiment_calls, read_perrank
from mpitempo.stats import processing as ps
from mpitempo.stats.outliers import Filter
from mpitempo.analysis.timed import timed_rows
from mpitempo.io.rundir import load_meta

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
        start, end, valid = pr.start[order], pr.end[order], pr.valid[order]
        msize = flags["msize"][a:b]
        timed, calls_by_exp = _timed_ranks(path.parent / "meta.json")
        for e in np.unique(exp):
            sel = (exp == e) & keep
            n = int(sel.sum())
            if n == 0:
                continue
            op = str(ops[exp == e][0])
            if groups is not None and (camp, cfg, op, nprocs) not in groups:
                continue
            calls = pr.calls_of(int(e), calls_by_exp)
            st = rank_statistics(start[sel].T, end[sel].T, calls, run_id, n * calls, timed.get(int(e)))
            vsel = (exp == e) & valid
            st["tail"] = tail_statistics(start[vsel].T, end[vsel].T, calls, timed.get(int(e)))
            out[(camp, cfg, op, int(msize[exp == e][0]), nprocs)].append(st)
    return out


STATS = ("avg_s", "min_s", "max_s", "origin_s", "first_half_s")


def rank_statistics(start, end, calls: int, run_id: str = "", calls_per_rank: int = 0, timed=None) -> dict:
    """One mpirun of one experiment: start / end of shape (ranks, measurements) -> each rank's
    average time of one call (``rank_avg_s``) and the suites' statistics over the ranks: avg_s,
    min_s, max_s (mean, smallest, largest; OSU's Avg / Min / Max, IMB's t_avg / t_min / t_max),
    origin_s (rank 0's), first_half_s (mean over ranks 0 .. p/2 - 1; rank 0 alone when p = 1).
    ``timed``: the ranks whose times are the op's (meta.json experiments[].timed_ranks; None or
    "all": every rank): the others make no call of the op, and no statistic takes them."""
    ps.ps3_osu(start, end, calls=calls)          # its checks of the shapes and times
    avg = (np.asarray(end, dtype=float) - np.asarray(start, dtype=float)).mean(axis=1) / calls
    p = len(avg)
    sel = sorted({int(r) for r in timed if 0 <= int(r) < p}) if isinstance(timed, list) and timed else list(range(p))
    t = avg[sel]
    first = [r for r in sel if r < max(1, p // 2)] or sel[:1]
    return {"run_id": run_id, "avg_s": float(t.mean()), "min_s": float(t.min()), "max_s": float(t.max()),
            "origin_s": float(avg[sel[0]]), "first_half_s": float(avg[first].mean()),
            "rank_avg_s": [float(x) for x in avg], "calls_per_rank": calls_per_rank}


TAIL_PCT = (50, 90, 99)     # OSU 7.4's -z percentiles (options.omb_stat_percentiles)


def osu_percentile(sorted_x, pct: float) -> float:
    """OSU 7.4's percentile (c/util/osu_util_mpi.c omb_calculate_tail_lat): of n ascending values,
    the element at index round(n x pct / 100) - 1 (at least the first)."""
    n = len(sorted_x)
    k = int(np.floor(n * pct / 100 + 0.5)) - 1      # C round(): halves away from zero
    return float(sorted_x[min(max(k, 0), n - 1)])


def tail_statistics(start, end, calls: int, timed=None) -> dict:
    """One mpirun of one experiment, every valid measurement (no outlier filter: a tail is what a
    filter cuts): OSU's -z per-iteration percentiles, for the two ways OSU forms an iteration's time:
    ``origin`` (rank 0's, the first timed rank: pt2pt, one-sided, mbw_mr) and ``mean`` (the mean over
    the timed ranks: omb_get_stats reduces the ranks' arrays with MPI_SUM and divides by the ranks).
    Per kind: ``lat`` the time at each percentile of TAIL_PCT (OSU's Tail Lat), ``inv`` the time
    whose rate is that percentile of the rates (OSU's Tail BW sorts bandwidths: the p-th percentile
    of 1/t is 1/t at the (100-p)-th position from the top). Empty when there is no measurement."""
    t = (np.asarray(end, dtype=float) - np.asarray(start, dtype=float)) / calls     # (ranks, measurements)
    p = t.shape[0]
    if t.size == 0 or p == 0:
        return {}
    sel = sorted({int(r) for r in timed if 0 <= int(r) < p}) if isinstance(timed, list) and timed else list(range(p))
    out = {}
    for kind, series in (("origin", t[sel[0]]), ("mean", t[sel].mean(axis=0))):
        asc = np.sort(series)
        rate_asc = np.sort(1.0 / series[series > 0]) if (series > 0).any() else np.array([np.inf])
        out[kind] = {"lat": [osu_percentile(asc, q) for q in TAIL_PCT],
                     "inv": [1.0 / osu_percentile(rate_asc, q) for q in TAIL_PCT]}
    return out


def _timed_ranks(meta_path: Path) -> tuple[dict[int, object], dict[int, int]]:
    """(exp -> the ranks whose times are the op's (analysis.timed.timed_rows; absent: every rank),
    exp -> calls per measurement where the run decided them (io.perrank.experiment_calls)) of a run's
    meta.json ({} when the run does not record them). A malformed timed_ranks is refused there; an
    unreadable meta.json is refused by the reader that listed the run, before this."""

    try:
        meta = load_meta(meta_path)
    except (MtError, OSError, TypeError, ValueError):
        return {}, {}
    nprocs = meta.get("nprocs")
    out = {}
    for e in meta.get("experiments") or []:
        if isinstance(e, dict) and isinstance(e.get("exp"), int) and isinstance(nprocs, int):
            rows = timed_rows(e, nprocs, str(meta_path))
            if rows is not None:
                out[e["exp"]] = rows
    return out, experiment_calls(meta)


def across_runs(per_run: list[dict]) -> dict:
    """The medians over the mpiruns of every statistic of rank_statistics, the lower median of the
    calls per rank."""
    out = {k: float(np.median([r[k] for r in per_run])) for k in STATS}
    tails = [r["tail"] for r in per_run if r.get("tail")]
    if tails:
        out["tail"] = {kind: {w: [float(np.median([x[kind][w][i] for x in tails])) for i in range(len(TAIL_PCT))]
                              for w in ("lat", "inv")} for kind in tails[0]}
        out["tail_runs"] = len(tails)
    return {**out, "iterations": int(statistics.median_low([r["calls_per_rank"] for r in per_run])),
            "runs": len(per_run), "run_avg_s": [r["avg_s"] for r in per_run]}


def rank_rows(data, filt: Filter, groups: set[tuple] | None = None) -> dict[tuple, dict]:
    """Per (campaign, config, op, msize, nprocs): across_runs() of per_run_values()."""
    return {k: across_runs(v) for k, v in per_run_values(data, filt, groups).items() if v}
