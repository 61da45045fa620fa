#!/usr/bin/env python3
"""An independent check of an OTF2 archive, read through `otf2-print` (Debian otf2-tools), not
through mpitempo's own reader: nothing of mpitempo is imported here.

  python bench/trace_otf2_check.py ARCHIVE/traces.otf2 [--json]

Checked, from the text `otf2-print` prints (its events, `-G` its global definitions, `-I` its
anchor file):
- every point-to-point message matched: the sends (MPI_SEND, MPI_ISEND) and the receives
  (MPI_RECV, MPI_IRECV) paired per (sender, receiver, communicator, tag) in the order of MPI's
  non-overtaking rule (sends in the order they were made, receives in the order they were
  posted: MPI_IRECV_REQUEST for the non-blocking ones), with the same length; none left over;
- every collective instance complete: on each communicator every member location has the same
  number of MPI_COLLECTIVE_END records, and the k-th of each member has the same operation and
  root; its volumes consistent: the bytes sent over the members equal the bytes received (the
  Score-P convention the tracer follows makes them equal for every operation), and for
  BARRIER / ALLREDUCE each member's sent equals its received;
- ENTER/LEAVE well nested per location (each LEAVE closes the region last entered);
- clock-condition violations (Scalasca's rules): a receive completed (MPI_RECV, MPI_IRECV) before
  its send began (MPI_SEND, MPI_ISEND); an N-to-N collective (barrier, allreduce, allgather(v),
  alltoall(v/w), reduce_scatter(_block)) ending on a member before the last member began it; a
  1-to-N (bcast, scatter(v)) ending on a non-root before the root began; an N-to-1 (reduce,
  gather(v)) ending at the root before the last member began;
- the archive's properties (anchor file), e.g. MPITEMPO::TRACE_COMPLETE of a partial archive.

Prints a summary (or JSON) and exits 1 if a message or collective is unmatched or incomplete,
or a region is badly nested; violations are counted, not judged (the caller decides).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict

N2N = {"BARRIER", "ALLREDUCE", "ALLGATHER", "ALLGATHERV", "ALLTOALL", "ALLTOALLV", "ALLTOALLW",
       "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK"}
ONE2N = {"BCAST", "SCATTER", "SCATTERV"}
N2ONE = {"REDUCE", "GATHER", "GATHERV"}

_PEER = re.compile(r'(Receiver|Sender): (\d+|UNDEFINED)(?: \("[^"]*" <(\d+)>\))?')
_COMM = re.compile(r'Communicator: (?:"[^"]*" )?<(\d+)>')
_TAG = re.compile(r"Tag: (-?\d+)")
_LEN = re.compile(r"Length: (\d+)")
_REQ = re.compile(r"Request: (\d+)")
_OP = re.compile(r"Operation: (\w+)")
_ROOT = re.compile(r'Root: (\w+)(?: \("[^"]*" <(\d+)>\))?')
_SENT = re.compile(r"Sent: (\d+)")
_RECV = re.compile(r"Received: (\d+)")
_REGION = re.compile(r'Region: "([^"]*)" <(\d+)>')


def _int(rx, s, what):
    m = rx.search(s)
    if not m:
        raise ValueError(f"no {what} in: {s[:200]}")
    return int(m.group(1))


def read_defs(anchor: str) -> dict:
    """Locations, and per communicator its member locations in communicator-rank order."""
    out = subprocess.run(["otf2-print", "-G", anchor], capture_output=True, text=True, check=True).stdout
    groups, comms, locations = {}, {}, []
    for line in out.splitlines():
        f = line.split(None, 2)
        if len(f) < 2:
            continue
        if f[0] == "LOCATION" and f[1].isdigit():
            locations.append(int(f[1]))
        elif f[0] == "GROUP" and f[1].isdigit():
            rest = f[2] if len(f) > 2 else ""
            if "Type: COMM_LOCATIONS" in rest:
                groups[int(f[1])] = ("locations", [int(x) for x in re.findall(r"<(\d+)>", rest.split("Members:", 1)[-1])])
            elif "Type: COMM_GROUP" in rest or "Type: COMM_SELF" in rest:
                groups[int(f[1])] = ("group", [int(x) for x in re.findall(r"<(\d+)>", rest.split("Members:", 1)[-1])])
        elif f[0] in ("COMM", "INTER_COMM") and f[1].isdigit():
            rest = f[2] if len(f) > 2 else ""
            refs = re.findall(r'Group(?:A|B)?: (?:"[^"]*" )?<(\d+)>', rest)
            comms[int(f[1])] = (f[0], [int(x) for x in refs])
    members = {}
    for cid, (kind, refs) in comms.items():
        locs = []
        for g in refs:
            locs += groups.get(g, ("", []))[1]
        members[cid] = locs
    return {"locations": sorted(locations), "members": members,
            "inter": sorted(c for c, (k, _) in comms.items() if k == "INTER_COMM")}


def read_properties(anchor: str) -> dict:
    """The archive's properties as `otf2-print -I` lists them ("Property name" / "Property value" lines)."""
    out = subprocess.run(["otf2-print", "-I", anchor], capture_output=True, text=True, check=True).stdout
    props, name = {}, None
    for line in out.splitlines():
        if line.startswith("Property name"):
            name = line[len("Property name"):].strip()
            props[name] = ""
        elif line.startswith("Property value") and name is not None:
            props[name] = line[len("Property value"):].strip()
            name = None
    return props


