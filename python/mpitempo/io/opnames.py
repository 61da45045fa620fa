"""OSU and IMB benchmark names as mpitempo operations, and the profiles ``--like osu`` and ``--like imb``:
one table.

Every row (``Benchmark``) is one benchmark of OSU Micro-Benchmarks 7.4 or Intel MPI Benchmarks
2021.11, named as the suite names it (``osu_bw``; IMB's ``PingPong`` is the op name ``IMB:PingPong``,
accepted in any case), with the mpitempo ops that measure it (an OSU or IMB non-blocking test is the
pure op and its ``*_overlap``), the parameter values under which those ops follow the suite's
definitions, the ranks it runs on, the source file each definition was read from, and what still
differs. A benchmark mpitempo has no op for carries the reason instead (``why``): its name is
refused with it. docs/methods.md ("Profiles: --like osu and --like imb") is this table in prose.

The values were read from the suites' sources, not their documentation: OSU 7.4 c/util/osu_util.h
and osu_util.c (defaults: window 64, MPI_CHAR, iteration counts), c/mpi/**/osu_*.c (what each test
times and between which barriers); IMB 2021.11 src_c/IMB_mem_manager.c IMB_set_default (MPI_BYTE,
MPI_FLOAT for reductions, MPI_SUM), src_cpp/MPI1/MPI1_suite.cpp (window_size 256, sync on),
src_c/IMB_*.c (the kernels), src_c/IMB_init_transfer.c (MPI_Win_create).
"""
from __future__ import annotations

from dataclasses import dataclass, field

PROFILES = ("osu", "imb")
SUITES = {"osu": "OSU Micro-Benchmarks 7.4", "imb": "Intel MPI Benchmarks 2021.11"}
SHORT = {"osu": "OSU", "imb": "IMB"}
IMB_PREFIX = "IMB:"


@dataclass(frozen=True)
class Benchmark:
    suite: str                          # "osu" or "imb"
    name: str                           # as the suite names it: "osu_bw", "PingPong"
    ops: tuple[str, ...] = ()           # the mpitempo ops that measure it; () = none
    settings: dict = field(default_factory=dict)   # parameter -> value of the suite's definition
    np: str = ""                        # "2": exactly two ranks, "even", "3+": at least 3, "": any
    source: str = ""                    # where in the suite's source the definition is
    differs: tuple[str, ...] = ()       # definitions mpitempo does not reproduce (yet)
    why: str = ""                       # no mpitempo op: why (the name is refused with it)

    @property
    def op_name(self) -> str:
        """The name accepted in ops: osu_bw, IMB:PingPong."""
        return self.name if self.suite == "osu" else IMB_PREFIX + self.name

    def np_problem(self, np: int) -> str | None:
        if self.np == "2" and np != 2:
            return "exactly 2 ranks"
        if self.np == "even" and (np < 2 or np % 2):
            return "an even number of ranks"
        if self.np == "3+" and np < 3:
            return "at least 3 ranks"
        return None


# What a setting means in each suite, for the line that refuses a contradicting value.
MEANING = {
    "scheme": {"loop": "times a loop of calls without a barrier between them",
               "barrier": "times every call on its own, with a barrier between calls"},
    "bw_rbuf": {"single": "receives every message of a window into one buffer"},
    "warmup_max_time": {"10ms": "skips fewer iterations when they are long (skip_large: 2-10 above 8 KiB)"},
    "inner_min_time": {"1ms": "times iterations of 1 ms or more one by one (its -z per-iteration times)"},
    "bw_window": {64: "keeps 64 messages in flight per window", 256: "keeps 256 messages in flight per window"},
    "datatype": {"char": "sends MPI_CHAR", "byte": "sends MPI_BYTE", "float": "reduces MPI_FLOAT"},
    "redop": {"sum": "reduces with MPI_SUM"},
    "vcounts": {"uniform": "gives every rank the same count"},
    "cache": {"warm": "reuses the same buffers (no cache flushing)"},
    "rma_sync": {"flush": "locks the target once and flushes after every access"},
    "rma_win": {"create": "creates its window with MPI_Win_create"},
    "overlap_compute": {"auto": "computes as long as the pure communication took"},
    "in_place": {False: "uses separate send and receive buffers"},
    "neighbor_topo": {"ring": "has 2 neighbours, i-1 and i+1 (a periodic 1-D grid of radius 1)"},
    "loop": {True: "times a loop of ping-pongs (the loop-averaged method)"},
    "loop_iters": {None: "repeats 10000 times up to 8 KiB and 1000 times above (osu_latency's counts)"},
}

