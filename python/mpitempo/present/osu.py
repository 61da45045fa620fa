"""Summary rows in the text layouts that OSU Micro-Benchmarks and Intel MPI Benchmarks (IMB) users
already read, plot and parse: `mpitempo export --osu DIR` and `--imb DIR`.

Every header and column string is OSU's or IMB's own, read from their sources (OSU
Micro-Benchmarks 7.4: c/util/osu_util.c print_header, c/util/osu_util_mpi.c print_only_header,
print_only_header_nbc, print_preamble_nbc, print_header_one_sided, print_stats_nbc, and the
BENCHMARK titles of c/mpi/**/osu_*.c; IMB 2021.11: src_c/IMB_output.c IMB_print_header and
IMB_output, src_c/IMB_g_info.c, src_c/IMB_bnames_nbc.h, src_c/IMB_parse_name_mpi1.c and _rma.c).
OSU layouts (FIELD_WIDTH 20, 2 decimals, size left in 10 columns):
  coll      collective, persistent (<coll>_init) and neighbourhood latency tests with -f:
            ``# Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Iterations`` (barrier: no Size);
  bw        osu_bw, osu_bibw: ``# Datatype: ...``, ``# Size  Bandwidth (MB/s)``;
  mbw_mr    ``# [ pairs: P ] [ window size: W ]``, ``# Size  MB/s  Messages/s``;
  multi_lat ``# Size  Avg Latency(us)``, latency = half the round trip, as OSU reports;
  nbc       osu_i<coll>: ``# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait``,
            ``# Size  Overall(us)  Compute(us)  Pure Comm.(us)  Overlap(%)`` (ibarrier: no Size), from
            the rows of i<coll>_overlap (Overall, Compute) and i<coll> (Pure Comm.);
  rma       osu_put_latency ... osu_get_bw: ``# Window creation: ...``, ``# Synchronization: ...``,
            ``# Datatype: ...``, ``# Size  Latency (us)`` or ``Bandwidth (MB/s)``.
IMB layouts (13 columns, 2 decimals): IMB-MPI1 collectives ``#bytes #repetitions t_min[usec]
t_max[usec] t_avg[usec]`` (barrier: no #bytes); PingPing ``#bytes #repetitions t[usec] Mbytes/sec``;
Sendrecv, Exchange ``... t_min[usec] t_max[usec] t_avg[usec] Mbytes/sec``; IMB-NBC ``#bytes
#repetitions t_ovrl[usec] t_pure[usec] t_CPU[usec]  overlap[%]`` (Ibarrier: no #bytes); IMB-RMA
``#bytes #repetitions t[usec] Mbytes/sec``. Ops without an OSU/IMB counterpart are left out
(``exportable`` says which and why).

What the columns mean here is stated in the '#' lines of every file:
  ranks   (chosen by ``auto``, the default, when every mpirun of the group has perrank.bin) OSU's
          and IMB's own definition: per mpirun, each rank's average time of one call, then
          Avg / Min / Max (t_avg / t_min / t_max) over the ranks; each column is the median of
          that number over the mpiruns (``analysis.osu_ranks``); Iterations = MPI calls timed per
          rank and mpirun (lower median over the mpiruns);
  runs    (``auto`` without per-rank data) Avg = median of the per-mpirun medians, Min / Max =
          smallest / largest per-mpirun median, Iterations = measurements kept by the outlier
          filter (all mpiruns);
  pooled  Avg = mean, Min / Max = extremes of all kept measurements of all mpiruns pooled.
In ``runs`` and ``pooled`` one measurement is one call of the operation timed by the campaign's
scheme (barrier scheme: the largest local runtime over the ranks), not OSU's per-rank average:
the numbers are mpitempo's, only the layout is OSU's, and the file says so.
"""
from __future__ import annotations

import re

from mpitempo.present.safe_text import safe_block

OSU_VERSION = "7.4"
IMB_VERSION = "2021.11"
FW = 20                  # OSU's FIELD_WIDTH (c/util/osu_util.h, 7.4)
IW = 13                  # IMB's ow_format (src_c/IMB_declare.h)

