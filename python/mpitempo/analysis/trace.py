"""Reading a trace directory written by libmpitempo-trace.so (docs/trace.md) and computing the
result of `mpitempo trace DIR`: clock-condition violations on the raw and the global clock,
and the start skew of a chosen range of instances of one collective call. The statistics are
``mpitempo.stats.trace``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpitempo.errors import MtError
from mpitempo.stats import trace as st

COLUMNS = {"rank": "INTEGER", "seq": "BIGINT", "call": "VARCHAR", "kind": "VARCHAR",
           "t_enter_raw_s": "DOUBLE", "t_exit_raw_s": "DOUBLE", "t_enter_s": "DOUBLE", "t_exit_s": "DOUBLE",
           "bytes": "BIGINT", "peer": "INTEGER", "peer2": "INTEGER", "root": "INTEGER", "tag": "INTEGER",
           "recv_tag": "INTEGER", "comm": "VARCHAR", "req": "BIGINT", "of": "VARCHAR", "flags": "INTEGER",
           "site": "VARCHAR"}


OPTIONAL = {"req": 0, "of": "", "flags": 0,   # columns of format 2 (older traces have none)
            "site": ""}                      # the call site's address (tracers since call sites)


def _read_csv(files: list[Path], skip: int = 0) -> dict[str, np.ndarray]:
    import duckdb

    with open(files[0], newline="") as f:
        for _ in range(skip):
            f.readline()
        header = f.readline().strip().split(",")
    have = [k for k in COLUMNS if k in header]
    missing = [k for k in COLUMNS if k not in header and k not in OPTIONAL]
    if missing or len(header) != len(have):
        raise MtError(f"'{files[0]}' is not an events file of an mpitempo trace (columns missing: "
                      f"{', '.join(missing) or 'none'}; unknown: {', '.join(set(header) - set(COLUMNS)) or 'none'})")
    cols = ", ".join(f"'{k}': '{COLUMNS[k]}'" for k in header)
    lst = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    con = duckdb.connect()
    rel = con.execute(f"SELECT * FROM read_csv({lst}, header=true, delim=',', skip={skip}, columns={{{cols}}}) "
                      f"ORDER BY rank, seq").fetchnumpy()
    out = {}
    n = len(rel["rank"])
    for k in COLUMNS:
        if k not in header:
            out[k] = np.full(n, OPTIONAL[k], dtype=object if COLUMNS[k] == "VARCHAR" else np.int64)
            continue
        a = rel[k]
        if hasattr(a, "filled"):
            a = a.filled(-1 if COLUMNS[k] != "VARCHAR" else "")
        out[k] = np.asarray(a) if COLUMNS[k] != "VARCHAR" else np.asarray(a, dtype=object)
        if COLUMNS[k] == "VARCHAR":
            out[k] = np.asarray([x if x is not None else "" for x in out[k]], dtype=object)
    return out


def load(d: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(trace.json, events columns) of a complete trace; for an application that never called
    MPI_Finalize, the per-rank partial files (meta has complete=False)."""
    d = Path(d)
    if not d.is_dir():
        raise MtError(f"'{d}' is not a directory (expected a trace directory from 'mpitempo trace run')")
    meta_p = d / "trace.json"
    if meta_p.is_file():
        from mpitempo.io.safeload import load_json

        meta = load_json(meta_p)
        if not isinstance(meta, dict):
            raise MtError(f"'{meta_p}' is not a JSON object (expected an mpitempo trace record)")
        if meta.get("format") != "mpitempo-trace":
            raise MtError(f"'{meta_p}' is not an mpitempo trace (format '{meta.get('format')}')")
        ev_p = d / meta.get("events", "events.csv")
        if not ev_p.is_file():
            raise MtError(f"'{d}' has trace.json but no {ev_p.name}: incomplete trace directory")
        meta["complete"] = True
        return meta, _read_csv([ev_p])
    partial = sorted((d / "partial").glob("rank-*.csv")) if (d / "partial").is_dir() else []
    if partial:
        meta = {"format": "mpitempo-trace", "complete": False, "ranks": len(partial), "otf2": None,
                "perfetto": None, "sync": {"algorithm": _partial_sync(partial[0]), "duration_s": None,
                                          "drift_at_end_s": None},
                "note": "the application did not call MPI_Finalize: per-rank partial files, timestamps on the "
                        "MPI_Init clock model (no drift correction), no OTF2 or Perfetto output"}
        return meta, _read_csv(partial, skip=1)
    raise MtError(f"'{d}' holds no trace (no trace.json, no partial/rank-*.csv)")


