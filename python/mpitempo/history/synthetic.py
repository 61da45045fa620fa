"""Synthetic histories for tests and benchmarks: nightly campaign directories (io.synthetic.make_campaign)
with controlled dates, factors, a slowdown from a given night on, and loaded nights whose runs are marked
as sharing their CPU (meta.json shared_cpu, as the core's start-up check writes it)."""
from __future__ import annotations

from pathlib import Path

from mpitempo.io.synthetic import make_campaign


def make_history(root, nights: int = 12, change_at: int | None = 7, factor: float = 1.10, loaded=(),
                 load_factor: float = 1.4, runs: int = 5, ops=("allreduce",), msizes=(8, 1024), nrep: int = 40,
                 start: str = "2026-10-01", libraries=("SynthMPI 1.0", "SynthMPI 1.1"), seed: int = 0,
                 host: str = "node0") -> list[Path]:
    """Campaign directories root/nightNN, one a day from `start` (02:00 UTC); from night change_at on the
    runtimes are `factor` times larger and the library is libraries[1]; the nights in `loaded` are
    load_factor times slower and their runs say shared_cpu."""
    from datetime import date, timedelta

    root = Path(root)
    d0 = date.fromisoformat(start)
    out = []
    for i in range(nights):
        after = change_at is not None and i >= change_at
        f = (factor if after else 1.0) * (load_factor if i in loaded else 1.0)
        meta = {"start_time": f"{(d0 + timedelta(days=i)).isoformat()}T02:00:00Z",
                "mpi": {"library": libraries[1 if after else 0]},
                "ranks": [{"rank": r, "host": host} for r in range(2)]}
        if i in loaded:
            meta["shared_cpu"] = {"shared": True, "min_cpu_share": 0.45}
        out.append(make_campaign(root / f"night{i:02d}", {"A": f}, runs=runs, ops=ops, msizes=msizes, nrep=nrep,
                                 seed=seed * 1000 + i, run_sd=0.005, meta={"A": meta}, name="nightly"))
    return out
