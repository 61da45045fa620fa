"""Kind `clocks`: evaluation of clock-synchronisation algorithms (mpitempo-clocks).

Every mpirun synchronises with each spec in turn and measures every rank's
offset to rank 0 right after sync and after each wait time (Hunold and
Carpen-Amarie 2018, Algorithm 6 and Fig. 3). Files of a run: meta.json and
clocks.json (one object per spec x wait time: sync_duration_s,
max_abs_offset_s, median_abs_offset_s, per_rank offsets and drifts; see
docs/clocks.md). The core checks the spec syntax (`--check-args`), so there is
one parser of it.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind


def parse_waits(text) -> list[float]:
    """'0,1,10' -> [0.0, 1.0, 10.0]; one-line error for anything else."""
    items = text if isinstance(text, list) else str(text).split(",")
    out = []
    for item in items:
        item = str(item).strip()
        try:
            v = float(item)
        except ValueError:
            raise MtError(f"invalid --wait item '{item}': expected wait times in seconds >= 0, e.g. 0,1,10") from None
        if v != v or v < 0 or v == float("inf"):
            raise MtError(f"invalid --wait '{text}': wait times must be >= 0 and finite (got {item})")
        out.append(v)
    return sorted(set(out))


def check_args(binary: str, args: list[str], build=None) -> dict:
    """The core's dry run of its option parser: the normalised options, or its one-line error. With
    the build, a core that cannot run on its own (SMPI) runs the way it can (build.direct_argv)."""
    from mpitempo.build import core_error_line, direct_argv

    argv = direct_argv(build, binary) if build is not None else [binary]
    r = subprocess.run([*argv, "--check-args", *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        msg = core_error_line(r.stderr) or "invalid arguments"
        raise MtError(msg.split(": error: ", 1)[-1])
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return {}


@dataclass(frozen=True)
class ClocksKind(Kind):
    def normalise(self, key, value, where="", label=None):
        if key == "wait":
            return ",".join(f"{w:g}" for w in parse_waits(value))
        return super().normalise(key, value, where, label)

    def check(self, campaign, build, configs=None) -> None:
        for cfg in configs if configs is not None else campaign.configs:
            check_args(build.binary(self.executable), campaign.core_args(cfg), build)


def _num_ok(v, lo: float | None = 0.0) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (lo is None or v >= lo)


def check_rows(doc, path: Path, nprocs) -> None:
    """The objects of clocks.json the summary reads, of their types and ranges: algorithm a string;
    wait_s, sync_duration_s, max_abs_offset_s and median_abs_offset_s finite numbers >= 0; per_rank a
    list of objects with rank 0..nprocs-1 (each once) and a finite drift_ppm (but rank 0); each (algorithm, wait_s)
    once (a second one was counted as another mpirun in the medians). One line naming the file, the
    object, the key and the value."""
    from mpitempo.safe_text import safe

    def bad(i, key, v, want):
        shown = "missing" if v is None else safe(repr(v))[:60]
        return MtError(f"'{path}' is damaged: [{i}].{key} is {shown}, expected {want}")

    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise MtError(f"'{path}' is not a JSON array of objects")
    if not doc:
        raise MtError(f"'{path}' is damaged: an empty array (a complete run has one object per spec and wait time)")
    n = nprocs if isinstance(nprocs, int) and not isinstance(nprocs, bool) and nprocs >= 1 else None
    seen: dict[tuple, int] = {}
    for i, r in enumerate(doc):
        if not isinstance(r.get("algorithm"), str) or not r["algorithm"]:
            raise bad(i, "algorithm", r.get("algorithm"), "a non-empty string (the sync spec)")
        for k in ("wait_s", "sync_duration_s", "max_abs_offset_s", "median_abs_offset_s"):
            if not _num_ok(r.get(k)):
                raise bad(i, k, r.get(k), "a finite number >= 0")
        key = (r["algorithm"], float(r["wait_s"]))
        if key in seen:
            raise MtError(f"'{path}' is damaged: [{i}] repeats [{seen[key]}] (algorithm '{safe(r['algorithm'])[:60]}', "
                          f"wait {r['wait_s']:g} s): each spec and wait time is measured once per mpirun")
        seen[key] = i
        pr = r.get("per_rank")
        if not isinstance(pr, list) or not all(isinstance(x, dict) for x in pr):
            raise bad(i, "per_rank", pr, "a list of objects (rank, offset_s, drift_ppm)")
        ranks: set[int] = set()
        for j, x in enumerate(pr):
            q = x.get("rank")
            if not (isinstance(q, int) and not isinstance(q, bool) and q >= 0 and (n is None or q < n)) or q in ranks:
                want = f"a rank of the run, 0..{n - 1}," if n else "a rank >= 0"
                raise bad(i, f"per_rank[{j}].rank", q, f"{want} each once")
            ranks.add(q)
            if q != 0 and not _num_ok(x.get("drift_ppm"), None):   # (rank 0's is not read)
                raise bad(i, f"per_rank[{j}].drift_ppm", x.get("drift_ppm"), "a finite number")


def load_rows(run_dirs: list[Path]) -> list[dict]:
    """The clocks.json rows of complete runs, with run_id and config added (check_rows first)."""
    rows = []
    for d in run_dirs:
        from mpitempo.io.rundir import load_meta
        from mpitempo.io.safeload import load_json

        doc = load_json(d / "clocks.json")
        meta = load_meta(d / "meta.json")
        check_rows(doc, d / "clocks.json", meta.get("nprocs"))
        for r in doc:
            rows.append(dict(r, run_id=d.name, config=str(meta.get("config", "default"))))
    return rows


KIND = ClocksKind(name="clocks", app="clocks", executable="mpitempo-clocks", data_files=("clocks.json",),
                  has_measurements=False, description="clock-synchronisation accuracy and cost")
