"""Wait states (mpitempo.stats.waitstates) on synthetic events with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from mpitempo.stats import waitstates as ws

COLS = ("rank", "seq", "call", "kind", "t_enter_raw_s", "t_exit_raw_s", "t_enter_s", "t_exit_s", "bytes",
        "peer", "peer2", "root", "tag", "recv_tag", "comm", "req", "of", "flags")


def events(rows: list[dict]) -> dict:
    out = {k: [] for k in COLS}
    seq: dict = {}
    for r in sorted(rows, key=lambda r: (r["rank"], r.get("order", 0), r["t0"])):
        seq[r["rank"]] = seq.get(r["rank"], -1) + 1
        d = {"seq": seq[r["rank"]], "bytes": 8, "peer": -1, "peer2": -1, "root": -1, "tag": -1, "recv_tag": -1,
             "comm": "1", "req": 0, "of": "", "flags": 0}
        d.update(r)
        d["t_enter_s"] = d["t_enter_raw_s"] = r["t0"]
        d["t_exit_s"] = d["t_exit_raw_s"] = r["t1"]
        for k in COLS:
            out[k].append(d[k])
    return {k: np.asarray(v, dtype=object if k in ("call", "kind", "comm", "of") else None) for k, v in out.items()}


def coll(rank, call, kind, t0, t1, root=-1):
    return {"rank": rank, "call": call, "kind": kind, "t0": t0, "t1": t1, "root": root}


def test_late_sender_blocking_and_nonblocking():
    rows = [{"rank": 1, "call": "send", "kind": "send", "t0": 0.30, "t1": 0.31, "peer": 0, "tag": 1},
            {"rank": 0, "call": "recv", "kind": "recv", "t0": 0.10, "t1": 0.32, "peer": 1, "recv_tag": 1},
            # rank 0: irecv posted at 1.0, waits from 1.1; rank 1 sends at 1.5
            {"rank": 0, "call": "irecv", "kind": "irecv", "t0": 1.0, "t1": 1.01, "peer": 1, "tag": 2, "order": 1},
            {"rank": 0, "call": "wait", "kind": "wait", "t0": 1.1, "t1": 1.6, "order": 2},
            {"rank": 0, "call": "irecv_done", "kind": "irecv_done", "t0": 1.0, "t1": 1.6, "peer": 1, "recv_tag": 2,
             "flags": 4, "order": 3},
            {"rank": 1, "call": "isend", "kind": "isend", "t0": 1.5, "t1": 1.51, "peer": 0, "tag": 2}]
    r = ws.analyse(events(rows))
    assert r["late_sender"]["per_call_s"] == {"recv": pytest.approx(0.2), "wait": pytest.approx(0.4)}
    assert r["late_sender"]["per_rank_s"] == [pytest.approx(0.6), 0.0]
    assert r["late_receiver"]["count"] == 0


def test_wait_not_recorded_gives_no_late_sender_for_the_irecv():
    rows = [{"rank": 0, "call": "irecv", "kind": "irecv", "t0": 1.0, "t1": 1.01, "peer": 1, "tag": 2},
            {"rank": 0, "call": "irecv_done", "kind": "irecv_done", "t0": 1.0, "t1": 1.6, "peer": 1, "recv_tag": 2},
            {"rank": 1, "call": "isend", "kind": "isend", "t0": 1.5, "t1": 1.51, "peer": 0, "tag": 2}]
    assert ws.analyse(events(rows))["late_sender"]["count"] == 0


def test_late_receiver_only_when_the_send_blocked():
    rows = [{"rank": 0, "call": "ssend", "kind": "send", "t0": 0.0, "t1": 0.25, "peer": 1, "tag": 3},
            {"rank": 1, "call": "recv", "kind": "recv", "t0": 0.2, "t1": 0.26, "peer": 0, "recv_tag": 3},
            # an eager send that returned before the receive: no wait
            {"rank": 0, "call": "send", "kind": "send", "t0": 1.0, "t1": 1.001, "peer": 1, "tag": 4},
            {"rank": 1, "call": "recv", "kind": "recv", "t0": 1.5, "t1": 1.501, "peer": 0, "recv_tag": 4}]
    r = ws.analyse(events(rows))
    assert r["late_receiver"]["per_call_s"] == {"ssend": pytest.approx(0.2)} and r["late_receiver"]["count"] == 1
    assert r["late_sender"]["count"] == 0


def test_collective_patterns():
    rows = [coll(0, "allreduce", "coll_all2all", 0.0, 0.5), coll(1, "allreduce", "coll_all2all", 0.4, 0.5),
            coll(2, "allreduce", "coll_all2all", 0.1, 0.5),
            coll(0, "barrier", "coll_all2all", 1.0, 1.3), coll(1, "barrier", "coll_all2all", 1.2, 1.3),
            coll(2, "barrier", "coll_all2all", 1.25, 1.3),
            coll(0, "bcast", "coll_one2all", 2.3, 2.31, root=0), coll(1, "bcast", "coll_one2all", 2.0, 2.31, root=0),
            coll(2, "bcast", "coll_one2all", 2.4, 2.41, root=0),
            coll(0, "reduce", "coll_all2one", 3.0, 3.5, root=0), coll(1, "reduce", "coll_all2one", 3.2, 3.21, root=0),
            coll(2, "reduce", "coll_all2one", 3.45, 3.46, root=0)]
    r = ws.analyse(events(rows))
    assert r["wait_nxn"]["per_rank_s"] == [pytest.approx(0.4), 0.0, pytest.approx(0.3)]
    assert r["wait_barrier"]["total_s"] == pytest.approx(0.25 + 0.05)   # last enter 1.25
    # rank 1 entered 0.3 s before the root; rank 2 after it (no wait)
    assert r["late_broadcast"]["per_rank_s"] == [0.0, pytest.approx(0.3), 0.0]
    assert r["early_reduce"]["per_rank_s"] == [pytest.approx(0.45), 0.0, 0.0]
    rows_table = ws.table_rows(r)
    assert ["wait_nxn", "allreduce", pytest.approx(700.0)] in [row[:3] for row in rows_table]


def test_wait_bounded_by_the_call():
    # rank 0 left the allreduce before rank 1 entered (an impossible order: a bad clock); the wait
    # counted is at most the call's own duration
    rows = [coll(0, "allreduce", "coll_all2all", 0.0, 0.1), coll(1, "allreduce", "coll_all2all", 0.5, 0.6)]
    assert ws.analyse(events(rows))["wait_nxn"]["total_s"] == pytest.approx(0.1)


def test_events_file_with_wrong_columns_is_refused(cli, tmp_path):
    import json

    d = tmp_path / "tr"
    d.mkdir()
    (d / "events.csv").write_text("rank,seq,call,when\n0,0,allreduce,1.0\n")
    (d / "trace.json").write_text(json.dumps({"format": "mpitempo-trace", "format_version": 2, "ranks": 1,
                                              "events": "events.csv"}))
    code, out, err = cli("trace", d)
    assert code != 0 and "is not an events file of an mpitempo trace" in err and "when" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
