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
import json
import os
import shutil
import tempfile
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mpitempo.build import Build, ensure_build
from mpitempo.io.campaign import Campaign
from mpitempo.errors import MtError
from mpitempo.io import params as ptable
from mpitempo.runner.launch import make_launch
from mpitempo.runner.progress import Progress
from mpitempo.runner.reason import failure_reason


@dataclass
class PlannedRun:
    run_id: str
    config: str
    np: int
    run_index: int


def plan(c: Campaign) -> list[PlannedRun]:
    """Interleave configurations and process counts across mpiruns (run 1 of A,
    run 1 of B, ...), or shuffle the whole list with the campaign seed."""
    runs = []
    for i in range(c.mpiruns):
        for np in c.np:
            for cfg in c.configs:
                suffix = f"-np{np}" if len(c.np) > 1 else ""
                runs.append(PlannedRun(f"{cfg.name}{suffix}-{i:03d}", cfg.name, np, i))
    if c.order == "random":
        random.Random(c.seed if c.seed is not None else 0).shuffle(runs)
    return runs


def run_complete(d: Path, kind=None) -> bool:
    from mpitempo import kinds

    return (kind or kinds.get("bench")).complete(d)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def execute(c: Campaign, outdir: Path, resume: bool = False, quiet: bool = False,
            given: str = "the campaign given", present: tuple[str, ...] = ()) -> dict:
    """Run (or resume) the campaign in outdir; returns counts of ok/failed/skipped runs.
    Everything is checked before the directory is created; the directory is locked while the
    campaign runs; SIGTERM and SIGHUP stop it as Ctrl-C does (counts["interrupted"]). A new
    campaign may go into an existing directory that holds nothing but the entries named in
    `present` (a tool's own record written first, e.g. barrier-study.json)."""
    from mpitempo.runner.lock import builds_in_use, campaign_lock, signals_interrupt

    kind = c.kind_obj
    builds = check_campaign(c)

    runs_dir = outdir / "runs"
    with contextlib.ExitStack() as stack:
        if resume:
            spec_path = outdir / "campaign.toml"
            if not spec_path.exists():
                raise MtError(f"cannot resume '{outdir}': it has no campaign.toml (not a campaign directory)")
            try:
                have = spec_path.read_text(errors="replace")
            except OSError as e:
                raise MtError(f"cannot read '{spec_path}': {e.strerror}") from None
            if _spec_lines(have) != _spec_lines(c.to_toml()):   # comments and blank lines do not count
                raise MtError(f"cannot resume '{outdir}': its campaign.toml differs from {given} "
                              f"({_first_difference(_normalised(have, c.kind), c.to_toml())}); "
                              "resume without changing the campaign")
            stack.enter_context(campaign_lock(outdir))
        else:
            if outdir.is_dir() and all(e.name in present for e in outdir.iterdir()):
                pass   # an empty directory made for us is fine
            else:
                try:
                    outdir.mkdir(parents=True, exist_ok=False)
                except FileExistsError:
                    raise MtError(f"campaign directory '{outdir}' already exists; choose a new -o or use --resume") from None
                except OSError as e:
                    raise MtError(f"cannot create the campaign directory '{outdir}': {e.strerror}") from None
            try:
                stack.enter_context(campaign_lock(outdir))
                (outdir / "campaign.toml").write_text(c.to_toml())
                runs_dir.mkdir(exist_ok=True)
            except (OSError, MtError) as e:   # a full or read-only file system: nothing half-written is left
                stack.close()
                shutil.rmtree(outdir, ignore_errors=True)
                why = e.strerror if isinstance(e, OSError) else str(e)
                raise MtError(f"cannot write the campaign directory '{outdir}': {why}") from None
        runs_dir.mkdir(exist_ok=True)

        planned = plan(c)
        order_path = outdir / "order.json"
        if not order_path.exists():
            order_path.write_text(json.dumps([r.run_id for r in planned], indent=1) + "\n")
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
                                            progress, sys_warnings)
        except KeyboardInterrupt as e:   # between two mpiruns: nothing is running, nothing to record
            interrupted = getattr(e, "signame", None) or True
        except OSError as e:   # the runner's own files (launch.json, stderr.log, runlog.jsonl, failed.json)
            # never raised while an mpirun runs: every run either completed (its meta.json is there) or is rerun
            where = f" ({e.filename})" if e.filename else ""
            raise MtError(f"cannot write into the campaign directory '{outdir}': {e.strerror or e}{where}; "
                          f"{counts['ok']} run(s) completed now and {counts['skipped']} before are kept; "
                          f"continue with: mpitempo run --resume {outdir}") from None
        finally:
            progress.close()
    counts["interrupted"] = interrupted
    return counts


