"""Kind `tune`: the library's collective algorithms, one configuration per forced algorithm, measured with
Round-Time on a global clock (Hunold and Carpen-Amarie 2018) over several interleaved mpiruns
(Hunold and Carpen-Amarie 2016). A bench run: meta.json and measurements.csv.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mpitempo.kinds.bench import BenchKind
from mpitempo.io.rundir import find_runs

DEFAULTS = {"scheme": "roundtime", "sync": "hca3", "time_slice": "200ms", "nrep": "300", "allow_few_valid": True,
            "ops": "allreduce", "msizes": "8,1K,64K"}


@dataclass(frozen=True)
class TuneKind(BenchKind):
    pass


KIND = TuneKind(name="tune", app="bench", executable="mpitempo-bench", data_files=("measurements.csv",),
                optional_files=("timestamps.csv",), defaults=DEFAULTS, list_keys=("ops",),
                description="collective algorithms of the MPI library, one configuration per algorithm")


def failed_configs(outdir: Path) -> dict[str, str]:
    """configuration -> why its mpiruns failed, for configurations without a single complete run."""

    complete, failed, _ = find_runs(outdir, KIND)
    ok = {re.sub(r"(-np\d+)?-\d+$", "", d.name) for d in complete}
    out: dict[str, str] = {}
    for rec in failed:
        cfg = re.sub(r"(-np\d+)?-\d+$", "", str(rec.get("run_id", "")))
        if cfg in ok or cfg in out:
            continue
        out[cfg] = failure_reason(rec)
    return out


_SIGNALS = {11: "segmentation fault", 6: "abort", 9: "killed", 15: "terminated", 7: "bus error"}


def failure_reason(rec: dict) -> str:
    """One line saying why an mpirun failed: the core's error, else the library's last error line
    (MPICH's error stack without its function(line) prefixes), else the exit status."""
    lines = [ln.strip() for ln in str(rec.get("stderr_tail", "")).splitlines() if ln.strip()]
    core = [ln.split(": error: ", 1)[1] for ln in lines if ": error: " in ln]
    if core:
        return core[0][:200]
    errs = [re.sub(r"^\S+\(\d+\)\.*:\s*", "", ln) for ln in lines
            if ("rror" in ln or "usable" in ln or "invalid" in ln.lower()) and not ln.startswith("/")]
    if errs:
        return errs[-1][:200]
    rc = rec.get("returncode")
    sig = _SIGNALS.get(rc if isinstance(rc, int) else -1)
    return f"{rec.get('status', 'failed')}, exit code {rc}" + (f" (a rank died: {sig})" if sig else "")
