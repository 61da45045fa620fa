"""MPICH's JSON collective selection files ("csel", read from MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE).

The format (MPICH 4.x/5.x, src/mpi/coll/src/csel.c): a tree of JSON objects whose keys are conditions,
tried in file order; the first key whose condition holds is descended into, and a key
``algorithm=MPIR_<Op>_<intra|inter|allcomm>_<name>`` is a leaf (its children are the algorithm's
parameters, e.g. ``"chunk_size=64": {}``). Conditions used here: ``collective=<op>``,
``comm_type=intra|inter``, ``comm_size<N``, ``comm_size<=N``, ``avg_msg_size<=N`` (bcast, reduce,
allreduce, alltoall: bytes of one call's buffer), ``total_msg_size<=N`` (allgather, gather, scatter,
reduce_scatter: the bytes of all ranks' blocks), and ``<name>=any`` / ``any`` (always true). Unknown keys
make MPICH abort at MPI_Init; a collective the file does not cover makes it abort at the first call
(``MPIR_Assert(cnt)``): a file replaces the library's whole table.

So a written file is the library's own compiled-in table (read from libmpi, where MPICH keeps it as a
string) with the subtrees of the tuned collectives replaced. The MPIR table is consulted only where a
collective reaches MPICH's MPIR level; on a single node ch4 answers bcast, reduce, allreduce and barrier
with its own shared-memory algorithms first, so a tuned op also needs ``MPIR_CVAR_<OP>_DEVICE_COLLECTIVE=0``.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from mpitempo.errors import MtError

# the size condition MPICH can evaluate for each op (avg_msg_size is defined for these four only)
AVG_SIZE_OPS = {"bcast", "reduce", "allreduce", "alltoall"}
TOTAL_SIZE_OPS = {"allgather", "gather", "scatter", "reduce_scatter"}
_CAP = {"reduce_scatter": "Reduce_scatter"}


def op_name(op: str) -> str:
    return _CAP.get(op, op.capitalize())


def container(op: str, alg: str) -> str:
    """The csel leaf key of an MPICH algorithm (the MPIR_CVAR_<OP>_INTRA_ALGORITHM name)."""
    if alg == "nb":
        return f"algorithm=MPIR_{op_name(op)}_allcomm_nb"
    return f"algorithm=MPIR_{op_name(op)}_intra_{alg}"


def size_key(op: str) -> str | None:
    if op in AVG_SIZE_OPS:
        return "avg_msg_size"
    if op in TOTAL_SIZE_OPS:
        return "total_msg_size"
    return None     # barrier: no size


def csel_size(op: str, msize: int, nprocs: int) -> int:
    """The size MPICH's selection compares for mpitempo's op at msize bytes per rank on nprocs ranks."""
    return msize * nprocs if op in TOTAL_SIZE_OPS else msize


# -- the library's own tables -----------------------------------------------------------------------------

def find_libmpi(build) -> Path | None:
    bindir = Path(build.mpiexec).parent
    for d in (bindir.parent / "lib", bindir.parent / "lib64"):
        for name in ("libmpi.so.12", "libmpi.so"):
            if (d / name).exists():
                return (d / name).resolve()
    try:
        show = subprocess.run([build.mpicc, "-show"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for tok in show.split():
        if tok.startswith("-L") and (Path(tok[2:]) / "libmpi.so").exists():
            return (Path(tok[2:]) / "libmpi.so").resolve()
    return None


def library_tables(lib: Path) -> dict[str, dict]:
    """The selection tables compiled into an MPICH library: {"mpir": ..., "ch4": ..., "posix": ...}
    (the JSON strings MPICH embeds as its defaults), and the algorithm leaf keys it accepts."""
    data = lib.read_bytes()
    out: dict[str, dict] = {}
    for m in re.finditer(rb'\{\s*"collective=', data):
        end = data.find(b"\0", m.start())
        try:
            tree = json.loads(data[m.start():end].decode())
        except (ValueError, UnicodeDecodeError):
            continue
        text = json.dumps(tree)
        kind = "ch4" if "composition=" in text else "posix" if "MPIDI_POSIX" in text else "mpir"
        out.setdefault(kind, tree)
    return out


def library_algorithms(lib: Path) -> set[str]:
    """Every ``algorithm=MPIR_...`` leaf key the library's csel parser knows (its string table)."""
    return {m.decode() for m in re.findall(rb"algorithm=MPIR_[A-Za-z_]+", lib.read_bytes())}


def mpich_info(build) -> tuple[dict, set[str], Path]:
    lib = find_libmpi(build)
    if lib is None:
        raise MtError(f"cannot find MPICH's libmpi next to {build.mpiexec}: the selection file is written from "
                      "the library's own default table")
    tables = library_tables(lib)
    if "mpir" not in tables:
        raise MtError(f"{lib} holds no MPIR collective selection table (MPICH >= 4.0 has one): cannot write "
                      "a complete MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE")
    return tables, library_algorithms(lib), lib


# -- writing ----------------------------------------------------------------------------------------------

def _chain(op: str, rules: list[tuple[int, dict]], nprocs: int) -> dict:
    """rules: [(from msize, leaf)] in size order -> nested size conditions (leaf of the last: any)."""
    key = size_key(op)
    if key is None or len(rules) == 1:
        return rules[-1][1] if key is None else {f"{key}=any": rules[0][1]}
    out = {}
    for (m, leaf), (nxt, _) in zip(rules, rules[1:]):
        out[f"{key}<={csel_size(op, nxt, nprocs) - 1}"] = leaf
    out[f"{key}=any"] = rules[-1][1]
    return out


