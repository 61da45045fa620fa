"""Reading perrank.bin (`run --per-rank`): every rank's start and end time of every measurement.
Format (docs/file-formats.md, src/core/run/perrank.h): a 48-byte header, then one fixed-size
record per measurement."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mpitempo.errors import MtError

if TYPE_CHECKING:   # numpy is imported where a file is read: `run` needs only the sizes below
    import numpy as np

MAGIC = b"MTPRANK1"
HEADER_BYTES = 48
FILE_NAME = "perrank.bin"


def record_bytes(nprocs: int) -> int:
    return 16 + 16 * nprocs


def file_bytes(nmeas: int, nprocs: int) -> int:
    """The size of a perrank.bin holding nmeas measurements of nprocs ranks."""
    return HEADER_BYTES + nmeas * record_bytes(nprocs)


@dataclass
class PerRank:
    nprocs: int
    calls: int               # MPI calls per measurement, as the header says (--inner of the loop schemes)
    global_clock: bool       # times on the synchronised global clock (else each rank's own timer)
    exp: np.ndarray          # (nmeas,) experiment position in the run (measurements.csv `exp`)
    rep: np.ndarray          # (nmeas,)
    valid: np.ndarray        # (nmeas,) bool
    start: np.ndarray        # (nmeas, nprocs) seconds
    end: np.ndarray          # (nmeas, nprocs) seconds

    def experiment(self, exp: int, valid_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of one experiment, each of shape (nprocs, nrep)."""
        sel = self.exp == exp
        if valid_only:
            sel &= self.valid
        return self.start[sel].T, self.end[sel].T

    def calls_of(self, exp: int, by_exp: dict[int, int]) -> int:
        """Calls per measurement of one experiment: by_exp's (experiment_calls) where the run decided
        it per experiment, else the header's."""
        return by_exp.get(int(exp), self.calls)


def experiment_calls(meta: dict) -> dict[int, int]:
    """exp -> calls per measurement, for the experiments whose count the run decided itself (the loop
    scheme with --inner-min-time makes fewer calls for long calls: meta.json experiments[].inner).
    perrank.bin's header holds the run's --inner only; a span / --inner would understate such an
    experiment's time by --inner / inner."""
    out = {}
    for e in meta.get("experiments") or []:
        if isinstance(e, dict) and isinstance(e.get("exp"), int) and isinstance(e.get("inner"), int) \
                and e["inner"] >= 1:
            out[e["exp"]] = e["inner"]
    return out


def _read_raw(path: Path, root) -> bytes:
    """The bytes of perrank.bin: never through a link (every component below root, and the file
    itself: O_NOFOLLOW), never a FIFO (it blocked) or device."""
    import errno
    import os
    import stat

    from mpitempo.io.safefs import _refuse, _what, check_not_link

    if root is not None:
        check_not_link(path, root, want="any", verb="read")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refuse(path, "a symbolic link", "read") from None
        raise MtError(f"cannot read '{path}': {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, _what(mode), "read")
        return f.read()


def read_perrank(path: str | Path, root: str | Path | None = None) -> PerRank:
    """perrank.bin, checked: the header's sizes, at least one rank, every time finite with end >=
    start per rank, valid 0 or 1, the padding 0, each (exp, rep) once. One line naming the file (and
    the record) on anything else. root: the directory the user named (links below it are refused)."""
    import numpy as np

    path = Path(path)
    raw = _read_raw(path, root)
    if len(raw) < HEADER_BYTES or raw[:8] != MAGIC:
        raise MtError(f"'{path}' is not a perrank.bin file (bad magic)")
    hdr = np.frombuffer(raw, dtype="<u4", count=6, offset=8)
    order = "<"
    if hdr[5] != 0x01020304:
        hdr = np.frombuffer(raw, dtype=">u4", count=6, offset=8)
        order = ">"
        if hdr[5] != 0x01020304:
            raise MtError(f"'{path}': unknown byte order marker")
    hbytes, version, nprocs, calls, clock = (int(x) for x in hdr[:5])
    if version != 1:
        raise MtError(f"'{path}' has perrank format version {version}; this mpitempo reads version 1")
    if hbytes != HEADER_BYTES or nprocs < 1:
        raise MtError(f"'{path}' is damaged: header of {hbytes} bytes for {nprocs} ranks (expected {HEADER_BYTES} "
                      "bytes and at least 1 rank)")
    nmeas, rbytes = (int(x) for x in np.frombuffer(raw, dtype=order + "u8", count=2, offset=32))
    if rbytes != record_bytes(nprocs) or len(raw) != hbytes + nmeas * rbytes:
        raise MtError(f"'{path}' is truncated or inconsistent: {len(raw)} bytes, header says "
                      f"{hbytes} + {nmeas} x {rbytes}")
    dt = np.dtype([("exp", order + "u4"), ("rep", order + "u4"), ("valid", order + "u4"), ("zero", order + "u4"),
                   ("start", order + "f8", (nprocs,)), ("end", order + "f8", (nprocs,))])
    rec = np.frombuffer(raw, dtype=dt, count=nmeas, offset=hbytes)
    start, end = rec["start"].reshape(nmeas, nprocs), rec["end"].reshape(nmeas, nprocs)

    def refuse(mask, what):
        k = int(np.argmax(mask))
        raise MtError(f"'{path}' is damaged: record {k} (exp {int(rec['exp'][k])}, rep {int(rec['rep'][k])}) "
                      f"{what(k)}")

    bad = rec["valid"] > 1
    if bad.any():
        refuse(bad, lambda k: f"has valid {int(rec['valid'][k])}, expected 0 or 1")
    bad = rec["zero"] != 0
    if bad.any():
        refuse(bad, lambda k: f"has {int(rec['zero'][k])} in its padding, expected 0")
    bad = ~(np.isfinite(start).all(axis=1) & np.isfinite(end).all(axis=1))
    if bad.any():
        refuse(bad, lambda k: f"has a time that is not finite (start {start[k].tolist()[:4]}, end "
                              f"{end[k].tolist()[:4]}), expected finite times in seconds")
    bad = (end < start).any(axis=1)
    if bad.any():
        refuse(bad, lambda k: f"has rank {int(np.argmax(end[k] < start[k]))} ending before it started "
                              f"(start {start[k][np.argmax(end[k] < start[k])]!r}, end "
                              f"{end[k][np.argmax(end[k] < start[k])]!r})")
    key = rec["exp"].astype(np.int64) << 32 | rec["rep"].astype(np.int64)
    uniq, first = np.unique(key, return_index=True)
    if len(uniq) != nmeas:
        dup = np.ones(nmeas, dtype=bool)
        dup[first] = False
        refuse(dup, lambda k: "repeats an earlier record (each measurement is recorded once)")
    return PerRank(nprocs=nprocs, calls=max(1, calls), global_clock=bool(clock), exp=rec["exp"].astype(np.int64),
                   rep=rec["rep"].astype(np.int64), valid=rec["valid"].astype(bool), start=start, end=end)
