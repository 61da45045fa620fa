"""`mpitempo trace`: global-clock traces of unmodified MPI applications (libmpitempo-trace.so;
Hunold and Carpen-Amarie 2018, section V.C, Fig. 10).

  mpitempo trace run [-n N] [--launcher T] [--sync SPEC] [--timer NAME] -o DIR -- APP [ARGS]
  mpitempo trace DIR [--call NAME] [--range A:B] [--plot FILE] [--json]
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from mpitempo import mpilib
from mpitempo.options import FINITE
from mpitempo.errors import MtError
from mpitempo.io.paths import _fsync_dir
from mpitempo.io.safefs import safe_write_text
from mpitempo.options import json_option, launcher_option, mpicc_option, np_option
from mpitempo.tracer import (GROUPS, LIBNAME, SMPI_REFUSAL, call_table, check_calls, check_sync,  # noqa: F401
                             find_app, find_library, preload_shim)
from mpitempo.io.paths import PLOT_FORMATS, check_output_file
from mpitempo.present.trace import print_summary, show_campaign
from mpitempo.runner import watchdog

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


KIND_WORDS = {"A2A": "collective (all to all)", "12A": "collective (one to all)", "A21": "collective (all to one)",
              "COLL": "collective", "ICOLL": "non-blocking collective", "SEND": "send", "RECV": "receive",
              "SENDRECV": "send and receive", "ISEND": "non-blocking send", "IRECV": "non-blocking receive",
              "WAIT": "completion", "PROBE": "probe", "INIT": "persistent request", "START": "start",
              "REQ": "request", "COMMC": "communicator"}


def coverage_markdown(root: Path | None = None) -> str:
    """The coverage list of docs/trace.md, made from src/trace/trace_calls.def (recorded) and
    src/trace/trace_count.def and trace_count4.def (counted only); tests/py/test_trace_table.py
    checks the docs hold it."""
    from mpitempo.build import source_root

    d = (root or source_root()) / "src" / "trace"
    rec = re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)", TR_G_(\w+), TR_K_(\w+), (\w+)\)', (d / "trace_calls.def").read_text(),
                     re.M)
    cnt = re.findall(r"^TR_COUNT\(\w+, (\w+),", (d / "trace_count.def").read_text(), re.M)
    cnt4 = re.findall(r"^TR_COUNT\(\w+, (\w+),", (d / "trace_count4.def").read_text(), re.M)
    lines = ["| group | recorded calls (`--calls` ids) | OTF2 records |", "|---|---|---|"]
    by: dict = {}
    for i, name, g, k, op in rec:
        by.setdefault((g.lower(), KIND_WORDS[k], op != "NONE"), []).append(f"`{i}`")
    for (g, kw, coll), ids in by.items():
        lines.append(f"| {g} | {kw}: {' '.join(ids)} | {_otf2_words(kw, coll)} |")
    lines += ["", f"Counted only ({len(cnt)} functions, `MPI_` left out): " + ", ".join(cnt) + ".",
              "", f"Counted only with an MPI library whose `mpi.h` says MPI-4 or later (MPICH 4 and later; "
              f"{len(cnt4)} functions): " + ", ".join(cnt4) + "."]
    fort = fortran_generator(d)
    _, skipped = fort.generate()
    lines += ["", "Fortran (`mpif.h`, the `mpi` module; the names `mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`): "
              "`MPI_INIT`, `MPI_INIT_THREAD`, `MPI_FINALIZE`, every recorded call and every call counted in C but "
              f"these {len(skipped)} (string, callback, address or rank-range arguments): " + ", ".join(n[4:] for n in skipped) + "."]
    return "\n".join(lines) + "\n"


def fortran_generator(trace_dir: Path):
    """src/trace/gen_fortran.py as a module (it makes trace_fort.c from the call tables)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mt_gen_fortran", trace_dir / "gen_fortran.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _otf2_words(kw: str, coll: bool) -> str:
    if kw.startswith("non-blocking collective"):
        return "NonBlockingCollectiveRequest; Complete at completion" if coll else "region only (no OTF2 op)"
    if kw.startswith("collective"):
        return "MpiCollectiveBegin/End" if coll else "region only (no OTF2 op)"
    return {"send": "MpiSend", "receive": "MpiRecv", "send and receive": "MpiSend, MpiRecv",
            "non-blocking send": "MpiIsend; MpiIsendComplete at completion",
            "non-blocking receive": "MpiIrecvRequest; MpiIrecv at completion",
            "start": "MpiIsend / MpiIrecvRequest per request",
            "completion": "the completions of the requests inside",
            "request": "MpiRequestCancelled at completion of a cancelled request"}.get(kw, "region")


