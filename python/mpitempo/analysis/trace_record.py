"""The record of a trace directory without its events (what `trace run` prints after the run):
trace.json checked, whether the trace is complete and why not, the partial files of a run that
did not reach MPI_Finalize, not_recorded.json. No numpy: `trace run` pays for no analysis."""
from __future__ import annotations

import re
import signal
from pathlib import Path

from mpitempo.analysis.trace_sites import trace_file_present as _present
from mpitempo.errors import MtError
from mpitempo.io.safeload import load_json
from mpitempo.safe_text import safe


def partial_meta(d: Path) -> tuple[dict | None, list[Path]]:
    """The trace record of a run without MPI_Finalize, from its partial/rank-R.csv files (None and []
    if there are none)."""
    partial = []
    if _present(d / "partial", d, want="dir"):
        partial = sorted((d / "partial").glob("rank-*.csv"))
        for p in partial:
            _present(p, d)
    if not partial:
        return None, []
    meta = {"format": "mpitempo-trace", "complete": False, "ranks": _partial_ranks(partial), "otf2": None,
            "perfetto": None, "sync": {"algorithm": _partial_sync(partial[0]), "duration_s": None,
                                      "drift_at_end_s": None},
            "note": "the application did not call MPI_Finalize: per-rank partial files, timestamps on the "
                    "MPI_Init clock model (no drift correction), no OTF2 or Perfetto output"}
    meta["incomplete_reason"] = _partial_reason(partial, meta["ranks"])
    m = re.search(r"; timer (\S+),", _partial_header(partial[0]))
    meta["timer"] = m.group(1) if m else None
    return meta, partial


def _data_lines(p: Path) -> int:
    """Events in a partial file: its lines but the comment and the header."""
    with open(p, "rb") as f:
        return max(0, sum(1 for _ in f) - 2)


MAX_RANKS = 1 << 24


def mark_complete(meta: dict) -> None:
    """meta["complete"] and meta["incomplete_reason"] of a trace.json: the tracer writes both (a full
    buffer lost events); an older tracer's trace.json is judged from its buffer counts."""
    b = meta.get("buffer") or {}
    lost = int(b.get("events_dropped") or 0), int(b.get("events_overwritten") or 0)
    if not isinstance(meta.get("complete"), bool):
        meta["complete"] = not any(lost)
    if not meta["complete"] and not isinstance(meta.get("incomplete_reason"), str):
        meta["incomplete_reason"] = (f"buffer full on {b.get('ranks_full')} rank(s) (--on-full {b.get('on_full')}): "
                                     f"{lost[0]} events not recorded, {lost[1]} overwritten")


def _partial_header(p: Path) -> str:
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.readline()


def _partial_ranks(partial: list[Path]) -> int:
    """The run's rank count as the partial files' first lines state it ("rank R of N"): ranks that
    wrote nothing (killed) are missing from the files, not from the run."""
    import re

    ns = {int(m.group(1)) for p in partial if (m := re.search(r" rank \d+ of (\d+)", _partial_header(p)))}
    n = max(ns) if ns else len(partial)
    return n if 1 <= n <= MAX_RANKS else len(partial)


def _ranks_text(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:10])) + (f", ... ({len(ranks)})" if len(ranks) > 10 else "")


def _partial_reason(partial: list[Path], ranks: int) -> str:
    """Why a partial trace is partial, from its files: the ranks a signal interrupted (the first line
    says "(signal N)"), the ranks that wrote nothing (killed, or killed while writing: a .tmp left)."""

    have = {int(m.group(1)) for p in partial if (m := re.fullmatch(r"rank-(\d+)\.csv", p.name))}
    sigs: dict[int, list[int]] = {}
    for p in partial:
        m = re.search(r"no MPI_Finalize \(signal (\d+)\)", _partial_header(p))
        r = re.fullmatch(r"rank-(\d+)\.csv", p.name)
        if m and r:
            sigs.setdefault(int(m.group(1)), []).append(int(r.group(1)))
    why = "the application did not call MPI_Finalize"
    for sig, rs in sorted(sigs.items()):
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        why += f"; interrupted by {name} on rank(s) {_ranks_text(sorted(rs))}"
    missing = sorted(set(range(ranks)) - have)
    if missing:
        d = partial[0].parent
        cut = [r for r in missing if (d / f"rank-{r}.csv.tmp").exists()]
        why += f"; rank(s) {_ranks_text(missing)} of {ranks} wrote no events (killed" + \
               (f"; {_ranks_text(cut)} while writing them" if cut else "") + ")"
    return why


def file_name(v, meta_p: Path, key: str) -> str:
    """A file name that trace.json records (events, not_recorded.file): a plain name inside the trace
    directory, never a path elsewhere ('/etc/passwd', '../x')."""
    if not isinstance(v, str) or not v or "/" in v or "\\" in v or v in (".", "..") or "\0" in v:
        raise MtError(f"'{meta_p}' names {key} file '{safe(v)}': expected a file name inside the trace directory")
    return v


