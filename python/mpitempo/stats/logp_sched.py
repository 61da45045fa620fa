"""The extended barrier model: each algorithm's own message schedule played on LogP (pure functions).

The closed formulas of stats/logp.py count whole rounds of one L. This model instead runs the
exact sequence of sends and receives each rank of our C implementation issues
(src/core/op/barrier/) through a discrete-event LogP machine, in the way of LogGOPSim
(Hoefler, Schneider and Lumsdaine 2010), so that three things the formulas cannot express come
out by themselves:

* **topology**: the latency of a message is that of its pair, ``L(i, j)`` (a function given by
  the caller: from the platform's routes, stats/platform_routes.py), not one L for every pair;
* **contention at a root**: a rank receives one message at a time (``o_r`` each, spaced by the
  network gap), and sends one at a time (``o_s`` each), so the root of a central counter or a
  wide tree node pays for every message in the order they arrive;
* **P that is not a power of the arity**: a tree with a missing child or a fold with nothing to
  fold costs what it does, not a full level.

The machine (all times in seconds, every rank enters at 0):

* ``send(j)`` at local time t: starts at ``max(t, last send + g_net)``, the rank is busy
  ``o_s``; the message arrives at j at ``start + o_s + L(i, j)`` (eager: the sender never waits
  for the receiver; the barrier's messages are 4 bytes);
* ``recv(j)``: done at ``max(t, arrival, last receive + g_net) + o_r``;
* ``recv_all(js)`` (MPI_Irecv + MPI_Waitall): the messages are received in the order they arrive,
  ``o_r`` each;
* ``sendrecv(j, k)``: a send to j then a receive from k; the exchanges of butterfly's rounds
  (MPI_Isend/MPI_Irecv then MPI_Waitall) are sends, then the receives in arrival order;
* ``g_net``: the network's own gap. The measured g is the slope of a message train, which is
  ``max(g_net, o_s, o_r)``; when it is within 5% of ``max(o_s, o_r)`` the overheads explain it
  and ``g_net`` = 0, otherwise ``g_net`` = g;
* ``start_cost``: the extra latency of a message sent before its sender has received anything in
  this call (a cold start: the receiver starts the call at the same instant instead of polling
  already). 0 on a simulator; measured on real ranks by bench/barrier_gap.py (the synchronised
  start, +0.36 to +0.66 us per exchange on the development machine, docs/barrier.md).

The runtime is the time the last rank leaves (every rank entered at 0), the quantity Round-Time
measures.
"""
from __future__ import annotations

from typing import Callable, Iterator

from mpitempo.stats.logp import LogP, split

LatencyFn = Callable[[int, int], float]


def net_gap(m: LogP) -> float:
    """The network's gap beyond the overheads (0 when the overheads explain the measured g)."""
    return m.g if m.g > 1.05 * max(m.o_s, m.o_r) else 0.0


# --- the programs: one generator per rank, yielding the operations of our C implementation ---
# ("send", j) | ("recv", j) | ("recvall", [j...]) | ("xchg", [send to...], [recv from...])

def _bcast_binomial(r: int, p: int) -> Iterator:
    mask = 1
    while mask < p:
        if r & mask:
            yield ("recv", r - mask)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if r + mask < p:
            yield ("send", r + mask)
        mask >>= 1


def _combine_up(r: int, p: int, n: int, out: dict) -> Iterator:
    stride, levels, parent = 1, 0, -1
    while stride < p:
        group = stride * n
        if r % group:
            parent = r - r % group
            yield ("send", parent)
            break
        kids = [r + j * stride for j in range(1, n) if r + j * stride < p]
        if kids:
            yield ("recvall", kids)
        levels += 1
        stride = group
    out["levels"], out["parent"] = levels, parent


def _central(r, p, n):
    if r:
        yield ("send", 0)
        yield ("recv", 0)
        return
    yield ("recvall", list(range(1, p)))
    for i in range(1, p):
        yield ("send", i)


def _combining(r, p, n):
    yield from _combine_up(r, p, n, {})
    yield from _bcast_binomial(r, p)


def _fway(r, p, n):
    st: dict = {}
    yield from _combine_up(r, p, n, st)
    levels, parent = st["levels"], st["parent"]
    if parent >= 0:
        yield ("recv", parent)
    stride = n ** (levels - 1) if levels > 0 else 1
    for _ in range(levels - 1, -1, -1):
        for j in range(1, n):
            if r + j * stride < p:
                yield ("send", r + j * stride)
        stride //= n


def _tournament(r, p, n):
    m = 1
    while m < p:
        if r & m:
            yield ("send", r - m)
            break
        if r + m < p:
            yield ("recv", r + m)
        m <<= 1
    yield from _bcast_binomial(r, p)


