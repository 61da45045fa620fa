"""Pure parts of tune, tree, imbalance and pingpong on simulated platforms (SimGrid/SMPI): SMPI's algorithm
list, the per-configuration smpirun settings, the SMPI selection file, the deterministic decision, the slow
host and slow link analyses, the platform variants (docs/simulation.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from mpitempo.errors import MtError

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ROOT / "platforms"

HELP = ("[0.000000] ./src/smpi/colls/smpi_coll.cpp:261: [root/CRITICAL] Collective 'allreduce' has no algorithm "
        "'help'! Valid algorithms: default, lr, rab1, rdb, ompi, ompi_ring_segmented, mpich, mvapich2, impi, rab, "
        "automatic.\nAborted\n")


def test_parse_smpi_algorithms_drops_selectors():
    from mpitempo.mpilib.smpi import parse_smpi_algorithms

    assert parse_smpi_algorithms(HELP) == ["lr", "rab1", "rdb", "ompi_ring_segmented", "rab"]
    assert parse_smpi_algorithms("no such line") == []


def test_smpi_env_and_cfg_items():
    from mpitempo.runner.launch import SMPI_CFG_ENV, smpi_cfg_items
    from mpitempo.mpilib.smpi import smpi_env

    env = smpi_env("ompi", "allreduce", "rdb")
    assert env == {SMPI_CFG_ENV: "smpi/coll-selector:ompi smpi/allreduce:rdb"}
    assert smpi_cfg_items(env) == ["--cfg=smpi/coll-selector:ompi", "--cfg=smpi/allreduce:rdb"]
    assert smpi_cfg_items({}) == []
    with pytest.raises(MtError, match="invalid SMPI selector 'intel'"):
        smpi_env("intel")
    for bad in ("network/model:CM02", "smpi/allreduce", "smpi/allreduce:rdb;rm", "smpi/x:$(id)"):
        with pytest.raises(MtError, match="invalid MPITEMPO_SMPI_CFG item"):
            smpi_cfg_items({SMPI_CFG_ENV: bad})


def test_launch_passes_config_settings(tmp_path, monkeypatch):
    from mpitempo.build import Build
    from mpitempo.runner.launch import make_launch
    from mpitempo.mpilib.smpi import smpi_env

    monkeypatch.setenv("MPITEMPO_CACHE", str(tmp_path / "cache"))
    exe = tmp_path / "smpirun"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    b = Build(fingerprint="f" * 16, mpicc="/usr/bin/smpicc", mpiexec=str(exe), flavour="smpi", show="",
              mpiexec_version="SimGrid version 3.32", bindir=str(tmp_path))
    lw = make_launch(b, 4, ["core", "--x"], extra_env=smpi_env("mpich", "bcast", "flattree"),
                     platform=str(PLATFORMS / "cluster64-fast.xml"))
    argv = lw.argv
    assert argv[-2:] == ["core", "--x"]
    i = argv.index("core")
    assert argv[i - 2:i] == ["--cfg=smpi/coll-selector:mpich", "--cfg=smpi/bcast:flattree"]
    assert "--cfg=smpi/bcast:flattree" in lw.simulation["cfg"]


def test_smpi_selection_text():
    from mpitempo.io.tuning_files import Rule
    from mpitempo.mpilib.smpi import smpi_selection_text

    rules = [Rule("allreduce", 16, 8, None), Rule("allreduce", 64, 8, None), Rule("allreduce", 64, 65536, "rab_rdb"),
             Rule("bcast", 64, 8, "binomial_tree"), Rule("bcast", 256, 8, "flattree", source="predicted")]
    text = smpi_selection_text(rules, "ompi", "header line")
    lines = {ln.split(":", 1)[0]: ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith("np=")}
    assert lines["np=16"] == "--cfg=smpi/coll-selector:ompi"
    # allreduce at 64 changes with the size: one --cfg cannot follow it; the default holds at as many sizes
    assert lines["np=64"] == "--cfg=smpi/coll-selector:ompi --cfg=smpi/bcast:binomial_tree"
    assert "#   allreduce: the choice changes with the message size" in text
    assert "#   allreduce from 65536 B: rab_rdb" in text
    assert lines["np=256"] == "--cfg=smpi/coll-selector:ompi --cfg=smpi/bcast:flattree"
    assert "PREDICTED" in text and "SIMULATED" in text and text.startswith("# header line")


def _identical(v):
    from mpitempo.analysis.tune import _identical as f

    return f(v)


def test_identical_runs():
    assert _identical([1e-5, 1e-5, 1e-5 + 5e-9])
    assert not _identical([1e-5, 1.1e-5])
    assert not _identical([])


# -- slow hosts and slow links ---------------------------------------------------------------------------

def synthetic(parent, hosts, work, link_extra=None, calls=20, lat=2e-6):
    """Events of a tree allreduce where every rank works work[r] between calls and the link of child c
    costs lat (+ link_extra[c]) each way; the parent listens from its enter on (it enters first)."""
    n = len(parent)
    kids = [[c for c in range(n) if parent[c] == p] for p in range(n)]
    one = {k: np.zeros((calls, n)) for k in ("enter", "up", "down", "exit", "arr", "dep")}
    extra = link_extra or {}
    order = []

    def post(g):
        for c in kids[g]:
            post(c)
        order.append(g)
    root = parent.index(-1)
    post(root)
    t = 0.0
    for k in range(calls):
        base = t
        for r in range(n):
            one["enter"][k, r] = base + work[r]
        for g in order:      # up: children first
            t_in = [one["enter"][k, g]] + [one["arr"][k, c] for c in kids[g]]
            one["up"][k, g] = max(t_in)
            if parent[g] >= 0:
                one["arr"][k, g] = one["up"][k, g] + lat + extra.get(g, 0.0)
        for g in reversed(order):   # down: parents first
            if parent[g] < 0:
                one["down"][k, g] = one["up"][k, g]
            else:
                one["down"][k, g] = one["dep"][k, g] + lat + extra.get(g, 0.0)
            for c in kids[g]:
                one["dep"][k, c] = one["down"][k, g]
            one["exit"][k, g] = one["down"][k, g]
        t = one["exit"][k].max()
    # rebase: every rank's work is between its exit and its next enter
    for k in range(1, calls):
        for r in range(n):
            one["enter"][k, r] = max(one["enter"][k, r], one["exit"][k - 1, r] + work[r])
    return one


NODE_TREE = [-1, 0, 0, 0, 0, 4, 4, 4, 0, 8, 8, 8, 8, 12, 12, 12]      # node:binomial:flat on 4 hosts x 4
HOSTS = [f"h{r // 4}" for r in range(16)]


def test_slow_host_named():
    from mpitempo.stats.tree import slow_hosts

    work = [10e-6] * 16
    for r in (8, 9, 10, 11):
        work[r] = 40e-6
    ev = synthetic(NODE_TREE, HOSTS, work)
    out = slow_hosts(ev, HOSTS)
    assert [h["host"] for h in out] == ["h2"] and out[0]["ranks"] == [8, 9, 10, 11]
    assert slow_hosts(synthetic(NODE_TREE, HOSTS, [10e-6] * 16), HOSTS) == []


def test_slow_link_named_and_attributed():
    from mpitempo.stats.tree import slow_links

    ev = synthetic(NODE_TREE, HOSTS, [0.0] * 16, link_extra={12: 20e-6})
    out = slow_links(NODE_TREE, ev, HOSTS)
    assert len(out) == 1 and (out[0]["child"], out[0]["parent"]) == (12, 8)
    # h2 has another link between hosts (8 > 0) that is normal: the fault is h3's link
    assert out[0]["suspect_host"] == "h3" and out[0]["between_hosts"]
    assert slow_links(NODE_TREE, synthetic(NODE_TREE, HOSTS, [0.0] * 16), HOSTS) == []


def test_slow_link_ignores_calls_where_parent_was_busy():
    """A parent that works longer than its child (a slow host) sees the child's message only when it enters:
    those calls must not make the link look slow."""
    from mpitempo.stats.tree import slow_links

    work = [0.0] * 16
    for r in (8, 9, 10, 11):
        work[r] = 40e-6
    ev = synthetic(NODE_TREE, HOSTS, work)
    # what the collectors record: the parent 8 observes 12's arrival only once it is in the call
    ev["arr"][:, 12] = np.maximum(ev["arr"][:, 12], ev["enter"][:, 8])
    assert slow_links(NODE_TREE, ev, HOSTS) == []


@settings(max_examples=40, deadline=None)
@given(hst.lists(hst.floats(min_value=0, max_value=1e-4), min_size=16, max_size=16))
def test_slow_hosts_never_name_more_than_they_should(work):
    """A host is named only if its work is >= 2x the hosts' median and 1 us above it: never more than half
    of the hosts."""
    from mpitempo.stats.tree import slow_hosts

    ev = synthetic(NODE_TREE, HOSTS, work, calls=4)
    out = slow_hosts(ev, HOSTS)
    assert len(out) <= 2
    for h in out:
        assert h["work_s"] >= 2 * h["hosts_median_s"] and h["work_s"] - h["hosts_median_s"] >= 1e-6


# -- platform variants -----------------------------------------------------------------------------------

def run_variant(*args):
    return subprocess.run([sys.executable, str(PLATFORMS / "variant.py"), *args], capture_output=True, text=True)


def test_variant_writes_a_readable_platform(tmp_path):
    from mpitempo.io.platform import read_platform

    out = tmp_path / "v.xml"
    r = run_variant("--hosts", "6", "--slow-host", "2:4", "--slow-link", "3:20us:1.25GBps", "-o", str(out))
    assert r.returncode == 0, r.stderr
    plat = read_platform(out)
    assert (plat.nhosts, plat.ncores) == (6, 24) and plat.hosts[2] == ("fast-2", 4)
    text = out.read_text()
    assert '<host id="fast-2" speed="25Gf" core="4"/>' in text
    assert '<link id="fast-3_up" bandwidth="1.25GBps" latency="20us"/>' in text
    assert plat.config["smpi/lat-factor"] == "0:1"


@pytest.mark.parametrize("args, why", [
    (["--slow-host", "9:4"], "node 0..3"), (["--slow-host", "1:0.5"], "factor >= 1"),
    (["--slow-host", "x"], "expected I:FACTOR"), (["--slow-link", "1:20us"], "expected I:LAT:BW"),
    (["--slow-link", "7:1us:1GBps"], "node 0..3"), (["--speed", "fast"], "invalid --speed")])
def test_variant_bad_arguments(tmp_path, args, why):
    out = tmp_path / "v.xml"
    r = run_variant("--hosts", "4", *args, "-o", str(out))
    assert r.returncode != 0 and why in r.stderr and not out.exists()


@pytest.mark.parametrize("name, slow", [("cluster64-fast-slownode", "speed=\"25Gf\""),
                                        ("cluster64-fast-slowlink", "latency=\"20us\"")])
def test_shipped_variants(name, slow):
    from mpitempo.io.platform import read_platform

    plat = read_platform(PLATFORMS / f"{name}.xml")
    assert (plat.nhosts, plat.ncores) == (64, 256)
    assert (PLATFORMS / f"{name}.xml").read_text().count(slow) == (1 if "speed" in slow else 2)
