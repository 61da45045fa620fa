"""Reading a trace directory written by libmpitempo-trace.so (docs/trace.md) and computing the
result of `mpitempo trace DIR`: clock-condition violations on the raw and the global clock,
and the start skew of a chosen range of instances of one collective call. The statistics are
``mpitempo.stats.trace``."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mpitempo.errors import MtError
from mpitempo.stats import trace as st

COLUMNS = {"rank": "INTEGER", "seq": "BIGINT", "call": "VARCHAR", "kind": "VARCHAR",
           "t_enter_raw_s": "DOUBLE", "t_exit_raw_s": "DOUBLE", "t_enter_s": "DOUBLE", "t_exit_s": "DOUBLE",
           "bytes": "BIGINT", "peer": "INTEGER", "peer2": "INTEGER", "root": "INTEGER", "tag": "INTEGER",
           "recv_tag": "INTEGER", "comm": "VARCHAR"}


def _read_csv(files: list[Path], skip: int = 0) -> dict[str, np.ndarray]:
    import duckdb

    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    lst = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    con = duckdb.connect()
    rel = con.execute(f"SELECT * FROM read_csv({lst}, header=true, delim=',', skip={skip}, columns={{{cols}}}) "
                      f"ORDER BY rank, seq").fetchnumpy()
    out = {}
    for k in COLUMNS:
        a = rel[k]
        if hasattr(a, "filled"):
            a = a.filled(-1 if COLUMNS[k] != "VARCHAR" else "")
        out[k] = np.asarray(a) if COLUMNS[k] != "VARCHAR" else np.asarray(a, dtype=object)
    return out


def load(d: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(trace.json, events columns) of a complete trace; for an application that never called
    MPI_Finalize, the per-rank partial files (meta has complete=False)."""
    d = Path(d)
    if not d.is_dir():
        raise MtError(f"'{d}' is not a directory (expected a trace directory from 'mpitempo trace run')")
    meta_p = d / "trace.json"
    if meta_p.is_file():
        try:
            meta = json.loads(meta_p.read_text())
        except json.JSONDecodeError as e:
            raise MtError(f"'{meta_p}' is not valid JSON: {e}") from None
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
    if meta.get("note"):
        out["note"] = meta["note"]
    return out, ev, chosen
