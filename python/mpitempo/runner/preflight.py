"""Everything a campaign can be refused for, checked before its directory exists.

`check_campaign` (runner.execute) calls `preflight` after the kind's own checks:

* the core's dry run of its option parser (``--check-args --expect-np NP``) for every
  configuration and process count: what only the core knows (sync specs, delays,
  sizes too large for the datatype, zero time slices or windows) fails here, with
  the core's one-line error, and not in every mpirun one by one;
* the launcher template of every configuration and process count, expanded as the
  runner will (placeholders, quoting, the program found on PATH), and a Slurm
  launcher only where Slurm answers;
* a lower bound of the time one mpirun needs, from the core's plan of experiments:
  a plan that cannot finish within ``timeout_s`` is refused up front.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess

from mpitempo.errors import MtError
from mpitempo.io.params import parse_duration

# Schemes whose measurement calls the operation `inner` times (params.def: inner).
_INNER_SCHEMES = ("loop", "barrier_loop")


def core_dry_run(binary: str, args: list[str], where: str = "") -> dict:
    """The core's ``--check-args``: its normalised options and plan as JSON, or its one-line error."""
    try:
        r = subprocess.run([binary, "--check-args", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MtError(f"cannot run the core's dry run '{binary} --check-args': {e}") from None
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        msg = lines[-1].split(": error: ", 1)[-1] if lines else f"exit code {r.returncode}"
        raise MtError(msg + where)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def min_seconds(plan: dict) -> tuple[float, str]:
    """A lower bound of the seconds one mpirun of the bench core needs, from its --check-args JSON,
    and what it is made of (for the message). Only what certainly takes time is counted."""
    opts = plan.get("options") or {}
    exps = plan.get("experiments") or []
    scheme = str(plan.get("scheme") or opts.get("scheme") or "")
    nrep = int(opts.get("nrep") or 0)
    total, parts = 0.0, []
    n = len(exps)
    if scheme == "roundtime" and n:
        ts = float(opts.get("time_slice") or 0)
        total += n * ts
        parts.append(f"{n} experiments x time slice {ts:g} s")
    elif scheme == "window" and n and opts.get("window"):
        w = float(opts["window"])
        total += n * nrep * w
        parts.append(f"{n} experiments x {nrep} windows of {w:g} s")
    ndelay = sum(1 for e in exps if isinstance(e, dict) and e.get("op") == "delay")
    if ndelay and opts.get("delay"):
        try:
            d = max(parse_duration(x.strip(), "--delay") for x in str(opts["delay"]).split(",") if x.strip())
        except MtError:
            d = 0.0
        calls = nrep * (int(opts.get("inner") or 1) if scheme in _INNER_SCHEMES else 1) + int(opts.get("warmup") or 0)
        if scheme != "roundtime":
            total += ndelay * calls * d
            parts.append(f"{ndelay} delay experiment(s) x {calls} calls of {d:g} s")
    return total, " + ".join(parts)


def check_launcher(build, np: int, template: str | None, env: dict, where: str = "") -> None:
    """The launcher as the runner will expand it; a Slurm launcher needs a Slurm that answers."""
    from mpitempo.runner.launch import argv_is_srun, make_launch, srun_template

    launch = make_launch(build, np, ["mpitempo-core"], template, env)
    tmpl = srun_template(build, np) if template == "srun" else template
    if tmpl and argv_is_srun(tmpl) and not os.environ.get("SLURM_JOB_ID"):
        sinfo = shutil.which("sinfo")
        try:
            ok = sinfo is not None and subprocess.run([sinfo, "-h", "-o", "%P"], capture_output=True,
                                                      timeout=15).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            raise MtError(f"launcher '{launch.argv[0]}'{where} needs Slurm, but no Slurm controller answers here "
                          "(sinfo failed; run inside an allocation, or use --launcher mpiexec)")


def preflight(c, builds: dict) -> None:
    """Refuse the campaign (MtError, one line) before anything is created; see the module text."""
    kind = c.kind_obj
    for cfg in c.configs:
        b = builds[cfg.name]
        where = f" (config '{cfg.name}')" if len(c.configs) > 1 else ""
        for np in c.np:
            # --outdir as the runner passes it (options such as --timestamps need one; the dry run
            # writes nothing)
            plan = core_dry_run(b.binary(kind.executable),
                                [*c.core_args(cfg), "--expect-np", str(np), "--outdir", "."], where)
            check_launcher(b, np, cfg.launcher, cfg.env, where)
            if kind.executable == "mpitempo-bench":
                secs, what = min_seconds(plan)
                if secs > c.timeout_s:
                    raise MtError(f"one mpirun{where} needs at least {secs:g} s ({what}), more than the timeout of "
                                  f"{c.timeout_s:g} s; shorten the plan or raise --timeout/timeout_s")


def split_args(text: str, what: str) -> list[str]:
    """shlex.split with a one-line error (an unbalanced quote, say)."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise MtError(f"invalid {what} '{text}': {e}") from None
