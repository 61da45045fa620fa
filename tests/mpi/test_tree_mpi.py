"""MPI integration tests of mpitempo-tree and `mpitempo tree`: real mpiruns, oversubscribed where
more than 2 ranks (correctness only; no timing is asserted)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi

QUICK = ["--warmup", "2", "--overhead-reps", "0", "--sync", "none"]


def run_tree(build, np_, args, timeout=300):
    cmd = [build.binary("mpitempo-tree")] + list(args) + ["--expect-np", str(np_)]
    launch = make_launch(build, np_, cmd)
    env = dict(os.environ)
    env.update(launch.env)
    return subprocess.run(launch.argv, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("np_,tree,dtype,op,msize", [
    (3, "binomial", "double", "sum", None),
    (3, "flat", "int", "prod", "4K"),
    (3, "kary:1", "float", "max", "100"),
    (4, "fanout:1/2", "int64", "min", "1M"),
    (4, "parents:2/0/-1/2", "char", "sum", "17"),
    (4, "node:binomial:k2", "long", "sum", "64"),
    (2, "mpi", "byte", "max", "8"),
])
def test_result_equals_mpi_allreduce(build, np_, tree, dtype, op, msize):
    """The tree's result is compared byte for byte with MPI_Allreduce by the core (exit 2 otherwise)."""
    args = QUICK + ["--ncalls", "4", "--tree", tree, "--datatype", dtype, "--redop", op]
    if msize:
        args += ["--msize", msize]
    r = run_tree(build, np_, args)
    assert r.returncode == 0, r.stderr
    meta = json.loads(r.stdout)
    assert meta["kind"] == "tree" and meta["verify"]["equal"] is True
    assert meta["workload"]["datatype"] == dtype and meta["workload"]["redop"] == op
    parent = meta["tree"]["parent"]
    assert parent.count(-1) == 1 and len(parent) == np_


