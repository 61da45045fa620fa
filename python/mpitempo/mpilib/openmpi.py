"""Open MPI (docs/design.md, "The MPI library"): detection, launch, the algorithm catalogue of its coll/tuned
component (``ompi_info --param coll tuned --level 9``: coll_tuned_<op>_algorithm with "Valid values: 0|ignore,
1|linear, ..."), the dynamic rules files tune writes, and its known bugs.

A dynamic rules file of coll_tuned in the classic text format (read by every Open MPI since 1.x; 6.0 also
reads JSON) is enabled by the MCA parameters ``coll_tuned_use_dynamic_rules=1`` and
``coll_tuned_dynamic_rules_filename=PATH``. Per collective: communicator sizes, and per communicator size a
list of (message size from which the rule holds, algorithm id, fan-in/out, segment size). The message size
a rule is keyed on is the one coll_tuned computes from the call's arguments (:func:`ompi_rule_size`).
Open MPI 6.0 also reads rules in JSON (:func:`ompi_rules_json`, written beside the classic file from the
format's specification; the Open MPI 5.0 this is tested with reads only the classic file).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.mpilib.base import Algorithm, Catalogue, Completion, MpiLib, Variant, argv_value, tool_text

# The documented fallback table, used when ompi_info is missing or lists nothing for an op: the algorithms
# of Open MPI 5.0's coll_tuned (ids of its *_algorithm MCA parameters, from 1). docs/tune.md reproduces it.
FALLBACK = {
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

# Collective ids of Open MPI's COLLTYPE enum (ompi/mca/coll/base/coll_base_functions.h, 4.x-6.x), the
# numbers of the classic rules file.
COLL_IDS = {"allgather": 0, "allgatherv": 1, "allreduce": 2, "alltoall": 3, "alltoallv": 4, "alltoallw": 5,
            "barrier": 6, "bcast": 7, "exscan": 8, "gather": 9, "gatherv": 10, "reduce": 11,
            "reduce_scatter": 12, "reduce_scatter_block": 13, "scan": 14, "scatter": 15, "scatterv": 16}
OPS_BY_ID = {v: k for k, v in COLL_IDS.items()}
# ops whose rule size is msize x communicator size (mpitempo's msize is the block per rank)
_TIMES_P = {"allgather", "alltoall", "gather", "scatter", "reduce_scatter"}
JSON_FILE = "ompi-coll-rules.json"
DYNAMIC = "OMPI_MCA_coll_tuned_use_dynamic_rules"
RULES_VAR = "OMPI_MCA_coll_tuned_dynamic_rules_filename"
_ALG_VAR = re.compile(r"^OMPI_MCA_coll_tuned_(\w+)_algorithm$")

# Open MPI 4.x: MPI_Compare_and_swap on an MPI_Win_allocate window crashes in btl/vader (a segfault in
# mca_btl_vader_poll_handle_frag, often in a later MPI_Barrier of the target), as OSU's osu_cas_latency
# does (open-mpi/ompi#11349); MPI_Win_create and MPI_Win_create_dynamic windows, and osc other than rdma,
# are not affected (docs/methods.md, "Operations: rma")
CAS_ALLOCATE_BUG = ("a known Open MPI 4.x bug: MPI_Compare_and_swap (op cas) on an MPI_Win_allocate window "
                    "crashes btl/vader (open-mpi/ompi#11349, OSU's osu_cas_latency too); measure cas with "
                    "rma_win = \"create\", or set OMPI_MCA_osc=^rdma in the configuration's env")


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


def parse_ompi_info(text: str, op: str) -> list[str]:
    """Algorithm names of coll_tuned_<op>_algorithm in `ompi_info --param coll tuned --level 9`."""
    return [name for _, name in parse_ompi_info_ids(text, op)]


def ompi_env(op: str, alg) -> dict[str, str]:
    return {DYNAMIC: "1", f"OMPI_MCA_coll_tuned_{op}_algorithm": str(alg)}


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
        if r.op not in COLL_IDS:
            raise MtError(f"op '{r.op}' has no Open MPI collective id")
        by_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append(r)
    lines = [f"# {ln}" for ln in header.splitlines()] if header else []
    lines.append(f"{len(by_op)}  # number of collectives")
    for op in sorted(by_op, key=lambda o: COLL_IDS[o]):
        sizes = by_op[op]
        lines.append(f"{COLL_IDS[op]}  # collective id: {op}")
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
        if r.op not in COLL_IDS:
            raise MtError(f"op '{r.op}' has no Open MPI collective id")
        by_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append(r)
    colls = {}
    for op in sorted(by_op, key=lambda o: COLL_IDS[o]):
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
            op = OPS_BY_ID.get(cid)
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


class OpenMpi(MpiLib):
    name = "openmpi"
    label = "Open MPI"
    lib_globs = ("libmpi.so*",)
    srun_pmi = "pmix"
    selection_pattern = re.compile(r"^OMPI_MCA_coll(_\w+)?$")
    rules_file = "ompi-coll-rules.conf"
    rules_file_var = RULES_VAR

    def recognises(self, version_text: str) -> bool:
        return any(w in version_text for w in ("open mpi", "openrte", "prrte", "prterun", "open-mpi"))

    def default_template(self, np: int, over: bool, binding: str) -> tuple[str, str, bool]:
        if binding == "none" and not over:
            return "{mpiexec} -n {np} --bind-to none {cmd}", "none", False
        if over:
            return "{mpiexec} -n {np} --oversubscribe --bind-to none {cmd}", "none", True
        return "{mpiexec} -n {np} --bind-to core --map-by core {cmd}", "core", False

    def launch_env(self, build, oversubscribed: bool) -> dict[str, str]:
        env: dict[str, str] = {}
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        if oversubscribed:
            env["OMPI_MCA_mpi_yield_when_idle"] = "1"
            env["PRTE_MCA_rmaps_default_mapping_policy"] = ":oversubscribe"
            if "OpenRTE" in build.mpiexec_version:   # Open MPI 4 (ORTE): a template without --oversubscribe
                env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
        return env

    def srun_env(self) -> dict[str, str]:
        return {"PMIX_MCA_psec": "native"}   # Slurm's PMIx server and the wheel's PMIx agree on this

    # -- algorithms --------------------------------------------------------------------------------
    def _ompi_info(self, build, use_tool: bool = True) -> str | None:
        tool = Path(build.mpiexec).parent / "ompi_info"
        return tool_text([str(tool), "--param", "coll", "tuned", "--level", "9"]) if use_tool and tool.exists() else None

    def discover(self, build, op: str, np: int, smpi_selector: str) -> list[Variant]:
        if not (Path(build.mpiexec).parent / "ompi_info").exists():
            raise MtError(f"cannot list Open MPI's {op} algorithms: no ompi_info next to {build.mpiexec}; "
                          "give --variants explicitly")
        names = [n for n in parse_ompi_info(self._ompi_info(build) or "", op) if n != "ignore"]
        if np != 2:
            names = [n for n in names if n != "two_proc"]
        return [Variant("default")] + [Variant(n, ompi_env(op, n)) for n in names]

    def catalogue(self, build, ops, np_list, use_tool: bool, smpi_selector: str) -> Catalogue:
        text = self._ompi_info(build, use_tool)
        if text is not None and "coll_tuned_" not in text:
            raise MtError(f"Open MPI at {Path(build.mpiexec).parent} has no coll tuned component (ompi_info lists "
                          "no coll_tuned parameters): it has no algorithm selection to tune")
        algs, notes = {}, []
        for op in ops:
            pairs = parse_ompi_info_ids(text, op) if text else []
            if not pairs:
                pairs = list(enumerate(["ignore"] + FALLBACK[op]))
                if text:
                    notes.append(f"ompi_info lists no coll_tuned_{op}_algorithm: using the fallback table")
            algs[op] = [Algorithm(op, name, i, ompi_env(op, i)) for i, name in pairs
                        if i != 0 and name != "ignore"
                        and not (name == "two_proc" and any(n != 2 for n in np_list))]   # two processes only
        return Catalogue(self.name, build.mpiexec_version, "ompi_info" if text else "fallback table", algs, notes)

    def complete(self, env: dict[str, str], user_env=None) -> Completion:
        """coll_tuned reads coll_tuned_<op>_algorithm only with coll_tuned_use_dynamic_rules=1: without it
        the selection is silently ignored (the fixed decision runs)."""
        eff = {**self.selection_env(user_env), **env}
        out = Completion()
        for k, v in eff.items():
            m = _ALG_VAR.match(k)
            if m and str(v) not in ("0", "ignore", ""):
                out.selects[m.group(1)] = str(v)
        if out.selects:
            dyn = eff.get(DYNAMIC)
            if dyn is None:
                out.added[DYNAMIC] = "1"
                out.notes.append(f"{DYNAMIC}=1 added: without it coll_tuned ignores "
                                 + ", ".join(f"coll_tuned_{op}_algorithm" for op in sorted(out.selects)))
            elif str(dyn).lower() not in ("1", "true", "yes"):
                raise MtError(f"{DYNAMIC}={dyn} keeps Open MPI from reading "
                              f"coll_tuned_{sorted(out.selects)[0]}_algorithm: the selected algorithm would not "
                              f"run; remove {DYNAMIC} or set it to 1")
            out.notes.append("the selection takes effect where coll/tuned answers the collective (not under "
                             "OMPI_MCA_coll excluding tuned, nor where han or another component has precedence)")
        return out

    def op_of_var(self, name: str) -> str | None:
        m = re.match(r"^OMPI_MCA_coll_tuned_(\w+?)_(algorithm|algorithm_\w+)$", name)
        return m.group(1) if m else None

    def neutral(self, name: str, value: str) -> bool:
        return bool(_ALG_VAR.match(name)) and value.strip() in ("0", "ignore", "")

    def check_names(self, build, selects: dict[str, str], where: str) -> None:
        self._check_listed(build, selects, where, "ompi_info", lambda op: f"OMPI_MCA_coll_tuned_{op}_algorithm")

    # -- tune: rules files -------------------------------------------------------------------------
    def rules_files(self, rules, header: str, selection_table, smpi_selector: str):
        chosen = {r.op for r in rules if r.algorithm is not None}
        if not chosen:
            return None, {}, lambda path: {}
        mine = [r for r in rules if r.op in chosen]
        files = {self.rules_file: ompi_rules_text(mine, header),
                 JSON_FILE: json.dumps(ompi_rules_json(mine), indent=2) + "\n"}
        return self.rules_file, files, lambda path: {DYNAMIC: "1", RULES_VAR: path}

    def check_settings(self, build, cat: Catalogue, settings: dict[str, str], where: str, read_limited) -> dict:
        if any(k.startswith("MPIR_CVAR_") for k in settings):
            raise MtError(f"{where} holds MPICH settings, but the library is Open MPI")
        sel: dict[tuple[str, int], list] = {}
        fname = settings.get(RULES_VAR)
        if fname is None:
            return sel
        if settings.get(DYNAMIC) not in ("1", "true", "yes"):
            raise MtError(f"{where} names a rules file but does not set {DYNAMIC}=1: Open MPI would ignore the file")
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

    def selected(self, sel: dict, op: str, msize: int, nprocs: int) -> str:
        cands = [c for (o, c) in sel if o == op and c <= nprocs]
        if not cands:
            return "default"
        name = "default"
        for start, alg in sorted(sel[(op, max(cands))]):
            if ompi_rule_size(op, msize, nprocs) >= start:
                name = alg
        return name

    def known_bug(self, output: str, argv: list[str]) -> str | None:
        ops = (argv_value(argv, "--ops") or "").split(",")
        if ("cas" in ops and argv_value(argv, "--rma-win") == "allocate" and "mca_btl_vader" in output
                and re.search(r"Segmentation fault|signal 11\b|SIGSEGV", output)):
            return CAS_ALLOCATE_BUG
        return None


LIB = OpenMpi()
