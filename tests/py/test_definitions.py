"""Where mpitempo's number differs in definition from OSU 7.4's and IMB 2021.11's, for a campaign's
settings (present.definitions): the notes follow the settings (a setting that matches the suite
gives no note), a profile ``like`` keeps the notes of its suite only, and summary, report and the
exports show them."""
from __future__ import annotations

import json

import pytest

from mpitempo.io.synthetic import make_campaign
from mpitempo.present.definitions import (definition_line, definition_notes, factors_of, mpi_type,
                                          measurement_text)

BASE = {"datatype": "byte", "redop": "sum", "bw_window": 64, "bw_rbuf": "window", "rma_sync": "flush",
        "rma_win": "allocate", "overlap_compute": "auto"}


def F(scheme="barrier", inner=None, like=None, nprocs=2, **op):
    meta = {"kind": "bench", "nprocs": nprocs, "scheme": {"name": scheme, **({"inner": inner} if inner else {})},
            "operation_params": {**BASE, **op}}
    if like:
        meta["like"] = like
    return factors_of(meta)


def notes(op, f, suite=None, context="summary"):
    return [n.split(": ", 1)[1] for n in definition_notes(op, f, suite, context)]


def test_bw_notes_follow_the_settings():
    got = notes("bw", F(), "osu")
    assert got == ["a barrier before each call (back to back)", "type MPI_BYTE (MPI_CHAR)",
                   "receives into 64 distinct blocks (one buffer)"]
    # OSU's own settings: loop scheme, one receive buffer, MPI_CHAR: nothing left to say for osu_bw
    assert notes("bw", F("loop", 10, datatype="char", bw_rbuf="single"), "osu") == []
    # IMB Uniband: window 256 and MPI_BYTE
    assert notes("bw", F("loop", 10, bw_rbuf="single"), "imb") == ["window 64 (256)"]
    assert notes("bw", F("loop", 10, bw_rbuf="single", bw_window=256), "imb") == []
    assert "ranks 0 and p/2 of 4 (exactly 2 ranks)" in notes("bw", F(nprocs=4), "osu")


def test_collectives_time_like_the_barrier_scheme_and_reduce_another_type():
    assert notes("allreduce", F(), "osu") == ["reduces MPI_UNSIGNED_CHAR (MPI_CHAR)"]
    assert notes("allreduce", F(datatype="char"), "osu") == ["reduces MPI_SIGNED_CHAR (MPI_CHAR)"]
    assert notes("allreduce", F(datatype="float"), "imb") == []
    assert notes("allreduce", F("loop", 5), "imb") == ["loop of 5 calls (a barrier between calls)",
                                                       "reduces MPI_UNSIGNED_CHAR (MPI_FLOAT)"]
    assert notes("bcast", F(datatype="char"), "osu") == [] and notes("barrier", F(), "osu") == []
    assert notes("allreduce", F(redop="max"), "imb")[-1] == "operator MPI_MAX (MPI_SUM)"
    assert notes("reduce_scatter", F(datatype="char"), "osu") == [
        "reduces MPI_SIGNED_CHAR (MPI_CHAR)", "msize = each rank's result block (the whole vector, msize / p each)"]
    assert mpi_type("allreduce", F()) == "MPI_UNSIGNED_CHAR" and mpi_type("iallreduce_overlap", F()) == \
        "MPI_UNSIGNED_CHAR" and mpi_type("gather", F()) == "MPI_BYTE" and mpi_type("cas", F()) == "MPI_INT64_T"


def test_one_sided_fence_counts_one_epoch():
    fence = notes("put", F("loop", 10, datatype="char", rma_sync="fence"), "osu")
    assert fence == ["one epoch per call: fence, access, fence (3 fences and an access each way per iteration, / 2)"]
    assert notes("put", F("loop", 10, datatype="char", rma_sync="lock"), "osu") == []
    assert notes("put_bw", F("loop", 10, datatype="char", rma_sync="fence"), "osu") == []   # osu_put_bw: one epoch too
    assert notes("put", F("loop", 10, rma_sync="lock"), "imb") == [
        "sync lock (lock once, flush per access)", "MPI_Win_allocate (MPI_Win_create)"]


