"""Clock-based schemes (window, Round-Time) against a known truth, and their bad input."""
from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi


def run_bench(build, np, args, outdir=None, timeout=300, wrap=None):
    cmd = [build.binary()] + list(args) + (["--outdir", str(outdir)] if outdir else [])
    if wrap:
        cmd = wrap + cmd
    launch = make_launch(build, np, cmd)
    env = dict(os.environ, **launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)


def rows(d, name="measurements.csv"):
    with open(d / name) as f:
        return list(csv.DictReader(f))


def valid_runtimes(d, op):
    v = [float(r["runtime_s"]) for r in rows(d) if r["op"] == op and r["valid"] == "1"]
    assert v, f"no valid measurements of {op}"
    return v


def valid_median(d, op):
    return statistics.median(valid_runtimes(d, op))


@pytest.mark.parametrize("scheme", ["roundtime", "window"])
def test_delay_ground_truth(build, tmp_path, scheme):
    """Each rank busy-waits its own time: the runtime is max(delay) = 60 us."""
    slice_ = ["--time-slice", "2s"] if scheme == "roundtime" else []
    r = run_bench(build, 2, ["--ops", "delay", "--delay", "20us,60us", "--nrep", "200", "--scheme", scheme,
                             "--sync", "hca3", *slice_, "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    v = valid_runtimes(tmp_path, "delay")
    # never below the truth, and the undisturbed measurements hit it (the 1 us target at the
    # median is checked by bench/schemes.py on a quiet machine; here other jobs may preempt us)
    assert min(v) > 59e-6 and min(v) < 61e-6, min(v)
    assert statistics.median(v) < 120e-6, statistics.median(v)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["scheme"]["name"] == scheme and meta["clock"]["defaulted"] is False
    e = meta["experiments"][0]
    assert e["valid"] >= 50 and e["bcast_latency_s"] > 0


def test_late_rank_distorts_barrier_scheme_only(build, tmp_path):
    """A barrier that releases rank 1 30 us late inflates MS1's allreduce; Round-Time has no barrier."""
    res = {}
    for scheme in ("barrier", "roundtime"):
        d = tmp_path / scheme
        d.mkdir()
        r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "8", "--nrep", "200", "--scheme", scheme,
                                 "--barrier-skew", "1:30us", "--timer-reads", "1000"], d)
        assert r.returncode == 0, r.stderr
        v = valid_runtimes(d, "allreduce")
        res[scheme] = (min(v), statistics.median(v))
    assert all(x > 28e-6 for x in valid_runtimes(tmp_path / "barrier", "allreduce"))
    assert res["barrier"][0] > 28e-6, res                  # every MS1 measurement carries the 30 us skew
    assert res["roundtime"][0] < 10e-6, res                # the truth: a sub-10 us allreduce on 2 ranks
    rt = valid_runtimes(tmp_path / "roundtime", "allreduce")
    assert sum(x < 10e-6 for x in rt) >= len(rt) / 4, res  # many undistorted; none in MS1


