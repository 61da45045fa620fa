"""Which benchmark of OSU Micro-Benchmarks 7.4 and Intel MPI Benchmarks 2021.11 each op of mpitempo
is: the peers' test titles, file stems and benchmark names (read from their sources), for
present.osu (`export --osu/--imb`) and present.definitions (the definition notes)."""
from __future__ import annotations

import re

# OSU's own test titles (osu_<op>.c BENCHMARK strings); OSU 7.4 has no scan / exscan test
OSU_TITLES = {
    "allreduce": "Allreduce", "reduce": "Reduce", "bcast": "Broadcast", "barrier": "Barrier",
    "gather": "Gather", "gatherv": "Gatherv", "scatter": "Scatter", "scatterv": "Scatterv",
    "allgather": "Allgather", "allgatherv": "Allgatherv",
    "alltoall": "All-to-All Personalized Exchange", "alltoallv": "All-to-Allv Personalized Exchange",
    "reduce_scatter": "Reduce_scatter", "reduce_scatter_block": "Reduce_scatter_block",
}
# IMB-MPI1 benchmark names (IMB 2021.11 has no Scan / Exscan: "Invalid benchmark name")
IMB_NAMES = {
    "allreduce": "Allreduce", "reduce": "Reduce", "bcast": "Bcast", "barrier": "Barrier",
    "gather": "Gather", "gatherv": "Gatherv", "scatter": "Scatter", "scatterv": "Scatterv",
    "allgather": "Allgather", "allgatherv": "Allgatherv", "alltoall": "Alltoall", "alltoallv": "Alltoallv",
    "reduce_scatter": "Reduce_scatter", "reduce_scatter_block": "Reduce_scatter_block",
}
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
           "multi_lat": ("multi_lat", "OSU MPI Multi Latency Test", "osu_multi_lat"),
           # the persistent point-to-point ops (c/mpi/pt2pt/persistent): a call of multi_lat_persistent is a
           # round trip, as multi_lat's
           "bw_persistent": ("bw", "OSU MPI Bandwidth Persistent Test", "osu_bw_persistent"),
           "bibw_persistent": ("bw", "OSU MPI Bi-Directional Bandwidth Persistent Test", "osu_bibw_persistent"),
           "multi_lat_persistent": ("multi_lat", "OSU MPI Latency Persistent Test", "osu_latency_persistent")}
OSU_RMA = {"put": ("OSU MPI_Put Latency Test", "osu_put_latency", False),
           "get": ("OSU MPI_Get latency Test", "osu_get_latency", False),
           "acc": ("OSU MPI_Accumulate latency Test", "osu_acc_latency", False),
           "get_acc": ("OSU MPI_Get_accumulate latency Test", "osu_get_acc_latency", False),
           "fop": ("OSU MPI_Fetch_and_op latency Test", "osu_fop_latency", False),
           "cas": ("OSU MPI_Compare_and_swap latency Test", "osu_cas_latency", False),
           "put_bw": ("OSU MPI_Put Bandwidth Test", "osu_put_bw", True),
           "get_bw": ("OSU MPI_Get Bandwidth Test", "osu_get_bw", True),
           "put_bibw": ("OSU MPI_Put Bi-directional Bandwidth Test", "osu_put_bibw", True)}
# IMB: (part, benchmark name, layout); layouts: coll (t_min/t_max/t_avg), time_bw (t, Mbytes/sec),
# range_bw (t_min/t_max/t_avg, Mbytes/sec), rate (Mbytes/sec, Msg/sec), nbc (t_ovrl/t_pure/t_CPU/overlap);
# scale_bw of Mbytes/sec (IMB_parse_name_mpi1.c)
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


def _title(op: str) -> str:
    return OSU_TITLES.get(op, op.replace("_", " ").title())


def _variant(op: str) -> tuple[str, str]:
    """("pingpong/npp=9") -> ("pingpong", "-npp9"): the op and a file-name suffix of its variant."""
    base, _, var = op.partition("/")
    return base, ("-" + re.sub(r"[^A-Za-z0-9]+", "", var) if var else "")


def osu_target(op: str) -> tuple[str, str, str] | None:
    """(layout, header title, file stem) of an op in OSU 7.4, or None when OSU has no such test.
    The non-blocking pair is exported from its *_overlap op; osu_latency from the ping-pong kind
    (`pingpong-loop` is osu_latency's own loop; `pingpong`, Luecke et al.'s method, is written
    as osu_latency-pingpong)."""
    base, var = _variant(op)
    if base == "pingpong-loop":
        return "latency", "OSU MPI Latency Test", "osu_latency" + var
    if base == "pingpong":
        return "latency", "OSU MPI Latency Test", "osu_latency-pingpong" + var
    if var:
        return None
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


def imb_target(op: str, nprocs: int | None = None) -> tuple[str, str, str] | None:
    """(part, IMB benchmark name, layout) of an op at nprocs ranks (None: any), or None when IMB
    has no such benchmark. PingPong: the ping-pong kind, and multi_lat on 2 ranks (one pair);
    Uniband: mbw_mr (every pair, as IMB) and bw on 2 ranks; Biband: bibw on 2 ranks."""
    base, var = _variant(op)
    if base in ("pingpong", "pingpong-loop"):
        return "MPI1", "PingPong", "time_bw"
    if var:
        return None
    two = nprocs is None or nprocs == 2
    if op == "multi_lat":
        return ("MPI1", "PingPong", "time_bw") if two else None
    if op == "mbw_mr" or (op == "bw" and two):
        return "MPI1", "Uniband", "rate"
    if op == "bibw" and two:
        return "MPI1", "Biband", "rate"
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
