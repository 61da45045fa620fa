"""Clock-condition violations, message matching and start skew of traces (mpitempo.stats.trace),
on synthetic events; the bad inputs of `mpitempo trace` that are refused before anything runs."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as hst

from mpitempo.stats import trace as st

COLS = ("rank", "seq", "call", "kind", "t_enter_raw_s", "t_exit_raw_s", "t_enter_s", "t_exit_s", "bytes",
        "peer", "peer2", "root", "tag", "recv_tag", "comm")


def events(rows: list[dict], offsets=None) -> dict:
    """rows on the true (global) clock; raw = global + offsets[rank]"""
    offsets = offsets or {}
    out = {k: [] for k in COLS}
    seq: dict = {}
    for r in rows:
        rank = r["rank"]
        seq[rank] = seq.get(rank, -1) + 1
        d = {"seq": seq[rank], "bytes": 8, "peer": -1, "peer2": -1, "root": -1, "tag": -1, "recv_tag": -1,
             "comm": "c0"}
        d.update(r)
        off = offsets.get(rank, 0.0)
        d["t_enter_s"], d["t_exit_s"] = r["t0"], r["t1"]
        d["t_enter_raw_s"], d["t_exit_raw_s"] = r["t0"] + off, r["t1"] + off
        for k in COLS:
            out[k].append(d[k])
    return {k: np.asarray(v, dtype=object if k in ("call", "kind", "comm") else None) for k, v in out.items()}


def allreduce(rank, t0, t1):
    return {"rank": rank, "call": "allreduce", "kind": "coll_all2all", "t0": t0, "t1": t1}


def test_allreduce_violation_only_with_offsets():
    rows = [allreduce(0, 0.0, 10e-6), allreduce(1, 2e-6, 10.5e-6), allreduce(0, 20e-6, 30e-6),
            allreduce(1, 21e-6, 30e-6)]
    ev = events(rows, offsets={1: 1e-3})   # rank 1's clock 1 ms ahead
    assert st.count_violations(ev, "global")["total"] == 0
    v = st.count_violations(ev, "raw")
    # rank 0 leaves (raw) before rank 1 entered (raw, +1 ms): once per instance
    assert v["collective"] == 2 and v["p2p"] == 0 and v["collective_instances"] == 2


def test_own_entry_is_not_a_violation():
    # the last rank to enter leaves after its own entry; the others after it: no violation
    ev = events([allreduce(0, 0.0, 5e-6), allreduce(1, 4e-6, 5e-6), allreduce(2, 1e-6, 6e-6)])
    assert st.count_violations(ev, "global")["collective"] == 0
    ev = events([allreduce(0, 0.0, 3e-6), allreduce(1, 4e-6, 5e-6), allreduce(2, 1e-6, 6e-6)])
    assert st.count_violations(ev, "global")["collective"] == 1


def test_message_received_before_sent():
    rows = [{"rank": 0, "call": "send", "kind": "send", "t0": 10e-6, "t1": 11e-6, "peer": 1, "tag": 5},
            {"rank": 1, "call": "recv", "kind": "recv", "t0": 8e-6, "t1": 12e-6, "peer": 0, "recv_tag": 5}]
    assert st.count_violations(events(rows), "global") == {"total": 0, "p2p": 0, "collective": 0, "messages": 1,
                                                           "collective_instances": 0}
    # rank 1 runs 3 us behind: its receive ends (raw) at 9 us, before the send began at 10 us
    assert st.count_violations(events(rows, offsets={1: -3e-6}), "raw")["p2p"] == 1


def test_matching_is_per_tag_and_in_order():
    rows = [{"rank": 0, "call": "isend", "kind": "isend", "t0": 1e-6, "t1": 1.1e-6, "peer": 1, "tag": 1},
            {"rank": 0, "call": "isend", "kind": "isend", "t0": 2e-6, "t1": 2.1e-6, "peer": 1, "tag": 2},
            {"rank": 0, "call": "isend", "kind": "isend", "t0": 3e-6, "t1": 3.1e-6, "peer": 1, "tag": 1},
            # posted tag 2 first, then two tag-1 receives
            {"rank": 1, "call": "irecv_done", "kind": "irecv_done", "t0": 0.5e-6, "t1": 4e-6, "peer": 0,
             "recv_tag": 2},
            {"rank": 1, "call": "irecv_done", "kind": "irecv_done", "t0": 0.6e-6, "t1": 4e-6, "peer": 0,
             "recv_tag": 1},
            {"rank": 1, "call": "recv", "kind": "recv", "t0": 3.5e-6, "t1": 5e-6, "peer": 0, "recv_tag": 1}]
    ev = events(rows)
    pairs = st.match_messages(ev)
    assert sorted(pairs) == [(0, 4), (1, 3), (2, 5)]


def test_sendrecv_is_both_sides():
    rows = [{"rank": 0, "call": "sendrecv", "kind": "sendrecv", "t0": 0, "t1": 2e-6, "peer": 1, "peer2": 1,
             "tag": 0, "recv_tag": 0},
            {"rank": 1, "call": "sendrecv", "kind": "sendrecv", "t0": 0.5e-6, "t1": 2.5e-6, "peer": 0, "peer2": 0,
             "tag": 0, "recv_tag": 0}]
    ev = events(rows)
    assert len(st.match_messages(ev)) == 2
    assert st.count_violations(ev, "global")["p2p"] == 0
    assert st.count_violations(events(rows, offsets={1: 5e-6}), "raw")["p2p"] == 1


def test_rooted_collectives():
    bc = [{"rank": 0, "call": "bcast", "kind": "coll_one2all", "t0": 5e-6, "t1": 6e-6, "root": 0},
          {"rank": 1, "call": "bcast", "kind": "coll_one2all", "t0": 1e-6, "t1": 4e-6, "root": 0}]
    assert st.count_violations(events(bc), "global")["collective"] == 1   # left before the root entered
    red = [{"rank": 0, "call": "reduce", "kind": "coll_all2one", "t0": 0, "t1": 2e-6, "root": 0},
           {"rank": 1, "call": "reduce", "kind": "coll_all2one", "t0": 3e-6, "t1": 4e-6, "root": 0}]
    assert st.count_violations(events(red), "global")["collective"] == 1
    red[0]["t1"] = 5e-6
    assert st.count_violations(events(red), "global")["collective"] == 0


def test_incomplete_instances_are_skipped_and_wrap_counts_from_the_end():
    rows = [allreduce(0, 0, 1e-6), allreduce(0, 2e-6, 3e-6), allreduce(1, 2.1e-6, 3e-6)]
    ev = events(rows)
    # from the start, rank 1's only call would pair with rank 0's first: from the end it is the last one
    assert len(st.complete_instances(ev, st.collective_instances(ev, from_end=True))) == 1
    inst = st.call_instances(ev, "allreduce", from_end=True)
    assert [sorted(ev["rank"][i] for i in rows) for rows in inst] == [[0, 1]]
    assert st.start_skew(ev, inst, "global")[0] == pytest.approx(0.1e-6)


def test_parse_range():
    assert st.parse_range(None, 100) == (45, 55)
    assert st.parse_range(None, 4) == (0, 4)
    assert st.parse_range("10:20", 100) == (10, 20)
    assert st.parse_range("-5:", 100) == (95, 100)
    assert st.parse_range("3", 100) == (3, 4)
    for bad in ("x", "1:2:3", "50:10"):
        with pytest.raises(ValueError, match="invalid range"):
            st.parse_range(bad, 100)


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.floats(min_value=-1.0, max_value=1.0), min_size=3, max_size=3),
       hst.integers(min_value=1, max_value=8))
def test_true_times_never_violate_and_skew_is_offset_free(offsets, n):
    """Events consistent in real time have no violations on the true clock, whatever offsets
    the raw clocks have; the start skew on the true clock does not depend on them."""
    rows = []
    for k in range(n):
        base = k * 100e-6
        for r in range(3):
            rows.append(allreduce(r, base + r * 1e-6, base + 5e-6 + r * 0.1e-6))
    ev = events(rows, offsets={r: o for r, o in enumerate(offsets)})
    assert st.count_violations(ev, "global")["total"] == 0
    inst = st.call_instances(ev, "allreduce")
    assert len(inst) == n
    assert np.allclose(st.start_skew(ev, inst, "global"), 2e-6)


# ---- bad input of the command line: refused before anything is created or launched ----

def test_bad_inputs_refused_before_launch(cli, tmp_path):
    out = tmp_path / "t"
    (tmp_path / "afile").write_text("")
    app = "/bin/true"
    cases = [
        (["trace", "run", "-o", out, "--calls", "allreduce,bogus", "--", app], "unknown MPI call 'bogus'"),
        (["trace", "run", "-o", out, "--calls", "", "--", app], "invalid --calls"),
        (["trace", "run", "-o", out, "--buffer", "0", "--", app], "invalid --buffer 0"),
        (["trace", "run", "-o", out, "--on-full", "drop", "--", app], "'drop' is not one of"),
        (["trace", "run", "-o", out, "--", str(tmp_path / "no-such-app")], "not found or not executable"),
        (["trace", "run", "-o", tmp_path / "afile" / "trace", "--", app], "cannot write the trace directory"),
    ]
    for args, msg in cases:
        code, stdout, err = cli(*args)
        assert code != 0, args
        assert msg in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def test_existing_trace_is_not_overwritten(cli, tmp_path):
    (tmp_path / "trace.json").write_text("{}")
    code, _, err = cli("trace", "run", "-o", tmp_path, "--", "/bin/true")
    assert code != 0 and "already holds a trace" in err


def test_trace_run_outdir_must_be_new_or_empty(cli, tmp_path):
    """An existing directory holding other files, or a link to a directory, is refused before anything
    is launched (the tracer wrote into it by name, launch.json over a file of that name)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "launch.json").write_text("the user's file\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "lnk").symlink_to(tmp_path / "empty")
    for out, msg in (("d", "already exists and is not empty"), ("lnk", "is a symbolic link")):
        code, _, err = cli("trace", "run", "-o", tmp_path / out, "--", "/bin/true")
        assert code == 2 and msg in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "d" / "launch.json").read_text() == "the user's file\n"
    assert not any((tmp_path / "empty").iterdir())