def _spec_lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def _normalised(text: str, kind: str) -> str:
    """A campaign.toml as this mpitempo writes it (every key, canonical values), so that the first
    difference named is one of values, not of layout; the text itself when it does not parse."""
    import tomllib

    from mpitempo.io.campaign import build_campaign

    try:
        spec = tomllib.loads(text)
        return build_campaign(spec, kind=None if "kind" in spec else kind).to_toml()
    except (tomllib.TOMLDecodeError, MtError):
        return text


def _first_difference(a: str, b: str) -> str:
    la, lb = _spec_lines(a), _spec_lines(b)
    for x, y in zip(la, lb):
        if x != y:
            return f"'{x}' there, '{y}' now"
    if len(la) != len(lb):
        extra = la[len(lb)] if len(la) > len(lb) else lb[len(la)]
        return f"'{extra}' only {'there' if len(la) > len(lb) else 'now'}"
    return "whitespace"


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
        launch = make_launch(builds[cfg_name], np, ["true"], cfg.launcher, cfg.env)
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
        hist = json.loads(path.read_text()) if path.exists() else []
    except ValueError:
        hist = []
    hist.append({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "checks": entries})
    tmp = outdir / ".system-check.json.tmp"
    tmp.write_text(json.dumps(hist, indent=1) + "\n")
    tmp.replace(path)
    return out


def check_campaign(c: Campaign) -> dict[str, Build]:
    """Build (or find) the core of every configuration and check the campaign against it, before
    anything is created; returns the builds by configuration name."""
    builds: dict[str, Build] = {}
    for cfg in c.configs:
        builds[cfg.name] = ensure_build(cfg.mpicc, cflags=cfg.cflags)
        c.kind_obj.check(c, builds[cfg.name], [cfg])
    from mpitempo.runner.preflight import preflight

    preflight(c, builds)
    return builds


def _execute_runs(c, kind, todo, planned, builds, runs_dir, base_seed, counts, progress, sys_warnings=None) -> bool:
    takes_seed = "seed" in ptable.for_app(kind.app)
    for r in todo:
        rdir = runs_dir / r.run_id
        rdir.mkdir(exist_ok=True)
        failed = rdir / "failed.json"
        if failed.exists():  # keep the record of earlier attempts
            n = len(list(rdir.glob("failed-attempt-*.json"))) + 1
            failed.rename(rdir / f"failed-attempt-{n}.json")
        for stale in rdir.glob(".*.tmp"):
            stale.unlink()
        # results of an attempt that did not complete (e.g. meta.json failed on a full
        # disk after measurements.csv was renamed) are kept aside, not overwritten
        leftovers = [f for f in (*kind.data_files, *kind.optional_files, "meta.json") if (rdir / f).exists()]
        if leftovers:
            n = len(list(rdir.glob("incomplete-attempt-*"))) + 1
            keep = rdir / f"incomplete-attempt-{n}"
            keep.mkdir()
            for f in leftovers:
                (rdir / f).rename(keep / f)
        cfg = next(x for x in c.configs if x.name == r.config)
        b = builds[cfg.name]
        seed = (base_seed + 7919 * planned.index(r)) % (2**62)
        cmd = [b.binary(kind.executable), "--outdir", str(rdir), "--config", cfg.name, "--run-index",
               str(r.run_index), *c.core_args(cfg), *(["--seed", str(seed)] if takes_seed else []),
               "--expect-np", str(r.np), "--launch-json", str(rdir / "launch.json")]
        # the bench core reports each experiment on stderr ([k/n] op size): progress inside the mpirun
        watch = kind.executable == "mpitempo-bench" and progress.wants_inside()
        if not watch:
            cmd.append("--quiet")
        launch = make_launch(b, r.np, cmd, cfg.launcher, cfg.env, cfg.binding)
        info = {"run_id": r.run_id, "config": cfg.name, "run_index": r.run_index, "np": r.np,
                "launcher": launch.to_json(), "build": b.to_json(), "campaign": c.name,
                "position_in_campaign": planned.index(r),
                "system_warnings": (sys_warnings or {}).get((cfg.name, r.np), [])}
        (rdir / "launch.json").write_text(json.dumps(info, indent=2) + "\n")
        env = dict(os.environ)
        env.update(launch.env)
        t0 = time.monotonic()
        progress.start(r.run_id, cfg.name, r.np)
        status, rc, err_tail, reason = _run_one(launch.argv, env, c.timeout_s, rdir,
                                                progress.inside if watch else None)
        dt = time.monotonic() - t0
        complete = kind.complete(rdir)
        if status == "ok" and not complete:
            status = "incomplete"
        if status == "failed":
            status = kind.status(rc, complete) or status
        with open(runs_dir.parent / "runlog.jsonl", "a") as log:  # one line per attempt, for timing studies
            log.write(json.dumps({"run_id": r.run_id, "status": status, "returncode": rc,
                                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - dt)),
                                  "duration_s": round(dt, 6)}) + "\n")
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
            tmp = rdir / ".failed.json.tmp"
            tmp.write_text(json.dumps(rec, indent=2) + "\n")
            tmp.replace(failed)
            progress.finish(r.run_id, False, dt, f"{status}: {reason}")
            if status == "interrupted":
                return next((ln.split("interrupted by ", 1)[1].split(";")[0] for ln in err_tail.splitlines()
                             if ln.startswith("mpitempo: interrupted by ")), True)
    return False


