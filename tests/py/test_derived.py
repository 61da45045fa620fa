"""Bandwidth, message rate and overlap derived from the times (analysis.derived), the flag
compute_miscalibrated, and their OSU/IMB exports read back with ReFrame's sanity functions.

The synthetic runs have constant times, so every number is known by hand: a run median is the
time written, the bandwidth of a run is bytes_per_call / that time, the overlap is OSU's
max(0, 100 x (1 - (t_overall - t_compute) / t_pure)).
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.analysis.derived import bandwidth_MBps, imb_overlap_pct, overlap_pct, spread
from mpitempo.io.synthetic import op_info, write_run
from mpitempo.stats.describe import median_ci

sn = pytest.importorskip("reframe.utility.sanity", reason="reframe-hpc is not installed (pip install '.[test]')")

PARAMS = {"datatype": "char", "datatype_size": 1, "bw_window": 64, "rma_sync": "lock", "rma_win": "create",
          "overlap_compute": "auto"}


def _ov(target, measured, pure):
    return {"overlap": {"compute_target_s": target, "compute_median_s": measured, "compute_min_s": measured,
                        "compute_max_s": measured, "pure_s": pure, "compute_calls": 100}}


def campaign(root, times: dict, runs=5, nprocs=4, overlap=None, msizes=(8, 1024), params=PARAMS, cfg="A"):
    """times: op -> function (run i, msize) -> seconds (constant within a run); overlap: op ->
    function (run i, msize) -> overlap dict."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "campaign.toml").write_text('name = "derived"\n')
    for i in range(runs):
        ops, ms, ts = [], [], []
        for op, f in times.items():
            for m in msizes:
                ops += [op] * 5
                ms += [m] * 5
                ts += [f(i, m)] * 5

        def em(op, m, i=i):
            d = op_info(op, m, nprocs, params.get("bw_window", 64))
            if overlap and op in overlap:
                d.update(overlap[op](i, m))
            return d
        write_run(root, f"{cfg}-{i:03d}", cfg, i, ops, ms, ts, nprocs=nprocs, exp_meta=em,
                  meta={"operation_params": params})
    return root


def _summary(cli, d, *args):
    code, out, err = cli("summary", d, "--json", *args)
    assert code == 0, err
    return {(r["op"], r["msize"]): r for r in json.loads(out)}


def test_bandwidth_is_bytes_over_the_run_median(cli, tmp_path):
    t = {"bw": lambda i, m: (1 + 0.1 * i) * (1e-6 + m * 1e-9), "synbw": lambda i, m: m * 1e-9,
         "mbw_mr": lambda i, m: 2e-6 + m * 1e-9, "allreduce": lambda i, m: 3e-6}
    s = _summary(cli, campaign(tmp_path / "c", t))
    for m in (8, 1024):
        runs = [t["bw"](i, m) for i in range(5)]
        b = s[("bw", m)]["bandwidth_MBps"]
        want = sorted(64 * m / x / 1e6 for x in runs)
        assert b["median"] == 64 * m / float(np.median(runs)) / 1e6 == want[2]      # odd runs: exactly bytes / median
        assert (b["min"], b["max"], b["runs"]) == (want[0], want[-1], 5)
        assert b["bytes_per_call"] == [64.0 * m] and b["lo"] is None and b["need_runs"] == 6
        # the synthetic op: every rank busy-waits msize ns and moves msize bytes: 1000 MB/s
        assert s[("synbw", m)]["bandwidth_MBps"]["median"] == pytest.approx(1000.0)
        # message rate: only for the rate op
        r = s[("mbw_mr", m)]
        assert r["msg_rate_per_s"]["median"] == pytest.approx(2 * 64 / t["mbw_mr"](0, m))
        assert "msg_rate_per_s" not in s[("bw", m)] and "bandwidth_MBps" not in s[("allreduce", m)]
    code, out, err = cli("summary", tmp_path / "c")
    assert code == 0 and "MB/s" in out and "messages/s" in out and "bandwidth (derived from the times" in out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-7, 1e-2), min_size=1, max_size=30), st.floats(1.0, 1e9))
