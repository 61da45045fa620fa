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
    calls: int               # MPI calls per measurement
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


def read_perrank(path: str | Path) -> PerRank:
    import numpy as np

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise MtError(f"cannot read '{path}': {e.strerror}") from None
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
    nmeas, rbytes = (int(x) for x in np.frombuffer(raw, dtype=order + "u8", count=2, offset=32))
    if rbytes != record_bytes(nprocs) or len(raw) != hbytes + nmeas * rbytes:
        raise MtError(f"'{path}' is truncated or inconsistent: {len(raw)} bytes, header says "
                      f"{hbytes} + {nmeas} x {rbytes}")
    dt = np.dtype([("exp", order + "u4"), ("rep", order + "u4"), ("valid", order + "u4"), ("zero", order + "u4"),
                   ("start", order + "f8", (nprocs,)), ("end", order + "f8", (nprocs,))])
    rec = np.frombuffer(raw, dtype=dt, count=nmeas, offset=hbytes)
    return PerRank(nprocs=nprocs, calls=max(1, calls), global_clock=bool(clock), exp=rec["exp"].astype(np.int64),
                   rep=rec["rep"].astype(np.int64), valid=rec["valid"].astype(bool),
                   start=rec["start"].reshape(nmeas, nprocs), end=rec["end"].reshape(nmeas, nprocs))
