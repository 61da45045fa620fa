"""Summary rows in the text layouts that OSU Micro-Benchmarks and Intel MPI Benchmarks (IMB) users
already read, plot and parse: `mpitempo export --osu DIR` and `--imb DIR`.

The lines a peer prints come first, exactly as a configure-built OSU 7.4 and IMB 2021.11 print them
(compared line by line with recorded output of both in tests/data/peers/, numbers excluded): OSU's
leading empty line where OSU prints one, ``# Datatype: <the MPI type actually used>.``, FIELD_WIDTH
18 (configure.ac defines it; osu_util.h's 20 is only the fallback of a build without configure),
size left in 10 columns; IMB's preamble, its benchmark block (bars of 13 x columns - 1 dashes) and
13-column fields. Strings and formats are read from their sources (OSU: c/util/osu_util.c
print_header, c/util/osu_util_mpi.c print_only_header, print_preamble_nbc, print_header_one_sided,
print_stats_nbc, the BENCHMARK titles of c/mpi/**/osu_*.c; IMB: src_c/IMB_output.c
IMB_print_header and IMB_output, src_c/IMB_g_info.c, src_cpp/MPI1/MPI1_suite.cpp).

mpitempo's own '#' lines follow the rows of each benchmark (OSU: after the last row; IMB: before
``# All processes entering MPI_Finalize``): where the numbers come from, what the columns mean,
which statistic was taken, and every definition difference for the campaign's settings
(``present.definitions``). Ops without an OSU/IMB counterpart are left out (``exportable``).

The columns, by ``--values``:
  ranks   (``auto``'s choice when every mpirun of the group has perrank.bin) the suite's own
          statistic over ranks of each rank's average time of one call (analysis.osu_ranks):
          OSU collectives Avg / Min / Max over all ranks; osu_latency, osu_bw, osu_bibw and the
          one-sided tests rank 0's (the origin's) time; osu_multi_lat and osu_mbw_mr the mean
          over the initiating ranks; IMB t_min / t_max / t_avg over ranks, and the slowest rank's
          time for t[usec] and every Mbytes/sec; each the median over the mpiruns;
  runs    (``auto`` without per-rank data) the median of the per-mpirun medians, Min / Max the
          smallest / largest per-mpirun median;
  pooled  mean / min / max of all kept measurements of all mpiruns pooled.
In ``runs`` and ``pooled`` one measurement is one call timed by the campaign's scheme (the '#'
lines say which), not the suite's per-rank average.
"""
from __future__ import annotations

import re
import time

from mpitempo.present.peer_names import IMB_P2P, _variant, imb_target, osu_target
from mpitempo.safe_text import safe_block
from mpitempo import __version__
from mpitempo.analysis.osu_ranks import TAIL_PCT
from mpitempo.present.definitions import MOVE_TYPES, REDUCE_TYPES, definition_notes, definition_warnings, measurement_text, mpi_type

OSU_VERSION = "7.4"
IMB_VERSION = "2021.11"
FW = 18                  # FIELD_WIDTH of a configure-built OSU 7.4 (configure.ac: AC_DEFINE FIELD_WIDTH 18)
IW = 13                  # IMB's ow_format (src_c/IMB_declare.h)

NOSIZE_OPS = {"barrier", "barrier_init", "ibarrier_overlap"}
TAIL_BW = ("bw", "rma_bw", "mbw_mr")      # layouts whose -z columns are bandwidths (P50 Tail BW(MB/s))
VALUES = ("auto", "ranks", "runs", "pooled")

# c/util/osu_util_mpi.c win_info[] and sync_info[], by mpitempo's --rma-win / --rma-sync names
OSU_WIN = {"create": "MPI_Win_create", "allocate": "MPI_Win_allocate", "dynamic": "MPI_Win_create_dynamic"}
OSU_SYNC = {"lock": "MPI_Win_lock/unlock", "pscw": "MPI_Win_post/start/complete/wait", "fence": "MPI_Win_fence",
            "flush": "MPI_Win_flush", "lock_all": "MPI_Win_lock_all/unlock_all", "flush_local": "MPI_Win_flush_local"}