def _partial_sync(p: Path) -> str | None:
    first = p.read_text().split("\n", 1)[0]
    return first.split(" sync ", 1)[1].split(" ", 1)[0].rstrip(",") if " sync " in first else None


def default_call(ev: dict) -> str | None:
    """MPI_Allreduce when traced, else the most frequent collective."""
    calls = [c for c, k in zip(ev["call"], ev["kind"]) if k in st.COLL_KINDS]
    if not calls:
        return None
    if "allreduce" in calls:
        return "allreduce"
    names, counts = np.unique(np.asarray(calls, dtype=str), return_counts=True)
    return str(names[np.argmax(counts)])


def summarise(d: str | Path, call: str | None = None, rng: str | None = None) -> tuple[dict, dict, list]:
    """The result of `mpitempo trace DIR` (the contract of docs/trace.md), the events, and the
    rows of every selected instance."""
    d = Path(d)
    meta, ev = load(d)
    wrapped = bool(meta.get("buffer", {}).get("events_overwritten", 0))
    n_ev = len(ev["rank"])
    v_raw = st.count_violations(ev, "raw", wrapped)
    v_glob = st.count_violations(ev, "global", wrapped)
    coll = sorted({c for c, k in zip(ev["call"], ev["kind"]) if k in st.COLL_KINDS})
    if call is not None and call not in coll:
        raise MtError(f"call '{call}' is not a collective in this trace (collectives traced: "
                      f"{', '.join(coll) if coll else 'none'})")
    call = call or default_call(ev)
    inst = st.call_instances(ev, call, wrapped) if call else []
    try:
        a, b = st.parse_range(rng, len(inst))
    except ValueError as e:
        raise MtError(f"{e}") from None
    chosen = inst[a:b]
    sk_raw = st.start_skew(ev, chosen, "raw")
    sk_glob = st.start_skew(ev, chosen, "global")
    sync = meta.get("sync", {})
    out = {
        "dir": str(d),
        "complete": meta.get("complete", True),
        "ranks": meta.get("ranks"),
        "events": n_ev,
        "oversubscribed": bool(meta.get("oversubscribed", False)),
        "timer": meta.get("timer"),
        "sync": {"algorithm": sync.get("algorithm"), "duration_s": sync.get("duration_s"),
                 "drift_at_end_s": sync.get("drift_at_end_s"),
                 "max_abs_offset_after_sync_s": sync.get("max_abs_offset_after_sync_s"),
                 "note": sync.get("note")},
        "buffer": meta.get("buffer"),
        "violations_raw": v_raw["total"],
        "violations_global": v_glob["total"],
        "violations": {"raw": v_raw, "global": v_glob},
        "otf2": str(d / meta["otf2"]) if meta.get("otf2") else None,
        "perfetto": str(d / meta["perfetto"]) if meta.get("perfetto") else None,
        "call": call,
        "call_instances": len(inst),
        "range": [a, b],
        "max_start_skew_raw_s": float(sk_raw.max()) if sk_raw.size else None,
        "max_start_skew_global_s": float(sk_glob.max()) if sk_glob.size else None,
        "median_start_skew_raw_s": float(np.median(sk_raw)) if sk_raw.size else None,
        "median_start_skew_global_s": float(np.median(sk_glob)) if sk_glob.size else None,
    }
    from mpitempo.analysis.trace_sites import resolve
    from mpitempo.stats import waitstates

    ev["site_label"], sites = resolve(d, ev["rank"], ev["site"])
    out["wait_states"] = waitstates.analyse(ev, wrapped)
    out["call_sites"] = sites
    out["communicators"] = meta.get("communicators")
    out["not_recorded"] = _not_recorded(d, meta)
    if meta.get("note"):
        out["note"] = meta["note"]
    return out, ev, chosen


def _not_recorded(d: Path, meta: dict) -> dict | None:
    """What the tracer saw and did not record (DIR/not_recorded.json): per MPI call, why and how
    many calls over all ranks; None for traces without it (partial traces, older tracers)."""
    p = d / (meta.get("not_recorded") or {}).get("file", "not_recorded.json")
    if not p.is_file():
        return None
    from mpitempo.io.safeload import load_json

    nr = load_json(p)
    calls = nr.get("calls") if isinstance(nr, dict) else None
    if not isinstance(calls, dict):
        raise MtError(f"'{p}' is not a not-recorded list (expected an object with 'calls')")
    return {"file": str(p), "calls": {k: {"why": v.get("why"), "total": v.get("total")} for k, v in calls.items()},
            "total": sum(int(v.get("total") or 0) for v in calls.values())}
