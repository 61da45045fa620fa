"""Outlier filters, applied at analysis time: raw measurements are never deleted.

Two filters, both per group = one (campaign, mpirun, op, msize, nprocs), which fixes the
configuration too (paper 001, Alg. 3):

* ``tukey``: keep Q1 - k*IQR <= x <= Q3 + k*IQR (k = 1.5 by default; paper 001, section 3.3).
  Quartiles are linear-interpolated (numpy's default, DuckDB ``quantile_cont``). As in criterion,
  points outside the k fences are *mild* outliers and points outside the 2k fences (3 IQR by
  default) are *severe*; low and high are counted apart.
* ``cutcoef``: keep x <= cut_coef * median (paper 004, section 3.4; cut_coef = 2 there; > 1).

Only valid measurements enter a filter; invalid ones are never kept. The numpy functions are the
reference; ``filtered_view`` does the same in DuckDB for the bulk, and tests check they agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpitempo.errors import MtError

FILTERS = ("tukey", "cutcoef", "none")
GROUP = ("run_no", "op", "msize", "nprocs")   # run_no: one mpirun of one campaign


@dataclass(frozen=True)
class Filter:
    kind: str = "tukey"
    k: float = 1.5
    cut_coef: float = 2.0

    def __post_init__(self):
        if self.kind not in FILTERS:
            raise MtError(f"unknown filter '{self.kind}' (allowed: {', '.join(FILTERS)})")
        if not (self.k > 0):
            raise MtError(f"invalid Tukey factor {self.k}: must be > 0")
        if not (self.cut_coef > 1):
            raise MtError(f"invalid cut_coef {self.cut_coef}: must be > 1")

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
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return np.ones(0, dtype=bool)
    return x <= cut_coef * np.median(x)


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


# -- bulk (DuckDB) ---------------------------------------------------------------------------------

def _fences(con, filt: Filter, source: str) -> str:
    """The per-group fences as a temporary table, computed once per connection, filter and source
    (the quantiles are the expensive part; every later query joins the small table)."""
    import hashlib

    g = ", ".join(GROUP)
    name = "_mt_fences_" + hashlib.sha1(repr((filt, source)).encode()).hexdigest()[:12]
    have = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND temporary",
                       [name]).fetchone()[0]
    if have:
        return name
    if filt.kind == "tukey":
        k = float(filt.k)
        con.execute(f"""CREATE TEMP TABLE {name} AS
            WITH q AS (SELECT {g}, quantile_cont(runtime_s, [0.25, 0.75]) AS qq FROM {source} WHERE valid GROUP BY ALL)
            SELECT {g}, qq[1] - {k!r} * (qq[2] - qq[1]) AS lo, qq[2] + {k!r} * (qq[2] - qq[1]) AS hi,
                   qq[1] - {2 * k!r} * (qq[2] - qq[1]) AS slo, qq[2] + {2 * k!r} * (qq[2] - qq[1]) AS shi FROM q""")
    else:
        c = float(filt.cut_coef)
        con.execute(f"""CREATE TEMP TABLE {name} AS
            SELECT {g}, NULL::DOUBLE AS lo, {c!r} * median(runtime_s) AS hi, NULL::DOUBLE AS slo, NULL::DOUBLE AS shi
            FROM {source} WHERE valid GROUP BY ALL""")
    return name


def drop_fences(con) -> None:
    """Forget cached fences (after the data of a connection changed)."""
    for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '_mt_fences_%' "
                               "AND temporary").fetchall():
        con.execute(f"DROP TABLE {name}")


def filtered_view(con, filt: Filter | None, source: str = "meas") -> str:
    """A SQL subquery over ``source`` with every column plus ``keep`` (valid and not an outlier)
    and ``oclass`` (Tukey class as in tukey_classify, 1 for cutcoef outliers, 0 otherwise)."""
    filt = filt or NONE
    if filt.kind == "none":
        return f"(SELECT *, valid AS keep, 0 AS oclass FROM {source})"
    f = _fences(con, filt, source)
    g = ", ".join(GROUP)
    if filt.kind == "tukey":
        return f"""(SELECT m.*, (m.valid AND m.runtime_s >= f.lo AND m.runtime_s <= f.hi) AS keep,
                   CASE WHEN NOT m.valid THEN 0 WHEN m.runtime_s < f.slo THEN -2 WHEN m.runtime_s < f.lo THEN -1
                        WHEN m.runtime_s > f.shi THEN 2 WHEN m.runtime_s > f.hi THEN 1 ELSE 0 END AS oclass
            FROM {source} m LEFT JOIN {f} f USING ({g}))"""
    return f"""(SELECT m.*, (m.valid AND m.runtime_s <= f.hi) AS keep,
                   CASE WHEN m.valid AND m.runtime_s > f.hi THEN 1 ELSE 0 END AS oclass
            FROM {source} m LEFT JOIN {f} f USING ({g}))"""


def outlier_counts(con, filt: Filter | None) -> dict:
    """Totals over the whole data set: measurements (valid), outliers, mild, severe, low, high."""
    src = filtered_view(con, filt)
    row = con.execute(f"""SELECT count(*) FILTER (WHERE valid), count(*) FILTER (WHERE valid AND NOT keep),
        count(*) FILTER (WHERE abs(oclass) = 1), count(*) FILTER (WHERE abs(oclass) = 2),
        count(*) FILTER (WHERE oclass < 0), count(*) FILTER (WHERE oclass > 0) FROM {src}""").fetchone()
    n, out, mild, severe, low, high = (int(v or 0) for v in row)
    return {"measurements": n, "outliers": out, "mild": mild, "severe": severe, "low": low, "high": high,
            "filter": (filt or NONE).settings()}