_OSU = "c/mpi/"
_OSU_UTIL = "c/util/osu_util.h, osu_util.c"
_IMB = "src_c/"
_IMB_DEF = "src_c/IMB_mem_manager.c (IMB_set_default)"

REDUCTIONS = {"allreduce", "reduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"}
VECTORS = {"gatherv", "scatterv", "allgatherv", "alltoallv"}


def _data(op: str, base: dict, red_type: str | None = None) -> dict:
    """Settings of a collective-type op: the datatype (a reduction's own type if the suite has one),
    MPI_SUM for reductions, equal counts for the vector ops."""
    plain = op.removeprefix("i").removesuffix("_overlap").removesuffix("_init")
    if op.startswith("neighbor_"):
        plain = op
    s = dict(base)
    if plain in ("barrier",):
        s.pop("datatype", None)
        s.pop("cache", None)
        return s
    if plain in REDUCTIONS:
        s["redop"] = "sum"
        if red_type:
            s["datatype"] = red_type
    if plain in VECTORS or plain.endswith("allgatherv") or plain.endswith("alltoallv"):
        s["vcounts"] = "uniform"
    return s


# ---- OSU Micro-Benchmarks 7.4 -------------------------------------------------------------------------
# warm-up: OSU skips 2-10 iterations above 8 KiB (skip_large); a fixed --warmup of long calls stops at 10 ms
OSU_COMMON = {"datatype": "char", "cache": "warm", "warmup_max_time": "10ms"}
# a loop of iterations after one barrier; iterations of 1 ms or more timed one by one (OSU's -z times every
# iteration; the barrier before each, ~1 us, is then <= 0.1% of it)
OSU_LOOP = {"scheme": "loop", "inner_min_time": "1ms", **OSU_COMMON}
OSU_COLL = {"scheme": "barrier", **OSU_COMMON}       # t_start; call; t_stop; MPI_Barrier
OSU_WIN = {"bw_rbuf": "single", "bw_window": 64}     # osu_util.h WINDOW_SIZE_LARGE, options.buf_num = SINGLE
OSU_NBC_DIFF = ("OSU's compute (dummy_compute, do_compute_and_probe) calls MPI_Test while it computes; mpitempo's "
                "compute busy-waits without MPI calls",)
OSU_RMA_DIFF = ("fence (--rma-sync fence): OSU times 3 fences and 2 puts per iteration (both ranks put) and halves; "
                "mpitempo times one epoch: fence, access, fence",)

OSU_COLLECTIVES = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "gather",
                   "gatherv", "reduce", "reduce_scatter", "reduce_scatter_block", "scatter", "scatterv")
OSU_NBC = ("iallgather", "iallgatherv", "iallreduce", "ialltoall", "ialltoallv", "ibarrier", "ibcast", "igather",
           "igatherv", "ireduce", "ireduce_scatter", "ireduce_scatter_block", "iscatter", "iscatterv")
OSU_PERSISTENT = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "gather",
                  "gatherv", "reduce", "reduce_scatter", "scatter", "scatterv")
OSU_NEIGHBOR = ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
                "neighbor_alltoallw")
