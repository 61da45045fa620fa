"""The drift study's table for people."""
from __future__ import annotations

from mpitempo.present.tables import console, table


def print_drift(res: dict, plot_path: str | None) -> None:
    con = console()
    t = table(f"clock drift without sync: {res['nprocs']} ranks, {res['samples']} samples over "
              f"{res['duration_s']:g} s" + (" [SIMULATED drift]" if res["simulated"] else ""),
              [("window [s]", "right"), ("fits", "right"), ("median R²", "right"), ("min R²", "right"),
               ("median max residual [µs]", "right")])
    for w in res["windows"]:
        f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        t.add_row(f"{w['window_s']:g}", str(w["fits"]), f(w["median_r2"]), f(w["min_r2"]),
                  "-" if w["median_max_residual_s"] is None else f"{w['median_max_residual_s'] * 1e6:.3f}")
    t.caption = "consecutive windows per rank; R² of a linear fit of the offset to rank 0 (none: no variance)"
    t.caption_justify = "left"
    con.print(t)
    for q, f in res["whole"].items():
        r2 = "-" if f["r2"] is None else f"{f['r2']:.4f}"
        con.print(f"rank {q}: drift {f['drift_ppm']:+.4f} ppm over the whole run, R² {r2}, "
                  f"max residual {f['max_residual_s'] * 1e6:.3f} µs")
    if res["linear_holds_s"] is None:
        con.print("note: no window length has a median R² >= 0.9: either the offsets have no trend to explain "
                  "(ranks that read one clock, e.g. one host's TSC) or the drift is not linear at these lengths")
    else:
        con.print(f"note: a linear clock model holds (median R² >= 0.9) over windows of up to "
                  f"{res['linear_holds_s']:g} s")
    if plot_path:
        con.print(f"plot: {plot_path}")
