"""Reading a trace directory written by libmpitempo-trace.so (docs/trace.md) and computing the
result of `mpitempo trace DIR`: clock-condition violations on the raw and the global clock,
and the start skew of a chosen range of instances of one collective call. The statistics are
``mpitempo.stats.trace``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpitempo.analysis.trace_record import (MAX_RANKS, _not_recorded, check_meta, file_name,  # noqa: F401
                                            mark_complete, partial_meta, record)
from mpitempo.analysis.trace_sites import trace_file_present as _present
from mpitempo.errors import MtError
from mpitempo.io.safeload import load_json
from mpitempo.stats import trace as st

COLUMNS = {"rank": "INTEGER", "seq": "BIGINT", "call": "VARCHAR", "kind": "VARCHAR",
           "t_enter_raw_s": "DOUBLE", "t_exit_raw_s": "DOUBLE", "t_enter_s": "DOUBLE", "t_exit_s": "DOUBLE",
           "bytes": "BIGINT", "recv_bytes": "BIGINT", "peer": "INTEGER", "peer2": "INTEGER", "root": "INTEGER", "tag": "INTEGER",
           "recv_tag": "INTEGER", "comm": "VARCHAR", "req": "BIGINT", "of": "VARCHAR", "flags": "INTEGER",
           "site": "VARCHAR"}


OPTIONAL = {"req": 0, "of": "", "flags": 0,   # columns of format 2 (older traces have none)
            "site": "",                      # the call site's address (tracers since call sites)
            "recv_bytes": -1}                # collectives' received bytes (tracers since Score-P's rules; -1 unknown)


def _read_csv(files: list[Path], skip: int = 0) -> dict[str, np.ndarray]:
    import duckdb

    try:
        with open(files[0], newline="", encoding="utf-8") as f:
            for _ in range(skip):
                f.readline()
            header = f.readline().strip().split(",")
    except UnicodeDecodeError:
        raise MtError(f"'{files[0]}' is not an events file of an mpitempo trace (not UTF-8 text)") from None
    except OSError as e:
        raise MtError(f"cannot read '{files[0]}': {e.strerror}") from None
    have = [k for k in COLUMNS if k in header]
    missing = [k for k in COLUMNS if k not in header and k not in OPTIONAL]
    if missing or len(header) != len(have):
        raise MtError(f"'{files[0]}' is not an events file of an mpitempo trace (columns missing: "
                      f"{', '.join(missing) or 'none'}; unknown: {', '.join(set(header) - set(COLUMNS)) or 'none'})")
    cols = ", ".join(f"'{k}': '{COLUMNS[k]}'" for k in header)
    from mpitempo.kinds.base import sql_list

    lst = sql_list(files)   # each file as itself: DuckDB globs [ ] * ? in names
    con = duckdb.connect()
    try:
        rel = con.execute(f"SELECT * FROM read_csv({lst}, header=true, delim=',', skip={skip}, columns={{{cols}}}) "
                          f"ORDER BY rank, seq").fetchnumpy()
    except duckdb.Error as e:   # a truncated or edited line, a value of the wrong type, bytes that are not text
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        where = files[0] if len(files) == 1 else files[0].parent
        raise MtError(f"'{where}' is a damaged events file of an mpitempo trace: {first[:200]}") from None
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
    if _present(meta_p, d):
        meta = load_json(meta_p)
        if not isinstance(meta, dict):
            raise MtError(f"'{meta_p}' is not a JSON object (expected an mpitempo trace record)")
        if meta.get("format") != "mpitempo-trace":
            raise MtError(f"'{meta_p}' is not an mpitempo trace (format '{meta.get('format')}')")
        check_meta(meta, meta_p)
        ev_p = d / file_name(meta.get("events", "events.csv"), meta_p, "events")
        if not _present(ev_p, d):
            raise MtError(f"'{d}' has trace.json but no {ev_p.name}: incomplete trace directory")
        mark_complete(meta)
        ev = _read_csv([ev_p])
        check_events(ev, meta.get("ranks"), ev_p, [ev_p])
        return meta, ev
    meta, partial = partial_meta(d)
    if partial:
        ev = _read_csv(partial, skip=1)
        check_events(ev, meta["ranks"], d / "partial", partial, skip=1)
        return meta, ev
    raise MtError(f"'{d}' holds no trace (no trace.json, no partial/rank-*.csv)")


def check_events(ev: dict, ranks, where: Path, files: list[Path] | None = None, skip: int = 0) -> None:
    """Ranks within the trace's rank count (a rank of 2000000000 made the analysis allocate per rank
    up to it), finite timestamps (NaN compared false everywhere and gave no violation, no wait), and
    peers and roots that are ranks of the trace (or -1 none, -2 MPI_PROC_NULL): a message to rank
    99999 was matched against nothing and counted as a wait of no one."""
    r = ev["rank"]
    if r.size and (int(r.min()) < 0 or (isinstance(ranks, int) and int(r.max()) >= ranks)):
        bad_r = int(r.min()) if int(r.min()) < 0 else int(r.max())
        raise MtError(f"'{where}' is damaged: an event of rank {bad_r}, outside the trace's {ranks} ranks")
    for k in ("t_enter_raw_s", "t_exit_raw_s", "t_enter_s", "t_exit_s"):
        a = np.asarray(ev[k], dtype=float)
        if a.size and not np.isfinite(a).all():
            raise MtError(f"'{where}' is damaged: {k} holds a value that is not finite (NaN or infinity)")
    if not isinstance(ranks, int):
        return
    for k in ("peer", "peer2", "root"):
        a = np.asarray(ev[k], dtype=np.int64)
        bad = (a < -2) | (a >= ranks)
        if not bad.any():
            continue
        i = int(np.argmax(bad))
        f, line = _line_of(files or [], skip, int(ev["rank"][i]), int(ev["seq"][i]))
        at = f"'{f}':{line}" if f is not None else f"'{where}'"
        raise MtError(f"{at}: {k} {int(a[i])} is not a rank of the trace (allowed: 0..{ranks - 1} for its {ranks} "
                      "ranks, -1 none, -2 MPI_PROC_NULL)")


def _line_of(files: list[Path], skip: int, rank: int, seq: int) -> tuple[Path | None, int]:
    """The file and line number (1-based) of the event (rank, seq): for an error message only."""
    import csv

    for f in files:
        with open(f, newline="", encoding="utf-8", errors="replace") as fh:
            for _ in range(skip):
                fh.readline()
            rd = csv.reader(fh)
            head = next(rd, [])
            try:
                ri, si = head.index("rank"), head.index("seq")
            except ValueError:
                continue
            for row in rd:
                if len(row) > max(ri, si) and row[ri].strip() == str(rank) and row[si].strip() == str(seq):
                    return f, skip + rd.line_num
    return None, 0


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
        "incomplete_reason": meta.get("incomplete_reason"),
        "ranks": meta.get("ranks"),
        "events": n_ev,
        "oversubscribed": bool(meta.get("oversubscribed", False)),
        "timer": meta.get("timer"),
        "sync": {"algorithm": sync.get("algorithm"), "duration_s": sync.get("duration_s"),
                 "drift_at_end_s": sync.get("drift_at_end_s"),
                 "max_abs_offset_after_sync_s": sync.get("max_abs_offset_after_sync_s"),
                 "max_abs_offset_at_end_s": sync.get("max_abs_offset_at_end_s"),
                 "end_correction": sync.get("end_correction"),
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