def check(anchor: str) -> dict:
    defs = read_defs(anchor)
    props = read_properties(anchor)
    sends = defaultdict(list)      # (sender, receiver, comm, tag) -> [(ts, length)] in order made
    recvs = defaultdict(list)      # the same key -> [(post order ts, completion ts, length)]
    posted = defaultdict(dict)     # receiver loc -> request id -> post ts
    colls = defaultdict(list)      # (comm, loc) -> [(op, root, sent, recv, begin ts, end ts)]
    begin = {}
    stack = defaultdict(list)
    problems, counts = [], defaultdict(int)
    events_per_loc = defaultdict(int)
    p = subprocess.Popen(["otf2-print", anchor], stdout=subprocess.PIPE, text=True, bufsize=1 << 20)
    in_events = False
    for line in p.stdout:
        if not in_events:
            in_events = line.startswith("----")
            continue
        f = line.split(None, 3)
        if len(f) < 3 or not f[1].isdigit():
            continue
        name, loc, ts = f[0], int(f[1]), int(f[2])
        rest = f[3] if len(f) > 3 else ""
        counts[name] += 1
        events_per_loc[loc] += 1
        if name == "ENTER":
            stack[loc].append(_REGION.search(rest).group(1))
        elif name == "LEAVE":
            r = _REGION.search(rest).group(1)
            if not stack[loc] or stack[loc][-1] != r:
                problems.append(f"location {loc}: LEAVE {r} at {ts} does not close "
                                f"{stack[loc][-1] if stack[loc] else 'any region'}")
            else:
                stack[loc].pop()
        elif name in ("MPI_SEND", "MPI_ISEND"):
            m = _PEER.search(rest)
            peer = int(m.group(3)) if m and m.group(3) else None
            sends[(loc, peer, _int(_COMM, rest, "communicator"), _int(_TAG, rest, "tag"))].append(
                (ts, _int(_LEN, rest, "length")))
        elif name == "MPI_IRECV_REQUEST":
            posted[loc][_int(_REQ, rest, "request")] = ts
        elif name in ("MPI_RECV", "MPI_IRECV"):
            m = _PEER.search(rest)
            peer = int(m.group(3)) if m and m.group(3) else None
            post = ts if name == "MPI_RECV" else posted[loc].pop(_int(_REQ, rest, "request"), None)
            if post is None:
                problems.append(f"location {loc}: MPI_IRECV at {ts} without its MPI_IRECV_REQUEST")
                post = ts
            recvs[(peer, loc, _int(_COMM, rest, "communicator"), _int(_TAG, rest, "tag"))].append(
                (post, ts, _int(_LEN, rest, "length")))
        elif name == "MPI_COLLECTIVE_BEGIN":
            if loc in begin:
                problems.append(f"location {loc}: MPI_COLLECTIVE_BEGIN at {ts} inside another collective")
            begin[loc] = ts
        elif name == "MPI_COLLECTIVE_END":
            b = begin.pop(loc, None)
            if b is None:
                problems.append(f"location {loc}: MPI_COLLECTIVE_END at {ts} without a BEGIN")
                b = ts
            m = _ROOT.search(rest)
            root = None if not m or m.group(1) in ("NONE", "UNDEFINED") else (
                int(m.group(2)) if m.group(2) else m.group(1))
            colls[(_int(_COMM, rest, "communicator"), loc)].append(
                (_OP.search(rest).group(1), root, _int(_SENT, rest, "sent"), _int(_RECV, rest, "received"), b, ts))
    p.wait()
    if p.returncode != 0:
        problems.append(f"otf2-print exited with {p.returncode}")
    for loc, st in stack.items():
        if st:
            problems.append(f"location {loc}: {len(st)} regions never left ({', '.join(st[-3:])})")
    for loc, reqs in posted.items():
        if reqs:
            counts["irecv_posted_not_completed"] += len(reqs)

    # --- point to point
    matched = unmatched_sends = unmatched_recvs = p2p_viol = length_mismatch = 0
    for key in set(sends) | set(recvs):
        s = sends.get(key, [])
        r = sorted(recvs.get(key, []))   # in posting order
        for (ts_s, len_s), (_, ts_r, len_r) in zip(s, r):
            matched += 1
            if len_s != len_r:
                length_mismatch += 1
                if length_mismatch <= 5:
                    problems.append(f"message {key} sent at {ts_s}: length {len_s} sent, {len_r} received")
            if ts_r < ts_s:
                p2p_viol += 1
        if len(s) != len(r):
            extra = len(s) - len(r)
            if extra > 0:
                unmatched_sends += extra
            else:
                unmatched_recvs -= extra
            problems.append(f"(sender, receiver, comm, tag) {key}: {len(s)} sends, {len(r)} receives")

    # --- collectives
    members = defaultdict(list)
    for (comm, loc) in colls:
        members[comm].append(loc)
    instances = coll_viol = 0
    for comm, locs in members.items():
        want = defs["members"].get(comm)
        if comm in defs["inter"]:
            counts["intercomm_collectives_not_checked"] += sum(len(colls[(comm, x)]) for x in locs)
            continue
        if want is not None and sorted(want) != sorted(locs):
            missing = sorted(set(want) - set(locs))
            problems.append(f"communicator {comm}: collectives on locations {sorted(locs)}, members {sorted(want)}"
                            + (f" (none on {missing})" if missing else ""))
        order = want if want else sorted(locs)
        n = {x: len(colls[(comm, x)]) for x in locs}
        if len(set(n.values())) != 1:
            problems.append(f"communicator {comm}: collective instances per location differ: {n}")
        for k in range(min(n.values())):
            inst = {x: colls[(comm, x)][k] for x in locs}
            ops = {v[0] for v in inst.values()}
            roots = {v[1] for v in inst.values()}
            instances += 1
            if len(ops) != 1 or len(roots) != 1:
                problems.append(f"communicator {comm} instance {k}: operations {sorted(ops)}, roots {roots}")
                continue
            op, root = ops.pop(), roots.pop()
            sent = sum(v[2] for v in inst.values())
            recv = sum(v[3] for v in inst.values())
            if sent != recv:
                problems.append(f"communicator {comm} instance {k} {op}: {sent} bytes sent, {recv} received")
            if op in ("BARRIER", "ALLREDUCE") and any(v[2] != v[3] for v in inst.values()):
                problems.append(f"communicator {comm} instance {k} {op}: a member's sent != received")
            begins = {x: v[4] for x, v in inst.items()}
            ends = {x: v[5] for x, v in inst.items()}
            last_begin = max(begins.values())
            if op in N2N:
                coll_viol += sum(1 for e in ends.values() if e < last_begin)
            elif op in ONE2N and isinstance(root, int) and root in begins:
                coll_viol += sum(1 for x, e in ends.items() if x != root and e < begins[root])
            elif op in N2ONE and isinstance(root, int) and root in ends:
                coll_viol += int(ends[root] < last_begin)
            elif op in ("SCAN", "EXSCAN"):
                pos = {x: i for i, x in enumerate(order)}
                for x, e in ends.items():
                    coll_viol += sum(1 for y, b in begins.items() if pos.get(y, 0) < pos.get(x, 0) and e < b)
        if len(problems) > 50:
            break
    return {"archive": anchor, "properties": props, "locations": defs["locations"],
            "events_per_location": dict(sorted(events_per_loc.items())), "records": dict(sorted(counts.items())),
            "messages_matched": matched, "sends_unmatched": unmatched_sends, "receives_unmatched": unmatched_recvs,
            "length_mismatches": length_mismatch, "collective_instances": instances,
            "violations_p2p": p2p_viol, "violations_collective": coll_viol,
            "violations": p2p_viol + coll_viol, "problems": problems[:50], "ok": not problems}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("anchor", help="the archive's anchor file, e.g. DIR/otf2/traces.otf2")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    r = check(a.anchor)
    if a.json:
        print(json.dumps(r, indent=1))
    else:
        print(f"{r['archive']}: {len(r['locations'])} locations, {sum(r['events_per_location'].values())} events")
        print(f"  messages matched {r['messages_matched']}, sends unmatched {r['sends_unmatched']}, receives unmatched "
              f"{r['receives_unmatched']}, length mismatches {r['length_mismatches']}")
        print(f"  collective instances complete and consistent: {r['collective_instances']}")
        print(f"  clock-condition violations: {r['violations']} ({r['violations_p2p']} messages, "
              f"{r['violations_collective']} collective)")
        if r["properties"]:
            print("  properties: " + ", ".join(f"{k}={v}" for k, v in r["properties"].items()))
        for pr in r["problems"]:
            print(f"  PROBLEM: {pr}")
        print("  OK" if r["ok"] else "  NOT OK")
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
