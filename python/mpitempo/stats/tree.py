"""Allreduce spanning-tree analysis (Bongo, Anshus and Bjorndalen 2004, section 3): pure functions.

Input per run: ``parent`` (rank -> parent rank, -1 for the root) and per-call arrays of shape
(calls, ranks) on the global clock: ``enter``, ``up``, ``down``, ``exit`` (each rank's own
contribution) and, indexed by the child rank, ``arr`` (t1 of the child at its parent: the partial
result has arrived), ``dep`` (t4 of the child at its parent: the result leaves for it).

A tree node (a rank with children: the paper's gred wrapper) has contributors: the rank itself
(t1 = enter, t4 = exit) and each child (t1 = arr, t4 = dep). Per call:
  arrival wait of i     t1,last - t1,i
  down latency          t2 - t1,last          (t2 = up: the partial result leaves)
  up latency            t4,first - t3         (t3 = down: the result is back)
  departure wait of i   t4,i - t4,first
  link two-way latency  (t4 - t1) - (t3 - t2) = (down_c - up_c) - (dep_c - arr_c)  (clock-free)
"""
from __future__ import annotations

import numpy as np


def children(parent) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {i: [] for i in range(len(parent))}
    for c, p in enumerate(parent):
        if p >= 0:
            kids[p].append(c)
    return kids


def path_of(parent, r: int) -> list[int]:
    """Ranks from r up to the root."""
    out = [r]
    while parent[out[-1]] >= 0:
        out.append(parent[out[-1]])
    return out


