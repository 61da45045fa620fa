"""MPI integration tests: real mpiruns of the C core through the Python launcher."""
from __future__ import annotations

import csv
import json
import os
import subprocess

import pytest

from mpitempo.build import list_registry
from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi

ALL_OPS = ["barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather",
           "allgatherv", "alltoall", "alltoallv", "alltoallw", "reduce_scatter", "reduce_scatter_block", "scan",
           "exscan"]


def run_bench(build, np, args, outdir=None, timeout=300):
    cmd = [build.binary()] + list(args) + (["--outdir", str(outdir)] if outdir else [])
    launch = make_launch(build, np, cmd)
    env = dict(os.environ)
    env.update(launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)


def read_rows(d):
    with open(d / "measurements.csv") as f:
        return list(csv.DictReader(f))


# every op of each family of the registry (--list's "family")
FAMILIES = {
    "collective": ALL_OPS,
    "nbc": ["i" + o for o in ALL_OPS] + ["i" + o + "_overlap" for o in ALL_OPS],
    "persistent": [o + "_init" for o in ALL_OPS],
    "neighbor": [p + "neighbor_" + o for p in ("", "i") for o in ("allgather", "allgatherv", "alltoall", "alltoallv",
                                                                   "alltoallw")],
    "p2p": ["bw", "bibw", "mbw_mr", "multi_lat", "pingping", "sendrecv", "exchange", "bw_persistent",
            "bibw_persistent", "multi_lat_persistent"],
    "rma": ["put", "get", "acc", "get_acc", "fop", "cas", "put_bw", "get_bw", "put_bibw"],
    "synthetic": ["delay", "synbw", "idelay", "idelay_overlap", "idelay_blocking", "idelay_blocking_overlap"],
    "barrier-algorithm": ["barrier:central", "barrier:combining", "barrier:fway", "barrier:mcs", "barrier:tournament",
                          "barrier:bst", "barrier:butterfly", "barrier:pairwise", "barrier:dissemination"],
}


def test_registry_lists_every_collective(build):
    reg = list_registry(build)
    by_family: dict[str, list[str]] = {}
    for o in reg["ops"]:
        by_family.setdefault(o["family"], []).append(o["name"])
    assert {f: sorted(v) for f, v in by_family.items()} == {f: sorted(v) for f, v in FAMILIES.items()}
    assert all(o["available"] for o in reg["ops"] if o["family"] != "persistent")
    fam = {o["name"]: o for o in reg["ops"] if "param" in o}
    assert set(fam) == {"barrier:combining", "barrier:fway"} and all(o["param_min"] == 2 for o in fam.values())
    assert {t["name"] for t in reg["timers"]} == {"wtime", "monotonic", "monotonic_raw", "realtime",
                                                  "gettimeofday", "rdtscp"}