def check_outdir(d: Path) -> None:
    """The trace directory of one run: a new one or an empty one, as `tune -o`. The tracer writes
    into it by name, so an existing directory holding something else got the trace mixed into it
    (and launch.json written over a file of that name); a link is not followed."""
    if d.is_symlink():
        raise MtError(f"output directory '{d}' is a symbolic link; choose a new -o (trace run writes only into "
                      "a directory it creates or an empty one)")
    if d.exists() and not d.is_dir():
        raise MtError(f"cannot use output directory '{d}': it is a file")
    if d.is_dir() and ((d / "trace.json").exists() or (d / "partial").exists()):
        raise MtError(f"output directory '{d}' already holds a trace: choose another or remove it")
    try:
        nonempty = d.is_dir() and any(d.iterdir())
    except OSError as e:
        raise MtError(f"cannot use output directory '{d}': {e.strerror}") from None
    if nonempty:
        raise MtError(f"output directory '{d}' already exists and is not empty; choose a new -o (trace run writes "
                      "only into a directory it creates or an empty one)")
    from mpitempo.io.paths import check_not_in_data_dir, check_output_dir

    check_not_in_data_dir(d, "the trace directory")   # never into a campaign's run or another trace
    check_output_dir(d, "the trace directory")   # probed: os.access says yes to root in /proc


# ---------------------------------------------------------------------------------------------- run

@trace.command("run", context_settings={"ignore_unknown_options": False})
@np_option
@launcher_option
@mpicc_option
@click.option("--sync", "sync", default=None, metavar="SPEC",
              help="Clock sync at MPI_Init and MPI_Finalize (default h2:hca3/prop: HCA3 between hosts, "
                   "ClockPropSync inside; spec syntax in docs/clocks.md).")
@click.option("--timer", default=None, metavar="NAME",
              help="Time source of the timestamps: monotonic (clock_gettime), gettimeofday, rdtscp, "
                   "monotonic_raw, realtime.  [default: monotonic]")
@click.option("--calls", default=None, metavar="LIST",
              help="MPI calls to record: names (allreduce, MPI_Send, ...) or groups "
                   "(default = all = collectives + p2p + comm; collectives; p2p, which includes waits, tests and "
                   "request calls; comm: communicator creation and MPI_Comm_free). Calls left out are counted "
                   "in DIR/not_recorded.json.  [default: default]")
@click.option("--buffer", "buffer", type=int, default=None, metavar="N",
              help="Events per rank held in memory (72 B each), preallocated at MPI_Init; the ranks on one host "
                   "together may use at most 75% of its memory.  [default: 1000000]")
@click.option("--on-full", type=click.Choice(ON_FULL), default=None,
              help="When the buffer is full: stop recording, or wrap (keep the last N events).  [default: stop]")
@click.option("-o", "--outdir", default=None, type=click.Path(),
              help="Trace directory to create (with --mpiruns N > 1: the campaign directory, one trace per "
                   "run in runs/<id>/).")
@click.option("--timeout", "timeout_s", type=FINITE, default=None,
              help="Seconds per mpirun (a run past it is killed and recorded as failed).  [default: 3600]")
@click.option("--mpiruns", type=int, default=1, show_default=True,
              help="Number of mpiruns: more than 1 makes a campaign (runs/<id>/ per mpirun, progress lines, "
                   "failure records, --resume) and the across-run view of the wait states.")
@click.option("--resume", "resume_dir", default=None, type=click.Path(), metavar="DIR",
              help="Continue the trace campaign in DIR: run only the mpiruns that are missing or failed.")
@click.option("--yes", is_flag=True,
              help="With --resume: consent to the commands stored in DIR/campaign.toml (the application, and a "
                   "launcher or compiler that is not yours); without it they are shown and asked for.")
@click.option("--quiet", is_flag=True, help="Campaigns: no progress lines.")
@click.option("--analyse", "analyse", is_flag=True,
              help="After the run, analyse the trace as `mpitempo trace DIR` does (clock-condition violations, "
                   "start skew, wait states; implied by --json and --plot). Without it the run prints the trace's "
                   "record only (events, clock sync, files), which costs no time after the application.")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="After the run, draw the Gantt chart (raw vs global clock) to FILE (.png, .pdf, .svg), e.g. "
                   "DIR/gantt.png.  [default: none; `mpitempo trace DIR --plot FILE` draws it later]")