def test_bandwidth_ci_is_the_time_ci_mapped(times, nbytes):
    """bytes / t is decreasing: the CI of the median of the per-run bandwidths is the time CI's
    bounds mapped and swapped, and min/max swap likewise."""
    bw = [bandwidth_MBps(nbytes, t) for t in times]
    s, ci = spread(bw), median_ci(times)
    if ci["lo_s"] is None:
        assert s["lo"] is None and s["need_runs"] == ci["need_runs"]
    else:
        assert s["lo"] == bandwidth_MBps(nbytes, ci["hi_s"]) and s["hi"] == bandwidth_MBps(nbytes, ci["lo_s"])
        assert s["lo"] <= s["median"] <= s["hi"]
    assert s["min"] == bandwidth_MBps(nbytes, max(times)) and s["max"] == bandwidth_MBps(nbytes, min(times))


def test_overlap_by_hand(cli, tmp_path):
    # measured pure op: overall 7, compute 5, pure 4 -> 100 x (1 - 2/4) = 50 %; run 4: overall 9 -> 0 %
    t = {"iallreduce": lambda i, m: 4e-6, "iallreduce_overlap": lambda i, m: 9e-6 if i == 4 else 7e-6,
         # no pure op measured: the calibration pure_s = 8 us -> 100 x (1 - 2/8) = 75 %
         "ibcast_overlap": lambda i, m: 7e-6,
         # no pure op, compute given explicitly (pure_s = 0): no overlap value
         "igather_overlap": lambda i, m: 7e-6}
    ov = {"iallreduce_overlap": lambda i, m: _ov(5e-6, 5e-6, 4.5e-6),
          "ibcast_overlap": lambda i, m: _ov(5e-6, 5e-6, 8e-6),
          "igather_overlap": lambda i, m: _ov(5e-6, 5e-6, 0.0)}
    s = _summary(cli, campaign(tmp_path / "c", t, overlap=ov, msizes=(1024,)))
    a = s[("iallreduce_overlap", 1024)]["overlap_pct"]
    assert (a["median"], a["min"], a["max"]) == pytest.approx((50.0, 0.0, 50.0))
    assert (a["runs"], a["pure_source"]) == (5, "measured")
    assert s[("iallreduce_overlap", 1024)]["compute"]["median_s"] == 5e-6
    b = s[("ibcast_overlap", 1024)]["overlap_pct"]
    assert b["median"] == pytest.approx(75.0) and b["pure_source"] == "calibration"
    c = s[("igather_overlap", 1024)]["overlap_pct"]
    assert c["median"] is None and c["runs"] == 0 and "no pure time: igather was not measured" in c["why_none"]
    code, out, err = cli("summary", tmp_path / "c")
    assert "overlap of communication and computation" in out and "no overlap value" in out
    assert overlap_pct(7.0, 5.0, 4.0) == 50.0 and overlap_pct(20e-6, 1e-6, 4e-6) == 0.0
    assert imb_overlap_pct(7.0, 5.0, 4.0) == pytest.approx(40.0)     # (4 + 5 - 7) / max(4, 5)


@pytest.mark.parametrize("off, flagged", [(0.06, True), (0.04, False), (-0.06, True), (-0.04, False)])
def test_compute_miscalibrated_threshold(cli, tmp_path, off, flagged):
    t = {"iallreduce": lambda i, m: 4e-6, "iallreduce_overlap": lambda i, m: 7e-6}
    ov = {"iallreduce_overlap": lambda i, m: _ov(5e-6, 5e-6 * (1 + off) if i == 3 else 5e-6, 4e-6)}
    d = campaign(tmp_path / "c", t, overlap=ov, msizes=(1024,))
    r = _summary(cli, d)[("iallreduce_overlap", 1024)]
    assert ("compute_miscalibrated" in r["flags"]) is flagged and r["compute_miscalibrated"] is flagged
    assert "compute_miscalibrated" not in _summary(cli, d)[("iallreduce", 1024)]["flags"]
    code, out, err = cli("summary", d)
    out = " ".join(out.split())
    assert ("compute-off" in out and "off its target by more than 5%" in out) is flagged


