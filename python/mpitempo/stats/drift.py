"""Clock drift linearity (Hunold and Carpen-Amarie 2018, section V-B2, Fig. 2): offsets of each
rank's clock to rank 0 sampled over a long interval, linear fits per window with R², and the
longest window over which a linear model still fits. Pure functions."""
from __future__ import annotations

import numpy as np

R2_OK = 0.9   # "the R² values are usually higher than 0.9" over 10 s (Hunold and Carpen-Amarie 2018)


def linear_fit(t, y) -> dict:
    """Least-squares line y = slope t + intercept: slope (s/s and ppm), R² (None when y has no
    variance: nothing to explain), and the largest absolute residual in seconds."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.size < 3:
        raise ValueError("a fit needs at least 3 points")
    slope, icpt = np.polyfit(t, y, 1)
    res = y - (slope * t + icpt)
    sst = float(np.sum((y - y.mean()) ** 2))
    r2 = None if sst == 0 else 1.0 - float(np.sum(res ** 2)) / sst
    return {"slope": float(slope), "drift_ppm": float(slope) * 1e6, "intercept_s": float(icpt), "r2": r2,
            "max_residual_s": float(np.max(np.abs(res)))}


def window_fits(t, y, window_s: float) -> list[dict]:
    """Fits over consecutive windows [k W, (k + 1) W) with at least 3 points each; a window that
    reaches the last sample includes it (a window of the whole duration left the last sample out)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    out = []
    k = 0
    tmax = t.max()
    while k * window_s <= tmax:
        end = (k + 1) * window_s
        last = end >= tmax - 1e-9 * max(abs(tmax), 1.0)
        sel = (t >= k * window_s) & ((t <= end) if last else (t < end))
        if sel.sum() >= 3:
            out.append(dict(linear_fit(t[sel], y[sel]), start_s=k * window_s, window_s=window_s,
                            points=int(sel.sum())))
        k += 1
    return out


def drift_study(t, offsets: dict[int, np.ndarray], windows_s) -> dict:
    """offsets: rank -> offset to rank 0 (s) at the times t (s). Per window length: the median and
    minimum R² over ranks and windows, the median of the largest residuals; ``linear_holds_s``: the
    longest window length whose median R² is >= R2_OK (None when none is, or when no R² exists:
    offsets without any trend, as ranks sharing one clock)."""
    per_window = []
    for w in sorted(windows_s):
        fits = [f for y in offsets.values() for f in window_fits(t, y, w)]
        r2 = [f["r2"] for f in fits if f["r2"] is not None]
        per_window.append({"window_s": float(w), "fits": len(fits),
                           "median_r2": float(np.median(r2)) if r2 else None,
                           "min_r2": float(np.min(r2)) if r2 else None,
                           "median_max_residual_s": float(np.median([f["max_residual_s"] for f in fits]))
                           if fits else None})
    whole = {int(r): linear_fit(t, y) for r, y in offsets.items()}
    ok = [w["window_s"] for w in per_window if w["median_r2"] is not None and w["median_r2"] >= R2_OK]
    return {"windows": per_window, "whole": whole, "linear_holds_s": max(ok) if ok else None, "r2_threshold": R2_OK}
