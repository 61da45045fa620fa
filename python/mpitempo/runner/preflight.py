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

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.io.params import parse_duration

# Schemes whose measurement calls the operation `inner` times (params.def: inner).
_INNER_SCHEMES = ("loop", "barrier_loop")


_dry_runs: dict[tuple, dict] = {}


def core_dry_run(binary: str, args: list[str], where: str = "", build=None) -> dict:
    """The core's ``--check-args``: its normalised options and plan as JSON, or its one-line error.
    With the build, a core that cannot run on its own (SMPI) is run the way it can (build.direct_argv).
    Configurations that differ only in what the core does not see (their environment, launcher)
    share one dry run: the plans of passing ones are kept per (binary, arguments) in this process."""
    from mpitempo.build import core_error_line, direct_argv

    argv = direct_argv(build, binary) if build is not None else [binary]
    key = (tuple(argv), tuple(args), tuple(sorted(os.environ.items())))   # the dry run sees this process's environment
    if key in _dry_runs:
        return _dry_runs[key]
    doc = _core_dry_run(argv, binary, args, where, core_error_line)
    _dry_runs[key] = doc
    return doc


def _core_dry_run(argv: list[str], binary: str, args: list[str], where: str, core_error_line) -> dict:
    try:
        r = subprocess.run([*argv, "--check-args", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MtError(f"cannot run the core's dry run '{binary} --check-args': {e}") from None
    if r.returncode != 0:
        line = core_error_line(r.stderr)
        msg = line.split(": error: ", 1)[-1] if line else f"exit code {r.returncode}"
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
        warm = opts.get("warmup") or 0
        warm = WARMUP_AUTO_CAP if warm == "auto" else int(warm)   # auto: at most the cap
        calls = nrep * (int(opts.get("inner") or 1) if scheme in _INNER_SCHEMES else 1) + warm
        if scheme != "roundtime":
            total += ndelay * calls * d
            parts.append(f"{ndelay} delay experiment(s) x {calls} calls of {d:g} s")
    return total, " + ".join(parts)


# --warmup auto stops at this many calls at the latest (MT_WARMUP_CAP, src/core/scheme/scheme.h)
WARMUP_AUTO_CAP = 2000
PLACEHOLDERS = ("np", "cmd", "mpiexec")
SIM_PLACEHOLDERS = ("platform", "hostfile")   # a simulated platform's smpirun template (runner.launch)
# The default launcher starts every rank on this host (outside a Slurm allocation or a host file):
# more than this many ranks per core is refused (a template or srun is the explicit way to more).
MAX_RANKS_PER_CORE = 64
# A timeout below this is warned about (not refused: no honest lower bound of an MPI job's start-up
# exists; a 2-rank job here takes 0.2-0.5 s): starting and finishing an MPI job takes up to this long.
MIN_SENSIBLE_TIMEOUT_S = 1.0


def check_template(template: str | None, np: int, where: str = "", simulated: bool = False) -> None:
    """Before anything is created: placeholders of a launcher template are {np}, {cmd} and
    {mpiexec} ({nprocs} would reach the shell as text), and the default launcher does not start
    more ranks than this host can hold."""
    import re

    from mpitempo.runner.launch import ncores

    if template and template not in ("mpiexec", "srun"):
        for name in re.findall(r"(?<!\$)\{([^{}\s]*)\}", template):
            if name not in PLACEHOLDERS + (SIM_PLACEHOLDERS if simulated else ()):
                raise MtError(f"invalid --launcher '{template}'{where}: unknown placeholder {{{name}}} "
                              "(allowed: {np}, {cmd}, {mpiexec}"
                              + (", {platform}, {hostfile})" if simulated else ")"))
    elif template != "srun" and not simulated and not _spread_over_hosts():
        cap = MAX_RANKS_PER_CORE * ncores()
        if np > cap:
            raise MtError(f"-n {np}{where} would start {np} ranks on this host ({ncores()} cores; the default "
                          f"launcher starts at most {cap} here): use --launcher srun, or a launcher template with "
                          "a host file, to spread them over hosts")


def _spread_over_hosts() -> bool:
    """mpiexec here would place ranks on other hosts too: inside a Slurm or PBS allocation, or with a
    host file named in the environment of MPICH's Hydra or Open MPI."""
    return any(os.environ.get(v) for v in ("SLURM_JOB_ID", "PBS_NODEFILE", "LSB_HOSTS", "HYDRA_HOST_FILE",
                                            "OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"))


def warn_short_timeout(timeout_s: float, label: str = "timeout_s") -> None:
    if timeout_s < MIN_SENSIBLE_TIMEOUT_S:
        import sys

        print(f"mpitempo: warning: {label} {timeout_s:g} s leaves little room: starting and finishing an MPI "
              f"job alone takes up to about {MIN_SENSIBLE_TIMEOUT_S:g} s; an mpirun killed by the timeout is "
              "recorded as failed and never counted", file=sys.stderr)


def check_launcher(build, np: int, template: str | None, env: dict, where: str = "",
                   platform: str | None = None, platform_oversubscribe: bool = False,
                   platform_ppn: int | None = None) -> None:
    """The launcher as the runner will expand it; a Slurm launcher needs a Slurm that answers."""
    from mpitempo.runner.launch import argv_is_srun, make_launch, srun_template

    check_template(template, np, where, simulated=bool(platform))
    launch = make_launch(build, np, ["mpitempo-core"], template, env, platform=platform,
                         platform_oversubscribe=platform_oversubscribe, platform_ppn=platform_ppn)
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
    for cfg in c.configs:   # the launchers first: they need no build
        for np in c.np:
            check_template(cfg.launcher, np, f" (config '{cfg.name}')" if len(c.configs) > 1 else "",
                           simulated=bool(cfg.platform))
    for cfg in c.configs:
        b = builds[cfg.name]
        where = f" (config '{cfg.name}')" if len(c.configs) > 1 else ""
        mpilib.of(b).check_timer(c.params_for(cfg).get("timer"), where)
        for np in c.np:
            # --outdir as the runner passes it (options such as --timestamps need one; the dry run
            # writes nothing)
            if not kind.executable:   # not a core binary (trace: the user's application; checked by the kind)
                check_launcher(b, np, cfg.launcher, cfg.env, where, **cfg.platform_args)
                continue
            plan = core_dry_run(b.binary(kind.executable),
                                [*c.core_args(cfg), "--expect-np", str(np), "--outdir", "."], where, build=b)
            check_launcher(b, np, cfg.launcher, cfg.env, where, **cfg.platform_args)
            if kind.executable == "mpitempo-bench":
                secs, what = min_seconds(plan)
                if secs > c.timeout_s:
                    raise MtError(f"one mpirun{where} needs at least {secs:g} s ({what}), more than the timeout of "
                                  f"{c.timeout_s:g} s; shorten the plan or raise --timeout/timeout_s")
                check_host_memory(plan, ranks_on_this_host(np, cfg.launcher, bool(cfg.platform)), where)
    warn_short_timeout(c.timeout_s)


# the core's ops with a window of messages in flight (MT_OPT_WINDOW), and those of them whose receive
# buffers can be a single block (MT_OPT_RBUF, --bw-rbuf single): src/core/op/op_p2p.c, op_rma.c
WINDOW_OPS = ("bw", "bibw", "mbw_mr", "bw_persistent", "bibw_persistent", "put_bw", "get_bw", "put_bibw")
RBUF_OPS = ("bw", "bibw", "mbw_mr", "bw_persistent", "bibw_persistent")
HOST_MEMORY_SHARE = 0.75   # the buffers of all ranks on one host: at most this share of its memory


def host_memory_bytes() -> int:
    """This host's physical memory (0 when unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def ranks_on_this_host(np: int, template: str | None, simulated: bool) -> int | None:
    """How many ranks of an mpirun run on this host: all of them for the local mpiexec and for a
    simulated platform (SMPI runs every simulated rank in one process here); None (unknown) for srun, a
    custom launcher, or inside an allocation or with a host file, which spread them over hosts."""
    if simulated:
        return np
    if template not in (None, "", "mpiexec") or _spread_over_hosts():
        return None
    return np


def check_host_memory(plan: dict, ranks_here: int | None, where: str = "", mem: int | None = None) -> None:
    """Refuse a plan whose message buffers on this host (ranks here x the largest window x message size
    of a window op) exceed HOST_MEMORY_SHARE of its memory: the core checks one rank's buffers
    against its host, which 8 ranks of 4 GiB each on a 23.5 GiB host pass."""
    mem = host_memory_bytes() if mem is None else mem
    if not ranks_here or mem <= 0:
        return
    opts = plan.get("options") or {}
    window = opts.get("bw_window")
    if not isinstance(window, int) or window < 1:
        return
    single = str(opts.get("bw_rbuf", "window")) != "window"
    worst = None
    for e in plan.get("experiments") or []:
        op, msize = e.get("op"), e.get("msize")
        if op not in WINDOW_OPS or not isinstance(msize, int):
            continue
        per_rank = (1 if single and op in RBUF_OPS else window) * msize
        if worst is None or per_rank > worst[0]:
            worst = (per_rank, op, msize)
    if worst is None:
        return
    per_rank, op, msize = worst
    total = per_rank * ranks_here
    if total > HOST_MEMORY_SHARE * mem:
        n = per_rank // msize
        raise MtError(f"one mpirun{where} needs at least {total / 2**30:.1f} GiB of message buffers on this host "
                      f"({ranks_here} ranks x {n} x {msize} B for op {op}), more than {HOST_MEMORY_SHARE:.0%} of its "
                      f"memory ({mem / 2**30:.1f} GiB): use fewer ranks, a smaller --bw-window or smaller messages")


def split_args(text: str, what: str) -> list[str]:
    """shlex.split with a one-line error (an unbalanced quote, say)."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise MtError(f"invalid {what} '{text}': {e}") from None