# kind statuses (Kind.status) of an mpirun that completed with a problem: counted as complete and
# named in counts[status]; (the marker of the core's stderr line that says it, the progress text before it)
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
        with open(errf.name, "rb") as f:
            f.seek(pos)
            chunk = f.read()
    except OSError:
        return pos
    end = chunk.rfind(b"\n") + 1
    for m in _EXP_LINE.finditer(chunk[:end]):
        seen["meas"] = seen.get("meas", 0) + int(m.group(6))
        on_progress(int(m.group(1)), int(m.group(2)), m.group(3).decode(), int(m.group(4)), seen["meas"])
    return pos + end


def _run_one(argv: list[str], env: dict, timeout: float, rdir: Path,
             on_progress=None) -> tuple[str, int | None, str]:
    """Run one mpirun in its own process group; returns (status, returncode, stderr tail).
    ``on_progress`` receives the core's per-experiment progress while the mpirun runs."""
    errf = open(rdir / "stderr.log", "w+")
    outf = open(rdir / "stdout.log", "w+")   # the core writes nothing there; MPICH's mpiexec its banners
    try:
        p = subprocess.Popen(argv, stdout=outf, stderr=errf, env=env, start_new_session=True)
    except OSError as e:
        errf.close()
        outf.close()
        (rdir / "stdout.log").unlink()
        msg = f"cannot start '{argv[0]}': {e.strerror}"
        return "failed", None, msg, msg
    status = "ok"
    try:
        if on_progress is None:
            rc = p.wait(timeout=timeout)
        else:
            t_end, pos, seen = time.monotonic() + timeout, 0, {}
            while True:
                try:
                    rc = p.wait(timeout=max(0.0, min(0.5, t_end - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= t_end:
                        raise
                    pos = _watch(errf, pos, seen, on_progress)
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
    return status, rc, tail, (failure_reason(text + "\n" + out_text, status, rc) if status != "ok" else "")


def _descendants(pid: int) -> set[int]:
    """Every process below pid (from /proc). MPI launchers put their proxies and ranks into new
    sessions (MPICH's hydra_pmi_proxy, each rank), out of reach of the mpirun's process group."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(e))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _signal_all(p: subprocess.Popen, procs: set[int], sig) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)
    for pid in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _kill_group(p: subprocess.Popen) -> None:
    """SIGTERM the mpirun's process group and every process below it (the launcher forwards it to
    the ranks), then SIGKILL whatever is left after 3 s: no proxy, no rank survives."""
    procs = _descendants(p.pid)
    shm = _shm_files(procs)
    _signal_all(p, procs, signal.SIGTERM)
    deadline = time.monotonic() + 3
    try:
        while time.monotonic() < deadline:
            procs |= _descendants(p.pid)
            if p.poll() is not None and not any(_alive(x) for x in procs):
                return
            time.sleep(0.05)
        procs |= _descendants(p.pid)
        _signal_all(p, procs, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)
    finally:
        # shared memory of the killed ranks (MPICH's /dev/shm/mpich_shm_*): a rank killed before
        # MPI_Finalize never removes it; only files these processes had mapped are removed
        if not any(_alive(x) for x in procs):
            for f in shm:
                with contextlib.suppress(OSError):
                    os.unlink(f)


def _shm_files(pids) -> set[str]:
    """The /dev/shm files mapped by these processes."""
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                for ln in f:
                    parts = ln.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith("/dev/shm/") and not parts[5].rstrip().endswith("(deleted)"):
                        out.add(parts[5].rstrip())
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


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
def run_campaign(c: Campaign, outdir: str | Path | None, quiet: bool = False):
    """Run campaign ``c`` in ``outdir``, or in a temporary directory removed on exit when outdir is None;
    yields (directory, complete run directories). Any failed mpirun is an MtError with the core's error."""
    from mpitempo.io.rundir import find_runs

    tmp = None if outdir else tempfile.mkdtemp(prefix=f"mpitempo-{c.kind}-")
    out = Path(outdir) if outdir else Path(tmp) / "campaign"
    try:
        counts = execute(c, out, quiet=quiet)
        if counts["failed"]:
            raise MtError(f"{counts['failed']} of {counts['total']} {c.kind} mpirun(s) failed: {first_failure(out)}")
        complete, _, _ = find_runs(out, c.kind_obj)
        yield out, complete
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
