"""Adaptive repetitions with real mpiruns (docs/methods.md, "Adaptive repetitions"): the core's
stopping rule and what it records, the files it writes in blocks (measurements, per-rank data), the
runner's added mpiruns and their record, the budget's estimate and refusal, and the C parser reading
the same precision strings as the Python one."""
from __future__ import annotations

import csv
import json
import struct
import subprocess
from pathlib import Path

import pytest

from percent_cases import PERCENT_CASES
from test_core_mpi import read_rows, run_bench

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("text,want", PERCENT_CASES)
def test_c_reads_precision_as_python_does(build, text, want):
    r = subprocess.run([build.binary(), "--check-args", "--precision", text], capture_output=True, text=True)
    if want is None:
        assert r.returncode == 2 and "invalid --precision" in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["options"]["precision"] == pytest.approx(want)


def _bench(build, tmp_path: Path, args: list[str]) -> Path:
    """A 2-rank mpitempo-bench run into tmp_path/r, which must succeed."""
    out = tmp_path / "r"
    out.mkdir()
    r = run_bench(build, 2, args, out)
    assert r.returncode == 0, r.stderr
    return out


def _exps(d: Path) -> list[dict]:
    return json.loads((d / "meta.json").read_text())["experiments"]


def test_core_stops_between_floor_and_cap_and_records_why(build, tmp_path):
    out = _bench(build, tmp_path, ["--ops", "allreduce,bcast", "--msizes", "8,64K", "--precision", "2%", "--nrep", "160",
                             "--nrep-min", "20"])
    meta = json.loads((out / "meta.json").read_text())
    ad = meta["scheme"]["adaptive"]
    assert ad["looks"] == [20, 40, 80, 160] and ad["ci_level"] == pytest.approx(1 - 0.05 / 4)
    rows = read_rows(out)
    for e in meta["experiments"]:
        assert e["stop"] in ("precision", "cap", "time") and e["measurements"] in ad["looks"], e
        assert e["looks"] == ad["looks"].index(e["measurements"]) + 1
        if e["stop"] == "precision":
            assert e["ci_rel"] <= 0.02
        elif e["stop"] == "cap":
            assert e["measurements"] == 160 and (e["ci_rel"] is None or e["ci_rel"] > 0.02)
        mine = [x for x in rows if x["op"] == e["op"] and int(x["msize"]) == e["msize"]]
        # every block's rows are written once, numbered 0..n-1 in order
        assert [int(x["rep"]) for x in mine] == list(range(e["measurements"]))


def test_time_limit_stops_at_the_early_look(build, tmp_path):
    # 1 us of measuring per experiment: the floor of 20 would take longer, so the rule stops at the early
    # look before it (10 = min_valid, whose interval exists at 1 - 0.05/6), on time only
    out = _bench(build, tmp_path, ["--ops", "delay", "--delay", "50us,20us", "--msizes", "8", "--precision", "0.01%",
                             "--nrep", "1000", "--nrep-min", "20", "--exp-time", "1us"])
    ad = json.loads((out / "meta.json").read_text())["scheme"]["adaptive"]
    assert ad["early_look"] == 10 and ad["looks"][:2] == [10, 20] and ad["nrep_min"] == 20
    assert ad["ci_level"] == pytest.approx(1 - 0.05 / len(ad["looks"]))
    (e,) = _exps(out)
    assert e["measurements"] == 10 and e["looks"] == 1 and e["stop"] == "time", e


def test_early_look_never_stops_on_precision(build, tmp_path):
    # a generous time limit: the early look is made but only time may stop there, so the floor is measured
    out = _bench(build, tmp_path, ["--ops", "delay", "--delay", "20us,20us", "--msizes", "8", "--precision", "50%",
                             "--nrep", "100", "--nrep-min", "20", "--exp-time", "60s"])
    (e,) = _exps(out)
    assert e["measurements"] >= 20 and e["looks"] >= 2, e
    assert json.loads((out / "meta.json").read_text())["scheme"]["adaptive"]["early_look"] == 10


def test_precision_off_measures_exactly_nrep(build, tmp_path):
    out = _bench(build, tmp_path, ["--ops", "allreduce", "--msizes", "8", "--nrep", "37"])
    (e,) = _exps(out)
    assert e["stop"] == "fixed" and e["measurements"] == 37 and "looks" not in e
    assert "adaptive" not in json.loads((out / "meta.json").read_text())["scheme"]


