"""The contract of an MPI library (docs/design.md, "The MPI library"): what mpitempo must know of one
MPI implementation, kept in one module per library (mpilib/openmpi.py, mpich.py, smpi.py). Code outside
mpilib/ asks the library object (``mpilib.of(build)``) and never tests a library's name.

The base class is also the library of unknown flavour: a plain ``mpiexec -n N``, no algorithm
selection, no rules files.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.errors import MtError

# the nine collectives whose algorithm the libraries let a user select (mpitempo tune)
TUNABLE_OPS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "reduce_scatter", "gather",
               "scatter")


def cache_root() -> Path:
    """mpitempo's cache: $MPITEMPO_CACHE, else $XDG_CACHE_HOME/mpitempo or ~/.cache/mpitempo."""
    env = os.environ.get("MPITEMPO_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mpitempo"


def cached_text(path: Path, text: str) -> Path:
    """``path`` in the cache holding ``text``: kept when it already does, else written atomically
    (a temporary file renamed into place, so that concurrent writers never see half a file)."""
    if path.is_file() and path.read_text() == text:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


@dataclass
class Variant:
    name: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Algorithm:
    op: str
    name: str
    id: int | None          # Open MPI: the value of coll_tuned_<op>_algorithm; MPICH: None (selected by name)
    env: dict[str, str] = field(default_factory=dict)   # the forced selection, for measuring it

    @property
    def config(self) -> str:
        """Configuration name in the campaign."""
        return f"{self.op}.{self.name}"


@dataclass
class Catalogue:
    """The selectable algorithms of one library: op -> algorithms, and where the list came from."""
    flavour: str
    version: str
    source: str                                     # "ompi_info", "mpivars" or "fallback table"
    algorithms: dict[str, list[Algorithm]]
    notes: list[str] = field(default_factory=list)

    def find(self, op: str, name: str) -> Algorithm | None:
        return next((a for a in self.algorithms.get(op, []) if a.name == name), None)


@dataclass
class Completion:
    """What a configuration's environment needs added for the algorithms it selects to take effect
    (``MpiLib.complete``): the settings added, why, and what it selects ({op: algorithm})."""
    added: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    selects: dict[str, str] = field(default_factory=dict)


class MpiLib:
    """An MPI library of unknown flavour; each library's module overrides what it knows."""
    name = "unknown"
    label = "an MPI library of unknown flavour"
    simulated = False            # SimGrid/SMPI: ranks run on a simulated platform, times are a model's
    lib_globs: tuple[str, ...] = ()   # its library files under the wrapper's -L directories (the fingerprint)
    srun_pmi = "pmi2"            # the srun --mpi plugin it needs
    selection_pattern: re.Pattern | None = None   # variables that change its collective-algorithm selection
    catalogue_source = ""

    # -- detection --------------------------------------------------------------------------------
    def recognises(self, version_text: str) -> bool:
        """True when `mpiexec --version` (lower case) is this library's."""
        return False

    def launcher_of(self, mpicc: str) -> str | None:
        """The launcher of a compiler wrapper that is this library's own kind (SMPI: smpirun), or None."""
        return None

    # -- launch -----------------------------------------------------------------------------------
    def default_template(self, np: int, over: bool, binding: str) -> tuple[str, str, bool]:
        """(template, binding, oversubscribed) of the default launcher."""
        return "{mpiexec} -n {np} {cmd}", "none", over

    def launch_env(self, build, oversubscribed: bool) -> dict[str, str]:
        """Environment every job of this library gets (yielding when oversubscribed, ...)."""
        return {}

    def srun_env(self) -> dict[str, str]:
        return {}

    def direct_argv(self, build, binary: str) -> list[str]:
        """The command that runs a core binary on its own (--list, --check-args, no MPI job)."""
        return [binary]

    def check_timer(self, timer: str | None, where: str) -> None:
        """MtError for a timer this library's ranks cannot use."""

    # -- algorithm selection ----------------------------------------------------------------------
    def selection_env(self, environ=None) -> dict[str, str]:
        """The variables of ``environ`` (the process environment) that change the collective-algorithm
        selection of this library."""
        env = os.environ if environ is None else environ
        pat = self.selection_pattern
        return {k: env[k] for k in sorted(env) if pat.match(k)} if pat else {}

    def discover(self, build, op: str, np: int, smpi_selector: str) -> list[Variant]:
        raise MtError("cannot discover algorithm variants of an MPI of unknown flavour; give --variants explicitly")

    def catalogue(self, build, ops: list[str], np_list, use_tool: bool, smpi_selector: str) -> Catalogue:
        raise MtError(f"the MPI of {build.mpicc} is neither Open MPI nor MPICH ({build.mpiexec_version or 'unknown'}): "
                      "tune knows the algorithm selection of those two only")

    def catalogue_flavour(self, smpi_selector: str) -> str:
        return self.name

    def complete(self, env: dict[str, str], user_env=None) -> Completion:
        """The settings a configuration's environment ``env`` (over the user's ``user_env``) needs for
        the algorithms it selects to take effect, and the check that they did; MtError when a setting
        of its own keeps the selection from taking effect."""
        return Completion()

    def op_of_var(self, name: str) -> str | None:
        """The collective a selection variable applies to (its lower-case name, e.g. "allreduce"), or None
        when it applies to every collective."""
        return None

    def neutral(self, name: str, value: str) -> bool:
        """True when the variable at this value leaves the library's own choice (e.g. "auto")."""
        return False

    def signature(self, env: dict[str, str], user_env, calls: set[str]) -> dict[str, str]:
        """What decides the algorithms of the collectives ``calls`` under ``env`` (after ``complete``): the
        selection variables that apply to one of them or to all, without those at a neutral value. Two
        configurations of one library with the same signature run the same algorithms of those calls."""
        pat = self.selection_pattern
        if pat is None:
            return {}
        eff = {**self.selection_env(user_env), **{k: str(v) for k, v in env.items() if pat.match(k)}}
        eff.update(self.complete(env, user_env).added)
        return {k: v for k, v in sorted(eff.items())
                if (self.op_of_var(k) is None or self.op_of_var(k) in calls) and not self.neutral(k, v)}

    def check_names(self, build, selects: dict[str, str], where: str) -> None:
        """MtError when a selected algorithm is not one the library lists (before anything is launched)."""

    def _check_listed(self, build, selects: dict[str, str], where: str, tool_source: str, var) -> None:
        ops = [op for op in selects if op in TUNABLE_OPS]
        if not ops:
            return
        cat = self.catalogue(build, ops, (2,), True, "mpich")
        if cat.source != tool_source:
            return   # the library's own list is not at hand: it checks the name itself
        for op in ops:
            algs = cat.algorithms.get(op, [])
            allowed = [a.name for a in algs] + [str(a.id) for a in algs if a.id is not None]
            if selects[op] not in allowed:
                raise MtError(f"invalid {var(op)}={selects[op]}{where}: not one of the {self.label} {op} algorithms "
                              f"{tool_source} lists (allowed: {', '.join(a.name for a in algs)})")

    # -- tune: rules files ------------------------------------------------------------------------
    rules_file: str | None = None
    rules_file_var: str | None = None  # the setting that names the rules file to the library
    reads_environment = True           # SMPI reads no environment: its settings are smpirun arguments

    def selection_table(self, build):
        """The library's own selection table, when writing a rules file needs it (MPICH), else None."""
        return None

    def rules_files(self, rules, header: str, selection_table, smpi_selector: str):
        """(config file name or None, {file name: text} to write, the settings that enable them given the
        config file's absolute path as a function)."""
        raise MtError(f"{self.label} has no rules file format known to mpitempo tune")

    def settings_note(self, settings: dict) -> str:
        """What the settings file says about how the library reads its settings."""
        return ""

    def table_choice(self, selection_table):
        """(op, msize, nprocs) -> the algorithm the library's own table chooses, or None when not known."""
        return None

    def mpir_level(self) -> bool:
        """True when a tuned op leaves the library's default behind at every size (MPICH's MPIR level)."""
        return False

    def check_settings(self, build, cat: Catalogue, settings: dict[str, str], where: str, read_limited) -> dict:
        """The settings of a tuning.env against the library's own list of algorithms, before anything is
        launched: {(op, nprocs or 0): [(from_size, algorithm name)]} of what they select. read_limited(path,
        limit) reads a file the settings name (the caller's safe reader)."""
        return {}

    def selected(self, sel: dict, op: str, msize: int, nprocs: int) -> str:
        return "default"

    # -- failures ---------------------------------------------------------------------------------
    def known_bug(self, output: str, argv: list[str]) -> str | None:
        """A known bug of this library that a failed mpirun's output shows, or None."""
        return None


def argv_value(argv: list[str], opt: str) -> str | None:
    for i, a in enumerate(argv[:-1]):
        if a == opt:
            return argv[i + 1]
    return None


def tool_text(argv: list[str]) -> str | None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None
