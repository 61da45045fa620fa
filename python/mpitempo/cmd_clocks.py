"""`mpitempo clocks`: evaluate clock-synchronisation algorithms (paper 000, Fig. 3).

Every mpirun runs `mpitempo-clocks`, which synchronises with each spec in turn
and measures every rank's offset to rank 0 right after sync and after each wait
time. The C side validates the specs (`--check-args`, no MPI), so there is one
parser of the spec syntax (docs/clocks.md).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess

import click

from mpitempo.build import ensure_build
from mpitempo.errors import MtError
from mpitempo.runner.launch import make_launch
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option, timer_option
from mpitempo.present.tables import console, print_json, table, us

DEFAULT_ALGORITHMS = "skampi,hoefler,jk,hca,hca2,hca3"


def parse_waits(text: str) -> list[float]:
    """'0,1,10' -> [0.0, 1.0, 10.0]; one-line error for anything else."""
    out = []
    for item in text.split(","):
        item = item.strip()
        try:
            v = float(item)
        except ValueError:
            raise MtError(f"invalid --wait '{text}': '{item}' is not a number of seconds") from None
        if v != v or v < 0:
            raise MtError(f"invalid --wait '{text}': wait times must be >= 0 (got {item})")
        out.append(v)
    return sorted(set(out))


def check_args(binary: str, args: list[str]) -> dict:
    r = subprocess.run([binary, "--check-args", *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "invalid arguments"
        raise MtError(msg.replace("mpitempo-clocks: error: ", ""))
    return json.loads(r.stdout)


def summarise(rows: list[dict]) -> list[dict]:
    """Per (algorithm, wait): medians over mpiruns of duration and offsets."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["algorithm"], r["wait_s"]), []).append(r)
    out = []
    for (alg, wait), rs in groups.items():
        drifts = [abs(p["drift_ppm"]) for r in rs for p in r["per_rank"] if p["rank"] != 0]
        out.append({
            "algorithm": alg, "wait_s": wait, "mpiruns": len(rs),
            "sync_duration_s": statistics.median(r["sync_duration_s"] for r in rs),
            "max_abs_offset_s": statistics.median(r["max_abs_offset_s"] for r in rs),
            "worst_max_abs_offset_s": max(r["max_abs_offset_s"] for r in rs),
            "median_abs_offset_s": statistics.median(r["median_abs_offset_s"] for r in rs),
            "max_abs_drift_ppm": max(drifts) if drifts else 0.0,
        })
    return out


def plot(rows: list[dict], path: str) -> None:
    """Sync duration vs max |offset|, one marker per mpirun, one panel per wait time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    waits = sorted({r["wait_s"] for r in rows})
    algs = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig, axes = plt.subplots(1, len(waits), figsize=(5 * len(waits), 4), squeeze=False, sharey=True)
    for ax, w in zip(axes[0], waits):
        for a in algs:
            pts = [(r["sync_duration_s"], r["max_abs_offset_s"] * 1e6) for r in rows
                   if r["algorithm"] == a and r["wait_s"] == w]
            ax.scatter([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], label=a, s=18)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sync duration [s]")
        ax.set_title(f"{w:g} s after sync")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("max |offset| to rank 0 [µs]")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@click.command()
@np_option
@launcher_option
@mpicc_option
@timer_option
@click.option("--algorithms", default=DEFAULT_ALGORITHMS, show_default=True, metavar="LIST",
              help="Clock-sync specs, comma-separated, e.g. 'hca3:fitpts=20,pp=10,jk,h2:hca3/prop' "
                   "(a key=value item continues the previous spec). See docs/clocks.md.")
@click.option("--wait", "wait", default="0,1", show_default=True, metavar="LIST",
              help="Seconds after sync at which the offsets are checked.")
@click.option("--mpiruns", type=int, default=1, show_default=True, help="Number of mpiruns.")
@click.option("--check-sample", type=click.IntRange(min=1), default=None, metavar="K",
              help="Check a random sample of K ranks instead of all (large jobs).")
@click.option("--sim", "sim", default=None, metavar="SEED[:MAXOFF_S[:MAXDRIFT_PPM]]",
              help="SIMULATED clocks: a random offset and drift per rank (validation only).")
@click.option("--plot", "plot_path", default="clocks.png", show_default=True, metavar="FILE",
              help="Where to write the duration-vs-offset plot ('' for none).")
@json_option
def clocks(np, launcher, mpicc, timer, algorithms, wait, mpiruns, check_sample, sim, plot_path, as_json):
    """Evaluate clock-synchronisation algorithms: sync duration, and max and median
    |offset| of every rank's global clock to rank 0 right after sync and after
    each wait time, over several mpiruns."""
    np = np or 2
    if mpiruns < 1:
        raise MtError(f"invalid mpiruns {mpiruns}: must be >= 1")
    parse_waits(wait)
    b = ensure_build(mpicc)
    binary = b.binary("mpitempo-clocks")
    args = ["--algorithms", algorithms, "--wait", wait]
    if timer:
        args += ["--timer", timer]
    if check_sample:
        args += ["--check-sample", str(check_sample)]
    if sim:
        args += ["--sim-random", sim]
    check_args(binary, args)
    rows: list[dict] = []
    for run in range(mpiruns):
        launch = make_launch(b, np, [binary, *args, "--mpirun", str(run), "--expect-np", str(np)], launcher)
        env = dict(os.environ)
        env.update(launch.env)
        if launch.oversubscribed:
            env.setdefault("MPITEMPO_CLOCK_SLEEP", "1")
        r = subprocess.run(launch.argv, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            lines = [ln for ln in r.stderr.strip().splitlines() if "error" in ln] or r.stderr.strip().splitlines()
            raise MtError(f"mpirun {run} failed: {lines[-1] if lines else 'exit ' + str(r.returncode)}")
        try:
            rows += json.loads(r.stdout)
        except json.JSONDecodeError:
            raise MtError(f"mpirun {run}: mpitempo-clocks printed no valid JSON") from None
    if plot_path:
        plot(rows, plot_path)
    if as_json:
        print_json(rows)
        return
    con = console()
    t = table(f"clock sync on {np} ranks, {mpiruns} mpirun(s), medians over mpiruns",
              [("algorithm", "left"), ("wait [s]", "right"), ("sync [ms]", "right"),
               ("max |offset| [µs]", "right"), ("worst [µs]", "right"), ("median |offset| [µs]", "right"),
               ("max |drift| [ppm]", "right")])
    for s in summarise(rows):
        t.add_row(s["algorithm"], f"{s['wait_s']:g}", f"{s['sync_duration_s'] * 1e3:.1f}", us(s["max_abs_offset_s"]),
                  us(s["worst_max_abs_offset_s"]), us(s["median_abs_offset_s"]), f"{s['max_abs_drift_ppm']:.3f}")
    con.print(t)
    if plot_path:
        con.print(f"plot: {plot_path}")
