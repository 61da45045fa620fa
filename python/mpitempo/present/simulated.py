"""The SIMULATED label of results from a simulated platform (SimGrid/SMPI, docs/simulation.md), for the
commands that print their own tables (pingpong, imbalance, tree, tune): one line for people and a JSON
record, from the runs' meta.json (analysis.flags.simulation_of)."""
from __future__ import annotations

import json
from pathlib import Path

KEYS = ("simulated", "simulator", "simgrid_version", "platform", "platform_sha256", "network_model",
        "ranks_per_host")


def record(meta: dict | None) -> dict | None:
    """The JSON record of one run's simulation (None on hardware)."""
    from mpitempo.analysis.flags import simulation_of

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


def line(sim: dict | None) -> str:
    """'SIMULATED platform ...: ...' (empty on hardware)."""
    if not sim:
        return ""
    plat = Path(str(sim.get("platform"))).name if sim.get("platform") else "?"
    ver = f" {sim['simgrid_version']}" if sim.get("simgrid_version") else ""
    model = f", network model {sim['network_model']}" if sim.get("network_model") else ""
    return (f"SIMULATED platform {plat} (SimGrid/SMPI{ver}{model}): the times are the platform model's, "
            "not a measurement of hardware")
