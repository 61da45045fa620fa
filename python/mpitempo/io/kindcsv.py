"""The strict readers of the CSV files of ping-pong and LogP runs (timings.csv, logp.csv).

The measurement query of `summary`, `compare`, `report` and `export` reads these files through DuckDB,
which takes the columns by position: a header with the columns in another order was read silently
wrong (ticks taken for time_s, a rep for value_s). A directory may come from someone else, so every
complete run is read here first (``Kind.check_run_files``), as `tree --from` reads events.csv
(io/tree.py): never through a link, never a FIFO or device, the exact header, every line a row of the
kind's columns ending in a newline (a file cut mid-line is refused, not read to its last complete
line), at least one row, values in their range, no row twice. Every refusal is one line naming the
file, the line, the value (escaped) and what is allowed.
"""
from __future__ import annotations

import re
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io.tree import row_error

MAX_BYTES = 1 << 30          # 1 GiB: far more than any run writes (rows of at most ~60 bytes)
MAX_TIME_S = 1e9             # a timing longer than any mpirun may last is damage (docs/reliability.md)

_INT = r"-?[0-9]{1,18}"
_NUM = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_WORD = r"[A-Za-z0-9_]{1,32}"

TIMINGS_COLUMNS = (("kind", "word"), ("msize", "int"), ("npp", "int"), ("trial", "int"), ("ticks", "int"),
                   ("time_s", "num"))
TIMINGS_KINDS = ("pingpong", "estimate", "loop", "bidir")
LOGP_COLUMNS = (("rank_a", "int"), ("rank_b", "int"), ("quantity", "word"), ("rep", "int"), ("value_s", "num"))
LOGP_QUANTITIES = ("rtt", "o_s", "o_r", "train_1", "train_k")
_RX = {"int": _INT, "num": _NUM, "word": _WORD}


def _safe(v) -> str:
    from mpitempo.safe_text import safe

    s = safe(v)
    return s if len(s) <= 60 else s[:60] + "..."


def _explain(line: str, columns) -> str:
    fields = line.split(",")
    if line == "":
        return "the line is empty"
    if len(fields) != len(columns):
        names = ",".join(c for c, _ in columns)
        return f"the line has {len(fields)} fields, expected {len(columns)} ({names})"
    for (c, t), v in zip(columns, fields):
        if not re.fullmatch(_RX[t], v):
            want = {"int": "an integer", "num": "a finite number", "word": "a name"}[t]
            return f"column {c} is '{_safe(v)}', expected {want}"
    return "the line is not a row of this file"   # pragma: no cover - the expression and this agree


def read_text(p: Path, root: Path, run_files: str) -> str:
    """A data file of a run: not through a link, not a FIFO or device, at most MAX_BYTES, UTF-8."""
    from mpitempo.io.tree import _read_run_file

    return _read_run_file(p, root, MAX_BYTES, "the limit of this reader", missing=run_files)