IMB_PARTS = {"MPI1": "MPI-1 part", "NBC": "MPI-NBC part", "RMA": "MPI-RMA part", "MPI4": "MPI-4 part"}
# the preamble of each IMB part differs in trailing blanks (IMB-MPI1 is printed by the C++ suite,
# the others by src_c/IMB_output.c): the reduction type's, the two "#" lines', the calling sequence's
IMB_PREAMBLE = {"MPI1": (" ", "# ", " "), "MPI4": ("", "# ", ""), "NBC": ("", "#", ""), "RMA": ("", "# ", " ")}
# benchmarks that IMB runs on 2 processes whatever the job size (the rest wait in MPI_Barrier)
IMB_TWO_RANKS = {"PingPong", "PingPing"}


# the op each IMB benchmark's file is named after without a suffix (others: IMB-MPI1_<name>-<op>)
IMB_CANONICAL = {"PingPong": ("multi_lat", "pingpong-loop"), "Uniband": ("bw",), "Biband": ("bibw",)}


def skipped_note(why: dict[str, str], fmt: str) -> str:
    """One line naming the ops left out of an export, grouped by reason."""
    by: dict[str, list[str]] = {}
    for op, w in sorted(why.items()):
        by.setdefault(w, []).append(op)
    return (f"not exported as {'OSU' if fmt == 'osu' else 'IMB'} text: "
            + "; ".join(f"{', '.join(ops)} ({w})" for w, ops in by.items()))


def _why_not(op: str, nprocs: int, fmt: str) -> str:
    tool = "OSU Micro-Benchmarks 7.4" if fmt == "osu" else f"IMB {IMB_VERSION}"
    if fmt == "imb" and op == "multi_lat":
        return f"IMB PingPong is one pair: multi_lat on {nprocs} ranks has {nprocs // 2} pairs at once"
    if fmt == "imb" and op == "bw":
        return f"IMB Uniband runs every pair at once: bw on {nprocs} ranks uses one pair (export mbw_mr)"
    if fmt == "imb" and op == "bibw":
        return f"IMB Biband runs every pair at once: bibw on {nprocs} ranks uses one pair"
    return f"no {tool} counterpart"


def exportable(groups, fmt: str) -> tuple[set, dict[str, str]]:
    """({(op, nprocs) written as their own file}, {op: why not}) for fmt "osu" or "imb", from the
    (op, nprocs) pairs of the data (or plain op names: nprocs unknown). A pure i<coll> is written
    inside its i<coll>_overlap file; alone it has no OSU/IMB layout."""
    pairs = {(g, None) if isinstance(g, str) else tuple(g) for g in groups}
    ops = {op for op, _ in pairs}
    tool = "OSU Micro-Benchmarks 7.4" if fmt == "osu" else f"IMB {IMB_VERSION}"
    yes, why = set(), {}
    for op, n in sorted(pairs, key=lambda x: (x[0], x[1] or 0)):
        t = osu_target(op) if fmt == "osu" else imb_target(op, n)
        if t is not None:
            yes.add((op, n))
        elif (osu_target(op + "_overlap") if fmt == "osu" else imb_target(op + "_overlap", n)) is not None:
            if op + "_overlap" not in ops:
                why[op] = f"the {tool} layout (overall, compute, pure, overlap) needs the *_overlap op too"
        else:
            why[op if n is None or fmt == "osu" else f"{op} on {n} ranks"] = _why_not(op, n or 0, fmt)
    return yes, why


# --- the values of one row ----------------------------------------------------------------------

def statistic(fmt: str, op: str) -> str:
    """Which over-rank statistic of analysis.osu_ranks the suite prints for this op (--values
    ranks): mean (OSU collectives, IMB t_avg), origin (rank 0: osu_latency, osu_bw, osu_bibw, the
    one-sided tests), first_half (osu_multi_lat, osu_mbw_mr), max (IMB's t and Mbytes/sec)."""
    base = _variant(op)[0]
    if fmt == "osu":
        layout = (osu_target(op) or ("coll",))[0]
        if layout in ("coll", "nbc"):
            return "mean"
        if base in ("multi_lat", "mbw_mr"):
            return "first_half"
        return "origin"
    layout = (imb_target(op) or ("", "", "coll"))[2]
    return "mean" if layout in ("coll", "range_bw") else "max"


STAT_KEY = {"mean": "avg_s", "origin": "origin_s", "first_half": "first_half_s", "max": "max_s"}


