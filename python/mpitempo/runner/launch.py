"""Turn (np, command) into the argv and environment of one MPI job.

A launcher is a template with the placeholders {np} and {cmd} (and {mpiexec},
the launcher of the MPI the core was built with). The default template knows
the library it drives (mpilib): it binds ranks to cores when there are enough cores,
and otherwise oversubscribes with the settings that keep idle ranks from
spinning (those runs are for correctness, not timing).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass, field

from mpitempo import mpilib
from mpitempo.build import Build, list_registry
from mpitempo.errors import MtError
from mpitempo.mpilib.smpi import CFG_ENV as SMPI_CFG_ENV  # noqa: F401 (the variable a configuration sets)
from mpitempo.mpilib.smpi import TEMPLATE as SMPI_TEMPLATE
from mpitempo.mpilib.smpi import smpi_cfg_items


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]            # variables added to the environment
    template: str
    binding: str                   # what was asked for: "core", "none" or "custom"
    oversubscribed: bool
    notes: list[str] = field(default_factory=list)
    simulation: dict | None = None  # a simulated platform (SimGrid/SMPI): what docs/simulation.md lists

    def to_json(self) -> dict:
        d = {"argv": self.argv, "env_added": self.env, "template": self.template,
             "binding_requested": self.binding, "oversubscribed": self.oversubscribed, "notes": self.notes}
        if self.simulation is not None:
            d["simulation"] = self.simulation
        return d


def ncores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def default_template(build: Build, np: int, binding: str = "core") -> tuple[str, str, bool]:
    """(template, binding, oversubscribed) for this MPI library on this machine; binding "none"
    asks for unbound ranks (pinning as a factor)."""
    return mpilib.of(build).default_template(np, np > ncores(), binding)


def flavour_env(build: Build, oversubscribed: bool) -> dict[str, str]:
    """The environment every job of this MPI library gets (mpilib: yielding when oversubscribed, ...)."""
    return mpilib.of(build).launch_env(build, oversubscribed)


def simulation_record(build: Build, plat, template: str) -> dict:
    """meta.json's launch.launcher.simulation: the platform (path, digest, size), SimGrid's version,
    the network model and the SMPI settings the template passes."""
    from mpitempo.io.platform import simgrid_version

    m = re.search(r"SimGrid version ([0-9][0-9.]*)", build.mpiexec_version or "")
    cfg = [t for t in shlex.split(template) if t.startswith("--cfg=")]
    model = next((t.split(":", 1)[1] for t in cfg if t.startswith("--cfg=network/model:")), plat.network_model)
    return {"simulated": True, "simulator": "SimGrid/SMPI",
            "simgrid_version": m.group(1) if m else simgrid_version(build.mpiexec), **plat.to_json(),
            "network_model": model, "cfg": cfg}


# Launcher names that expand to a template for this MPI library.
NAMED = ("mpiexec", "srun")


def srun_template(build: Build, np: int) -> str:
    """srun with the PMI plugin the library needs (mpilib: MPICH pmi2, Open MPI pmix);
    the wrong plugin gives N singletons, which the core detects (--expect-np)."""
    pmi = mpilib.of(build).srun_pmi
    over = " --overcommit" if np > ncores() else ""
    return "srun -n {np} --mpi=" + pmi + over + " {cmd}"


def argv_is_srun(template: str | None) -> bool:
    try:
        words = shlex.split(template) if template else []
    except ValueError:   # an unbalanced quote: the split of the whole command names it in one line
        return False
    return bool(words) and words[0].endswith("srun")


_SAID: set[str] = set()


def _said(notes: list[str], text: str) -> None:
    """A note of the launch (recorded in launch.json), also printed on stderr once per process."""
    import sys

    from mpitempo.safe_text import safe

    notes.append(text)
    if text not in _SAID:
        _SAID.add(text)
        print(f"mpitempo: note: {safe(text)}", file=sys.stderr)


def make_launch(build: Build, np: int, cmd: list[str], template: str | None = None,
                extra_env: dict[str, str] | None = None, binding: str = "core",
                platform: str | None = None, platform_oversubscribe: bool = False,
                platform_ppn: int | None = None) -> Launch:
    if np < 1:
        raise MtError(f"invalid number of ranks {np}: must be >= 1")
    notes = []
    plat = None
    lib = mpilib.of(build)
    if lib.simulated or platform:
        from mpitempo.io.platform import check_np, hostfile, read_platform

        if not lib.simulated:
            raise MtError(f"--platform needs a core built with SimGrid's smpicc (--mpicc smpicc); this core is "
                          f"built with {build.mpicc or build.bindir} ({build.flavour})")
        if not platform:
            raise MtError("this core is built with SimGrid's smpicc: it runs on a simulated platform only; "
                          "give --platform FILE.xml (e.g. platforms/cluster64-fast.xml)")
        plat = read_platform(platform)
        check_np(plat, np, platform_oversubscribe, platform_ppn)
        if template in (None, "mpiexec"):
            template = SMPI_TEMPLATE
        elif template == "srun":
            raise MtError("--launcher srun cannot start a simulated platform: smpirun runs every rank in one process")
        elif "{platform}" not in template:
            raise MtError(f"invalid --launcher '{template}' for a simulated platform: it must contain {{platform}} "
                          "(and usually {hostfile}), e.g. \"smpirun -platform {platform} -hostfile {hostfile} "
                          "-np {np} {cmd}\"")
        if "{cmd}" not in template:
            raise MtError(f"invalid --launcher '{template}': it must contain the placeholder {{cmd}}")
        notes.append(f"simulated platform {plat.path} ({plat.nhosts} hosts, {plat.ncores} cores): "
                     "times are SimGrid's model, not a measurement of hardware")
        own = smpi_cfg_items(extra_env)
        if own and "{cmd}" in template:
            template = template.replace("{cmd}", " ".join(own) + " {cmd}", 1)
        try:
            text = (template.replace("{mpiexec}", shlex.quote(build.mpiexec)).replace("{np}", str(np))
                    .replace("{platform}", shlex.quote(plat.path))
                    .replace("{hostfile}", shlex.quote(str(hostfile(plat, platform_ppn))))
                    .replace("{cmd}", " ".join(shlex.quote(c) for c in cmd)))
            argv = shlex.split(text)
        except ValueError as e:
            raise MtError(f"invalid --launcher '{template}': {e}") from None
        if shutil.which(argv[0]) is None and not os.access(argv[0], os.X_OK):
            raise MtError(f"launcher '{argv[0]}' not found (from template '{template}')")
        return Launch(argv=argv, env=dict(extra_env or {}), template=template, binding="simulated",
                      oversubscribed=False, notes=notes,
                      simulation=dict(simulation_record(build, plat, template), ranks_per_host=platform_ppn))
    if template == "mpiexec":
        template = None
    elif template == "srun":
        template = srun_template(build, np)
        notes.append("srun launcher: binding is whatever the Slurm task plugin applies (recorded per rank)")
    if template:
        if "{cmd}" not in template:
            raise MtError(f"invalid --launcher '{template}': it must contain the placeholder {{cmd}} "
                          f"(or be one of: {', '.join(NAMED)})")
        if binding != "core":
            notes.append(f"binding '{binding}' applies to the default launcher only; this template binds as it says")
        binding, over = "custom", np > ncores()
    else:
        template, binding, over = default_template(build, np, binding)
        if over:
            notes.append(f"{np} ranks on {ncores()} cores: oversubscribed, unbound; timings are not meaningful")
    env = flavour_env(build, over)
    if argv_is_srun(template):
        for k, v in lib.srun_env().items():
            env.setdefault(k, v)
    # mpitempo's own settings give way to what the user set explicitly; a configuration's env (the
    # campaign's, or a variant's algorithm) must apply, and says so when it replaces the user's value
    for k in sorted(env):
        if k in os.environ and os.environ[k] != env[k]:
            _said(notes, f"{k}={os.environ[k]} of your environment kept (mpitempo's default here would be "
                         f"{env.pop(k)})")
    # an algorithm the configuration (or the user's environment) selects gets every setting the library
    # needs for it to take effect, and the library's check that it did (mpilib: MpiLib.complete)
    done = lib.complete(extra_env or {}, os.environ)
    for k, v in done.added.items():
        env.setdefault(k, v)
    for text in done.notes:
        _said(notes, text)
    if extra_env:
        for k in sorted(extra_env):
            if k in os.environ and os.environ[k] != str(extra_env[k]):
                _said(notes, f"{k}={os.environ[k]} of your environment replaced by the configuration's "
                             f"{k}={extra_env[k]} in its mpiruns")
        env.update(extra_env)
    try:
        text = template.replace("{mpiexec}", shlex.quote(build.mpiexec)).replace("{np}", str(np))
        text = text.replace("{cmd}", " ".join(shlex.quote(c) for c in cmd))
        argv = shlex.split(text)
    except ValueError as e:
        raise MtError(f"invalid --launcher '{template}': {e}") from None
    if not argv:
        raise MtError(f"invalid --launcher '{template}': empty command")
    if shutil.which(argv[0]) is None and not os.access(argv[0], os.X_OK):
        raise MtError(f"launcher '{argv[0]}' not found (from template '{template}')")
    return Launch(argv=argv, env=env, template=template, binding=binding, oversubscribed=over, notes=notes)


def _calls(build: Build, ops) -> set[str] | None:
    """The MPI collectives ("allreduce", "iallreduce", ...) the core's ops call, from its registry; None
    when an op is not one the registry names by an MPI function."""
    reg = {o["name"]: o for o in list_registry(build)["ops"]}
    out = set()
    for op in ops or []:
        o = reg.get(op) or reg.get(str(op).rpartition(":")[0])
        mpi = str((o or {}).get("mpi_name", ""))
        if not re.fullmatch(r"MPI_[A-Z][a-z_]*", mpi):
            return None
        out.add(mpi[4:].lower())
    return out


def check_selections(c, builds: dict[str, Build]) -> None:
    """Before anything is created: every algorithm a configuration selects is one its library lists and
    nothing of the configuration keeps it from taking effect (mpilib: ``complete``, ``check_names``); and
    no two configurations that differ only in their algorithm selection run the same algorithms of what
    they measure (a comparison of them would report one algorithm as two)."""
    sigs = []
    for cfg in c.configs:
        b = builds[cfg.name]
        lib = mpilib.of(b)
        where = f" (config '{cfg.name}')" if len(c.configs) > 1 else ""
        try:
            done = lib.complete(cfg.env, os.environ)
        except MtError as e:
            raise MtError(f"{e}{where}") from None
        lib.check_names(b, done.selects, where)
        if lib.selection_pattern is None or len(c.configs) < 2:
            continue
        calls = _calls(b, c.params_for(cfg).get("ops"))
        if calls is None:
            continue
        # variables that select algorithms of any library: another library's are not read by this one
        other = {k: v for k, v in cfg.env.items() if not any(x.selection_pattern and x.selection_pattern.match(k)
                                                             for x in mpilib.LIBRARIES)}
        key = (b.fingerprint, repr(sorted(c.params_for(cfg).items())), cfg.launcher, cfg.binding, cfg.cflags,
               repr(sorted(other.items())))
        sigs.append((cfg, key, lib.signature(cfg.env, os.environ, calls), calls, lib.label))
    for i, (a, ka, sa, calls, label) in enumerate(sigs):
        for b, kb, sb, _, _ in sigs[i + 1:]:
            if ka == kb and sa == sb and a.env != b.env:
                diff = sorted(k for k in set(a.env) | set(b.env) if a.env.get(k) != b.env.get(k))
                raise MtError(f"configurations '{a.name}' and '{b.name}' differ only in {', '.join(diff)}, which "
                              f"select{'s' if len(diff) == 1 else ''} no {label} algorithm of what they measure "
                              f"({', '.join(sorted(calls))}): both would run the library's same algorithm and "
                              "their comparison would report it as two; select an algorithm of a measured "
                              "collective, or measure the one selected")
