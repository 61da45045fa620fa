"""Planning a tune campaign to fit a time budget (`mpitempo tune --budget 10m`).

Cost model (estimates, documented in docs/tune.md): one mpirun costs a start-up and clock-sync
overhead (``1.0 + 0.25 x np`` s, or what a probe mpirun just took, whichever is larger: a busy machine
or a slow launcher shows there) plus at most ``time_slice`` per experiment (Round-Time ends an
experiment when its slice is used up or nrep measurements are valid). The ``default`` configuration
measures every op x size; a configuration per algorithm measures its op's sizes. Everything runs
``mpiruns`` times per process count.

When the plan does not fit, it gives up, in this order and says so: a shorter time slice (down to
50 ms), fewer mpiruns (down to the fewest that can reach p <= alpha in the two-sided rank-sum test),
then message sizes (the smallest and largest are kept longest). If even one size with that many
mpiruns does not fit, the budget is refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from mpitempo.errors import MtError
from mpitempo.io.sizes import format_size
from mpitempo.stats.compare import min_runs_for

MIN_SLICE_S = 0.05
_BUDGET = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|min|h)?\s*$")


def parse_budget(text: str) -> float:
    m = _BUDGET.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise MtError(f"invalid --budget '{text}': expected a positive duration such as 90s, 10m or 1h")
    return float(m.group(1)) * {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def overhead_s(np_: int) -> float:
    return 1.0 + 0.25 * np_


@dataclass
class Plan:
    ops: list[str]
    msizes: list[int]
    algorithms: dict[str, list[str]]          # op -> algorithm names
    np_list: list[int]
    mpiruns: int
    time_slice_s: float
    estimate_s: float = 0.0
    left_out: list[str] = field(default_factory=list)
    overhead: dict[int, float] = field(default_factory=dict)   # measured start-up cost per process count

    @property
    def configs(self) -> int:
        return 1 + sum(len(v) for v in self.algorithms.values())

    @property
    def total_mpiruns(self) -> int:
        return self.configs * self.mpiruns * len(self.np_list)


def _sizes_for(op: str, msizes: list[int]) -> list[int]:
    return [0] if op == "barrier" else msizes


def estimate(p: Plan) -> float:
    t = 0.0
    for np_ in p.np_list:
        o = max(overhead_s(np_), p.overhead.get(np_, 0.0))
        n_default = sum(len(_sizes_for(op, p.msizes)) for op in p.ops)
        t += o + n_default * p.time_slice_s
        for op in p.ops:
            t += len(p.algorithms.get(op, [])) * (o + len(_sizes_for(op, p.msizes)) * p.time_slice_s)
    return t * p.mpiruns


def _thin(sizes: list[int], n: int) -> list[int]:
    """n sizes of the sorted list, the smallest and largest first, the rest evenly spread."""
    if n >= len(sizes):
        return sizes
    if n == 1:
        return [sizes[0]]
    idx = sorted({round(i * (len(sizes) - 1) / (n - 1)) for i in range(n)})
    return [sizes[i] for i in idx]


def fit(p: Plan, budget_s: float | None, alpha: float) -> Plan:
    p.estimate_s = estimate(p)
    if budget_s is None or p.estimate_s <= budget_s:
        return p
    left = []
    # 1. shorter time slices
    if p.time_slice_s > MIN_SLICE_S:
        old = p.time_slice_s
        lo = MIN_SLICE_S
        best = None
        for ts in (old * f for f in (0.75, 0.5, 0.35, 0.25, 0.15, 0.1)):
            ts = max(lo, ts)
            p.time_slice_s = ts
            if estimate(p) <= budget_s:
                best = ts
                break
        p.time_slice_s = best if best else lo
        left.append(f"time slice per experiment {old * 1e3:g} ms -> {p.time_slice_s * 1e3:g} ms")
    # 2. fewer mpiruns
    floor = min_runs_for(alpha, "two-sided")
    if estimate(p) > budget_s and p.mpiruns > floor:
        old = p.mpiruns
        while p.mpiruns > floor and estimate(p) > budget_s:
            p.mpiruns -= 1
        left.append(f"mpiruns per configuration {old} -> {p.mpiruns}")
    # 3. fewer message sizes
    if estimate(p) > budget_s and len(p.msizes) > 1:
        allsizes = list(p.msizes)
        n = len(allsizes)
        while n > 1:
            n -= 1
            p.msizes = _thin(allsizes, n)
            if estimate(p) <= budget_s:
                break
        gone = [format_size(s) for s in allsizes if s not in p.msizes]
        left.append(f"message sizes left out: {', '.join(gone)} B")
    p.estimate_s = estimate(p)
    if p.estimate_s > budget_s:
        one = Plan(p.ops, p.msizes, p.algorithms, p.np_list, 1, p.time_slice_s, overhead=p.overhead)
        raise MtError(f"--budget {budget_s:g} s is too small: {p.configs} configurations ({p.configs - 1} algorithms "
                      f"+ default) need {estimate(one):.0f} s for one mpirun each and {p.estimate_s:.0f} s for the "
                      f"{p.mpiruns} mpiruns a decision at alpha {alpha:g} needs; give more time, fewer --ops or "
                      f"--algorithms")
    p.left_out = left
    return p


def probe_overhead(build, np_: int, launcher: str | None, env: dict | None = None) -> float | None:
    """Wall time of one minimal mpirun of the core (start-up, HCA3 clock sync, one 1 ms Round-Time
    experiment of MPI_Barrier, output), or None when it fails (the campaign will say why)."""
    import os
    import subprocess
    import tempfile
    import time

    from mpitempo.runner import watchdog
    from mpitempo.runner.launch import make_launch

    with tempfile.TemporaryDirectory(prefix="mpitempo-probe-") as d:
        cmd = [build.binary(), "--ops", "barrier", "--nrep", "1", "--warmup", "0", "--scheme", "roundtime",
               "--sync", "hca3", "--time-slice", "1ms", "--outdir", d, "--quiet", "--allow-few-valid"]
        launch = make_launch(build, np_, cmd, launcher, env or {})
        t0 = time.monotonic()
        try:
            r = watchdog.run(launch.argv, capture_output=True, env=dict(os.environ, **launch.env), timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return time.monotonic() - t0 if r.returncode == 0 else None