def test_events_are_causal(build, tmp_path):
    np_, ncalls = 4, 20
    r = run_tree(build, np_, QUICK + ["--ncalls", str(ncalls), "--tree", "kary:2", "--outdir", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.csv", "links.csv", "meta.json"]
    meta = json.loads((tmp_path / "meta.json").read_text())
    parent = meta["tree"]["parent"]
    assert parent == [-1, 0, 0, 1]
    with open(tmp_path / "events.csv") as f:
        ev = list(csv.DictReader(f))
    with open(tmp_path / "links.csv") as f:
        ln = list(csv.DictReader(f))
    assert len(ev) == ncalls * np_ and len(ln) == ncalls * (np_ - 1)
    assert sorted({int(x["call"]) for x in ev}) == list(range(ncalls))
    assert {int(x["inst"]) for x in ev} == {0, 1}          # Gsum alternates two trees
    e = {(int(x["call"]), int(x["rank"])): x for x in ev}
    for x in ev:   # one host, CLOCK_MONOTONIC: the clocks are the same clock
        t = [float(x[k]) for k in ("enter_s", "up_s", "down_s", "exit_s")]
        assert t == sorted(t)
    for x in ln:
        c, p, ch = int(x["call"]), int(x["parent"]), int(x["child"])
        assert parent[ch] == p
        assert float(x["arrive_s"]) >= float(e[(c, ch)]["up_s"])      # sent before it arrived
        assert float(x["depart_s"]) <= float(e[(c, ch)]["down_s"])    # sent down before it was received
        assert float(e[(c, p)]["up_s"]) >= float(x["arrive_s"])


@pytest.mark.parametrize("ncalls,sample", [(40, 4), (41, 3), (7, 10)])
def test_sample_records_every_kth_call_of_each_tree(build, tmp_path, ncalls, sample):
    """--sample K: the events of calls 0, K, 2K, ... of each of Gsum's two trees, with their index in
    the run (call c of the run is call c // 2 of tree c % 2); the run makes all --ncalls calls."""
    np_ = 3
    r = run_tree(build, np_, QUICK + ["--ncalls", str(ncalls), "--sample", str(sample), "--tree", "kary:2",
                                      "--outdir", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    want = sorted(c for c in range(ncalls) if (c // 2) % sample == 0)
    assert meta["workload"]["ncalls"] == ncalls and meta["workload"]["sample"] == sample
    assert meta["workload"]["recorded_calls"] == len(want)
    with open(tmp_path / "events.csv") as f:
        ev = list(csv.DictReader(f))
    assert sorted({int(x["call"]) for x in ev}) == want
    assert all(int(x["inst"]) == int(x["call"]) % 2 for x in ev)
    assert len(ev) == len(want) * np_
    # SOR: every K-th iteration
    (tmp_path / "sor").mkdir()
    r = run_tree(build, np_, QUICK + ["--workload", "sor", "--ncalls", str(ncalls), "--sample", str(sample),
                                      "--sor-rows", "4", "--sor-cols", "16", "--outdir", str(tmp_path / "sor")])
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "sor" / "events.csv") as f:
        assert sorted({int(x["call"]) for x in csv.DictReader(f)}) == list(range(0, ncalls, sample))


def test_sample_out_of_range_refused(build):
    for bad in ("0", "-2", "x"):
        r = run_tree(build, 2, QUICK + ["--ncalls", "4", "--sample", bad])
        assert r.returncode != 0 and "--sample" in r.stderr and bad in r.stderr, r.stderr


@pytest.mark.parametrize("np_,tree,late", [(6, "binomial", 3), (4, "kary:2", 2), (8, "fanout:2/1", 7)])
def test_imbalance_names_the_delayed_rank(cli, np_, tree, late):
    code, out, err = cli("tree", "-n", str(np_), "--tree", tree, "--imbalance", f"{late}:20ms", "--ncalls", "30",
                         "--warmup", "2", "--overhead-reps", "0", "--sync", "none", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["oversubscribed"] is True
    imb = res["imbalance"]
    assert imb["culprit_rank"] == late and imb["imbalanced"] and imb["evidence_s"] > 0
    assert imb["excess_work_s"] > 10e-3 and imb["culprit_host"]
    if tree == "binomial":
        assert [p["path"] for p in res["paths"]][:4] == ["0", "1>0", "2>0", "3>2>0"]
    for p in res["paths"]:
        assert set(p) >= {"path", "ranks", "arrival_wait_s", "departure_wait_s", "down_latency_s", "up_latency_s"}
    # everybody else waits for the delayed rank: its own arrival wait is the smallest
    waits = {p["ranks"][0]: p["arrival_wait_s"] for p in res["paths"]}
    assert min(waits, key=waits.get) == late


def test_two_trees_compared_with_report(cli, tmp_path):
    out_dir = tmp_path / "cmp"
    code, out, err = cli("tree", "-n", "4", "--tree", "binomial", "--tree", "flat", "--ncalls", "30",
                         "--overhead-reps", "2", "--overhead-calls", "20", "--sync", "none", "-o", out_dir, "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["overhead_pct"] is not None
    rows = res["comparison"]
    assert [r["path"] for r in rows] == ["0", "1", "2", "3"]
    assert rows[3]["a_path"] == "3>2>0" and rows[3]["b_path"] == "3>0"
    for r in rows:
        assert set(r) >= {"path", "a_s", "b_s", "delta_pct"}
    html = (out_dir / "report.html").read_text()
    assert html.count("<img") >= 3          # timemap, comparison timemap, serialization plot
    assert json.loads((out_dir / "analysis.json").read_text())["comparison"]
    # the common pipeline understands the campaign
    code, out, err = cli("summary", out_dir, "--json")
    assert code == 0, err
    assert {r["op"] for r in json.loads(out)} == {"allreduce-tree"}
    code, out, err = cli("tree", "--from", out_dir, "--json")     # re-analysis of the kept campaign
    assert code == 0, err
    again = json.loads(out)
    assert again["comparison"] == rows and again["nodes"] and again["links"]
    code, out, err = cli("report", out_dir, "-o", tmp_path / "r.html")
    assert code == 0, err
    doc = (tmp_path / "r.html").read_text()
    assert "Allreduce tree" in doc and "comparison per path" in doc


def test_sor_workload(build):
    r = run_tree(build, 3, QUICK + ["--workload", "sor", "--ncalls", "30", "--sor-rows", "8", "--sor-cols", "32",
                                    "--imbalance", "1:100us"])
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)["workload"]
    assert w["name"] == "sor" and w["ncalls"] == 30 and 0 < w["comm_fraction"] < 1
    assert w["compute_s"] > 0 and w["imbalance"]["rank"] == 1 and w["residual"] >= 0


def test_tune_against_baselines(cli):
    code, out, err = cli("tree", "-n", "3", "--tune", "--tree", "kary:2", "--mpiruns", "2", "--ncalls", "20",
                         "--overhead-reps", "0", "--sync", "none", "--json")
    assert code == 0, err
    t = json.loads(out)["tuning"]
    assert {r["tree"] for r in t["ranking"]} == {"kary:2", "binomial", "mpi"}
    assert all(r["runs"] == 2 for r in t["ranking"])
    assert t["fastest"] in ("kary-2", "binomial")
    assert any(v["baseline"] == "mpi" for v in t["vs_baselines"])


@pytest.mark.parametrize("args,msg", [
    (["--tree", "flat", "--tree-hosts", "nohost,nohost"], "node 0 is mapped to host 'nohost', which is not in the job"),
    (["--tree", "parents:-1/0/1"], "the parent list has 3 nodes but the job has 2 ranks"),
    (["--tree", "kary:2", "--tree-map", "0,0"], "node 1 is mapped to rank 0, which already runs another node"),
])
def test_bad_trees_refused(build, tmp_path, args, msg):
    r = run_tree(build, 2, QUICK + ["--ncalls", "2", "--outdir", str(tmp_path)] + args)
    # one line of ours (Open MPI's launcher adds its own banner lines around it)
    ours = [ln for ln in r.stderr.splitlines() if ln.startswith("mpitempo-tree:")]
    assert r.returncode == 2 and len(ours) == 1 and msg in ours[0], r.stderr
    assert list(tmp_path.iterdir()) == []


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "trees").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_trees_run(cli, path):
    code, out, err = cli("tree", "-n", "4", "--tree", path, "--ncalls", "10", "--warmup", "1", "--overhead-reps", "0",
                         "--sync", "none", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["config"] == path.stem and len(res["paths"]) == 4
    if path.stem == "explicit":      # node 0 on rank 3, node 1 on rank 0, node 3 (under node 1) on rank 2
        assert [p["path"] for p in res["paths"]] == ["0>3", "1>3", "2>0>3", "3"]


def test_comparison_keeps_the_order_given(cli, tmp_path):
    """A is the first configuration on the command line, whatever order the shuffled mpiruns ran in;
    both configurations get their path table and timemap; the comparison timemap shows the path whose
    time changed most."""
    out_dir = tmp_path / "ord"
    code, out, err = cli("tree", "-n", "4", "--tree", "flat", "--tree", "binomial", "--ncalls", "30", "--mpiruns", "3",
                         "--overhead-reps", "2", "--overhead-calls", "20", "--sync", "none", "-o", out_dir, "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["tree"] == "flat" and [c["tree"] for c in res["configs"]] == ["flat", "binomial"]
    assert all(len(c["paths"]) == 4 and c["mpiruns"] == 3 for c in res["configs"])
    rows = res["comparison"]
    assert rows[3]["a_path"] == "3>0" and rows[3]["b_path"] == "3>2>0"     # A = flat
    html = (out_dir / "report.html").read_text()
    assert html.count("<img") >= 4          # two timemaps, comparison timemap, serialization plot
    assert "timemap of " + res["configs"][1]["config"] in html
    code, text, err = cli("tree", "--from", out_dir)
    assert code == 0, err
    assert f"paths of '{res['configs'][1]['config']}' (binomial)" in text
    again = json.loads(cli("tree", "--from", out_dir, "--json")[1])
    assert again["tree"] == "flat" and again["comparison"] == rows
