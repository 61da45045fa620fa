"""The recurring Slurm recipe (integrations/slurm/mpitempo-nightly.sbatch, docs/history.md "Recurring runs")
on a real one-node Slurm: the job submits its successor with sbatch --begin, runs a campaign with srun
steps and ingests it; three jobs later the store holds three entries of that machine, each once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slurm"))
from cluster import cluster_or_skip  # noqa: E402

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "integrations" / "slurm" / "mpitempo-nightly.sbatch"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from cluster_or_skip(tmp_path_factory, "slurmh")


def test_recurring_sbatch_fills_the_history(slurm, build, cli, tmp_path):
    need = "pmix" if build.flavour == "openmpi" else "pmi2"
    r = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=30)
    if need not in (r.stdout + r.stderr):
        pytest.skip(f"this Slurm has no '{need}' MPI plugin: {r.stdout.strip()}")
    d = tmp_path / "nightly"
    env = dict(os.environ, MT_DIR=str(d), MT_BEGIN="now+1", MT_COUNT="2", MT_MACHINE="testcluster",
               MT_RUN_ARGS="--ops allreduce --msizes 8 --nrep 20 --mpiruns 2", MT_HISTORY_ARGS="--latest 2")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    r = subprocess.run(["sbatch", "--parsable", "--chdir", str(tmp_path), "--export=ALL", str(SCRIPT)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    db = d / "history.duckdb"
    deadline = time.monotonic() + 600
    n = 0
    while time.monotonic() < deadline:
        q = subprocess.run(["squeue", "-h", "-n", "mpitempo-nightly"], capture_output=True, text=True, timeout=30)
        done = sorted(d.glob("nightly-*/runs/*/meta.json")) if d.exists() else []
        n = len({p.parents[2] for p in done})
        jobs = len(list(tmp_path.glob("mpitempo-nightly-*.out")))
        if jobs >= 3 and not q.stdout.strip():     # the last job has run and submitted none
            break
        time.sleep(2)
    logs = "".join(p.read_text()[-1500:] for p in sorted(tmp_path.glob("mpitempo-nightly-*.out")))
    assert n == 3, logs + slurm.log_tail("slurmctld")
    code, out, err = cli("history", "--db", db, "--json")
    assert code == 0, err + logs
    res = json.loads(out)
    (s,) = res["series"]
    assert s["machine"] == "testcluster" and len(s["entries"]) == 3 and s["op"] == "allreduce"
    assert all(e["factors"]["partition"] == "debug" for e in s["entries"])   # SLURM_JOB_PARTITION of the job
    assert (d / "dashboard" / "index.html").is_file()
    assert len(list(tmp_path.glob("mpitempo-nightly-*.out"))) == 3
