"""Summary rows in the text layouts that OSU Micro-Benchmarks and Intel MPI Benchmarks (IMB) users
already read, plot and parse: `mpitempo export --osu DIR` and `--imb DIR`.

OSU layout (OSU Micro-Benchmarks 7.x, collective latency tests run with -f, "full"):
``# OSU MPI <Op> Latency Test v7.x``, ``# Size`` (left in 10 columns), ``Avg/Min/Max Latency(us)``
(18 columns, 2 decimals), ``Iterations`` (12 columns); the barrier test has no Size column.
IMB layout (IMB-MPI1 2021.x): the ``# Benchmarking <Op>`` / ``# #processes = N`` block header,
``#bytes #repetitions t_min[usec] t_max[usec] t_avg[usec]`` in 13 columns (barrier: no #bytes).

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

OSU_VERSION = "7.4"
IMB_VERSION = "2021.7"

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


def osu_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = ()) -> str:
    """One OSU output (one op, one configuration, one nprocs): header, '#' comments, rows by size."""
    op = rows[0]["op"]
    runs = _runs(rows, values)
    out = [f"# OSU MPI {_title(op)} Latency Test v{OSU_VERSION}"]
    out += _context(rows, source, list(extra), runs) + _meaning(values, filt_desc, "osu", rows[0]["nprocs"], runs)
    nosize = op in NOSIZE_OPS
    if nosize:
        out.append(f"{'# Avg Latency(us)'}{'Min Latency(us)':>18}{'Max Latency(us)':>18}{'Iterations':>12}")
    else:
        out.append(f"{'# Size':<10}{'Avg Latency(us)':>18}{'Min Latency(us)':>18}{'Max Latency(us)':>18}"
                   f"{'Iterations':>12}")
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values)
        if v is None:
            continue
        avg, lo, hi, n = v
        cells = f"{avg * 1e6:>18.2f}{lo * 1e6:>18.2f}{hi * 1e6:>18.2f}{n:>12d}"
        out.append(f"{avg * 1e6:>17.2f}{cells[18:]}" if nosize else f"{r['msize']:<10d}{cells}")
    return "\n".join(out) + "\n"


def imb_block(rows: list[dict], values: str, filt_desc: str, source: str, extra: list[str] = ()) -> str:
    """One IMB-MPI1 benchmark block (one op, one configuration, one nprocs)."""
    op = rows[0]["op"]
    runs = _runs(rows, values)
    bar = "#" + "-" * 63
    out = [bar, f"#    Intel(R) MPI Benchmarks {IMB_VERSION} layout, written by mpitempo", bar]
    out += _context(rows, source, list(extra), runs) + _meaning(values, filt_desc, "imb", rows[0]["nprocs"], runs)
    out += ["", bar, f"# Benchmarking {IMB_NAMES.get(op, op.title())} ", f"# #processes = {rows[0]['nprocs']} ",
            bar]
    nosize = op in NOSIZE_OPS
    head = "" if nosize else f"{'#bytes':>13}"
    out.append(f"{head}{'#repetitions':>13}{'t_min[usec]':>13}{'t_max[usec]':>13}{'t_avg[usec]':>13}")
    for r in sorted(rows, key=lambda x: x["msize"]):
        v = values_of(r, values)
        if v is None:
            continue
        avg, lo, hi, n = v
        lead = "" if nosize else f"{r['msize']:>13d}"
        out.append(f"{lead}{n:>13d}{lo * 1e6:>13.2f}{hi * 1e6:>13.2f}{avg * 1e6:>13.2f}")
    out.append("")
    return "\n".join(out) + "\n"


def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Summary rows by (campaign, config, op, nprocs): one OSU/IMB output each."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r.get("campaign", ""), r["config"], r["op"], r["nprocs"]), []).append(r)
    return out


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", str(s)).strip("_") or "x"


def file_name(fmt: str, key: tuple, many_campaigns: bool) -> str:
    """osu_allreduce.<config>.np2.txt (IMB: IMB-MPI1_Allreduce.<config>.np2.txt); the campaign leads
    when several campaigns are exported together."""
    camp, cfg, op, nprocs = key
    head = f"osu_{op}" if fmt == "osu" else f"IMB-MPI1_{IMB_NAMES.get(op, op)}"
    lead = f"{_safe(camp)}." if many_campaigns and camp else ""
    return f"{lead}{head}.{_safe(cfg)}.np{nprocs}.txt"
