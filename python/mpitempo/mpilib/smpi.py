"""SimGrid's SMPI (docs/simulation.md; docs/design.md, "The MPI library"): the core built with smpicc and
launched by smpirun on a simulated platform. SMPI implements MPI itself, with copies of the collective
algorithms of MPICH, Open MPI, MVAPICH2 and Intel MPI and their selection logic:
smpi/coll-selector:mpich|ompi makes SMPI choose every collective's algorithm as that library does (the
"default" measured); smpi/<op>:<name> forces one algorithm of one collective for the whole run (smpirun
refuses an unknown name). The list of names comes from SMPI itself: an unknown name (help) makes smpirun
stop with "Valid algorithms: ...". Selector names in that list (default, automatic, mpich, ompi, mvapich2,
impi) choose an algorithm rather than being one.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.mpilib.base import Algorithm, Catalogue, MpiLib, Variant, cache_root, cached_text

SELECTORS = ("mpich", "ompi")
NOT_ALGORITHMS = {"default", "automatic", "mpich", "ompi", "mvapich2", "impi"}
OP_KEYS = {"barrier": "barrier", "bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
           "allgather": "allgather", "alltoall": "alltoall", "reduce_scatter": "reduce_scatter",
           "gather": "gather", "scatter": "scatter"}
# the environment variable of the smpirun --cfg= items a configuration sets (runner/launch.py turns it into
# smpirun arguments)
CFG_ENV = "MPITEMPO_SMPI_CFG"

# smpirun on a platform file with a hostfile that fills each host's cores in turn. The core's own
# computation between MPI calls is not simulated (it would be host CPU time scaled by a benchmark of the
# host, i.e. noise of this machine): the times are those of the platform's network and of SMPI's MPI
# implementation. SimGrid's start-up chatter is silenced. MPI_Test and MPI_Iprobe sleep 10 ns of simulated
# time per call (SimGrid's default, 100 us growing with every failed call, would put milliseconds into every
# polling loop of the core). Messages up to 64 KiB go eagerly, without waiting for the receiver
# (smpi/async-small-thresh; SimGrid's default 0 starts every transfer only when the receive is posted, so a
# train of small messages costs one latency each and MPI_Iprobe sees a message as soon as it is sent:
# LogP's g and o_r would be L).
CFG = ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/test:1e-8", "--cfg=smpi/iprobe:1e-8",
       "--cfg=smpi/grow-injected-times:no", "--cfg=smpi/async-small-thresh:65536")
LOG = ("--log=root.thres:warning", "--log=smpi_config.thres:error")
TEMPLATE = "{mpiexec} -platform {platform} -hostfile {hostfile} -np {np} " + " ".join(CFG + LOG) + " {cmd}"
# A configuration's own SMPI settings (e.g. the collective algorithms of a tune or imbalance variant:
# smpi/coll-selector:mpich, smpi/allreduce:rdb): whitespace-separated KEY:VALUE items in CFG_ENV of the
# configuration's environment, passed to smpirun as --cfg=KEY:VALUE before the program.
_CFG_ITEM = re.compile(r"^smpi/[a-z0-9_-]+:[A-Za-z0-9_.+-]+$")

_ONE_HOST_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- written by mpitempo: one host, for the SMPI core's option checks (--list, --check-args) -->
<platform version="4.1"><zone id="mpitempo-check" routing="Full"><host id="check" speed="1Gf"/></zone></platform>
"""


def smpi_cfg_items(env: dict | None) -> list[str]:
    """The --cfg=... arguments of a configuration's MPITEMPO_SMPI_CFG; MtError names a malformed item."""
    out = []
    for item in str((env or {}).get(CFG_ENV, "")).split():
        if not _CFG_ITEM.match(item):
            raise MtError(f"invalid {CFG_ENV} item '{item}': expected smpi/KEY:VALUE (e.g. smpi/allreduce:rdb)")
        out.append("--cfg=" + item)
    return out


