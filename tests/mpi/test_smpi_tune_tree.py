"""SimGrid/SMPI (docs/simulation.md, "Tune, trees, ping-pong and imbalance on a simulated platform"):
tune with SMPI's algorithm selectors, the tree event analysis against an injected slow node and
slow link, pingpong and imbalance on a platform, the tracer's refusal. At reduced size (16-64 ranks,
a few mpiruns each); the 64/256-rank figures are bench/smpi_tune_tree.py's.

Skipped, with the reason, where SimGrid (smpicc, smpirun) is not installed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ROOT / "platforms"
VARIANT = PLATFORMS / "variant.py"
TIMER_READ_S = 10e-9     # smpi/wtime: simulated time a clock read costs

pytestmark = [pytest.mark.mpi, pytest.mark.one_library,
              pytest.mark.skipif(not (shutil.which("smpicc") and shutil.which("smpirun")),
                                 reason="SimGrid's SMPI is not installed (apt-get install libsimgrid-dev simgrid)")]


@pytest.fixture(scope="module")
def smpi_build():
    from mpitempo.build import ensure_build
    from mpitempo.errors import MtError

    try:
        return ensure_build("smpicc")
    except MtError as e:  # pragma: no cover - set-up problem
        pytest.fail(f"cannot build the C core with smpicc: {e}")


def variant(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    subprocess.run([sys.executable, str(VARIANT), *args, "-o", str(out)], check=True)
    return out


def test_tune_choice_changes_with_np(smpi_build, tmp_path, cli):
    """SMPI's MPICH selector runs recursive doubling (rdb) for an allreduce of 64 KiB on 16 and 64 ranks of
    the fast cluster (one rank per node); Rabenseifner with recursive doubling (rab_rdb) is 2% slower at
    16 ranks and 32% faster at 64: the tune keeps the default at 16 and chooses rab_rdb at 64, and the
    SMPI selection file says so per process count."""
    out = tmp_path / "t"
    code, text, err = cli("tune", "--platform", PLATFORMS / "cluster64-fast.xml", "--platform-ppn", "1",
                          "-n", "16,64", "--ops", "allreduce", "--msizes", "64K", "--algorithms",
                          "allreduce:rdb+rab_rdb", "-o", out, "--quiet", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["library"].startswith("SMPI mpich selector, SIMULATED")
    assert doc["simulated"]["simulated"] and doc["simulated"]["platform"].endswith("cluster64-fast.xml")
    rows = {r["nprocs"]: r for r in doc["rows"]}
    assert rows[16]["chosen"] == "default" and rows[64]["chosen"] == "rab_rdb", rows
    assert all(r["simulated"] and r["p_value"] is None for r in doc["rows"])
    assert rows[64]["gain_pct"] > 20
    sel = (out / "smpi-coll-selection.txt").read_text()
    lines = {ln.split(":", 1)[0]: ln for ln in sel.splitlines() if ln.startswith("np=")}
    assert lines["np=16"].split(": ", 1)[1] == "--cfg=smpi/coll-selector:mpich"
    assert lines["np=64"].split(": ", 1)[1] == "--cfg=smpi/coll-selector:mpich --cfg=smpi/allreduce:rab_rdb"
    assert "SIMULATED" in sel and "SIMULATED" in (out / "tune-report.txt").read_text()
    # the forced algorithm reached smpirun, under the selector
    meta = json.loads(next(out.glob("campaign/runs/allreduce.rab_rdb-np64-*/meta.json")).read_text())
    argv = meta["launch"]["launcher"]["argv"]
    assert "--cfg=smpi/allreduce:rab_rdb" in argv and "--cfg=smpi/coll-selector:mpich" in argv
    # rerunning the rab_rdb configuration gives the same simulated time: the decision needs no test
    first = json.loads((out / "tune.json").read_text())["candidates"]
    assert all(c["deterministic"] for c in first)


def test_platform_flags_need_platform(tmp_path, cli):
    for cmd in (["tune"], ["imbalance"], ["pingpong"], ["tree"]):
        code, _, err = cli(*cmd, "--platform-ppn", "2", "-o", tmp_path / "o")
        assert code != 0 and "--platform-ppn needs --platform" in err, (cmd, err)
    code, _, err = cli("imbalance", "--smpi-selector", "ompi")
    assert code != 0 and "--smpi-selector needs --platform" in err
    assert not (tmp_path / "o").exists()


def test_tree_work_refused_with_sor(smpi_build, tmp_path, cli):
    code, _, err = cli("tree", "--platform", PLATFORMS / "cluster64-fast.xml", "-n", "4", "--workload", "sor",
                       "--work", "1000", "-o", tmp_path / "o")
    assert code != 0 and "--work applies to --workload gsum" in err and not (tmp_path / "o").exists()


def test_tune_failed_algorithm_leaves_nothing_behind(smpi_build, tmp_path, cli, monkeypatch):
    """SMPI 3.32's allreduce rab1 crashes on 16 ranks, one per node: the tune reports it and goes on, and smpirun leaves
    no unrolled hostfile (smpitmp-hostf*) in the current directory."""
    monkeypatch.chdir(tmp_path)
    code, text, err = cli("tune", "--platform", PLATFORMS / "cluster64-fast.xml", "--platform-ppn", "1", "-n", "16",
                          "--ops", "allreduce", "--msizes", "8,64K", "--algorithms", "allreduce:rab1+rdb", "-o", tmp_path / "t", "--quiet",
                          "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert "allreduce.rab1" in doc["failed_algorithms"]
    assert not list(tmp_path.glob("smpitmp-*"))


def test_tune_platform_bad_inputs(tmp_path, cli):
    code, _, err = cli("tune", "--smpi-selector", "ompi")
    assert code != 0 and "--smpi-selector needs --platform" in err
    code, _, err = cli("tune", "--platform", PLATFORMS / "cluster64-fast.xml", "--verify", tmp_path / "x.env")
    assert code != 0 and "--verify is not available with --platform" in err
    code, _, err = cli("tune", "--platform", PLATFORMS / "cluster64-fast.xml", "--budget", "5m")
    assert code != 0 and "--budget is not available with --platform" in err
    code, _, err = cli("tune", "--platform", tmp_path / "none.xml", "-o", tmp_path / "o")
    assert code != 0 and "not found" in err and not (tmp_path / "o").exists()
    code, _, err = cli("tune", "--platform", PLATFORMS / "cluster64-fast.xml", "--platform-ppn", "1", "-n", "65",
                       "-o", tmp_path / "o")
    assert code != 0 and not (tmp_path / "o").exists()


def test_imbalance_smpi_selector(smpi_build, tmp_path, cli):
    """imbalance on a platform: the variants are SMPI's algorithms under the selector. On 4 nodes x 4 ranks
    recursive doubling's (rdb) ranks leave together; the ring's (lr: its steps mix loopback and network
    hops) last rank leaves 3 us after the first."""
    out = tmp_path / "imb"
    code, text, err = cli("imbalance", "--platform", PLATFORMS / "cluster64-fast.xml",
                          "-n", "16", "--op", "allreduce", "--variants",
                          "rdb:MPITEMPO_SMPI_CFG=smpi/allreduce:rdb;lr:MPITEMPO_SMPI_CFG=smpi/allreduce:lr",
                          "--nrep", "5", "--mpiruns", "1", "--time-slice", "20ms", "--smpi-selector", "ompi",
                          "-o", out, "--quiet", "--json")
    assert code == 0, err
    res = {r["variant"]: r for r in json.loads(text)}
    assert all(r["simulated"]["simulated"] for r in res.values())
    assert res["lr"]["median_skew_s"] > res["rdb"]["median_skew_s"] + 1e-6, res
    meta = json.loads(next(out.glob("runs/lr-*/meta.json")).read_text())
    assert "--cfg=smpi/allreduce:lr" in meta["launch"]["launcher"]["argv"]


def test_pingpong_pairs_on_platform(smpi_build, tmp_path, cli):
    """One-way latency = o_s + route + o_r: within a node 0.3 + 0.1 (loopback) + 0.4 us, between nodes
    0.3 + 2 x 1 + 0.4 us, through an injected slow link (20 us) 0.3 + 1 + 20 + 0.4 us; a few 10 ns
    clock reads of tolerance (docs/simulation.md)."""
    plat = variant(tmp_path, "v.xml", "--hosts", "4", "--slow-link", "3:20us:1.25GBps")
    code, text, err = cli("pingpong", "--platform", plat, "-n", "16", "--pairs", "0-1,0-4,0-12", "--msizes", "8",
                          "--ntrial", "20", "--quiet", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["simulated"]["simulated"]
    lat = doc["matrix"]["8"]["latency_s"]
    for (a, b), want in {(0, 1): 0.8e-6, (0, 4): 2.7e-6, (0, 12): 21.7e-6}.items():
        got = lat[b][a] if lat[b][a] is not None else lat[a][b]
        assert got == pytest.approx(want, abs=5 * TIMER_READ_S), (a, b, got)


def test_tree_names_slow_node(smpi_build, tmp_path, cli):
    """4 nodes x 4 cores, node fast-2 computes 4x slower; every rank computes 1 Mflop before each call
    (--work, charged at its host's speed: 10 us, 40 us on fast-2); the node-aware tree's event analysis
    names fast-2 (and no link); on the same platform without the slow node it names nothing."""
    plat = variant(tmp_path, "slow.xml", "--hosts", "4", "--slow-host", "2:4")
    code, text, err = cli("tree", "--platform", plat, "-n", "16", "--tree", "node", "--work", "1000000", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["simulated"]["simulated"]
    assert [h["host"] for h in doc["slow_hosts"]] == ["fast-2"], doc["slow_hosts"]
    assert doc["slow_hosts"][0]["ranks"] == [8, 9, 10, 11]
    assert doc["slow_hosts"][0]["ratio"] == pytest.approx(4.0, rel=0.01)
    assert doc["slow_links"] == []
    ok = variant(tmp_path, "ok.xml", "--hosts", "4")
    code, text, err = cli("tree", "--platform", ok, "-n", "16", "--tree", "node", "--work", "1000000", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["slow_hosts"] == [] and doc["slow_links"] == []


def test_tree_names_slow_link(smpi_build, tmp_path, cli):
    """8 nodes x 4 cores, node fast-5's network link has 20 us latency (1 us elsewhere) and a tenth of the
    bandwidth: the node-aware tree's only link to fast-5 (its leader 20 to fast-4's leader 16) is found
    slow (two-way ~ 2 x (0.3 + 21 + 0.4) us against 2 x (0.3 + 2 + 0.4) us), and the fault is put on
    fast-5's link, not fast-4's (whose other links are normal)."""
    plat = variant(tmp_path, "link.xml", "--hosts", "8", "--slow-link", "5:20us:1.25GBps")
    code, text, err = cli("tree", "--platform", plat, "-n", "32", "--tree", "node", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["slow_hosts"] == []
    assert len(doc["slow_links"]) == 1, doc["slow_links"]
    ln = doc["slow_links"][0]
    assert (ln["child"], ln["parent"], ln["suspect_host"]) == (20, 16, "fast-5")
    assert ln["two_way_s"] == pytest.approx(2 * (0.3e-6 + 21e-6 + 0.4e-6), rel=0.03)


def test_trace_refused_on_platform(tmp_path, cli):
    out = tmp_path / "tr"
    code, _, err = cli("trace", "run", "--platform", PLATFORMS / "cluster64-fast.xml", "-o", out, "--", "/bin/true")
    assert code != 0 and "cannot run on a simulated platform" in err and "LD_PRELOAD" in err
    assert not out.exists()
    code, _, err = cli("trace", "run", "--mpicc", "smpicc", "-o", out, "--", "/bin/true")
    assert code != 0 and "cannot run on a simulated platform" in err and not out.exists()
