"""Outlier filters, applied at analysis time: raw measurements are never deleted.

Two filters, both per group = one (campaign, mpirun, op, msize, nprocs), which fixes the
configuration too (Hunold and Carpen-Amarie 2016, Alg. 3):

* ``tukey``: keep Q1 - k*IQR <= x <= Q3 + k*IQR (k = 1.5 by default; Hunold and Carpen-Amarie
  2016, section 3.3).
  Quartiles are linear-interpolated (numpy's default, DuckDB ``quantile_cont``). As in criterion,
  points outside the k fences are *mild* outliers and points outside the 2k fences (3 IQR by
  default) are *severe*; low and high are counted apart.
* ``cutcoef``: keep x <= cut_coef * median (Luecke et al. 2009, section 3.4; cut_coef = 2 there;
  > 1). The ping-pong analysis uses the same function (``stats.pingpong.filter_cut``).

Only valid measurements enter a filter; invalid ones are never kept. These numpy functions are the
reference; ``mpitempo.analysis.filtering.filtered_view`` does the same in DuckDB for the bulk, and
tests check they agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpitempo.errors import MtError
from mpitempo.stats.describe import median

FILTERS = ("tukey", "cutcoef", "none")


@dataclass(frozen=True)
class Filter:
    kind: str = "tukey"
    k: float = 1.5
    cut_coef: float = 2.0

    def __post_init__(self):
        if self.kind not in FILTERS:
            raise MtError(f"unknown filter '{self.kind}' (allowed: {', '.join(FILTERS)})")
        if not (0 < self.k < float("inf")):
            raise MtError(f"invalid --tukey-k {as_typed(self.k)}: must be a finite number > 0")
        if not (1 < self.cut_coef < float("inf")):
            raise MtError(f"invalid --cut-coef {as_typed(self.cut_coef)}: must be a finite number > 1")

    def settings(self) -> dict:
        """What the outputs record about the filter."""
        if self.kind == "tukey":
            return {"kind": "tukey", "k": self.k, "severe_k": 2 * self.k,
                    "group": "campaign, mpirun, op, msize, nprocs", "quantiles": "linear"}
        if self.kind == "cutcoef":
            return {"kind": "cutcoef", "cut_coef": self.cut_coef, "group": "campaign, mpirun, op, msize, nprocs"}
        return {"kind": "none"}

    def describe(self) -> str:
        if self.kind == "tukey":
            return f"Tukey filter, k = {self.k:g} IQR per mpirun"
        if self.kind == "cutcoef":
            return f"cut_coef filter, x <= {self.cut_coef:g} x median per mpirun"
        return "no outlier filter"


def as_typed(v) -> str:
    """A value for an error message: as the user typed it when it came from the command line
    (options.TypedFloat: '1e400', not 'inf')."""
    typed = getattr(v, "typed", None)
    return typed if typed else f"{v:g}" if isinstance(v, float) else str(v)


NONE = Filter("none")


# -- reference implementations (numpy) -------------------------------------------------------------

def tukey_fences(x, k: float = 1.5) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    q1, q3 = np.quantile(x, [0.25, 0.75])
    iqr = q3 - q1
    return q1 - k * iqr, q3 + k * iqr


def tukey_keep(x, k: float = 1.5) -> np.ndarray:
    """Boolean mask of the points inside the Tukey fences (all True for fewer than 1 point)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return np.ones(0, dtype=bool)
    lo, hi = tukey_fences(x, k)
    return (x >= lo) & (x <= hi)


def tukey_classify(x, k: float = 1.5) -> np.ndarray:
    """Per point: 0 inside, -1/+1 low/high mild (outside k fences), -2/+2 low/high severe (outside 2k)."""
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.size, dtype=int)
    if x.size == 0:
        return out
    q1, q3 = np.quantile(x, [0.25, 0.75])
    iqr = q3 - q1
    out[x < q1 - k * iqr] = -1
    out[x < q1 - 2 * k * iqr] = -2
    out[x > q3 + k * iqr] = 1
    out[x > q3 + 2 * k * iqr] = 2
    return out


def cutcoef_keep(x, cut_coef: float = 2.0) -> np.ndarray:
    """Boolean mask of the points with x <= cut_coef * median(x) (Luecke et al. 2009, section 3.4)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return np.ones(0, dtype=bool)
    return x <= cut_coef * median(x)


def keep_mask(x, filt: Filter) -> np.ndarray:
    if filt.kind == "tukey":
        return tukey_keep(x, filt.k)
    if filt.kind == "cutcoef":
        return cutcoef_keep(x, filt.cut_coef)
    return np.ones(np.asarray(x).size, dtype=bool)


def outlier_line(n_out: int, n: int, mild: int | None = None, severe: int | None = None) -> str:
    """criterion's sentence."""
    s = f"Found {n_out} outliers among {n} measurements"
    if n:
        s += f" ({100.0 * n_out / n:.2f}%)"
    if mild is not None and n_out:
        s += f": {mild} mild, {severe} severe"
    return s
