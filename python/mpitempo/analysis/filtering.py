"""The outlier filters of ``mpitempo.stats.outliers`` in bulk, as SQL over DuckDB.

Per group = one (campaign, mpirun, op, msize, nprocs): the Tukey fences (Hunold and
Carpen-Amarie 2016, section 3.3) or the cut_coef x median limit (Luecke et al. 2009, section 3.4)
are computed once per connection and joined to the measurements. The numpy functions in
``stats.outliers`` are the reference; tests check that both keep the same measurements.
"""
from __future__ import annotations

import hashlib

from mpitempo.stats.outliers import NONE, Filter

GROUP = ("run_no", "op", "msize", "nprocs")   # run_no: one mpirun of one campaign


def _fences(con, filt: Filter, source: str) -> str:
    """The per-group fences as a temporary table, computed once per connection, filter and source
    (the quantiles are the expensive part; every later query joins the small table)."""
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