def test_compare_shows_bandwidth(cli, tmp_path):
    t = {"bw": lambda i, m: 1e-6 + m * 1e-9, "allreduce": lambda i, m: 3e-6}
    d = campaign(tmp_path / "c", t, runs=6)
    campaign(d, {"bw": lambda i, m: 2 * (1e-6 + m * 1e-9), "allreduce": lambda i, m: 3e-6}, runs=6, cfg="B")
    code, out, err = cli("compare", d, "--json")
    assert code == 0, err
    rows = {(r["op"], r["msize"]): r for r in json.loads(out)}
    r = rows[("bw", 1024)]
    assert r["bandwidth_a_MBps"] == pytest.approx(64 * 1024 / (1e-6 + 1024e-9) / 1e6)
    assert r["bandwidth_change_pct"] == pytest.approx(-50.0)
    assert "bandwidth_a_MBps" not in rows[("allreduce", 8)]
    code, out, err = cli("compare", d)
    assert "bandwidth: A (A) vs B" in out and "-50.00%" in out and "the test," in out


# --- OSU / IMB exports of every new layout, read with ReFrame's sanity functions ---------------

TIMES = {"bw": lambda i, m: 1e-6 + m * 1e-9, "bibw": lambda i, m: 2e-6 + m * 1e-9,
         "mbw_mr": lambda i, m: 3e-6 + m * 1e-9, "multi_lat": lambda i, m: 4e-6,
         "pingping": lambda i, m: 5e-6, "sendrecv": lambda i, m: 6e-6, "exchange": lambda i, m: 8e-6,
         "iallreduce": lambda i, m: 4e-6, "iallreduce_overlap": lambda i, m: 7e-6,
         "ibarrier": lambda i, m: 2e-6, "ibarrier_overlap": lambda i, m: 6e-6,
         "put": lambda i, m: 1.5e-6, "put_bw": lambda i, m: 32e-6, "cas": lambda i, m: 2.5e-6,
         "allreduce_init": lambda i, m: 3e-6, "neighbor_alltoall": lambda i, m: 3.5e-6,
         "synbw": lambda i, m: m * 1e-9, "idelay": lambda i, m: 1e-6}