# OSU's own test titles (osu_<op>.c HEADER strings)
OSU_TITLES = {
    "allreduce": "Allreduce", "reduce": "Reduce", "bcast": "Broadcast", "barrier": "Barrier",
    "gather": "Gather", "gatherv": "Gatherv", "scatter": "Scatter", "scatterv": "Scatterv",
    "allgather": "Allgather", "allgatherv": "Allgatherv",
    "alltoall": "All-to-All Personalized Exchange", "alltoallv": "All-to-Allv Personalized Exchange",
    "reduce_scatter": "Reduce_scatter", "reduce_scatter_block": "Reduce_scatter_block",
    "scan": "Scan", "exscan": "Exscan",
}
# IMB-MPI1 benchmark names
IMB_NAMES = {
    "allreduce": "Allreduce", "reduce": "Reduce", "bcast": "Bcast", "barrier": "Barrier",
    "gather": "Gather", "gatherv": "Gatherv", "scatter": "Scatter", "scatterv": "Scatterv",
    "allgather": "Allgather", "allgatherv": "Allgatherv", "alltoall": "Alltoall", "alltoallv": "Alltoallv",
    "reduce_scatter": "Reduce_scatter", "reduce_scatter_block": "Reduce_scatter_block",
    "scan": "Scan", "exscan": "Exscan",
}
NOSIZE_OPS = {"barrier"}
VALUES = ("auto", "ranks", "runs", "pooled")


def _title(op: str) -> str:
    return OSU_TITLES.get(op, op.replace("_", " ").title())


def values_of(row: dict, values: str) -> tuple | None:
    """(avg_s, min_s, max_s, iterations) of one summary row (analysis.summary.summary_rows; with
    ``ranks``, the row's "ranks" entry from analysis.osu_ranks.rank_rows)."""
    if values == "ranks":
        rk = row.get("ranks")
        return None if not rk else (rk["avg_s"], rk["min_s"], rk["max_s"], rk["iterations"])
    pooled = row.get("pooled") or {}
    n = int(pooled.get("n") or 0)
    if values == "pooled":
        if not n:
            return None
        return pooled["mean_s"], pooled["min_s"], pooled["max_s"], n
    if row.get("median_s") is None:
        return None
    return row["median_s"], row["min_s"], row["max_s"], n


def _meaning(values: str, filt_desc: str, fmt: str, nprocs: int, runs: int) -> list[str]:
    """The '#' lines that say what the columns hold (OSU or IMB names)."""
    after = f"after {filt_desc}" if filt_desc.startswith("no ") else f"after the {filt_desc}"
    avg, mn, mx, it = (("Avg", "Min", "Max", "Iterations") if fmt == "osu"
                       else ("t_avg", "t_min", "t_max", "#repetitions"))
    tool = "OSU's" if fmt == "osu" else "IMB's"
    if values == "ranks":
        return [f"# {avg} / {mn} / {mx} = {tool} definition: per mpirun, each rank's average time of one call "
                f"over the measurements kept {after},",
                f"# then the mean / smallest / largest over the {nprocs} ranks; each column is the median of "
                f"that number over {runs} mpirun(s).",
                f"# {it} = MPI calls timed per rank in one mpirun (lower median over the mpiruns). "
                "Source: perrank.bin (run --per-rank)."]
    one = ("One measurement = one timed call (barrier scheme: the largest local runtime over the ranks), "
           f"not {tool} per-rank average.")
    if values == "pooled":
        return [f"# {avg} = mean, {mn} / {mx} = smallest / largest of all measurements kept "
                f"{after}, all mpiruns pooled;",
                f"# {it} = those measurements. {one}"]
    return [f"# {avg} = median of the per-mpirun medians, {mn} / {mx} = smallest / largest per-mpirun median "
            f"({after});",
            f"# {it} = measurements kept, all mpiruns. {one}"]


def _context(rows: list[dict], source: str, extra: list[str], runs: int) -> list[str]:
    from mpitempo import __version__

    r = rows[0]
    out = [f"# mpitempo {__version__}: {source}" + (f", campaign {r['campaign']}" if r.get("campaign") else ""),
           f"# configuration: {r['config']}  ranks: {r['nprocs']}  mpiruns: {runs}"]
    return out + [f"# {e}" for e in extra]


def _runs(rows: list[dict], values: str) -> int:
    if values == "ranks":
        return max((r.get("ranks") or {}).get("runs", 0) for r in rows)
    return max(x["runs"] for x in rows)