def test_per_rank_and_timestamps_are_whole_across_blocks(build, tmp_path):
    out = _bench(build, tmp_path, ["--ops", "allreduce,bcast", "--msizes", "8", "--precision", "0.01%", "--nrep", "80",
                             "--nrep-min", "20", "--per-rank", "--scheme", "window", "--timestamps"])
    exps = _exps(out)
    n = sum(e["measurements"] for e in exps)
    assert all(e["measurements"] in (20, 40, 80) for e in exps)
    with open(out / "perrank.bin", "rb") as f:
        head = f.read(48)
    assert struct.unpack_from("<Q", head, 32)[0] == n
    with open(out / "timestamps.csv") as f:
        ts = list(csv.DictReader(f))
    assert len(ts) == 2 * n
    for e in exps:   # per rank, the measurements of the experiment in order and each once
        for q in ("0", "1"):
            reps = [int(t["rep"]) for t in ts if t["op"] == e["op"] and t["rank"] == q]
            assert reps == list(range(e["measurements"]))
            starts = [float(t["start_s"]) for t in ts if t["op"] == e["op"] and t["rank"] == q]
            assert starts == sorted(starts)   # the blocks are put together in time order


def _mt(*args, cwd=None):
    return subprocess.run(["mpitempo", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=900)


def test_runner_adds_mpiruns_until_the_cap_and_records_it(build, tmp_path):
    out = tmp_path / "c"
    # 0.01% is out of reach of 2 ranks on any machine: looks 3, 5, 8, 9 all run
    r = _mt("run", "--ops", "allreduce", "--msizes", "8", "--precision", "0.01%", "--nrep", "40", "--mpiruns", "3",
            "--max-mpiruns", "9", "-o", out, "--no-summary")
    assert r.returncode == 0, r.stderr
    rec = json.loads((out / "adaptive.json").read_text())
    assert rec["looks"] == [3, 5, 8, 9] and rec["stopped"] == "cap"
    assert [x["look"] for x in rec["rounds"]] == [5, 8, 9] and all(x["run"] for x in rec["rounds"])
    assert len([d for d in (out / "runs").iterdir() if (d / "meta.json").exists()]) == 9
    assert len(json.loads((out / "order.json").read_text())) == 9
    s = json.loads(_mt("summary", out, "--json").stdout)
    (row,) = s
    assert row["runs"] == 9 and row["stop"] == "cap" and row["precision"] == pytest.approx(1e-4)
    assert row["ci_level"] == pytest.approx(1 - 0.05 / 4) and sum(row["stop_reps"].values()) == 9


def test_runner_stops_at_the_first_look_with_an_interval_that_is_precise(build, tmp_path):
    out = tmp_path / "c"
    # 50% is reached as soon as an interval exists at 98.75% (8 run medians: looks 3, 5, 8)
    r = _mt("run", "--ops", "allreduce", "--msizes", "8", "--precision", "50%", "--nrep", "40", "--mpiruns", "3",
            "--max-mpiruns", "9", "-o", out, "--no-summary")
    assert r.returncode == 0, r.stderr
    rec = json.loads((out / "adaptive.json").read_text())
    row = json.loads(_mt("summary", out, "--json").stdout)[0]
    if row["ci_rel"] is not None and row["ci_rel"] <= 0.5:
        assert rec["stopped"] == "precision" and row["runs"] == 8 and row["stop"] == "precision"
    else:   # a machine so loaded that the extremes of 8 runs differ by more than 50% of their median
        assert rec["stopped"] == "cap" and row["runs"] == 9


def test_estimate_creates_nothing_and_budget_refuses_what_cannot_fit(build, tmp_path):
    out = tmp_path / "c"
    r = _mt("run", "--ops", "allreduce", "--msizes", "8", "--mpiruns", "2", "--estimate", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "mpitempo: estimate " in r.stderr and "calibrated in" in r.stderr and not out.exists()
    # 1000 mpiruns cannot fit 2 s
    r = _mt("run", "--ops", "allreduce", "--msizes", "8", "--mpiruns", "1000", "--budget", "2s", "-o", out)
    assert r.returncode == 2 and "does not fit this campaign" in r.stderr and not out.exists(), r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("mpitempo: error")]
    assert len(lines) == 1


def test_budget_names_the_mpiruns_it_left_out(build, tmp_path):
    out = tmp_path / "c"
    # the floor fits a generous budget; the campaign then runs within it, named if cut
    r = _mt("run", "--ops", "allreduce", "--msizes", "8", "--mpiruns", "3", "--budget", "5m", "-o", out, "--no-summary")
    assert r.returncode == 0, r.stderr
    assert "mpitempo: estimate " in r.stderr
    assert "budget ran out" not in r.stderr
    assert len(list((out / "runs").iterdir())) == 3


@pytest.mark.parametrize("cmd", [["clocks", "-n", "2", "--algorithms", "skampi"],
                                 ["tree", "-n", "2", "--ncalls", "20"]])
def test_other_kinds_estimate_and_refuse(build, tmp_path, cmd):
    out = tmp_path / "o"
    r = _mt(*cmd, "--mpiruns", "2", "--estimate", "-o", out)
    assert r.returncode == 0 and "calibrated with one mpirun" in r.stderr and not out.exists(), r.stderr
    r = _mt(*cmd, "--mpiruns", "5000", "--budget", "3s", "-o", out)
    assert r.returncode == 2 and "does not fit this campaign" in r.stderr and not out.exists(), r.stderr


def test_barrier_study_estimates_both_campaigns_and_refuses_what_cannot_fit(build, tmp_path):
    out = tmp_path / "b"
    base = ["barrier", "-n", "2", "--algorithms", "barrier", "--no-native", "--nrep", "20", "--logp-nrep", "20"]
    r = _mt(*base, "--mpiruns", "2", "--estimate", "-o", out)
    assert r.returncode == 0 and not out.exists(), r.stderr
    assert "barrier campaign: estimate" in r.stderr and "logp campaign: estimate" in r.stderr
    assert "in all" in r.stderr
    r = _mt(*base, "--mpiruns", "5000", "--budget", "3s", "-o", out)
    assert r.returncode == 2 and "does not fit this study" in r.stderr and not out.exists(), r.stderr
    # a study continues as it was started: no budget with --resume
    r = _mt("barrier", "--resume", tmp_path / "none", "--budget", "5s")
    assert r.returncode == 2 and "without --budget" in r.stderr, r.stderr


@pytest.mark.parametrize("delay,want", [("3ms", 1), ("20us", 10)])
def test_inner_min_time_times_long_calls_one_by_one(build, tmp_path, delay, want):
    # a 3 ms call is longer than 1 ms: one call per measurement; a 20 us call: --inner of them (50 would
    # make 1 ms, capped at --inner 10)
    out = _bench(build, tmp_path, ["--ops", "delay", "--delay", delay, "--msizes", "8", "--scheme", "loop",
                                   "--inner", "10", "--inner-min-time", "1ms", "--nrep", "12", "--warmup", "3"])
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scheme"]["inner"] == 10 and meta["scheme"]["inner_min_time_s"] == pytest.approx(1e-3)
    (e,) = meta["experiments"]
    assert e["inner"] == want and e["warmup_calls"] == 3 + 2, e
    # the runtime is per call either way
    lo = 3e-3 if want == 1 else 20e-6
    assert e["median_s"] >= lo * 0.99, e


def test_inner_min_time_belongs_to_the_loop_scheme(build, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "8", "--scheme", "barrier", "--inner-min-time", "1ms",
                             "--nrep", "5"], out)
    assert r.returncode == 2 and "--inner-min-time" in r.stderr and "loop" in r.stderr, r.stderr


