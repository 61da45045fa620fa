"""The MPI library's own configuration files, written from tuning rules (and read back for --verify).

Open MPI: a dynamic rules file of coll_tuned in the classic text format (read by every Open MPI since
1.x; 6.0 also reads JSON), enabled by the MCA parameters ``coll_tuned_use_dynamic_rules=1`` and
``coll_tuned_dynamic_rules_filename=PATH``. Per collective: communicator sizes, and per communicator
size a list of (message size from which the rule holds, algorithm id, fan-in/out, segment size). The
message size a rule is keyed on is the one coll_tuned computes from the call's arguments (below,
:func:`ompi_rule_size`).

MPICH: the control variables ``MPIR_CVAR_<OP>_INTRA_ALGORITHM=<name>`` in the environment. They
select one algorithm per collective for every message size (MPICH's JSON selection files replace
the library's whole table and could not be shown to be honoured on a single node, see docs/tune.md).

Both are described by a settings file ``tuning.env`` (KEY=VALUE lines, ``#`` comments), the environment
that makes a job use the configuration; ``read_settings`` reads it back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mpitempo.errors import MtError

# Collective ids of Open MPI's COLLTYPE enum (ompi/mca/coll/base/coll_base_functions.h, 4.x-6.x), the
# numbers of the classic rules file.
OMPI_COLL_IDS = {"allgather": 0, "allgatherv": 1, "allreduce": 2, "alltoall": 3, "alltoallv": 4, "alltoallw": 5,
                 "barrier": 6, "bcast": 7, "exscan": 8, "gather": 9, "gatherv": 10, "reduce": 11,
                 "reduce_scatter": 12, "reduce_scatter_block": 13, "scan": 14, "scatter": 15, "scatterv": 16}
OMPI_OPS_BY_ID = {v: k for k, v in OMPI_COLL_IDS.items()}
# ops whose rule size is msize x communicator size (mpitempo's msize is the block per rank)
_TIMES_P = {"allgather", "alltoall", "gather", "scatter", "reduce_scatter"}

RULES_FILE = {"openmpi": "ompi-coll-rules.conf", "mpich": None}
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


def ompi_rule_size(op: str, msize: int, nprocs: int) -> int:
    """The message size coll_tuned's dynamic decision computes for mpitempo's op at msize bytes per rank:
    count x type size (bcast, reduce, allreduce), x comm size (allgather, alltoall, gather, scatter;
    reduce_scatter sums the receive counts), 0 for barrier."""
    if op == "barrier":
        return 0
    return msize * nprocs if op in _TIMES_P else msize


def ompi_rules_text(rules: list[Rule], header: str = "") -> str:
    """A classic-format dynamic rules file. Per op and communicator size the rules are sorted by size;
    the first rule starts at message size 0 (required by Open MPI), and a rule for the default is
    written as algorithm 0 (\"use the fixed decision\")."""
    by_op: dict[str, dict[int, list[Rule]]] = {}
    for r in rules:
        if r.op not in OMPI_COLL_IDS:
            raise MtError(f"op '{r.op}' has no Open MPI collective id")
        by_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append(r)
    lines = [f"# {ln}" for ln in header.splitlines()] if header else []
    lines.append(f"{len(by_op)}  # number of collectives")
    for op in sorted(by_op, key=lambda o: OMPI_COLL_IDS[o]):
        sizes = by_op[op]
        lines.append(f"{OMPI_COLL_IDS[op]}  # collective id: {op}")
        # Open MPI uses the rules of the largest listed communicator size <= the actual size, so
        # communicator-size rules are listed in increasing order.
        lines.append(f"{len(sizes)}  # number of communicator sizes")
        for np_ in sorted(sizes):
            rs = sorted(sizes[np_], key=lambda r: r.msize)
            rows = []
            for i, r in enumerate(rs):
                start = 0 if i == 0 else ompi_rule_size(op, r.msize, np_)
                alg = r.alg_id if r.algorithm is not None else 0
                if alg is None:
                    raise MtError(f"rule for {op} has algorithm '{r.algorithm}' without an Open MPI id")
                if rows and rows[-1][1] == alg:
                    continue   # same algorithm as the rule below: one rule covers both
                rows.append((start, alg, r.algorithm or "default"))
            lines.append(f"{np_}  # communicator size")
            lines.append(f"{len(rows)}  # number of message sizes")
            for start, alg, name in rows:
                lines.append(f"{start} {alg} 0 0  # from {start} B: {name}")
    return "\n".join(lines) + "\n"


def parse_ompi_rules(text: str) -> list[tuple[str, int, int, int]]:
    """(op, comm size, from message size, algorithm id) of a classic rules file; MtError when malformed."""
    nums: list[int] = []
    for ln in text.splitlines():
        ln = ln.split("#", 1)[0]
        if ln.strip().startswith("rule-file-version-"):
            ln = ln.replace(ln.strip().split()[0], "")
        for tok in ln.split():
            try:
                nums.append(int(tok))
            except ValueError:
                raise MtError(f"invalid token '{tok}' in the Open MPI rules file (expected integers)") from None
    it = iter(nums)
    out = []
    try:
        for _ in range(next(it)):
            cid = next(it)
            op = OMPI_OPS_BY_ID.get(cid)
            if op is None:
                raise MtError(f"unknown collective id {cid} in the Open MPI rules file (allowed: 0..16)")
            for _ in range(next(it)):
                comsize = next(it)
                for _ in range(next(it)):
                    msz, alg, _fan, _seg = next(it), next(it), next(it), next(it)
                    out.append((op, comsize, msz, alg))
    except StopIteration:
        raise MtError("the Open MPI rules file ends early (counts and rules do not match)") from None
    return out


def mpich_settings(rules: list[Rule]) -> dict[str, str]:
    """MPIR_CVAR_<OP>_INTRA_ALGORITHM per op whose rules name one non-default algorithm; MtError when an op's
    rules change algorithm with the message size (a CVAR holds one algorithm for all sizes)."""
    from mpitempo.runner.variants import mpich_cvar

    out: dict[str, str] = {}
    per_op: dict[str, set] = {}
    for r in rules:
        per_op.setdefault(r.op, set()).add(r.algorithm)
    for op, algs in per_op.items():
        chosen = {a for a in algs if a is not None}
        if len(algs) > 1:
            raise MtError(f"MPICH selects one {op} algorithm for all message sizes, but the rules name "
                          f"{', '.join(sorted(a or 'default' for a in algs))}")
        if chosen:
            out[mpich_cvar(op)] = chosen.pop()
    return out


def settings_text(settings: dict[str, str], header: str = "") -> str:
    lines = [f"# {ln}" for ln in header.splitlines()] if header else []
    lines += [f"{k}={v}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_settings(path: str | Path) -> dict[str, str]:
    """KEY=VALUE lines (``export`` and ``#`` comments allowed) of a settings file."""
    p = Path(path)
    if not p.is_file():
        raise MtError(f"--verify '{path}': no such file (give the tuning.env written by mpitempo tune)")
    out: dict[str, str] = {}
    for n, ln in enumerate(p.read_text(errors="replace").splitlines(), 1):
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


def write_config(b, rules, target: Path) -> dict:
    import time

    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    header = f"written by mpitempo tune, {stamp}, for {b.mpiexec_version or b.flavour}"
    chosen = [r for r in rules if r.algorithm is not None]
    config_file = None
    if b.flavour == "openmpi":
        settings = {}
        if chosen:
            ops_tuned = {r.op for r in chosen}
            path = (target / RULES_FILE["openmpi"]).resolve()
            path.write_text(ompi_rules_text([r for r in rules if r.op in ops_tuned], header))
            config_file = str(path)
            settings = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                        "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path)}
    else:
        settings = mpich_settings(rules)
    sfile = (target / SETTINGS_FILE).resolve()
    note = header + "\nthe environment that makes MPI jobs use the tuned algorithms (KEY=VALUE)"
    if not settings:
        note += "\nnothing to set: no algorithm was significantly faster than the library's default"
    sfile.write_text(settings_text(settings, note))
    return {"library": b.flavour, "library_version": b.mpiexec_version, "config_file": config_file,
            "settings": settings, "settings_file": str(sfile)}


def check_settings(b, cat, settings: dict[str, str], where: str) -> dict[tuple[str, int], list]:
    """The configuration against the library's own list of algorithms, before anything is launched.
    Returns {(op, nprocs or 0): [(from_size, algorithm name)]} of what it selects."""
    from mpitempo.runner.variants import TUNABLE_OPS, mpich_cvar

    sel: dict[tuple[str, int], list] = {}
    if b.flavour == "mpich":
        if any(k.startswith("OMPI_MCA_") for k in settings):
            raise MtError(f"{where} holds Open MPI settings, but the library is MPICH")
        for op in TUNABLE_OPS:
            v = settings.get(mpich_cvar(op))
            if v is None:
                continue
            known = cat.algorithms.get(op)
            if known is not None and v not in [a.name for a in known] + ["auto"]:
                raise MtError(f"{where}: MPICH rejects {mpich_cvar(op)}={v}: not one of its {op} algorithms "
                              f"(allowed: {', '.join(a.name for a in known)})")
            sel[(op, 0)] = [(0, v)]
        return sel
    if any(k.startswith("MPIR_CVAR_") for k in settings):
        raise MtError(f"{where} holds MPICH settings, but the library is Open MPI")
    fname = settings.get("OMPI_MCA_coll_tuned_dynamic_rules_filename")
    if fname is None:
        return sel
    if settings.get("OMPI_MCA_coll_tuned_use_dynamic_rules") not in ("1", "true", "yes"):
        raise MtError(f"{where} names a rules file but does not set OMPI_MCA_coll_tuned_use_dynamic_rules=1: "
                      "Open MPI would ignore the file")
    rp = Path(fname)
    if not rp.is_file():
        raise MtError(f"{where}: the rules file '{fname}' does not exist")
    for op, comsize, msz, alg in parse_ompi_rules(rp.read_text(errors="replace")):
        if alg == 0:
            sel.setdefault((op, comsize), []).append((msz, "default"))
            continue
        known = cat.algorithms.get(op)
        if known is None:
            continue     # an op that is not being verified
        ids = {a.id: a.name for a in known}
        if alg not in ids:
            raise MtError(f"{where}: Open MPI rejects algorithm id {alg} for {op} in {fname} "
                          f"(allowed: {', '.join(f'{i}={n}' for i, n in sorted(ids.items()))})")
        sel.setdefault((op, comsize), []).append((msz, ids[alg]))
    return sel


def selected(sel, op: str, msize: int, nprocs: int, flavour: str) -> str:
    if flavour == "mpich":
        rules = sel.get((op, 0))
        return rules[0][1] if rules else "default"
    cands = [c for (o, c) in sel if o == op and c <= nprocs]
    if not cands:
        return "default"
    name = "default"
    for start, alg in sorted(sel[(op, max(cands))]):
        if ompi_rule_size(op, msize, nprocs) >= start:
            name = alg
    return name
