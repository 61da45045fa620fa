"""Clock-condition violations and start skew of a global-clock trace (Hunold and Carpen-Amarie
2018, section V.C; the clock condition of Lamport 1978 as Scalasca checks it post mortem,
Becker et al. 2009).

Pure functions on the columns of a trace's events.csv (a dict of numpy arrays, one entry
per column; `mpitempo.analysis.trace.load` reads them). Times are taken from one of two
clocks: ``raw`` (each rank's local timer) or ``global`` (the synchronised clock).

A violation is an event order that is impossible in real time:
- a message received (the receive call returned) before it was sent (the send call began);
- a collective whose semantics need data from other ranks left before those ranks entered it:
  all-to-all kinds (barrier, allreduce, allgather, alltoall, reduce_scatter): a rank leaves
  before another rank entered; one-to-all (bcast, scatter): a rank leaves before the root
  entered; all-to-one (reduce, gather): the root leaves before another rank entered.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

COLL_KINDS = ("coll_all2all", "coll_one2all", "coll_all2one", "coll", "icoll")
SEND_KINDS = ("send", "isend", "sendrecv", "start_send")
RECV_KINDS = ("recv", "irecv_done", "sendrecv")
CLOCKS = {"raw": ("t_enter_raw_s", "t_exit_raw_s"), "global": ("t_enter_s", "t_exit_s")}


def _times(ev: dict, clock: str) -> tuple[np.ndarray, np.ndarray]:
    if clock not in CLOCKS:
        raise ValueError(f"unknown clock '{clock}' (allowed: {', '.join(CLOCKS)})")
    a, b = CLOCKS[clock]
    return np.asarray(ev[a], dtype=float), np.asarray(ev[b], dtype=float)


def match_messages(ev: dict, from_end: bool = False) -> list[tuple[int, int]]:
    """(send row, receive row) pairs: per (source, destination, tag, communicator), the k-th send
    (in the order the sender posted them) matches the k-th receive (in the order the receiver
    posted them), MPI's non-overtaking rule. Unmatched sends or receives (a partner outside the
    kept events) are left out. from_end: pair the last send with the last receive (a trace whose
    buffers wrapped keeps the end of the run, cut at a different point on each rank)."""
    rank, kind, peer, peer2 = ev["rank"], ev["kind"], ev["peer"], ev["peer2"]
    tag, rtag, comm, seq = ev["tag"], ev["recv_tag"], ev["comm"], ev["seq"]
    t_post = np.asarray(ev["t_enter_raw_s"], dtype=float)
    sends: dict = defaultdict(list)
    recvs: dict = defaultdict(list)
    for i in range(len(rank)):
        k = kind[i]
        if k in SEND_KINDS and peer[i] >= 0:
            sends[(int(rank[i]), int(peer[i]), int(tag[i]), comm[i])].append(i)
        if k in RECV_KINDS:
            src = int(peer2[i]) if k == "sendrecv" else int(peer[i])
            if src >= 0:
                recvs[(src, int(rank[i]), int(rtag[i]), comm[i])].append(i)
    pairs = []
    for key, s in sends.items():
        r = recvs.get(key)
        if not r:
            continue
        s = sorted(s, key=lambda i: (seq[i], t_post[i]))
        r = sorted(r, key=lambda i: (t_post[i], seq[i]))
        if from_end:
            pairs.extend(zip(reversed(s), reversed(r)))
        else:
            pairs.extend(zip(s, r))
    return pairs


def collective_instances(ev: dict, from_end: bool = False) -> dict[tuple, list[int]]:
    """Rows of each collective instance: every rank's k-th collective on a communicator is the
    same instance (MPI orders collectives per communicator). from_end: count k from the last
    call instead (a trace whose buffers wrapped keeps the end of the run)."""
    per: dict = defaultdict(list)
    rank, kind, comm, seq = ev["rank"], ev["kind"], ev["comm"], ev["seq"]
    order = np.lexsort((np.asarray(seq), np.asarray(rank)))
    for i in order:
        if kind[i] in COLL_KINDS:
            per[(int(rank[i]), comm[i])].append(int(i))
    inst: dict = defaultdict(list)
    for (r, c), rows in per.items():
        n = len(rows)
        for k, i in enumerate(rows):
            inst[(c, k - n if from_end else k)].append(i)
    return dict(inst)


def complete_instances(ev: dict, inst: dict[tuple, list[int]]) -> dict[tuple, list[int]]:
    """Instances seen on every member of their communicator (members: the ranks that have any
    collective on it) and with the same call on every rank."""
    members: dict = defaultdict(set)
    for (c, _k), rows in inst.items():
        for i in rows:
            members[c].add(int(ev["rank"][i]))
    out = {}
    for key, rows in inst.items():
        calls = {ev["call"][i] for i in rows}
        if len(rows) == len(members[key[0]]) and len(calls) == 1:
            out[key] = rows
    return out


def count_violations(ev: dict, clock: str, from_end: bool = False) -> dict:
    """Clock-condition violations on one clock: messages received before they were sent, and
    collective exits before an entry they depend on (module docstring)."""
    t0, t1 = _times(ev, clock)
    pairs = match_messages(ev, from_end)
    p2p = sum(1 for s, r in pairs if t1[r] < t0[s])
    coll = 0
    inst = complete_instances(ev, collective_instances(ev, from_end))
    for rows in inst.values():
        if len(rows) < 2:
            continue
        kind = ev["kind"][rows[0]]
        enters = t0[rows]
        exits = t1[rows]
        ranks = np.asarray([ev["rank"][i] for i in rows])
        if kind == "coll_all2all":
            # a rank's own entry precedes its exit: compare with the latest entry of the others
            order = np.argsort(enters)
            top, second = enters[order[-1]], enters[order[-2]]
            others_max = np.full(len(rows), top)
            others_max[order[-1]] = second
            coll += int(np.sum(exits < others_max))
        elif kind in ("coll_one2all", "coll_all2one"):
            root = int(ev["root"][rows[0]])
            where = np.nonzero(ranks == root)[0]
            if where.size != 1:
                continue
            ri = where[0]
            if kind == "coll_one2all":
                coll += int(np.sum(np.delete(exits, ri) < enters[ri]))
            else:
                others = np.delete(enters, ri)
                coll += int(others.size > 0 and exits[ri] < others.max())
    return {"total": p2p + coll, "p2p": p2p, "collective": coll, "messages": len(pairs),
            "collective_instances": len(inst)}


def call_instances(ev: dict, call: str, from_end: bool = False) -> list[list[int]]:
    """The complete instances of one collective call, in order."""
    inst = complete_instances(ev, collective_instances(ev, from_end))
    keys = sorted((k for k, rows in inst.items() if ev["call"][rows[0]] == call), key=lambda k: (k[1], k[0]))
    return [sorted(inst[k], key=lambda i: ev["rank"][i]) for k in keys]


def start_skew(ev: dict, rows_per_instance: list[list[int]], clock: str) -> np.ndarray:
    """Per instance: latest entry - earliest entry over the ranks (s)."""
    t0, _ = _times(ev, clock)
    return np.asarray([t0[r].max() - t0[r].min() for r in rows_per_instance], dtype=float)


def parse_range(text: str | None, n: int, default_len: int = 10) -> tuple[int, int]:
    """'A:B' (instances A..B-1, negative counts from the end), 'A' (one instance) or None (up to
    default_len instances from the middle) -> (first, stop) clipped to n. ValueError on bad text."""
    if n <= 0:
        return 0, 0
    if text is None:
        first = max(0, n // 2 - default_len // 2)
        return first, min(n, first + default_len)
    parts = text.split(":")
    try:
        if len(parts) == 1:
            a = int(parts[0])
            b = a + 1 if a != -1 else n
        elif len(parts) == 2:
            a = int(parts[0]) if parts[0] else 0
            b = int(parts[1]) if parts[1] else n
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"invalid range '{text}': expected A:B, A or :B (instance indices)") from None
    a = a + n if a < 0 else a
    b = b + n if b < 0 else b
    a, b = max(0, min(a, n)), max(0, min(b, n))
    if a >= b:
        raise ValueError(f"invalid range '{text}': no instance selected (the call has {n} complete instances)")
    return a, b
