"""Wait states of a global-clock trace: the time MPI calls spend waiting for another rank, the
patterns of Scalasca's trace analysis (Geimer et al. 2010; definitions as in Scalasca's pattern
reference). Because the timestamps are on the synchronised global clock (no clock-condition
violation), the waits are computed directly from the enter and exit times of matched calls.

Patterns (all times in seconds of the global clock, each wait bounded by the duration of the
call that waits):
- late_sender: a blocking receive (MPI_Recv, MPI_Mrecv, MPI_Sendrecv, or the wait/test that
  completed an MPI_Irecv) entered before the matching send began: send enter - receive enter.
  Attributed to the receiving rank and call.
- late_receiver: a blocking send that did not return before the receive was posted (MPI_Ssend, a
  rendezvous MPI_Send): receive enter - send enter. Attributed to the sending rank and call.
- wait_nxn: an all-to-all collective (MPI_Allreduce, MPI_Allgather(v), MPI_Alltoall(v,w),
  MPI_Reduce_scatter(_block)): the latest enter over the ranks - this rank's enter.
- wait_barrier: the same for MPI_Barrier.
- late_broadcast: a one-to-all collective (MPI_Bcast, MPI_Scatter(v)) entered by a non-root
  rank before the root: root enter - enter.
- early_reduce: the root of an all-to-one collective (MPI_Reduce, MPI_Gather(v)) entered before
  the last other rank: latest other enter - root enter.

Each wait is also attributed to the call site of the call that waits (the column ``site_label``
of the events when present: function and file:line, ``mpitempo.analysis.trace_sites``).

Pure functions on the columns of events.csv (``mpitempo.analysis.trace.load``)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from mpitempo.stats import trace as st

PATTERNS = ("late_sender", "late_receiver", "wait_nxn", "wait_barrier", "late_broadcast", "early_reduce")
BLOCKING_RECV = ("recv", "sendrecv")           # kinds whose row is itself the blocking receive
BLOCKING_SEND_CALLS = ("send", "ssend", "rsend", "bsend")
PSEUDO_KINDS = ("irecv_done", "isend_done", "icoll_done", "start_send", "start_recv")


def _completing_call(ev: dict, i: int) -> int | None:
    """The row of the wait or test that completed request row i (recorded just before it and
    marked attached, flag 4), or None when that call was not recorded."""
    flags = ev.get("flags")
    if flags is None or not (int(flags[i]) & 4):
        return None
    j = i - 1
    rank = ev["rank"]
    while j >= 0 and rank[j] == rank[i] and ev["kind"][j] in PSEUDO_KINDS:
        j -= 1
    if j < 0 or rank[j] != rank[i] or ev["kind"][j] != "wait":
        return None
    return j


def analyse(ev: dict, from_end: bool = False) -> dict:
    """Every wait state of the trace: per pattern the total, per rank and per call, and the
    instances counted. Needs events with global times (t_enter_s, t_exit_s). from_end: the trace
    wrapped (its buffers kept the end of the run): messages and collectives are paired from the end."""
    t0 = np.asarray(ev["t_enter_s"], dtype=float)
    t1 = np.asarray(ev["t_exit_s"], dtype=float)
    n_ranks = int(np.max(ev["rank"])) + 1 if len(ev["rank"]) else 0
    out = {p: {"total_s": 0.0, "count": 0, "per_rank_s": [0.0] * n_ranks, "per_call_s": defaultdict(float),
               "per_site": {}}
           for p in PATTERNS}
    labels = ev.get("site_label")

    def add(p: str, row: int, call: str, w: float) -> None:
        if w <= 0:
            return
        d = out[p]
        rank = int(ev["rank"][row])
        d["total_s"] += w
        d["count"] += 1
        d["per_rank_s"][rank] += w
        d["per_call_s"][call] += w
        site = (labels[row] if labels is not None else "") or "(unknown site)"
        s = d["per_site"].setdefault(site, {"call": call, "total_s": 0.0, "count": 0,
                                            "per_rank_s": [0.0] * n_ranks})
        s["total_s"] += w
        s["count"] += 1
        s["per_rank_s"][rank] += w

    # ---- point-to-point: matched (send, receive) pairs
    for s, r in st.match_messages(ev, from_end):
        ks, kr = ev["kind"][s], ev["kind"][r]
        send_enter = t0[s]
        # late sender: the receiving side blocked before the send began
        if kr in BLOCKING_RECV:
            w = min(send_enter, t1[r]) - t0[r]
            add("late_sender", r, str(ev["call"][r]), w)
        elif kr == "irecv_done":
            j = _completing_call(ev, r)
            if j is not None:
                w = min(send_enter, t1[j]) - t0[j]
                add("late_sender", j, str(ev["call"][j]), w)
        # late receiver: a blocking send still inside when the receive was posted
        if ks == "send" and str(ev["call"][s]) in BLOCKING_SEND_CALLS:
            recv_post = t0[r]   # irecv_done rows: their enter is the post of the MPI_Irecv
            if t1[s] > recv_post:
                add("late_receiver", s, str(ev["call"][s]), recv_post - t0[s])

    # ---- collectives: complete instances on their communicator
    inst = st.complete_instances(ev, st.collective_instances(ev, from_end))
    for rows in inst.values():
        for i, p, w in collective_waits(ev, rows, t0, t1):
            add(p, i, str(ev["call"][i]), w)
    for p in PATTERNS:
        out[p]["per_call_s"] = dict(sorted(out[p]["per_call_s"].items()))
        out[p]["per_site"] = dict(sorted(out[p]["per_site"].items(), key=lambda kv: -kv[1]["total_s"]))
    return out


def collective_waits(ev: dict, rows: list[int], t0: np.ndarray, t1: np.ndarray) -> list[tuple[int, str, float]]:
    """(row, pattern, wait in s) of every rank that waits in one collective instance (its rows),
    with the times t0, t1 of one clock; waits <= 0 are left out."""
    out: list[tuple[int, str, float]] = []
    if len(rows) < 2:
        return out
    kind = ev["kind"][rows[0]]
    call = str(ev["call"][rows[0]])
    if kind == "coll_all2all":
        last = t0[rows].max()
        p = "wait_barrier" if call == "barrier" else "wait_nxn"
        out = [(i, p, min(last, t1[i]) - t0[i]) for i in rows]
    elif kind in ("coll_one2all", "coll_all2one"):
        root = int(ev["root"][rows[0]])
        rr = [i for i in rows if int(ev["rank"][i]) == root]
        others = [i for i in rows if int(ev["rank"][i]) != root]
        if rr and others:
            r0 = rr[0]
            if kind == "coll_one2all":
                out = [(i, "late_broadcast", min(t0[r0], t1[i]) - t0[i]) for i in others]
            else:
                out = [(r0, "early_reduce", min(t0[others].max(), t1[r0]) - t0[r0])]
    return [(int(i), p, float(w)) for i, p, w in out if w > 0]


def site_rows(ws: dict) -> list[list]:
    """(pattern, call site, call, waits, total ms, mean ms) of every call site that waited, the
    largest total of each pattern first."""
    rows = []
    for p in PATTERNS:
        for site, d in ws[p].get("per_site", {}).items():
            rows.append([p, site, d["call"], d["count"], d["total_s"] * 1e3, d["total_s"] * 1e3 / d["count"]])
    return rows


def table_rows(ws: dict) -> list[list]:
    """(pattern, call, total ms, per-rank ms...) rows of the patterns that occurred."""
    rows = []
    for p in PATTERNS:
        d = ws[p]
        if not d["count"]:
            continue
        for call, v in d["per_call_s"].items():
            rows.append([p, call, v * 1e3])
        rows.append([p, "(all)", d["total_s"] * 1e3] + [x * 1e3 for x in d["per_rank_s"]])
    return rows