# OSU 7.4 titles of the other benchmarks (the BENCHMARK strings, "%s" = "" for host buffers)
OSU_PERSISTENT = {"allgather": "Allgather", "allgatherv": "Allgatherv", "allreduce": "Allreduce",
                  "alltoall": "All-to-All Personalized Exchange", "alltoallv": "All-to-Allv Personalized Exchange",
                  "barrier": "Barrier", "bcast": "Broadcast", "gather": "Gather", "gatherv": "Gatherv",
                  "reduce": "Reduce", "reduce_scatter": "Reduce_scatter", "scatter": "Scatter", "scatterv": "Scatterv"}
OSU_NBC = {"iallgather": "Allgather", "iallgatherv": "Allgatherv", "iallreduce": "Allreduce",
           "ialltoall": "All-to-All", "ialltoallv": "All-to-Allv Personalized Exchange", "ibarrier": "Barrier",
           "ibcast": "Broadcast", "igather": "Gather", "igatherv": "Gatherv", "ireduce": "Reduce",
           "ireduce_scatter": "Reduce_scatter", "ireduce_scatter_block": "Reduce_scatter_block",
           "iscatter": "Scatter", "iscatterv": "Scatterv"}
OSU_NEIGHBOR = {"neighbor_allgather": "OSU MPI Neighborhood Allgather Latency Test",
                "neighbor_allgatherv": "OSU MPI Neighborhood Allgatherv Latency Test",
                "neighbor_alltoall": "OSU MPI Neighborhood Alltoall Latency Test",
                "neighbor_alltoallv": "OSU MPI Neighborhood All-to-Allv Latency Test",
                # sic: osu_neighbor_alltoallw.c of 7.4 prints the blocking alltoallw title
                "neighbor_alltoallw": "OSU MPI All-to-Allw Personalized Exchange Latency Test"}
OSU_P2P = {"bw": ("bw", "OSU MPI Bandwidth Test", "osu_bw"),
           "bibw": ("bw", "OSU MPI Bi-Directional Bandwidth Test", "osu_bibw"),
           "mbw_mr": ("mbw_mr", "OSU MPI Multiple Bandwidth / Message Rate Test", "osu_mbw_mr"),
           "multi_lat": ("multi_lat", "OSU MPI Multi Latency Test", "osu_multi_lat")}
OSU_RMA = {"put": ("OSU MPI_Put Latency Test", "osu_put_latency", False),
           "get": ("OSU MPI_Get latency Test", "osu_get_latency", False),
           "acc": ("OSU MPI_Accumulate latency Test", "osu_acc_latency", False),
           "get_acc": ("OSU MPI_Get_accumulate latency Test", "osu_get_acc_latency", False),
           "fop": ("OSU MPI_Fetch_and_op latency Test", "osu_fop_latency", False),
           "cas": ("OSU MPI_Compare_and_swap latency Test", "osu_cas_latency", False),
           "put_bw": ("OSU MPI_Put Bandwidth Test", "osu_put_bw", True),
           "get_bw": ("OSU MPI_Get Bandwidth Test", "osu_get_bw", True)}
# c/util/osu_util_mpi.c win_info[] and sync_info[], by mpitempo's --rma-win / --rma-sync names
OSU_WIN = {"create": "MPI_Win_create", "allocate": "MPI_Win_allocate", "dynamic": "MPI_Win_create_dynamic"}
OSU_SYNC = {"lock": "MPI_Win_lock/unlock", "pscw": "MPI_Win_post/start/complete/wait", "fence": "MPI_Win_fence",
            "flush": "MPI_Win_flush", "lock_all": "MPI_Win_lock_all/unlock_all"}
MPI_TYPES = {"byte": "MPI_BYTE", "char": "MPI_CHAR", "int": "MPI_INT", "long": "MPI_LONG", "int64": "MPI_INT64_T",
             "float": "MPI_FLOAT", "double": "MPI_DOUBLE"}
# IMB: (part, benchmark name, layout); layouts: coll (t_min/t_max/t_avg), time_bw (t, Mbytes/sec),
# range_bw (t_min/t_max/t_avg, Mbytes/sec), nbc (t_ovrl/t_pure/t_CPU/overlap); scale_bw of Mbytes/sec
IMB_P2P = {"pingping": ("PingPing", "time_bw", 1), "sendrecv": ("Sendrecv", "range_bw", 2),
           "exchange": ("Exchange", "range_bw", 4)}