def values_of(row: dict, values: str, stat: str = "mean") -> tuple | None:
    """(central_s, min_s, max_s, iterations) of one summary row (analysis.summary.summary_rows;
    with ``ranks``, the row's "ranks" entry from analysis.osu_ranks.rank_rows, central = the
    statistic ``stat``: avg_s, origin_s, first_half_s or max_s)."""
    if values == "ranks":
        rk = row.get("ranks")
        return None if not rk else (rk[STAT_KEY[stat]], rk["min_s"], rk["max_s"], rk["iterations"])
    pooled = row.get("pooled") or {}
    n = int(pooled.get("n") or 0)
    if values == "pooled":
        if not n:
            return None
        return pooled["mean_s"], pooled["min_s"], pooled["max_s"], n
    if row.get("median_s") is None:
        return None
    return row["median_s"], row["min_s"], row["max_s"], n


def one_way_divisor(row: dict) -> int:
    """What the suite divides a call's time by to print a one-way latency: meta.json's
    experiments[].one_way_divisor where recorded, else 2 for the round-trip ops (multi_lat,
    multi_lat_persistent) and 1 for the rest."""
    d = row.get("one_way_divisor")
    if isinstance(d, int) and not isinstance(d, bool) and d >= 1:
        return d
    return 2 if _variant(row["op"])[0] in ("multi_lat", "multi_lat_persistent") else 1


def _factors(rows: list[dict]) -> dict:
    return rows[0].get("factors") or {"datatype": (rows[0].get("operation_params") or {}).get("datatype"),
                                      **(rows[0].get("operation_params") or {})}


def _bw(row: dict, values: str, t: float) -> float | None:
    """MB/s of a row: the median of the per-run bandwidths (runs), else bytes_per_call / the time."""
    from mpitempo.analysis.derived import bandwidth_MBps

    b = row.get("bandwidth_MBps") or {}
    if values == "runs":
        return b.get("median")
    nb = (b.get("bytes_per_call") or [0])[0]
    return bandwidth_MBps(nb, t)


