"""The whole pipeline (C op -> meta.json -> summary's derived numbers) against known answers:
the synthetic op synbw moves its bytes at exactly 1e9 B/s (a busy-wait of 1 ns per byte), so
summary's bandwidth must be 1000 MB/s, less only what preemption adds to the busy-wait; the
synthetic non-blocking ops have a known overlap: a communication that progresses by itself
(idelay) is fully hidden by a compute as long as it (100%), one that progresses only inside its
post (idelay_blocking) not at all (0%). Real mpiruns on 2 ranks."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.mpi


def test_bandwidth_and_overlap_known_answers(cli, build, tmp_path):
    out = tmp_path / "c"
    code, so, se = cli("run", "--ops", "synbw,idelay,idelay_overlap,idelay_blocking,idelay_blocking_overlap",
                       "--msizes", "64K,1M", "--delay", "200us", "--nrep", "40", "--mpiruns", "2", "-o", out,
                       "--quiet", "--no-summary")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    assert code == 0, se
    rows = {(r["op"], r["msize"]): r for r in json.loads(so)}
    for size in (65536, 1 << 20):
        bw = rows[("synbw", size)]["bandwidth_MBps"]
        # the busy-wait cannot be shorter than 1 ns per byte; preemption can only lengthen it
        assert 900 <= bw["median"] <= 1000.5, bw
        assert bw["bytes_per_call"] == [size]   # the distinct values over the runs
    ov = rows[("idelay_overlap", 0)]["overlap_pct"]
    assert ov["median"] >= 90, ov
    assert ov["pure_source"] == "measured"
    ovb = rows[("idelay_blocking_overlap", 0)]["overlap_pct"]
    assert ovb["median"] <= 10, ovb
    # no overlap value for a pure op, no bandwidth for a latency op
    assert rows[("idelay", 0)].get("overlap_pct") is None
    assert rows[("idelay", 0)].get("bandwidth_MBps") is None


def test_overlap_falls_back_to_the_calibration(cli, build, tmp_path):
    """Without the pure op in the run, t_pure is the calibration's pure time (meta.json overlap.pure_s)."""
    out = tmp_path / "c"
    code, so, se = cli("run", "--ops", "idelay_overlap", "--delay", "200us", "--nrep", "20", "--mpiruns", "1", "-o",
                       out, "--quiet", "--no-summary")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    row = json.loads(so)[0]
    assert row["overlap_pct"]["pure_source"] == "calibration" and row["overlap_pct"]["median"] >= 90, row["overlap_pct"]
