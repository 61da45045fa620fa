"""Submit a whole campaign as one Slurm batch job (many srun steps inside).

The campaign directory is created on the submitting host (campaign.toml,
order.json, the batch script); the job runs `mpitempo run --resume DIR`, so a
job that hits its time limit can be resubmitted and continues where it stopped.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from mpitempo.io.campaign import Campaign
from mpitempo.errors import MtError


def batch_script(c: Campaign, outdir: Path, sbatch_args: list[str]) -> str:
    outdir = outdir.resolve()
    lines = ["#!/bin/sh",
             f"#SBATCH --job-name=mpitempo-{c.name}",
             f"#SBATCH --ntasks={max(c.np)}",
             f"#SBATCH --output={outdir}/slurm-%j.out"]
    lines += [f"#SBATCH {a}" for a in sbatch_args]
    lines += ["# written by mpitempo run --sbatch: runs every missing mpirun of the campaign",
              f"exec {shlex.quote(sys.executable)} -m mpitempo.cli run --resume {shlex.quote(str(outdir))}"]
    return "\n".join(lines) + "\n"


def submit(c: Campaign, outdir: Path, sbatch_args: list[str]) -> str:
    sbatch = shutil.which("sbatch")
    if not sbatch:
        raise MtError("sbatch not found on PATH: --sbatch needs a Slurm client")
    try:
        outdir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise MtError(f"campaign directory '{outdir}' already exists; choose a new -o") from None
    (outdir / "campaign.toml").write_text(c.to_toml())
    (outdir / "runs").mkdir()
    script = outdir / "sbatch.sh"
    script.write_text(batch_script(c, outdir, sbatch_args))
    script.chmod(0o755)
    r = subprocess.run([sbatch, "--parsable", str(script)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        raise MtError(f"sbatch failed: {msg} (the campaign directory {outdir} is kept; submit {script} by hand)")
    job_id = r.stdout.strip().split(";")[0]
    (outdir / "slurm.json").write_text(json.dumps({"job_id": job_id, "script": str(script),
                                                   "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                   "sbatch_args": sbatch_args}, indent=2) + "\n")
    return job_id
