"""The MPI library's own configuration files written from tuning rules (and read back for --verify), and
the settings file ``tuning.env`` (KEY=VALUE lines, ``#`` comments): the environment that makes a job use
the configuration; ``read_settings`` reads it back.

What each library's files hold is in its module (docs/design.md, "The MPI library"): Open MPI's dynamic
rules of coll_tuned (mpilib/openmpi.py), MPICH's JSON collective selection (mpilib/mpich.py,
mpilib/mpich_csel.py), SMPI's smpirun arguments (mpilib/smpi.py). This module writes them, never through
a link, and reads the files a settings file names with the safe reader.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.io.safefs import safe_read_text, safe_write_text

PROVENANCE_FILE = "tune-rules.json"
SETTINGS_FILE = "tuning.env"


@dataclass
class Rule:
    """From message size ``msize`` (mpitempo's bytes per rank) upwards, on ``nprocs`` ranks, use ``algorithm``
    (None: the library's default)."""
    op: str
    nprocs: int
    msize: int
    algorithm: str | None
    alg_id: int | None = None
    source: str = "measured"            # or "predicted": from the model, not from a measurement there
    params: dict | None = None          # MPICH: the algorithm's parameters in the selection file


def settings_text(settings: dict[str, str], header: str = "") -> str:
    lines = [f"# {ln}" for ln in header.splitlines()] if header else []
    lines += [f"{k}={v}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_settings(path: str | Path) -> dict[str, str]:
    """KEY=VALUE lines (``export`` and ``#`` comments allowed) of a settings file."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise MtError(f"--verify '{path}': no such file (give the tuning.env written by mpitempo tune)")
    try:   # a regular file within 1 MiB: a FIFO or device is refused without blocking, never read
        text = safe_read_text(p.resolve(), limit=1 << 20)
    except OSError as e:
        raise MtError(f"--verify '{path}': cannot read it ({e.strerror})") from None
    out: dict[str, str] = {}
    for n, ln in enumerate(text.splitlines(), 1):
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("export "):
            s = s[7:].strip()
        k, eq, v = s.partition("=")
        if not eq or not _KEY.match(k.strip()):
            raise MtError(f"invalid line {n} of '{path}': '{ln.strip()}' (expected KEY=VALUE)")
        out[k.strip()] = v.strip().strip('"').strip("'")
    return out   # empty: the tuning kept the library's default everywhere


def write_config(b, rules, target: Path, selection_table=None, smpi_selector: str | None = None) -> dict:
    """Write the library's tuning files and the settings file into target, never through a link.
    ``selection_table``: the library's own table where its rules file needs it (MPICH:
    ``mpilib.of(b).selection_table(b)``)."""
    lib = mpilib.of(b)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    header = f"written by mpitempo tune, {stamp}, for {b.mpiexec_version or b.flavour}"
    predicted = [r for r in rules if r.source == "predicted"]
    name, files, enable = lib.rules_files(rules, header, selection_table, smpi_selector or "mpich")
    config_file, extra_files = None, {}
    for fname, text in files.items():
        path = target / fname
        safe_write_text(path, text, target)
        if fname == name:
            config_file = str(path.resolve())
        else:
            extra_files["ompi_json" if fname.endswith(".json") else fname] = str(path.resolve())
    settings = enable(config_file) if config_file else {}
    prov = {"written": stamp, "library": b.mpiexec_version or b.flavour, "config_file": config_file,
            "rules": [{"op": r.op, "nprocs": r.nprocs, "from_msize": r.msize, "algorithm": r.algorithm or "default",
                       "source": r.source} for r in rules]}
    if config_file or rules:
        safe_write_text(target / PROVENANCE_FILE, json.dumps(prov, indent=1) + "\n", target)
    sfile = target / SETTINGS_FILE
    note = header + "\nthe environment that makes MPI jobs use the tuned algorithms (KEY=VALUE)"
    if not lib.reads_environment:
        note += lib.settings_note(settings)
    elif not settings:
        note += "\nnothing to set: no algorithm was significantly faster than the library's default"
    for r in predicted:
        note += (f"\nPREDICTED rule (model, not measured at that size): {r.op} np={r.nprocs} from {r.msize} B: "
                 f"{r.algorithm or 'default'}")
    if lib.reads_environment:
        note += lib.settings_note(settings)
    safe_write_text(sfile, settings_text(settings, note), target)
    sfile = sfile.resolve()
    return {"library": b.flavour, "library_version": b.mpiexec_version, "config_file": config_file,
            "settings": settings, "settings_file": str(sfile), "files": extra_files,
            "predicted_rules": len(predicted)}


def check_settings(b, cat, settings: dict[str, str], where: str) -> dict[tuple[str, int], list]:
    """The configuration against the library's own list of algorithms, before anything is launched.
    Returns {(op, nprocs or 0): [(from_size, algorithm name)]} of what it selects."""
    return mpilib.of(b).check_settings(b, cat, settings, where,
                                       lambda path, limit: safe_read_text(path, limit=limit))


def selected(sel, op: str, msize: int, nprocs: int, flavour: str) -> str:
    """The algorithm the checked settings ``sel`` select for op at msize on nprocs ranks."""
    return mpilib.of(flavour).selected(sel, op, msize, nprocs)

