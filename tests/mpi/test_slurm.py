"""Campaigns through a real Slurm (slurmctld + slurmd on localhost): srun steps,
sbatch submission of a whole campaign, and the wrong-PMI-plugin case."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slurm"))
from cluster import cluster_or_skip  # noqa: E402

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from cluster_or_skip(tmp_path_factory, "slurm")


@pytest.fixture
def srun_ok(slurm, build):
    """srun must offer the PMI plugin this MPI needs (Open MPI: pmix, which needs libpmix2)."""
    import subprocess
    need = "pmix" if build.flavour == "openmpi" else "pmi2"
    r = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=30)
    if need not in (r.stdout + r.stderr):
        pytest.skip(f"this Slurm has no '{need}' MPI plugin (install libpmix2 for Open MPI): {r.stdout.strip()}")


def test_campaign_with_srun_steps(slurm, srun_ok, cli, build, tmp_path):
    out = tmp_path / "c"
    code, so, se = cli("run", "--launcher", "srun", "--ops", "allreduce,bcast", "--msizes", "8", "--nrep", "20",
                       "--mpiruns", "2", "-o", out, "--quiet", "--no-summary")
    assert code == 0, se + slurm.log_tail("slurmctld") + slurm.log_tail("slurmd")
    code, so, se = cli("summary", out, "--json")
    rows = json.loads(so)
    assert {r["op"] for r in rows} == {"allreduce", "bcast"} and all(r["runs"] == 2 for r in rows)
    meta = json.loads((out / "runs" / "default-000" / "meta.json").read_text())
    assert any(k.startswith("SLURM_") for k in meta["environment"]), meta["environment"]
    assert meta["launch"]["launcher"]["argv"][0] == "srun"


def test_wrong_pmi_plugin_is_detected(slurm, cli, build, tmp_path):
    out = tmp_path / "c"
    code, so, se = cli("run", "--launcher", "srun -n {np} --mpi=none {cmd}", "--ops", "bcast", "--nrep", "5",
                       "--mpiruns", "1", "-o", out, "--quiet", "--no-summary")
    assert code == 2
    failed = json.loads((out / "runs" / "default-000" / "failed.json").read_text())
    if "OpenRTE" in build.mpiexec_version:   # Open MPI 4 refuses to start under srun without its PMI itself
        # (its banner, once per rank, is longer than the 20 lines of stderr_tail: the whole log)
        log = (out / "runs" / "default-000" / "stderr.log").read_text()
        assert "SLURM's PMI support" in log, log[-3000:]
    else:   # the ranks start as singletons: the core sees 1 rank where np were asked for
        assert "different MPI library" in failed["stderr_tail"], failed


def test_sbatch_submission_runs_the_whole_campaign(slurm, srun_ok, cli, build, tmp_path):
    out = tmp_path / "c"
    code, so, se = cli("run", "--sbatch", "--launcher", "srun", "--ops", "allreduce", "--msizes", "8,64",
                       "--nrep", "20", "--mpiruns", "3", "-o", out, "--quiet")
    assert code == 0, se
    assert "submitted campaign" in se
    job = json.loads((out / "slurm.json").read_text())["job_id"]
    assert job.isdigit()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        done = [d for d in (out / "runs").iterdir() if (d / "meta.json").exists()]
        if len(done) == 3:
            break
        time.sleep(1)
    logs = list(out.glob("slurm-*.out"))
    assert len(done) == 3, (logs[0].read_text() if logs else "no job output") + slurm.log_tail("slurmctld")
    code, so, se = cli("summary", out, "--json")
    assert code == 0 and all(r["runs"] == 3 for r in json.loads(so))
    meta = json.loads((out / "runs" / "default-001" / "meta.json").read_text())
    assert meta["environment"].get("SLURM_JOB_ID") == job


def test_sbatch_refuses_existing_dir(slurm, cli, tmp_path):
    code, so, se = cli("run", "--sbatch", "--ops", "bcast", "-o", tmp_path, "--quiet")
    assert code == 2 and "already exists" in se