IMB_NBC = {"ibcast": "Ibcast", "iallgather": "Iallgather", "iallgatherv": "Iallgatherv", "igather": "Igather",
           "igatherv": "Igatherv", "iscatter": "Iscatter", "iscatterv": "Iscatterv", "ialltoall": "Ialltoall",
           "ialltoallv": "Ialltoallv", "ireduce": "Ireduce", "ireduce_scatter": "Ireduce_scatter",
           "iallreduce": "Iallreduce", "ibarrier": "Ibarrier"}
# IMB-RMA: put/get latency = Unidir_put/get NON-AGGREGATE, put_bw/get_bw = the AGGREGATE mode
IMB_RMA = {"put": ("Unidir_put", False), "get": ("Unidir_get", False), "put_bw": ("Unidir_put", True),
           "get_bw": ("Unidir_get", True), "acc": ("Accumulate", False), "get_acc": ("Get_accumulate", False),
           "fop": ("Fetch_and_op", False), "cas": ("Compare_and_swap", False)}
# IMB-MPI4 persistent collectives: <coll>_init (start + wait) = <Coll>_persist_pure (IMB_bnames_mpi4.h)
IMB_PERSIST = {"bcast": "Bcast", "allgather": "Allgather", "allgatherv": "Allgatherv", "gather": "Gather",
               "gatherv": "Gatherv", "scatter": "Scatter", "scatterv": "Scatterv", "alltoall": "Alltoall",
               "alltoallv": "Alltoallv", "reduce": "Reduce", "reduce_scatter": "Reduce_scatter",
               "allreduce": "Allreduce", "barrier": "Barrier"}
IMB_PARTS = {"MPI1": "MPI-1 part", "NBC": "MPI-NBC part", "RMA": "MPI-RMA part", "MPI4": "MPI-4 part"}


def osu_target(op: str) -> tuple[str, str, str] | None:
    """(layout, header title, file stem) of an op in OSU 7.4, or None when OSU has no such test.
    The non-blocking pair is exported from its *_overlap op."""
    if op in OSU_TITLES:
        return "coll", f"OSU MPI {_title(op)} Latency Test", f"osu_{op}"
    if op.endswith("_init") and op[:-5] in OSU_PERSISTENT:
        base = op[:-5]
        return "coll", f"OSU MPI {OSU_PERSISTENT[base]} Persistent Latency Test", f"osu_{base}_persistent"
    if op in OSU_NEIGHBOR:
        return "coll", OSU_NEIGHBOR[op], f"osu_{op}"
    if op in OSU_P2P:
        return OSU_P2P[op]
    if op.endswith("_overlap") and op[:-8] in OSU_NBC:
        base = op[:-8]
        cap = "Non-Blocking" if base == "ibcast" else "Non-blocking"     # sic, osu_ibcast.c
        return "nbc", f"OSU MPI {cap} {OSU_NBC[base]} Latency Test", f"osu_{base}"
    if op in OSU_RMA:
        title, stem, bw = OSU_RMA[op]
        return ("rma_bw" if bw else "rma_lat"), title, stem
    return None


def imb_target(op: str) -> tuple[str, str, str] | None:
    """(part, IMB benchmark name, layout) of an op, or None when IMB has no such benchmark."""
    if op in IMB_NAMES:
        return "MPI1", IMB_NAMES[op], "coll"
    if op in IMB_P2P:
        return "MPI1", IMB_P2P[op][0], IMB_P2P[op][1]
    if op.endswith("_init") and op[:-5] in IMB_PERSIST:
        return "MPI4", f"{IMB_PERSIST[op[:-5]]}_persist_pure", "coll"
    if op.endswith("_overlap") and op[:-8] in IMB_NBC:
        return "NBC", IMB_NBC[op[:-8]], "nbc"
    if op in IMB_RMA:
        name, agg = IMB_RMA[op]
        return "RMA", name, "rma_agg" if agg else "rma"
    return None


def skipped_note(why: dict[str, str], fmt: str) -> str:
    """One line naming the ops left out of an export, grouped by reason."""
    by: dict[str, list[str]] = {}
    for op, w in sorted(why.items()):
        by.setdefault(w, []).append(op)
    return (f"not exported as {'OSU' if fmt == 'osu' else 'IMB'} text: "
            + "; ".join(f"{', '.join(ops)} ({w})" for w, ops in by.items()))


