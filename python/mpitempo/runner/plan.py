"""The mpiruns of a campaign in the order they run: configurations and process counts interleaved
across mpiruns, or shuffled with the campaign seed (runner.execute runs them, runner.adaptive adds
rounds, runner.resume shows the first one's command)."""
from __future__ import annotations

import random
from dataclasses import dataclass

from mpitempo.io.campaign import Campaign


@dataclass
class PlannedRun:
    run_id: str
    config: str
    np: int
    run_index: int


def plan(c: Campaign) -> list[PlannedRun]:
    """Interleave configurations and process counts across mpiruns (run 1 of A,
    run 1 of B, ...), or shuffle the whole list with the campaign seed."""
    runs = []
    for i in range(c.mpiruns):
        for np in c.np:
            for cfg in c.configs:
                suffix = f"-np{np}" if len(c.np) > 1 else ""
                runs.append(PlannedRun(f"{cfg.name}{suffix}-{i:03d}", cfg.name, np, i))
    if c.order == "random":
        random.Random(c.seed if c.seed is not None else 0).shuffle(runs)
    return runs
