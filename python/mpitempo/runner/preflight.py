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
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.io.params import parse_duration
from mpitempo.io.safeload import read_bytes

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
    timed = [e.get("op") for e in exps if isinstance(e, dict)]
    ndelay = sum(1 for op in timed if op == "delay")
    calls, how = certain_calls(plan) if scheme != "roundtime" else (0, "")
    if ndelay and opts.get("delay") and calls:
        try:
            d = max(parse_duration(x.strip(), "--delay") for x in str(opts["delay"]).split(",") if x.strip())
        except MtError:
            d = 0.0
        total += ndelay * calls * d
        parts.append(f"{ndelay} delay experiment(s) x {calls} calls of {d:g} s{how}")
    nover = sum(1 for op in timed if isinstance(op, str) and op.endswith("_overlap"))
    comp = str(opts.get("overlap_compute") or "auto")
    if nover and comp != "auto" and calls:
        try:
            cs = parse_duration(comp, "--overlap-compute")
        except MtError:
            cs = 0.0
        total += nover * calls * cs
        parts.append(f"{nover} overlap experiment(s) x {calls} calls with --overlap-compute {cs:g} s{how}")
    return total, " + ".join(parts)


def certain_calls(plan: dict) -> tuple[int, str]:
    """The calls of one experiment that certainly run, from the core's --check-args JSON, and a note
    for the message: the warm-up (--warmup auto: none certain) and the fewest measurements the stopping
    rule can make (fixed: --nrep; adaptive: --nrep-min, or the early look at min_valid with --exp-time),
    times --inner for the loop schemes (1 with --inner-min-time)."""
    opts = plan.get("options") or {}
    scheme = str(plan.get("scheme") or opts.get("scheme") or "")
    try:
        nrep = int(opts.get("nrep") or 0)
        n = nrep
        if float(opts.get("precision") or 0) > 0:   # adaptive: stops at the first look it may
            n = min(n, int(opts.get("nrep_min") or n))
            if opts.get("exp_time"):
                n = min(n, int(plan.get("min_valid") or n))
        inner = int(opts.get("inner") or 1) if scheme in _INNER_SCHEMES and not opts.get("inner_min_time") else 1
        warm = opts.get("warmup") or 0
        warm = 0 if warm == "auto" else int(warm)
    except (TypeError, ValueError):
        return 0, ""
    return n * inner + warm, (" at the fewest the stopping rule allows" if n < nrep else "")


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
                if c.kind == "trace" and c.params_for(cfg).get("buffer"):
                    check_trace_memory(np, int(c.params_for(cfg)["buffer"]), cfg.launcher, where)
                continue
            plan = core_dry_run(b.binary(kind.executable),
                                [*c.core_args(cfg), "--expect-np", str(np), "--outdir", "."], where, build=b)
            check_launcher(b, np, cfg.launcher, cfg.env, where, **cfg.platform_args)
            if kind.executable == "mpitempo-bench":
                secs, what = min_seconds(plan)
                if secs > c.timeout_s:
                    raise MtError(f"one mpirun{where} needs at least {secs:g} s ({what}), more than the timeout of "
                                  f"{c.timeout_s:g} s; shorten the plan or raise --timeout/timeout_s")
                ranks, why = ranks_per_host(np, cfg.launcher, bool(cfg.platform))
                check_host_memory(plan, ranks, where, np=np, why=why, source=why if ranks is not None else "")
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
    """The most ranks of an mpirun on one host (ranks_per_host), None when the placement is unknown."""
    return ranks_per_host(np, template, simulated)[0]


# host-file options of the launchers (MPICH's Hydra, Open MPI's mpirun/prterun)
_HOSTFILE_FLAGS = ("-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-machine", "--machine")
_HOSTLIST_FLAGS = ("-hosts", "--hosts", "-host", "--host", "-H")
MAX_HOSTFILE_BYTES = 1 << 20