def exportable(ops, fmt: str) -> tuple[list[str], dict[str, str]]:
    """(ops written as their own file, {op: why not}) for fmt "osu" or "imb". A pure i<coll> is
    written inside its i<coll>_overlap file; alone it has no OSU/IMB layout."""
    ops = sorted(set(ops))
    target = osu_target if fmt == "osu" else imb_target
    tool = "OSU Micro-Benchmarks 7.4" if fmt == "osu" else f"IMB {IMB_VERSION}"
    yes, why = [], {}
    for op in ops:
        if target(op) is not None:
            yes.append(op)
        elif target(op + "_overlap") is not None:
            if op + "_overlap" not in ops:
                why[op] = f"the {tool} layout (overall, compute, pure, overlap) needs the *_overlap op too"
        else:
            why[op] = f"no {tool} counterpart"
    return yes, why


def _mpi_type(row: dict) -> str:
    dt = str((row.get("operation_params") or {}).get("datatype") or "char")
    return MPI_TYPES.get(dt, f"MPI_{dt.upper()}")


def _bw(row: dict, values: str, t: float) -> float | None:
    """MB/s of a row: the median of the per-run bandwidths (runs), else bytes_per_call / the time."""
    from mpitempo.analysis.derived import bandwidth_MBps

    b = row.get("bandwidth_MBps") or {}
    if values == "runs":
        return b.get("median")
    nb = (b.get("bytes_per_call") or [0])[0]
    return bandwidth_MBps(nb, t)


def _rate(row: dict, values: str, t: float) -> float | None:
    from mpitempo.analysis.derived import msg_rate_per_s

    m = row.get("msg_rate_per_s") or {}
    if values == "runs":
        return m.get("median")
    return msg_rate_per_s((m.get("msgs_per_call") or [0])[0], t)


def _nbc_values(row: dict, pure_row: dict | None, values: str) -> tuple | None:
    """(overall_s, compute_s, pure_s, osu overlap %) of an overlap row: pure from the pure op's row
    (same values) when measured, else the calibration's pure time."""
    from mpitempo.analysis.derived import overlap_pct

    v = values_of(row, values)
    comp = (row.get("compute") or {}).get("median_s")
    if v is None or comp is None:
        return None
    pv = values_of(pure_row, values) if pure_row else None
    pure = pv[0] if pv else (row.get("compute") or {}).get("pure_s")
    if not pure:
        return None
    ov = (row.get("overlap_pct") or {}).get("median") if values == "runs" and pv else None
    return v[0], comp, pure, ov if ov is not None else overlap_pct(v[0], comp, pure)


def _derived_meaning(layout: str, fmt: str) -> list[str]:
    """'#' lines for the derived columns of a layout."""
    if layout in ("bw", "mbw_mr", "rma_bw"):
        out = ["# MB/s (1 MB = 1e6 B, as OSU): per mpirun, bytes moved per call (meta.json bytes_per_call) / its "
               "median time; the median over the mpiruns (--values runs), or bytes_per_call / the time column of "
               "--values pooled|ranks."]
        if layout == "mbw_mr":
            out.append("# Messages/s: messages per call (msgs_per_call) / run median, median over the mpiruns.")
        return out
    if layout == "multi_lat":
        return ["# Latency = half the round trip of one call (one ping-pong on every pair), as OSU reports."]
    if layout == "nbc" and fmt == "osu":
        return ["# Overall = the *_overlap op (post + compute + wait); Compute = its measured compute (median over "
                "mpiruns); Pure Comm. = the pure op (post + wait) when measured, else the calibration's pure time;",
                "# Overlap(%) = max(0, 100 x (1 - (Overall - Compute) / Pure)) per mpirun, median over the mpiruns "
                "(OSU's definition, print_stats_nbc)."]
    if layout == "nbc":
        return ["# t_ovrl = the *_overlap op (post + compute + wait), t_CPU = its measured compute, t_pure = the pure "
                "op (post + wait) or the calibration's pure time;",
                "# overlap[%] = IMB's definition from these columns: 100 x max(0, min(1, (t_pure + t_CPU - t_ovrl) / "
                "max(t_pure, t_CPU)))."]
    if layout in ("time_bw", "range_bw", "rma", "rma_agg"):
        return ["# Mbytes/sec = IMB's definition: scale x #bytes / t (PingPing, RMA: 1, Sendrecv: 2, Exchange: 4) "
                "with t the time column (IMB divides by t_max over ranks; here every measurement is already the "
                "slowest rank's)." + (" t[usec] = time of one call / messages per call (AGGREGATE mode)."
                                      if layout == "rma_agg" else "")]
    return []