def _msgs_per_call(row: dict, f: dict) -> float:
    m = (row.get("msg_rate_per_s") or {}).get("msgs_per_call")
    if m:
        return m[0]
    w = int(f.get("bw_window") or 64)
    op = _variant(row["op"])[0]
    return {"bw": w, "bibw": 2 * w, "mbw_mr": max(1, row["nprocs"] // 2) * w}.get(op, 0)


def _rate(row: dict, values: str, t: float, f: dict) -> float | None:
    """Messages/s: msgs_per_call / the time; with runs, the median per-run bandwidth scaled by
    messages per byte (the same per-run medians)."""
    from mpitempo.analysis.derived import msg_rate_per_s

    msgs = _msgs_per_call(row, f)
    m = row.get("msg_rate_per_s") or {}
    if values == "runs":
        if m.get("median") is not None:
            return m["median"]
        b = row.get("bandwidth_MBps") or {}
        nb = (b.get("bytes_per_call") or [0])[0]
        if b.get("median") is not None and nb:
            return b["median"] * 1e6 * msgs / nb
    return msg_rate_per_s(msgs, t)


def _nbc_values(row: dict, pure_row: dict | None, values: str, stat: str = "mean") -> tuple | None:
    """(overall_s, compute_s, pure_s, osu overlap %) of an overlap row: pure from the pure op's row
    (same values) when measured, else the calibration's pure time."""
    from mpitempo.analysis.derived import overlap_pct

    v = values_of(row, values, stat)
    comp = (row.get("compute") or {}).get("median_s")
    if v is None or comp is None:
        return None
    pv = values_of(pure_row, values, stat) if pure_row else None
    pure = pv[0] if pv else (row.get("compute") or {}).get("pure_s")
    if not pure:
        return None
    ov = (row.get("overlap_pct") or {}).get("median") if values == "runs" and pv else None
    return v[0], comp, pure, ov if ov is not None else overlap_pct(v[0], comp, pure)


# --- the '#' lines of mpitempo -------------------------------------------------------------------

def _runs(rows: list[dict], values: str) -> int:
    if values == "ranks":
        return max((r.get("ranks") or {}).get("runs", 0) for r in rows)
    return max(x["runs"] for x in rows)


def _stat_text(fmt: str, stat: str, nprocs: int, runs: int, after: str) -> list[str]:
    tool = "OSU's" if fmt == "osu" else "IMB's"
    each = f"per mpirun, each rank's average time of one call over the measurements kept {after}"
    cols = "Avg / Min / Max" if fmt == "osu" else "t_avg / t_min / t_max"
    which = {"mean": f"then {cols} = the mean / smallest / largest over the {nprocs} ranks",
             "origin": "then rank 0's (the origin's: OSU times rank 0 only; the other rank is not in the number)",
             "first_half": ("then rank 0's (the pair's initiator: OSU times the initiating rank of each pair and "
                            "takes their mean)" if nprocs // 2 <= 1 else
                            f"then the mean over the initiating ranks 0..{nprocs // 2 - 1} (OSU reduces their times "
                            "over the pairs)"),
             "max": "then the largest over the ranks (IMB's timing[MAX]; t_min / t_avg: smallest / mean)"}[stat]
    return [f"# Values = {tool} definition: {each},", f"# {which}; each number is the median of its value over {runs} mpirun(s)."]


def _meaning(rows: list[dict], values: str, filt_desc: str, fmt: str, stat: str, runs: int) -> list[str]:
    """The '#' lines that say what the columns hold."""

    after = f"after {filt_desc}" if filt_desc.startswith("no ") else f"after the {filt_desc}"
    nprocs = rows[0]["nprocs"]
    it = "Iterations" if fmt == "osu" else "#repetitions"
    if values == "ranks":
        shown = fmt == "imb" or (osu_target(rows[0]["op"]) or ("",))[0] == "coll"
        return _stat_text(fmt, stat, nprocs, runs, after) + [
            (f"# {it} = MPI calls timed per rank in one mpirun (lower median over the mpiruns). " if shown else "# ")
            + "Source: perrank.bin (run --per-rank)."]
    tool = "OSU's" if fmt == "osu" else "IMB's"
    op = rows[0]["op"].split("/")[0]
    one = f"# One measurement = {measurement_text(rows[0]['op'], _factors(rows))}"
    one += ("; the rank that osu_latency and IMB PingPong time as well." if op in ("pingpong", "pingpong-loop")
            else f"; not {tool} per-rank average.")
    shown = fmt == "imb" or (osu_target(rows[0]["op"]) or ("",))[0] == "coll"
    its = f"; {it} = " if shown else ""
    if values == "pooled":
        return [f"# Values = mean, min / max = smallest / largest of all measurements kept {after}, all mpiruns "
                f"pooled" + (f"{its}those measurements." if shown else "."), one]
    return [f"# Values = median of the per-mpirun medians, min / max = smallest / largest per-mpirun median "
            f"({after})" + (f"{its}measurements kept, all mpiruns." if shown else "."), one]


def _derived_meaning(layout: str, fmt: str, values: str) -> list[str]:
    """'#' lines for the derived columns of a layout."""
    if layout in ("bw", "mbw_mr", "rma_bw", "rate"):
        src = ("the median over the mpiruns of (bytes moved per call / the run's median time)" if values == "runs"
               else "bytes moved per call (meta.json bytes_per_call) / the time of one call")
        out = [f"# MB/s (1 MB = 1e6 B, as OSU and IMB): {src}."]
        if layout in ("mbw_mr", "rate"):
            out.append("# Messages/s: messages per call / the same time.")
        return out
    if layout == "multi_lat":
        return ["# Latency = half the round trip of one call (one ping-pong on every pair), as OSU prints it; "
                "mpitempo summary shows the whole round trip."]
    if layout == "rma_lat_2":
        return ["# Latency = half of one call (two access epochs, --rma-epochs 2), as OSU prints it; mpitempo "
                "summary shows the whole call."]
    if layout == "latency":
        return ["# Latency = one-way time: half a round trip."]
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
    if layout == "time_bw_pp":
        return ["# t[usec] = one-way time (half a round trip, as IMB PingPong); Mbytes/sec = #bytes / t."]
    if layout in ("time_bw", "range_bw", "rma", "rma_agg"):
        t = ("t_max, the slowest rank's average (as IMB)" if values == "ranks"
             else "the time column (every measurement is already the largest over the ranks)")
        return ["# Mbytes/sec = IMB's definition: scale x #bytes / t (PingPing, RMA: 1, Sendrecv: 2, Exchange: 4) "
                f"with t = {t}." + (" t[usec] = time of one call / accesses per call (AGGREGATE mode)."
                                    if layout == "rma_agg" else "")]
    return []


def _notes(rows: list[dict], values: str, filt_desc: str, fmt: str, source: str, extra, runs: int,
           layout: str) -> list[str]:
    """mpitempo's '#' lines after the rows of a block."""

    r = rows[0]
    f = dict(_factors(rows), nprocs=r["nprocs"])
    stat = statistic(fmt, r["op"])
    out = [f"# mpitempo {__version__}: {source}" + (f", campaign {r['campaign']}" if r.get("campaign") else "")
           + f"; op {r['op']}",
           f"# configuration: {r['config']}  ranks: {r['nprocs']}  mpiruns: {runs}"]
    out += [f"# WARNING: {w}" for w in definition_warnings(r["op"], f, fmt)]
    out += [f"# {e}" for e in extra]
    out += _meaning(rows, values, filt_desc, fmt, stat, runs)
    out += _derived_meaning(layout, fmt, values)
    diffs = definition_notes(r["op"], f, fmt, context="export")
    if diffs:
        out.append(f"# Differs in definition from {'OSU ' + OSU_VERSION if fmt == 'osu' else 'IMB ' + IMB_VERSION}"
                   + (f" (profile like = {f['like']})" if f.get("like") else "") + ":")
        out += [f"#   {d}" for d in diffs]
    return out


# --- OSU ------------------------------------------------------------------------------------------

def _tail_meaning(rows: list[dict], layout: str) -> list[str]:
    """The '#' lines of the -z columns."""
    who = ("the mean over the ranks of each measurement's time of one call" if tail_kind(layout) == "mean"
           else "rank 0's time of one call in each measurement")
    what = ("bandwidths (bytes per call / that time), sorted" if layout in TAIL_BW else "those times, sorted")
    inner = sorted({int(x) for r in rows for x in [((r.get("factors") or {}).get("inner"))] if x and int(x) > 1})
    n = (rows[0].get("ranks") or {}).get("tail_runs") or _runs(rows, "ranks")
    out = [f"# P50 / P90 / P99 Tail = OSU's -z percentiles: per mpirun, {who}, over every valid measurement (no "
           f"outlier filter), {what}, the element at round(n x p / 100); each the median over {n} mpirun(s)."]
    if inner:
        out.append(f"# A measurement of the loop scheme times up to {inner[-1]} calls together (fewer for long calls: "
                   "meta.json experiments[].inner): its time of one call is their mean, where OSU's -z times each "
                   "iteration alone: the tails are those of means over the calls, narrower than OSU's.")
    return out


def osu_header(op: str, f: dict, nprocs: int, tail: bool = False) -> list[str]:
    """The lines OSU 7.4 prints before its first row, for this op and these settings; tail: as it
    prints them with -z (the P50 / P90 / P99 Tail columns)."""

    layout, title, _ = osu_target(op)
    nosize = op in NOSIZE_OPS
    out = [] if layout in ("mbw_mr", "rma_lat", "rma_bw") else [""]
    out.append(f"# {title} v{OSU_VERSION}")
    if layout == "nbc":
        out += ["# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait", ""]
    if layout == "mbw_mr":
        out.append(f"# [ pairs: {max(1, nprocs // 2)} ] [ window size: {f.get('bw_window') or 64} ]")
    if layout in ("rma_lat", "rma_bw"):
        win, sync = str(f.get("rma_win") or "allocate"), str(f.get("rma_sync") or "flush")
        out.append(f"# Window creation: {OSU_WIN.get(win, win)}")
        out.append(f"# Synchronization: {OSU_SYNC.get(sync, sync)}")
    if not nosize:
        out.append(f"# Datatype: {mpi_type(op, f)}.")
    tails = [f"P{q} Tail {'BW(MB/s)' if layout in TAIL_BW else 'Lat(us)'}" for q in TAIL_PCT] if tail else []
    if layout == "coll" and tail:     # -z: the tail columns take the places of Min / Max / Iterations
        cols = ["Avg Latency(us)", *tails]
        head = ("# " + cols[0] if nosize else f"{'# Size':<10}{cols[0]:>{FW}}") + "".join(f"{c:>{FW}}" for c in cols[1:])
        return out + [head]
    if layout == "coll":
        cols = ["Avg Latency(us)", "Min Latency(us)", "Max Latency(us)"]
        head = ("# " + cols[0] if nosize else f"{'# Size':<10}{cols[0]:>{FW}}") + "".join(f"{c:>{FW}}" for c in cols[1:])
        return out + [head + f"{'Iterations':>12}"]
    cols = {"bw": ["Bandwidth (MB/s)"], "rma_bw": ["Bandwidth (MB/s)"], "mbw_mr": ["MB/s", "Messages/s"],
            "multi_lat": ["Avg Latency(us)"], "latency": ["Avg Latency(us)"], "rma_lat": ["Latency (us)"],
            "nbc": ["Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)"]}[layout] + tails
    if nosize:
        return out + ["# " + cols[0] + "".join(f"{c:>{FW}}" for c in cols[1:])]
    return out + [f"{'# Size':<10}" + "".join(f"{c:>{FW}}" for c in cols)]


def _osu_size(op: str, msize: int) -> int:
    """The Size column: the bytes of one element for fop / cas (OSU prints its type's size), else msize."""
    return 8 if _variant(op)[0] in ("fop", "cas") else msize


def tail_kind(layout: str) -> str:
    """Whose time is an iteration's in OSU's -z arrays: the mean over the ranks for the collectives
    (omb_get_stats), rank 0's for the rest (omb_calculate_tail_lat on rank 0)."""
    return "mean" if layout in ("coll", "nbc") else "origin"


def tail_values(r: dict, layout: str) -> list[float] | None:
    """The P50 / P90 / P99 cells of a row with per-rank data (analysis.osu_ranks tail_statistics,
    median over the mpiruns): µs for the latency layouts (one-way where OSU prints one), MB/s for
    the bandwidth layouts; None without them."""
    t = ((r.get("ranks") or {}).get("tail") or {}).get(tail_kind(layout))
    if not t:
        return None
    if layout in TAIL_BW:
        return [_bw(r, "ranks", x) for x in t["inv"]]
    div = one_way_divisor(r) if layout in ("multi_lat", "rma_lat", "latency") else 1
    return [x / div * 1e6 for x in t["lat"]]


def osu_rows(rows: list[dict], values: str, pure: dict | None = None, tail: bool = False) -> list[str]:
    op = rows[0]["op"]
    layout = osu_target(op)[0]
    f = _factors(rows)
    stat = statistic("osu", op)
    nosize = op in NOSIZE_OPS
    out = []
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values, stat)
        if v is None:
            continue
        avg, lo, hi, n = v
        size = f"{_osu_size(op, r['msize']):<10d}"
        tv = tail_values(r, layout) if tail else []
        if tv is None or any(x is None for x in tv):
            continue
        if layout == "coll" and tail:
            cells = "".join(f"{x:>{FW}.2f}" for x in [avg * 1e6, *tv])
            out.append(f"{avg * 1e6:>17.2f}{cells[FW:]}" if nosize else size + cells)
            continue
        if layout == "coll":
            cells = f"{avg * 1e6:>{FW}.2f}{lo * 1e6:>{FW}.2f}{hi * 1e6:>{FW}.2f}{n:>12d}"
            out.append(f"{avg * 1e6:>17.2f}{cells[FW:]}" if nosize else size + cells)
            continue
        if layout in ("bw", "rma_bw"):
            nums = [_bw(r, values, avg)]
        elif layout == "mbw_mr":
            nums = [_bw(r, values, avg), _rate(r, values, avg, f)]
        elif layout in ("multi_lat", "rma_lat", "latency"):
            nums = [avg / one_way_divisor(r) * 1e6]
        else:
            key = (r.get("campaign", ""), r["config"], op[:-8], r["msize"], r["nprocs"])
            nv = _nbc_values(r, (pure or {}).get(key), values, stat)
            if nv is None:
                continue
            nums = [nv[0] * 1e6, nv[1] * 1e6, nv[2] * 1e6, nv[3]]
        nums += tv
        if any(x is None for x in nums):
            continue
        if nosize:      # print_stats_nbc without the size: overall in 13 columns
            out.append(f"{nums[0]:>13.2f}" + "".join(f"{x:>{FW}.2f}" for x in nums[1:]))
        else:
            out.append(size + "".join(f"{x:>{FW}.2f}" for x in nums))
    return out


def osu_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = (),
              pure: dict | None = None, tail: bool = False) -> str:
    """One OSU output (one op, one configuration, one nprocs): OSU's header and rows as OSU 7.4
    prints them (tail: as with -z, which needs per-rank data: values "ranks"), then mpitempo's '#'
    lines. pure: (campaign, config, op, msize, nprocs) -> summary row, for the pure op of an overlap op."""
    op = rows[0]["op"]
    layout = osu_target(op)[0]
    runs = _runs(rows, values)
    tail = tail and values == "ranks"
    out = osu_header(op, _factors(rows), rows[0]["nprocs"], tail) + osu_rows(rows, values, pure, tail)
    if layout == "rma_lat" and max(one_way_divisor(r) for r in rows) == 2:
        layout = "rma_lat_2"
    out += _notes(rows, values, filt_desc, "osu", source, extra, runs, layout)
    if tail:
        out += _tail_meaning(rows, layout)
    return safe_block("\n".join(out) + "\n")   # read in terminals: strings from files escaped


