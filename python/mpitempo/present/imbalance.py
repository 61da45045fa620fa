"""The table of `mpitempo imbalance` for people (µs), fitted to 100 columns."""
from __future__ import annotations

from mpitempo.present.tables import console, print_fitted, us


def print_table(results: list[dict], op: str, np: int, sync: str, con=None) -> None:
    cols = [("variant", "left"), ("runs", "right"), ("n", "right"), ("median skew [µs]", "right"),
            ("mean [µs]", "right"), ("p95 [µs]", "right"), ("max [µs]", "right"), ("last to exit (share)", "left")]
    rows = []
    for r in results:
        if not r["n"]:
            rows.append([r["variant"], str(r["runs"]), "0", "-", "-", "-", "-", "no valid measurements"])
            continue
        last = max(r["per_rank"], key=lambda x: x["last_to_exit_fraction"])
        rows.append([r["variant"], str(r["runs"]), str(r["n"]), us(r["median_skew_s"]), us(r["mean_skew_s"]),
                     us(r["p95_skew_s"]), us(r["max_skew_s"]),
                     f"rank {last['rank']} ({100 * last['last_to_exit_fraction']:.0f}%)"])
    print_fitted(f"exit imbalance of {op} on {np} ranks (started together by Round-Time, global clock {sync})",
                 cols, rows, keep=("variant", "median skew [µs]"), drop_order=("mean [µs]",), wrap=("variant",),
                 con=con or console())