OSU_RMA = (("osu_put_latency", "put", {}), ("osu_get_latency", "get", {}), ("osu_acc_latency", "acc", {"redop": "sum"}),
           ("osu_get_acc_latency", "get_acc", {"redop": "sum"}), ("osu_fop_latency", "fop", {"redop": "sum"}),
           ("osu_cas_latency", "cas", {}), ("osu_put_bw", "put_bw", {"bw_window": 64}),
           ("osu_get_bw", "get_bw", {"bw_window": 64}))


def _osu_rows() -> list[Benchmark]:
    pt = _OSU + "pt2pt/standard/"
    rows = [
        Benchmark("osu", "osu_bw", ("bw",), {**OSU_LOOP, **OSU_WIN}, "2", pt + "osu_bw.c; " + _OSU_UTIL),
        Benchmark("osu", "osu_bibw", ("bibw",), {**OSU_LOOP, **OSU_WIN}, "2", pt + "osu_bibw.c; " + _OSU_UTIL),
        Benchmark("osu", "osu_mbw_mr", ("mbw_mr",), {**OSU_COLL, **OSU_WIN}, "even", pt + "osu_mbw_mr.c",
                  ("OSU enters every window through two barriers back to back, mpitempo's barrier scheme through one",)),
        # multi_lat: osu_multi_lat first, the default of a plain multi_lat under --like osu
        Benchmark("osu", "osu_multi_lat", ("multi_lat",), dict(OSU_COLL), "even", pt + "osu_multi_lat.c"),
        Benchmark("osu", "osu_latency", ("multi_lat",), dict(OSU_LOOP), "2", pt + "osu_latency.c; " + _OSU_UTIL),
    ]
    for c in OSU_COLLECTIVES:
        rows.append(Benchmark("osu", f"osu_{c}", (c,), _data(c, OSU_COLL), "",
                              f"{_OSU}collective/blocking/osu_{c}.c"))
    for c in OSU_NBC:
        rows.append(Benchmark("osu", f"osu_{c}", (f"{c}_overlap", c),
                              _data(c, {**OSU_COLL, "overlap_compute": "auto"}), "",
                              f"{_OSU}collective/non_blocking/osu_{c}.c; c/util/osu_util_mpi.c", OSU_NBC_DIFF))
    for c in OSU_PERSISTENT:
        rows.append(Benchmark("osu", f"osu_{c}_persistent", (f"{c}_init",), _data(c, OSU_COLL), "",
                              f"{_OSU}collective/persistent/osu_{c}_persistent.c"))
    for c in OSU_NEIGHBOR:   # OSU's default neighbourhood: a periodic 1-D grid of radius 1, >= 3 ranks
        rows.append(Benchmark("osu", f"osu_{c}", (c,), _data(c, {**OSU_COLL, "neighbor_topo": "ring"}), "3+",
                              f"{_OSU}collective/neighborhood/osu_{c}.c; c/util/osu_util_mpi.c"))
    for name, op, extra in OSU_RMA:
        diff = OSU_RMA_DIFF
        if op in ("fop", "cas"):
            diff += ("OSU's atomic is one MPI_CHAR element, mpitempo's one MPI_INT64_T",)
        s = {**OSU_LOOP, **extra}
        if op in ("fop", "cas"):
            s.pop("datatype")
        rows.append(Benchmark("osu", name, (op,), s, "2", f"{_OSU}one-sided/{name}.c; c/util/osu_util_mpi.c", diff))
    none = {
        "osu_latency_mt": "a multi-threaded ping-pong (MPI_THREAD_MULTIPLE, threads per rank): no mpitempo op",
        "osu_latency_mp": "a ping-pong between processes forked by each rank: no mpitempo op",
        "osu_bw_persistent": "persistent point-to-point (MPI_Send_init/MPI_Recv_init): no mpitempo op",
        "osu_bibw_persistent": "persistent point-to-point (MPI_Send_init/MPI_Recv_init): no mpitempo op",
        "osu_latency_persistent": "persistent point-to-point (MPI_Send_init/MPI_Recv_init): no mpitempo op",
        "osu_bw_fan_in": "a congestion test, many senders to one receiver: no mpitempo op",
        "osu_bw_fan_out": "a congestion test, one sender to many receivers: no mpitempo op",
        "osu_alltoallw": "MPI_Alltoallw: no mpitempo op",
        "osu_ialltoallw": "MPI_Ialltoallw: no mpitempo op",
        "osu_alltoallw_persistent": "MPI_Alltoallw_init: no mpitempo op",
        "osu_put_bibw": "bidirectional MPI_Put bandwidth: no mpitempo op",
        "osu_init": "the time of MPI_Init itself: not an operation mpitempo measures",
        "osu_hello": "a start-up check (hello world), not a measurement",
    }
    for c in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"):
        none[f"osu_ineighbor_{c}"] = f"non-blocking neighbourhood collectives (MPI_Ineighbor_{c}): no mpitempo op"
    rows += [Benchmark("osu", n, why=w) for n, w in none.items()]
    return rows


