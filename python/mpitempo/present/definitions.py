"""Where a number of mpitempo differs in definition from the number OSU Micro-Benchmarks 7.4 or
IMB 2021.11 print for the same benchmark, for one campaign's settings.

``definition_notes(op, factors)`` returns one short item per difference ("<what here> (<what the
suite does>)"), each led by the suite's benchmark name; ``export --osu/--imb`` writes them as '#'
lines, and ``summary`` / ``report`` show one line per op (``summary_notes``). A campaign recorded
with the profile factor ``like`` = "osu" or "imb" is compared with that suite only; its remaining
differences are listed. The facts about OSU and IMB are read from their sources (OSU 7.4:
c/mpi/pt2pt/standard/osu_latency.c, osu_bw.c, osu_bibw.c, osu_mbw_mr.c, osu_multi_lat.c,
c/mpi/collective/*, c/mpi/one-sided/osu_put_latency.c, c/util/osu_util.c; IMB 2021.11:
src_c/IMB_pingpong.c, IMB_bandwidth.c, IMB_exchange.c, IMB_allreduce.c, IMB_rma_put.c,
IMB_mem_manager.c, IMB_output.c, src_cpp/MPI1/MPI1_suite.cpp); docs/methods.md, "Compared with
OSU and IMB", has the same table for people.
"""
from __future__ import annotations

from mpitempo.present.peer_names import imb_target, osu_target
from mpitempo.errors import MtError
from mpitempo.io.safefs import check_not_link
from mpitempo.io.safeload import load_toml_text

