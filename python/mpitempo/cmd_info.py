"""`mpitempo info`: the experimental factors of this machine and MPI library."""
from __future__ import annotations

import subprocess

import json
import os
import platform
import socket
from pathlib import Path

import click

from mpitempo.build import ensure_build
from mpitempo.errors import MtError
from mpitempo.runner.launch import make_launch, ncores
from mpitempo.options import json_option, launcher_option, mpicc_option
from mpitempo.present.tables import cell, console, print_fitted, print_json, table, width, wrap_line


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def machine_factors() -> dict:
    cpu_model = None
    flags = ""
    cpuinfo = _read("/proc/cpuinfo") or ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name") and cpu_model is None:
            cpu_model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = line.split(":", 1)[1]
    fl = set(flags.split())
    mpi_env = {k: v for k, v in os.environ.items()
               if k.startswith(("OMPI_", "PMIX_", "PRTE_", "MPICH_", "MPIR_", "HYDRA_", "I_MPI_", "UCX_", "FI_",
                                "SLURM_", "MPITEMPO_"))}
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model or platform.processor() or "unknown",
        "cpus_online": os.cpu_count(),
        "cpus_usable": ncores(),
        "frequency_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        or "unavailable (no cpufreq in sysfs)",
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tsc_flags": {f: f in fl for f in ("rdtscp", "constant_tsc", "nonstop_tsc")},
        "kernel": platform.release(),
        "python": platform.python_version(),
        "mpi_environment": mpi_env,
    }


_TIMER_READS_MAX = 17_179_869_184   # params/params.def: timer_reads (the core refuses more)


def _refuse_unused(diff_dir, check, timers, np, timer_reads, include_volatile, mpicc, launcher) -> None:
    """An option of another mode of info is a mistake, not ignored: --all only with --diff, -n only with
    --check, --timer-reads only with --timers; --diff reads a campaign and takes no --check, --timers,
    --mpicc or --launcher; --check and --timers are two runs of info."""
    if diff_dir:
        for flag, v in (("--check", check), ("--timers", timers), ("-n/--np", np), ("--timer-reads", timer_reads),
                        ("--mpicc", mpicc), ("--launcher", launcher)):
            if v not in (None, False):
                raise MtError(f"{flag} does not go with --diff DIR (which reads the campaign's records only): "
                              f"leave one of them out")
    elif include_volatile:
        raise MtError("--all goes with --diff DIR: it shows the factors that change by design there")
    if check and timers:
        raise MtError("--check and --timers are two runs of info: give one of them")
    if np is not None and not check:
        raise MtError("-n/--np goes with --check: the number of ranks the check is for")
    if timer_reads is not None and not timers:
        raise MtError("--timer-reads goes with --timers: the reads per timer of the timer study")


@click.command(epilog="Examples:\n\n  mpitempo info --timers\n\n  mpitempo info --check -n 2\n\n"
                       "  mpitempo info --diff my-campaign")
@mpicc_option
@launcher_option
@click.option("--check", "check", is_flag=True,
              help="Warn about what spoils measurements here and now (governor, turbo, SMT, binding, "
                   "oversubscription, load, timer source, time namespace), one line per finding.")
@click.option("-n", "--np", "np", type=click.IntRange(min=1), default=None,
              help="With --check: the number of ranks the runs will use. [default: 2]")
@click.option("--timers", is_flag=True, help="Also measure resolution and overhead of every timer (one rank).")
@click.option("--timer-reads", type=click.IntRange(min=1, max=_TIMER_READS_MAX), default=None, metavar="N",
              help="Back-to-back reads per timer for --timers. [default: 1000000]")
@click.option("--diff", "diff_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Show which recorded factors differ between the runs of campaign DIR.")
@click.option("--all", "include_volatile", is_flag=True,
              help="With --diff: also factors that change by design (times, pids, seeds, timer study).")