def parse(text: str, p: Path, columns, what: str) -> dict:
    """Column name -> values (numpy int64 / float64 arrays, str lists for names) of a CSV text with
    exactly ``columns``; ``what`` names a row in the messages ("timing")."""
    import numpy as np

    names = [c for c, _ in columns]
    head = ",".join(names)
    if text == "":
        raise MtError(f"'{p}' is empty: expected the header '{head}' and one row per {what}")
    if not text.endswith("\n"):
        raise MtError(f"'{p}':{text.count(chr(10)) + 1}: the last line has no newline: the file is cut short "
                      "(truncated)")
    lines = text[:-1].split("\n")
    if lines[0] != head:
        got = lines[0].split(",")
        if sorted(got) == sorted(names):
            raise MtError(f"'{p}':1: header has the columns in another order ('{_safe(lines[0])}', expected "
                          f"'{head}'): refusing to read it by position")
        raise MtError(f"'{p}':1: header is '{_safe(lines[0])}', expected '{head}'")
    if len(lines) == 1:
        raise MtError(f"'{p}' has only its header: no {what} rows (a complete run has at least one)")
    rx = re.compile(",".join(f"({_RX[t]})" for _, t in columns))
    cols: list[list[str]] = [[] for _ in columns]
    for i, line in enumerate(lines[1:]):
        m = rx.fullmatch(line)
        if not m:
            raise MtError(f"'{p}':{i + 2}: {_explain(line, columns)}")
        for j, v in enumerate(m.groups()):
            cols[j].append(v)
    out = {}
    for j, (c, t) in enumerate(columns):
        if t == "word":
            out[c] = cols[j]
            continue
        try:
            a = np.array(cols[j], dtype=np.int64 if t == "int" else np.float64)
        except OverflowError:
            k = next(k for k, v in enumerate(cols[j]) if abs(int(v)) >= 2 ** 63)
            raise MtError(f"'{p}':{k + 2}: column {c} is {cols[j][k]}, expected an integer below 2^63") from None
        if t == "num":
            bad = ~np.isfinite(a) | (np.abs(a) > MAX_TIME_S)
            if bad.any():
                k = int(np.argmax(bad))
                raise MtError(f"'{p}':{k + 2}: {c} is '{_safe(cols[j][k])}', expected a finite time in seconds "
                              f"(-{MAX_TIME_S:.0e}..{MAX_TIME_S:.0e})")
        out[c] = a
    return out


def _first_duplicate(keys: list[tuple]) -> tuple[int, int] | None:
    seen: dict[tuple, int] = {}
    for k, key in enumerate(keys):
        if key in seen:
            return seen[key], k
        seen[key] = k
    return None


def _meta_num(meta: dict, path, key: str, sub: str | None = None, lo_exclusive: float | None = None):
    v = meta.get(key) if sub is None else (meta.get(key) or {}).get(sub) if isinstance(meta.get(key), dict) else None
    name = key if sub is None else f"{key}.{sub}"
    import math

    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
        (lo_exclusive is None or v > lo_exclusive)
    if not ok:
        shown = "missing" if v is None else _safe(repr(v))
        want = "a finite number" + (f" > {lo_exclusive:g}" if lo_exclusive is not None else "")
        raise MtError(f"'{path}' is damaged: {name} is {shown}, expected {want}")
    return v


def _nprocs(meta: dict, path, lo: int = 2) -> int:
    n = meta.get("nprocs")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= lo):
        shown = "missing" if n is None else _safe(repr(n))
        raise MtError(f"'{path}' is damaged: nprocs is {shown}, expected an integer >= {lo} (the run's ranks)")
    return n


def _meta(d: Path, root: Path, kind: str) -> dict:
    from mpitempo.io.rundir import load_meta
    from mpitempo.io.safefs import check_not_link

    mp = d / "meta.json"
    if check_not_link(mp, root, want="any", verb="read") is None:
        raise MtError(f"'{mp}' is missing: not a complete {kind} run")
    meta = load_meta(mp)
    if meta.get("kind") is not None and meta.get("kind") != kind:
        raise MtError(f"'{mp}' is a run of kind '{_safe(meta.get('kind'))}', not of mpitempo {kind}")
    return meta