def check_meta(meta: dict, meta_p: Path) -> None:
    """The keys of trace.json that are read, of the types the tracer writes (one line naming the key)."""
    def bad(key, want):
        raise MtError(f"'{meta_p}' is damaged: '{key}' is {safe(repr(meta.get(key)))[:80]}, expected {want}")

    r = meta.get("ranks")
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= MAX_RANKS:
        bad("ranks", f"an integer 1..{MAX_RANKS}")
    for key in ("buffer", "sync", "not_recorded"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            bad(key, "an object")
    for key in ("timer", "otf2", "perfetto", "note", "calls"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            bad(key, "a string")
    if meta.get("communicators") is not None and not (
            isinstance(meta["communicators"], list) and all(isinstance(x, dict) for x in meta["communicators"])):
        bad("communicators", "a list of objects")
    for v in (meta.get("buffer") or {}).values():
        if v is not None and not isinstance(v, (int, float, str)):
            bad("buffer", "an object of numbers")
    for key in ("events_dropped", "events_overwritten", "ranks_full"):
        v = (meta.get("buffer") or {}).get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            bad("buffer", f"an object whose {key} is an integer >= 0")
    sync = meta.get("sync") or {}
    for key in ("duration_s", "drift_at_end_s", "max_abs_offset_after_sync_s", "max_abs_offset_at_end_s"):
        if sync.get(key) is not None and (isinstance(sync[key], bool) or not isinstance(sync[key], (int, float))):
            bad("sync", f"an object whose {key} is a number")


def _partial_sync(p: Path) -> str | None:
    first = p.read_text(errors="replace").split("\n", 1)[0]
    return first.split(" sync ", 1)[1].split(" ", 1)[0].rstrip(",") if " sync " in first else None


def record(d: str | Path) -> dict:
    """What `trace run` prints after the run without --analyse: the trace's own record (trace.json,
    not_recorded.json, the partial files' first lines), no events read; the keys of summarise that
    do not need the events."""
    d = Path(d)
    meta_p = d / "trace.json"
    if not _present(meta_p, d):
        meta, partial = partial_meta(d)
        n = sum(_data_lines(p) for p in partial)
    else:
        meta = load_json(meta_p)
        if not isinstance(meta, dict) or meta.get("format") != "mpitempo-trace":
            raise MtError(f"'{meta_p}' is not an mpitempo trace record")
        check_meta(meta, meta_p)
        mark_complete(meta)
        per = meta.get("events_per_rank")
        n = sum(int(x) for x in per) if isinstance(per, list) else (meta.get("buffer") or {}).get("events_kept")
    sync = meta.get("sync") or {}
    out = {"dir": str(d), "complete": meta.get("complete", True), "incomplete_reason": meta.get("incomplete_reason"),
           "ranks": meta.get("ranks"), "events": n, "oversubscribed": bool(meta.get("oversubscribed", False)),
           "timer": meta.get("timer"),
           "sync": {k: sync.get(k) for k in ("algorithm", "duration_s", "drift_at_end_s", "max_abs_offset_after_sync_s",
                                             "max_abs_offset_at_end_s", "end_correction", "note")},
           "buffer": meta.get("buffer"),
           "otf2": str(d / meta["otf2"]) if meta.get("otf2") else None,
           "perfetto": str(d / meta["perfetto"]) if meta.get("perfetto") else None,
           "communicators": meta.get("communicators"),
           "not_recorded": _not_recorded(d, meta),
           "analysed": False}
    if meta.get("note"):
        out["note"] = meta["note"]
    return out


def _not_recorded(d: Path, meta: dict) -> dict | None:
    """What the tracer saw and did not record (DIR/not_recorded.json): per MPI call, why and how
    many calls over all ranks; None for traces without it (partial traces, older tracers)."""
    p = d / file_name((meta.get("not_recorded") or {}).get("file", "not_recorded.json"), d / "trace.json",
                      "not_recorded")
    if not _present(p, d):
        return None
    nr = load_json(p)
    calls = nr.get("calls") if isinstance(nr, dict) else None
    if not isinstance(calls, dict):
        raise MtError(f"'{p}' is not a not-recorded list (expected an object with 'calls')")
    for k, v in calls.items():
        t = v.get("total") if isinstance(v, dict) else None
        if not isinstance(v, dict) or isinstance(t, bool) or not isinstance(t, (int, type(None))) or (t or 0) < 0 \
                or not isinstance(v.get("why"), (str, type(None))):
                raise MtError(f"'{p}' is damaged: the entry of '{safe(k)}' is not an object with 'why' (a string) and "
                          "'total' (an integer >= 0)")
    return {"file": str(p), "calls": {k: {"why": v.get("why"), "total": v.get("total")} for k, v in calls.items()},
            "total": sum(int(v.get("total") or 0) for v in calls.values())}