@pytest.mark.parametrize("np", [2, 4])
def test_every_op_of_every_family_runs(build, tmp_path, np):
    """Every available op beyond the blocking collectives, through the executable, with the default
    options: valid measurements, and bytes_per_call in meta.json as the op defines it."""
    reg = {o["name"]: o for o in list_registry(build)["ops"]}
    ops = [o for f, names in FAMILIES.items() if f not in ("collective", "barrier-algorithm") for o in names
           if reg[o]["available"]]
    # Open MPI 4: cas on an MPI_Win_allocate window (the default) crashes the library (ompi#11349,
    # docs/methods.md "Operations: rma"); its windows are made with MPI_Win_create there
    win = ["--rma-win", "create"] if "OpenRTE" in build.mpiexec_version else []
    r = run_bench(build, np, ["--ops", ",".join(ops), "--msizes", "8,4K", "--nrep", "10", "--warmup", "2",
                              "--delay", "5us", "--expect-np", str(np), "--timer-reads", "10000", *win], tmp_path,
                  timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = read_rows(tmp_path)
    assert {row["op"] for row in rows} == set(ops)
    assert all(row["valid"] == "1" and float(row["runtime_s"]) > 0 for row in rows)
    meta = json.loads((tmp_path / "meta.json").read_text())
    per = {(e["op"], e["msize"]): e for e in meta["experiments"]}
    pairs = np // 2
    assert per[("bw", 4096)]["bytes_per_call"] == 64 * 4096 and per[("bw", 4096)]["msgs_per_call"] == 64
    assert per[("bibw", 4096)]["bytes_per_call"] == 2 * 64 * 4096
    assert per[("bw_persistent", 4096)]["bytes_per_call"] == 64 * 4096
    assert per[("bibw_persistent", 4096)]["bytes_per_call"] == 2 * 64 * 4096
    assert per[("mbw_mr", 8)]["bytes_per_call"] == pairs * 64 * 8 and per[("mbw_mr", 8)]["msgs_per_call"] == pairs * 64
    assert per[("exchange", 4096)]["bytes_per_call"] == 4 * 4096
    assert per[("put_bw", 4096)]["bytes_per_call"] == 64 * 4096
    assert per[("synbw", 4096)]["bytes_per_call"] == 4096
    assert per[("allreduce_init", 8)]["bytes_per_call"] == 0 if "allreduce_init" in ops else True
    ov = per[("iallreduce_overlap", 4096)]["overlap"]
    assert ov["compute_target_s"] > 0 and ov["compute_median_s"] > 0 and ov["compute_calls"] > 0
    assert "overlap" not in per[("iallreduce", 4096)]
    assert meta["operation_params"]["bw_window"] == 64 and meta["operation_params"]["rma_sync"] == "flush"
    # whose time is the op's, what OSU divides a call by, the sync each one-sided op used
    assert per[("put_bibw", 4096)]["bytes_per_call"] == 2 * 64 * 4096
    assert per[("put_bibw", 8)]["rma_sync"] == "pscw" and per[("put", 8)]["rma_sync"] == "flush"
    assert per[("put", 8)]["timed_ranks"] == [0] and per[("put_bibw", 8)]["timed_ranks"] == [0, np // 2]
    assert per[("bw", 8)]["timed_ranks"] == [0, np // 2] and per[("pingping", 8)]["timed_ranks"] == [0, np // 2]
    assert per[("sendrecv", 8)]["timed_ranks"] == "all" and per[("allreduce_init", 8)]["timed_ranks"] == "all" \
        if "allreduce_init" in ops else True
    assert per[("multi_lat", 8)]["one_way_divisor"] == 2 and per[("put", 8)]["one_way_divisor"] == 1
    assert "rma_sync" not in per[("bw", 8)]


@pytest.mark.parametrize("np", [2, 4])
def test_zero_byte_messages(build, tmp_path, np):
    """0 B is a message of count 0, which every MPI call allows: every op of every family runs at 0 B
    (with --vcounts skewed every block is empty) and records count 0; a size below one element that
    is not 0 is still refused."""
    reg = {o["name"]: o for o in list_registry(build)["ops"]}
    ops = [o for f, names in FAMILIES.items() if f != "barrier-algorithm" for o in names if reg[o]["available"]]
    win = ["--rma-win", "create"] if "OpenRTE" in build.mpiexec_version else []
    r = run_bench(build, np, ["--ops", ",".join(ops), "--msizes", "0", "--nrep", "3", "--warmup", "1",
                              "--delay", "5us", "--vcounts", "skewed", "--expect-np", str(np), "--timer-reads", "1000",
                              *win], tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = read_rows(tmp_path)
    assert {row["op"] for row in rows} == set(ops) and {row["msize"] for row in rows} == {"0"}
    assert all(row["valid"] == "1" for row in rows)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert all(e["count"] == 0 and e["effective_bytes"] == 0 for e in meta["experiments"])


@pytest.mark.parametrize("np", [2, 4])
def test_every_op_runs_and_is_plausible(build, tmp_path, np):
    r = run_bench(build, np, ["--ops", ",".join(ALL_OPS), "--msizes", "8,4K", "--nrep", "20", "--warmup", "2",
                              "--seed", "11", "--expect-np", str(np), "--timer-reads", "10000"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path)
    seen = {}
    for row in rows:
        seen.setdefault((row["op"], int(row["msize"])), []).append(float(row["runtime_s"]))
        assert int(row["nprocs"]) == np and row["scheme"] == "barrier" and row["valid"] == "1"
    want = {(op, s) for op in ALL_OPS if op != "barrier" for s in (8, 4096)} | {("barrier", 0)}
    assert set(seen) == want
    for key, v in seen.items():
        assert len(v) == 20, key
        assert all(0 < x < 0.5 for x in v), (key, min(v), max(v))  # positive, and not absurd even oversubscribed
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["nprocs"] == np and len(meta["ranks"]) == np
    assert {x["rank"] for x in meta["ranks"]} == set(range(np))
    assert meta["seed"] == 11 and meta["timer"]["name"] == "monotonic"
    assert meta["timer"]["resolution_s"] > 0 and meta["timer"]["min_overhead_s"] >= 0
    assert "MPICH" in meta["mpi"]["library_version"] or "Open MPI" in meta["mpi"]["library_version"]
    assert len(meta["experiments"]) == len(want)
    # the shuffle is a permutation recorded in order of execution
    assert [e["exp"] for e in meta["experiments"]] == list(range(len(want)))
    if np <= (os.cpu_count() or 1):
        assert all(x["bound"] for x in meta["ranks"]), meta["ranks"]
    # no temporary files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measurements.csv", "meta.json"]


def test_shuffle_is_seeded(build, tmp_path):
    orders = []
    for i, seed in enumerate([5, 5, 6]):
        d = tmp_path / str(i)
        d.mkdir()
        r = run_bench(build, 2, ["--ops", "allreduce,bcast,reduce", "--msizes", "8-128", "--nrep", "2",
                                 "--seed", str(seed), "--timer-reads", "1000"], d)
        assert r.returncode == 0, r.stderr
        meta = json.loads((d / "meta.json").read_text())
        orders.append([(e["op"], e["msize"]) for e in meta["experiments"]])
    assert orders[0] == orders[1] and orders[0] != orders[2]
    assert sorted(orders[0]) == sorted(orders[2])


@pytest.mark.parametrize("timer", ["monotonic_raw", "realtime", "gettimeofday", "wtime", "rdtscp"])
def test_timers(build, tmp_path, timer):
    r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "64K", "--nrep", "10", "--timer", timer,
                             "--timer-reads", "10000"], tmp_path)
    if timer == "rdtscp" and r.returncode != 0:
        assert "rdtscp" in r.stderr and "refused" in r.stderr
        pytest.skip("rdtscp refused on this CPU: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    v = [float(x["runtime_s"]) for x in read_rows(tmp_path)]
    assert all(0 < x < 0.5 for x in v)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["timer"]["name"] == timer


def test_loop_scheme(build, tmp_path):
    r = run_bench(build, 2, ["--ops", "bcast", "--msizes", "8", "--nrep", "10", "--scheme", "loop", "--inner", "50",
                             "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path)
    assert len(rows) == 10 and all(x["scheme"] == "loop" and float(x["runtime_s"]) > 0 for x in rows)
    assert json.loads((tmp_path / "meta.json").read_text())["scheme"]["inner"] == 50


@pytest.mark.parametrize("args,msg", [
    (["--ops", "foo"], "unknown op 'foo' (allowed: barrier"),
    (["--timer", "sundial"], "unknown timer 'sundial'"),
    (["--scheme", "magic"], "unknown scheme 'magic'"),
    (["--msizes", "8,-8"], "invalid size '-8': sizes cannot be negative"),
    (["--msizes", "0,8,0"], "invalid --msizes '0,8,0': 0 B is listed twice"),
    (["--datatype", "int", "--msizes", "0,3"], "message size 3 B is smaller than one element of datatype 'int'"),
    (["--nrep", "0"], "invalid --nrep '0'"),
    (["--root", "7"], "invalid --root 7"),
    (["--datatype", "double", "--msizes", "4"], "message size 4 B is smaller than one element of datatype 'double'"),
])
def test_core_bad_input(build, tmp_path, args, msg):
    r = run_bench(build, 2, args, tmp_path)
    assert r.returncode != 0
    assert msg in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_op_needing_two_ranks(build, tmp_path):
    r = run_bench(build, 1, ["--ops", "exscan"], tmp_path)
    assert r.returncode != 0 and "op 'exscan' needs at least 2 ranks, but the job has 1" in r.stderr


def test_wrong_mpiexec_is_detected(build, tmp_path):
    # started without (or by a foreign) mpiexec, every rank sees a job of size 1
    r = subprocess.run([build.binary(), "--expect-np", "2", "--ops", "bcast"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, **make_launch(build, 1, ["x"]).env))
    assert r.returncode != 0 and "different MPI library" in r.stderr


def test_outdir_not_overwritten(build, tmp_path):
    r = run_bench(build, 2, ["--ops", "bcast", "--nrep", "2", "--timer-reads", "100"], tmp_path)
    assert r.returncode == 0
    before = (tmp_path / "measurements.csv").read_text()
    r = run_bench(build, 2, ["--ops", "bcast", "--nrep", "2", "--timer-reads", "100"], tmp_path)
    assert r.returncode != 0 and "already holds results" in r.stderr
    assert (tmp_path / "measurements.csv").read_text() == before


def test_timer_cache_reused_only_with_its_key(build, tmp_path):
    """--timer-cache: the first mpirun studies the timer and writes the file, the next one with the
    same key (hosts, boot, binding, timer, reads, clock source, executable) reuses it and says so
    in meta.json; another number of reads or another timer is a different key: studied again."""
    cache = tmp_path / "timer-study.txt"
    metas = []
    for i, extra in enumerate([[], [], ["--timer-reads", "2000"], ["--timer", "monotonic_raw"]]):
        d = tmp_path / f"r{i}"
        d.mkdir()
        args = ["--ops", "bcast", "--nrep", "2", "--timer-reads", "1000", *extra, "--timer-cache", str(cache)]
        r = run_bench(build, 2, args, d)
        assert r.returncode == 0, r.stderr
        metas.append(json.loads((d / "meta.json").read_text())["timer"])
        assert cache.read_text().startswith("mpitempo-timer-study 1\n")
    assert [m["study_cached"] for m in metas] == [False, True, False, False]
    assert metas[1]["study_from"].startswith("default run 0 ")
    assert metas[1]["resolution_s"] == metas[0]["resolution_s"] and metas[1]["study_reads"] == 1000
    assert metas[2]["study_reads"] == 2000 and metas[3]["name"] == "monotonic_raw"
    # a damaged file is not reused (studied again and rewritten)
    cache.write_text("mpitempo-timer-study 1\nkey 0\n")
    d = tmp_path / "r-damaged"
    d.mkdir()
    r = run_bench(build, 2, ["--ops", "bcast", "--nrep", "2", "--timer-reads", "1000", "--timer-cache", str(cache)], d)
    assert r.returncode == 0 and not json.loads((d / "meta.json").read_text())["timer"]["study_cached"]
    assert "values 1000 " in cache.read_text() and not list(tmp_path.glob("*.tmp"))


def test_timer_cache_bad_input(build, tmp_path):
    r = run_bench(build, 2, ["--ops", "bcast", "--timer-cache", ""], tmp_path)
    assert r.returncode != 0 and "--timer-cache needs a file name" in r.stderr
    r = subprocess.run([build.binary("mpitempo-pingpong"), "--timer-cache", "x"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "runs no timer study" in r.stderr


def test_campaign_end_to_end(cli, build, tmp_path):
    out = tmp_path / "camp"
    code, so, se = cli("run", "--ops", "allreduce,barrier", "--msizes", "8,1K", "--nrep", "30", "--mpiruns", "2",
                       "-o", out, "--seed", "3", "--quiet", "--no-summary")
    assert code == 0, se
    code, so, se = cli("summary", out, "--json")
    assert code == 0, se
    rows = json.loads(so)
    assert {(r["op"], r["msize"]) for r in rows} == {("allreduce", 8), ("allreduce", 1024), ("barrier", 0)}
    for r in rows:
        assert r["config"] == "default" and r["nprocs"] == 2 and r["runs"] == 2
        assert 0 < r["min_s"] <= r["median_s"] <= r["max_s"] < 0.1
    code, so, se = cli("summary", out)
    assert code == 0 and "allreduce" in so and "(times in µs)" in so
    # a second campaign never writes into the same directory
    code, so, se = cli("run", "--ops", "bcast", "-o", out, "--quiet")
    assert code == 2 and "already exists" in se


def test_killed_run_is_kept_out_and_resumed(cli, build, tmp_path, bad_launcher):
    """Issue target: killing a rank in the middle of run 4 of 10 loses nothing of runs 1-3
    and 5-10, and --resume completes run 4."""
    flag, template = bad_launcher
    flag.write_text("x")
    out = tmp_path / "camp"
    code, so, se = cli("run", "--ops", "bcast", "--msizes", "8", "--nrep", "10", "--mpiruns", "10",
                       "--launcher", template, "-o", out, "--quiet", "--no-summary")
    assert code == 2 and "1 of 10 mpiruns failed" in se and "--resume" in se
    runs = out / "runs"
    for i in range(10):
        assert (runs / f"default-{i:03d}" / "meta.json").exists() == (i != 3), i
    failed = json.loads((runs / "default-003" / "failed.json").read_text())
    assert failed["status"] in ("failed", "killed") and not (runs / "default-003" / "measurements.csv").exists()
    code, so, se = cli("summary", out, "--json")
    assert code == 0 and json.loads(so)[0]["runs"] == 9
    before = {i: (runs / f"default-{i:03d}" / "measurements.csv").read_text() for i in range(10) if i != 3}
    flag.unlink()
    # the stored launcher is a template with a wrapper: a resume runs it only with consent (--yes)
    code, so, se = cli("run", "--resume", out, "--quiet", "--no-summary", "--yes")
    assert code == 0, se
    assert (runs / "default-003" / "meta.json").exists()
    assert (runs / "default-003" / "failed-attempt-1.json").exists()
    for i, text in before.items():
        assert (runs / f"default-{i:03d}" / "measurements.csv").read_text() == text
    code, so, se = cli("summary", out, "--json")
    assert json.loads(so)[0]["runs"] == 10


def test_resume_refuses_a_different_spec(cli, build, tmp_path):
    out = tmp_path / "camp"
    code, so, se = cli("run", "--ops", "bcast", "--nrep", "5", "--mpiruns", "1", "-o", out, "--quiet", "--no-summary")
    assert code == 0, se
    spec = tmp_path / "other.toml"
    spec.write_text('ops = ["reduce"]\nnrep = 5\nmpiruns = 1\n')
    code, so, se = cli("run", spec, "--resume", out, "--quiet")
    assert code == 2 and "differs from the campaign file" in se
    code, so, se = cli("run", "--resume", tmp_path / "nothing", "--quiet")
    assert code == 2 and "cannot resume" in se and "no such directory" in se


def test_launcher_not_found(cli, build, tmp_path):
    code, so, se = cli("run", "--ops", "bcast", "--launcher", "no-such-launcher -n {np} {cmd}", "-o", tmp_path / "c",
                       "--quiet")
    assert code == 2 and "launcher 'no-such-launcher' not found" in se
    code, so, se = cli("run", "--ops", "bcast", "--launcher", "mpiexec -n {np}", "-o", tmp_path / "d", "--quiet")
    assert code == 2 and "placeholder {cmd}" in se


def test_ctrl_c_stops_cleanly(build, tmp_path, ctrl_c):
    out = tmp_path / "camp"
    code, so, se = ctrl_c(["run", "--ops", "alltoall", "--msizes", "256K", "--nrep", "3000", "--mpiruns", "5",
                           "-o", out, "--no-summary"], out, settle=0.3)
    assert code == 130, se
    assert "interrupted" in se and "--resume" in se
    runs = sorted((out / "runs").iterdir())
    interrupted = [d for d in runs if (d / "failed.json").exists()]
    assert len(interrupted) == 1, [d.name for d in runs]
    assert json.loads((interrupted[0] / "failed.json").read_text())["status"] == "interrupted"
    k = runs.index(interrupted[0])
    assert k >= 1 and all((d / "meta.json").exists() for d in runs[:k])   # completed runs are kept
    assert runs[-1] == interrupted[0]                                      # nothing started after Ctrl-C
    # no rank of the interrupted mpirun is left running
    ps = subprocess.run(["pgrep", "-f", str(interrupted[0])], capture_output=True, text=True)
    assert ps.stdout.strip() == ""


def test_cli_rejects_unknown_op_before_launching(cli, build, tmp_path):
    code, so, se = cli("run", "--ops", "allreduce,foo", "-o", tmp_path / "c", "--quiet")
    assert code == 2 and "unknown op 'foo'" in se and "did you mean fop?" in se and "--list" in se
    code, so, se = cli("run", "--ops", "allgatherx", "-o", tmp_path / "c", "--quiet")
    assert code == 2 and "did you mean allgather, iallgather or allgatherv?" in se
    code, so, se = cli("run", "--ops", "exscan", "-n", "1", "-o", tmp_path / "d", "--quiet")
    assert code == 2 and "needs at least 2 ranks" in se


def test_delay_op_is_measured_as_the_max_delay(build, tmp_path):
    """Ground truth: each rank busy-waits its own time; MS1 reports max over ranks."""
    r = run_bench(build, 2, ["--ops", "delay", "--delay", "20us,60us", "--nrep", "400", "--timer-reads", "1000"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    v = sorted(float(x["runtime_s"]) for x in read_rows(tmp_path))
    # never below the truth, and the undisturbed measurements hit it (400 of them, so that a
    # loaded shared machine still leaves some undisturbed); the median only loosely, since other
    # jobs may preempt a busy-waiting rank
    assert 60e-6 <= v[0] < 62e-6, v[0]
    assert v[len(v) // 2] < 120e-6, v[len(v) // 2]
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["operation_params"]["delay"] == "20us,60us"


@pytest.mark.parametrize("policy", ["cold", "cycle"])
def test_cache_policies(build, tmp_path, policy):
    r = run_bench(build, 2, ["--ops", "allreduce,bcast", "--msizes", "1K,64K", "--nrep", "10", "--cache", policy,
                             "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert all(float(x["runtime_s"]) > 0 for x in read_rows(tmp_path))
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["cache_policy"] == policy and meta["cache"]["size_bytes"] > 0
    assert meta["cache"]["size_source"]


def test_barrier_loop_scheme(build, tmp_path):
    r = run_bench(build, 2, ["--ops", "allreduce", "--msizes", "8", "--nrep", "10", "--scheme", "barrier_loop",
                             "--inner", "20", "--timer-reads", "1000"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path)
    assert len(rows) == 10 and all(x["scheme"] == "barrier_loop" for x in rows)


@pytest.mark.parametrize("args,msg", [
    (["--cache", "hot"], "unknown cache policy 'hot' (allowed: warm, cold, cycle)"),
    (["--cache", "cold", "--cache-size", "0"], "invalid --cache-size"),
    (["--ops", "delay", "--delay", "-5us"], "must not be negative"),
    (["--ops", "delay", "--delay", "5 parsecs"], "invalid --delay '5 parsecs': the unit must be"),
])
def test_cache_and_delay_bad_input(build, tmp_path, args, msg):
    r = run_bench(build, 2, args, tmp_path)
    assert r.returncode != 0 and msg in r.stderr, r.stderr