OV = {"iallreduce_overlap": lambda i, m: _ov(5e-6, 5e-6, 4e-6), "ibarrier_overlap": lambda i, m: _ov(5e-6, 5e-6, 2e-6)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("exp")
    camp = campaign(d / "camp", TIMES, overlap=OV)
    assert main(["export", str(camp), "--osu", str(d / "osu"), "--imb", str(d / "imb")]) == 0
    return d


def _f(d, name):
    return str(d / f"{name}.A.np4.txt")


def test_osu_p2p_layouts(exported):
    osu = exported / "osu"
    for op, title, factor in (("bw", "Bandwidth", 64), ("bibw", "Bi-Directional Bandwidth", 128)):
        f = _f(osu, f"osu_{op}")
        assert sn.evaluate(sn.assert_found(rf"^# OSU MPI {title} Test v7\.4$", f))
        assert sn.evaluate(sn.assert_found(r"^# Size\s+Bandwidth \(MB/s\)$", f))
        assert sn.evaluate(sn.assert_found(r"^# Datatype: MPI_CHAR\.$", f))
        for m in (8, 1024):
            bw = sn.evaluate(sn.extractsingle(rf"^{m}\s+(\S+)", f, 1, float))      # ReFrame's osu_bw pattern
            assert bw == round(factor * m / TIMES[op](0, m) / 1e6, 2)
    f = _f(osu, "osu_mbw_mr")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI Multiple Bandwidth / Message Rate Test v7\.4$", f))
    assert sn.evaluate(sn.extractsingle(r"^# \[ pairs: (\d+) \] \[ window size: (\d+) \]", f, [1, 2], [int, int])) \
        == (2, 64)
    assert sn.evaluate(sn.assert_found(r"^# Size\s+MB/s\s+Messages/s$", f))
    mb, rate = sn.evaluate(sn.extractsingle(r"^1024\s+(\S+)\s+(\S+)$", f, [1, 2], [float, float]))
    t = TIMES["mbw_mr"](0, 1024)
    assert (mb, rate) == (round(128 * 1024 / t / 1e6, 2), round(128 / t, 2))
    f = _f(osu, "osu_multi_lat")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI Multi Latency Test v7\.4$", f))
    assert sn.evaluate(sn.assert_found(r"^# Size\s+Avg Latency\(us\)$", f))
    assert sn.evaluate(sn.extractsingle(r"^8\s+(\S+)", f, 1, float)) == 2.0          # half the round trip


def test_osu_nbc_layouts(exported):
    f = _f(exported / "osu", "osu_iallreduce")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI Non-blocking Allreduce Latency Test v7\.4$", f))
    assert sn.evaluate(sn.assert_found(r"^# Overall = Coll\. Init \+ Compute \+ MPI_Test \+ MPI_Wait$", f))
    assert sn.evaluate(sn.assert_found(r"^# Size\s+Overall\(us\)\s+Compute\(us\)\s+Pure Comm\.\(us\)\s+Overlap\(%\)$", f))
    row = sn.evaluate(sn.extractsingle(r"^1024\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4], [float] * 4))
    assert row == (7.0, 5.0, 4.0, 50.0)
    f = _f(exported / "osu", "osu_ibarrier")
    assert sn.evaluate(sn.assert_found(r"^# Overall\(us\)\s+Compute\(us\)\s+Pure Comm\.\(us\)\s+Overlap\(%\)$", f))
    rows = sn.evaluate(sn.extractall(r"^\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4], [float] * 4))
    assert rows[0] == (6.0, 5.0, 2.0, 50.0)


def test_osu_rma_persistent_neighbor_layouts(exported):
    osu = exported / "osu"
    f = _f(osu, "osu_put_latency")
    for line in (r"^# OSU MPI_Put Latency Test v7\.4$", r"^# Window creation: MPI_Win_create$",
                 r"^# Synchronization: MPI_Win_lock/unlock$", r"^# Datatype: MPI_CHAR\.$", r"^# Size\s+Latency \(us\)$"):
        assert sn.evaluate(sn.assert_found(line, f)), line
    assert sn.evaluate(sn.extractsingle(r"^8\s+(\S+)", f, 1, float)) == 1.5
    f = _f(osu, "osu_put_bw")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI_Put Bandwidth Test v7\.4$", f))
    assert sn.evaluate(sn.assert_found(r"^# Size\s+Bandwidth \(MB/s\)$", f))
    assert sn.evaluate(sn.extractsingle(r"^1024\s+(\S+)", f, 1, float)) == round(64 * 1024 / 32e-6 / 1e6, 2)
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI_Compare_and_swap latency Test v7\.4$", _f(osu, "osu_cas_latency")))
    f = _f(osu, "osu_allreduce_persistent")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI Allreduce Persistent Latency Test v7\.4$", f))
    assert sn.evaluate(sn.extractsingle(r"^8\s+(\S+)", f, 1, float)) == 3.0
    f = _f(osu, "osu_neighbor_alltoall")
    assert sn.evaluate(sn.assert_found(r"^# OSU MPI Neighborhood Alltoall Latency Test v7\.4$", f))
    assert sn.evaluate(sn.extractsingle(r"^8\s+(\S+)", f, 1, float)) == 3.5


def test_imb_layouts(exported):
    imb = exported / "imb"
    f = _f(imb, "IMB-MPI1_PingPing")
    assert sn.evaluate(sn.assert_found(r"^# Benchmarking PingPing", f))
    assert sn.evaluate(sn.assert_found(r"^\s+#bytes\s+#repetitions\s+t\[usec\]\s+Mbytes/sec$", f))
    assert sn.evaluate(sn.extractsingle(r"^\s+1024\s+\d+\s+(\S+)\s+(\S+)$", f, [1, 2], [float, float])) == \
        (5.0, round(1024 / 5.0, 2))
    for name, t, k in (("Sendrecv", 6.0, 2), ("Exchange", 8.0, 4)):
        f = _f(imb, f"IMB-MPI1_{name}")
        assert sn.evaluate(sn.assert_found(r"^\s+#bytes\s+#repetitions\s+t_min\[usec\]\s+t_max\[usec\]\s+"
                                           r"t_avg\[usec\]\s+Mbytes/sec$", f))
        row = sn.evaluate(sn.extractsingle(r"^\s+1024\s+\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4],
                                           [float] * 4))
        assert row == (t, t, t, round(k * 1024 / t, 2))
    f = _f(imb, "IMB-NBC_Iallreduce")
    assert sn.evaluate(sn.assert_found(r"^#    Intel\(R\) MPI Benchmarks 2021\.11, MPI-NBC part", f))
    assert sn.evaluate(sn.assert_found(r"^\s+#bytes\s+#repetitions\s+t_ovrl\[usec\]\s+t_pure\[usec\]\s+"
                                       r"t_CPU\[usec\]\s+overlap\[%\]$", f))
    row = sn.evaluate(sn.extractsingle(r"^\s+1024\s+\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4], [float] * 4))
    assert row == (7.0, 4.0, 5.0, 40.0)               # IMB's overlap: (4 + 5 - 7) / max(4, 5)
    f = _f(imb, "IMB-NBC_Ibarrier")
    assert sn.evaluate(sn.assert_found(r"^\s+#repetitions\s+t_ovrl\[usec\]", f))
    f = _f(imb, "IMB-RMA_Unidir_put")
    assert sn.evaluate(sn.assert_found(r"^#    MODE: NON-AGGREGATE", f))
    assert sn.evaluate(sn.extractsingle(r"^\s+8\s+\d+\s+(\S+)\s+(\S+)$", f, [1, 2], [float, float])) == \
        (1.5, round(8 / 1.5, 2))
    f = _f(imb, "IMB-RMA_Unidir_put_aggregate")
    assert sn.evaluate(sn.assert_found(r"^#    MODE: AGGREGATE", f))
    assert sn.evaluate(sn.extractsingle(r"^\s+1024\s+\d+\s+(\S+)\s+(\S+)$", f, [1, 2], [float, float])) == \
        (0.5, round(1024 / 0.5, 2))                  # 32 us / 64 puts
    assert sn.evaluate(sn.assert_found(r"^# Benchmarking Compare_and_swap", _f(imb, "IMB-RMA_Compare_and_swap")))
    assert sn.evaluate(sn.assert_found(r"^# Benchmarking Allreduce_persist_pure", _f(imb, "IMB-MPI4_Allreduce_persist_pure")))


def test_export_skips_ops_without_counterpart(cli, tmp_path):
    camp = campaign(tmp_path / "c", {"bw": TIMES["bw"], "synbw": TIMES["synbw"], "idelay": TIMES["idelay"]})
    code, out, err = cli("export", camp, "--osu", tmp_path / "osu")
    assert code == 0 and [p.name for p in (tmp_path / "osu").iterdir()] == ["osu_bw.A.np4.txt"]
    assert "mpitempo: note: not exported as OSU text: idelay, synbw (no OSU Micro-Benchmarks 7.4 counterpart)" in err
    code, out, err = cli("export", camp, "--osu", tmp_path / "o2", "--op", "synbw,idelay")
    assert code == 2 and "nothing to export as OSU/IMB text" in err and not (tmp_path / "o2").exists()


def test_report_has_the_new_plots_only_with_the_ops(tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.present.report import build_report

    with_ops = build_report(open_campaign(campaign(tmp_path / "a", {k: TIMES[k] for k in ("bw", "iallreduce",
                                                                                        "iallreduce_overlap")},
                                                   overlap=OV)))
    assert "<h2>Bandwidth vs message size</h2>" in with_ops and "<h2>Overlap vs message size</h2>" in with_ops
    assert 'alt="bandwidth vs size, bw"' in with_ops and 'alt="overlap vs size, iallreduce_overlap"' in with_ops
    without = build_report(open_campaign(campaign(tmp_path / "b", {"allreduce": TIMES["multi_lat"]})))
    assert "Bandwidth vs message size" not in without and "Overlap vs message size" not in without
