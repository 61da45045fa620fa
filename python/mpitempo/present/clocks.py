"""Clock-sync results for people: the table of `mpitempo clocks` and `mpitempo summary` of a clocks campaign."""
from __future__ import annotations

from mpitempo.present.tables import print_fitted, us


def clocks_table(summary: list[dict], title: str) -> None:
    cols = [("algorithm", "left"), ("wait [s]", "right"), ("runs", "right"), ("sync [ms]", "right"),
            ("max |offset| [µs]", "right"), ("worst [µs]", "right"), ("median |offset| [µs]", "right"),
            ("max |drift| [ppm]", "right"), ("flagged", "right")]
    rows = [[s["algorithm"], f"{s['wait_s']:g}", str(s["mpiruns"]), f"{s['sync_duration_s'] * 1e3:.1f}",
             us(s["max_abs_offset_s"]), us(s["worst_max_abs_offset_s"]), us(s["median_abs_offset_s"]),
             f"{s['max_abs_drift_ppm']:.3f}", str(s.get("flagged_runs", 0))] for s in summary]
    print_fitted(title, cols, rows, keep=("algorithm", "max |offset| [µs]"),
                 drop_order=("median |offset| [µs]", "runs", "worst [µs]"),
                 caption="medians over mpiruns; worst = the largest max |offset| of any mpirun; flagged = mpiruns "
                         "below the stated accuracy (sync_inaccurate: docs/clocks.md)")


def clocks_html(summary: list[dict], plot_png: bytes | None, title: str) -> str:
    import base64

    from mpitempo.present.html import esc   # control characters escaped too (HTML does not allow them)

    rows = "".join(
        f"<tr><td>{esc(s['algorithm'])}</td><td class=n>{s['wait_s']:g}</td><td class=n>{s['mpiruns']}</td>"
        f"<td class=n>{s['sync_duration_s'] * 1e3:.1f}</td><td class=n>{us(s['max_abs_offset_s'])}</td>"
        f"<td class=n>{us(s['worst_max_abs_offset_s'])}</td><td class=n>{us(s['median_abs_offset_s'])}</td>"
        f"<td class=n>{s['max_abs_drift_ppm']:.3f}</td><td class=n>{s.get('flagged_runs', 0)}</td></tr>" for s in summary)
    img = (f'<img alt="sync duration vs max offset" src="data:image/png;base64,{base64.b64encode(plot_png).decode()}">'
           if plot_png else "")
    return (f"<!doctype html><html><head><meta charset=utf-8><meta name=generator content=mpitempo><title>{esc(title)}</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1150px;padding:0 1em}"
            "table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ddd;padding:3px 8px}"
            "td.n{text-align:right}img{max-width:100%}</style></head><body>"
            f"<h1>{esc(title)}</h1><table><tr><th>algorithm</th><th>wait [s]</th><th>runs</th>"
            "<th>sync [ms]</th><th>max |offset| [µs]</th><th>worst [µs]</th><th>median |offset| [µs]</th>"
            f"<th>max |drift| [ppm]</th><th>flagged</th></tr>{rows}</table><p>Medians over mpiruns (Hunold and Carpen-Amarie 2018, "
            f"Algorithm 6).</p>{img}</body></html>")
