"""Run a campaign of any kind: n mpiruns per (configuration, process count), interleaved.

Each mpirun writes runs/<run-id>/meta.json and the data files of its kind
(measurements.csv for bench, clocks.json, timings.csv for pingpong; the C core
writes them under temporary names and renames them when complete). A failed,
hung or killed mpirun leaves a runs/<run-id>/failed.json with its exit status
and stderr tail; the other runs are kept and `--resume` reruns only what is
missing.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from mpitempo.build import Build, ensure_build
from mpitempo.io.campaign import Campaign
from mpitempo.errors import MtError
from mpitempo.io import params as ptable
from mpitempo.io import safefs
from mpitempo.runner import watchdog
from mpitempo.runner.launch import check_selections, make_launch
from mpitempo.runner.plan import PlannedRun, plan  # noqa: F401 (PlannedRun: the runner's unit)
from mpitempo.runner.progress import Progress
from mpitempo.runner.reason import disk_full, failure_reason, with_disk_full, with_known_bug
from mpitempo.runner.resume import campaign_toml_text


def run_complete(d: Path, kind=None) -> bool:
    from mpitempo import kinds

    return (kind or kinds.get("bench")).complete(d)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def execute(c: Campaign, outdir: Path, resume: bool = False, quiet: bool = False,
            given: str = "the campaign given", present: tuple[str, ...] = (), yes: bool = False,
            typed: frozenset = frozenset(), deadline: float | None = None) -> dict:
    """Run (or resume) the campaign in outdir; returns counts of ok/failed/skipped runs.
    Everything is checked before the directory is created; the directory is locked while the
    campaign runs; SIGTERM and SIGHUP stop it as Ctrl-C does (counts["interrupted"]). A new
    campaign directory is created with one mkdir (two runs on the same new directory: one of them
    gets it, the other an error, and neither touches the other's files); a new campaign may go into
    an existing directory only when it holds nothing but the entries named in `present` (a tool's
    own record written first, e.g. barrier-study.json) and no other campaign has claimed it.
    A resume first checks the directory (no links where the runner writes), the specification
    (runner.resume.check_spec) and asks consent for stored commands (runner.resume.consent; `yes`
    gives it, `typed` names the keys given on this command line). `deadline` (time.monotonic(), from
    --budget): no mpirun is started that would end after it (counts["budget_not_run"] names them), and
    adaptive mpiruns (max_mpiruns, runner.adaptive) are added only while it allows."""
    from mpitempo.runner import resume as rs
    from mpitempo.runner.lock import builds_in_use, campaign_lock, signals_interrupt

    kind = c.kind_obj
    outdir = Path(outdir)
    if resume:
        check_resume_dir(outdir)
        rs.check_spec(outdir, c, given)
        rs.consent(c, outdir, yes, typed)
        rs.check_platform_digest(c, outdir)
    builds = check_campaign(c)

    runs_dir = outdir / "runs"
    with contextlib.ExitStack() as stack:
        if resume:
            stack.enter_context(campaign_lock(outdir))
            check_resume_dir(outdir)   # again, now that no other mpitempo runs in it
            if safefs.check_not_link(outdir / rs.SPEC_RECORD, outdir, want="file") is None:
                rs.write_record(outdir, c)   # a campaign older than the record: checked above, recorded now
        else:
            _create(c, outdir, present, stack)
        safefs.safe_mkdir(runs_dir, outdir)

        planned = plan(c)
        order_path = outdir / "order.json"
        if safefs.check_not_link(order_path, outdir, want="file") is None:
            safefs.safe_write_text(order_path, json.dumps([r.run_id for r in planned], indent=1) + "\n", outdir)
        base_seed = c.seed if c.seed is not None else random.SystemRandom().randrange(2**62)
        todo = [r for r in planned if not _done(kind, runs_dir / r.run_id)]
        counts = {"ok": 0, "failed": 0, "skipped": len(planned) - len(todo), "total": len(planned)}
        if resume and not quiet:
            _log(f"mpitempo: resuming {outdir}: {counts['skipped']} of {len(planned)} runs complete, {len(todo)} to run")
        sys_warnings = start_check(c, builds, planned, outdir, quiet)
        progress = Progress(len(planned), counts["skipped"], quiet=quiet)
        interrupted = False
        try:
            with builds_in_use(builds.values()), signals_interrupt():
                interrupted = _execute_runs(c, kind, todo, planned, builds, runs_dir, base_seed, counts,
                                            progress, sys_warnings, deadline)
                if not interrupted and not counts.get("budget_not_run") and c.max_mpiruns \
                        and c.max_mpiruns > c.mpiruns:
                    interrupted = _adaptive_rounds(c, kind, outdir, planned, builds, base_seed, counts, progress,
                                                   sys_warnings, deadline)
        except KeyboardInterrupt as e:   # between two mpiruns: nothing is running, nothing to record
            interrupted = getattr(e, "signame", None) or True
        except OSError as e:   # the runner's own files (launch.json, stderr.log, runlog.jsonl, failed.json)
            # never raised while an mpirun runs: every run either completed (its meta.json is there) or is rerun
            where = f" ({e.filename})" if e.filename else ""
            why = disk_full(outdir) if e.errno == errno.ENOSPC else (e.strerror or e)
            raise MtError(f"cannot write into the campaign directory '{outdir}': {why}{where}; "
                          f"{counts['ok']} run(s) completed now and {counts['skipped']} before are kept; "
                          f"continue with: mpitempo run --resume {outdir}") from None
        finally:
            progress.close()
    counts["interrupted"] = interrupted
    return counts


def campaign_id(root: Path) -> str | None:
    """The campaign's id (spec.json), which each run's launch.json records (io.rundir.check_owner)."""
    from mpitempo.io.rundir import campaign_id as _cid

    return _cid(root)


def check_resume_dir(outdir: Path) -> None:
    """A campaign directory to resume: a directory whose campaign.toml, runner files, runs/ and
    run directories are no links (nor FIFOs, devices, hard-linked files): refused in one line."""
    from mpitempo.runner.resume import RUNNER_FILES

    if not outdir.is_dir():
        raise MtError(f"cannot resume '{outdir}': no such directory")
    if not (outdir / "campaign.toml").exists() and not (outdir / "campaign.toml").is_symlink():
        raise MtError(f"cannot resume '{outdir}': it has no campaign.toml (not a campaign directory)")
    safefs.campaign_entries_check(outdir, RUNNER_FILES)


def read_campaign_toml(outdir: Path, kind: str | None = None) -> dict:
    """DIR/campaign.toml as a dict, read without following a link, every key known and of its
    TOML type (io.toml_schema)."""
    import tomllib

    from mpitempo.io.toml_schema import check_campaign as check_toml_types

    path = outdir / "campaign.toml"
    text = campaign_toml_text(outdir)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"campaign file '{path}' is not valid TOML: {e}") from None
    check_toml_types(doc, f"campaign file '{path}'", kind)
    return doc


def _not_dir(p: Path) -> str:
    """', and it is not a directory' (what it is) for an existing path that is not a directory."""
    import stat

    from mpitempo.io.safefs import _what

    try:
        st = os.lstat(p)
    except OSError:
        return ""
    return "" if stat.S_ISDIR(st.st_mode) else f" and is {_what(st.st_mode)}, not a directory"


def _exists_hint() -> str:
    """What to do about an -o that exists: a new -o, or --resume where the command has one."""
    import click

    ctx = click.get_current_context(silent=True)
    has_resume = ctx is not None and any(p.name == "resume_dir" for p in ctx.command.params)
    return "choose a new -o or use --resume" if has_resume else "choose a new -o"


def _create(c: Campaign, outdir: Path, present: tuple[str, ...], stack: contextlib.ExitStack) -> None:
    """Create the new campaign directory (one os.mkdir: no check-then-create) or claim an existing
    one holding only `present`, lock it, write campaign.toml and spec.json. On failure, what this
    call created is removed, and nothing else."""
    from mpitempo.runner.lock import campaign_lock
    from mpitempo.runner.resume import write_record

    created = False
    try:
        if str(outdir.parent) not in ("", "."):
            try:
                outdir.parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:   # a file where a parent directory should be
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        os.mkdir(outdir)
        created = True
    except FileExistsError:
        if not present or outdir.is_symlink() or not outdir.is_dir() or \
                not all(e.name in present for e in outdir.iterdir()):
            raise MtError(f"campaign directory '{outdir}' already exists{_not_dir(outdir)}; {_exists_hint()}") from None
    except OSError as e:
        why = disk_full(outdir) if e.errno == errno.ENOSPC else e.strerror
        raise MtError(f"cannot create the campaign directory '{outdir}': {why}") from None
    try:
        # the lock file is created exclusively: of two processes given this directory, one claims it
        stack.enter_context(campaign_lock(outdir, exclusive_create=True))
    except FileExistsError:
        # another campaign claimed this directory first: its files are not ours to remove
        raise MtError(f"campaign directory '{outdir}' already exists (another mpitempo claimed it first); "
                      f"{_exists_hint()}") from None
    except MtError:
        if created:
            shutil.rmtree(outdir, ignore_errors=True)
        raise
    except OSError as e:   # e.g. no room for the lock file: nothing of ours is left
        if created:
            shutil.rmtree(outdir, ignore_errors=True)
        why = disk_full(outdir) if e.errno == errno.ENOSPC else e.strerror
        raise MtError(f"cannot create the campaign directory '{outdir}': {why}") from None
    made = [".mpitempo.lock"]
    try:
        safefs.safe_write_text(outdir / "campaign.toml", c.to_toml(), outdir)
        made.append("campaign.toml")
        write_record(outdir, c)
        made.append("spec.json")
        safefs.safe_mkdir(outdir / "runs", outdir, exist_ok=False)
        made.append("runs")
    except (OSError, MtError) as e:   # a full or read-only file system: nothing half-written is left
        stack.close()
        if created:
            shutil.rmtree(outdir, ignore_errors=True)
        else:
            for name in reversed(made):
                with contextlib.suppress(OSError):
                    (os.rmdir if name == "runs" else os.unlink)(outdir / name)
        why = (disk_full(outdir) if getattr(e, "errno", None) == errno.ENOSPC else
               e.strerror if isinstance(e, OSError) else str(e))
        raise MtError(f"cannot write the campaign directory '{outdir}': {why}") from None


def _done(kind, d: Path) -> bool:
    """Complete, and its data files are what its meta.json records (a damaged run is run again)."""
    if not kind.complete(d):
        return False
    from mpitempo.io.integrity import verify_run
    from mpitempo.io.rundir import load_meta

    try:
        return verify_run(d, load_meta(d / "meta.json"), kind.data_files) is None
    except MtError:
        return False


def start_check(c: Campaign, builds: dict[str, Build], planned: list, outdir: Path, quiet: bool) -> dict:
    """The system check (runner.syscheck) for every (configuration, nprocs) of the campaign at its
    start: warnings printed once, all findings recorded in system-check.json (one entry per start,
    so a resumed campaign keeps the check of every session); returns {(config, np): [warning lines]}."""
    from mpitempo.runner import syscheck

    entries, warned, out = [], set(), {}
    combos = sorted({(r.config, r.np) for r in planned})
    for cfg_name, np in combos:
        cfg = next(x for x in c.configs if x.name == cfg_name)
        launch = make_launch(builds[cfg_name], np, ["true"], cfg.launcher, cfg.env, **cfg.platform_args)
        if launch.simulation:   # simulated time: the state of this host does not enter the results
            entries.append({"config": cfg_name, "np": np, "findings": [], "simulated": True})
            out[(cfg_name, np)] = []
            continue
        found = syscheck.system_check(np, launch.binding, launch.oversubscribed)
        entries.append({"config": cfg_name, "np": np, "findings": found})
        out[(cfg_name, np)] = [syscheck.line(f) for f in syscheck.warnings_of(found)]
        for f in syscheck.warnings_of(found):
            text = syscheck.line(f)
            if text not in warned and not quiet:
                _log(f"mpitempo: {text}" + (f" [config {cfg_name}, {np} ranks]" if len(combos) > 1 else ""))
            warned.add(text)
    path = outdir / "system-check.json"
    try:
        hist = json.loads(safefs.safe_read_text(path, outdir))
    except (FileNotFoundError, ValueError):
        hist = []
    if not isinstance(hist, list):
        hist = []
    hist.append({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "checks": entries})
    safefs.safe_write_text(path, json.dumps(hist, indent=1) + "\n", outdir)
    return out


def check_campaign(c: Campaign) -> dict[str, Build]:
    """Build (or find) the core of every configuration and check the campaign against it, before
    anything is created; returns the builds by configuration name."""
    builds: dict[str, Build] = {}
    for cfg in c.configs:
        builds[cfg.name] = ensure_build(cfg.build_mpicc, cflags=cfg.cflags)
        c.kind_obj.check(c, builds[cfg.name], [cfg])
    check_selections(c, builds)   # the algorithms the configurations select take effect, and differ
    from mpitempo.runner.preflight import preflight

    preflight(c, builds)
    return builds


def _adaptive_rounds(c, kind, outdir, planned, builds, base_seed, counts, progress, sys_warnings, deadline):
    """More rounds of mpiruns while rows are wider than the precision (runner.adaptive); the
    interrupted value of _execute_runs, or False."""
    from mpitempo.runner.adaptive import more_rounds

    runs_dir = outdir / "runs"
    result = {"interrupted": False}

    def run_round(runs):
        todo = [r for r in runs if not _done(kind, runs_dir / r.run_id)]
        counts["total"] += len(runs)
        counts["skipped"] += len(runs) - len(todo)
        progress.done += len(runs) - len(todo)   # complete before (a resume): counted, not run again
        safefs.safe_write_text(outdir / "order.json", json.dumps([r.run_id for r in planned], indent=1) + "\n",
                               outdir)
        result["interrupted"] = _execute_runs(c, kind, todo, planned, builds, runs_dir, base_seed, counts, progress,
                                              sys_warnings, deadline)
        return bool(result["interrupted"]) or bool(counts.get("budget_not_run"))

    stopped = more_rounds(c, outdir, planned, run_round, progress, deadline, lambda n: n * mean_run_s(outdir))
    counts["adaptive_stop"] = "budget" if counts.get("budget_not_run") else stopped
    return result["interrupted"]


def mean_run_s(outdir: Path) -> float:
    """The mean duration of the campaign's completed mpiruns so far (runlog.jsonl), 0 without one."""
    ds = []
    try:
        for line in safefs.safe_read_text(outdir / "runlog.jsonl", outdir).splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and e.get("status") == "ok" and isinstance(e.get("duration_s"), (int, float)):
                ds.append(float(e["duration_s"]))
    except (OSError, MtError):
        return 0.0
    return sum(ds) / len(ds) if ds else 0.0


def _execute_runs(c, kind, todo, planned, builds, runs_dir, base_seed, counts, progress, sys_warnings=None,
                  deadline=None) -> bool:
    takes_seed = "seed" in ptable.for_app(kind.app)
    own_command = getattr(kind, "command", None)   # a kind that launches something else than a core binary
    root = runs_dir.parent   # every write below root: never through a link (io.safefs)
    for n_done, r in enumerate(todo):
        if deadline is not None and n_done > 0 and time.monotonic() + mean_run_s(root) > deadline:
            # the budget: an mpirun that would end after it is not started; the rest are named
            counts["budget_not_run"] = [x.run_id for x in todo[n_done:]]
            return False
        rdir = runs_dir / r.run_id
        safefs.safe_mkdir(rdir, root)
        for entry in rdir.iterdir():
            safefs.check_not_link(entry, root)
        failed = rdir / "failed.json"
        if failed.exists():  # keep the record of earlier attempts
            n = len(list(rdir.glob("failed-attempt-*.json"))) + 1
            safefs.safe_rename(failed, rdir / f"failed-attempt-{n}.json", root)
        for stale in rdir.glob(".*.tmp"):
            stale.unlink()
        # results of an attempt that did not complete (e.g. meta.json failed on a full
        # disk after measurements.csv was renamed) are kept aside, not overwritten
        leftovers = [f for f in (*kind.data_files, *kind.optional_files, "meta.json") if (rdir / f).exists()]
        if leftovers:
            n = len(list(rdir.glob("incomplete-attempt-*"))) + 1
            keep = rdir / f"incomplete-attempt-{n}"
            safefs.safe_mkdir(keep, root, exist_ok=False)
            for f in leftovers:
                safefs.safe_rename(rdir / f, keep / f, root)
        cfg = next(x for x in c.configs if x.name == r.config)
        b = builds[cfg.name]
        seed = (base_seed + 7919 * planned.index(r)) % (2**62)
        if own_command:
            cmd = own_command(c, cfg, b, rdir, r)
        else:
            cmd = [b.binary(kind.executable), "--outdir", str(rdir), "--config", cfg.name, "--run-index",
                   str(r.run_index), *c.core_args(cfg), *(["--seed", str(seed)] if takes_seed else []),
                   "--expect-np", str(r.np), "--launch-json", str(rdir / "launch.json")]
        if kind.executable in TIMER_STUDY_EXECUTABLES:
            # the timer study once per campaign: the core reuses it while its key (hosts, boot,
            # binding, timer, clock source, executable) matches, else measures and rewrites it
            cmd += ["--timer-cache", str(root / TIMER_CACHE_FILE)]
        # the bench core reports each experiment on stderr ([k/n] op size): progress inside the mpirun
        watch = kind.executable == "mpitempo-bench" and progress.wants_inside()
        if not watch and not own_command:
            cmd.append("--quiet")
        launch = make_launch(b, r.np, cmd, cfg.launcher, cfg.env, cfg.binding, **cfg.platform_args)
        info = {"run_id": r.run_id, "config": cfg.name, "run_index": r.run_index, "np": r.np,
                "launcher": launch.to_json(), "build": b.to_json(), "campaign": c.name,
                "campaign_id": campaign_id(root),
                "position_in_campaign": planned.index(r),
                "system_warnings": (sys_warnings or {}).get((cfg.name, r.np), [])}
        safefs.safe_write_text(rdir / "launch.json", json.dumps(info, indent=2) + "\n", root)
        env = dict(os.environ)
        env.update(launch.env)
        t0 = time.monotonic()
        progress.start(r.run_id, cfg.name, r.np)
        status, rc, err_tail, reason = _run_one(launch.argv, env, c.timeout_s, rdir,
                                                progress.inside if watch else None)
        dt = time.monotonic() - t0
        if hasattr(kind, "after_run"):   # a kind whose program writes no meta.json writes it now
            kind.after_run(c, cfg, b, rdir, info, status, time.time() - dt, dt)
        complete = kind.complete(rdir)
        if status == "ok" and not complete:
            status = "incomplete"
        if status == "failed":
            status = kind.status(rc, complete) or status
        safefs.safe_append(root / "runlog.jsonl",   # one line per attempt, for timing studies
                           json.dumps({"run_id": r.run_id, "status": status, "returncode": rc,
                                       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - dt)),
                                       "duration_s": round(dt, 6)}) + "\n", root)
        if status == "ok":
            counts["ok"] += 1
            progress.finish(r.run_id, True, dt)
        elif status in COMPLETE_WITH_PROBLEM:   # complete: the data is kept, the problem said
            counts["ok"] += 1
            counts[status] = counts.get(status, 0) + 1
            mark, lead = COMPLETE_WITH_PROBLEM[status]
            lines = [ln.split("error: ", 1)[-1] for ln in err_tail.splitlines() if mark in ln]
            progress.finish(r.run_id, False, dt, lead + (lines[-1] if lines else "see stderr.log"))
        else:
            counts["failed"] += 1
            for stale in rdir.glob(".*.tmp"):   # the unfinished files of a killed core: never looked whole
                stale.unlink()
            if not reason or status == "incomplete":   # the mpirun succeeded but left no complete run
                reason = failure_reason(err_tail, status, rc)
            rec = {"run_id": r.run_id, "status": status, "returncode": rc, "duration_s": dt,
                   "reason": reason, "argv": launch.argv, "stderr_tail": err_tail}
            safefs.safe_write_text(failed, json.dumps(rec, indent=2) + "\n", root)
            progress.finish(r.run_id, False, dt, f"{status}: {reason}")
            if status == "interrupted":
                return next((ln.split("interrupted by ", 1)[1].split(";")[0] for ln in err_tail.splitlines()
                             if ln.startswith("mpitempo: interrupted by ")), True)
    return False