def _heap(r, p, up, down):
    kids = [c for c in range(up * r + 1, up * r + up + 1) if c < p]
    if kids:
        yield ("recvall", kids)
    if r:
        yield ("send", (r - 1) // up)
        yield ("recv", (r - 1) // down)
    for c in (down * r + 1, down * r + 2):
        if c < p:
            yield ("send", c)


def _mcs(r, p, n):
    yield from _heap(r, p, 4, 2)


def _bst(r, p, n):
    yield from _heap(r, p, 2, 2)


def _dissemination(r, p, n):
    m = 1
    while m < p:
        yield ("xchg", [(r + m) % p], [(r - m) % p])
        m <<= 1


def _pairwise(r, p, n):
    q = 1
    while q * 2 <= p:
        q *= 2
    if r >= q:
        yield ("send", r - q)
        yield ("recv", r - q)
        return
    if r + q < p:
        yield ("recv", r + q)
    m = 1
    while m < q:
        yield ("xchg", [r ^ m], [r ^ m])
        m <<= 1
    if r + q < p:
        yield ("send", r + q)


def _butterfly(r, p, n):
    q = 1
    while q < p:
        q *= 2
    h = q // 2
    ids = [r] + ([r + h] if r < h and r + h >= p else [])
    m = 1
    while m < q:
        peers = []
        for i, me in enumerate(ids):
            partner = me ^ m
            if len(ids) == 2 and partner == ids[1 - i]:
                continue
            peers.append(partner if partner < p else partner - h)
        yield ("xchg", peers, peers)
        m <<= 1


PROGRAMS = {"central": _central, "combining": _combining, "fway": _fway, "tournament": _tournament,
            "mcs": _mcs, "bst": _bst, "dissemination": _dissemination, "pairwise": _pairwise,
            "butterfly": _butterfly}


def simulate(name: str, p: int, m: LogP, latency: LatencyFn | None = None, start_cost: float = 0.0,
             detail: bool = False):
    """Runtime (s) of barrier `name` (an op name, e.g. 'barrier:fway:4') on p ranks under the LogP
    machine above; None for the library's MPI_Barrier. `latency(i, j)` gives L for the pair (default:
    m.L for every pair). With detail=True: (runtime, per-rank exit times, messages)."""
    alg, n = split(name)
    if alg not in PROGRAMS:
        return None
    if p < 1:
        raise ValueError(f"invalid number of processes {p}: must be >= 1")
    if p == 1:
        return (0.0, [0.0], 0) if detail else 0.0
    lat = latency or (lambda i, j: m.L)
    gap = net_gap(m)
    progs = [PROGRAMS[alg](r, p, n) for r in range(p)]
    t = [0.0] * p
    last_send = [-1.0] * p
    last_recv = [-1.0] * p
    warm = [False] * p            # has received something in this call
    mail: dict[tuple[int, int], list[float]] = {}   # (src, dst) -> arrival times, FIFO
    pending: list = [None] * p   # the operation a rank is blocked in
    done = [False] * p
    nmsg = 0

    def send(i: int, j: int) -> None:
        nonlocal nmsg
        start = max(t[i], last_send[i] + gap) if last_send[i] >= 0 else t[i]
        last_send[i] = start
        t[i] = start + m.o_s
        arr = t[i] + lat(i, j) + (0.0 if warm[i] else start_cost)
        mail.setdefault((i, j), []).append(arr)
        nmsg += 1
        if pending[j] is not None:
            ready.append(j)

    def recv_at(i: int, arr: float) -> None:
        start = max(t[i], arr, last_recv[i] + gap) if last_recv[i] >= 0 else max(t[i], arr)
        last_recv[i] = start
        t[i] = start + m.o_r
        warm[i] = True

    def have(i: int, srcs) -> bool:
        need: dict[int, int] = {}
        for s in srcs:
            need[s] = need.get(s, 0) + 1
        return all(len(mail.get((s, i), ())) >= k for s, k in need.items())

    def step(i: int) -> bool:
        """Run rank i until it blocks or ends; True when it made progress."""
        moved = False
        while True:
            op = pending[i]
            if op is None:
                op = next(progs[i], None)
                if op is None:
                    done[i] = True
                    return True
                if op[0] == "send":
                    send(i, op[1])
                    moved = True
                    continue
                if op[0] == "xchg":
                    for j in op[1]:
                        send(i, j)
                    op = ("recvall", op[2])
                    moved = True
            srcs = [op[1]] if op[0] == "recv" else op[1]
            if not have(i, srcs):
                pending[i] = op
                return moved
            pending[i] = None
            arrs = sorted(mail[(s, i)].pop(0) for s in srcs)
            for a in arrs:
                recv_at(i, a)
            moved = True

    ready = list(range(p))
    while ready:
        i = ready.pop()
        if done[i]:
            continue
        step(i)
    if not all(done):
        stuck = [i for i in range(p) if not done[i]][:5]
        raise AssertionError(f"{name} on {p} ranks deadlocked in the model (ranks {stuck} blocked)")
    rt = max(t)
    return (rt, list(t), nmsg) if detail else rt


__all__ = ["simulate", "net_gap", "PROGRAMS"]
