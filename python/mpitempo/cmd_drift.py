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


DEFAULT_WINDOWS_S = (1.0, 10.0, 20.0, 60.0)


def _windows(text: str | None, dur: float, step: float, duration: str) -> list[float]:
    """The window lengths in seconds. A given length longer than the duration was fitted over the
    whole run and reported as a window of that length (100 s of linearity out of 60 s of samples),
    one shorter than 3 sample intervals has no fit, and a length twice ('all,all', '60s,all' of a
    60 s study) was a row twice: refused. The default keeps those of DEFAULT_WINDOWS_S that fit."""
    least = 3 * step * (1 - 1e-9)
    if text is None:
        return [w for w in DEFAULT_WINDOWS_S if least <= w < dur] + [dur]
    items = [w.strip() for w in text.split(",")]
    if any(not w for w in items):
        why = ("an empty item (two commas in a row, or a comma at an end)" if any(items) else
               "give one or more window lengths, e.g. 1s,10s,all")
        raise MtError(f"invalid --windows '{text}': {why}")
    out: list[float] = []
    for w in items:
        v = dur if w == "all" else _seconds(w, "--windows item")
        if v > dur * (1 + 1e-9):
            raise MtError(f"invalid --windows item '{w}': longer than --duration '{duration}' "
                          "(allowed: windows up to the duration, or all)")
        if v < least:
            raise MtError(f"invalid --windows item '{w}': a window must hold at least 3 samples "
                          f"(allowed: >= 3 x the interval of {step:g} s = {3 * step:g} s)")
        if any(abs(v - x) <= 1e-9 * dur for x in out):
            raise MtError(f"invalid --windows '{text}': a window of {v:g} s is listed twice (each length once"
                          + ("; 'all' is the whole duration" if "all" in items else "") + ")")
        out.append(v)
    return out


@click.command()
@np_option
@launcher_option
@mpicc_option
@click.option("--duration", default="60s", show_default=True, metavar="T",
              help="How long to sample the offsets, e.g. 500s as in the paper.")
@click.option("--interval", default=None, metavar="T", help="Time between samples (default: duration / 100).")
@click.option("--windows", default=None, metavar="LIST",
              help="Window lengths of the linear fits; 'all' = the whole duration. Each at most --duration and "
                   "at least 3 x --interval (a fit needs 3 samples). [default: those of 1s,10s,20s,60s that fit, "
                   "and all]")
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
    if plot_path:
        from mpitempo.io.paths import check_output_file

        check_output_file(plot_path, "the plot", ("png",))
    step = _seconds(interval, "--interval") if interval else dur / 100
    if step > dur:
        raise MtError(f"invalid --interval '{interval}': longer than --duration '{duration}'")
    if dur + 30 > timeout_s:
        raise MtError(f"a drift study of {dur:g} s does not fit in --timeout {timeout_s:g} s "
                      f"(raise --timeout to at least {dur + 30:g})")
    wins = _windows(windows, dur, step, duration)
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