def load_timings(d: Path, root: Path | None = None) -> tuple[dict, dict]:
    """(meta.json, columns of timings.csv) of a ping-pong run, every value checked: kind one of
    pingpong, estimate, loop, bidir; msize >= 0; npp >= 1; trial >= 0; time_s = ticks x s_per_tick / (2 npp)
    (the core writes both: a row whose two disagree was edited or has its values swapped); each
    (kind, msize, npp, trial) once; meta.json's nprocs an integer >= 2 and timer.s_per_tick a finite
    number > 0."""
    import numpy as np

    d = Path(d)
    root = d if root is None else Path(root)
    meta = _meta(d, root, "pingpong")
    mp = d / "meta.json"
    _nprocs(meta, mp)
    if not isinstance(meta.get("timer"), dict):
        raise MtError(f"'{mp}' is damaged: timer is {'missing' if meta.get('timer') is None else _safe(repr(meta.get('timer')))}"
                      ", expected an object with s_per_tick")
    spt = float(_meta_num(meta, mp, "timer", "s_per_tick", lo_exclusive=0.0))
    p = d / "timings.csv"
    t = parse(read_text(p, root, "a complete ping-pong run has meta.json and timings.csv"), p, TIMINGS_COLUMNS,
              "timing")
    for k, v in enumerate(t["kind"]):
        if v not in TIMINGS_KINDS:
            raise row_error(p, k, f"kind is '{_safe(v)}', expected one of {', '.join(TIMINGS_KINDS)}")
    for c, lo in (("msize", 0), ("npp", 1), ("trial", 0)):
        bad = t[c] < lo
        if bad.any():
            k = int(np.argmax(bad))
            raise row_error(p, k, f"{c} is {int(t[c][k])}, expected an integer >= {lo}")
    want = t["ticks"].astype(np.float64) * spt / (2.0 * t["npp"].astype(np.float64))
    bad = np.abs(t["time_s"] - want) > 1e-6 * np.abs(want) + 1e-15
    if bad.any():
        k = int(np.argmax(bad))
        raise row_error(p, k, f"time_s is {float(t['time_s'][k])!r}, but ticks x s_per_tick / (2 npp) is {float(want[k])!r} "
                        "(ticks, npp and time_s of one timing disagree: the row was edited or its columns swapped)")
    dup = _first_duplicate(list(zip(t["kind"], t["msize"].tolist(), t["npp"].tolist(), t["trial"].tolist())))
    if dup:
        k0, k = dup
        raise row_error(p, k, f"timing ({_safe(t['kind'][k])}, msize {int(t['msize'][k])}, npp {int(t['npp'][k])}, "
                        f"trial {int(t['trial'][k])}) repeats line {k0 + 2} (each timing is written once)")
    return meta, t


def load_logp(d: Path, root: Path | None = None) -> tuple[dict, dict]:
    """(meta.json, columns of logp.csv) of a LogP run, every value checked: rank_a and rank_b ranks of
    the run (0..nprocs-1) that differ; quantity one of rtt, o_s, o_r, train_1, train_k; rep >= 0;
    value_s finite and within 1e9 s; each (rank_a, rank_b, quantity, rep) once."""
    import numpy as np

    d = Path(d)
    root = d if root is None else Path(root)
    meta = _meta(d, root, "logp")
    n = _nprocs(meta, d / "meta.json")
    p = d / "logp.csv"
    t = parse(read_text(p, root, "a complete LogP run has meta.json and logp.csv"), p, LOGP_COLUMNS, "timing")
    for c in ("rank_a", "rank_b"):
        bad = (t[c] < 0) | (t[c] >= n)
        if bad.any():
            k = int(np.argmax(bad))
            raise row_error(p, k, f"{c} is {int(t[c][k])}, not a rank of the run (allowed: 0..{n - 1}; meta.json: {n} "
                            "ranks)")
    bad = t["rank_a"] == t["rank_b"]
    if bad.any():
        k = int(np.argmax(bad))
        raise row_error(p, k, f"rank_a and rank_b are both {int(t['rank_a'][k])}: a pair is two different ranks")
    for k, v in enumerate(t["quantity"]):
        if v not in LOGP_QUANTITIES:
            raise row_error(p, k, f"quantity is '{_safe(v)}', expected one of {', '.join(LOGP_QUANTITIES)}")
    bad = t["rep"] < 0
    if bad.any():
        k = int(np.argmax(bad))
        raise row_error(p, k, f"rep is {int(t['rep'][k])}, expected an integer >= 0")
    dup = _first_duplicate(list(zip(t["rank_a"].tolist(), t["rank_b"].tolist(), t["quantity"], t["rep"].tolist())))
    if dup:
        k0, k = dup
        raise row_error(p, k, f"timing (ranks {int(t['rank_a'][k])}-{int(t['rank_b'][k])}, {_safe(t['quantity'][k])}, "
                        f"rep {int(t['rep'][k])}) repeats line {k0 + 2} (each timing is written once)")
    return meta, t