def _fill(slots: list[tuple[str, int]], np: int) -> int:
    """The most ranks one host gets when np ranks fill the slots in order, host by host, and again from
    the first host when all are full (Hydra with host:n lines, Open MPI by slot, srun's block
    distribution): ranks of one name on several lines count together."""
    slots = [(h, n) for h, n in slots if n > 0]
    if not slots:
        return np
    per: dict[str, int] = {}
    left = np
    total = sum(n for _, n in slots)
    rounds, left = divmod(left, total)   # whole rounds at once: np may be large
    for h, n in slots:
        per[h] = per.get(h, 0) + rounds * n
    for h, n in slots:
        if left <= 0:
            break
        k = min(n, left)
        per[h] += k
        left -= k
    return max(per.values())


def _read_hostfile(path: str) -> list[tuple[str, int]] | None:
    """(host, slots) of a host file: Hydra's `host[:n]`, Open MPI's `host [slots=n]`, PBS's one line
    per slot; None when it cannot be read (never blocking on a FIFO, at most 1 MiB)."""
    try:
        text = read_bytes(Path(path), MAX_HOSTFILE_BYTES).decode(errors="replace")
    except (MtError, OSError):
        return None
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        host, n = words[0], 1
        if ":" in host:
            host, _, c = host.partition(":")
            n = int(c) if c.isdigit() else 1
        for w in words[1:]:
            k, _, v = w.partition("=")
            if k == "slots" and v.isdigit():
                n = int(v)
        out.append((host, n))
    return out or None


def _slurm_tasks_per_node() -> list[int] | None:
    """Tasks per node of the Slurm allocation (SLURM_TASKS_PER_NODE, e.g. '2(x3),1'; else
    SLURM_JOB_CPUS_PER_NODE), None when not in an allocation or unreadable."""
    for var in ("SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"):
        text = os.environ.get(var, "")
        if not text:
            continue
        out = []
        for part in text.split(","):
            m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
            if not m:
                out = []
                break
            out += [int(m.group(1))] * min(int(m.group(2) or 1), 1 << 18)
        if out:
            return out
    return None


def ranks_per_host(np: int, template: str | None, simulated: bool) -> tuple[int | None, str]:
    """(the most ranks of an mpirun on one host, where that placement comes from) or (None, why it is
    unknown). Known: the local mpiexec (every rank here), a simulated platform (SMPI runs every
    simulated rank in one process here), a host file (the launcher template's -f/--hostfile/
    --machinefile or --host list, HYDRA_HOST_FILE, Open MPI's default host file, PBS_NODEFILE,
    LSB_HOSTS) and a Slurm allocation (srun, or mpiexec inside it: SLURM_TASKS_PER_NODE). Unknown:
    another launcher, srun outside an allocation."""
    if simulated:
        return np, ""
    local = template in (None, "", "mpiexec")
    words: list[str] = []
    if not local and template != "srun":
        try:
            words = shlex.split(template)
        except ValueError:
            words = []
    for i, w in enumerate(words):   # a host file or host list named in the template
        flag, eq, val = w.partition("=")
        if flag in _HOSTFILE_FLAGS + _HOSTLIST_FLAGS:
            val = val if eq else (words[i + 1] if i + 1 < len(words) else "")
            if "{" in val:
                return None, f"its host file '{val}' is a placeholder"
            if flag in _HOSTFILE_FLAGS:
                slots = _read_hostfile(val)
                if slots is None:
                    return None, f"its host file '{val}' cannot be read"
                return _fill(slots, np), f"host file '{val}'"
            slots = [(h.partition(":")[0], int(h.partition(":")[2]) if h.partition(":")[2].isdigit() else 1)
                     for h in val.split(",") if h]
            return _fill(slots, np), f"{flag} {val}"
    srun = template == "srun" or (bool(words) and words[0].endswith("srun"))
    if not local and not srun:
        return None, f"launcher '{template}' places the ranks"
    if srun or os.environ.get("SLURM_JOB_ID"):
        tasks = _slurm_tasks_per_node() if os.environ.get("SLURM_JOB_ID") else None
        if tasks is None:
            return None, "srun places the ranks outside an allocation" if srun else \
                "the Slurm allocation does not say its tasks per node"
        return _fill([(str(i), n) for i, n in enumerate(tasks)], np), "the Slurm allocation's tasks per node"
    for var, kind in (("HYDRA_HOST_FILE", "file"), ("OMPI_MCA_orte_default_hostfile", "file"),
                      ("PRTE_MCA_prte_default_hostfile", "file"), ("PBS_NODEFILE", "file"), ("LSB_HOSTS", "list")):
        val = os.environ.get(var)
        if not val:
            continue
        slots = _read_hostfile(val) if kind == "file" else [(h, 1) for h in val.split()]
        if slots is None:
            return None, f"{var} names a host file that cannot be read"
        return _fill(slots, np), f"{var}"
    return np, ""


