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


EXACT_MAX_N = 30          # strata up to this many runs get their exact rank-sum distribution (<= 0.07 s) ...
EXACT_MAX_SUPPORT = 200_000   # ... as long as the combined distribution has at most this many values


def van_elteren(groups, alternative: str = "two-sided") -> dict | None:
    """The van Elteren (1960) stratified rank-sum test: does side A tend to lie below (or above) side
    B, given that both were measured in several strata? ``groups``: [(a_values, b_values)] per
    stratum; a stratum with an empty side carries no information and is left out. Within stratum k
    (N_k runs, n_k of them A) W_k is A's rank sum (mid-ranks for ties); the statistic is
    T = sum_k (W_k - n_k (N_k + 1) / 2) / (N_k + 1), the locally most powerful weighting when the
    strata differ in size. Its null distribution (A and B exchangeable within each stratum) is
    computed exactly (the convolution of the strata's rank-sum distributions) for small strata,
    otherwise from the normal approximation with the tie correction. ``alternative``: "less" = A
    smaller, "greater", "two-sided". Returns {statistic, p_value, method, strata} or None."""
    import math

    from mpitempo.stats.ranks import rankdata

    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(f"unknown alternative '{alternative}' (allowed: less, greater, two-sided)")
    used = [(list(a), list(b)) for a, b in groups if len(a) and len(b)]
    if not used:
        return None
    t_obs, var, exact = 0.0, 0.0, all(len(a) + len(b) <= EXACT_MAX_N for a, b in used)
    dists = []
    for a, b in used:
        n, nn = len(a), len(a) + len(b)
        r2 = [int(round(2 * x)) for x in rankdata(a + b)]      # doubled mid-ranks are integers
        w2 = sum(r2[:n])
        e2 = n * (nn + 1)
        t_obs += (w2 - e2) / 2 / (nn + 1)
        ties = {}
        for x in r2:
            ties[x] = ties.get(x, 0) + 1
        tie = sum(t ** 3 - t for t in ties.values()) / (nn * (nn - 1)) if nn > 1 else 0.0
        var += n * (nn - n) / 12 * ((nn + 1) - tie) / (nn + 1) ** 2
        if exact:
            # ways[j][s]: choices of j of the runs whose doubled ranks sum to s
            ways = [dict() for _ in range(n + 1)]
            ways[0][0] = 1
            for x in r2:
                for j in range(n - 1, -1, -1):
                    for s, c in ways[j].items():
                        ways[j + 1][s + x] = ways[j + 1].get(s + x, 0) + c
            total = math.comb(nn, n)
            dists.append({(s - e2) / 2 / (nn + 1): c / total for s, c in ways[n].items()})
    eps = 1e-9
    if exact:
        dist = {0.0: 1.0}
        for d in dists:
            new: dict = {}
            for t, p in dist.items():
                for u, q in d.items():
                    k = round(t + u, 9)
                    new[k] = new.get(k, 0.0) + p * q
            dist = new
            if len(dist) > EXACT_MAX_SUPPORT:
                exact = False
                break
    if exact:
        if alternative == "less":
            p = sum(q for t, q in dist.items() if t <= t_obs + eps)
        elif alternative == "greater":
            p = sum(q for t, q in dist.items() if t >= t_obs - eps)
        else:
            p = sum(q for t, q in dist.items() if abs(t) >= abs(t_obs) - eps)
    elif var <= 0:
        p = 1.0
    else:
        z = t_obs / math.sqrt(var)
        if alternative == "less":
            p = 0.5 * math.erfc(-z / math.sqrt(2))
        elif alternative == "greater":
            p = 0.5 * math.erfc(z / math.sqrt(2))
        else:
            p = math.erfc(abs(z) / math.sqrt(2))
    return {"statistic": t_obs, "p_value": min(1.0, p), "method": "exact" if exact else "normal",
            "strata": len(used)}
