"""The SIMULATED label of results from a simulated platform (SimGrid/SMPI, docs/simulation.md), for the
commands that print their own tables (pingpong, imbalance, tree, tune): the line for people, of the JSON
record of analysis.simulated."""
from __future__ import annotations

from pathlib import Path


def line(sim: dict | None) -> str:
    """'SIMULATED platform ...: ...' (empty on hardware)."""
    if not sim:
        return ""
    plat = Path(str(sim.get("platform"))).name if sim.get("platform") else "?"
    ver = f" {sim['simgrid_version']}" if sim.get("simgrid_version") else ""
    model = f", network model {sim['network_model']}" if sim.get("network_model") else ""
    return (f"SIMULATED platform {plat} (SimGrid/SMPI{ver}{model}): the times are the platform model's, "
            "not a measurement of hardware")
