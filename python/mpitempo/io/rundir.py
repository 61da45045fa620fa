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

from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io.integrity import verify_run

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
    "like": lambda m: str(m.get("like") or "none"),     # the profile (--like osu|imb), none without one
}


# The keys of meta.json that readers use, and the JSON type each must have when present
# (docs/file-formats.md); a run whose meta.json has another shape is refused, naming the key.
META_SHAPE = {
    "format_version": int, "config": str, "run_index": int, "nprocs": int, "kind": str, "tool": str,
    "start_time": str, "end_time": str, "cache_policy": str, "experiments": list, "ranks": list, "argv": list,
    "files": dict, "mpi": dict, "timer": dict, "clock": dict, "scheme": dict, "build": dict, "machine": dict,
    "launch": dict, "environment": dict, "shared_cpu": dict, "operation_params": dict, "cache": dict,
    "like": str,
}
_JSON_TYPE = {int: "an integer", str: "a string", list: "an array", dict: "an object"}
# arrays of objects
_META_OBJ_LISTS = ("experiments", "ranks")


def check_meta_shape(meta: dict, path) -> dict:
    for key, typ in META_SHAPE.items():
        if key not in meta or meta[key] is None:
            continue
        v = meta[key]
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise MtError(f"'{path}': key '{key}' is {type(v).__name__} {repr(v)[:40]}, expected {_JSON_TYPE[typ]}")
    n = meta.get("nprocs")
    if n is not None and n < 1:   # the check of every row's nprocs against it would be skipped
        raise MtError(f"'{path}': key 'nprocs' is {n}, expected an integer >= 1 (the run's number of ranks)")
    for key in _META_OBJ_LISTS:
        for i, x in enumerate(meta.get(key) or []):
            if not isinstance(x, dict):
                raise MtError(f"'{path}': {key}[{i}] is {type(x).__name__}, expected an object")
    return meta


def load_meta(path: Path) -> dict:
    """A run's meta.json, checked: a JSON object of a format version this mpitempo reads, of the
    shape of META_SHAPE, within the limits of io.safeload (size, UTF-8, depth, finite numbers)."""
    from mpitempo.io.safeload import load_json

    meta = load_json(path)
    if not isinstance(meta, dict):
        raise MtError(f"'{path}' is not a JSON object")
    v = meta.get("format_version", 1)
    if not isinstance(v, int) or isinstance(v, bool) or v > FORMAT_VERSION:
        raise MtError(f"'{path}' has format_version {v!r}; this mpitempo reads up to {FORMAT_VERSION} "
                      "(upgrade mpitempo)")
    return check_meta_shape(meta, path)


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
    from mpitempo.io.safefs import check_not_link

    runs_dir = Path(root) / "runs"
    if Path(root).is_dir():   # (a store is a file: it has no runs/)
        check_not_link(runs_dir, root, want="dir", verb="read")
    complete, failed, incomplete = [], [], []
    for d in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        # a campaign may come from someone else: never read through a link, nor open a FIFO or device
        # (it would block) in place of a run's files
        for f in (d, d / "meta.json", d / "failed.json", *(d / n for n in kind.data_files)):
            check_not_link(f, root, want="dir" if f == d else "any", verb="read")
        if kind.complete(d):
            complete.append(d)
        elif (d / "failed.json").exists():
            from mpitempo.io.safeload import load_json

            try:
                rec = load_json(d / "failed.json")
                failed.append(rec if isinstance(rec, dict) else {"run_id": d.name, "status": "failed"})
            except MtError:
                failed.append({"run_id": d.name, "status": "failed"})
        else:
            incomplete.append(d.name)
    if verify:
        check_owner(Path(root), complete)
        check_runs(Path(root), complete, kind)
    return complete, failed, incomplete


def _small_json(path: Path, root: Path) -> dict | None:
    import json

    from mpitempo.io.safefs import check_not_link, safe_read_text

    try:
        if check_not_link(path, root, want="any", verb="read") is None:
            return None
        doc = json.loads(safe_read_text(path, root, limit=16 << 20))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def campaign_id(root: Path) -> str | None:
    """The id of the campaign in root (its spec.json), None for a campaign older than the id."""
    if not Path(root).is_dir():
        return None
    doc = _small_json(Path(root) / "spec.json", Path(root))
    cid = doc.get("campaign_id") if doc else None
    return cid if isinstance(cid, str) else None


def _toml_name(root: Path) -> str:
    """The top-level name of root/campaign.toml ('' when it has none or cannot be read)."""
    import tomllib

    from mpitempo.io.safeload import MAX_TOML_BYTES, read_bytes

    try:
        doc = tomllib.loads(read_bytes(Path(root) / "campaign.toml", MAX_TOML_BYTES).decode("utf-8"))
    except (MtError, OSError, ValueError):
        return ""
    return doc.get("name") if isinstance(doc.get("name"), str) else ""


def check_owner(root: Path, run_dirs) -> None:
    """Refuse a run directory that does not belong to the campaign in root: its launch.json records
    another campaign id, another campaign name, or another run id than its directory's name (a run
    copied in from another campaign, or copied under a second name, would be counted as this
    campaign's). Runs without a launch.json (older, or written by a study) are not checked."""
    root = Path(root)
    if not root.is_dir():   # a store (one file): its runs were checked when they were stored
        return
    cid = campaign_id(root)
    name = None
    for d in run_dirs:
        rec = _small_json(Path(d) / "launch.json", root)
        if rec is None:
            continue
        why = None
        if cid is not None and isinstance(rec.get("campaign_id"), str) and rec["campaign_id"] != cid:
            why = f"campaign id {rec['campaign_id']!r}, this campaign's spec.json {cid!r}"
        elif isinstance(rec.get("run_id"), str) and rec["run_id"] != Path(d).name:
            why = f"run id {rec['run_id']!r}: it is a copy of another run"
        elif cid is None:   # a campaign from before the id: only its name can tell
            if name is None:
                name = _toml_name(root)
            if isinstance(rec.get("campaign"), str) and name and rec["campaign"] != name:
                why = f"campaign {rec['campaign']!r}, this campaign is {name!r}"
        if why:
            text = (f"run '{Path(d).name}' of '{root}' does not belong to this campaign: its launch.json records "
                    f"{why}; refusing to merge it (move it back to its campaign)")
            raise MtError("".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text))


def check_runs(root: Path, run_dirs, kind) -> None:
    """Refuse (MtError) the first complete run of a campaign whose data is not what meta.json says."""
    for d in run_dirs:
        problem = verify_run(d, load_meta(d / "meta.json"), kind.data_files)
        if problem:
            raise MtError(f"run '{d.name}' of '{root}' is damaged: {problem}; refusing to use it "
                          f"(rerun it with: mpitempo run --resume {root})")


def campaign_name(root: Path) -> str:
    spec = root / "campaign.toml"
    if spec.is_file():
        from mpitempo.io.safeload import MAX_TOML_BYTES, read_bytes

        try:
            text = read_bytes(spec, MAX_TOML_BYTES).decode("utf-8", errors="replace")
        except MtError:
            return root.name
        for line in text.splitlines():
            k, _, v = line.partition("=")
            if k.strip() == "name":
                return v.strip().strip('"').strip("'")
    return root.name
