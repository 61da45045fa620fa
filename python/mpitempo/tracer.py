"""The tracer's pieces that the trace kind, the summary and `mpitempo trace` share: the call table,
the checks of its options, where the library is and the LD_PRELOAD shim (the across-run summary:
present.trace.show_campaign)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from mpitempo.errors import MtError

LIBNAME = "libmpitempo-trace.so"
GROUPS = ("default", "all", "collectives", "p2p", "comm")


def call_table(root: Path | None = None) -> list[tuple[str, str, str]]:
    """(id, MPI name, group) of every call the tracer can intercept (src/trace/trace_calls.def)."""
    from mpitempo.build import source_root

    p = (root or source_root()) / "src" / "trace" / "trace_calls.def"
    rows = re.findall(r'^TR_CALL\((\w+), "(MPI_\w+)", TR_G_(\w+), TR_K_\w+, \w+\)', p.read_text(), re.M)
    return [(i, n, g.lower()) for i, n, g in rows]


def check_calls(text: str, table: list[tuple[str, str, str]]) -> str:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise MtError(f"invalid --calls '{text}': expected a comma-separated list of MPI calls")
    ids = [i for i, _, _ in table]
    for it in items:
        name = it[4:] if it.lower().startswith("mpi_") else it
        if name.lower() not in ids and name.lower() not in GROUPS:
            raise MtError(f"unknown MPI call '{it}' in --calls (allowed: {', '.join(GROUPS)}, {', '.join(ids)})")
    return ",".join(items)


def find_library(build) -> str:
    b = Path(build.bindir)
    for cand in (b / LIBNAME, b.parent / "lib" / LIBNAME, b.parent / "lib64" / LIBNAME):
        if cand.is_file():
            return str(cand)
    raise MtError(f"{LIBNAME} is missing from the core in {build.bindir}; run 'mpitempo build --force' "
                  "(or build with -DMPITEMPO_TRACE=ON)")


def find_app(app: str) -> str:
    if "/" in app:
        if not (os.path.isfile(app) and os.access(app, os.X_OK)):
            raise MtError(f"application '{app}' not found or not executable")
        return os.path.abspath(app)
    found = shutil.which(app)
    if not found:
        raise MtError(f"application '{app}' not found on PATH")
    return found


def check_sync(build, spec: str) -> None:
    from mpitempo.kinds.clocks import check_args

    if "," in spec and re.search(r",[a-z0-9]+(,|$)", spec) and "=" not in spec.split(",")[-1]:
        raise MtError(f"invalid --sync '{spec}': one clock-sync spec, not a list")
    try:
        check_args(build.binary("mpitempo-bench"), ["--sync", spec])
    except MtError as e:
        raise MtError(f"{e}") from None


# The tracer on SimGrid/SMPI: refused, not run (it would give a silent wrong result or none).


SMPI_REFUSAL = ("mpitempo trace cannot run on a simulated platform (SimGrid/SMPI): the tracer is a PMPI library "
                "preloaded into every rank's process (LD_PRELOAD) with per-process state, while smpirun runs all "
                "ranks as threads of one process and resolves MPI in SimGrid's own library, so the tracer would "
                "see no rank's calls or mix them all; use SimGrid's tracing instead (smpirun -trace)")


# Runs as the last thing before the application, after any wrapper of the launcher: the tracer is put
# in front of the LD_PRELOAD the rank has at that point (what the user's environment and a rank
# wrapper preloaded stays preloaded, after the tracer), and not twice.


_SHIM = ('case ":${LD_PRELOAD}:" in *":$0:"*) ;; *) LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}";; esac; '
         'export LD_PRELOAD; exec "$@"')


def preload_shim(lib: str) -> list[str]:
    """The argv prefix that runs a command with ``lib`` prepended to the LD_PRELOAD it inherits."""
    return ["/bin/sh", "-c", _SHIM, lib]
