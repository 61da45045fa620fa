"""mpitempo-tree on 4 fake hosts x 2 ranks (network namespaces, TCP between hosts): the node-aware
tree follows the hosts, --tree-hosts places nodes on named hosts, and the imbalance detector names
the host of a delayed rank. Correctness only (8 ranks on 2 cores); the node-aware vs host-oblivious
timing is bench/tree_netns.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from netns import cluster as nc  # noqa: E402

from mpitempo.analysis import tree as analysis  # noqa: E402

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def fake_hosts():
    why = nc.unavailable(time_namespaces=False)
    if why:
        pytest.skip(f"fake hosts unavailable: {why}")
    with nc.Cluster(4, subnet="10.79.0") as c:
        yield c
    assert not any(Path("/etc/netns", h).exists() for h in c.hosts)


def run_tree(build, c, args, outdir=None, timeout=600):
    if build.flavour != "mpich":
        pytest.skip(f"the fake-host launcher is written for MPICH Hydra (this build: {build.flavour})")
    cmd = [build.binary("mpitempo-tree"), "--expect-np", "8", "--sync", "none", "--overhead-reps", "0",
           "--warmup", "2", *args]
    if outdir:
        cmd += ["--outdir", str(outdir)]
    env = dict(os.environ)
    env.update({"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1", "MPITEMPO_CLOCK_SLEEP": "1"})
    return subprocess.run(c.mpiexec_argv(build.mpiexec, 2, cmd), capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_node_aware_tree_and_host_culprit(build, fake_hosts, tmp_path):
    r = run_tree(build, fake_hosts, ["--tree", "node:binomial:flat", "--imbalance", "5:20ms", "--ncalls", "30"],
                 tmp_path)
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "meta.json").read_text())
    t = meta["tree"]
    assert t["nhosts"] == 4 and t["host"] == [h for h in fake_hosts.hosts for _ in range(2)]
    # leaders 0, 2, 4, 6 in a binomial tree over the hosts; the second rank of each host under its leader
    assert t["parent"] == [-1, 0, 0, 2, 0, 4, 4, 6]
    res = analysis.analyse_run(tmp_path)
    imb = res["imbalance"]
    assert imb["culprit_rank"] == 5 and imb["culprit_host"] == fake_hosts.hosts[2] and imb["imbalanced"]
    assert {s["root"]: s["one_host"] for s in res["subtrees"]} == {0: False, 2: True, 4: False, 6: True}
    inter = {p["rank"]: p["inter_host_hops"] for p in res["paths"]}
    assert inter == {0: 0, 1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 2}


def test_nodes_placed_on_named_hosts(build, fake_hosts, tmp_path):
    h = fake_hosts.hosts
    hosts = [h[3], h[3], h[0], h[1], h[2], h[0], h[1], h[2]]
    r = run_tree(build, fake_hosts, ["--tree", "kary:2", "--tree-hosts", ",".join(hosts), "--ncalls", "10"],
                 tmp_path)
    assert r.returncode == 0, r.stderr
    t = json.loads((tmp_path / "meta.json").read_text())["tree"]
    assert [t["host"][rank] for rank in t["node_rank"]] == hosts
    assert t["node_rank"][:2] == [6, 7]           # the root runs on host 4's first rank


def test_host_not_in_job(build, fake_hosts, tmp_path):
    hosts = [h for h in fake_hosts.hosts for _ in range(2)][:7] + ["nosuchhost"]
    r = run_tree(build, fake_hosts, ["--tree", "flat", "--tree-hosts", ",".join(hosts), "--ncalls", "2"], tmp_path)
    assert r.returncode == 2
    assert "node 7 is mapped to host 'nosuchhost', which is not in the job (hosts: " in r.stderr
    assert all(h in r.stderr for h in fake_hosts.hosts) and r.stderr.strip().count("\n") == 0
    assert list(tmp_path.iterdir()) == []
