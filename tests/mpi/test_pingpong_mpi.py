"""MPI integration tests of mpitempo-pingpong: real mpiruns on 2 ranks and on
3 (oversubscribed, correctness only). Timings are never asserted beyond being
positive and plausible: the machine is shared."""
from __future__ import annotations

import csv
import json
import os
import subprocess

import numpy as np
import pytest

from mpitempo.runner.launch import make_launch
from mpitempo.analysis import pingpong as analysis
from mpitempo.io import pingpong as data

pytestmark = pytest.mark.mpi

QUICK = ["--timer-reads", "20000", "--npptrial", "5", "--npp-init", "2", "--warmup", "2"]


def run_pp(build, np_, args, timeout=300):
    cmd = [build.binary("mpitempo-pingpong")] + list(args)
    launch = make_launch(build, np_, cmd)
    env = dict(os.environ)
    env.update(launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("np_", [2, 3])
def test_outdir_files_and_analysis(build, tmp_path, np_):
    r = run_pp(build, np_, QUICK + ["--msizes", "0,8,4K", "--ntrial", "50", "--loop", "--loop-reps", "2",
                                    "--loop-iters", "50", "--outdir", str(tmp_path), "--expect-np", str(np_)])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json", "timings.csv"]  # no temp files left
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["kind"] == "pingpong" and meta["nprocs"] == np_ and len(meta["ranks"]) == np_
    assert meta["pingpong"]["source"] == 0 and meta["pingpong"]["dest"] == np_ - 1
    st = meta["timer"]["study"]
    assert st["n"] == 20000 and st["res_timing_s"] >= st["min_ov_s"] >= 0
    assert sum(c for _, c in st["freq"]) + st["negative"] + st["dropped"] == st["n"]
    with open(tmp_path / "timings.csv") as f:
        rows = list(csv.DictReader(f))
    kinds = {(x["kind"], int(x["msize"])) for x in rows}
    assert kinds == {(k, m) for k in ("estimate", "pingpong", "loop") for m in (0, 8, 4096)}
    pp = [x for x in rows if x["kind"] == "pingpong"]
    assert len(pp) == 3 * 50 and all(int(x["ticks"]) > 0 for x in pp)
    for x in pp:  # time_s is ticks * s_per_tick / (2 npp)
        assert float(x["time_s"]) == pytest.approx(int(x["ticks"]) * meta["timer"]["s_per_tick"] / (2 * int(x["npp"])),
                                                   rel=1e-8)
    for res in meta["results"]:
        est = res["npp_estimate"]
        assert est["npp_calculated"] >= 1 and est["median_ppt_s"] > 0
        assert res["sets"][0]["npp"] == est["npp_calculated"]
    a = analysis.analyse(data.load_dir(tmp_path), cut_coef=2.0)
    assert [r["msize"] for r in a["results"]] == [0, 8, 4096]
    for rec in a["results"]:
        assert 0 < rec["min_s"] <= rec["median_s"] <= rec["max_s"] < 0.5
        assert rec["filtered"]["removed"] + rec["filtered"]["n"] == rec["ntrial"] == 50
    assert len(a["loop"]) == 3 and all(lp["median_s"] > 0 for lp in a["loop"])


def test_json_stdout_sweep_and_fixed_ranks(build):
    r = run_pp(build, 3, QUICK + ["--msizes", "8", "--ntrial", "20", "--npp-sweep", "1,3,7", "--source", "2",
                                  "--dest", "1"])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["pingpong"]["source"] == 2 and doc["pingpong"]["dest"] == 1
    sets = doc["results"][0]["sets"]
    assert [s["npp"] for s in sets] == [1, 3, 7] and all(len(s["ticks"]) == 20 for s in sets)
    run = data.load_document(doc)
    t = analysis.sweep_table(analysis.analyse(run)["results"], 8)
    assert t["npp"] == [1, 3, 7] and all(v > 0 for v in t["median time"])


@pytest.mark.parametrize("bufs", [None, "one", "two"])
def test_buffers_recorded(build, bufs):
    r = run_pp(build, 2, QUICK + ["--msizes", "0,64K", "--ntrial", "5", "--npp", "2", "--loop", "--loop-reps", "1",
                                  "--loop-iters", "5"] + (["--buffers", bufs] if bufs else []))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["pingpong"]["buffers"] == (bufs or "two")
    assert [x["msize"] for x in doc["results"]] == [0, 65536]


def test_fixed_npp_and_max_pp(build):
    r = run_pp(build, 2, QUICK + ["--msizes", "16", "--ntrial", "100", "--npp-sweep", "1,50", "--max-pp", "1000"])
    assert r.returncode == 0, r.stderr
    sets = json.loads(r.stdout)["results"][0]["sets"]
    assert [(s["npp"], s["ntrial"]) for s in sets] == [(1, 100), (50, 20)]
    r = run_pp(build, 2, QUICK + ["--msizes", "16", "--ntrial", "10", "--npp", "4"])
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["results"][0]
    assert res["sets"][0]["npp"] == 4 and res["npp_estimate"]["npp_calculated"] >= 1


@pytest.mark.parametrize("np_,args,msg", [
    (2, ["--source", "1", "--dest", "1"], "must differ"),
    (2, ["--dest", "2"], "invalid --dest 2: the job has 2 ranks"),
    (3, ["--source", "7"], "invalid --source 7"),
    (1, [], "at least 2 ranks"),
    (2, ["--npp", "0"], "invalid --npp '0'"),
    (2, ["--res-npp", "0"], "invalid --res-npp '0'"),
    (2, ["--msizes", "8,-4"], "sizes cannot be negative"),
    (2, ["--npp", "3", "--npp-sweep", "1,2"], "exclude each other"),
    (2, ["--expect-np", "3"], "expected 3 ranks but the job has 2"),
    (2, ["--buffers", "three"], "invalid --buffers 'three' (allowed: two, one)"),
])
def test_core_bad_input(build, np_, args, msg):
    r = run_pp(build, np_, QUICK + args)
    assert r.returncode != 0
    errs = [ln for ln in r.stderr.splitlines() if "mpitempo-pingpong: error:" in ln]
    assert len(errs) == 1 and msg in errs[0], r.stderr
    assert r.stdout == ""


def test_outdir_refuses_overwrite(build, tmp_path):
    (tmp_path / "meta.json").write_text("{}")
    r = run_pp(build, 2, QUICK + ["--msizes", "8", "--ntrial", "5", "--outdir", str(tmp_path)])
    assert r.returncode != 0 and "refusing to overwrite" in r.stderr


def test_cli_end_to_end(cli, build, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = cli("pingpong", "-n", "2", "--msizes", "0,8,64", "--ntrial", "40", "--compare",
                            "--loop-reps", "2", "--loop-iters", "100", "--timer-reads", "20000", "--npptrial", "5",
                            "-o", out)
    assert code == 0, err
    assert stdout.startswith("COMMUNICATION RATE CURVE") and "COMPARISON WITH THE LOOP-AVERAGED METHOD" in stdout
    assert "TIMING RESULTS FOR PING PONG TIMES DIVIDED BY TWO IN MICROSECONDS" not in stdout    # --verbose
    # a campaign directory of kind pingpong: the run's files and its analysis in runs/<id>/
    run = out / "runs" / "default-000"
    assert (out / "campaign.toml").exists() and (out / "runlog.jsonl").exists()
    for name in ("meta.json", "timings.csv", "summary.txt", "full.txt", "analysis.json", "plots/rate_curve.png",
                 "plots/hist_timer.png"):
        assert (run / name).exists(), name
    # one histogram per size and npp (npp is estimated: 1 with MPICH here, larger with faster libraries)
    assert len(list((run / "plots").glob("hist_8B_npp*.png"))) == 1
    assert "FREQUENCY OF TIMES FROM THE TIMER OVERHEAD" in (run / "full.txt").read_text()
    assert "TIMING RESULTS FOR PING PONG TIMES DIVIDED BY TWO IN MICROSECONDS" in (run / "summary.txt").read_text()
    # summary reads it like any campaign: one-way latency as op "pingpong"
    code, s_out, err = cli("summary", out, "--json")
    assert code == 0, err
    assert {r["op"] for r in json.loads(s_out)} >= {"pingpong", "pingpong-loop"}
    code, stdout, err = cli("pingpong", "--from", out, "--json", "--cut-coef", "3")
    assert code == 0, err
    doc = json.loads(stdout)
    keys = {"msize", "npp", "res_timing_s", "min_ov_s", "min_s", "median_s", "mean_s", "max_s", "std_s", "cv",
            "se_s", "rse"}
    for rec in doc["results"]:
        assert keys <= set(rec) and keys - {"msize", "npp", "res_timing_s", "min_ov_s"} <= set(rec["filtered"])
        assert rec["filtered"]["cut_coef"] == 3 and rec["filtered"]["removed"] >= 0
    assert [r["msize"] for r in doc["results"]] == [0, 8, 64]
    assert np.isclose(doc["results"][1]["rate_min_mb_s"], 8 / doc["results"][1]["min_s"] / 1e6)