@click.option("--platform", default=None, metavar="FILE.xml",
              help="Refused: the tracer cannot run on a simulated platform (SimGrid/SMPI); the reason is printed "
                   "(docs/simulation.md).")
@json_option
@click.argument("app", nargs=-1, required=False, type=click.UNPROCESSED)
def run(np, launcher, mpicc, sync, timer, calls, buffer, on_full, outdir, timeout_s, mpiruns, resume_dir, yes,
        quiet, analyse, plot_path, platform, as_json, app):
    """Run an unmodified MPI application APP [ARGS] (after --) with the tracer preloaded.

    With --mpiruns N (N > 1) the application runs N times as a campaign like every kind of run
    (docs/campaigns.md): each mpirun's trace in OUTDIR/runs/<id>/, a failed or timed-out mpirun
    recorded and the campaign continued, `--resume OUTDIR` reruns only what is missing; the
    summary then gives each run and the wait states over the mpiruns (median, min, max).

    \b
    Example:
      mpitempo trace run -n 2 --sync hca3 --timer rdtscp -o tr -- ./amg_like --iters 100
      mpitempo trace run -n 2 --mpiruns 5 -o camp -- ./amg_like --iters 100
      mpitempo trace run --resume camp
    """
    if platform is not None or (mpicc and Path(mpicc).name.startswith("smpicc")):
        raise MtError(SMPI_REFUSAL)
    if resume_dir or mpiruns != 1:
        if analyse or plot_path:
            raise MtError(f"{'--analyse' if analyse else '--plot'} goes with a single mpirun: a campaign's summary "
                          "always analyses every run; draw one run with mpitempo trace DIR/runs/<id> --plot FILE")
        return _run_campaign(np, launcher, mpicc, sync, timer, calls, buffer, on_full, outdir, timeout_s, mpiruns,
                             resume_dir, yes, quiet, as_json, app)
    if yes:
        raise MtError("--yes goes with --resume: it consents to the commands stored in a campaign directory")
    if not outdir:
        raise MtError("missing -o/--outdir: the trace directory to create")
    if not app:
        raise MtError("missing the application: give it after --, e.g. trace run -n 2 -o tr -- ./app ARGS")
    timer = "monotonic" if timer is None else timer
    calls = "default" if calls is None else calls
    buffer = 1_000_000 if buffer is None else buffer
    on_full = on_full or "stop"
    timeout_s = 3600 if timeout_s is None else timeout_s
    from mpitempo.build import ensure_build
    from mpitempo.runner.launch import make_launch

    np = np or 2
    if buffer < 1 or buffer > MAX_BUFFER:
        raise MtError(f"invalid --buffer {buffer}: events per rank must be 1..{MAX_BUFFER}")
    if timeout_s <= 0:
        raise MtError(f"invalid --timeout {timeout_s:g}: must be > 0 seconds")
    from mpitempo.runner.preflight import check_template, check_trace_memory, warn_short_timeout

    check_template(launcher, np)
    check_trace_memory(np, buffer, launcher)   # every rank allocates --buffer events at MPI_Init
    out = Path(outdir)
    check_outdir(out)
    if plot_path:
        pp = Path(plot_path)
        if pp.parent.resolve() == out.resolve():   # into the trace directory, checked above, made by the run
            if pp.suffix[1:].lower() not in PLOT_FORMATS:
                raise MtError(f"cannot write the plot '{plot_path}': give a file name ending in "
                              f"{', '.join('.' + f for f in PLOT_FORMATS[:-1])} or .{PLOT_FORMATS[-1]}")
        else:
            check_output_file(plot_path, "the plot", PLOT_FORMATS)
    try:
        calls = check_calls(calls, call_table())
    except FileNotFoundError:
        pass   # an installed core without its sources: the tracer checks the names itself
    app_path = find_app(app[0])
    build = ensure_build(mpicc)
    if mpilib.of(build).simulated:
        raise MtError(SMPI_REFUSAL)
    lib = find_library(build)
    from mpitempo.build import list_registry

    timers = [t["name"] if isinstance(t, dict) else t for t in list_registry(build)["timers"] if
              (t["name"] if isinstance(t, dict) else t) != "wtime"]
    if timer not in timers:
        raise MtError(f"unknown timer '{timer}' (allowed: {', '.join(timers)})")
    if sync is not None:   # '' too: the core's parser refuses it
        check_sync(build, sync)
    stage = _stage_dir(out)   # the tracer writes here; renamed to -o once the trace is whole
    env_vars = {"MPITEMPO_TRACE_DIR": str(stage), "MPITEMPO_TRACE_TIMER": timer,
                "MPITEMPO_TRACE_CALLS": calls, "MPITEMPO_TRACE_BUFFER": str(buffer),
                "MPITEMPO_TRACE_ON_FULL": on_full}
    if sync:
        env_vars["MPITEMPO_TRACE_SYNC"] = sync
    cmd = ["env", *[f"{k}={v}" for k, v in env_vars.items()], *preload_shim(lib), app_path, *app[1:]]
    interrupted, whole = None, False
    try:
        lw = make_launch(build, np, cmd, launcher)
        warn_short_timeout(timeout_s, "--timeout")
        env = dict(os.environ, **lw.env)
        if not as_json:
            print(f"mpitempo trace: {np} ranks, {' '.join(app)} -> {out}"
                  + (" (oversubscribed: timings are not meaningful)" if lw.oversubscribed else ""), file=sys.stderr)
        try:
            status, rc = _run(lw.argv, env, timeout_s, quiet=as_json, app=app_path)
        except KeyboardInterrupt as e:   # Ctrl-C, SIGTERM, SIGHUP: the job was stopped; keep what the ranks wrote
            status, rc, interrupted = "interrupted", None, e
        whole = _trace_whole(stage)
        if whole or (stage / "partial").is_dir():   # what was launched, beside the trace
            rec = dict(lw.to_json(), app=[app_path, *app[1:]], status=status, returncode=rc,
                       core=build.describe(), fingerprint=build.fingerprint, mpiexec_version=build.mpiexec_version,
                       staged_as=stage.name)
            safe_write_text(stage / "launch.json", json.dumps(rec, indent=2) + "\n", stage)   # never through a link
            _publish(stage, out)
        elif interrupted is None and any(stage.iterdir()):   # the tracer began writing at MPI_Finalize, could not finish
            full = _disk_full(stage)
            raise MtError(f"no trace written: the tracer could not finish writing it ("
                          + (f"the file system of '{out}' is full, {full}" if full else
                             f"{_free_text(stage)} free on the file system of '{out}' now; a full disk or quota?")
                          + f" its warnings are above); nothing was left under '{out}': free space or choose another -o",
                          code=rc if status != "ok" and rc and rc > 0 else 1)
    finally:
        if stage.exists():   # a trace that is not whole (a full disk, a signal): never under the final name
            shutil.rmtree(stage, ignore_errors=True)
    if interrupted is not None:   # what the ranks kept, then mpitempo's "interrupted" (exit 130) as everywhere
        partial = out / "partial"
        if partial.is_dir():
            print(f"mpitempo trace: the application was stopped: per-rank partial events in {partial} (INCOMPLETE; "
                  f"mpitempo trace {out} says what is missing)", file=sys.stderr)
        raise interrupted
    if not whole:
        partial = out / "partial"
        if partial.is_dir():
            how = f"timed out after {timeout_s:g} s and was stopped" if status == "timeout" else \
                f"exited without MPI_Finalize ({status}, exit code {rc})"
            raise MtError(f"the application {how}: per-rank partial events in {partial} (INCOMPLETE; "
                          f"mpitempo trace {out} says what is missing)", code=rc if rc and rc > 0 else 1)
        if status != "ok":
            raise MtError(f"no trace written: the application {'timed out' if status == 'timeout' else status} "
                          f"(exit code {rc}) before MPI_Finalize", code=rc if rc and rc > 0 else 1)
        raise MtError(f"no trace written (exit code {rc}): the application did not initialise MPI, "
                      "or the tracer disabled itself (its warning is above)")
    if as_json or analyse or plot_path:
        _show(out, None, None, plot_path, as_json, launch_over=lw.oversubscribed)
    else:   # the record only: the analysis reads every event (mpitempo trace DIR, on demand)
        from mpitempo.analysis.trace_record import record   # no numpy: no analysis

        res = record(out)
        res["oversubscribed"] = res["oversubscribed"] or lw.oversubscribed
        print_summary(res)
    if status != "ok":
        raise MtError(f"the application failed ({status}, exit code {rc}); the trace was written to {out}",
                      code=rc if rc and rc > 0 else 1)