# ops whose MPI type is the reduction type of --datatype (MT_OP_REDUCTION in src/core/op)
_REDUCING = {"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "acc", "get_acc"}
MOVE_TYPES = {"byte": "MPI_BYTE", "char": "MPI_CHAR", "int": "MPI_INT", "long": "MPI_LONG", "int64": "MPI_INT64_T",
              "float": "MPI_FLOAT", "double": "MPI_DOUBLE"}
REDUCE_TYPES = dict(MOVE_TYPES, byte="MPI_UNSIGNED_CHAR", char="MPI_SIGNED_CHAR")   # src/core/op/op.c mt_dtypes

# mpitempo's own layouts that a peer does differently and that no recorded factor selects yet (the
# C ops decide them; see docs/methods.md "Operations: p2p"): keep in step with src/core/op/op_p2p.c
EXCHANGE_LAYOUT = "one send buffer sent twice, two receive blocks"

# OSU 7.4 defaults (c/util/osu_util.h): window of the bandwidth tests, iterations of osu_latency
OSU_WINDOW = 64
IMB_WINDOW = 256                 # IMB-MPI1 -window_size (src_cpp/MPI1/MPI1_suite.cpp)
OSU_LAT_ITERS = "10000 (1000 above 8 KiB)"


def base_op(op: str) -> str:
    """The op without a variant suffix: "pingpong/npp=9" -> "pingpong"."""
    return op.split("/", 1)[0]


def _strip(op: str) -> str:
    """The blocking collective behind a persistent, non-blocking or overlap op (allreduce_init,
    iallreduce, iallreduce_overlap -> allreduce); other ops unchanged."""
    o = base_op(op)
    if o.endswith("_overlap"):
        o = o[:-8]
    if o.endswith("_init"):
        o = o[:-5]
    if o.startswith("i") and o[1:] in _COLLS:
        o = o[1:]
    return o


_COLLS = {"barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather",
          "allgatherv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"}


def mpi_type(op: str, factors: dict) -> str:
    """The MPI datatype the op actually used: the reduction type for reductions (byte reduces as
    MPI_UNSIGNED_CHAR), MPI_INT64_T for fop/cas, the pingpong kind's own type, else the type of
    --datatype."""
    o = base_op(op)
    if o in ("pingpong", "pingpong-loop"):
        return str((factors.get("pingpong") or {}).get("datatype") or "MPI_BYTE")
    if o in ("fop", "cas"):
        return "MPI_INT64_T"
    dt = str(factors.get("datatype") or "byte")
    table = REDUCE_TYPES if _strip(o) in _REDUCING else MOVE_TYPES
    return table.get(dt, f"MPI_{dt.upper()}")


def factors_of(meta: dict, toml: dict | None = None) -> dict:
    """The settings of one configuration that the definitions depend on, from a run's meta.json
    (and the campaign file's values for the profile factor ``like``, read defensively: absent or
    unknown means no profile)."""
    meta = meta if isinstance(meta, dict) else {}
    op = meta.get("operation_params") if isinstance(meta.get("operation_params"), dict) else {}
    sch = meta.get("scheme") if isinstance(meta.get("scheme"), dict) else {}
    f = {k: op.get(k) for k in ("datatype", "redop", "bw_window", "bw_rbuf", "rma_sync", "rma_win", "rma_epochs",
                                "overlap_compute", "in_place", "vcounts", "neighbor_topo")}
    # a core that records whose times are an op's (experiments[].timed_ranks) sends exchange's two
    # messages from two blocks into one, as IMB; the cores before it did the reverse
    exps = meta.get("experiments") if isinstance(meta.get("experiments"), list) else []
    f["exchange_as_imb"] = any(isinstance(e, dict) and "timed_ranks" in e for e in exps)
    f["kind"] = meta.get("kind") or "bench"
    f["nprocs"] = meta.get("nprocs")
    f["scheme"] = "pingpong" if f["kind"] == "pingpong" else sch.get("name")
    f["inner"] = sch.get("inner")
    f["inner_min_time_s"] = sch.get("inner_min_time_s")
    f["pingpong"] = meta.get("pingpong") if isinstance(meta.get("pingpong"), dict) else None
    like = None
    toml = toml if isinstance(toml, dict) else {}
    cfgs = toml.get("config") if isinstance(toml.get("config"), list) else []
    mine = next((c for c in cfgs if isinstance(c, dict) and c.get("name") == meta.get("config")), {})
    for src in (meta, op, meta.get("launch") if isinstance(meta.get("launch"), dict) else {}, mine, toml):
        for key in ("like", "profile"):
            v = src.get(key) if isinstance(src, dict) else None
            if isinstance(v, str) and v.strip().lower() in ("osu", "imb"):
                like = like or v.strip().lower()
    f["like"] = like
    return f


# --- which benchmark of each suite an op is, and its timing loop ---------------------------------

def osu_name(op: str, nprocs: int | None = None) -> str | None:
    t = osu_target(op)
    return None if t is None else t[2]


def imb_name(op: str, nprocs: int | None = None) -> str | None:
    t = imb_target(op, nprocs)
    return None if t is None else t[1]


def _osu_loop(op: str) -> str:
    """OSU's timing loop of an op: "loop" (iterations back to back, no barrier between them) or
    "barrier" (an untimed barrier between timed calls or windows)."""
    o = base_op(op)
    if o in ("pingpong", "pingpong-loop", "bw", "bibw") or o in _RMA:
        return "loop"
    return "barrier"      # collectives (barrier after each call), nbc, multi_lat, mbw_mr (before each)


def _imb_loop(op: str) -> str:
    o = base_op(op)
    if o in ("pingpong", "pingpong-loop", "multi_lat", "pingping", "sendrecv", "exchange", "bw", "bibw",
             "mbw_mr") or o in _RMA:
        return "loop"
    return "barrier"      # IMB_do_n_barriers(sync = 1) after every timed collective call


_RMA = {"put", "get", "acc", "get_acc", "fop", "cas", "put_bw", "get_bw", "put_bibw"}


def measurement_text(op: str, factors: dict) -> str:
    """What one measurement of this op is under the campaign's scheme (or the ping-pong kind)."""
    o = base_op(op)
    pp = factors.get("pingpong") or {}
    src, dst = pp.get("source", 0), pp.get("dest", "the last rank")
    if o == "pingpong":
        return (f"one timing of npp round trips between ranks {src} and {dst} after a hand-shake, / (2 npp), "
                "the timer's overhead subtracted (Luecke et al. 2009), on rank " + str(src))
    if o == "pingpong-loop":
        n = int(pp.get("loop_iters") or 0) or OSU_LAT_ITERS
        return f"one timing of {n} round trips between ranks {src} and {dst}, / (2 x round trips), on rank {src}"
    s, inner = factors.get("scheme"), factors.get("inner") or "inner"
    if s in ("window", "roundtime"):
        return (f"one call started at a global-clock time on every rank, max(end) - min(start) over the ranks "
                f"(scheme {s})")
    loop = f"{inner} calls back to back after a barrier, / {inner}"
    if factors.get("inner_min_time_s"):
        t = float(factors["inner_min_time_s"])
        t_text = f"{t:g} s" if t >= 1 else f"{t * 1e3:g} ms" if t >= 1e-3 else f"{t * 1e6:g} µs"
        loop = (f"up to {inner} calls back to back after a barrier, / their number (as many as take "
                f"--inner-min-time {t_text}, at least 1: meta.json "
                "experiments[].inner)")
    what = {"barrier": "one call after a barrier",
            "loop": loop,
            "barrier_loop": f"{inner} x (call, barrier) after a barrier, / {inner}"}.get(str(s), f"one call (scheme {s})")
    return f"{what}, timed on every rank: the largest local time over the ranks (scheme {s})"


def scheme_text(factors: dict) -> str:
    s, inner = factors.get("scheme"), factors.get("inner")
    return {"barrier": "a barrier before each call",
            "loop": f"loop of {inner or 'inner'} calls",
            "barrier_loop": "a barrier after each call of the loop",
            "window": "calls started on a global-clock grid",
            "roundtime": "calls started at Round-Time start times"}.get(str(s), f"scheme {s}")


def _scheme_note(op: str, factors: dict, suite: str) -> str | None:
    s = factors.get("scheme")
    if s in (None, "pingpong"):
        return None
    want = _osu_loop(op) if suite == "osu" else _imb_loop(op)
    if s == want:
        return None
    o = base_op(op)
    if want == "loop":
        theirs = "back to back"
    elif suite == "osu" and o == "mbw_mr":
        theirs = "a barrier before each window"
    elif suite == "osu" and o == "multi_lat":
        theirs = "a barrier before each round trip"
    else:
        theirs = "a barrier between calls"
    return f"{scheme_text(factors)} ({theirs})"


SIZELESS = {"barrier", "barrier_init", "ibarrier", "ibarrier_overlap"}


def _type_notes(op: str, factors: dict, suite: str) -> list[str]:
    o = _strip(op)
    if base_op(op) in SIZELESS:
        return []
    t = mpi_type(op, factors)
    out = []
    if suite == "osu":
        want = "MPI_CHAR"
    else:
        want = "MPI_FLOAT" if o in _REDUCING else "MPI_BYTE"
        if base_op(op) in ("fop", "cas"):
            want = None           # IMB-RMA's atomics use their own element type; not compared
    if want and t != want:
        out.append(f"{'reduces' if o in _REDUCING else 'type'} {t} ({want})")
    redop = factors.get("redop")
    if o in _REDUCING and redop and redop != "sum" or base_op(op) == "fop" and redop and redop != "sum":
        out.append(f"operator MPI_{str(redop).upper()} (MPI_SUM)")
    return out


def _window_notes(op: str, factors: dict, suite: str) -> list[str]:
    o = base_op(op)
    out = []
    w = factors.get("bw_window")
    if o in ("bw", "bibw", "mbw_mr"):
        if factors.get("bw_rbuf") in (None, "window"):
            out.append(f"receives into {w or 64} distinct blocks (one buffer)")
        want = OSU_WINDOW if suite == "osu" else IMB_WINDOW
        if w is not None and int(w) != want:
            out.append(f"window {w} ({want})")
    if o in ("put_bw", "get_bw"):
        if suite == "osu" and w is not None and int(w) != OSU_WINDOW:
            out.append(f"window {w} ({OSU_WINDOW})")
        if suite == "imb":
            out.append(f"{w or 64} accesses per flush (AGGREGATE: all n_sample, up to 1000)")
    return out


def _rma_notes(op: str, factors: dict, suite: str) -> list[str]:
    o = base_op(op)
    if o not in _RMA:
        return []
    sync = factors.get("rma_sync") or "flush"
    out = []
    two = int(factors.get("rma_epochs") or 1) == 2          # OSU's own iteration: two epochs, half reported
    if suite == "osu" and sync in ("fence", "pscw") and not o.endswith("bw") and not two:
        calls = "fence, access, fence" if sync == "fence" else "start, access, complete"
        theirs = ("3 fences and an access each way per iteration, / 2" if sync == "fence"
                  else "an epoch each way per iteration, / 2")
        out.append(f"one epoch per call: {calls} ({theirs})")
    if suite == "imb":
        if sync != "flush":
            out.append(f"sync {sync} (lock once, flush per access)")
        win = factors.get("rma_win") or "allocate"
        if win != "create":
            out.append(f"MPI_Win_{'allocate' if win == 'allocate' else 'create_dynamic'} (MPI_Win_create)")
    return out


def _op_notes(op: str, factors: dict, suite: str, context: str) -> list[str]:
    """The op-specific definition differences (not the statistic)."""
    o = base_op(op)
    out = []
    if o == "multi_lat" and context != "export":     # the export halves it
        half = "osu_multi_lat" if suite == "osu" else "IMB PingPong"
        out.append(f"time of a whole round trip ({half}: half of it; export --{suite} halves it)")
    if o == "pingpong":
        pp = factors.get("pingpong") or {}
        loop = OSU_LAT_ITERS if suite == "osu" else "n_sample"
        out.append("median of timings of npp round trips after a hand-shake, / (2 npp), timer overhead subtracted "
                   f"(the mean of one loop of {loop} round trips / 2)")
        if (pp.get("buffers") or "one") == "one":
            out.append("one buffer for sending and receiving (a send and a receive buffer)")
    if o == "pingpong-loop":
        pp = factors.get("pingpong") or {}
        if (pp.get("buffers") or "one") == "one":
            out.append("one buffer for sending and receiving (a send and a receive buffer)")
        if suite == "osu" and int(pp.get("loop_iters") or 0) > 0:
            out.append(f"{pp['loop_iters']} round trips per timing ({OSU_LAT_ITERS})")
    if o == "exchange" and suite == "imb" and not factors.get("exchange_as_imb"):
        out.append(f"{EXCHANGE_LAYOUT} (two send blocks, one receive block)")
    if _strip(o) == "reduce_scatter" and suite in ("osu", "imb"):
        out.append("msize = each rank's result block (the whole vector, msize / p each)")
    if _strip(o) == "reduce_scatter_block" and suite == "osu":
        out.append("msize = each rank's result block (the whole vector, msize / p each)")
    if o.endswith("_overlap"):
        out.append("compute calibrated to the largest pure time over the ranks "
                   + ("(timer-driven to each rank's own pure time)" if suite == "osu"
                      else "(calibrated to each rank's own pure time)"))
    if suite == "osu" and o.startswith("neighbor_"):
        topo = ("periodic 2-D Cartesian grid, 4 neighbours" if (factors.get("neighbor_topo") or "cart") == "cart"
                else "graph to i+1 and i+p/2")
        out.append(f"topology {topo} (graph of a periodic 1-D grid, radius 1: 2 neighbours)")
    if suite == "osu" and o in ("bw", "bibw") and (factors.get("nprocs") or 2) > 2:
        out.append(f"ranks 0 and p/2 of {factors['nprocs']} (exactly 2 ranks)")
    return out


def definition_notes(op: str, factors: dict, suite: str | None = None, context: str = "summary") -> list[str]:
    """The differences in definition between mpitempo's number for ``op`` and the number OSU 7.4
    and IMB 2021.11 print for their counterpart, for the settings in ``factors`` (factors_of).
    Each item is "<suite benchmark>: <what here> (<what the suite does>)". ``suite``: "osu", "imb"
    or None for both (only the profile's suite when factors["like"] names one). An op without a
    counterpart gives no items. ``context`` "export" leaves out what the export itself converts
    (multi_lat's round trip, halved there)."""
    suites = [suite] if suite else ([factors["like"]] if factors.get("like") in ("osu", "imb") else ["osu", "imb"])
    out = []
    for s in suites:
        name = osu_name(op) if s == "osu" else imb_name(op, factors.get("nprocs"))
        if name is None:
            continue
        notes = [n for n in [_scheme_note(op, factors, s)] if n]
        notes += _type_notes(op, factors, s) + _window_notes(op, factors, s) + _rma_notes(op, factors, s)
        notes += _op_notes(op, factors, s, context)
        label = name if s == "osu" else f"IMB {name}"
        out += [f"{label}: {n}" for n in notes]
    return out


def definition_warnings(op: str, factors: dict, suite: str) -> list[str]:
    """The differences that change what a number at the same Size means, for a WARNING line of the
    export: fence / pscw latency (one epoch here, half of two epochs in OSU), reduce_scatter's
    msize (a rank's block here, the whole vector in OSU and IMB)."""
    o = base_op(op)
    name = osu_name(op) if suite == "osu" else imb_name(op, factors.get("nprocs"))
    if name is None:
        return []
    out = []
    sync = factors.get("rma_sync") or "flush"
    two = int(factors.get("rma_epochs") or 1) == 2
    if suite == "osu" and o in _RMA and not o.endswith("bw") and sync in ("fence", "pscw") and not two:
        n = "2 fences and 1 access" if sync == "fence" else "start, 1 access, complete (post, wait on the target)"
        theirs = "(3 fences + 2 accesses) / 2" if sync == "fence" else "(2 epochs, one each way) / 2"
        out.append(f"Latency is one {sync} epoch ({n}), not {name}'s {theirs}: not comparable with "
                   f"{name} -s {sync}")
    if (_strip(o) == "reduce_scatter" or (_strip(o) == "reduce_scatter_block" and suite == "osu")):
        out.append(f"Size = the block each rank receives (input p x Size); {name}'s Size is the whole vector "
                   "(each rank receives Size / p)")
    return out


def definition_line(op: str, factors: dict) -> str | None:
    """One line for summary and report: "op vs <OSU bench> and IMB <bench>: a, b; vs <OSU bench>: c"
    (the differences both suites share first)."""
    notes = definition_notes(op, factors)
    if not notes:
        return None
    by: dict[str, list[str]] = {}
    for n in notes:
        name, _, what = n.partition(": ")
        by.setdefault(name, []).append(what)
    names = list(by)
    common = [w for w in by[names[0]] if all(w in by[n] for n in names[1:])] if len(names) > 1 else []
    parts = [f"vs {' and '.join(names)}: " + ", ".join(common)] if common else []
    parts += [f"vs {n}: " + ", ".join(w for w in by[n] if w not in common) for n in names
              if any(w not in common for w in by[n])]
    return f"{op} " + "; ".join(parts)


STATISTIC_LINE = ("compared with OSU 7.4 and IMB 2021.11 (theirs in parentheses): they print the mean over the "
                  "iterations of one run (OSU: over ranks or rank 0's, IMB: the slowest rank's), here the median "
                  "over mpiruns of measurements that are the largest over the ranks; export --osu/--imb writes "
                  "their statistic from per-rank data (run --per-rank); docs/methods.md, 'Compared with OSU and IMB'")


def summary_notes(data, rows: list[dict]) -> list[str]:
    """Lines under the summary table: the statistic once, then one line per (op, settings) that
    differs in definition from OSU's or IMB's (every configuration with the same line once)."""
    from mpitempo.analysis.flags import campaign_metas

    metas = campaign_metas(data)
    facs: dict[tuple, dict] = {}
    for camp, runs in metas.items():
        for meta in runs.values():
            facs.setdefault((camp, meta.get("config", "default")), factors_of(meta, campaign_toml(data, camp)))
    lines, seen = [], set()
    for r in rows:
        f = facs.get((r.get("campaign", ""), r["config"]))
        if f is None:
            continue
        f = dict(f, nprocs=r.get("nprocs") or f.get("nprocs"))
        line = definition_line(r["op"], f)
        if line and line not in seen:
            seen.add(line)
            lines.append(line)
    return ([STATISTIC_LINE] + lines) if lines else []


def campaign_toml(data, camp: str) -> dict:
    """The campaign file of a campaign label (for ``like``), read as every campaign file is (not
    through a link, not a FIFO, bounded: io.safeload); {} when absent or unreadable."""
    import tomllib

    for label, root in zip(getattr(data, "labels", []) or [], getattr(data, "roots", []) or []):
        if label == camp:
            spec = root / "campaign.toml"
            try:
                if not root.is_dir() or check_not_link(spec, root, want="any", verb="read") is None:
                    return {}
                return tomllib.loads(load_toml_text(spec))
            except (MtError, OSError, ValueError, TypeError, AttributeError):
                return {}
    return {}
