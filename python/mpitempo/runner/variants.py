"""Algorithm variants of an MPI library's collectives, discovered from the library.

MPICH lists its algorithms as control variables (`mpivars`: MPIR_CVAR_<OP>_INTRA_ALGORITHM
with one "name - description" line each); Open MPI's tuned component lists them as MCA
parameters (`ompi_info --param coll tuned --level 9`: coll_tuned_<op>_algorithm with
"Valid values: 0|ignore, 1|linear, ..."). A variant is a name plus the environment that
selects it.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.build import Build
from mpitempo.errors import MtError


@dataclass
class Variant:
    name: str
    env: dict[str, str] = field(default_factory=dict)


def parse_mpich_mpivars(text: str, op: str) -> list[str]:
    """Algorithm names of MPIR_CVAR_<OP>_INTRA_ALGORITHM in `mpivars` output."""
    key = f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith(key + "=") or ln.strip().startswith(key + " "):
            names = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("\t") or nxt.strip().startswith("MPIR_CVAR"):
                    break
                m = re.match(r"^\s*([A-Za-z0-9_]+)\s+-\s", nxt)
                if m:
                    names.append(m.group(1))
            return names
    return []


def parse_ompi_info(text: str, op: str) -> list[str]:
    """Algorithm names of coll_tuned_<op>_algorithm in `ompi_info --param coll tuned --level 9`."""
    key = f'"coll_tuned_{op}_algorithm"'
    idx = text.find(key)
    if idx < 0:
        return []
    m = re.search(r"Valid values:\s*([^\n]+)", text[idx:])
    if not m:
        return []
    names = []
    for item in m.group(1).split(","):
        item = item.strip()
        if "|" in item:
            names.append(item.split("|", 1)[1].strip())
    return names


def discover(build: Build, op: str, np: int) -> list[Variant]:
    """The library's own algorithm variants of op, plus its default selection."""
    bindir = Path(build.mpiexec).parent
    if build.flavour == "mpich":
        tool = bindir / "mpivars"
        if not tool.exists():
            raise MtError(f"cannot list MPICH's {op} algorithms: no mpivars next to {build.mpiexec}; "
                          "give --variants explicitly")
        text = subprocess.run([str(tool)], capture_output=True, text=True, timeout=60).stdout
        names = [n for n in parse_mpich_mpivars(text, op) if n != "auto"]
        var = f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"
        out = [Variant("default")] + [Variant(n, {var: n}) for n in names]
    elif build.flavour == "openmpi":
        tool = bindir / "ompi_info"
        if not tool.exists():
            raise MtError(f"cannot list Open MPI's {op} algorithms: no ompi_info next to {build.mpiexec}; "
                          "give --variants explicitly")
        text = subprocess.run([str(tool), "--param", "coll", "tuned", "--level", "9"], capture_output=True,
                              text=True, timeout=60).stdout
        names = [n for n in parse_ompi_info(text, op) if n != "ignore"]
        if np != 2:
            names = [n for n in names if n != "two_proc"]
        out = [Variant("default")] + [
            Variant(n, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", f"OMPI_MCA_coll_tuned_{op}_algorithm": n})
            for n in names]
    else:
        raise MtError(f"cannot discover algorithm variants of an MPI of unknown flavour; give --variants explicitly")
    if len(out) == 1:
        raise MtError(f"the MPI library lists no algorithms for {op}; give --variants explicitly")
    return out


def parse_variants(spec: str) -> list[Variant]:
    """'NAME:VAR=VAL,VAR=VAL;NAME2:VAR=VAL' (a NAME without ':' runs with no extra environment)."""
    out, seen = [], set()
    for part in spec.split(";"):
        part = part.strip()
        if not part:
            continue
        name, _, rest = part.partition(":")
        name = name.strip()
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", name):
            raise MtError(f"invalid variant name '{name}' in --variants '{spec}': use letters, digits, _ . + -")
        if name in seen:
            raise MtError(f"variant '{name}' is given twice in --variants")
        seen.add(name)
        env = {}
        for kv in filter(None, (x.strip() for x in rest.split(","))):
            k, eq, v = kv.partition("=")
            if not eq or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
                raise MtError(f"invalid setting '{kv}' of variant '{name}': expected VAR=VALUE")
            env[k] = v
        if not env and name != "default":   # a bare name runs the default: refuse a misspelt keyword
            import difflib

            close = difflib.get_close_matches(name.lower(), ["auto", "none", "default"], n=1, cutoff=0.5)
            if close:
                raise MtError(f"invalid --variants '{spec}': '{name}' is not a keyword; did you mean '{close[0]}'? "
                              f"(a variant '{name}' without VAR=VALUE settings would run the library's default)")
        out.append(Variant(name, env))
    if not out:
        raise MtError(f"invalid --variants '{spec}': expected NAME:VAR=VAL[,VAR=VAL][;NAME2:...]")
    return out