def smpi_env(selector: str, op: str | None = None, name: str | None = None) -> dict[str, str]:
    """The configuration environment that runs SMPI with a selector, and with one op's algorithm forced
    (runner/launch.py turns MPITEMPO_SMPI_CFG into smpirun --cfg= arguments)."""
    if selector not in SELECTORS:
        raise MtError(f"invalid SMPI selector '{selector}' (allowed: {', '.join(SELECTORS)})")
    items = [f"smpi/coll-selector:{selector}"]
    if op is not None:
        items.append(f"smpi/{OP_KEYS[op]}:{name}")
    return {CFG_ENV: " ".join(items)}


def with_selector(env: dict[str, str], selector: str) -> dict[str, str]:
    """``env`` with the selector's item before the configuration's own (smpirun: the last --cfg wins)."""
    sel = smpi_env(selector)[CFG_ENV]
    return dict(env, **{CFG_ENV: (sel + " " + env.get(CFG_ENV, "")).strip()})


def parse_smpi_algorithms(text: str) -> list[str]:
    """Algorithm names of SMPI's "Collective 'OP' has no algorithm 'help'! Valid algorithms: a, b, c." line."""
    m = re.search(r"Valid algorithms:\s*([^\n]*)", text)
    if not m:
        return []
    names = [n.strip().rstrip(".") for n in m.group(1).split(",")]
    return [n for n in names if n and n not in NOT_ALGORITHMS]


def smpi_selection_text(rules, selector: str, header: str = "") -> str:
    """SimGrid/SMPI's collective selection as smpirun arguments. SMPI takes one algorithm per collective
    for a whole run (--cfg=smpi/<op>:<name>) over its selector (--cfg=smpi/coll-selector:mpich|ompi), so
    the file gives, per process count, the arguments of the run, and says where the measured choice
    changes with the message size (a single --cfg cannot follow it: the rules are listed; the argument
    line then takes the algorithm chosen at the most sizes and says which sizes it gives up)."""
    lines = [f"# {ln}" for ln in header.splitlines()]
    lines.append("# SimGrid/SMPI collective selection: smpirun arguments per process count (SIMULATED platform:")
    lines.append("# the choice holds for SimGrid's model of the platform tuned on, not for a real machine)")
    by_np: dict[int, dict[str, list]] = {}
    for r in sorted(rules, key=lambda r: (r.nprocs, r.op, r.msize)):
        by_np.setdefault(r.nprocs, {}).setdefault(r.op, []).append(r)
    for np_ in sorted(by_np):
        args = [f"--cfg=smpi/coll-selector:{selector}"]
        lines.append("")
        lines.append(f"# np = {np_}")
        for op, lst in sorted(by_np[np_].items()):
            for r in lst:
                lines.append(f"#   {op} from {r.msize} B: {r.algorithm or 'default (the ' + selector + ' selector)'}"
                             + ("  (PREDICTED by the model, not measured)" if r.source == "predicted" else ""))
            algs = [r.algorithm for r in lst]
            if len(set(algs)) > 1:
                lines.append(f"#   {op}: the choice changes with the message size; one --cfg holds for every size")
            pick = max(set(algs), key=lambda a: (algs.count(a), a is None))
            if pick is not None:
                args.append(f"--cfg=smpi/{OP_KEYS[op]}:{pick}")
        lines.append(f"np={np_}: " + " ".join(args))
    return "\n".join(lines) + "\n"