# ---- Intel MPI Benchmarks 2021.11 ---------------------------------------------------------------------
IMB_COMMON = {"datatype": "byte", "cache": "warm", "in_place": False}
IMB_LOOP = {"scheme": "loop", **IMB_COMMON}          # N_BARR barriers, then n_sample calls timed together
IMB_COLL = {"scheme": "barrier", **IMB_COMMON}       # each call timed, IMB_do_n_barriers(sync) between them
IMB_WIN = {"bw_rbuf": "single", "bw_window": 256}    # MPI1_suite.cpp window_size; r_offs 0, r_cache_iter 1
IMB_RMA = {"scheme": "loop", "datatype": "byte", "cache": "warm", "rma_sync": "flush", "rma_win": "create"}
IMB_NBC_DIFF = ("IMB's compute (IMB_cpu_exploit) multiplies matrices; mpitempo's busy-waits; neither calls MPI",)
IMB_TAG_DIFF = ("IMB receives with MPI_ANY_TAG, mpitempo with the sender's tag",)

IMB_COLLECTIVES = (("Allreduce", "allreduce"), ("Reduce", "reduce"), ("Reduce_scatter", "reduce_scatter"),
                   ("Reduce_scatter_block", "reduce_scatter_block"), ("Allgather", "allgather"),
                   ("Allgatherv", "allgatherv"), ("Gather", "gather"), ("Gatherv", "gatherv"), ("Scatter", "scatter"),
                   ("Scatterv", "scatterv"), ("Alltoall", "alltoall"), ("Alltoallv", "alltoallv"), ("Bcast", "bcast"),
                   ("Barrier", "barrier"))
IMB_NBC = ("Ibcast", "Iallgather", "Iallgatherv", "Igather", "Igatherv", "Iscatter", "Iscatterv", "Ialltoall",
           "Ialltoallv", "Ireduce", "Ireduce_scatter", "Iallreduce", "Ibarrier")
IMB_PERSIST = ("Bcast", "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall",
               "Alltoallv", "Reduce", "Reduce_scatter", "Allreduce", "Barrier")


