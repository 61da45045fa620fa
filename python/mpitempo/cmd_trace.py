"""`mpitempo trace`: global-clock traces of unmodified MPI applications (libmpitempo-trace.so;
Hunold and Carpen-Amarie 2018, section V.C, Fig. 10).

  mpitempo trace run [-n N] [--launcher T] [--sync SPEC] [--timer NAME] -o DIR -- APP [ARGS]
  mpitempo trace DIR [--call NAME] [--range A:B] [--plot FILE] [--json]
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click

from mpitempo.errors import MtError
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option

LIBNAME = "libmpitempo-trace.so"
GROUPS = ("default", "all", "collectives", "p2p")
ON_FULL = ("stop", "wrap")
MAX_BUFFER = 1_000_000_000


class TraceGroup(click.Group):
    """`mpitempo trace DIR ...` is `mpitempo trace show DIR ...`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group(cls=TraceGroup, context_settings={"help_option_names": ["-h", "--help"]})
def trace():
    """Global-clock tracing of unmodified MPI applications.

    `trace run ... -- APP` runs APP with libmpitempo-trace.so preloaded: the
    tracer synchronises a global clock at MPI_Init and again at MPI_Finalize,
    records the selected MPI calls and writes an OTF2 archive, a
    Chrome/Perfetto JSON and events.csv. `trace DIR` counts clock-condition
    violations on the raw and the global timestamps, the start skew of a range
    of calls, and draws the Gantt chart (raw vs global, side by side).

    \b
    Example:
      mpicc -O2 -o amg_like examples/trace/amg_like.c
      mpitempo trace run -n 2 -o amg-trace -- ./amg_like --iters 200
      mpitempo trace amg-trace --call allreduce --range 100:110 --plot gantt.png
    """


# ----------------------------------------------------------------------------------------- checks

def call_table(root: Path | None = None) -> list[tuple[str, str, str]]:
    """(id, MPI name, group) of every call the tracer can intercept (src/trace/trace_calls.def)."""
    from mpitempo.build import source_root

    p = (root or source_root()) / "src" / "trace" / "trace_calls.def"
    rows = re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)", TR_G_(\w+), TR_K_\w+\)', p.read_text(), re.M)
    return [(i, n, g.lower()) for i, n, g in rows]


def check_calls(text: str, table: list[tuple[str, str, str]]) -> str:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise MtError(f"invalid --calls '{text}': expected a comma-separated list of MPI calls")
    ids = [i for i, _, _ in table]
    for it in items:
        name = it[4:] if it.lower().startswith("mpi_") else it
        if name.lower() not in ids and name.lower() not in GROUPS:
            raise MtError(f"unknown MPI call '{it}' in --calls (allowed: {', '.join(GROUPS)}, {', '.join(ids)})")
    return ",".join(items)


def check_outdir(d: Path) -> None:
    if d.exists() and not d.is_dir():
        raise MtError(f"cannot use output directory '{d}': it is a file")
    if d.is_dir() and ((d / "trace.json").exists() or (d / "partial").exists()):
        raise MtError(f"output directory '{d}' already holds a trace: choose another or remove it")
    p = d
    while not p.exists():
        p = p.parent
    if not p.is_dir() or not os.access(p, os.W_OK | os.X_OK):
        raise MtError(f"cannot create output directory '{d}': '{p}' is not a writable directory")


def find_library(build) -> str:
    b = Path(build.bindir)
    for cand in (b / LIBNAME, b.parent / "lib" / LIBNAME, b.parent / "lib64" / LIBNAME):
        if cand.is_file():
            return str(cand)
    raise MtError(f"{LIBNAME} is missing from the core in {build.bindir}; run 'mpitempo build --force' "
                  "(or build with -DMPITEMPO_TRACE=ON)")


def find_app(app: str) -> str:
    if "/" in app:
        if not (os.path.isfile(app) and os.access(app, os.X_OK)):
            raise MtError(f"application '{app}' not found or not executable")
        return os.path.abspath(app)
    found = shutil.which(app)
    if not found:
        raise MtError(f"application '{app}' not found on PATH")
    return found