def _run_campaign(np, launcher, mpicc, sync, timer, calls, buffer, on_full, outdir, timeout_s, mpiruns, resume_dir,
                  yes, quiet, as_json, app) -> None:
    """`trace run --mpiruns N -o DIR` and `trace run --resume DIR`: a campaign of kind trace through the
    common runner (kinds/trace.py); everything is checked before DIR is created or a job starts."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner.execute import check_resume_dir, execute, read_campaign_toml

    if mpiruns < 1:
        raise MtError(f"invalid --mpiruns {mpiruns}: must be an integer >= 1")
    if yes and not resume_dir:
        raise MtError("--yes goes with --resume: it consents to the commands stored in a campaign directory")
    overrides = dict(np=np, launcher=launcher, mpicc=mpicc, sync=sync, timer=timer, calls=calls, buffer=buffer,
                     on_full=on_full, timeout_s=timeout_s)
    if resume_dir:
        if outdir:
            raise MtError("give either -o/--outdir or --resume, not both")
        if app:
            raise MtError("--resume takes no application: it reruns the one stored in the campaign's campaign.toml")
        if mpiruns != 1:
            raise MtError("--resume takes no --mpiruns: the number of mpiruns is the campaign's")
        target = Path(resume_dir)
        check_resume_dir(target)
        spec = read_campaign_toml(target, kind="trace")
        if spec.get("kind") != "trace":
            raise MtError(f"'{target}' is a campaign of kind '{spec.get('kind', 'bench')}', not a trace campaign; "
                          f"resume it with: mpitempo run --resume {target}")
        c = build_campaign(spec, overrides, kind="trace")
        given = "the flags given" if any(v is not None for v in overrides.values()) else \
            "its own campaign.toml as this mpitempo reads it"
    else:
        if not outdir:
            raise MtError("missing -o/--outdir: the campaign directory to create")
        if not app:
            raise MtError("missing the application: give it after --, e.g. trace run -n 2 --mpiruns 5 -o camp -- ./app")
        if timeout_s is not None and timeout_s <= 0:
            raise MtError(f"invalid --timeout {timeout_s:g}: must be > 0 seconds")
        if buffer is not None and not 1 <= buffer <= MAX_BUFFER:
            raise MtError(f"invalid --buffer {buffer}: events per rank must be 1..{MAX_BUFFER}")
        app = [find_app(app[0]), *app[1:]]   # absolute: a resume from elsewhere runs the same program
        c = build_campaign(None, dict(overrides, np=np or 2, mpiruns=mpiruns, name="trace", app=app,
                                      timeout_s=3600 if timeout_s is None else timeout_s), kind="trace")
        target = Path(outdir)
        given = "the flags given"
    typed = frozenset(k for k, v in (("mpicc", mpicc), ("launcher", launcher)) if v)
    counts = execute(c, target, resume=bool(resume_dir), quiet=quiet or as_json, given=given, yes=yes, typed=typed)
    if not (quiet or as_json):
        print(f"mpitempo: {counts['ok']} runs completed, {counts['failed']} failed, {counts['skipped']} already "
              f"complete; traces in {target}/runs", file=sys.stderr)
    if counts["ok"] + counts["skipped"] > 0:
        show_campaign(target, None, None, as_json)
    if counts.get("interrupted"):
        by = f" by {counts['interrupted']}" if isinstance(counts["interrupted"], str) else ""
        raise MtError(f"interrupted{by}; completed runs are kept in {target} (continue with: "
                      f"mpitempo trace run --resume {target})", code=130)
    if counts["failed"]:
        raise MtError(f"{counts['failed']} of {counts['total']} mpiruns failed (see runs/*/failed.json in {target}); "
                      f"completed runs are kept; rerun the missing ones with: mpitempo trace run --resume {target}")


STAGE_PREFIX = ".mpitempo-trace-staging-"


def _stage_dir(out: Path) -> Path:
    """A new directory beside -o (same file system: the final rename is atomic) that the tracer
    writes the trace into; its name starts with a dot and says what it is."""
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{out.name}.", dir=parent))
    except OSError as e:
        raise MtError(f"cannot write the trace directory '{out}': {e.strerror} (in '{parent}')") from None


def _trace_whole(stage: Path) -> bool:
    """The tracer renames trace.json into place last, only when the event files were written whole;
    an OTF2 archive it could not finish (trace.json's "otf2" is null) is removed, not left half-written."""
    p = stage / "trace.json"
    if not p.is_file() or p.is_symlink():
        return False
    try:
        meta = json.loads(p.read_text())
    except (OSError, ValueError):
        return False
    if isinstance(meta, dict) and not meta.get("otf2") and (stage / "otf2").is_dir():
        shutil.rmtree(stage / "otf2", ignore_errors=True)
    return True


def _disk_full(d: Path) -> str | None:
    """'N KiB free' when the file system of d has (almost) no space or inodes left, else None."""
    try:
        st = os.statvfs(d)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free < 64 << 10 or (st.f_files and st.f_favail == 0):
        return f"{free >> 10} KiB free" if st.f_favail or not st.f_files else "no inodes free"
    return None


def _free_text(d: Path) -> str:
    try:
        st = os.statvfs(d)
    except OSError:
        return "unknown space"
    free = st.f_bavail * st.f_frsize
    return f"{free / 2**20:.1f} MiB" if free >= 1 << 20 else f"{free >> 10} KiB"


def _publish(stage: Path, out: Path) -> None:
    """Rename the whole trace to -o: a new name, or an empty directory (replaced as one step)."""
    try:
        os.rename(stage, out)
    except OSError as e:
        raise MtError(f"cannot move the trace to '{out}': {e.strerror} (it was written, in '{stage}', and removed: "
                      "-o must stay new or empty while the trace runs)") from None
    _fsync_dir(out.resolve().parent)


def is_campaign(d: Path) -> bool:
    return (d / "campaign.toml").is_file() and (d / "runs").is_dir() and not (d / "trace.json").exists()


RANK_GRACE_S = 2.5   # how long the ranks of a stopped run get to write their partial files


def _stop_ranks_first(p, app: str | None) -> None:
    """SIGTERM to the application's processes themselves before the job is stopped, and up to
    RANK_GRACE_S for them to end: each writes its partial events (the tracer's handler) and waits
    for the others' files. Signalling the launcher instead makes MPICH's hydra answer with SIGKILL
    to every rank within milliseconds, mid-write."""
    import signal
    import time

    if not app:
        return
    real = os.path.realpath(app)
    ranks = []
    for pid in watchdog.descendants(p.pid):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == real:
                ranks.append(pid)
        except OSError:
            continue
    for pid in ranks:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + RANK_GRACE_S
    while ranks and time.monotonic() < deadline and any(watchdog.alive(pid) for pid in ranks):
        time.sleep(0.05)


def _run(argv: list[str], env: dict, timeout: float, quiet: bool, app: str | None = None) -> tuple[str, int | None]:
    """The job under a watchdog (runner.watchdog: no rank outlives mpitempo), in its own session;
    SIGTERM and SIGHUP stop it as Ctrl-C does. The application's output goes to stderr with --json."""
    from mpitempo.runner.lock import signals_interrupt

    out = None
    if quiet:   # keep stdout for the JSON: the application's output goes to stderr
        try:
            out = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            out = subprocess.PIPE   # stderr is not a file (tests): relayed after the run
    with signals_interrupt():
        try:
            p = watchdog.popen(argv, env=env, stdout=out, text=True)
        except OSError as e:
            raise MtError(f"cannot start '{argv[0]}': {e.strerror or e}") from None
        try:
            text, _ = p.communicate(timeout=timeout)
            rc = p.returncode
            watchdog.finish(p)
        except subprocess.TimeoutExpired:
            _stop_ranks_first(p, app)
            watchdog.stop(p)
            return "timeout", p.returncode
        except KeyboardInterrupt:   # Ctrl-C, SIGTERM, SIGHUP: the job is stopped, then mpitempo exits
            _stop_ranks_first(p, app)
            watchdog.stop(p)
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
    """Violations, skew, wait states and Gantt chart of a trace directory (or of every run of a
    trace campaign, with the wait states over the mpiruns).

    Also says which MPI calls the trace did not record (DIR/not_recorded.json) and how many
    communicators it defines. Wait states (late sender, late receiver, wait at N x N and at
    barrier, late broadcast, early reduce; Geimer et al. 2010) are in ms per call and rank.

    \b
    Example:
      mpitempo trace amg-trace --call allreduce --range 100:110 --plot gantt.png --json
    """
    if plot_path:
        check_output_file(plot_path, "the plot", PLOT_FORMATS)
    if is_campaign(Path(tracedir)):
        if plot_path:
            raise MtError(f"--plot draws one trace: '{tracedir}' is a trace campaign; give one of its runs, "
                          f"e.g. {Path(tracedir) / 'runs' / '<run-id>'}")
        show_campaign(Path(tracedir), call, rng, as_json)
        return
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
    print_summary(res)