# kind statuses (Kind.status) of an mpirun that completed with a problem: counted as complete and
# named in counts[status]; (the marker of the core's stderr line that says it, the progress text before it)
# executables whose mpiruns study the timer (src/core/run/run.c) and take --timer-cache
TIMER_STUDY_EXECUTABLES = ("mpitempo-bench", "mpitempo-clocks", "mpitempo-tree")
TIMER_CACHE_FILE = "timer-study.txt"

COMPLETE_WITH_PROBLEM = {
    "few_valid": ("valid", "completed with too few valid measurements: "),
    "insane": ("sanity check failed", "completed; "),   # a LogP pair failed its checks (meta.json sanity_problem)
}


_EXP_LINE = re.compile(rb"\[(\d+)/(\d+)\] (\S+) (\d+) B: median [^(]*\((\d+)/(\d+) valid\)")


def _watch(errf, pos: int, seen: dict, on_progress) -> int:
    """Read what the core wrote to stderr.log since ``pos``; report its per-experiment lines
    ('[k/n] op msize B: median ... (v/m valid)') to on_progress(done, total, op, msize, measurements)."""
    try:
        errf.flush()
        fd = errf.fileno()
        chunk = os.pread(fd, max(0, os.fstat(fd).st_size - pos), pos)
    except OSError:
        return pos
    end = chunk.rfind(b"\n") + 1
    for m in _EXP_LINE.finditer(chunk[:end]):
        seen["meas"] = seen.get("meas", 0) + int(m.group(6))
        on_progress(int(m.group(1)), int(m.group(2)), m.group(3).decode(), int(m.group(4)), seen["meas"])
    return pos + end


