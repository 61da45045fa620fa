"""The campaign directory: one schema for every kind of run.

    campaign.toml                 the spec as run (with `kind` when it is not bench)
    order.json, runlog.jsonl      the plan and one line per mpirun attempt
    runs/<run-id>/meta.json       written last by the core: marks a complete run
    runs/<run-id>/<data files>    of the kind (measurements.csv, clocks.json, timings.csv, ...)
    runs/<run-id>/failed.json     only for failed attempts

``FACTORS`` is the list of experimental factors read from meta.json, defined
once here; `summary`, `compare --by` and the store use it.
"""
from __future__ import annotations

import json
from pathlib import Path

from mpitempo.errors import MtError

FORMAT_VERSION = 1   # of meta.json; keys are only added within a version


def _get(meta: dict, *path, default=""):
    cur = meta
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return default
        cur = cur[p]
    return "" if cur is None else cur


def _hosts(meta: dict) -> str:
    ranks = meta.get("ranks") or []
    if not isinstance(ranks, list):
        return ""
    return ",".join(sorted({str(r.get("host", "")) for r in ranks if isinstance(r, dict)}))


def _int(v) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


# Experimental factors of one mpirun, from its meta.json: the column name and how it is read.
FACTORS = {
    "config": lambda m: str(m.get("config", "default")),
    "nprocs": lambda m: _int(m.get("nprocs", 0)),
    "library": lambda m: str(_get(m, "mpi", "library")),
    "timer": lambda m: str(_get(m, "timer", "name")),
    "scheme": lambda m: str(_get(m, "scheme", "name")),
    "compiler": lambda m: str(_get(m, "build", "compiler")),
    "host": _hosts,
    "governor": lambda m: str(_get(m, "machine", "frequency_governor")),
    "cache_policy": lambda m: str(m.get("cache_policy", "") or ""),
    "clock_sync": lambda m: str(_get(m, "clock", "sync")),
    "binding": lambda m: str(_get(m, "launch", "launcher", "binding_requested")),
    "cflags": lambda m: str(_get(m, "build", "flags")),
}


def load_meta(path: Path) -> dict:
    """A run's meta.json, checked: a JSON object of a format version this mpitempo reads."""
    try:
        meta = json.loads(Path(path).read_bytes().decode("utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        raise MtError(f"'{path}' is not valid JSON: {e}") from None
    except OSError as e:
        raise MtError(f"cannot read '{path}': {e.strerror}") from None
    if not isinstance(meta, dict):
        raise MtError(f"'{path}' is not a JSON object")
    v = meta.get("format_version", 1)
    if not isinstance(v, int) or isinstance(v, bool) or v > FORMAT_VERSION:
        raise MtError(f"'{path}' has format_version {v!r}; this mpitempo reads up to {FORMAT_VERSION} "
                      "(upgrade mpitempo)")
    return meta


def check_root(root: Path) -> None:
    if not root.exists():
        raise MtError(f"'{root}' does not exist")
    if not root.is_dir():
        raise MtError(f"'{root}' is not a directory")
    if not (root / "runs").is_dir():
        raise MtError(f"'{root}' is not a campaign directory (no runs/ inside)")


def find_runs(root: Path, kind=None, verify: bool = True) -> tuple[list[Path], list[dict], list[str]]:
    """(complete run directories, failed records, incomplete run ids) of a campaign of any kind.
    With ``verify``, a complete run whose data files do not match the records in its meta.json
    (truncated, edited) is an MtError (`io.integrity`)."""
    if kind is None:
        from mpitempo import kinds

        kind = kinds.of_campaign(root)
    runs_dir = Path(root) / "runs"
    complete, failed, incomplete = [], [], []
    for d in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        if kind.complete(d):
            complete.append(d)
        elif (d / "failed.json").exists():
            try:
                rec = json.loads((d / "failed.json").read_text())
                failed.append(rec if isinstance(rec, dict) else {"run_id": d.name, "status": "failed"})
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                failed.append({"run_id": d.name, "status": "failed"})
        else:
            incomplete.append(d.name)
    if verify:
        from mpitempo.io.integrity import check_runs

        check_runs(Path(root), complete, kind)
    return complete, failed, incomplete


def campaign_name(root: Path) -> str:
    spec = root / "campaign.toml"
    if spec.exists():
        for line in spec.read_text(errors="replace").splitlines():
            k, _, v = line.partition("=")
            if k.strip() == "name":
                return v.strip().strip('"').strip("'")
    return root.name
