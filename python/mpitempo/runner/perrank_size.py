"""The size of the per-rank raw times a campaign will write (`run --per-rank`), stated before it starts."""
from __future__ import annotations

from mpitempo.io.perrank import file_bytes


def planned_bytes(c) -> tuple[int, int]:
    """(largest perrank.bin of one mpirun, total over the campaign) in bytes; (0, 0) without --per-rank."""
    one, total = 0, 0
    for cfg in c.configs:
        p = c.params_for(cfg)
        if not p.get("per_rank"):
            continue
        nexp = sum(1 if op == "barrier" else len(p["msizes"]) for op in p["ops"])
        for np in c.np:
            b = file_bytes(nexp * int(p["nrep"]), np)
            one = max(one, b)
            total += b * c.mpiruns
    return one, total


def human(b: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f:
            return f"{b / f:.1f} {unit}"
    return f"{b} B"


def size_note(c) -> str | None:
    one, total = planned_bytes(c)
    if not one:
        return None
    return (f"mpitempo: --per-rank: perrank.bin up to {human(one)} per mpirun, "
            f"{human(total)} for the campaign (48 + measurements x (16 + 16 x nprocs) bytes)")