def host_memory_limit() -> tuple[int, str]:
    """(the memory of one host, what it is): the Slurm allocation's memory per node when set, else this
    host's physical memory (hosts taken as alike)."""
    mem = host_memory_bytes()
    try:
        slurm = int(os.environ.get("SLURM_MEM_PER_NODE", "0")) << 20
    except ValueError:
        slurm = 0
    if slurm > 0 and os.environ.get("SLURM_JOB_ID") and (mem <= 0 or slurm < mem):
        return slurm, "its memory in the allocation"
    return mem, "its memory"


def _refuse_or_note(total: float, ranks: int | None, np: int, why: str, source: str, what: str, remedy: str,
                    where: str, mem: int | None) -> None:
    """Refuse when `total` bytes on one host exceed HOST_MEMORY_SHARE of its memory; with an unknown
    placement (ranks None) say in one line that it was not checked, when all np ranks on one host
    would not fit."""
    import sys

    lim_text = "its memory"
    if mem is None:
        mem, lim_text = host_memory_limit()
    if mem <= 0:
        return
    if ranks is None:
        if total * np > HOST_MEMORY_SHARE * mem:
            print(f"mpitempo: note{where}: {what} per host not checked: the placement of the {np} ranks is not known "
                  f"here ({why}); all on one host they would need {total * np / 2**30:.1f} GiB", file=sys.stderr)
        return
    need = total * ranks
    if need > HOST_MEMORY_SHARE * mem:
        here = "this host" if not source else f"one host ({source})"
        raise MtError(f"one mpirun{where} needs at least {need / 2**30:.1f} GiB of {what} on {here} "
                      f"({ranks} ranks x {remedy[0]}), more than {HOST_MEMORY_SHARE:.0%} of {lim_text} "
                      f"({mem / 2**30:.1f} GiB): {remedy[1]}")


def check_host_memory(plan: dict, ranks_here: int | None, where: str = "", mem: int | None = None,
                      np: int | None = None, why: str = "", source: str = "") -> None:
    """Refuse a plan whose message buffers on one host (its ranks there x the largest window x message
    size of a window op) exceed HOST_MEMORY_SHARE of its memory: the core checks one rank's buffers
    against its host, which 8 ranks of 4 GiB each on a 23.5 GiB host pass. With an unknown placement
    (ranks_here None) a note says it was not checked (when np ranks on one host would not fit)."""
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
    if ranks_here is None and not np:
        return
    _refuse_or_note(per_rank, ranks_here, np or 0, why, source, "message buffers",
                    (f"{per_rank // msize} x {msize} B for op {op}",
                     "use fewer ranks, a smaller --bw-window or smaller messages"), where, mem)


# the tracer's event record in memory (tr_ev_t, src/trace/trace.h): --buffer of them per rank, allocated at
# MPI_Init; tests/py/test_hostile_plans.py compiles sizeof against the header
TRACE_EVENT_BYTES = 72


def check_trace_memory(np: int, buffer: int, template: str | None, where: str = "", mem: int | None = None) -> None:
    """`trace run --buffer N`: every rank allocates N events at MPI_Init; refused when the ranks on one
    host need more than HOST_MEMORY_SHARE of its memory (their sum, not one rank's)."""
    ranks, why = ranks_per_host(np, template, False)
    _refuse_or_note(buffer * TRACE_EVENT_BYTES, ranks, np, why, why if ranks is not None else "", "trace buffers",
                    (f"--buffer {buffer} events of {TRACE_EVENT_BYTES} B",
                     "lower --buffer (events per rank, --on-full wrap keeps the last ones) or use fewer ranks"),
                    where, mem)


def split_args(text: str, what: str) -> list[str]:
    """shlex.split with a one-line error (an unbalanced quote, say)."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise MtError(f"invalid {what} '{text}': {e}") from None