def check_sync(build, spec: str) -> None:
    from mpitempo.kinds.clocks import check_args

    if "," in spec and re.search(r",[a-z0-9]+(,|$)", spec) and "=" not in spec.split(",")[-1]:
        raise MtError(f"invalid --sync '{spec}': one clock-sync spec, not a list")
    try:
        check_args(build.binary("mpitempo-bench"), ["--sync", spec])
    except MtError as e:
        raise MtError(f"{e}") from None


# ---------------------------------------------------------------------------------------------- run

@trace.command("run", context_settings={"ignore_unknown_options": False})
@np_option
@launcher_option
@mpicc_option
@click.option("--sync", "sync", default=None, metavar="SPEC",
              help="Clock sync at MPI_Init and MPI_Finalize (default h2:hca3/prop: HCA3 between hosts, "
                   "ClockPropSync inside; spec syntax in docs/clocks.md).")
@click.option("--timer", default="monotonic", show_default=True, metavar="NAME",
              help="Time source of the timestamps: monotonic (clock_gettime), gettimeofday, rdtscp, "
                   "monotonic_raw, realtime.")
@click.option("--calls", default="default", show_default=True, metavar="LIST",
              help="MPI calls to record: names (allreduce, MPI_Send, ...) or groups "
                   "(default = all = collectives + p2p; collectives; p2p, which includes waits and tests).")
@click.option("--buffer", "buffer", type=int, default=1_000_000, show_default=True, metavar="N",
              help="Events per rank held in memory (48 B each), preallocated at MPI_Init.")
@click.option("--on-full", type=click.Choice(ON_FULL), default="stop", show_default=True,
              help="When the buffer is full: stop recording, or wrap (keep the last N events).")