# --- IMB ------------------------------------------------------------------------------------------

def _imb_columns(layout: str, nosize: bool) -> list[str]:
    heads = {"coll": ["t_min[usec]", "t_max[usec]", "t_avg[usec]"], "time_bw": ["t[usec]", "Mbytes/sec"],
             "rma": ["t[usec]", "Mbytes/sec"], "rma_agg": ["t[usec]", "Mbytes/sec"], "rate": ["Mbytes/sec", "Msg/sec"],
             "range_bw": ["t_min[usec]", "t_max[usec]", "t_avg[usec]", "Mbytes/sec"],
             "nbc": ["t_ovrl[usec]", "t_pure[usec]", "t_CPU[usec]", " overlap[%]"]}[layout]
    return ([] if nosize else ["#bytes"]) + ["#repetitions"] + heads


def _ctime(meta_start: str | None) -> str:
    """IMB's Date line (ctime format) of a meta.json start_time (UTC)."""
    import calendar

    if meta_start:
        try:
            t = time.strptime(str(meta_start).split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S")
            return time.asctime(time.gmtime(calendar.timegm(t))) + " UTC"
        except ValueError:
            pass
    return "(not recorded)"


def imb_preamble(part: str, name: str, f: dict, env: dict, sizes: list[int], calling: str) -> list[str]:
    """IMB's general header and list of benchmarks, for one benchmark, with this campaign's values
    (env: date, machine, system, release, version, mpi_version as recorded in meta.json)."""

    red_t, hash_blank, argv_t = IMB_PREAMBLE[part]
    bar = "#" + "-" * 64
    dt = str(f.get("datatype") or "byte")
    return [bar, f"#    Intel(R) MPI Benchmarks {IMB_VERSION}, {IMB_PARTS[part]}", bar,
            f"# Date                  : {env.get('date', '(not recorded)')}",
            f"# Machine               : {env.get('machine', '(not recorded)')}",
            f"# System                : {env.get('system', '(not recorded)')}",
            f"# Release               : {env.get('release', '(not recorded)')}",
            f"# Version               : {env.get('version', '(not recorded)')}",
            f"# MPI Version           : {env.get('mpi_version', '(not recorded)')}",
            "# MPI Thread Environment: ", "", "",
            "# Calling sequence was: ", "", f"# {calling}{argv_t}", "",
            f"# Minimum message length in bytes:   {min(sizes) if sizes else 0}",
            f"# Maximum message length in bytes:   {max(sizes) if sizes else 0}",
            "#",
            f"# MPI_Datatype                   :   {MOVE_TYPES.get(dt, 'MPI_' + dt.upper())} ",
            f"# MPI_Datatype for reductions    :   {REDUCE_TYPES.get(dt, 'MPI_' + dt.upper())}{red_t}",
            f"# MPI_Op                         :   MPI_{str(f.get('redop') or 'sum').upper()}  ",
            hash_blank, hash_blank, "",
            "# List of Benchmarks to run:", "", f"# {name}"]


def imb_header(part: str, name: str, layout: str, nosize: bool, nprocs: int) -> list[str]:
    """IMB_print_header of one benchmark: the bars, the name, the processes, the mode, the columns."""
    cols = _imb_columns(layout, nosize)
    bar = "#" + "-" * (len(cols) * IW - 1)
    shown = 2 if name in IMB_TWO_RANKS else nprocs
    out = ["", bar, f"# Benchmarking {name} ", f"# #processes = {shown} "]
    idle = nprocs - shown
    if idle:
        out.append(f"# ( {idle} additional process{'' if idle == 1 else 'es'} waiting in MPI_Barrier)")
    out.append(bar)
    if part == "RMA":
        out += ["#", f"#    MODE: {'AGGREGATE' if layout == 'rma_agg' else 'NON-AGGREGATE'} ", "#"]
    return out + ["".join(f"{h:>{IW}}" for h in cols)]


def imb_rows(rows: list[dict], values: str, pure: dict | None = None) -> list[str]:
    from mpitempo.analysis.derived import imb_overlap_pct

    op = rows[0]["op"]
    part, name, layout = imb_target(op, rows[0]["nprocs"])
    f = _factors(rows)
    nosize = op in NOSIZE_OPS
    scale = IMB_P2P[op][2] if op in IMB_P2P else 1
    stat = statistic("imb", op)
    out = []
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values, stat)
        if v is None:
            continue
        t, lo, hi, n = v
        div = one_way_divisor(r) if layout in ("time_bw", "rma") else 1     # PingPong from multi_lat: / 2
        t, lo, hi = t / div, lo / div, hi / div
        m = r["msize"]
        # IMB divides by its t_max; per-rank data gives it, else the measurements already are the slowest rank's
        tbw = (r["ranks"]["max_s"] / div) if values == "ranks" and r.get("ranks") else t
        if layout == "coll":
            nums = [lo * 1e6, hi * 1e6, (r["ranks"]["avg_s"] if values == "ranks" else t) * 1e6]
        elif layout in ("time_bw", "rma"):
            nums = [t * 1e6, scale * m / (tbw * 1e6)]
        elif layout == "rate":
            nums = [_bw(r, values, tbw), _rate(r, values, tbw, f)]
        elif layout == "rma_agg":
            nb = ((r.get("bandwidth_MBps") or {}).get("bytes_per_call") or [0])[0]
            ta = t * m / nb if nb else None
            nums = [None] if ta is None else [ta * 1e6, m / (ta * 1e6)]
        elif layout == "range_bw":
            avg = r["ranks"]["avg_s"] if values == "ranks" else t
            nums = [lo * 1e6, hi * 1e6, avg * 1e6, scale * m / (tbw * 1e6)]
        else:
            key = (r.get("campaign", ""), r["config"], op[:-8], m, r["nprocs"])
            nv = _nbc_values(r, (pure or {}).get(key), values, stat)
            if nv is None:
                continue
            nums = [nv[0] * 1e6, nv[2] * 1e6, nv[1] * 1e6, imb_overlap_pct(nv[0], nv[1], nv[2])]
        if any(x is None for x in nums):
            continue
        lead = "" if nosize else f"{m:>{IW}d}"
        cells = [f"{x:>{IW}.2f}" for x in nums]
        if layout == "rate":
            cells[1] = f"{nums[1]:>{IW}.0f}"        # Msg/sec: "%13.0f" (IMB_output.c)
        out.append(f"{lead}{n:>{IW}d}" + "".join(cells))
    return out


