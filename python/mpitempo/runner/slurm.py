"""Submit a whole campaign as one Slurm batch job (many srun steps inside).

The campaign directory is created on the submitting host (campaign.toml,
order.json, the batch script); the job runs `mpitempo run --resume DIR`, so a
job that hits its time limit can be resubmitted and continues where it stopped.
"""
from __future__ import annotations

import json
import os
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
              "# (--yes: the commands of the campaign were given when it was submitted)",
              f"exec {shlex.quote(sys.executable)} -m mpitempo.cli run --resume {shlex.quote(str(outdir))} --yes"]
    return "\n".join(lines) + "\n"


def submit(c: Campaign, outdir: Path, sbatch_args: list[str]) -> str:
    sbatch = shutil.which("sbatch")
    if not sbatch:
        raise MtError("sbatch not found on PATH: --sbatch needs a Slurm client")
    from mpitempo.io import safefs
    from mpitempo.runner.resume import write_record

    try:
        if str(outdir.parent) not in ("", ".") and not outdir.parent.is_dir():
            outdir.parent.mkdir(parents=True)
        os.mkdir(outdir)   # one mkdir: of two submissions to one new directory, one gets it
    except FileExistsError:
        raise MtError(f"campaign directory '{outdir}' already exists; choose a new -o") from None
    except OSError as e:
        raise MtError(f"cannot create the campaign directory '{outdir}': {e.strerror}") from None
    safefs.safe_write_text(outdir / "campaign.toml", c.to_toml(), outdir)
    write_record(outdir, c)
    safefs.safe_mkdir(outdir / "runs", outdir, exist_ok=False)
    script = outdir / "sbatch.sh"
    safefs.safe_write_text(script, batch_script(c, outdir, sbatch_args), outdir)
    script.chmod(0o755)
    r = subprocess.run([sbatch, "--parsable", str(script)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        raise MtError(f"sbatch failed: {msg} (the campaign directory {outdir} is kept; submit {script} by hand)")
    job_id = r.stdout.strip().split(";")[0]
    safefs.safe_write_text(outdir / "slurm.json", json.dumps({"job_id": job_id, "script": str(script),
                                                   "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                   "sbatch_args": sbatch_args}, indent=2) + "\n", outdir)
    return job_id