def test_show_bad_inputs(cli, tmp_path):
    code, _, err = cli("trace", str(tmp_path / "missing"))
    assert code != 0 and "is not a directory" in err
    code, _, err = cli("trace", str(tmp_path))
    assert code != 0 and "holds no trace" in err


def test_help_has_example(cli):
    for args in (["trace", "--help"], ["trace", "run", "--help"], ["trace", "show", "--help"]):
        code, out, _ = cli(*args)
        assert code == 0 and "Example" in out


def test_call_table_matches_the_c_definition():
    from mpitempo.cmd_trace import call_table

    ids = [i for i, _, _ in call_table()]
    assert "allreduce" in ids and "irecv" in ids and "waitall" in ids and len(ids) == len(set(ids)) >= 40


def test_bad_sync_and_timer_refused_by_the_core(cli, build, tmp_path):
    out = tmp_path / "t"
    for args, msg in ((["--sync", "hca9"], "hca9"), (["--sync", "h2:prop/hca3"], "prop"),
                      (["--timer", "wtime"], "unknown timer 'wtime'"), (["--timer", "sundial"], "unknown timer")):
        code, _, err = cli("trace", "run", "-o", out, *args, "--", "/bin/true")
        assert code != 0 and msg in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def write_trace(d, ev: dict, meta_extra=None):
    """a trace directory as the tracer writes it (trace.json, events.csv)"""
    import csv
    import json

    d.mkdir(parents=True, exist_ok=True)
    with open(d / "events.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLS)
        for i in range(len(ev["rank"])):
            w.writerow([ev[k][i] for k in COLS])
    meta = {"format": "mpitempo-trace", "format_version": 1, "ranks": 2, "oversubscribed": False,
            "timer": "monotonic", "buffer": {"events_overwritten": 0, "events_dropped": 0},
            "sync": {"algorithm": "hca3", "duration_s": 0.5, "drift_at_end_s": 1e-7,
                     "max_abs_offset_after_sync_s": 2e-7},
            "events": "events.csv", "perfetto": "perfetto.json", "otf2": None}
    meta.update(meta_extra or {})
    (d / "trace.json").write_text(json.dumps(meta))


def test_show_json_contract_and_plot(cli, tmp_path):
    import json

    rows = []
    for k in range(30):
        base = k * 100e-6
        rows += [allreduce(0, base, base + 10e-6), allreduce(1, base + 1e-6, base + 10.2e-6)]
    ev = events(rows, offsets={1: 2e-3})
    write_trace(tmp_path / "tr", ev)
    code, out, err = cli("trace", tmp_path / "tr", "--range", "5:15", "--plot", tmp_path / "g.png", "--json")
    assert code == 0, err
    res = json.loads(out)
    for k in ("ranks", "events", "sync", "violations_raw", "violations_global", "otf2", "perfetto",
              "max_start_skew_raw_s", "max_start_skew_global_s"):
        assert k in res
    assert res["events"] == 60 and res["call"] == "allreduce" and res["range"] == [5, 15]
    assert res["violations_raw"] == 30 and res["violations_global"] == 0
    assert res["max_start_skew_global_s"] == pytest.approx(1e-6)
    assert res["max_start_skew_raw_s"] == pytest.approx(2e-3 + 1e-6)
    assert (tmp_path / "g.png").stat().st_size > 1000
    code, out, _ = cli("trace", tmp_path / "tr")
    assert code == 0 and "violations: raw 30" in out and "global 0" in out
    code, _, err = cli("trace", tmp_path / "tr", "--call", "bcast")
    assert code != 0 and "call 'bcast' is not a collective in this trace" in err
    code, _, err = cli("trace", tmp_path / "tr", "--range", "40:50")
    assert code != 0 and "invalid range '40:50'" in err


# -- hostile pass E: a trace directory from someone else ------------------------------------------------

def _hostile_trace(d):
    rows = []
    for k in range(4):
        base = k * 100e-6
        rows += [allreduce(0, base, base + 10e-6), allreduce(1, base + 1e-6, base + 10.2e-6)]
    write_trace(d, events(rows))
    (d / "not_recorded.json").write_text('{"calls": {"MPI_Comm_rank": {"why": "counted only", "total": 2}}}')
    (d / "sites.tsv").write_text("rank\taddress\tobject\tobject_base\tsymbol\tsymbol_address\n")


def _set(d, **kw):
    import json

    m = json.loads((d / "trace.json").read_text())
    m.update(kw)
    (d / "trace.json").write_text(json.dumps(m))


def _edit(d, old, new):
    p = d / "events.csv"
    text = p.read_text()
    i = text.index("\n", text.index("\n") + 1)   # the second row
    p.write_text(text[:i] + text[i:].replace(old, new, 1))


def _link(p, target):
    p.unlink()
    p.symlink_to(target)


def _fifo(p):
    p.unlink()
    os.mkfifo(p)


HOSTILE_TRACES = {
    "trace-json-link": (lambda d: _link(d / "trace.json", d.parent / "elsewhere.json"),
                        "trace.json': it is a symbolic link"),
    "trace-json-fifo": (lambda d: _fifo(d / "trace.json"), "trace.json': it is a FIFO"),
    "events-link": (lambda d: _link(d / "events.csv", "/etc/passwd"), "events.csv': it is a symbolic link"),
    "events-fifo": (lambda d: _fifo(d / "events.csv"), "events.csv': it is a FIFO"),
    "events-path-outside": (lambda d: _set(d, events="../elsewhere.csv"),
                            "names events file '../elsewhere.csv': expected a file name inside the trace directory"),
    "events-truncated-row": (lambda d: _edit(d, "\n1,", "\n1,x"), "is a damaged events file of an mpitempo trace"),
    "events-not-text": (lambda d: (d / "events.csv").write_bytes(b"rank,seq\xff\xfe\x00"), "(not UTF-8 text)"),
    "events-nan-time": (lambda d: _edit(d, ",0.0001,", ",nan,"), "holds a value that is not finite"),
    "events-huge-rank": (lambda d: _edit(d, "\n1,", "\n2000000000,"),
                         "an event of rank 2000000000, outside the trace's 2 ranks"),
    "meta-ranks-huge": (lambda d: _set(d, ranks=10 ** 12), "'ranks' is 1000000000000, expected an integer 1..16777216"),
    "meta-sync-string": (lambda d: _set(d, sync="x"), "'sync' is 'x', expected an object"),
    "meta-buffer-string": (lambda d: _set(d, buffer={"events_overwritten": "x"}), "events_overwritten is an integer"),
    "meta-otf2-number": (lambda d: _set(d, otf2=5), "'otf2' is 5, expected a string"),
    "not-recorded-outside": (lambda d: _set(d, not_recorded={"file": "/etc/passwd"}),
                             "names not_recorded file '/etc/passwd'"),
    "not-recorded-fifo": (lambda d: _fifo(d / "not_recorded.json"), "not_recorded.json': it is a FIFO"),
    "not-recorded-bad-total": (lambda d: (d / "not_recorded.json").write_text(
        '{"calls": {"MPI_X\\u001b[2J": {"why": "x", "total": "many"}}}'), "the entry of 'MPI_X\\x1b[2J' is not an object"),
    "sites-link": (lambda d: _link(d / "sites.tsv", "/etc/passwd"), "sites.tsv': it is a symbolic link"),
    "sites-fifo": (lambda d: _fifo(d / "sites.tsv"), "sites.tsv': it is a FIFO"),
    "partial-dir-link": (lambda d: ((d / "trace.json").unlink(), (d / "partial").symlink_to(d.parent)),
                         "partial': it is a symbolic link"),
    # -- hostile pass F: peers and roots that are no rank of the trace --
    "events-peer-huge": (lambda d: _edit(d, ",8,-1,", ",8,99999,"),
                         "events.csv':3: peer 99999 is not a rank of the trace (allowed: 0..1 for its 2 ranks, -1 none, "
                         "-2 MPI_PROC_NULL)"),
    "events-peer-negative": (lambda d: _edit(d, ",8,-1,", ",8,-7,"), "events.csv':3: peer -7 is not a rank of the trace"),
    "events-peer-nprocs": (lambda d: _edit(d, ",8,-1,", ",8,2,"), "events.csv':3: peer 2 is not a rank of the trace"),
    "events-peer2-huge": (lambda d: _edit(d, ",8,-1,-1,", ",8,-1,99999,"),
                          "events.csv':3: peer2 99999 is not a rank of the trace"),
    "events-root-nprocs": (lambda d: _edit(d, "-1,-1,-1,-1,-1,c0", "-1,-1,2,-1,-1,c0"),
                           "events.csv':3: root 2 is not a rank of the trace (allowed: 0..1"),
    "partial-peer-huge": (lambda d: _partial(d, ",8,99999,"),
                          "rank-1.csv':3: peer 99999 is not a rank of the trace (allowed: 0..1 for its 2 ranks"),
}


def _partial(d, peer):
    """The trace as per-rank partial files (no MPI_Finalize), rank 1's first event with another peer."""
    lines = (d / "events.csv").read_text().splitlines(keepends=True)
    (d / "trace.json").unlink()
    (d / "events.csv").unlink()
    (d / "partial").mkdir()
    for r in (0, 1):
        rows = [x for x in lines[1:] if x.startswith(f"{r},")]
        if r == 1:
            rows[0] = rows[0].replace(",8,-1,", peer, 1)
        (d / "partial" / f"rank-{r}.csv").write_text("# mpitempo partial trace, sync hca3\n" + lines[0] + "".join(rows))


@pytest.mark.parametrize("case", list(HOSTILE_TRACES))
def test_hostile_trace_directory(cli, tmp_path, case):
    """A damaged or planted trace directory: one line naming the file, exit 2, never a traceback, a
    hang on a FIFO, a read through a link or of a path elsewhere, nor a wrong number."""
    damage, msg = HOSTILE_TRACES[case]
    d = tmp_path / "tr"
    _hostile_trace(d)
    (tmp_path / "elsewhere.json").write_text((d / "trace.json").read_text())
    (tmp_path / "elsewhere.csv").write_text((d / "events.csv").read_text())
    damage(d)
    for args in (["trace", d], ["trace", d, "--json"]):
        code, out, err = cli(*args)
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert msg in err, err


def test_hostile_trace_texts_are_shown_escaped(cli, tmp_path):
    """ESC, BEL and a newline in trace.json's timer and note, a call-site object that is a FIFO (it
    blocked): shown escaped on one line; the FIFO is not opened."""
    d = tmp_path / "tr"
    _hostile_trace(d)
    _set(d, timer="mono\x1b]0;PWN\x07tonic", note="a\x1b[2Jb\nFAKE")
    os.mkfifo(tmp_path / "obj")
    (d / "sites.tsv").write_text("rank\taddress\tobject\tobject_base\tsymbol\tsymbol_address\n"
                                 f"0\t1000\t{tmp_path / 'obj'}\t0\tf\x1b[2J\t0\n")
    code, out, err = cli("trace", d)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\nFAKE" not in out
    assert "mono\\x1b]0;PWN\\x07tonic" in out and "a\\x1b[2Jb\\x0aFAKE" in out
    from mpitempo.analysis.trace_sites import _elf_type

    assert _elf_type(str(tmp_path / "obj")) is None and _elf_type("/dev/zero") is None
