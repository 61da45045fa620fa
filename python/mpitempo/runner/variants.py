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
    return [name for _, name in parse_ompi_info_ids(text, op)]


def discover(build: Build, op: str, np: int, smpi_selector: str = "mpich") -> list[Variant]:
    """The library's own algorithm variants of op, plus its default selection."""
    bindir = Path(build.mpiexec).parent
    if build.flavour == "smpi":
        names = smpi_algorithms(build, op)
        out = [Variant("default", smpi_env(smpi_selector))] + [Variant(n, smpi_env(smpi_selector, op, n))
                                                                for n in names]
    elif build.flavour == "mpich":
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


# Variables that change which collective algorithm the library selects. Set in the user's environment,
# they reach every mpirun, the "default" configuration included: its times are then those of that
# setting, not of the library's own choice.
_SELECTION_VARS = {
    "mpich": re.compile(r"^MPIR_CVAR_(\w+_(INTRA|INTER)_ALGORITHM|\w+_DEVICE_COLLECTIVE|DEVICE_COLLECTIVES"
                        r"|(CH4_|CH4_POSIX_)?COLL_SELECTION_TUNING_JSON_FILE|COLLECTIVE_FALLBACK)$"),
    "openmpi": re.compile(r"^OMPI_MCA_coll(_\w+)?$"),
}


def selection_env(flavour: str, environ=None) -> dict[str, str]:
    """The variables of ``environ`` (the process environment) that change the collective-algorithm
    selection of a library of this flavour."""
    import os

    pat = _SELECTION_VARS.get(flavour)
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if pat and pat.match(k)} if pat else {}


def selection_env_note(flavour: str, environ=None) -> str | None:
    """A note for results that compare against the library's default, when the environment changes it."""
    from mpitempo.safe_text import safe

    sel = selection_env(flavour, environ)
    if not sel:
        return None
    what = ", ".join(f"{k}={v}" for k, v in sel.items())
    return safe(f"your environment sets {what}: every mpirun runs with it, so 'default' is that setting, not the "
                "library's own choice (unset it to compare with the library's default)")


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
            if k in env:    # the last value would win silently
                raise MtError(f"variable {k} is set twice in variant '{name}' of --variants ('{env[k]}' and '{v}')")
            env[k] = v
        if not env and name != "default":   # a bare name runs the default: refuse a misspelt keyword
            import difflib

            close = difflib.get_close_matches(name.lower(), ["auto", "none", "default"], n=1, cutoff=0.5)
            if close:
                where = f"'{spec}'" if spec.strip() == name else f"'{name}' in '{spec}'"
                raise MtError(f"invalid --variants {where}: not a keyword; did you mean '{close[0]}'? (a variant "
                              "name without VAR=VALUE settings would run the library's default)")
        out.append(Variant(name, env))
    if not out:
        raise MtError(f"invalid --variants '{spec}': expected NAME:VAR=VAL[,VAR=VAL][;NAME2:...]")
    return out


# ---------------------------------------------------------------------------------------------------
# Selectable algorithms of the nine tunable collectives (mpitempo tune)
# ---------------------------------------------------------------------------------------------------

TUNABLE_OPS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "reduce_scatter", "gather",
               "scatter")

# The documented fallback table, used when the library's own listing tool (ompi_info, mpivars) is missing
# or lists nothing for an op: the algorithms of Open MPI 5.0 (coll_tuned, ids of its *_algorithm MCA
# parameters) and MPICH 4.x/5.0 (names of MPIR_CVAR_<OP>_INTRA_ALGORITHM). docs/tune.md reproduces it.
FALLBACK_OMPI = {
    "allreduce": ["basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"],
    "alltoall": ["linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"],
    "allgather": ["linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc", "sparbit"],
    "barrier": ["linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"],
    "bcast": ["basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial",
              "scatter_allgather", "scatter_allgather_ring"],
    "reduce": ["linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"],
    "reduce_scatter": ["non-overlapping", "recursive_halving", "ring", "butterfly"],
    "gather": ["basic_linear", "binomial", "linear_sync"],
    "scatter": ["basic_linear", "binomial", "linear_nb"],
}
FALLBACK_MPICH = {
    "barrier": ["nb", "smp", "k_dissemination", "recexch"],
    "bcast": ["binomial", "nb", "smp", "scatter_recursive_doubling_allgather", "scatter_ring_allgather",
              "pipelined_tree", "tree"],
    "reduce": ["binomial", "nb", "smp", "reduce_scatter_gather"],
    "allreduce": ["nb", "smp", "recursive_doubling", "recursive_multiplying", "reduce_scatter_allgather", "tree",
                  "recexch", "ring", "k_reduce_scatter_allgather"],
    "allgather": ["brucks", "k_brucks", "nb", "recursive_doubling", "ring", "recexch_doubling", "recexch_halving"],
    "alltoall": ["brucks", "k_brucks", "nb", "pairwise", "pairwise_sendrecv_replace", "scattered"],
    "reduce_scatter": ["nb", "noncommutative", "pairwise", "recursive_doubling", "recursive_halving"],
    "gather": ["binomial", "nb"],
    "scatter": ["binomial", "nb"],
}
# Listed by the library but not selectable here: MPICH's "ccl" needs Intel oneCCL, which the library
# must have been built with; it is measured only when named with --algorithms.
SKIP_MPICH = {"ccl"}


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


