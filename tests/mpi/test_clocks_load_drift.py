"""No drift lost silently at any load (docs/clocks.md, "Verified at the end"): on 2 ranks, with 0, 1x and
2x the cores of busy processes started by the test, a drift of 0.5 ppm is either kept (the model's drift
within the horizon's bound: its error times the horizon within the stated 2 µs) or the rank is flagged
(below_accuracy, sync_inaccurate), for HCA, HCA2, HCA3, JK and a hierarchy, with the fixed (ci=0) and the
adaptive window. The drift comes from the simulated clock (exact truth) and, for HCA3 and JK, from the OS
(libfaketime's rate behind bench/os_clock_wrap.sh: the truth is the measured offset at the end).

The assertions are keep-or-flag statements, which hold at any load: they never ask for an accuracy, only
that an inaccurate clock says so. Each fails on the code before the horizon-based bound: a dropped
0.5 ppm drift had |slope| + z SE < 2 ppm and was not flagged."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mpitempo.runner.launch import make_launch, ncores

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
WRAP = ROOT / "bench" / "os_clock_wrap.sh"
LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
SPECS = "hca3:ci=0,hca3,hca2:ci=0,hca2,hca,jk:ci=0,jk,h[block=1]:hca3:ci=0/jk"
HORIZON = 5.0            # s: the bound is 2 us / 5 s = 0.4 ppm, below the injected 0.5 ppm
ACCURACY = 2e-6


def _run(build, cmd, env_extra=None):
    launch = make_launch(build, 2, cmd)
    env = dict(os.environ, **launch.env, **(env_extra or {}))
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


@pytest.mark.parametrize("factor", [0, 1, 2])
def test_sim_drift_kept_or_flagged_under_load(build, busy, factor):
    """Under load the offsets wander across fit windows: a kept slope's stated uncertainty includes the
    windows' disagreement (mt_window_disagreement), so a slope kept further off than the horizon's bound
    flags the rank. Failed before at load 1x-2x (HCA3 kept 0.967 ppm for a true 0.5 with 0.138 ppm
    stated, unflagged)."""
    busy(factor * ncores())
    rows, err = _run(build, [build.binary("mpitempo-clocks"), "--expect-np", "2", "--algorithms", SPECS,
                             "--wait", f"0,{HORIZON:g}", "--sim-offsets", "0,0.73", "--sim-drifts", "0,0.5"])
    seen = set()
    for r in rows:
        if r["wait_s"] != HORIZON:
            continue
        seen.add(r["algorithm"])
        p1 = r["per_rank"][1]
        assert r["horizon_s"] == HORIZON and abs(r["drift_bound_ppm"] - 0.4) < 1e-9, r
        err_ppm = abs(p1["drift_ppm"] - p1["true_drift_ppm"])
        what = (f"load {_load():.1f}, {factor * ncores()} busy", r["algorithm"], p1["slope"], p1["drift_ppm"],
                p1["drift_unc_ppm"], p1["refits"])
        # keep or flag: a rank whose drift error exceeds the bound of its horizon is flagged
        if err_ppm > r["drift_bound_ppm"]:
            assert p1["below_accuracy"] and r["sync_inaccurate"] and r["below_accuracy_ranks"] >= 1, what
        # the error measured at the end beyond the stated accuracy is always flagged
        if r["max_abs_offset_s"] > ACCURACY:
            assert r["sync_inaccurate"], (what, r["max_abs_offset_s"])
        # refits stay within their cap
        assert 0 <= p1["refits"] <= 2, what
    assert len(seen) == len(SPECS.split(",")), seen


@pytest.mark.parametrize("alg", ["hca3:ci=0", "jk"])
def test_os_drift_kept_or_flagged_under_load(build, busy, alg):
    """Real drift (libfaketime: rank 1's CLOCK_MONOTONIC 0.5 ppm fast) with 2x the cores of busy processes:
    a rank that is not flagged is within the stated accuracy at the horizon, give or take what the check
    itself sees on a loaded machine (up to 1.5 us when both ranks share a core: docs/clocks.md); a dropped
    0.5 ppm is 5 us after 10 s."""
    if not Path(LIB).exists():
        pytest.skip("libfaketime is not installed (apt-get install -y faketime libfaketime)")
    busy(2 * ncores())
    rows, err = _run(build, [str(WRAP), build.binary("mpitempo-clocks"), "--expect-np", "2", "--algorithms", alg,
                             "--wait", "0,10"], {"MT_OS_DRIFTS_PPM": "0,0.5", "MT_OS_OFFSETS_S": "0,0.002"})
    end = [r for r in rows if r["wait_s"] == 10][0]
    p1 = end["per_rank"][1]
    assert end["drift_bound_ppm"] == pytest.approx(0.2)
    if not end["sync_inaccurate"]:
        assert abs(p1["offset_s"]) <= ACCURACY + 1.5e-6, (f"load {_load():.1f}", alg, p1)
    if abs(p1["offset_s"]) > ACCURACY:
        assert end["sync_inaccurate"], (alg, p1)


@pytest.mark.parametrize("factor", [0, 2])
def test_bench_end_check_flags_a_lost_drift(build, busy, tmp_path, factor):
    """mpitempo-bench: the end-of-run check is in meta.json with its cost, and a drift the model does not
    have (slope=zero: 20 ppm over a run of ~1 s and more) is flagged from the error measured at the end,
    with the threshold named; with the drift modelled (hca3) the end error is what is stated."""
    busy(factor * ncores())
    for spec, drift in (("hca3:slope=zero", "20"), ("hca3", "0.5")):
        out = tmp_path / spec.replace(":", "_").replace("=", "_")
        out.mkdir()
        cmd = [build.binary(), "--sync", spec, "--scheme", "roundtime", "--ops", "allreduce", "--msizes", "8",
               "--nrep", "3000", "--quiet", "--outdir", str(out), "--sim-drifts", f"0,{drift}"]
        launch = make_launch(build, 2, cmd)
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=dict(os.environ, **launch.env), timeout=600)
        assert r.returncode == 0, r.stderr
        clk = json.loads((out / "meta.json").read_text())["clock"]
        qe = clk["quality_end"]
        assert len(qe["offset_per_rank_s"]) == 2 and qe["offset_per_rank_s"][0] == 0
        assert qe["max_abs_offset_s"] == pytest.approx(abs(qe["offset_per_rank_s"][1]))
        assert qe["threshold_of"] in ("stated_accuracy", "slack") and 0 < qe["threshold_s"] <= ACCURACY
        assert qe["duration_s"] > 0 and qe["horizon_s"] > 0 and 1 <= qe["tries"] <= 5
        assert clk["accuracy_s"] >= qe["max_abs_offset_s"] and clk["drift_bound_ppm"] > 0
        if qe["max_abs_offset_s"] > qe["threshold_s"]:
            assert clk["sync_inaccurate"] and qe["inaccurate_ranks"] == 1 and "clock check at the end" in r.stderr
        if spec == "hca3:slope=zero":
            # 20 ppm unmodelled: the rank's drift is unresolved for any horizon >= 0.1 s, and so flagged
            assert clk["drift_unc_ppm_per_rank"][1] > 10 and clk["sync_inaccurate"], clk
        else:
            assert clk["refits_per_rank"][0] == 0 and 0 <= clk["refits_per_rank"][1] <= 2


def test_long_run_checks_at_intervals_and_resyncs(build, tmp_path):
    """A run longer than MT_CHECK_EVERY_S (10 s) checks its clocks between experiments; a rank off by more
    than the threshold (slope=zero leaves a 3 ppm drift unmodelled: 30 us after 10 s) makes everyone
    re-synchronise, recorded in clock.checks; the end check and the drift bound then use the horizon from
    the re-sync. Fails without the checks: no clock.checks, and the end error is 40 us instead of ~6."""
    sizes = ",".join(str(8 << i) for i in range(12))
    cmd = [build.binary(), "--sync", "hca3:slope=zero", "--scheme", "roundtime", "--ops", "allreduce", "--msizes",
           sizes, "--nrep", "100000", "--quiet", "--outdir", str(tmp_path), "--sim-drifts", "0,3"]
    launch = make_launch(build, 2, cmd)
    r = subprocess.run(launch.argv, capture_output=True, text=True, env=dict(os.environ, **launch.env), timeout=600)
    assert r.returncode == 0, r.stderr
    clk = json.loads((tmp_path / "meta.json").read_text())["clock"]
    qe = clk["quality_end"]
    if qe["run_s"] < 10.5:
        pytest.skip(f"the run took {qe['run_s']:.1f} s, less than the check interval of 10 s")
    assert clk["check_every_s"] == 10 and clk["checks_total"] >= 1
    first = clk["checks"][0]
    assert first["at_s"] >= 10 and first["max_abs_offset_s"] > 2e-6 and first["resynced"], clk["checks"]
    assert clk["resyncs_on_check"] >= 1 and clk["resyncs"] >= clk["resyncs_on_check"]
    assert "re-synchronised" in r.stderr
    assert qe["horizon_s"] < qe["run_s"] - 5 and clk["accuracy_s"] >= first["max_abs_offset_s"]
    assert clk["sync_inaccurate"]       # a rank was 30 us off at the check: the run says so