def node_times(parent, ev: dict, node: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Contributor labels and their t1, t4 (calls x contributors) at one tree node."""
    kids = children(parent)[node]
    labels = [f"rank {node} (own)"] + [f"child {c}" for c in kids]
    t1 = np.column_stack([ev["enter"][:, node]] + [ev["arr"][:, c] for c in kids])
    t4 = np.column_stack([ev["exit"][:, node]] + [ev["dep"][:, c] for c in kids])
    return labels, t1, t4


def order_counts(t: np.ndarray) -> np.ndarray:
    """counts[i, k]: how often contributor i was the k-th (0 = first) by time t (calls x contributors)."""
    m = t.shape[1]
    pos = np.argsort(np.argsort(t, axis=1, kind="stable"), axis=1, kind="stable")
    return np.stack([np.bincount(pos[:, i], minlength=m) for i in range(m)])


def node_stats(parent, ev: dict, node: int) -> dict:
    labels, t1, t4 = node_times(parent, ev, node)
    t1l = t1.max(axis=1)
    t4f = t4.min(axis=1)
    down_lat = ev["up"][:, node] - t1l
    up_lat = t4f - ev["down"][:, node]
    aw = t1l[:, None] - t1
    dw = t4 - t4f[:, None]
    last = np.argmax(t1, axis=1)
    dorder = np.argsort(t4, axis=1, kind="stable")          # contributor departing k-th
    ser = [float(np.mean(up_lat + dw[np.arange(len(dw)), dorder[:, k]])) for k in range(t4.shape[1])]
    return {"node": node, "contributors": labels, "kids": children(parent)[node],
            "arrival_order": order_counts(t1).tolist(), "departure_order": order_counts(t4).tolist(),
            "arrival_wait_s": aw.mean(axis=0).tolist(), "arrival_wait_std_s": aw.std(axis=0).tolist(),
            "departure_wait_s": dw.mean(axis=0).tolist(), "departure_wait_std_s": dw.std(axis=0).tolist(),
            "down_latency_s": float(down_lat.mean()), "down_latency_std_s": float(down_lat.std()),
            "up_latency_s": float(up_lat.mean()), "up_latency_std_s": float(up_lat.std()),
            "last_arrivals": np.bincount(last, minlength=t1.shape[1]).tolist(),
            "serialization_s": ser}


def link_stats(ev: dict, child: int) -> dict:
    two = (ev["down"][:, child] - ev["up"][:, child]) - (ev["dep"][:, child] - ev["arr"][:, child])
    dn = ev["arr"][:, child] - ev["up"][:, child]
    upl = ev["down"][:, child] - ev["dep"][:, child]
    return {"child": child, "two_way_s": float(two.mean()), "two_way_std_s": float(two.std()),
            "down_s": float(dn.mean()), "up_s": float(upl.mean())}


def path_stages(parent, ev: dict, r: int) -> list[dict]:
    """The stages of rank r's path in time order, each with its per-call times (s):
    side "down" (towards the root) or "up" (back), kind arrival_wait, latency, link or departure_wait.
    The down stages add up to up[root] - enter[r], the up stages to exit[r] - down[root]."""
    path = path_of(parent, r)
    kids = children(parent)
    st: list[dict] = []

    def t1_of(node, contributor):
        return ev["enter"][:, node] if contributor == node else ev["arr"][:, contributor]

    def t4_of(node, contributor):
        return ev["exit"][:, node] if contributor == node else ev["dep"][:, contributor]

    prev = r                      # the contributor through which the path enters this node
    for j, node in enumerate(path):
        if kids[node]:
            t1 = np.column_stack([ev["enter"][:, node]] + [ev["arr"][:, c] for c in kids[node]])
            t1l = t1.max(axis=1)
            st.append({"side": "down", "kind": "arrival_wait", "node": node, "name": f"wait@{node}",
                       "t": t1l - t1_of(node, prev)})
            st.append({"side": "down", "kind": "latency", "node": node, "name": f"reduce@{node}",
                       "t": ev["up"][:, node] - t1l})
        if j + 1 < len(path):
            st.append({"side": "down", "kind": "link", "node": node, "name": f"{node}->{path[j + 1]}",
                       "t": ev["arr"][:, node] - ev["up"][:, node]})
        prev = node
    for j in range(len(path) - 1, -1, -1):
        node = path[j]
        contributor = path[j - 1] if j > 0 else r
        if kids[node]:
            t4 = np.column_stack([ev["exit"][:, node]] + [ev["dep"][:, c] for c in kids[node]])
            t4f = t4.min(axis=1)
            st.append({"side": "up", "kind": "latency", "node": node, "name": f"bcast@{node}",
                       "t": t4f - ev["down"][:, node]})
            st.append({"side": "up", "kind": "departure_wait", "node": node, "name": f"depwait@{node}",
                       "t": t4_of(node, contributor) - t4f})
        if j > 0:
            st.append({"side": "up", "kind": "link", "node": node, "name": f"{node}->{contributor}",
                       "t": ev["down"][:, contributor] - ev["dep"][:, contributor]})
    return st


def path_row(parent, ev: dict, r: int, hosts=None) -> dict:
    st = path_stages(parent, ev, r)
    path = path_of(parent, r)

    def tot(side, kinds):
        v = [s["t"] for s in st if s["side"] == side and s["kind"] in kinds]
        return np.sum(v, axis=0) if v else np.zeros(ev["enter"].shape[0])

    aw, dw = tot("down", ("arrival_wait",)), tot("up", ("departure_wait",))
    dl, ul = tot("down", ("latency", "link")), tot("up", ("latency", "link"))
    inter = sum(1 for a, b in zip(path, path[1:]) if hosts is not None and hosts[a] != hosts[b])
    return {"path": ">".join(str(x) for x in path), "rank": r, "ranks": path,
            "arrival_wait_s": float(aw.mean()), "departure_wait_s": float(dw.mean()),
            "down_latency_s": float(dl.mean()), "up_latency_s": float(ul.mean()),
            "no_wait_s": float((dl + ul + dw).mean()), "total_s": float((aw + dl + ul + dw).mean()),
            "total_std_s": float((aw + dl + ul + dw).std()), "hops": len(path) - 1, "inter_host_hops": inter}


def timemap(stages: list[dict], with_arrival_wait: bool = False) -> dict:
    """The timemap of one path (the paper's Fig. 2): mean time per stage; down stages at x < 0 from
    the rank (y = 0, x = 0) to the root (y = ymax), up stages at x > 0 from the rank to the root as
    well (read backwards in time), so the width at y = 0 is the path's time per call."""
    down = [s for s in stages if s["side"] == "down" and (with_arrival_wait or s["kind"] != "arrival_wait")]
    up = [s for s in stages if s["side"] == "up"][::-1]
    xd = -np.cumsum([0.0] + [float(np.mean(s["t"])) for s in down])
    xu = np.cumsum([0.0] + [float(np.mean(s["t"])) for s in up])
    return {"down_x_s": xd.tolist(), "down_names": [s["name"] for s in down],
            "up_x_s": xu.tolist(), "up_names": [s["name"] for s in up]}


def imbalance(parent, ev: dict, hosts=None) -> dict:
    """Load-imbalance culprit: a graph of tree nodes and ranks (threads) weighted by how often each
    contributor arrived last; the path of most last arrivals, grown from the root along the heaviest
    edge, ends at the culprit rank. evidence_s: mean over calls of how long the root waited for that
    branch after all other contributors had arrived (0 in calls where another branch was last).
    imbalanced: the branch was the root's last arrival in at least half the calls and the culprit's
    work between calls exceeds the other ranks' median by at least half of evidence_s (else the
    lateness comes from the tree itself, e.g. a leaf that always enters after its root)."""
    kids = children(parent)
    root = parent.index(-1)
    node, path, weights = root, [], []
    ncalls = ev["enter"].shape[0]
    evidence = None
    while True:
        if not kids[node]:
            path.append(node)
            break
        _, t1, _ = node_times(parent, ev, node)
        last = np.bincount(np.argmax(t1, axis=1), minlength=t1.shape[1])
        best = int(np.argmax(last))
        if evidence is None:          # the root's wait for this branch beyond the others
            other = np.delete(t1, best, axis=1)
            margin = t1[:, best] - (other.max(axis=1) if other.shape[1] else t1[:, best])
            evidence = float(np.mean(np.clip(margin, 0, None)))
        weights.append(int(last[best]))
        path.append(node)
        if best == 0:                 # the node's own contribution was last: the rank is the culprit
            break
        node = kids[node][best - 1]
    culprit = path[-1]
    share = weights[0] / ncalls if weights and ncalls else 0.0
    # is the branch late because the rank works longer between calls (application imbalance), or
    # because of its place in the tree (a leaf returns after the root and so enters later)?
    work = outside_work(ev)
    others = np.delete(work, culprit) if work.size > 1 else np.zeros(1)
    excess = float(work[culprit] - np.median(others)) if work.size else 0.0
    evidence = evidence or 0.0
    return {"culprit_rank": culprit, "culprit_host": hosts[culprit] if hosts is not None else None,
            "evidence_s": evidence, "path": path, "last_arrivals": weights, "share": share,
            "excess_work_s": excess,
            "imbalanced": bool(share >= 0.5 and len(weights) > 0 and evidence > 0 and excess >= 0.5 * evidence)}


def outside_work(ev: dict) -> np.ndarray:
    """Per rank: mean time between leaving one call and entering the next (the application's
    work between allreduce calls, and an injected delay)."""
    if ev["enter"].shape[0] < 2:
        return np.zeros(ev["enter"].shape[1])
    return np.nanmean(ev["enter"][1:] - ev["exit"][:-1], axis=0)


def group_paths(rows: list[dict], tol: float = 0.25) -> list[dict]:
    """Paths with similar behaviour: the same number of hops and of inter-host hops, and a mean time
    without arrival waits within tol of the group's fastest; the representative is the group's
    median path. Groups slowest first."""
    groups: list[list[dict]] = []
    keyed: dict[tuple, list[dict]] = {}
    for r in rows:
        keyed.setdefault((r["hops"], r["inter_host_hops"]), []).append(r)
    for members in keyed.values():
        members = sorted(members, key=lambda x: x["no_wait_s"])
        cur = [members[0]]
        for m in members[1:]:
            if cur[0]["no_wait_s"] > 0 and m["no_wait_s"] > (1 + tol) * cur[0]["no_wait_s"]:
                groups.append(cur)
                cur = [m]
            else:
                cur.append(m)
        groups.append(cur)
    out = []
    for g in groups:
        rep = g[len(g) // 2]
        out.append({"paths": [x["path"] for x in g], "ranks": [x["rank"] for x in g], "representative": rep["path"],
                    "representative_rank": rep["rank"], "hops": rep["hops"], "inter_host_hops": rep["inter_host_hops"],
                    "mean_no_wait_s": float(np.mean([x["no_wait_s"] for x in g]))})
    return sorted(out, key=lambda g: -g["mean_no_wait_s"])


def subtree_costs(parent, ev: dict, hosts=None) -> list[dict]:
    """Per tree node g and its subtree S: down latency up[g] - max enter over S (the last rank's
    contribution until the subtree's result leaves), up latency min exit over S - down[g], and the
    mean departure wait exit[r] - min exit over S."""
    kids = children(parent)
    out = []
    for g in range(len(parent)):
        if not kids[g]:
            continue
        s, stack = [], [g]
        while stack:
            v = stack.pop()
            s.append(v)
            stack += kids[v]
        s.sort()
        ent, ex = ev["enter"][:, s], ev["exit"][:, s]
        first = ex.min(axis=1)
        one_host = hosts is not None and len({hosts[x] for x in s}) == 1
        out.append({"root": g, "ranks": s, "down_latency_s": float(np.mean(ev["up"][:, g] - ent.max(axis=1))),
                    "up_latency_s": float(np.mean(first - ev["down"][:, g])),
                    "departure_wait_s": float(np.mean(ex - first[:, None])),
                    "one_host": bool(one_host), "host": hosts[g] if one_host else None})
    return out


def call_times(ev: dict) -> np.ndarray:
    """Per call: max exit - min enter over ranks (global clock)."""
    return ev["exit"].max(axis=1) - ev["enter"].min(axis=1)


def compare_paths(a_rows: list[dict], b_rows: list[dict], key: str = "no_wait_s") -> list[dict]:
    """Per path (by rank): mean time of A and B (without arrival waits by default) and B vs A in %."""
    b = {r["rank"]: r for r in b_rows}
    out = []
    for r in a_rows:
        if r["rank"] in b:
            a_s, b_s = r[key], b[r["rank"]][key]
            out.append({"path": str(r["rank"]), "a_path": r["path"], "b_path": b[r["rank"]]["path"], "a_s": a_s,
                        "b_s": b_s, "delta_pct": 100.0 * (b_s - a_s) / a_s if a_s else None})
    return out


# -- injected faults: a slow host and a slow link (docs/tree.md, "Slow hosts and slow links") ------------

SLOW_FACTOR = 2.0        # a host's work or a link's two-way latency this many times its class's median ...
SLOW_FLOOR_S = 1e-6      # ... and at least this much above it, is called slow


def slow_hosts(ev: dict, hosts) -> list[dict]:
    """Hosts whose ranks work longer between calls than the hosts' median: per host, the median over
    its ranks of outside_work (mean time between leaving one call and entering the next); a host is
    slow when that is >= SLOW_FACTOR x the median over hosts and >= SLOW_FLOOR_S above it. With the
    same work on every rank (mpitempo-tree --work, or an application's), a slower processor shows here;
    a rank delayed alone (--imbalance) shows only when it is alone on its host. Slowest first."""
    if hosts is None or ev["enter"].shape[0] < 2:
        return []
    work = outside_work(ev)
    names = list(dict.fromkeys(hosts))
    if len(names) < 3:              # a median of two hosts cannot tell which one is off
        return []
    per = {h: float(np.median([work[r] for r in range(len(hosts)) if hosts[r] == h])) for h in names}
    med = float(np.median(list(per.values())))
    out = [{"host": h, "work_s": w, "hosts_median_s": med, "ratio": (w / med) if med > 0 else None,
            "ranks": [r for r in range(len(hosts)) if hosts[r] == h]}
           for h, w in per.items() if w >= SLOW_FACTOR * med and w - med >= SLOW_FLOOR_S]
    return sorted(out, key=lambda x: -x["work_s"])


def slow_links(parent, ev: dict, hosts) -> list[dict]:
    """Tree links whose two-way latency (t4 - t1) - (t3 - t2), independent of clock offsets, is
    >= SLOW_FACTOR x the median of the links of their class (between hosts, or within a host) and
    >= SLOW_FLOOR_S above it; classes of at least 3 links. Only calls where the child sent after its
    parent had entered the call count: a parent still working when the message came records its arrival
    only when it looks (t2 too late), which would put the parent's work into the link. A link between
    hosts is attributed to the host whose every measured link between hosts is slow (``suspect_host``:
    its own network link rather than the other end's; None when both or neither qualify). Slowest first."""
    if hosts is None:
        return []
    cls: dict[bool, list[dict]] = {}
    for c in range(len(parent)):
        p = parent[c]
        if p < 0:
            continue
        ok = ev["up"][:, c] >= ev["enter"][:, p]
        if not ok.any():
            continue
        two = ((ev["down"][:, c] - ev["up"][:, c]) - (ev["dep"][:, c] - ev["arr"][:, c]))[ok]
        cls.setdefault(hosts[c] != hosts[p], []).append({"child": c, "two_way_s": float(np.median(two)),
                                                         "calls": int(ok.sum())})
    slow, measured = [], []
    for inter, lst in cls.items():
        measured += [(ln["child"], parent[ln["child"]], inter) for ln in lst]
        if len(lst) < 3:
            continue
        med = float(np.median([ln["two_way_s"] for ln in lst]))
        for ln in lst:
            if ln["two_way_s"] >= SLOW_FACTOR * med and ln["two_way_s"] - med >= SLOW_FLOOR_S:
                c = ln["child"]
                slow.append({"child": c, "parent": parent[c], "child_host": hosts[c], "parent_host": hosts[parent[c]],
                             "between_hosts": inter, "two_way_s": ln["two_way_s"], "class_median_s": med,
                             "ratio": ln["two_way_s"] / med if med > 0 else None, "calls": ln["calls"]})
    slow_set = {(s["child"], s["parent"]) for s in slow}
    inter_links = [(c, p) for c, p, inter in measured if inter]
    for s in slow:
        if not s["between_hosts"]:
            s["suspect_host"] = s["child_host"]
            continue
        cands = []
        for h in (s["child_host"], s["parent_host"]):
            mine = [lk for lk in inter_links if hosts[lk[0]] == h or hosts[lk[1]] == h]
            if mine and all(lk in slow_set for lk in mine):
                cands.append(h)
        s["suspect_host"] = cands[0] if len(cands) == 1 else None
    return sorted(slow, key=lambda x: -x["two_way_s"])