@click.option("-o", "--outdir", required=True, type=click.Path(), help="Trace directory to create.")
@click.option("--timeout", "timeout_s", type=float, default=3600, show_default=True, help="Seconds for the run.")
@json_option
@click.argument("app", nargs=-1, required=True, type=click.UNPROCESSED)
def run(np, launcher, mpicc, sync, timer, calls, buffer, on_full, outdir, timeout_s, as_json, app):
    """Run an unmodified MPI application APP [ARGS] (after --) with the tracer preloaded.

    \b
    Example:
      mpitempo trace run -n 2 --sync hca3 --timer rdtscp -o tr -- ./amg_like --iters 100
    """
    from mpitempo.build import ensure_build
    from mpitempo.runner.launch import make_launch

    np = np or 2
    if buffer < 1 or buffer > MAX_BUFFER:
        raise MtError(f"invalid --buffer {buffer}: events per rank must be 1..{MAX_BUFFER}")
    if timeout_s <= 0:
        raise MtError(f"invalid --timeout {timeout_s:g}: must be > 0 seconds")
    out = Path(outdir)
    check_outdir(out)
    try:
        calls = check_calls(calls, call_table())
    except FileNotFoundError:
        pass   # an installed core without its sources: the tracer checks the names itself
    app_path = find_app(app[0])
    build = ensure_build(mpicc)
    lib = find_library(build)
    from mpitempo.build import list_registry

    timers = [t["name"] if isinstance(t, dict) else t for t in list_registry(build)["timers"] if
              (t["name"] if isinstance(t, dict) else t) != "wtime"]
    if timer not in timers:
        raise MtError(f"unknown timer '{timer}' (allowed: {', '.join(timers)})")
    if sync:
        check_sync(build, sync)
    env_vars = {"MPITEMPO_TRACE_DIR": str(out.resolve()), "MPITEMPO_TRACE_TIMER": timer,
                "MPITEMPO_TRACE_CALLS": calls, "MPITEMPO_TRACE_BUFFER": str(buffer),
                "MPITEMPO_TRACE_ON_FULL": on_full}
    if sync:
        env_vars["MPITEMPO_TRACE_SYNC"] = sync
    preload = lib + (":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else "")
    cmd = ["env", f"LD_PRELOAD={preload}", *[f"{k}={v}" for k, v in env_vars.items()], app_path, *app[1:]]
    lw = make_launch(build, np, cmd, launcher)
    env = dict(os.environ, **lw.env)
    if not as_json:
        print(f"mpitempo trace: {np} ranks, {' '.join(app)} -> {out}"
              + (" (oversubscribed: timings are not meaningful)" if lw.oversubscribed else ""), file=sys.stderr)
    status, rc = _run(lw.argv, env, timeout_s, quiet=as_json)
    if out.is_dir():   # what was launched, beside the trace
        import json

        rec = dict(lw.to_json(), app=[app_path, *app[1:]], status=status, returncode=rc,
                   core=build.describe(), fingerprint=build.fingerprint, mpiexec_version=build.mpiexec_version)
        (out / "launch.json").write_text(json.dumps(rec, indent=2) + "\n")
    if not (out / "trace.json").exists():
        partial = out / "partial"
        if partial.is_dir():
            raise MtError(f"the application exited without MPI_Finalize ({status}, exit code {rc}): "
                          f"per-rank partial events in {partial}")
        if status != "ok":
            raise MtError(f"no trace written: the application {'timed out' if status == 'timeout' else status} "
                          f"(exit code {rc}) before MPI_Finalize", code=rc if rc and rc > 0 else 1)
        raise MtError(f"no trace written (exit code {rc}): the application did not initialise MPI, "
                      "or the tracer disabled itself (its warning is above)")
    _show(out, None, None, str(out / "gantt.png"), as_json, launch_over=lw.oversubscribed)
    if status != "ok":
        raise MtError(f"the application failed ({status}, exit code {rc}); the trace was written to {out}",
                      code=rc if rc and rc > 0 else 1)


def _run(argv: list[str], env: dict, timeout: float, quiet: bool) -> tuple[str, int | None]:
    """The job in its own process group; the application's output goes to stderr with --json."""
    from mpitempo.runner.execute import _kill_group

    out = None
    if quiet:   # keep stdout for the JSON: the application's output goes to stderr
        try:
            out = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            out = subprocess.PIPE   # stderr is not a file (tests): relayed after the run
    try:
        p = subprocess.Popen(argv, env=env, start_new_session=True, stdout=out, text=True)
    except OSError as e:
        raise MtError(f"cannot start '{argv[0]}': {e.strerror or e}") from None
    try:
        text, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        _kill_group(p)
        return "timeout", p.returncode
    except KeyboardInterrupt:
        _kill_group(p)
        raise
    if text:
        sys.stderr.write(text)
    return ("ok" if rc == 0 else "failed" if rc > 0 else "killed"), rc


# --------------------------------------------------------------------------------------------- show

@trace.command("show")
@click.argument("tracedir", type=click.Path())
@click.option("--call", default=None, metavar="NAME",
              help="Collective whose instances are drawn and measured (default: allreduce, else the most "
                   "frequent collective).")
@click.option("--range", "rng", default=None, metavar="A:B",
              help="Instances A..B-1 of that call (negative: from the end; default: 10 from the middle).")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="Write the Gantt chart (raw vs global clock) to FILE (.png, .pdf, .svg).")
@json_option
def show(tracedir, call, rng, plot_path, as_json):
    """Violations, skew and Gantt chart of a trace directory.

    \b
    Example:
      mpitempo trace amg-trace --call allreduce --range 100:110 --plot gantt.png --json
    """
    if plot_path:
        p = Path(plot_path)
        if not p.parent.is_dir() or not os.access(p.parent, os.W_OK):
            raise MtError(f"cannot write the plot '{p}': directory '{p.parent}' is not writable")
    _show(Path(tracedir), call, rng, plot_path, as_json)


def _show(d: Path, call, rng, plot_path, as_json, launch_over: bool = False) -> None:
    from mpitempo.analysis.trace import summarise

    res, ev, chosen = summarise(d, call, rng)
    res["oversubscribed"] = res["oversubscribed"] or launch_over
    if plot_path and chosen:
        from mpitempo.present.plots.trace import gantt

        a, b = res["range"]
        gantt(ev, chosen, res["call"], f"MPI_{res['call'].capitalize()} instances {a}..{b - 1} on "
              f"{res['ranks']} ranks (sync {res['sync']['algorithm']}, timer {res['timer']})"
              + (" — OVERSUBSCRIBED" if res["oversubscribed"] else ""), plot_path)
        res["plot"] = str(plot_path)
    if as_json:
        from mpitempo.present.tables import print_json

        print_json(res)
        return
    from mpitempo.present.trace import print_summary

    print_summary(res)