def leaf(op: str, alg: str, params: dict | None = None, known: set[str] | None = None) -> dict:
    k = container(op, alg)
    if known is not None and k not in known:
        raise MtError(f"MPICH's selection file cannot name {op} algorithm '{alg}': the library has no "
                      f"'{k}'")
    return {k: {f"{p}={v}": {} for p, v in (params or {}).items()}}


def selection_tree(base: dict, per_op: dict[str, dict[int, list[tuple[int, str, dict | None]]]],
                   known: set[str] | None = None) -> dict:
    """The library's table ``base`` with the intra-communicator subtree of every op in per_op replaced:
    per_op[op][nprocs] = [(from msize, algorithm, params)] in size order. The rules of nprocs N hold for
    communicators of N ranks up to the next tuned count (the smallest communicators keep the library's
    own table), like Open MPI's rules files."""
    tree = json.loads(json.dumps(base))
    for op, by_np in per_op.items():
        ck = f"collective={op}"
        if ck not in tree:
            raise MtError(f"the library's table has no '{ck}'")
        orig = tree[ck]
        intra_orig = orig.get("comm_type=intra", orig)
        nps = sorted(by_np)
        intra = {f"comm_size<{nps[0]}": intra_orig}
        for i, n in enumerate(nps):
            rules = [(m, leaf(op, a, p, known)) for m, a, p in by_np[n]]
            cond = f"comm_size<{nps[i + 1]}" if i + 1 < len(nps) else "comm_size=any"
            intra[cond] = _chain(op, rules, n)
        new = {"comm_type=intra": intra}
        for k, v in orig.items():
            if k != "comm_type=intra":
                new[k] = v       # inter-communicators keep the library's choice
        tree[ck] = new
    return tree


# -- reading / evaluating ---------------------------------------------------------------------------------

_KEY = re.compile(r"^(collective=[a-z_]+|comm_type=(intra|inter)|comm_size(<=|<)\d+|comm_size=(pow2|node_comm_size)"
                  r"|(avg_msg_size|total_msg_size|count|comm_avg_ppn)(<=|<)\d+|count<pow2"
                  r"|(is_multi_threaded|is_commutative|is_sendbuf_inplace|is_op_built_in|is_block_regular"
                  r"|is_node_consecutive)=(yes|no)|comm_hierarchy=(parent|node_roots|node|flat)"
                  r"|([a-z_]+=)?any|(algorithm|composition)=[A-Za-z0-9_]+)$")


def validate(tree, known: set[str] | None = None, where: str = "the selection file") -> None:
    """MtError for a key MPICH's parser would abort on, or an algorithm the library does not have."""
    if not isinstance(tree, dict):
        raise MtError(f"{where}: expected a JSON object of conditions")
    for k, v in tree.items():
        ck = k.replace(" ", "")
        if not _KEY.match(ck):
            raise MtError(f"{where}: MPICH does not know the key '{k}' (it would abort at MPI_Init)")
        if not isinstance(v, dict):
            raise MtError(f"{where}: the value of '{k}' must be a JSON object")
        if ck.startswith("algorithm="):
            if known is not None and ck not in known:
                raise MtError(f"{where}: the library has no '{ck}'")
            continue
        validate(v, known, where)


def _holds(key: str, ctx: dict) -> bool:
    k = key.replace(" ", "")
    if k == "any" or k.endswith("=any"):
        return True
    m = re.match(r"^(comm_size|avg_msg_size|total_msg_size|count|comm_avg_ppn)(<=|<)(\d+)$", k)
    if m:
        v = ctx[m.group(1)]
        return v <= int(m.group(3)) if m.group(2) == "<=" else v < int(m.group(3))
    if k == "comm_size=pow2":
        return ctx["comm_size"] & (ctx["comm_size"] - 1) == 0
    if k.startswith("comm_type="):
        return k.endswith("intra")
    if k.startswith("comm_hierarchy="):
        return k.endswith("parent")
    if k == "comm_size=node_comm_size":
        return ctx.get("single_node", True)
    if k == "count<pow2":
        return ctx["count"] < (1 << (ctx["comm_size"].bit_length() - 1))
    m = re.match(r"^(is_[a-z_]+)=(yes|no)$", k)
    if m:
        return ctx.get(m.group(1), m.group(1) != "is_multi_threaded" and m.group(1) != "is_sendbuf_inplace") \
            == (m.group(2) == "yes")
    raise MtError(f"cannot evaluate MPICH selection key '{key}'")


def select(tree: dict, op: str, msize: int, nprocs: int, **ctx) -> str | None:
    """The algorithm leaf MPICH's selection takes for mpitempo's op (MPI_COMM_WORLD, one node, built-in
    commutative op, not in place), or None when no branch matches (MPICH would abort)."""
    c = {"comm_size": nprocs, "avg_msg_size": msize, "total_msg_size": msize * nprocs, "count": msize,
         "comm_avg_ppn": nprocs}
    c.update(ctx)
    node = tree.get(f"collective={op}")
    while isinstance(node, dict):
        for k, v in node.items():
            kk = k.replace(" ", "")
            if kk.startswith(("algorithm=", "composition=")):
                return kk.split("=", 1)[1]
            if _holds(kk, c):
                node = v
                break
        else:
            return None
    return None


def short_name(op: str, leaf_name: str | None) -> str | None:
    """MPIR_Bcast_intra_binomial -> binomial (the CVAR name); other leaves unchanged."""
    if leaf_name is None:
        return None
    for pre in (f"MPIR_{op_name(op)}_intra_", f"MPIR_{op_name(op)}_allcomm_"):
        if leaf_name.startswith(pre):
            return leaf_name[len(pre):]
    return leaf_name