def test_multi_lat_round_trip_said_in_summary_not_in_the_export():
    s = notes("multi_lat", F(datatype="char"), "osu")
    assert s == ["time of a whole round trip (osu_multi_lat: half of it; export --osu halves it)"]
    assert notes("multi_lat", F(datatype="char"), "osu", "export") == []
    assert definition_notes("multi_lat", F(nprocs=4), "imb") == []            # no IMB PingPong on 4 ranks


def test_profile_keeps_its_suite_only():
    both = definition_notes("bw", F())
    assert {n.split(":")[0] for n in both} == {"osu_bw", "IMB Uniband"}
    assert {n.split(":")[0] for n in definition_notes("bw", F(like="osu"))} == {"osu_bw"}
    assert {n.split(":")[0] for n in definition_notes("bw", F(like="IMB"))} == {"IMB Uniband"}
    assert F(like="mpptest")["like"] is None and F()["like"] is None          # unknown or absent: no profile
    assert factors_of({"operation_params": {"like": "osu"}})["like"] == "osu"
    assert factors_of({}, {"like": "imb"})["like"] == "imb"
    toml = {"config": [{"name": "A", "like": "osu"}, {"name": "B"}]}
    assert factors_of({"config": "A"}, toml)["like"] == "osu" and factors_of({"config": "B"}, toml)["like"] is None
    assert factors_of("not a dict")["kind"] == "bench"


def test_ops_without_a_counterpart_say_nothing():
    for op in ("synbw", "delay", "idelay_overlap", "scan", "exscan_init", "pingpong/npp=9x"):
        assert definition_notes(op, F()) == [] or op.startswith("pingpong"), op
    assert definition_line("synbw", F()) is None
    assert notes("neighbor_alltoall", F(datatype="char"), "osu") == [
        "topology periodic 2-D Cartesian grid, 4 neighbours (graph of a periodic 1-D grid, radius 1: 2 neighbours)"]
    assert notes("neighbor_alltoall", F(), "imb") == []                       # no IMB counterpart


def test_ping_pong_kind():
    f = factors_of({"kind": "pingpong", "nprocs": 2, "pingpong": {"datatype": "MPI_BYTE", "loop_iters": 0}})
    assert "one buffer for sending and receiving (a send and a receive buffer)" in notes("pingpong-loop", f, "osu")
    f2 = factors_of({"kind": "pingpong", "nprocs": 2,
                     "pingpong": {"datatype": "MPI_CHAR", "loop_iters": 0, "buffers": "two"}})
    assert notes("pingpong-loop", f2, "osu") == []                           # osu_latency's own loop
    assert notes("pingpong-loop", dict(f2, pingpong={**f2["pingpong"], "loop_iters": 200}), "osu") == [
        "200 round trips per timing (10000 (1000 above 8 KiB))"]
    assert notes("pingpong", f2, "osu")[0].startswith("median of timings of npp round trips after a hand-shake")
    assert "10000 (1000 above 8 KiB) round trips" in measurement_text("pingpong-loop", f2)


def test_definition_line_puts_shared_differences_first():
    line = definition_line("bw", F())
    assert line.startswith("bw vs osu_bw and IMB Uniband: a barrier before each call (back to back), "
                           "receives into 64 distinct blocks (one buffer); vs osu_bw: type MPI_BYTE (MPI_CHAR); "
                           "vs IMB Uniband: window 64 (256)")


@pytest.fixture()
def camp(tmp_path):
    return make_campaign(tmp_path / "c", {"A": 1.0}, runs=3, ops=("allreduce", "bcast"), msizes=(8, 64), nrep=20,
                         meta={"A": {"operation_params": dict(BASE)}})