def mpich_cvar(op: str) -> str:
    return f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"


def parse_ompi_info_ids(text: str, op: str) -> list[tuple[int, str]]:
    """(id, name) pairs of coll_tuned_<op>_algorithm: 'Valid values: 0|ignore, 1|basic_linear, ...' (Open
    MPI 5) or 'Valid values: 0:"ignore", 1:"basic_linear", ...' (Open MPI 4)."""
    key = f'"coll_tuned_{op}_algorithm"'
    idx = text.find(key)
    if idx < 0:
        return []
    m = re.search(r"Valid values:\s*([^\n]+)", text[idx:])
    if not m:
        return []
    out = []
    for item in m.group(1).split(","):
        mm = re.fullmatch(r'\s*(\d+)\s*(?:\||:\s*")([A-Za-z0-9_]+)"?\s*', item)
        if mm:
            out.append((int(mm.group(1)), mm.group(2)))
    return out


def ompi_env(op: str, alg_id: int) -> dict[str, str]:
    return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", f"OMPI_MCA_coll_tuned_{op}_algorithm": str(alg_id)}


def mpich_device_cvar(op: str) -> str:
    return f"MPIR_CVAR_{op.upper()}_DEVICE_COLLECTIVE"


def mpich_env(op: str, name: str) -> dict[str, str]:
    # an algorithm that cannot run with these arguments is an error, not a silent fallback to the default;
    # MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0 makes MPI_<Op> reach MPICH's MPIR level, where the algorithm
    # CVAR is read: with the device collectives on (MPICH's default), ch4 runs its own shared-memory
    # algorithm on a single node and the CVAR has no effect (measured with the MPICH 5.0.2 wheel: bcast
    # and allreduce times identical for every forced algorithm)
    return {mpich_cvar(op): name, "MPIR_CVAR_COLLECTIVE_FALLBACK": "error", mpich_device_cvar(op): "0"}


# SimGrid/SMPI (docs/simulation.md): SMPI implements MPI itself, with copies of the collective algorithms
# of MPICH, Open MPI, MVAPICH2 and Intel MPI and their selection logic. smpi/coll-selector:mpich|ompi makes
# SMPI choose every collective's algorithm as that library does (the "default" measured); smpi/<op>:<name>
# forces one algorithm of one collective for the whole run. The list of names comes from SMPI itself: an
# unknown name (help) makes smpirun stop with "Valid algorithms: ...". Selector names in that list
# (default, automatic, mpich, ompi, mvapich2, impi) choose an algorithm rather than being one.
SMPI_SELECTORS = ("mpich", "ompi")
SMPI_NOT_ALGORITHMS = {"default", "automatic", "mpich", "ompi", "mvapich2", "impi"}
SMPI_OP_KEYS = {"barrier": "barrier", "bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
                "allgather": "allgather", "alltoall": "alltoall", "reduce_scatter": "reduce_scatter",
                "gather": "gather", "scatter": "scatter"}


# the environment variable of the smpirun --cfg= items a configuration sets (runner/launch.py turns it into
# smpirun arguments)
SMPI_CFG_ENV = "MPITEMPO_SMPI_CFG"


def smpi_env(selector: str, op: str | None = None, name: str | None = None) -> dict[str, str]:
    """The configuration environment that runs SMPI with a selector, and with one op's algorithm forced
    (runner/launch.py turns MPITEMPO_SMPI_CFG into smpirun --cfg= arguments)."""
    if selector not in SMPI_SELECTORS:
        raise MtError(f"invalid SMPI selector '{selector}' (allowed: {', '.join(SMPI_SELECTORS)})")
    items = [f"smpi/coll-selector:{selector}"]
    if op is not None:
        items.append(f"smpi/{SMPI_OP_KEYS[op]}:{name}")
    return {SMPI_CFG_ENV: " ".join(items)}


def parse_smpi_algorithms(text: str) -> list[str]:
    """Algorithm names of SMPI's "Collective 'OP' has no algorithm 'help'! Valid algorithms: a, b, c." line."""
    import re as _re

    m = _re.search(r"Valid algorithms:\s*([^\n]*)", text)
    if not m:
        return []
    names = [n.strip().rstrip(".") for n in m.group(1).split(",")]
    return [n for n in names if n and n not in SMPI_NOT_ALGORITHMS]


