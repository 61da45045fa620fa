"""Reading the exit times of an exit-imbalance campaign (timestamps.csv of the Round-Time scheme)
with DuckDB; the statistics are ``mpitempo.stats.imbalance``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpitempo.stats.imbalance import exit_stats


def load_exits(run_dirs: list[Path]) -> dict[str, np.ndarray]:
    """rank exit times per measurement: {'skew_s': [m], 'offsets_s': [m, p], 'nprocs': p}"""
    import duckdb

    files = [str(d / "timestamps.csv") for d in run_dirs if (d / "timestamps.csv").exists()]
    if not files:
        return {"skew_s": np.empty(0), "offsets_s": np.empty((0, 0)), "nprocs": 0}
    con = duckdb.connect()
    from mpitempo.kinds.base import sql_list

    lst = sql_list(files)   # each file as itself: DuckDB globs [ ] * ? in names
    rows = con.execute(f"""
        SELECT filename, exp, rep, rank, end_s FROM read_csv({lst}, header=true, filename=true,
               columns={{'op': 'VARCHAR', 'msize': 'BIGINT', 'exp': 'INTEGER', 'rep': 'INTEGER',
                         'rank': 'INTEGER', 'start_s': 'DOUBLE', 'end_s': 'DOUBLE', 'valid': 'INTEGER'}})
        WHERE valid = 1 ORDER BY filename, exp, rep, rank""").fetchnumpy()
    p = int(rows["rank"].max()) + 1 if len(rows["rank"]) else 0
    if p == 0:
        return {"skew_s": np.empty(0), "offsets_s": np.empty((0, 0)), "nprocs": 0}
    ends = rows["end_s"].reshape(-1, p)
    return exit_stats(ends)