def test_summary_shows_one_line_per_op(cli, camp):
    code, out, err = cli("summary", camp)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "compared with OSU 7.4 and IMB 2021.11 (theirs in parentheses)" in flat
    assert ("allreduce vs osu_allreduce: reduces MPI_UNSIGNED_CHAR (MPI_CHAR); vs IMB Allreduce: reduces "
            "MPI_UNSIGNED_CHAR (MPI_FLOAT)") in flat
    assert "bcast vs osu_bcast: type MPI_BYTE (MPI_CHAR)" in flat
    code, out, err = cli("summary", camp, "--json")
    assert code == 0 and json.loads(out)                                     # JSON unchanged: rows only


def test_summary_with_a_profile_shows_its_suite_only(cli, camp):
    (camp / "campaign.toml").write_text((camp / "campaign.toml").read_text() + 'like = "osu"\n')
    code, out, err = cli("summary", camp)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "allreduce vs osu_allreduce: reduces MPI_UNSIGNED_CHAR (MPI_CHAR)" in flat and "IMB Allreduce" not in flat


def test_report_shows_the_lines(camp, tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.present.report import build_report

    html = build_report(open_campaign(camp))
    assert "allreduce vs osu_allreduce: reduces MPI_UNSIGNED_CHAR (MPI_CHAR)" in html


def test_fence_latency_exported_under_osus_header_says_it_is_not_osus(tmp_path):
    """osu_put_latency -s fence times 3 fences and a put each way per iteration and halves it; the
    op times one epoch (fence, put, fence): the export keeps OSU's header and says so first."""
    from test_export_peers_layout import _params, bench_campaign

    from mpitempo.cli import main

    camp = bench_campaign(tmp_path / "c", "fence", {"put": 1e-6, "put_bw": 20e-6}, _params(rma_sync="fence"))
    assert main(["export", str(camp), "--osu", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "osu_put_latency.fence.np2.txt").read_text()
    assert "# Synchronization: MPI_Win_fence" in text
    notes = text[text.index("# mpitempo "):].splitlines()
    assert notes[2] == ("# WARNING: Latency is one fence epoch (2 fences and 1 access), not osu_put_latency's "
                        "(3 fences + 2 accesses) / 2: not comparable with osu_put_latency -s fence")
    assert "WARNING" not in (tmp_path / "o" / "osu_put_bw.fence.np2.txt").read_text()


def test_two_epochs_per_call_is_osus_fence_latency(tmp_path):
    """With --rma-epochs 2 a call is OSU's fence iteration (3 fences, an access each way) and
    meta.json's one_way_divisor 2 says what OSU divides it by: the export halves the call and has no
    warning; summary keeps the whole call."""
    from test_export_peers_layout import _params, bench_campaign

    from mpitempo.cli import main

    camp = bench_campaign(tmp_path / "c", "fence2", {"put": 2e-6}, _params(rma_sync="fence", rma_epochs=2),
                          exp_extra={"put": {"one_way_divisor": 2, "timed_ranks": "all"}})
    assert main(["export", str(camp), "--osu", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "osu_put_latency.fence2.np2.txt").read_text()
    assert "WARNING" not in text and "one epoch per call" not in text
    assert "# Latency = half of one call (two access epochs, --rma-epochs 2), as OSU prints it" in text
    row = [ln for ln in text.splitlines() if ln.startswith("8 ")][0]
    assert row.split() == ["8", f"{2e-6 * (1 + 8 / 1024) * 1.025 / 2 * 1e6:.2f}"]     # median of 6 reps, halved
    assert notes("put", F("loop", 10, datatype="char", rma_sync="fence", rma_epochs=2), "osu") == []


def test_exchange_layout_note_only_for_cores_that_send_one_buffer_twice():
    old = factors_of({"experiments": [{"exp": 0, "op": "exchange"}]})
    new = factors_of({"experiments": [{"exp": 0, "op": "exchange", "timed_ranks": "all"}]})
    assert notes("exchange", dict(old, scheme="loop"), "imb") == [
        "one send buffer sent twice, two receive blocks (two send blocks, one receive block)"]
    assert notes("exchange", dict(new, scheme="loop"), "imb") == []
