"""`mpitempo drift`: is clock drift linear? (Hunold and Carpen-Amarie 2018, Fig. 2)."""
from __future__ import annotations

import click

from mpitempo.options import FINITE
from mpitempo.errors import MtError
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option


def _seconds(text: str, what: str) -> float:
    from mpitempo.io.params import parse_duration

    try:
        v = parse_duration(text)
    except (MtError, ValueError):
        raise MtError(f"invalid {what} '{text}': expected a duration such as 500s, 10s, 200ms") from None
    if not v > 0:
        raise MtError(f"invalid {what} '{text}': must be > 0")
    return v


@click.command()
@np_option
@launcher_option
@mpicc_option
@click.option("--duration", default="60s", show_default=True, metavar="T",
              help="How long to sample the offsets, e.g. 500s as in the paper.")
@click.option("--interval", default=None, metavar="T", help="Time between samples (default: duration / 100).")
@click.option("--windows", default="1s,10s,20s,60s,all", show_default=True, metavar="LIST",
              help="Window lengths of the linear fits; 'all' = the whole duration.")
@click.option("--check-pp", type=click.IntRange(1, 1_000_000), default=50, show_default=True,
              help="Ping-pongs per offset sample (SKaMPI offset algorithm).")
@click.option("--sim-drifts", default=None, metavar="LIST",
              help="SIMULATED drift in ppm per rank (validation of the study itself).")
@click.option("--timeout", "timeout_s", type=FINITE, default=600, show_default=True,
              help="Seconds before the mpirun is killed; must exceed the duration.")
@click.option("-o", "--outdir", default=None, type=click.Path(file_okay=False),
              help="Keep the campaign directory (runs/<id>/clocks.json) here.")
@click.option("--plot", "plot_path", default=None, metavar="FILE.png",
              help="Offsets over time per rank with the whole-duration fits (Fig. 2).")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@json_option
def drift(np, launcher, mpicc, duration, interval, windows, check_pp, sim_drifts, timeout_s, outdir, plot_path,
          quiet, as_json):
    """Sample every rank's clock offset to rank 0 (no synchronisation) over DURATION and fit
    linear models per window: drift in ppm, R² and residuals, and the longest window over which a
    linear model holds (median R² >= 0.9).

    Example: mpitempo drift -n 4 --duration 500s --interval 5s --plot drift.png
    """
    from mpitempo.io.campaign import build_campaign
    from mpitempo.kinds.clocks import load_rows
    from mpitempo.runner.execute import check_campaign, run_campaign
    from mpitempo.stats.drift import drift_study

    dur = _seconds(duration, "--duration")
    step = _seconds(interval, "--interval") if interval else dur / 100
    if step > dur:
        raise MtError(f"invalid --interval '{interval}': longer than --duration '{duration}'")
    if dur + 30 > timeout_s:
        raise MtError(f"a drift study of {dur:g} s does not fit in --timeout {timeout_s:g} s "
                      f"(raise --timeout to at least {dur + 30:g})")
    wins = []
    for w in windows.split(","):
        w = w.strip()
        wins.append(dur if w == "all" else _seconds(w, "--windows item"))
    n = int(round(dur / step))
    if n + 1 > 2000:
        raise MtError(f"{n + 1} samples are too many (at most 2000): give a longer --interval")
    waits = ",".join(f"{i * step:.9g}" for i in range(n + 1))
    params = {"algorithms": "none", "wait": waits, "check_pp": check_pp}
    if sim_drifts:
        params["sim_drifts"] = sim_drifts
    # rank 0 sleeps between samples instead of spinning for minutes (the samples are ping-pongs)
    c = build_campaign(None, dict(params, np=np or 2, mpiruns=1, launcher=launcher, mpicc=mpicc,
                                  timeout_s=timeout_s, name="drift", env={"MPITEMPO_CLOCK_SLEEP": "1"}),
                       kind="clocks")
    check_campaign(c)
    with run_campaign(c, outdir, quiet=quiet or as_json) as (out, complete):
        rows = sorted(load_rows(complete), key=lambda r: r["wait_s"])
    import numpy as nump

    t = nump.array([r["wait_s"] for r in rows])
    ranks = sorted({p["rank"] for r in rows for p in r["per_rank"] if p["rank"] != 0})
    offs = {q: nump.array([next(p["offset_s"] for p in r["per_rank"] if p["rank"] == q) for r in rows])
            for q in ranks}
    res = drift_study(t, offs, wins)
    res.update({"nprocs": c.np[0], "duration_s": dur, "interval_s": step, "samples": int(t.size),
                "simulated": bool(sim_drifts)})
    if plot_path:
        from mpitempo.present.plots.drift import drift_figure
        from mpitempo.present.plots import png

        with open(plot_path, "wb") as f:
            f.write(png(drift_figure(t, offs, res)))
    if as_json:
        from mpitempo.present.tables import print_json

        res["whole"] = {str(k): v for k, v in res["whole"].items()}
        res["offsets_s"] = {str(k): v.tolist() for k, v in offs.items()}
        res["times_s"] = t.tolist()
        print_json(res)
        return
    from mpitempo.present.drift import print_drift

    print_drift(res, plot_path)