def _imb_rows() -> list[Benchmark]:
    rows = [
        Benchmark("imb", "PingPong", ("multi_lat",), dict(IMB_LOOP), "2", _IMB + "IMB_pingpong.c", IMB_TAG_DIFF),
        Benchmark("imb", "PingPongSpecificSource", ("multi_lat",), dict(IMB_LOOP), "2", _IMB + "IMB_pingpong.c",
                  IMB_TAG_DIFF),
        Benchmark("imb", "PingPing", ("pingping",), dict(IMB_LOOP), "2", _IMB + "IMB_pingping.c", IMB_TAG_DIFF),
        Benchmark("imb", "PingPingSpecificSource", ("pingping",), dict(IMB_LOOP), "2", _IMB + "IMB_pingping.c",
                  IMB_TAG_DIFF),
        Benchmark("imb", "Sendrecv", ("sendrecv",), dict(IMB_LOOP), "", _IMB + "IMB_sendrecv.c"),
        Benchmark("imb", "Exchange", ("exchange",), dict(IMB_LOOP), "", _IMB + "IMB_exchange.c"),
        Benchmark("imb", "Uniband", ("mbw_mr",), {**IMB_LOOP, **IMB_WIN}, "even",
                  _IMB + "IMB_bandwidth.c; src_cpp/MPI1/MPI1_suite.cpp"),
        Benchmark("imb", "Biband", ("bibw",), {**IMB_LOOP, **IMB_WIN}, "2",
                  _IMB + "IMB_bandwidth.c; src_cpp/MPI1/MPI1_suite.cpp",
                  ("IMB's Biband ends every window with a 1-byte acknowledgement from the second rank; mpitempo's "
                   "bibw has none (and runs one pair: IMB runs every pair, so only 2 ranks compare)",)),
    ]
    for name, op in IMB_COLLECTIVES:
        rows.append(Benchmark("imb", name, (op,), _data(op, IMB_COLL, "float"), "",
                              f"{_IMB}IMB_{op}.c; {_IMB_DEF}"))
    for name in IMB_NBC:
        op = name.lower()
        s = _data(op, {**IMB_COLL, "overlap_compute": "auto"}, "float")
        src = f"{_IMB}IMB_{op[1:]}.c; {_IMB}IMB_cpu_exploit.c"
        rows.append(Benchmark("imb", name, (f"{op}_overlap", op), s, "", src, IMB_NBC_DIFF))
        rows.append(Benchmark("imb", f"{name}_pure", (op,), s, "", src))
    for name in IMB_PERSIST:
        op = name.lower()
        s = _data(op, IMB_COLL, "float")
        src = f"{_IMB}IMB_{op}.c (IMB_{op}_persist_pure)"
        rows.append(Benchmark("imb", f"{name}_persist_pure", (f"{op}_init",), s, "", src))
        rows.append(Benchmark("imb", f"{name}_persist", why="overlap of a persistent collective with compute: "
                              f"no mpitempo op (IMB:{name}_persist_pure is {op}_init)"))
    agg = ("IMB's AGGREGATE mode (one MPI_Win_flush after n_sample accesses) has no counterpart: mpitempo's put_bw "
           "and get_bw flush once per --bw-window accesses",)
    rows += [
        Benchmark("imb", "Unidir_put", ("put",), dict(IMB_RMA), "2", _IMB + "IMB_rma_put.c; IMB_init_transfer.c", agg),
        Benchmark("imb", "Unidir_get", ("get",), dict(IMB_RMA), "2", _IMB + "IMB_rma_get.c; IMB_init_transfer.c", agg),
        Benchmark("imb", "Accumulate", ("acc",), {**IMB_RMA, "datatype": "float", "redop": "sum"}, "2",
                  _IMB + "IMB_rma_atomic.c"),
        Benchmark("imb", "Get_accumulate", ("get_acc",), {**IMB_RMA, "datatype": "float", "redop": "sum"}, "2",
                  _IMB + "IMB_rma_atomic.c"),
        Benchmark("imb", "Fetch_and_op", ("fop",), {k: v for k, v in IMB_RMA.items() if k != "datatype"} | {"redop": "sum"},
                  "2", _IMB + "IMB_rma_atomic.c", ("IMB's atomic is one MPI_FLOAT element, mpitempo's one MPI_INT64_T",)),
        Benchmark("imb", "Compare_and_swap", ("cas",), {k: v for k, v in IMB_RMA.items() if k != "datatype"}, "2",
                  _IMB + "IMB_rma_atomic.c", ("IMB's atomic is one element of its data type, mpitempo's one MPI_INT64_T",)),
    ]
    none = {
        "PingPongAnySource": "receives with MPI_ANY_SOURCE: no mpitempo op (IMB:PingPong receives from its partner)",
        "PingPingAnySource": "receives with MPI_ANY_SOURCE: no mpitempo op (IMB:PingPing receives from its partner)",
        "Reduce_local": "MPI_Reduce_local (no communication): no mpitempo op",
        "Bidir_put": "both ranks put at once: no mpitempo op", "Bidir_get": "both ranks get at once: no mpitempo op",
        "One_put_all": "one origin puts to every rank: no mpitempo op",
        "One_get_all": "one origin gets from every rank: no mpitempo op",
        "All_put_all": "every rank puts to every rank: no mpitempo op",
        "All_get_all": "every rank gets from every rank: no mpitempo op",
        "Put_local": "completion by MPI_Win_flush_local: no mpitempo op",
        "Get_local": "completion by MPI_Win_flush_local: no mpitempo op",
        "Put_all_local": "completion by MPI_Win_flush_local_all: no mpitempo op",
        "Get_all_local": "completion by MPI_Win_flush_local_all: no mpitempo op",
        "Exchange_put": "a one-sided Exchange: no mpitempo op", "Exchange_get": "a one-sided Exchange: no mpitempo op",
        "Truly_passive_put": "a put while the target computes: no mpitempo op",
    }
    rows += [Benchmark("imb", n, why=w) for n, w in none.items()]
    return rows


