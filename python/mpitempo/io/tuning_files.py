"""The MPI library's own configuration files, written from tuning rules (and read back for --verify).

Open MPI: a dynamic rules file of coll_tuned in the classic text format (read by every Open MPI since
1.x; 6.0 also reads JSON), enabled by the MCA parameters ``coll_tuned_use_dynamic_rules=1`` and
``coll_tuned_dynamic_rules_filename=PATH``. Per collective: communicator sizes, and per communicator
size a list of (message size from which the rule holds, algorithm id, fan-in/out, segment size). The
message size a rule is keyed on is the one coll_tuned computes from the call's arguments (below,
:func:`ompi_rule_size`).

Open MPI 6.0 also reads rules in JSON (``ompi_rules_json``, written beside the classic file from the
format's specification; the Open MPI 5.0 this is tested with reads only the classic file).

MPICH: a JSON collective selection file (``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``, see
:mod:`mpitempo.io.mpich_csel`) with per-size and per-process-count rules, plus
``MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0`` for every tuned op so that MPICH's MPIR level (where the file is
read) handles it; ``read``: also the single-algorithm CVARs ``MPIR_CVAR_<OP>_INTRA_ALGORITHM=<name>``.

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

RULES_FILE = {"openmpi": "ompi-coll-rules.conf", "mpich": "mpich-coll-selection.json",
              "smpi": "smpi-coll-selection.txt"}
OMPI_JSON_FILE = "ompi-coll-rules.json"
PROVENANCE_FILE = "tune-rules.json"
MPICH_JSON_CVAR = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
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
                rows.append((start, alg, (r.algorithm or "default")
                             + (" (PREDICTED by the model, not measured at this size)" if r.source == "predicted"
                                else "")))
            lines.append(f"{np_}  # communicator size")
            lines.append(f"{len(rows)}  # number of message sizes")
            for start, alg, name in rows:
                lines.append(f"{start} {alg} 0 0  # from {start} B: {name}")
    return "\n".join(lines) + "\n"


def ompi_rules_json(rules: list[Rule]) -> dict:
    """The same rules in Open MPI's JSON rules format (Open MPI 6.0, PR 13104): {"rule_file_version": 3,
    "module": "tuned", "collectives": {op: [{"comm_size_min", "comm_size_max", "rules": [{"msg_size_min",
    "msg_size_max", "alg"}]}]}}; first match wins, sizes inclusive, "inf" for no upper bound. Sizes are
    coll_tuned's (``ompi_rule_size``). Ranges where the default was kept are left out (Open MPI then uses
    its fixed decision). A communicator-size entry holds from its process count up to the next tuned one."""
    by_op: dict[str, dict[int, list[Rule]]] = {}
    for r in rules:
        if r.op not in OMPI_COLL_IDS:
            raise MtError(f"op '{r.op}' has no Open MPI collective id")
        by_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append(r)
    colls = {}
    for op in sorted(by_op, key=lambda o: OMPI_COLL_IDS[o]):
        nps = sorted(by_op[op])
        entries = []
        for i, np_ in enumerate(nps):
            rs = sorted(by_op[op][np_], key=lambda r: r.msize)
            msg = []
            for j, r in enumerate(rs):
                lo = 0 if j == 0 else ompi_rule_size(op, r.msize, np_)
                hi = ompi_rule_size(op, rs[j + 1].msize, np_) - 1 if j + 1 < len(rs) else "inf"
                if r.algorithm is None:
                    continue
                if msg and msg[-1]["alg"] == r.algorithm and msg[-1]["msg_size_max"] == lo - 1:
                    msg[-1]["msg_size_max"] = hi
                    continue
                msg.append({"msg_size_min": lo, "msg_size_max": hi, "alg": r.algorithm})
            if msg:
                entries.append({"comm_size_min": np_,
                                "comm_size_max": nps[i + 1] - 1 if i + 1 < len(nps) else "inf", "rules": msg})
        if entries:
            colls[op] = entries     # Open MPI's reader takes its colltype names (reduce_scatter, not the
                                    # schema's "reducescatter")
    return {"rule_file_version": 3, "module": "tuned", "collectives": colls}


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


def settings_text(settings: dict[str, str], header: str = "") -> str:
    lines = [f"# {ln}" for ln in header.splitlines()] if header else []
    lines += [f"{k}={v}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_settings(path: str | Path) -> dict[str, str]:
    """KEY=VALUE lines (``export`` and ``#`` comments allowed) of a settings file."""
    from mpitempo.io.safefs import safe_read_text

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


def smpi_selection_text(rules: list[Rule], selector: str, header: str = "") -> str:
    """SimGrid/SMPI's collective selection as smpirun arguments. SMPI takes one algorithm per collective
    for a whole run (--cfg=smpi/<op>:<name>) over its selector (--cfg=smpi/coll-selector:mpich|ompi), so
    the file gives, per process count, the arguments of the run, and says where the measured choice
    changes with the message size (a single --cfg cannot follow it: the rules are listed; the argument
    line then takes the algorithm chosen at the most sizes and says which sizes it gives up)."""
    from mpitempo.runner.variants import SMPI_OP_KEYS

    lines = [f"# {ln}" for ln in header.splitlines()]
    lines.append("# SimGrid/SMPI collective selection: smpirun arguments per process count (SIMULATED platform:")
    lines.append("# the choice holds for SimGrid's model of the platform tuned on, not for a real machine)")
    by_np: dict[int, dict[str, list[Rule]]] = {}
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
                args.append(f"--cfg=smpi/{SMPI_OP_KEYS[op]}:{pick}")
        lines.append(f"np={np_}: " + " ".join(args))
    return "\n".join(lines) + "\n"


def write_config(b, rules, target: Path, mpich_info=None, smpi_selector: str | None = None) -> dict:
    """Write the library's tuning files and the settings file into target, never through a link.
    ``mpich_info``: (library tables, known algorithm keys) of :func:`mpitempo.io.mpich_csel.mpich_info`."""
    import json
    import time

    from mpitempo.io.safefs import safe_write_text

    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    header = f"written by mpitempo tune, {stamp}, for {b.mpiexec_version or b.flavour}"
    chosen = [r for r in rules if r.algorithm is not None]
    config_file = None
    extra_files: dict[str, str] = {}
    predicted = [r for r in rules if r.source == "predicted"]
    settings: dict[str, str] = {}
    if b.flavour == "smpi":
        path = target / RULES_FILE["smpi"]
        safe_write_text(path, smpi_selection_text(rules, smpi_selector or "mpich", header), target)
        config_file = str(path.resolve())
    elif b.flavour == "openmpi":
        if chosen:
            ops_tuned = {r.op for r in chosen}
            mine = [r for r in rules if r.op in ops_tuned]
            path = target / RULES_FILE["openmpi"]
            safe_write_text(path, ompi_rules_text(mine, header), target)
            path = path.resolve()
            config_file = str(path)
            jpath = target / OMPI_JSON_FILE
            safe_write_text(jpath, json.dumps(ompi_rules_json(mine), indent=2) + "\n", target)
            extra_files["ompi_json"] = str(jpath.resolve())
            settings = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                        "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path)}
    else:
        from mpitempo.io import mpich_csel
        from mpitempo.runner.variants import mpich_device_cvar

        if chosen:
            if mpich_info is None:
                raise MtError("writing MPICH's selection file needs the library's own table")
            tables, known = mpich_info
            per_op: dict[str, dict[int, list]] = {}
            for r in sorted(rules, key=lambda r: (r.op, r.nprocs, r.msize)):
                if r.op not in {c.op for c in chosen}:
                    continue
                if r.algorithm is None:
                    raise MtError(f"MPICH rule for {r.op} np={r.nprocs} from {r.msize} B names no algorithm: "
                                  "an op tuned at MPICH's MPIR level needs an MPIR algorithm at every size")
                per_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append((r.msize, r.algorithm, r.params))
            tree = mpich_csel.selection_tree(tables["mpir"], per_op, known)
            path = target / RULES_FILE["mpich"]
            safe_write_text(path, json.dumps(tree, indent=1) + "\n", target)
            config_file = str(path.resolve())
            settings = {MPICH_JSON_CVAR: config_file}
            for op in sorted(per_op):
                settings[mpich_device_cvar(op)] = "0"
    prov = {"written": stamp, "library": b.mpiexec_version or b.flavour, "config_file": config_file,
            "rules": [{"op": r.op, "nprocs": r.nprocs, "from_msize": r.msize, "algorithm": r.algorithm or "default",
                       "source": r.source} for r in rules]}
    if config_file or rules:
        safe_write_text(target / PROVENANCE_FILE, json.dumps(prov, indent=1) + "\n", target)
    sfile = target / SETTINGS_FILE
    note = header + "\nthe environment that makes MPI jobs use the tuned algorithms (KEY=VALUE)"
    if b.flavour == "smpi":
        note += (f"\nSIMULATED platform (SimGrid/SMPI): SMPI reads no environment; its settings are smpirun "
                 f"arguments, per process count in {RULES_FILE['smpi']}")
    elif not settings:
        note += "\nnothing to set: no algorithm was significantly faster than the library's default"
    for r in predicted:
        note += (f"\nPREDICTED rule (model, not measured at that size): {r.op} np={r.nprocs} from {r.msize} B: "
                 f"{r.algorithm or 'default'}")
    if b.flavour == "mpich" and settings:
        note += ("\nMPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0 makes these ops reach MPICH's MPIR level, where the "
                 "selection file is read")
    safe_write_text(sfile, settings_text(settings, note), target)
    sfile = sfile.resolve()
    return {"library": b.flavour, "library_version": b.mpiexec_version, "config_file": config_file,
            "settings": settings, "settings_file": str(sfile), "files": extra_files,
            "predicted_rules": len(predicted)}


def check_settings(b, cat, settings: dict[str, str], where: str) -> dict[tuple[str, int], list]:
    """The configuration against the library's own list of algorithms, before anything is launched.
    Returns {(op, nprocs or 0): [(from_size, algorithm name)]} of what it selects."""
    from mpitempo.runner.variants import TUNABLE_OPS, mpich_cvar

    sel: dict[tuple[str, int], list] = {}
    if b.flavour == "mpich":
        if any(k.startswith("OMPI_MCA_") for k in settings):
            raise MtError(f"{where} holds Open MPI settings, but the library is MPICH")
        jf = settings.get(MPICH_JSON_CVAR)
        if jf:
            import json

            from mpitempo.io import mpich_csel
            from mpitempo.runner.variants import mpich_device_cvar

            from mpitempo.io.safefs import safe_read_text

            jp = Path(jf)
            if not jp.is_file():
                raise MtError(f"{where}: the selection file '{jf}' does not exist")
            try:   # a regular file within 16 MiB, never blocking on a FIFO
                tree = json.loads(safe_read_text(jp.resolve(), limit=16 << 20))
            except ValueError as e:
                raise MtError(f"{where}: '{jf}' is not JSON ({e}); MPICH would ignore or abort on it") from None
            lib = mpich_csel.find_libmpi(b)
            known = mpich_csel.library_algorithms(lib) if lib else None
            if known is not None and not known:
                known = None
            mpich_csel.validate(tree, known, f"{where}: '{jf}'")
            if lib:
                base = mpich_csel.library_tables(lib).get("mpir", {})
                missing = sorted(k for k in base if k not in tree)
                if missing:
                    raise MtError(f"{where}: '{jf}' does not cover {missing[0]} (MPICH aborts at the first such "
                                  "call: the file replaces the library's whole table)")
            sel[("__mpich_tree__", 0)] = [tree, {op for op in TUNABLE_OPS
                                                 if settings.get(mpich_device_cvar(op)) in ("0", "false", "no")}]
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
        if rules:
            return rules[0][1]
        tj = sel.get(("__mpich_tree__", 0))
        if tj and op in tj[1]:
            from mpitempo.io import mpich_csel

            return mpich_csel.short_name(op, mpich_csel.select(tj[0], op, msize, nprocs)) or "default"
        return "default"
    cands = [c for (o, c) in sel if o == op and c <= nprocs]
    if not cands:
        return "default"
    name = "default"
    for start, alg in sorted(sel[(op, max(cands))]):
        if ompi_rule_size(op, msize, nprocs) >= start:
            name = alg
    return name