def osu_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = (),
              pure: dict | None = None) -> str:
    """One OSU output (one op, one configuration, one nprocs): header, '#' comments, rows by size.
    pure: (campaign, config, op, msize, nprocs) -> summary row, for the pure op of an overlap op."""
    op = rows[0]["op"]
    layout, title, _ = osu_target(op)
    runs = _runs(rows, values)
    out = [f"# {title} v{OSU_VERSION}"]
    if layout == "nbc":
        out += ["# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait", ""]
    out += _context(rows, source, list(extra), runs) + _meaning(values, filt_desc, "osu", rows[0]["nprocs"], runs)
    out += _derived_meaning(layout, "osu")
    params = rows[0].get("operation_params") or {}
    if layout == "mbw_mr":
        out.append(f"# [ pairs: {max(1, rows[0]['nprocs'] // 2)} ] [ window size: {params.get('bw_window', 64)} ]")
    if layout in ("rma_lat", "rma_bw"):
        out.append(f"# Window creation: {OSU_WIN.get(str(params.get('rma_win')), params.get('rma_win') or '?')}")
        out.append(f"# Synchronization: {OSU_SYNC.get(str(params.get('rma_sync')), params.get('rma_sync') or '?')}")
    if layout != "coll":
        out.append(f"# Datatype: {_mpi_type(rows[0])}.")
    nosize = op in NOSIZE_OPS or op == "barrier_init" or op == "ibarrier_overlap"
    if layout == "coll":
        if nosize:
            out.append(f"{'# Avg Latency(us)'}{'Min Latency(us)':>{FW}}{'Max Latency(us)':>{FW}}{'Iterations':>12}")
        else:
            out.append(f"{'# Size':<10}{'Avg Latency(us)':>{FW}}{'Min Latency(us)':>{FW}}{'Max Latency(us)':>{FW}}"
                       f"{'Iterations':>12}")
    else:
        cols = {"bw": ["Bandwidth (MB/s)"], "rma_bw": ["Bandwidth (MB/s)"], "mbw_mr": ["MB/s", "Messages/s"],
                "multi_lat": ["Avg Latency(us)"], "rma_lat": ["Latency (us)"],
                "nbc": ["Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)"]}[layout]
        if nosize:
            out.append("# " + cols[0] + "".join(f"{c:>{FW}}" for c in cols[1:]))
        else:
            out.append(f"{'# Size':<10}" + "".join(f"{c:>{FW}}" for c in cols))
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values)
        if v is None:
            continue
        avg, lo, hi, n = v
        if layout == "coll":
            cells = f"{avg * 1e6:>{FW}.2f}{lo * 1e6:>{FW}.2f}{hi * 1e6:>{FW}.2f}{n:>12d}"
            out.append(f"{avg * 1e6:>17.2f}{cells[FW:]}" if nosize else f"{r['msize']:<10d}{cells}")
            continue
        if layout in ("bw", "rma_bw"):
            nums = [_bw(r, values, avg)]
        elif layout == "mbw_mr":
            nums = [_bw(r, values, avg), _rate(r, values, avg)]
        elif layout == "multi_lat":
            nums = [avg / 2 * 1e6]
        elif layout == "rma_lat":
            nums = [avg * 1e6]
        else:
            key = (r.get("campaign", ""), r["config"], op[:-8], r["msize"], r["nprocs"])
            nv = _nbc_values(r, (pure or {}).get(key), values)
            if nv is None:
                continue
            nums = [nv[0] * 1e6, nv[1] * 1e6, nv[2] * 1e6, nv[3]]
        if any(x is None for x in nums):
            continue
        if nosize:      # print_stats_nbc without the size: overall in 13 columns
            out.append(f"{nums[0]:>13.2f}" + "".join(f"{x:>{FW}.2f}" for x in nums[1:]))
        else:
            out.append(f"{r['msize']:<10d}" + "".join(f"{x:>{FW}.2f}" for x in nums))
    return safe_block("\n".join(out) + "\n")   # read in terminals: strings from files escaped


