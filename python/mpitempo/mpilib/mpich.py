"""MPICH (and Hydra-launched derivatives; docs/design.md, "The MPI library"): detection, launch, the
algorithm catalogue (its control variables, listed by ``mpivars``: MPIR_CVAR_<OP>_INTRA_ALGORITHM with one
"name - description" line each), the settings an algorithm needs to take effect, and the JSON collective
selection file tune writes (:mod:`mpitempo.mpilib.mpich_csel`).

MPICH's ch4 device answers bcast, reduce, allreduce, barrier, ... with its own shared-memory algorithms on
a node before the MPIR level, where MPIR_CVAR_<OP>_INTRA_ALGORITHM is read: with the device collectives on
(MPICH's default) the variable has no effect (measured with the MPICH 5.0.2 wheel: allreduce
``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring`` alone ran in the default's time, 0.33 us at 8 B on 2 ranks; with
``MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0`` 2.5 us). ``MPIR_CVAR_COLLECTIVE_FALLBACK=error`` makes an
algorithm MPICH cannot use with the call's arguments an error instead of a silent fallback to its own
choice; an unknown algorithm name makes MPI_Init fail.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.mpilib import mpich_csel
from mpitempo.mpilib.base import TUNABLE_OPS, Algorithm, Catalogue, Completion, MpiLib, Variant, tool_text

# The documented fallback table, used when mpivars is missing or lists nothing for an op: the names of
# MPIR_CVAR_<OP>_INTRA_ALGORITHM in MPICH 4.x/5.0. docs/tune.md reproduces it.
FALLBACK = {
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
SKIP = {"ccl"}

# Environment for oversubscribed MPICH (docs/design.md, "Machines that share or oversubscribe cores"):
# ranks yield instead of busy-polling.
THROTTLE = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
}
JSON_CVAR = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
FALLBACK_CVAR = "MPIR_CVAR_COLLECTIVE_FALLBACK"
DEVICE_ALL = "MPIR_CVAR_DEVICE_COLLECTIVES"   # all | none | percoll (default): whether the per-op switch is read
_ALG_VAR = re.compile(r"^MPIR_CVAR_([A-Z_]+)_INTRA_ALGORITHM$")
_OP_VAR = re.compile(r"^MPIR_CVAR_([A-Z_]+?)_(INTRA_ALGORITHM|INTER_ALGORITHM|DEVICE_COLLECTIVE)$")
_FALSE = ("0", "false", "no", "off")


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


def mpich_cvar(op: str) -> str:
    return f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"


def mpich_device_cvar(op: str) -> str:
    return f"MPIR_CVAR_{op.upper()}_DEVICE_COLLECTIVE"


def mpich_env(op: str, name: str) -> dict[str, str]:
    """The settings that run ``name`` for ``op`` (see the module's text: the device switch and the
    fallback that makes an algorithm that cannot run an error)."""
    return {mpich_cvar(op): name, FALLBACK_CVAR: "error", mpich_device_cvar(op): "0"}


class Mpich(MpiLib):
    name = "mpich"
    label = "MPICH"
    lib_globs = ("libmpi.so*",)
    srun_pmi = "pmi2"
    selection_pattern = re.compile(r"^MPIR_CVAR_(\w+_(INTRA|INTER)_ALGORITHM|\w+_DEVICE_COLLECTIVE|DEVICE_COLLECTIVES"
                                   r"|(CH4_|CH4_POSIX_)?COLL_SELECTION_TUNING_JSON_FILE|COLLECTIVE_FALLBACK)$")
    rules_file = "mpich-coll-selection.json"
    rules_file_var = JSON_CVAR

    def recognises(self, version_text: str) -> bool:
        return any(w in version_text for w in ("hydra", "mpich", "intel(r) mpi"))

    def default_template(self, np: int, over: bool, binding: str) -> tuple[str, str, bool]:
        if over or binding == "none":
            return "{mpiexec} -n {np} {cmd}", "none", over
        return "{mpiexec} -n {np} -bind-to core {cmd}", "core", False

    def launch_env(self, build, oversubscribed: bool) -> dict[str, str]:
        return dict(THROTTLE) if oversubscribed else {}

    # -- algorithms --------------------------------------------------------------------------------
    def _mpivars(self, build, use_tool: bool = True) -> str | None:
        tool = Path(build.mpiexec).parent / "mpivars"
        return tool_text([str(tool)]) if use_tool and tool.exists() else None

    def discover(self, build, op: str, np: int, smpi_selector: str) -> list[Variant]:
        tool = Path(build.mpiexec).parent / "mpivars"
        if not tool.exists():
            raise MtError(f"cannot list MPICH's {op} algorithms: no mpivars next to {build.mpiexec}; "
                          "give --variants explicitly")
        text = subprocess.run([str(tool)], capture_output=True, text=True, timeout=60).stdout
        names = [n for n in parse_mpich_mpivars(text, op) if n != "auto"]
        return [Variant("default")] + [Variant(n, {mpich_cvar(op): n}) for n in names]

    def catalogue(self, build, ops, np_list, use_tool: bool, smpi_selector: str) -> Catalogue:
        text = self._mpivars(build, use_tool)
        algs, notes = {}, []
        for op in ops:
            names = parse_mpich_mpivars(text, op) if text else []
            if not names:
                names = FALLBACK[op]
                if text:
                    notes.append(f"mpivars lists no {mpich_cvar(op)}: using the fallback table")
            algs[op] = [Algorithm(op, n, None, mpich_env(op, n)) for n in names if n != "auto" and n not in SKIP]
        return Catalogue(self.name, build.mpiexec_version, "mpivars" if text else "fallback table", algs, notes)

    def complete(self, env: dict[str, str], user_env=None) -> Completion:
        """MPIR_CVAR_<OP>_INTRA_ALGORITHM takes effect only where the call reaches MPICH's MPIR level:
        MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0 is added, and MPIR_CVAR_COLLECTIVE_FALLBACK=error, so that an
        algorithm MPICH cannot use with the call's arguments fails the run instead of running the
        library's own choice unnoticed (MPICH refuses an unknown name at MPI_Init itself). A setting of
        the configuration or the environment that keeps the algorithm from running is refused."""
        eff = {**self.selection_env(user_env), **{k: str(v) for k, v in env.items()}}
        out = Completion()
        for k, v in eff.items():
            m = _ALG_VAR.match(k)
            if m and v.strip().lower() not in ("auto", "0", ""):
                out.selects[m.group(1).lower()] = v
        if not out.selects:
            return out
        first = sorted(out.selects)[0]
        what = f"{mpich_cvar(first)}={out.selects[first]}"
        dev_all = eff.get(DEVICE_ALL, "percoll").strip().lower()
        if dev_all == "all":
            raise MtError(f"{DEVICE_ALL}=all keeps {what} from taking effect (the device answers every "
                          f"collective itself): remove it or set it to percoll")
        fb = eff.get(FALLBACK_CVAR)
        if fb is None:
            out.added[FALLBACK_CVAR] = "error"
        elif fb.strip().lower() != "error":
            raise MtError(f"{FALLBACK_CVAR}={fb} lets MPICH run its own choice in place of {what} unnoticed: "
                          f"remove it (mpitempo sets error) or set it to error")
        for op in sorted(out.selects):
            dev = mpich_device_cvar(op)
            if dev_all == "none":
                continue
            if dev not in eff:
                out.added[dev] = "0"
            elif eff[dev].strip().lower() not in _FALSE:
                raise MtError(f"{dev}={eff[dev]} keeps {mpich_cvar(op)}={out.selects[op]} from taking effect "
                              f"(the device's own algorithm runs instead): remove it or set it to 0")
        if out.added:
            out.notes.append(", ".join(f"{k}={v}" for k, v in out.added.items()) + " added for "
                             + ", ".join(f"{mpich_cvar(op)}={a}" for op, a in sorted(out.selects.items()))
                             + " to take effect (without the device switch MPICH runs its own algorithm; with the "
                             "fallback an algorithm that cannot run fails the run)")
        return out

    def op_of_var(self, name: str) -> str | None:
        m = _OP_VAR.match(name)
        return m.group(1).lower() if m else None

    def neutral(self, name: str, value: str) -> bool:
        # the fallback decides only whether an algorithm that cannot run fails: not which one runs
        return name == FALLBACK_CVAR or (bool(_ALG_VAR.match(name)) and value.strip().lower() in ("auto", "0", ""))

    def check_names(self, build, selects: dict[str, str], where: str) -> None:
        self._check_listed(build, selects, where, "mpivars", mpich_cvar)

    # -- tune: rules files -------------------------------------------------------------------------
    def rules_files(self, rules, header: str, selection_table, smpi_selector: str):
        chosen = {r.op for r in rules if r.algorithm is not None}
        if not chosen:
            return None, {}, lambda path: {}
        if selection_table is None:
            raise MtError("writing MPICH's selection file needs the library's own table")
        tables, known = selection_table
        per_op: dict[str, dict[int, list]] = {}
        for r in sorted(rules, key=lambda r: (r.op, r.nprocs, r.msize)):
            if r.op not in chosen:
                continue
            if r.algorithm is None:
                raise MtError(f"MPICH rule for {r.op} np={r.nprocs} from {r.msize} B names no algorithm: "
                              "an op tuned at MPICH's MPIR level needs an MPIR algorithm at every size")
            per_op.setdefault(r.op, {}).setdefault(r.nprocs, []).append((r.msize, r.algorithm, r.params))
        tree = mpich_csel.selection_tree(tables["mpir"], per_op, known)
        files = {self.rules_file: json.dumps(tree, indent=1) + "\n"}
        return self.rules_file, files, lambda path: {JSON_CVAR: path,
                                                     **{mpich_device_cvar(op): "0" for op in sorted(per_op)}}

    def selection_table(self, build):
        tables, known, _lib = mpich_csel.mpich_info(build)
        return tables, known

    def settings_note(self, settings: dict) -> str:
        return ("\nMPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0 makes these ops reach MPICH's MPIR level, where the "
                "selection file is read") if settings else ""

    def mpir_level(self) -> bool:
        return True

    def table_choice(self, selection_table):
        if selection_table is None:
            return None
        return lambda op, m, n: mpich_csel.short_name(op, mpich_csel.select(selection_table[0]["mpir"], op, m, n))

    def check_settings(self, build, cat: Catalogue, settings: dict[str, str], where: str, read_limited) -> dict:
        if any(k.startswith("OMPI_MCA_") for k in settings):
            raise MtError(f"{where} holds Open MPI settings, but the library is MPICH")
        sel: dict[tuple[str, int], list] = {}
        jf = settings.get(JSON_CVAR)
        if jf:
            jp = Path(jf)
            if not jp.is_file():
                raise MtError(f"{where}: the selection file '{jf}' does not exist")
            try:   # a regular file within 16 MiB, never blocking on a FIFO
                tree = json.loads(read_limited(jp.resolve(), 16 << 20))
            except ValueError as e:
                raise MtError(f"{where}: '{jf}' is not JSON ({e}); MPICH would ignore or abort on it") from None
            lib = mpich_csel.find_libmpi(build)
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

    def selected(self, sel: dict, op: str, msize: int, nprocs: int) -> str:
        rules = sel.get((op, 0))
        if rules:
            return rules[0][1]
        tj = sel.get(("__mpich_tree__", 0))
        if tj and op in tj[1]:
            return mpich_csel.short_name(op, mpich_csel.select(tj[0], op, msize, nprocs)) or "default"
        return "default"

    def known_bug(self, output: str, argv: list[str]) -> str | None:
        if "User set collective algorithm is not usable" in output:   # MPIR_CVAR_COLLECTIVE_FALLBACK=error at work
            return ("the collective algorithm the configuration selects is not usable by MPICH with these "
                    f"arguments ({FALLBACK_CVAR}=error makes that an error instead of a silent run of MPICH's own "
                    "choice; MPI_Init's own collectives count too)")
        return None


LIB = Mpich()
