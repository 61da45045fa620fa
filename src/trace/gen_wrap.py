#!/usr/bin/env python3
"""Generate the tracer's C wrappers of the recorded calls (trace_wrap_gen.c) from
src/trace/trace_sig.def (signature and recipe of each call) and trace_calls.def (its id).

    gen_wrap.py OUT.c          (run by the build: CMakeLists.txt, a custom command)
    gen_wrap.py --stdout       (print it)

Each wrapper is one recipe's template below with the call's parameters filled in. It forwards to
the next tool's MPI_ symbol (TR_FWD, trace_wrap.h: dlsym(RTLD_NEXT), else the library's PMPI_).
The shared helpers are hand-written in trace_wrap.h. Never edit the output: change the table or a
template (docs/design.md, "add a recorded MPI call")."""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SKIP = """    if (!TR_REC({id})) {{
        if (tr.on) tr_unsel[TR_{id}]++;
        return {fwd};
    }}"""
STATUS = "    MPI_Status own_;\n    MPI_Status *s = status == MPI_STATUS_IGNORE ? &own_ : status;"
TIMED = "    int64_t t0 = tr_now();\n    int rc = {fwds};\n    int64_t t1 = tr_now();"
# a completion call: forwarded unless selected or a tracked request may complete in it
TRACK = """    int track = tr.on && tr_req_pending(){more};
    if (!TR_REC({id}) && !track) {{
        if (tr.on) tr_unsel[TR_{id}]++;
        return {fwd};
    }}"""

T = {
    # a blocking collective; the bytes sent and received (tr_sr_t) computed after the exit
    "COLL": SKIP + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) {{
        tr_sr_t sr = {a1};
        tr_fill(e, TR_{id}, t0, t1, comm, sr.s, -1, -1, tr_rootw(comm, {a0}), -1);
        e->rbytes = sr.r;
    }}
    return rc;""",
    # a non-blocking collective: the initiation with its request id; completed in a wait or test
    "ICOLL": SKIP + "\n" + TIMED + """
    tr_sr_t b = {a1};
    int root_ = tr_rootw(comm, {a0});
    uint32_t rid = rc == MPI_SUCCESS ? tr_req_post(*request, TR_{id}, t0, comm, -1, -1, b.s, root_, 0) : 0;
    if (rid) tr_req_set_rbytes(rid, b.r);
    tr_ev_t *e = tr_slot();
    if (e) {{
        tr_fill(e, TR_{id}, t0, t1, comm, b.s, -1, -1, root_, -1);
        e->req = rid;
        e->rbytes = b.r;
    }}
    return rc;""",
    "SEND": SKIP + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, TR_{id}, t0, t1, comm, tr_bytes(count, datatype), tr_peer(comm, dest), -1, -1, tag);
    return rc;""",
    # a posted send or receive request: an Isend/Irecv (a0 the peer, a1 0: the message is recorded
    # now) or a persistent request (a1 1: no message until MPI_Start)
    "POST": SKIP + "\n" + TIMED + """
    int64_t b = tr_bytes(count, datatype);
    int peer = tr_peer(comm, {a0});
    uint32_t rid = rc == MPI_SUCCESS && {a0} != MPI_PROC_NULL ? tr_req_post(*request, TR_{id}, t0, comm, peer, tag, b, -1, {a1}) : 0;
    tr_ev_t *e = tr_slot();
    if (e) {{
        tr_fill(e, TR_{id}, t0, t1, comm, b, peer, -1, -1, tag);
        e->req = rid;
    }}
    return rc;""",
    "RECV": SKIP + "\n" + STATUS + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) tr_fill_recv(e, TR_{id}, t0, t1, comm, source, datatype, s);
    return rc;""",
    "MRECV": SKIP + "\n" + STATUS + """
    int noproc = *message == MPI_MESSAGE_NO_PROC;
""" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) tr_fill_recv(e, TR_{id}, t0, t1, tr_mcomm, noproc ? MPI_PROC_NULL : 0, datatype, s);
    return rc;""",
    "IMRECV": SKIP + """
    int noproc = *message == MPI_MESSAGE_NO_PROC;
""" + TIMED + """
    uint32_t rid = rc == MPI_SUCCESS && !noproc ? tr_req_post(*request, TR_{id}, t0, tr_mcomm, -1, -1, 0, -1, 0) : 0;
    tr_ev_t *e = tr_slot();
    if (e) {{
        tr_fill(e, TR_{id}, t0, t1, tr_mcomm, tr_bytes(count, datatype), noproc ? -2 : -1, -1, -1, -1);
        e->req = rid;
    }}
    return rc;""",
    # probes: recorded with the matched message when one was found (a0)
    "PROBE": SKIP + "\n" + STATUS + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) {{
        if ({a0}) tr_fill_recv(e, TR_{id}, t0, t1, comm, source, MPI_BYTE, s);
        else tr_fill(e, TR_{id}, t0, t1, comm, 0, -1, -1, -1, -1);
    }}
    return rc;""",
    "SENDRECV": SKIP + "\n" + STATUS + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) {{
        tr_fill(e, TR_{id}, t0, t1, comm, {a0}, tr_peer(comm, dest),
                source == MPI_PROC_NULL ? -2 : tr_peer(comm, s->MPI_SOURCE), -1, sendtag);
        e->rtag15 = (int16_t)(s->MPI_TAG & 0x7fff); /* the received tag (low bits) */
        e->rbytes = tr_recvd(s, source);            /* the received size (the send size may differ) */
    }}
    return rc;""",
    "START": """    int rec = TR_REC({id});
    if (!rec && !(tr.on && tr_req_pending())) {{
        if (tr.on) tr_unsel[TR_{id}]++;
        return {fwd};
    }}
    if (!rec) tr_unsel[TR_{id}]++;
    MPI_Request before = *request;
""" + TIMED + """
    if (rec) {{
        tr_ev_t *e = tr_slot();
        if (e) tr_fill(e, TR_{id}, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    }}
    if (rc == MPI_SUCCESS) tr_req_start(before, t0, t1, rec);
    return rc;""",
    "STARTALL": """    int rec = TR_REC({id});
    if (!rec && !(tr.on && tr_req_pending())) {{
        if (tr.on) tr_unsel[TR_{id}]++;
        return {fwd};
    }}
    if (!rec) tr_unsel[TR_{id}]++;
""" + TIMED + """
    if (rec) {{
        tr_ev_t *e = tr_slot();
        if (e) tr_fill(e, TR_{id}, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    }}
    if (rc == MPI_SUCCESS) /* persistent handles do not change at MPI_Start */
        for (int i = 0; i < count; i++) tr_req_start(array_of_requests[i], t0, t1, rec);
    return rc;""",
    # completion: the call itself (when selected) and the tracked requests it completes
    "WAIT": TRACK.replace("{more}", "") + """
    MPI_Request before = *request;
""" + STATUS + "\n" + TIMED + """
    int att = tr_rec_wait(TR_{id}, t0, t1);
    if (track{flag}) tr_req_done_one(before, s, t1, att);
    return rc;""",
    "WAITALL": TRACK.replace("{more}", " && count > 0 && tr_scratch(count)") + """
    MPI_Status *s = array_of_statuses;
    if (track) {{
        memcpy(tr_reqs, array_of_requests, sizeof *array_of_requests * (size_t)count);
        if (array_of_statuses == MPI_STATUSES_IGNORE) s = tr_stats;
    }}
""" + TIMED + """
    int att = tr_rec_wait(TR_{id}, t0, t1);
    if (track{flag})
        for (int i = 0; i < count; i++) tr_req_done_one(tr_reqs[i], &s[i], t1, att);
    return rc;""",
    "WAITANY": TRACK.replace("{more}", " && count > 0 && tr_scratch(count)") + "\n" + STATUS + """
    if (track) memcpy(tr_reqs, array_of_requests, sizeof *array_of_requests * (size_t)count);
""" + TIMED + """
    int att = tr_rec_wait(TR_{id}, t0, t1);
    if (track{flag} && *index != MPI_UNDEFINED && *index >= 0 && *index < count)
        tr_req_done_one(tr_reqs[*index], s, t1, att);
    return rc;""",
    "WAITSOME": TRACK.replace("{more}", " && incount > 0 && tr_scratch(incount)") + """
    MPI_Status *s = array_of_statuses;
    if (track) {{
        memcpy(tr_reqs, array_of_requests, sizeof *array_of_requests * (size_t)incount);
        if (array_of_statuses == MPI_STATUSES_IGNORE) s = tr_stats;
    }}
""" + TIMED + """
    int att = tr_rec_wait(TR_{id}, t0, t1);
    if (track && *outcount != MPI_UNDEFINED)
        for (int k = 0; k < *outcount; k++)
            if (array_of_indices[k] >= 0 && array_of_indices[k] < incount)
                tr_req_done_one(tr_reqs[array_of_indices[k]], &s[k], t1, att);
    return rc;""",
    "REQFREE": TRACK.replace("{more}", "") + """
    MPI_Request before = *request;
""" + TIMED + """
    int att = tr_rec_wait(TR_{id}, t0, t1);
    if (track && rc == MPI_SUCCESS) tr_req_freed(before, t1, att);
    return rc;""",
    # a cancelled request is marked when it completes (the status says whether the cancel succeeded)
    "CANCEL": SKIP + "\n" + TIMED + """
    tr_ev_t *e = tr_slot();
    if (e) tr_fill(e, TR_{id}, t0, t1, MPI_COMM_NULL, 0, -1, -1, -1, -1);
    return rc;""",
    # communicators: the creation is agreed by the members (trace_core.c), then recorded
    "COMMC": """    if (!tr.on) return {fwd};
    int rec = tr.sel[TR_{id}];
    if (!rec) tr_unsel[TR_{id}]++;
""" + TIMED + """
    if (rc == MPI_SUCCESS) tr_comm_created(*{a1}, {a0}, TR_{id});
    if (rec) {{
        tr_ev_t *e = tr_slot();
        if (e) tr_fill(e, TR_{id}, t0, t1, {a0}, 0, -1, -1, -1, -1);
    }}
    return rc;""",
    # a freed communicator's handle can come back for another one: its entry is closed
    "COMMFREE": """    if (!tr.on) {{
        if (tr.enabled) tr_comm_freed(*comm);
        return {fwd};
    }}
    int rec = tr.sel[TR_{id}];
    if (!rec) tr_unsel[TR_{id}]++;
    MPI_Comm c = *comm;
    tr_ev_t *e = NULL;
    int64_t t0 = tr_now();
    if (rec && (e = tr_slot())) tr_fill(e, TR_{id}, t0, t0, c, 0, -1, -1, -1, -1);
    int rc = {fwd};
    if (e) e->t1 = tr_now();
    tr_comm_freed(c);
    return rc;""",
}
T["MPROBE"] = "    if (tr.on) tr_mcomm = comm;\n" + T["PROBE"]