def smpi_algorithms(build: Build, op: str) -> list[str]:
    """SMPI's algorithms of op, asked from smpirun itself (one rank on a one-host platform)."""
    from mpitempo.build import direct_argv

    if op not in SMPI_OP_KEYS:
        raise MtError(f"SMPI has no algorithm selection for '{op}' (allowed: {', '.join(SMPI_OP_KEYS)})")
    argv = direct_argv(build, build.binary())
    argv = argv[:-1] + [f"--cfg=smpi/{SMPI_OP_KEYS[op]}:help", "--log=root.thres:critical", argv[-1], "--list"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MtError(f"cannot list SMPI's {op} algorithms with {argv[0]}: {e}") from None
    names = parse_smpi_algorithms(r.stdout + r.stderr)
    if not names:
        raise MtError(f"SMPI ({build.mpiexec}) listed no {op} algorithms (smpirun --cfg=smpi/{op}:help)")
    return names


def _tool_text(argv: list[str]) -> str | None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def catalogue(build: Build, ops, np_list=(2,), use_tool: bool = True, smpi_selector: str = "mpich") -> Catalogue:
    """The library's selectable algorithms of ``ops`` (discovered from the installed library, else the
    fallback table). Raises MtError for a library without algorithm selection."""
    bindir = Path(build.mpiexec).parent
    ops = list(ops)
    bad = [o for o in ops if o not in TUNABLE_OPS]
    if bad:
        raise MtError(f"unknown op '{bad[0]}' for tune (allowed: {', '.join(TUNABLE_OPS)})")
    algs: dict[str, list[Algorithm]] = {}
    notes: list[str] = []
    if build.flavour == "openmpi":
        text = _tool_text([str(bindir / "ompi_info"), "--param", "coll", "tuned", "--level", "9"]) \
            if use_tool and (bindir / "ompi_info").exists() else None
        if text is not None and "coll_tuned_" not in text:
            raise MtError(f"Open MPI at {bindir} has no coll tuned component (ompi_info lists no coll_tuned "
                          "parameters): it has no algorithm selection to tune")
        source = "ompi_info" if text else "fallback table"
        for op in ops:
            pairs = parse_ompi_info_ids(text, op) if text else []
            if not pairs:
                pairs = list(enumerate(["ignore"] + FALLBACK_OMPI[op]))
                if text:
                    notes.append(f"ompi_info lists no coll_tuned_{op}_algorithm: using the fallback table")
            out = []
            for i, name in pairs:
                if i == 0 or name == "ignore":
                    continue
                if name == "two_proc" and any(n != 2 for n in np_list):
                    continue    # only for two processes
                out.append(Algorithm(op, name, i, ompi_env(op, i)))
            algs[op] = out
    elif build.flavour == "smpi":
        source = "smpirun --cfg=smpi/<op>:help"
        for op in ops:
            algs[op] = [Algorithm(op, n, None, smpi_env(smpi_selector, op, n)) for n in smpi_algorithms(build, op)]
    elif build.flavour == "mpich":
        text = _tool_text([str(bindir / "mpivars")]) if use_tool and (bindir / "mpivars").exists() else None
        source = "mpivars" if text else "fallback table"
        for op in ops:
            names = parse_mpich_mpivars(text, op) if text else []
            if not names:
                names = FALLBACK_MPICH[op]
                if text:
                    notes.append(f"mpivars lists no {mpich_cvar(op)}: using the fallback table")
            algs[op] = [Algorithm(op, n, None, mpich_env(op, n)) for n in names if n != "auto" and n not in SKIP_MPICH]
    else:
        raise MtError(f"the MPI of {build.mpicc} is neither Open MPI nor MPICH ({build.mpiexec_version or 'unknown'}): "
                      "tune knows the algorithm selection of those two only")
    for op in ops:
        if not algs.get(op):
            raise MtError(f"the {build.flavour} library lists no selectable algorithms for {op}")
    flavour = f"smpi-{smpi_selector}" if build.flavour == "smpi" else build.flavour
    return Catalogue(flavour, build.mpiexec_version, source, algs, notes)


def restrict(cat: Catalogue, spec: str | None) -> Catalogue:
    """Keep only the algorithms named in 'OP:NAME[+NAME...][,OP:NAME...]' (other ops keep all)."""
    if spec is None:
        return cat
    items = [x.strip() for x in spec.split(",")]
    if not all(items):     # '' would have meant every algorithm: the largest campaign instead of a smaller one
        why = ("an empty item (two commas in a row, or a comma at an end)" if any(items) else
               "expected OP:NAME[+NAME...][,OP:...]")
        raise MtError(f"invalid --algorithms '{spec}': {why}")
    keep: dict[str, list[str]] = {}
    for part in items:
        op, colon, names = part.partition(":")
        if not colon or not names:
            raise MtError(f"invalid --algorithms item '{part}': expected OP:NAME[+NAME...]")
        if op not in cat.algorithms:
            raise MtError(f"--algorithms names op '{op}', which is not in --ops ({', '.join(cat.algorithms)})")
        for n in names.split("+"):
            if cat.find(op, n) is None:
                allowed = ", ".join(a.name for a in cat.algorithms[op])
                raise MtError(f"the {cat.flavour} library has no {op} algorithm '{n}' (allowed: {allowed})")
            keep.setdefault(op, []).append(n)
    algs = {op: [a for a in lst if op not in keep or a.name in keep[op]] for op, lst in cat.algorithms.items()}
    return Catalogue(cat.flavour, cat.version, cat.source, algs, cat.notes)