def imb_env(meta: dict | None) -> dict:
    """The preamble's Date, Machine, Release and MPI Version from a run's meta.json (uname's
    system name and version are not recorded)."""
    m = meta or {}
    mach = m.get("machine") if isinstance(m.get("machine"), dict) else {}
    build = m.get("build") if isinstance(m.get("build"), dict) else {}
    env = {"date": _ctime(m.get("start_time"))}
    if mach.get("arch"):
        env["machine"] = mach["arch"]
    if mach.get("kernel"):
        env["release"] = mach["kernel"]
    if build.get("mpi_header_version") is not None:
        env["mpi_version"] = f"{build['mpi_header_version']}.{build.get('mpi_header_subversion', 0)}"
    return env


def imb_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = (),
              pure: dict | None = None, meta: dict | None = None) -> str:
    """One IMB output (one op, one configuration, one nprocs): IMB's preamble and benchmark block
    as IMB 2021.11 prints them, mpitempo's '#' lines, IMB's closing line."""
    op = rows[0]["op"]
    part, name, layout = imb_target(op, rows[0]["nprocs"])
    runs = _runs(rows, values)
    f = _factors(rows)
    nosize = op in NOSIZE_OPS
    calling = (f"mpitempo export: IMB-{part} layout, numbers measured by mpitempo (op {op}, configuration "
               f"{rows[0]['config']})")
    out = imb_preamble(part, name, f, imb_env(meta), [r["msize"] for r in rows], calling)
    out += imb_header(part, name, layout, nosize, rows[0]["nprocs"]) + imb_rows(rows, values, pure)
    notes_layout = "time_bw_pp" if name == "PingPong" else layout
    out += [""] + _notes(rows, values, filt_desc, "imb", source, extra, runs, notes_layout)
    out += ["", "", "# All processes entering MPI_Finalize", ""]
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
        part, name, layout = imb_target(op, nprocs)
        head = f"IMB-{part}_{name}" + ("_aggregate" if layout == "rma_agg" else "")
        if name in IMB_CANONICAL and _variant(op)[0] not in IMB_CANONICAL[name] or _variant(op)[1]:
            base, var = _variant(op)
            head += f"-{base}{var}"
    lead = f"{_safe(camp)}." if many_campaigns and camp else ""
    return f"{lead}{head}.{_safe(cfg)}.np{nprocs}.txt"