@json_option
def info(mpicc, launcher, check, np, timers, timer_reads, diff_dir, include_volatile, as_json):
    """Show the experimental factors of this machine and MPI library; (--check) what spoils
    measurements here and now, with what to do; or (--diff DIR) which factors differ between the
    mpiruns of a campaign. `mpitempo run` prints the warnings of the check at its start and records
    all findings in the campaign's system-check.json."""
    _refuse_unused(diff_dir=diff_dir, check=check, timers=timers, np=np, timer_reads=timer_reads,
                   include_volatile=include_volatile, mpicc=mpicc, launcher=launcher)
    np = 2 if np is None else np
    timer_reads = 1_000_000 if timer_reads is None else timer_reads
    if diff_dir:
        return show_diff(diff_dir, include_volatile, as_json)
    if check:
        return show_check(mpicc, launcher, np, as_json)
    out = {"machine": machine_factors()}
    b = ensure_build(mpicc)
    out["mpi"] = {"mpicc": b.mpicc, "mpiexec": b.mpiexec, "flavour": b.flavour,
                  "mpiexec_version": b.mpiexec_version, "compile_line": b.show, "build_fingerprint": b.fingerprint}
    if timers:
        launch = make_launch(b, 1, [b.binary(), "--timer-study", "--timer-reads", str(timer_reads)], launcher)
        env = dict(os.environ)
        env.update(launch.env)
        from mpitempo.runner import watchdog

        r = watchdog.run(launch.argv, timeout=300, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if r.returncode != 0:
            from mpitempo.runner.reason import failure_reason

            raise MtError(f"timer study failed: {failure_reason(r.stderr + chr(10) + r.stdout, 'failed', r.returncode)}")
        out["timers"] = json.loads(r.stdout)
    if as_json:
        print_json(out)
        return
    con = console()
    m = out["machine"]
    from rich.markup import escape

    from mpitempo.safe_text import safe

    e = lambda v: escape(safe(v))   # noqa: E731
    con.print(f"[bold]machine[/bold] {e(m['hostname'])}: {e(m['cpu_model'])}, {m['cpus_usable']} usable of "
              f"{m['cpus_online']} CPUs, governor {e(m['frequency_governor'])}, clocksource {e(m['clocksource'])}, "
              f"kernel {e(m['kernel'])}", markup=True)
    con.print("  TSC flags: " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in m["tsc_flags"].items()))
    mp = out["mpi"]
    con.print(f"[bold]MPI[/bold] {e(mp['flavour'])}: {e(mp['mpiexec_version'])}\n  mpicc {e(mp['mpicc'])}\n"
              f"  mpiexec {e(mp['mpiexec'])}\n  build {e(mp['build_fingerprint'])}", markup=True)
    if m["mpi_environment"]:
        con.print("  environment: " + " ".join(f"{k}={v}" for k, v in sorted(m["mpi_environment"].items())))
    if timers:
        t = table("timers",
                  [("timer", "left"), ("resolution [ns]", "right"), ("min overhead [ns]", "right"),
                   ("mean read [ns]", "right"), ("note", "left")])
        for x in out["timers"]:
            if x.get("available"):
                t.add_row(cell(x["timer"]), f"{x['resolution_s'] * 1e9:.1f}", f"{x['min_overhead_s'] * 1e9:.1f}",
                          f"{x['mean_read_s'] * 1e9:.1f}", "")
            else:
                t.add_row(cell(x["timer"]), "-", "-", "-", cell(x.get("error", "unavailable")))
        t.caption = ("Luecke et al. 2009, §3.1: resolution = min positive, overhead = min non-negative difference "
                     "of back-to-back reads")
        t.caption_justify = "left"
        con.print(t)


def _describe(run_ids: list[str], config_of: dict[str, str]) -> str:
    by_cfg: dict[str, int] = {}
    for r in run_ids:
        by_cfg[config_of[r]] = by_cfg.get(config_of[r], 0) + 1
    return ", ".join(f"{c} x{n}" for c, n in sorted(by_cfg.items()))


def show_diff(root, include_volatile: bool, as_json: bool) -> None:
    from mpitempo.analysis import factors
    from mpitempo.analysis.store import find_runs

    if not (Path(root) / "runs").is_dir():
        raise MtError(f"'{root}' is not a campaign directory (no runs/ inside)")
    runs = factors.load(root)
    if not runs:
        complete, failed, incomplete = find_runs(Path(root))
        raise MtError(f"campaign '{root}' has no complete runs ({len(failed)} failed, {len(incomplete)} incomplete)")
    diff = factors.differing(runs, include_volatile=include_volatile)
    config_of = {rid: f.get("config", "default") for rid, f in runs.items()}
    if as_json:
        print_json({"runs": len(runs), "differing": diff})
        return
    con = console()
    if not diff:
        con.print(f"all {len(runs)} runs of {root} agree in every recorded factor"
                  + ("" if include_volatile else " (volatile factors not compared; --all shows them)"))
        return
    rows = []
    for key, vals in diff.items():
        first = True
        for val, rids in sorted(vals.items(), key=lambda kv: -len(kv[1])):
            rows.append([key if first else "", val, _describe(rids, config_of)])
            first = False
    print_fitted(f"factors that differ between the {len(runs)} runs of {root}",
                 [("factor", "left"), ("value", "left"), ("runs (config x count)", "left")], rows,
                 wrap=("value", "runs (config x count)"), compact_rows=False, con=con)


def show_check(mpicc, launcher, np: int, as_json: bool) -> None:
    from mpitempo.runner import syscheck

    b = ensure_build(mpicc)
    launch = make_launch(b, np, ["true"], launcher)
    found = syscheck.system_check(np, launch.binding, launch.oversubscribed)
    if as_json:
        print_json({"np": np, "launcher": launch.template, "findings": found})
        return
    for f in found:       # one finding per paragraph, wrapped at the console width
        click.echo(wrap_line(syscheck.line(f), width(), 4))
    n = len(syscheck.warnings_of(found))
    click.echo(f"{n} warning(s) for {np} ranks with launcher '{launch.template}'" if n
               else f"no warnings for {np} ranks with launcher '{launch.template}'")