BENCHMARKS: tuple[Benchmark, ...] = tuple(_osu_rows() + _imb_rows())
_BY_NAME = {b.op_name.lower(): b for b in BENCHMARKS}


def lookup(name: str) -> Benchmark | None:
    """The benchmark an ops item names (osu_bw, IMB:PingPong, any case), or None for other names."""
    return _BY_NAME.get(str(name).strip().lower())


def suite_of_name(name: str) -> str | None:
    """'osu' or 'imb' for a name in the suites' style, known or not (osu_..., IMB:...), else None."""
    n = str(name).strip().lower()
    if n.startswith("osu_"):
        return "osu"
    if n.startswith(IMB_PREFIX.lower()):
        return "imb"
    return None


def alias_names() -> list[str]:
    """Every accepted OSU and IMB name, as the suites spell them."""
    return [b.op_name for b in BENCHMARKS if b.ops]


def of_op(op: str, suite: str) -> list[Benchmark]:
    """The suite's benchmarks that an op measures, the default first (for a plain op under --like)."""
    return [b for b in BENCHMARKS if b.suite == suite and op in b.ops]


def names_of_op(op: str) -> dict[str, list[str]]:
    """{suite: [names]} of the benchmarks an op measures (for the exports and the docs)."""
    out: dict[str, list[str]] = {}
    for b in BENCHMARKS:
        if op in b.ops:
            out.setdefault(b.suite, []).append(b.op_name)
    return out


# ---- the profile of the pingpong command (mpitempo-pingpong's loop-averaged method) --------------------
PINGPONG = {
    # the loop's counts and skips (src/core/pingpong) are osu_latency's by default: --loop-iters must stay unset
    "osu": Benchmark("osu", "osu_latency", (), {"loop": True, "loop_iters": None}, "",
                     _OSU + "pt2pt/standard/osu_latency.c; " + _OSU_UTIL,
                     ("OSU sends MPI_CHAR, mpitempo-pingpong MPI_BYTE (the same bytes)",)),
    "imb": None,
}
PINGPONG_WHY = {"imb": "IMB's PingPong repeats 1000 times up to 40 KiB and 40 MiB / size above (OVERALL_VOL), "
                       "mpitempo pingpong's loop osu_latency's counts, and --loop-iters sets one count for every "
                       "size: use mpitempo run --ops IMB:PingPong"}