def test_roundtime_time_slice_and_defaulted_sync(build, tmp_path):
    r = run_bench(build, 2, ["--ops", "bcast", "--msizes", "8,1K", "--nrep", "100000000", "--scheme", "roundtime",
                             "--time-slice", "200ms", "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "needs a global clock; synchronising with 'hca3'" in r.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["clock"]["defaulted"] is True
    for e in meta["experiments"]:
        assert 0.2 <= e["elapsed_s"] < 0.5, e      # ends at the slice (bench/schemes.py checks the 5%)
        # the slice ended it, not nrep (how many fit in 200 ms depends on the machine's load)
        assert 1 <= e["measurements"] < 100000000
    assert meta["scheme"]["time_slice_s"] == pytest.approx(0.2)


def test_timestamps(build, tmp_path):
    r = run_bench(build, 3, ["--ops", "allreduce", "--msizes", "8", "--nrep", "50", "--scheme", "roundtime",
                             "--timestamps", "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    ts = rows(tmp_path, "timestamps.csv")
    meas = rows(tmp_path)
    assert len(ts) == 3 * len(meas)
    by_rep = {}
    for t in ts:
        by_rep.setdefault(int(t["rep"]), []).append(t)
    for m in meas:
        group = by_rep[int(m["rep"])]
        assert sorted(int(t["rank"]) for t in group) == [0, 1, 2]
        start = min(float(t["start_s"]) for t in group)
        end = max(float(t["end_s"]) for t in group)
        assert float(m["runtime_s"]) == pytest.approx(end - start, rel=1e-6, abs=1e-9)


def test_too_few_valid_is_loud(build, tmp_path):
    """A window far too small for the operation: measurements are lost; the run
    says so on stderr, in meta.json and with exit code 3, unless allowed."""
    r = run_bench(build, 2, ["--ops", "delay", "--delay", "50us", "--nrep", "40", "--scheme", "window",
                             "--window", "5us", "--window-chunk", "40", "--min-valid", "30", "--timer-reads", "1000"],
                  tmp_path)
    assert r.returncode == 3, r.stderr
    assert "measurements are valid" in r.stderr and "try a larger --window" in r.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["experiments"][0]["too_few_valid"] is True
    assert meta["invalid_measurements"] > 0
    d2 = tmp_path / "allowed"
    d2.mkdir()
    r = run_bench(build, 2, ["--ops", "delay", "--delay", "50us", "--nrep", "40", "--scheme", "window",
                             "--window", "5us", "--window-chunk", "40", "--min-valid", "30", "--allow-few-valid",
                             "--timer-reads", "1000"], d2)
    assert r.returncode == 0 and "warning" in r.stderr


def test_window_outlier_pollutes_at_most_its_chunk(build, tmp_path):
    """With a generous window nearly everything is valid, and the chunked grid bounds losses."""
    r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "8", "--nrep", "300", "--scheme", "window",
                             "--window", "200us", "--window-chunk", "10", "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    v = [r_["valid"] for r_ in rows(tmp_path)]
    assert v.count("1") >= 150, v.count("1")
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["scheme"]["window_chunk"] == 10 and meta["experiments"][0]["window_s"] == pytest.approx(200e-6)


@pytest.mark.parametrize("args,msg", [
    (["--scheme", "roundtime", "--rt-slack", "0.5"], "B must be a number >= 1"),
    (["--scheme", "roundtime", "--time-slice", "0"], "invalid --time-slice '0': must be > 0"),
    (["--scheme", "roundtime", "--time-slice", "-1s"], "invalid --time-slice"),
    (["--scheme", "window", "--window", "0us"], "the window size must be > 0"),
    (["--scheme", "barrier", "--timestamps"], "--timestamps needs a scheme that times on the global clock"),
    (["--barrier-skew", "5:1us"], "rank 5 is not in the job"),
    (["--barrier-skew", "oops"], "expected RANK:TIME"),
])
def test_bad_input(build, tmp_path, args, msg):
    r = run_bench(build, 2, ["--ops", "allreduce"] + args, tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_timestamps_on_a_full_disk_fail_cleanly(build, tmp_path):
    """A real full disk: the output directory is a 16 KiB tmpfs (in a private mount
    namespace); the timestamps outgrow it. The core must say which file failed, exit
    non-zero, and leave no file that looks complete."""
    import shlex
    import shutil
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a small tmpfs in a private mount namespace")
    out = tmp_path / "small"
    out.mkdir()
    # 3000 valid rounds x 2 ranks x ~45 bytes of timestamps: far more than the 16 KiB disk
    cmd = [build.binary(), "--ops", "allreduce", "--msizes", "8", "--nrep", "3000", "--time-slice", "60s",
           "--scheme", "roundtime", "--timestamps", "--timer-reads", "1000", "--outdir", str(out)]
    launch = make_launch(build, 2, cmd)
    script = (f"mount -t tmpfs -o size=16k tmpfs {shlex.quote(str(out))} || exit 99; "
              f"{' '.join(shlex.quote(a) for a in launch.argv)}; echo \"rc=$?\"; ls -A {shlex.quote(str(out))}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **launch.env))
    if "rc=" not in r.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()[-200:]}")
    lines = r.stdout.strip().splitlines()
    rc_line = next(ln for ln in lines if ln.startswith("rc="))
    left = lines[lines.index(rc_line) + 1:]
    assert rc_line != "rc=0", r.stderr
    assert "timestamps.csv" in r.stderr and "No space left on device" in r.stderr, r.stderr
    assert not any(n in left for n in ("meta.json", "timestamps.csv", "measurements.csv")), left
    assert not any(n.endswith(".tmp") for n in left), left   # temporary files removed too


def test_imbalance_command(cli, build, tmp_path):
    out = tmp_path / "imb"
    # each library reads its own variable (MPICH's k-dissemination, Open MPI's bruck: the dissemination barrier)
    code, so, se = cli("imbalance", "--variants", "base;dissem:MPIR_CVAR_BARRIER_INTRA_ALGORITHM=k_dissemination,"
                       "OMPI_MCA_coll_tuned_barrier_algorithm=bruck",
                       "--nrep", "50", "--mpiruns", "2", "--time-slice", "1s", "-o", out, "--quiet", "--json")
    assert code == 0, se
    res = json.loads(so)
    assert [r["variant"] for r in res] == ["base", "dissem"]
    for r in res:
        assert r["runs"] == 2 and r["n"] >= 90 and r["nprocs"] == 2
        assert 0 <= r["median_skew_s"] <= r["p95_skew_s"] <= r["max_skew_s"]
        assert len(r["per_rank"]) == 2
    assert (out / "imbalance.png").stat().st_size > 1000
    meta = json.loads((out / "runs" / "dissem-000" / "meta.json").read_text())
    assert meta["environment"].get("MPIR_CVAR_BARRIER_INTRA_ALGORITHM") == "k_dissemination" or \
        meta["launch"]["launcher"]["env_added"].get("MPIR_CVAR_BARRIER_INTRA_ALGORITHM") == "k_dissemination"


def test_imbalance_bad_variants(cli, tmp_path):
    code, so, se = cli("imbalance", "--variants", "a;a", "-o", tmp_path / "x")
    assert code == 2 and "given twice" in se
