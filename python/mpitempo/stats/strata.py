"""Strata of runs by a recorded machine fact (the core-to-core latency probe): pure functions.

``strata(values)`` sorts the values (None = not measured, left out) and starts a new stratum
wherever two neighbours differ by at least RATIO times and by at least MIN_GAP (absolute units of
the values). A single run far from the others is a stratum of its own: a run whose ranks were
placed on distant cores (or on SMT siblings of one core) differs from its siblings by a factor,
while the probe's own noise is a few per cent. On the VM here the probe is ~100-130 ns between
near cores and ~380-500 ns between distant ones.
"""
from __future__ import annotations

RATIO = 1.6        # neighbours this many times apart belong to different strata ...
MIN_GAP = 30e-9    # ... when also this far apart (s): below it the probe cannot tell cores apart


def strata(values, ratio: float = RATIO, min_gap: float = MIN_GAP) -> list[list[int]]:
    """Indices of the measured values grouped into strata, in increasing order of value.
    [] when nothing was measured; one stratum when all values are alike."""
    idx = sorted((i for i, v in enumerate(values) if v is not None and v > 0), key=lambda i: values[i])
    out: list[list[int]] = []
    for i in idx:
        if out:
            prev = values[out[-1][-1]]
            if values[i] >= ratio * prev and values[i] - prev >= min_gap:
                out.append([i])
                continue
            out[-1].append(i)
        else:
            out.append([i])
    return out


def median(v) -> float | None:
    s = sorted(v)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