@pytest.mark.load_sensitive     # a preempted 20 us call could look long enough to cut the warm-up
@pytest.mark.parametrize("delay,lo,hi", [("3ms", 2, 3), ("20us", 10, 10)])
def test_warmup_max_time_cuts_the_warmup_of_long_calls(build, tmp_path, delay, lo, hi):
    # --warmup 10 of 3 ms calls would take 30 ms: within 10 ms, floor(10 / 3) = 3 calls (2 when the faster of
    # the two timed calls took more than 3.33 ms); 20 us calls: all 10
    out = _bench(build, tmp_path, ["--ops", "delay", "--delay", delay, "--msizes", "8", "--scheme", "barrier",
                                   "--nrep", "12", "--warmup", "10", "--warmup-max-time", "10ms"])
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scheme"]["warmup"] == 10 and meta["scheme"]["warmup_max_time_s"] == pytest.approx(0.01)
    (e,) = meta["experiments"]
    assert lo <= e["warmup_calls"] <= hi, e


def test_warmup_max_time_limits_a_fixed_warmup_only(build, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "8", "--warmup", "auto", "--warmup-max-time", "5ms",
                             "--nrep", "5"], out)
    assert r.returncode == 2 and "--warmup-max-time limits a fixed --warmup N" in r.stderr, r.stderr
    assert not (out / "meta.json").exists()