class Smpi(MpiLib):
    name = "smpi"
    label = "SimGrid's SMPI"
    simulated = True
    lib_globs = ("libsimgrid.so*",)     # SMPI: the simulator is the MPI
    rules_file = "smpi-coll-selection.txt"
    reads_environment = False
    catalogue_source = "smpirun --cfg=smpi/<op>:help"

    def recognises(self, version_text: str) -> bool:
        return "simgrid" in version_text

    @staticmethod
    def is_smpicc(mpicc: str) -> bool:
        """SimGrid's compiler wrapper (smpicc): its binaries run under smpirun on a simulated platform."""
        return any(Path(p).name.startswith("smpicc") for p in (mpicc, os.path.realpath(mpicc)))

    def launcher_of(self, mpicc: str) -> str | None:
        if not self.is_smpicc(mpicc):
            return None
        for d in (Path(mpicc).parent, Path(os.path.realpath(mpicc)).parent):
            if os.access(d / "smpirun", os.X_OK):
                return str(d / "smpirun")
        raise MtError(f"no smpirun next to '{mpicc}': SimGrid's SMPI is incomplete (install simgrid)")

    def direct_argv(self, build, binary: str) -> list[str]:
        """An SMPI core is a shared object that only smpirun can load: smpirun with one rank on a one-host
        platform written into the cache."""
        plat = cache_root() / "platforms" / "one-host.xml"
        try:
            cached_text(plat, _ONE_HOST_PLATFORM)
        except OSError as e:
            raise MtError(f"cannot write the one-host platform {plat}: {e.strerror}") from None
        return [build.mpiexec, "-platform", str(plat), "-np", "1", "--log=root.thres:critical", binary]

    def check_timer(self, timer: str | None, where: str) -> None:
        if timer == "rdtscp":
            raise MtError(f"timer 'rdtscp'{where} is refused under SimGrid/SMPI: it counts the host CPU's cycles, "
                          "not simulated time (SMPI replaces clock_gettime and gettimeofday only); use 'monotonic'")

    # -- algorithms --------------------------------------------------------------------------------
    def algorithms(self, build, op: str) -> list[str]:
        """SMPI's algorithms of op, asked from smpirun itself (one rank on a one-host platform)."""
        if op not in OP_KEYS:
            raise MtError(f"SMPI has no algorithm selection for '{op}' (allowed: {', '.join(OP_KEYS)})")
        argv = self.direct_argv(build, build.binary())
        argv = argv[:-1] + [f"--cfg=smpi/{OP_KEYS[op]}:help", "--log=root.thres:critical", argv[-1], "--list"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise MtError(f"cannot list SMPI's {op} algorithms with {argv[0]}: {e}") from None
        names = parse_smpi_algorithms(r.stdout + r.stderr)
        if not names:
            raise MtError(f"SMPI ({build.mpiexec}) listed no {op} algorithms (smpirun --cfg=smpi/{op}:help)")
        return names

    def discover(self, build, op: str, np: int, smpi_selector: str) -> list[Variant]:
        return [Variant("default", smpi_env(smpi_selector))] + [Variant(n, smpi_env(smpi_selector, op, n))
                                                                 for n in self.algorithms(build, op)]

    def with_selector(self, variants: list[Variant], smpi_selector: str) -> None:
        for v in variants:   # the variant's own settings after the selector's: they win (smpirun: last --cfg)
            v.env = with_selector(v.env, smpi_selector)

    def catalogue(self, build, ops, np_list, use_tool: bool, smpi_selector: str) -> Catalogue:
        algs = {op: [Algorithm(op, n, None, smpi_env(smpi_selector, op, n)) for n in self.algorithms(build, op)]
                for op in ops}
        return Catalogue(self.catalogue_flavour(smpi_selector), build.mpiexec_version, self.catalogue_source, algs)

    def catalogue_flavour(self, smpi_selector: str) -> str:
        return f"smpi-{smpi_selector}"

    # -- tune: rules files -------------------------------------------------------------------------
    def rules_files(self, rules, header: str, selection_table, smpi_selector: str):
        return self.rules_file, {self.rules_file: smpi_selection_text(rules, smpi_selector, header)}, \
            lambda path: {}

    def settings_note(self, settings: dict) -> str:
        return (f"\nSIMULATED platform (SimGrid/SMPI): SMPI reads no environment; its settings are smpirun "
                f"arguments, per process count in {self.rules_file}")


LIB = Smpi()