def _run_one(argv: list[str], env: dict, timeout: float, rdir: Path,
             on_progress=None) -> tuple[str, int | None, str]:
    """Run one mpirun under a watchdog (runner.watchdog), in its own session; returns (status,
    returncode, stderr tail, reason).
    ``on_progress`` receives the core's per-experiment progress while the mpirun runs."""
    root = rdir.parent.parent
    errf = safefs.safe_open(rdir / "stderr.log", "w+", root)
    outf = safefs.safe_open(rdir / "stdout.log", "w+", root)   # the core writes nothing there; MPICH's mpiexec its banners
    try:
        p = watchdog.popen(argv, stdout=outf, stderr=errf, env=env)   # no process of it outlives mpitempo
    except OSError as e:
        errf.close()
        outf.close()
        (rdir / "stdout.log").unlink()
        msg = f"cannot start '{argv[0]}': {e.strerror}"
        return "failed", None, msg, msg
    status = "ok"
    try:
        if on_progress is None:
            rc = watchdog.wait(p, timeout)
        else:
            t_end, pos, seen = time.monotonic() + timeout, 0, {}
            while True:
                try:
                    rc = watchdog.wait(p, max(0.0, min(0.5, t_end - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= t_end:
                        raise
                    pos = _watch(errf, pos, seen, on_progress)
        watchdog.finish(p)
        if rc != 0:
            status = "failed" if rc > 0 else "killed"
    except subprocess.TimeoutExpired:
        _kill_group(p)
        rc, status = p.returncode, "timeout"
    except KeyboardInterrupt as e:   # Ctrl-C, or SIGTERM/SIGHUP (runner.lock.Terminated)
        _kill_group(p)
        rc, status = p.returncode, "interrupted"
        signame = getattr(e, "signame", "SIGINT")
    errf.seek(0)
    text = errf.read()
    errf.close()
    outf.seek(0)
    out_text = outf.read()
    outf.close()
    if not out_text:
        (rdir / "stdout.log").unlink()
    if status == "timeout":
        text += f"\nmpitempo: killed after the timeout of {timeout:g} s"
    if status == "interrupted":
        text += f"\nmpitempo: interrupted by {signame}; the mpirun's process group was killed"
    tail = "\n".join(text.splitlines()[-20:])
    if status == "ok":
        return status, rc, tail, ""
    reason = with_known_bug(failure_reason(text + "\n" + out_text, status, rc), text + "\n" + out_text, argv)
    return status, rc, tail, with_disk_full(reason, text + "\n" + out_text, rdir.parent.parent, rc)


def _kill_group(p: subprocess.Popen) -> None:
    """Stop a job started with runner.watchdog.popen: its watchdog sends SIGTERM to the launcher and
    every process below it (the launcher forwards it to the ranks), SIGKILL to whatever is left after
    3 s, and removes the job's /dev/shm files (MPICH's mpich_shm_*, which a rank killed before
    MPI_Finalize never removes) once every process of the job is gone."""
    watchdog.stop(p)


def first_failure(outdir: Path) -> str:
    """The core's one-line error of the first failed mpirun of a campaign (or its last stderr line)."""
    for f in sorted((outdir / "runs").glob("*/failed.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(rec, dict):
            continue
        if isinstance(rec.get("reason"), str) and rec["reason"]:
            return rec["reason"]
        rc = rec.get("returncode")   # a record written before failed.json had "reason"
        return failure_reason(str(rec.get("stderr_tail", "")), str(rec.get("status", "failed")),
                              rc if isinstance(rc, int) else None)
    return "see runs/*/failed.json"


@contextlib.contextmanager
def run_campaign(c: Campaign, outdir: str | Path | None, quiet: bool = False, deadline: float | None = None):
    """Run campaign ``c`` in ``outdir``, or in a temporary directory removed on exit when outdir is None;
    yields (directory, complete run directories). Any failed mpirun is an MtError with the core's error.
    ``deadline`` (runner.estimate.budget_gate): the mpiruns that would end after it are not run and named."""
    from mpitempo.io.rundir import find_runs

    tmp = None if outdir else tempfile.mkdtemp(prefix=f"mpitempo-{c.kind}-")
    out = Path(outdir) if outdir else Path(tmp) / "campaign"
    try:
        counts = execute(c, out, quiet=quiet, deadline=deadline)
        if counts["failed"]:
            raise MtError(f"{counts['failed']} of {counts['total']} {c.kind} mpirun(s) failed: {first_failure(out)}")
        budget_note(counts, out if outdir else None)
        complete, _, _ = find_runs(out, c.kind_obj)
        yield out, complete
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def budget_note(counts: dict, target: Path | None) -> None:
    """Name the mpiruns a --budget left out (stderr), with how to complete them."""
    left = counts.get("budget_not_run")
    if not left:
        return
    how = f"; complete them with: mpitempo run --resume {target}" if target else ""
    _log(f"mpitempo: the --budget ran out: {len(left)} mpirun(s) not run ({', '.join(left[:6])}"
         f"{', ...' if len(left) > 6 else ''}){how}")
