"""mpitempo tune across the 4 fake hosts (network namespaces, TCP between them; tests/netns/cluster.py):
allreduce and bcast algorithms measured, decided and verified through a launcher template. Function
only: 4 ranks on 2 cores are oversubscribed and flagged."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# as "netns.cluster": tests/slurm has a module named cluster too
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from netns import cluster as nc  # noqa: E402

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def fake_hosts():
    why = nc.unavailable(time_namespaces=False)
    if why:
        pytest.skip(f"fake hosts unavailable: {why}")
    with nc.Cluster(4) as c:
        yield c
    assert not any(Path("/etc/netns", h).exists() for h in c.hosts)


def _launcher(build, c, tmp_path) -> str:
    """A launcher template for tune: Hydra started on the first fake host, one rank per host, TCP
    between hosts, progress throttled (oversubscribed)."""
    hosts = ",".join(f"{h}:1" for h in c.hosts)
    script = tmp_path / "cluster-launch.sh"
    prefix = " ".join(c.wrap(c.hosts[0], "X")[:-3])   # ip netns exec H unshare --uts sh -c
    script.write_text(
        "#!/bin/sh\n# cluster-launch.sh NP CMD...\nnp=$1; shift\n"
        "export UCX_TLS=tcp FI_PROVIDER=tcp MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 "
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1\n"
        f"exec {prefix} 'hostname \"$0\" && shift && exec \"$@\"' {c.hosts[0]} _ {build.mpiexec} "
        f"-launcher rsh -launcher-exec {c.agent} -hosts {hosts} -n \"$np\" \"$@\"\n")
    script.chmod(0o755)
    return f"{script} {{np}} {{cmd}}"


def test_tune_allreduce_bcast_across_fake_hosts(cli, build, fake_hosts, tmp_path):
    if build.flavour != "mpich":
        pytest.skip(f"the fake-host launcher is written for MPICH Hydra (this build: {build.flavour})")
    launcher = _launcher(build, fake_hosts, tmp_path)
    out = tmp_path / "t"
    # function only, kept short (every mpirun crosses TCP with 4 ranks on 2 cores): one mpirun per
    # configuration, too few for a decision: the default is kept
    code, so, se = cli("tune", "-n", "4", "--launcher", launcher, "--ops", "allreduce,bcast",
                       "--algorithms", "allreduce:ring,bcast:binomial", "--msizes", "8", "--mpiruns", "1",
                       "--time-slice", "20ms", "--nrep", "20", "--quiet", "-o", out, "--json")
    assert code == 0, se
    res = json.loads(so)
    assert [(r["op"], r["msize"], r["nprocs"], r["oversubscribed"]) for r in res["rows"]] == \
        [("allreduce", 8, 4, True), ("bcast", 8, 4, True)]
    assert all(r["chosen"] == "default" for r in res["rows"])
    meta = json.loads((out / "campaign" / "runs" / "allreduce.ring-000" / "meta.json").read_text())
    assert len({r["host"] for r in meta["ranks"]}) == 4                # really 4 hosts
    assert meta["environment"]["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "ring"