def split_top(s: str) -> list[str]:
    """'a, f(b, c)' -> ['a', 'f(b, c)']"""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "({["
        depth -= ch in ")}]"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def tables():
    ids = {n: i for i, n in re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)"', (HERE / "trace_calls.def").read_text(), re.M)}
    sigs = re.findall(r"^TR_SIG\((MPI_\w+), (\([^()]*\)), (\w+)(?:\((.*)\))?\)$", (HERE / "trace_sig.def").read_text(), re.M)
    return ids, sigs


def wrapper(name: str, params: str, recipe: str, args: str, cid: str) -> str:
    if recipe not in T:
        raise SystemExit(f"trace_sig.def: {name}: unknown recipe {recipe}")
    names = [re.sub(r"\[.*$", "", p).split()[-1].lstrip("*") for p in split_top(params[1:-1])]
    subst = {"status": "s", "array_of_statuses": "s"}
    short = name[4:]
    a = split_top(args) if args else []
    fields = {"id": cid, "fwd": f"TR_FWD({short}, ({', '.join(names)}))",
              "fwds": f"TR_FWD({short}, ({', '.join(subst.get(n, n) for n in names)}))",
              "flag": " && *flag" if "flag" in names else ""}
    fields.update({f"a{i}": v for i, v in enumerate(a)})
    body = T[recipe].format(**fields)
    return (f"static __typeof__(&PMPI_{short}) tr_nx_{short};\n"
            f"int {name}{params}\n{{\n{body}\n}}\n")


def generate() -> str:
    ids, sigs = tables()
    got = {n for n, *_ in sigs}
    if got != set(ids):
        raise SystemExit(f"trace_sig.def and trace_calls.def differ: {sorted(got ^ set(ids))}")
    head = ("/* GENERATED by src/trace/gen_wrap.py from trace_sig.def and trace_calls.def at build time:\n"
            " * do not edit. The C wrappers of the recorded calls; their helpers are in trace_wrap.h. */\n"
            '#include "trace/trace_wrap.h"\n\n')
    return head + "\n".join(wrapper(n, p, r, a, ids[n]) for n, p, r, a in sigs)


def main(argv: list[str]) -> int:
    text = generate()
    if argv[1:] == ["--stdout"]:
        sys.stdout.write(text)
        return 0
    out = Path(argv[1])
    if not out.exists() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
