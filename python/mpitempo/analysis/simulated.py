"""The simulation record of runs on a simulated platform (SimGrid/SMPI, docs/simulation.md): the JSON
record of the commands that print their own tables (pingpong, imbalance, tree, tune), from the runs'
meta.json (analysis.flags.simulation_of); present.simulated writes its line."""
from __future__ import annotations

import json
from pathlib import Path

from mpitempo.analysis.flags import simulation_of

KEYS = ("simulated", "simulator", "simgrid_version", "platform", "platform_sha256", "network_model",
        "ranks_per_host")


def record(meta: dict | None) -> dict | None:
    """The JSON record of one run's simulation (None on hardware)."""
    sim = simulation_of(meta or {})
    return {k: sim.get(k) for k in KEYS if k in sim} if sim else None


def of_dirs(dirs) -> dict | None:
    """The simulation record of the first simulated run among these run directories."""
    for d in dirs:
        try:
            rec = record(json.loads((Path(d) / "meta.json").read_text()))
        except (OSError, ValueError):
            continue
        if rec:
            return rec
    return None