def imb_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = (),
              pure: dict | None = None) -> str:
    """One IMB benchmark block (one op, one configuration, one nprocs)."""
    from mpitempo.analysis.derived import imb_overlap_pct

    op = rows[0]["op"]
    part, name, layout = imb_target(op)
    runs = _runs(rows, values)
    bar = "#" + "-" * 63
    out = [bar, f"#    Intel(R) MPI Benchmarks {IMB_VERSION}, {IMB_PARTS[part]} (layout written by mpitempo)", bar]
    out += _context(rows, source, list(extra), runs) + _meaning(values, filt_desc, "imb", rows[0]["nprocs"], runs)
    out += _derived_meaning(layout, "imb")
    out += ["", bar, f"# Benchmarking {name} ", f"# #processes = {rows[0]['nprocs']} ", bar]
    if part == "RMA":
        out += ["#", f"#    MODE: {'AGGREGATE' if layout == 'rma_agg' else 'NON-AGGREGATE'} ", "#"]
    nosize = op in NOSIZE_OPS or op in ("ibarrier_overlap", "barrier_init")
    heads = {"coll": ["t_min[usec]", "t_max[usec]", "t_avg[usec]"], "time_bw": ["t[usec]", "Mbytes/sec"],
             "rma": ["t[usec]", "Mbytes/sec"], "rma_agg": ["t[usec]", "Mbytes/sec"],
             "range_bw": ["t_min[usec]", "t_max[usec]", "t_avg[usec]", "Mbytes/sec"],
             "nbc": ["t_ovrl[usec]", "t_pure[usec]", "t_CPU[usec]", " overlap[%]"]}[layout]
    out.append(("" if nosize else f"{'#bytes':>{IW}}") + f"{'#repetitions':>{IW}}" + "".join(f"{h:>{IW}}" for h in heads))
    scale = IMB_P2P[op][2] if op in IMB_P2P else 1
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values)
        if v is None:
            continue
        avg, lo, hi, n = v
        m = r["msize"]
        if layout == "coll":
            nums = [lo * 1e6, hi * 1e6, avg * 1e6]
        elif layout in ("time_bw", "rma"):
            nums = [avg * 1e6, scale * m / (avg * 1e6)]
        elif layout == "rma_agg":
            nb = ((r.get("bandwidth_MBps") or {}).get("bytes_per_call") or [0])[0]
            t = avg * m / nb if nb else None
            nums = [None] if t is None else [t * 1e6, m / (t * 1e6)]
        elif layout == "range_bw":
            nums = [lo * 1e6, hi * 1e6, avg * 1e6, scale * m / (avg * 1e6)]
        else:
            key = (r.get("campaign", ""), r["config"], op[:-8], m, r["nprocs"])
            nv = _nbc_values(r, (pure or {}).get(key), values)
            if nv is None:
                continue
            nums = [nv[0] * 1e6, nv[2] * 1e6, nv[1] * 1e6, imb_overlap_pct(nv[0], nv[1], nv[2])]
        if any(x is None for x in nums):
            continue
        lead = "" if nosize else f"{m:>{IW}d}"
        out.append(f"{lead}{n:>{IW}d}" + "".join(f"{x:>{IW}.2f}" for x in nums))
    out.append("")
    return safe_block("\n".join(out) + "\n")   # read in terminals: strings from files escaped


def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Summary rows by (campaign, config, op, nprocs): one OSU/IMB output each."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r.get("campaign", ""), r["config"], r["op"], r["nprocs"]), []).append(r)
    return out


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", str(s)).strip("_") or "x"


def file_name(fmt: str, key: tuple, many_campaigns: bool) -> str:
    """osu_allreduce.<config>.np2.txt (IMB: IMB-MPI1_Allreduce.<config>.np2.txt, IMB-NBC_Iallreduce...,
    IMB-RMA_Unidir_put...); the campaign leads when several campaigns are exported together."""
    camp, cfg, op, nprocs = key
    if fmt == "osu":
        head = osu_target(op)[2]
    else:
        part, name, layout = imb_target(op)
        head = f"IMB-{part}_{name}" + ("_aggregate" if layout == "rma_agg" else "")
    lead = f"{_safe(camp)}." if many_campaigns and camp else ""
    return f"{lead}{head}.{_safe(cfg)}.np{nprocs}.txt"
