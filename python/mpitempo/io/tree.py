"""Allreduce tree descriptions (TOML files and presets) and the files of a `tree` run.

A tree is given as a preset (``binomial``, ``flat``, ``kary:K``, ``fanout:F1/F2``,
``parents:P0/P1/..``, ``node[:INTER[:INTRA]]``, ``mpi``) or as a TOML file (docs/tree.md)::

    name = "two-level"
    shape = "fanout"            # flat | binomial | kary | fanout | parents | children | node | mpi
    fanout = [2, 4]             # fanout: children per node, per level (the last repeats)
    k = 2                       # kary
    parents = [-1, 0, 0, 1]     # parents: the parent of node i (-1: the root)
    children = {0 = [1, 2], 1 = [3]}   # children: the same as lists of children
    inter = "binomial"          # node: the tree over hosts (flat, binomial, kK)
    intra = "flat"              # node: the tree inside a host
    ranks = [0, 2, 1, 3]        # optional: node i runs on rank ranks[i]
    hosts = ["h1", "h1", "h2", "h2"]  # optional: node i runs on a rank of host hosts[i]
    down_order = "fixed"        # or "lifo"

Both become the core's parameters ``tree``, ``tree_map``, ``tree_hosts``, ``down_order``.
Everything that can be checked without the job is checked here with a one-line error naming the
offending node; the core checks the rest (hosts of the job) before it measures.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from mpitempo.errors import MtError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHAPES = ("flat", "binomial", "kary", "fanout", "parents", "children", "node", "mpi")
LEVEL = re.compile(r"^(flat|binomial|k[1-9][0-9]*)$")
TOML_KEYS = {"name", "description", "shape", "k", "fanout", "parents", "children", "inter", "intra", "ranks", "hosts",
             "down_order"}


def check_parents(parents: list[int], where: str) -> None:
    """A tree: one root, parents in range, no cycle; errors name the node."""
    n = len(parents)
    roots = [i for i, p in enumerate(parents) if p == -1]
    for i, p in enumerate(parents):
        if not isinstance(p, int) or isinstance(p, bool) or p < -1 or p >= n:
            raise MtError(f"invalid tree{where}: node {i} has parent {p}, which is not a node (0..{n - 1}) or -1")
        if p == i:
            raise MtError(f"invalid tree{where}: node {i} is its own parent")
    if len(roots) > 1:
        raise MtError(f"invalid tree{where}: nodes {roots[0]} and {roots[1]} both have no parent (one root allowed)")
    if not roots:
        raise MtError(f"invalid tree{where}: no root (every node has a parent, so there is a cycle)")
    for i in range(n):
        seen, v = [i], i
        while parents[v] != -1:
            v = parents[v]
            if v in seen:
                cyc = " -> ".join(str(x) for x in seen[seen.index(v):] + [v])
                raise MtError(f"invalid tree{where}: node {i} is on a cycle ({cyc})")
            seen.append(v)


def parents_from_children(children: dict, where: str) -> list[int]:
    kids: dict[int, list[int]] = {}
    for k, v in children.items():
        try:
            p = int(k)
        except ValueError:
            raise MtError(f"invalid tree{where}: children key '{k}' is not a node number") from None
        if not isinstance(v, list):
            raise MtError(f"invalid tree{where}: children of node {p} must be a list")
        kids[p] = [int(c) for c in v]
    nodes = set(kids) | {c for v in kids.values() for c in v}
    n = max(nodes) + 1 if nodes else 0
    missing = sorted(set(range(n)) - nodes)
    if missing:
        raise MtError(f"invalid tree{where}: node {missing[0]} is missing (nodes must be 0..{n - 1})")
    parents = [-1] * n
    for p in sorted(kids):
        for c in kids[p]:
            if c < 0:
                raise MtError(f"invalid tree{where}: node {c} is not a node number")
            if parents[c] != -1:
                raise MtError(f"invalid tree{where}: node {c} has two parents ({parents[c]} and {p})")
            parents[c] = p
    check_parents(parents, where)
    return parents


def _int(v, what: str, where: str, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise MtError(f"invalid tree{where}: {what} '{v}' is not an integer")
    if v < lo:
        raise MtError(f"invalid tree{where}: {what} {v} must be >= {lo}")
    return v


def check_preset(spec: str) -> str:
    """Syntax of a preset (the core repeats the checks): returns it unchanged."""
    head, _, arg = spec.partition(":")
    where = f" '{spec}'"
    if head in ("flat", "binomial", "mpi"):
        if arg:
            raise MtError(f"invalid --tree '{spec}': '{head}' takes no argument")
    elif head == "kary":
        try:
            k = int(arg)
        except ValueError:
            raise MtError(f"invalid --tree '{spec}': kary needs a fan-out, e.g. kary:2") from None
        _int(k, "fan-out", where)
    elif head == "fanout":
        try:
            fans = [int(x) for x in arg.split("/")]
        except ValueError:
            raise MtError(f"invalid --tree '{spec}': fanout needs integers, e.g. fanout:2/4") from None
        for lvl, f in enumerate(fans):
            if f < 1:
                raise MtError(f"invalid tree{where}: fan-out {f} at level {lvl} must be >= 1")
    elif head == "parents":
        try:
            parents = [int(x) for x in arg.split("/")]
        except ValueError:
            raise MtError(f"invalid --tree '{spec}': parents needs integers, e.g. parents:-1/0/0/1") from None
        check_parents(parents, where)
    elif head == "node":
        for lvl in (arg.split(":") if arg else []):
            if not LEVEL.match(lvl) or lvl == "k0":
                raise MtError(f"invalid --tree '{spec}': level shape '{lvl}' (allowed: flat, binomial, kK e.g. k2)")
    else:
        raise MtError(f"unknown --tree '{spec}' (allowed: a TOML file, or flat, binomial, kary:K, fanout:F1/F2, "
                      "parents:P0/P1/.., node:INTER:INTRA, mpi)")
    return spec


def load_toml(path: Path) -> dict:
    """A TOML tree description -> {"name", "tree", "tree_map", "tree_hosts", "down_order", "nodes"}."""
    from mpitempo.io.safeload import load_toml_text
    from mpitempo.io.toml_schema import check_tree

    try:
        d = tomllib.loads(load_toml_text(path, what=f"tree file '{path}'"))
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"tree file '{path}' is not valid TOML: {e}") from None
    where = f" in '{path.name}'"
    bad = sorted(set(d) - TOML_KEYS)
    if bad:
        raise MtError(f"unknown key '{bad[0]}' in tree file '{path}' (allowed: {', '.join(sorted(TOML_KEYS))})")
    check_tree(d, f"tree file '{path}'")   # every key of its TOML type: k = "2", ranks = [0, 1.0] are refused
    shape = d.get("shape")
    if shape is None:
        shape = "children" if "children" in d else "parents" if "parents" in d else None
    if shape not in SHAPES:
        raise MtError(f"invalid shape '{shape}' in tree file '{path}' (allowed: {', '.join(SHAPES)})")
    nodes = None
    if shape in ("flat", "binomial", "mpi"):
        spec = shape
    elif shape == "kary":
        spec = f"kary:{_int(d.get('k'), 'fan-out k', where)}"
    elif shape == "fanout":
        fans = d.get("fanout")
        if not isinstance(fans, list) or not fans:
            raise MtError(f"invalid tree{where}: fanout must be a non-empty list, e.g. fanout = [2, 4]")
        for lvl, f in enumerate(fans):
            _int(f, f"fan-out at level {lvl}", where)
        spec = "fanout:" + "/".join(str(f) for f in fans)
    elif shape in ("parents", "children"):
        if shape == "children":
            parents = parents_from_children(d.get("children") or {}, where)
        else:
            parents = d.get("parents")
            if not isinstance(parents, list) or not parents:
                raise MtError(f"invalid tree{where}: parents must be a non-empty list, e.g. parents = [-1, 0, 0, 1]")
            check_parents(parents, where)
        nodes = len(parents)
        spec = "parents:" + "/".join(str(p) for p in parents)
    else:  # node
        inter, intra = str(d.get("inter", "binomial")), str(d.get("intra", "flat"))
        for lvl in (inter, intra):
            if not LEVEL.match(lvl):
                raise MtError(f"invalid tree{where}: level shape '{lvl}' (allowed: flat, binomial, kK e.g. k2)")
        spec = f"node:{inter}:{intra}"
    out = {"name": str(d.get("name", path.stem)), "tree": spec, "tree_map": None, "tree_hosts": None,
           "down_order": d.get("down_order"), "nodes": nodes}
    if "ranks" in d and "hosts" in d:
        raise MtError(f"invalid tree{where}: give ranks or hosts, not both")
    if "ranks" in d:
        ranks = d["ranks"]
        if not isinstance(ranks, list):
            raise MtError(f"invalid tree{where}: ranks must be a list")
        seen: dict[int, int] = {}
        for i, r in enumerate(ranks):
            _int(r, f"rank of node {i}", where, lo=0)
            if r in seen:
                raise MtError(f"invalid tree{where}: node {i} is mapped to rank {r}, which already runs node {seen[r]}")
            seen[r] = i
        out["tree_map"] = [int(r) for r in ranks]
    if "hosts" in d:
        hosts = d["hosts"]
        if not isinstance(hosts, list) or any(not isinstance(h, str) or not h for h in hosts):
            raise MtError(f"invalid tree{where}: hosts must be a list of host names")
        out["tree_hosts"] = list(hosts)
    if shape in ("node", "mpi") and (out["tree_map"] or out["tree_hosts"]):
        raise MtError(f"invalid tree{where}: shape '{shape}' places its nodes itself (no ranks or hosts)")
    if out["down_order"] is not None and out["down_order"] not in ("fixed", "lifo"):
        raise MtError(f"invalid down_order '{out['down_order']}'{where} (allowed: fixed, lifo)")
    if shape == "mpi" and out["down_order"] is not None:
        raise MtError(f"invalid tree{where}: shape 'mpi' is the library's own MPI_Allreduce, whose order of "
                      "sends down the tree is its own: leave down_order out")
    return out


def resolve(value: str) -> dict:
    """--tree FILE|PRESET -> the core's parameters and a configuration name."""
    p = Path(value)
    if value.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise MtError(f"tree file '{value}' not found")
        return load_toml(p)
    check_preset(value)
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", value)
    return {"name": name, "tree": value, "tree_map": None, "tree_hosts": None, "down_order": None,
            "nodes": len(value.split(":", 1)[1].split("/")) if value.startswith("parents:") else None}


def check_against_np(t: dict, np_: int, label: str) -> None:
    """What the job size decides: every rank is one node of the tree."""
    if t["nodes"] is not None and t["nodes"] != np_:
        if t["nodes"] < np_:
            raise MtError(f"invalid tree {label}: rank {t['nodes']} is missing (the tree has {t['nodes']} nodes, "
                          f"the job {np_} ranks)")
        raise MtError(f"invalid tree {label}: node {np_} has no rank (the tree has {t['nodes']} nodes, the job "
                      f"{np_} ranks)")
    for key, what in (("tree_map", "ranks"), ("tree_hosts", "hosts")):
        v = t.get(key)
        if v is not None and len(v) != np_:
            raise MtError(f"invalid tree {label}: {len(v)} {what} for {np_} nodes (one per node)")
    if t.get("tree_map"):
        for i, r in enumerate(t["tree_map"]):
            if r >= np_:
                raise MtError(f"invalid tree {label}: node {i} is mapped to rank {r}, the job has ranks 0..{np_ - 1}")


# -- files of a run --------------------------------------------------------------------------------
#
# A tree run directory may come from someone else (a campaign received, `--from`): its files are
# read as untrusted input. Every check below turns a file that is not what the core writes into one
# MtError line naming the file, the line and the value (control characters escaped) and what is
# allowed; nothing is read through a link or from a FIFO or device (io.safefs).

MAX_NPROCS = 1 << 24        # ranks of a run (as trace.json's ranks)
MAX_TIME_S = 1e9            # a timestamp above this is no clock reading of a run (31 years)
MAX_ROW_BYTES = 160         # the longest row the core writes is about 120 bytes
EVENTS_COLUMNS = ("call", "inst", "rank", "enter_s", "up_s", "down_s", "exit_s")
LINKS_COLUMNS = ("call", "inst", "parent", "child", "arrive_s", "depart_s", "arrival_order", "departure_order")
_INT_COLUMNS = {"call", "inst", "rank", "parent", "child", "arrival_order", "departure_order"}
_INT = r"-?[0-9]{1,15}"
_NUM = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"


def _safe(v) -> str:
    from mpitempo.safe_text import safe

    s = safe(v)
    return s if len(s) <= 60 else s[:60] + "..."


def _row_re(columns):
    return re.compile(",".join(_INT if c in _INT_COLUMNS else _NUM for c in columns))


_ROW_RE = {EVENTS_COLUMNS: _row_re(EVENTS_COLUMNS), LINKS_COLUMNS: _row_re(LINKS_COLUMNS)}


def _check_acyclic(parents: list[int], where: str) -> None:
    """No cycle, in O(n) (check_parents walks from every node: O(n^2) on a long chain)."""
    state = [0] * len(parents)          # 0 unseen, 1 on the current walk, 2 reaches the root
    for i in range(len(parents)):
        walk, v = [], i
        while v != -1 and state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = parents[v]
        if v != -1 and state[v] == 1:
            cyc = walk[walk.index(v):] + [v]
            raise MtError(f"invalid tree{where}: node {v} is on a cycle ({' -> '.join(map(str, cyc))})")
        for w in walk:
            state[w] = 2


def _meta_key(path, key: str, v, want: str) -> MtError:
    shown = "missing" if v is None else f"{_safe(repr(v))}"
    return MtError(f"'{path}' is damaged: {key} is {shown}, expected {want}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_run_meta(meta: dict, path) -> dict:
    """The keys of a tree run's meta.json the analysis reads, of the types and ranges the core writes:
    {parent, hosts, nprocs, instances, ncalls, recorded_calls, mpi}."""
    if meta.get("kind", "tree") != "tree":
        raise MtError(f"'{path}' is a run of kind '{_safe(meta.get('kind'))}', not of mpitempo tree")
    t = meta.get("tree")
    if not isinstance(t, dict):
        raise _meta_key(path, "'tree'", t, "an object (the tree of the run)")
    parent = t.get("parent")
    if not isinstance(parent, list) or not 1 <= len(parent) <= MAX_NPROCS or not all(_is_int(p) for p in parent):
        raise _meta_key(path, "tree.parent", parent, f"a list of 1..{MAX_NPROCS} integers (the parent of every rank, "
                                                     "-1 for the root)")
    n = len(parent)
    where = f" in '{path}'"
    roots = [i for i, p in enumerate(parent) if p == -1]
    for i, p in enumerate(parent):
        if p < -1 or p >= n or p == i:
            raise MtError(f"invalid tree{where}: rank {i} has parent {p} (allowed: another rank 0..{n - 1}, or -1 "
                          "for the root)")
    if len(roots) != 1:
        raise MtError(f"invalid tree{where}: {len(roots)} ranks have no parent (one root allowed)")
    _check_acyclic(parent, where)
    nprocs = meta.get("nprocs", n)
    if nprocs != n:
        raise _meta_key(path, "'nprocs'", nprocs, f"{n}, the number of ranks of tree.parent")
    hosts = t.get("host")
    if not isinstance(hosts, list) or len(hosts) != n or not all(isinstance(h, str) for h in hosts):
        raise _meta_key(path, "tree.host", hosts, f"a list of {n} host names (one per rank)")
    if not isinstance(t.get("spec"), str) or not t["spec"]:
        raise _meta_key(path, "tree.spec", t.get("spec"), "a non-empty string (the tree as given)")
    mpi = t.get("mpi_allreduce", False)
    if not isinstance(mpi, bool):
        raise _meta_key(path, "tree.mpi_allreduce", mpi, "true or false")
    w = meta.get("workload")
    if not isinstance(w, dict):
        raise _meta_key(path, "'workload'", w, "an object (the workload of the run)")
    if not isinstance(w.get("name"), str):
        raise _meta_key(path, "workload.name", w.get("name"), "a string (gsum or sor)")
    inst = t.get("instances", 2 if w["name"] == "gsum" else 1)
    if not _is_int(inst) or inst not in (1, 2):
        raise _meta_key(path, "tree.instances", inst, "1 or 2 (the tree instances the workload alternates)")
    ncalls = w.get("ncalls")
    if not _is_int(ncalls) or not 1 <= ncalls <= 10 ** 8:
        raise _meta_key(path, "workload.ncalls", ncalls, "an integer 1..100000000 (the calls of the run)")
    rec = w.get("recorded_calls")
    if rec is not None and (not _is_int(rec) or not 1 <= rec <= ncalls):
        raise _meta_key(path, "workload.recorded_calls", rec, f"an integer 1..{ncalls} (workload.ncalls)")
    msize = w.get("msize", 0)
    if not _is_int(msize) or msize < 0:
        raise _meta_key(path, "workload.msize", msize, "an integer >= 0 (bytes)")
    ov = meta.get("overhead") or {}
    if not isinstance(ov, dict):
        raise _meta_key(path, "'overhead'", ov, "an object")
    pct = ov.get("overhead_pct")
    if pct is not None and (isinstance(pct, bool) or not isinstance(pct, (int, float))):
        raise _meta_key(path, "overhead.overhead_pct", pct, "a number or null")
    return {"parent": parent, "hosts": hosts, "nprocs": n, "instances": inst, "ncalls": ncalls,
            "recorded_calls": rec, "mpi": mpi}


def _read_run_file(p: Path, root: Path, limit: int, why: str,
                   missing: str = "a complete tree run has meta.json, events.csv and links.csv") -> str:
    """The text of a file of a run directory: never through a link, never a FIFO or device, at most
    ``limit`` bytes (``why`` says where the limit comes from)."""
    import errno
    import os
    import stat

    from mpitempo.io.safefs import UnsafePath, check_not_link
    from mpitempo.io.safeload import decode_utf8

    st = check_not_link(p, root, want="any", verb="read")
    if st is None:
        raise MtError(f"'{p}' is missing: {missing}")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"cannot read '{p}': it is a directory, not a regular file")
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePath(f"refusing to read '{p}': it is a symbolic link") from None
        raise MtError(f"cannot read '{p}': {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            raise UnsafePath(f"cannot read '{p}': it is not a regular file")
        if fst.st_size > limit:
            raise MtError(f"'{p}' is {fst.st_size} bytes, more than the {limit} its rows can take ({why}): "
                          "refusing to read it")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise MtError(f"'{p}' is more than {limit} bytes ({why}): refusing to read it")
    return decode_utf8(data, f"'{p}'")


def _explain_row(line: str, columns) -> str:
    """Why one line is not a row of ``columns``."""
    import math

    fields = line.split(",")
    if line == "":
        return "the line is empty"
    if len(fields) != len(columns):
        return f"the line has {len(fields)} fields, expected {len(columns)} ({','.join(columns)})"
    for c, v in zip(columns, fields):
        if c in _INT_COLUMNS:
            if not re.fullmatch(_INT, v):
                return f"column {c} is '{_safe(v)}', expected an integer"
        elif not re.fullmatch(_NUM, v):
            try:
                bad = not math.isfinite(float(v))
            except ValueError:
                bad = False
            return (f"column {c} is '{_safe(v)}', expected a finite time in seconds" if bad else
                    f"column {c} is '{_safe(v)}', expected a number (seconds)")
    return "the line is not a row of this file"   # pragma: no cover - the regular expression and this agree


def parse_rows(text: str, p: Path, columns) -> "np.ndarray":
    """Rows x columns (float64) of a CSV file of a tree run: the exact header, every line a row of
    numbers, a newline at the end (a file cut short is refused, not read to its last complete line)."""
    import numpy as np

    head = ",".join(columns)
    if text == "":
        raise MtError(f"'{p}' is empty: expected the header '{head}' and one row per event")
    if not text.endswith("\n"):
        n = text.count("\n") + 1
        raise MtError(f"'{p}':{n}: the last line has no newline: the file is cut short (truncated)")
    lines = text[:-1].split("\n")
    if lines[0] != head:
        got = lines[0].split(",")
        if sorted(got) == sorted(columns):
            raise MtError(f"'{p}':1: header has the columns in another order ('{_safe(lines[0])}', expected '{head}')")
        raise MtError(f"'{p}':1: header is '{_safe(lines[0])}', expected '{head}'")
    rx = _ROW_RE[tuple(columns)]
    for i, line in enumerate(lines[1:]):
        if not rx.fullmatch(line):
            raise MtError(f"'{p}':{i + 2}: {_explain_row(line, columns)}")
    if len(lines) == 1:
        return np.zeros((0, len(columns)))
    a = np.array(",".join(lines[1:]).split(","), dtype=float).reshape(len(lines) - 1, len(columns))
    for j, c in enumerate(columns):
        if c in _INT_COLUMNS:
            continue
        col = a[:, j]
        bad = ~np.isfinite(col) | (col < 0) | (col > MAX_TIME_S)
        if bad.any():
            k = int(np.argmax(bad))
            raise MtError(f"'{p}':{k + 2}: {c} is {lines[k + 1].split(',')[j]!r}, expected a finite time in seconds "
                          f"0..{MAX_TIME_S:.0e} (a clock reading of the run)")
    return a


def row_error(p, k: int, what: str) -> MtError:
    """The refusal of data row k (0-based, below the header) of file p: 'p':LINE: what."""
    return MtError(f"'{p}':{k + 2}: {what}")


def _first(mask) -> int:
    import numpy as np

    return int(np.argmax(mask))


def check_events(a, p: Path, m: dict) -> "np.ndarray":
    """Every row of events.csv within the run: ranks 0..n-1, calls of the run on their instance, one
    event per call and rank, every rank in every call, enter <= up <= down <= exit; returns the calls."""
    import numpy as np

    n, inst_n, ncalls = m["nprocs"], m["instances"], m["ncalls"]
    call, inst, rank = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), a[:, 2].astype(np.int64)

    bad = (rank < 0) | (rank >= n)
    if bad.any():
        k = _first(bad)
        raise row_error(p, k, f"rank {rank[k]} is not a rank of the run (allowed: 0..{n - 1}; meta.json: {n} ranks)")
    bad = (call < 0) | (call >= ncalls)
    if bad.any():
        k = _first(bad)
        raise row_error(p, k, f"call {call[k]} is not a call of the run (allowed: 0..{ncalls - 1}; meta.json workload.ncalls "
                    f"{ncalls})")
    bad = (inst < 0) | (inst >= inst_n) | (call % inst_n != inst)
    if bad.any():
        k = _first(bad)
        raise row_error(p, k, f"inst {inst[k]} for call {call[k]} (allowed: call % {inst_n} = {call[k] % inst_n}; the workload "
                    f"alternates {inst_n} tree instance(s))")
    for j, (x, y) in enumerate((("enter_s", "up_s"), ("up_s", "down_s"), ("down_s", "exit_s"))):
        bad = a[:, 3 + j] > a[:, 4 + j]
        if bad.any():
            k = _first(bad)
            raise row_error(p, k, f"{y} {a[k, 4 + j]:.9f} is before {x} {a[k, 3 + j]:.9f} (a rank's events are in the order "
                        "enter <= up <= down <= exit)")
    key = call * n + rank
    order = np.argsort(key, kind="stable")
    dup = np.nonzero(key[order][1:] == key[order][:-1])[0]
    if dup.size:
        k0, k = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise row_error(p, k, f"a second event of call {call[k]}, rank {rank[k]} (the first is on line {k0 + 2}; one event per "
                    "call and rank)")
    calls, counts = np.unique(call, return_counts=True)
    if calls.size == 0:
        raise MtError(f"'{p}' holds no events (only its header): a run records at least one call")
    short = np.nonzero(counts != n)[0]
    if short.size:
        c = int(calls[short[0]])
        have = set(rank[call == c].tolist())
        miss = next(r for r in range(n) if r not in have)
        raise MtError(f"'{p}': call {c} has events of {int(counts[short[0]])} of the {n} ranks (rank {miss} is "
                      "missing; every recorded call has one event per rank)")
    rec = m["recorded_calls"]
    if rec is not None and calls.size != rec:
        raise MtError(f"'{p}' holds events of {calls.size} calls, but meta.json workload.recorded_calls is {rec}")
    return calls


def check_links(a, p: Path, m: dict, calls) -> None:
    """Every row of links.csv: one per recorded call and child of the tree, with the parent of the tree,
    the call's instance and arrival/departure orders among the parent's children; none for MPI_Allreduce."""
    import numpy as np

    parent, n = np.asarray(m["parent"]), m["nprocs"]
    if m["mpi"]:
        if len(a):
            raise MtError(f"'{p}':2: a link row in a run of MPI_Allreduce (meta.json tree.mpi_allreduce): it has no "
                          "links (expected the header only)")
        return
    call, inst = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
    par, child = a[:, 2].astype(np.int64), a[:, 3].astype(np.int64)

    bad = (child < 0) | (child >= n)
    if bad.any():
        k = _first(bad)
        raise row_error(p, k, f"child {child[k]} is not a rank of the run (allowed: 0..{n - 1}; meta.json: {n} ranks)")
    bad = par != parent[child]
    if bad.any():
        k = _first(bad)
        want = "none: it is the root" if parent[child[k]] < 0 else str(parent[child[k]])
        raise row_error(p, k, f"parent {par[k]} of child {child[k]}, but the tree of meta.json gives it parent {want}")
    known = np.isin(call, calls)
    if not known.all():
        k = _first(~known)
        raise row_error(p, k, f"call {call[k]} has no events in events.csv (links are of recorded calls only)")
    bad = (inst < 0) | (call % m["instances"] != inst)
    if bad.any():
        k = _first(bad)
        raise row_error(p, k, f"inst {inst[k]} for call {call[k]} (allowed: call % {m['instances']} = "
                    f"{call[k] % m['instances']})")
    nkids = np.bincount(parent[parent >= 0], minlength=n)
    for j, c in ((6, "arrival_order"), (7, "departure_order")):
        o = a[:, j].astype(np.int64)
        bad = (o < 0) | (o >= nkids[par])
        if bad.any():
            k = _first(bad)
            raise row_error(p, k, f"{c} {o[k]} (allowed: 0..{nkids[par[k]] - 1}, the position among the {nkids[par[k]]} "
                        f"children of rank {par[k]})")
    key = call * n + child
    order = np.argsort(key, kind="stable")
    dup = np.nonzero(key[order][1:] == key[order][:-1])[0]
    if dup.size:
        k0, k = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise row_error(p, k, f"a second link of call {call[k]}, child {child[k]} (the first is on line {k0 + 2}; one row per "
                    "call and child)")
    want = calls.size * (n - 1)
    if len(a) != want:
        have = set(key.tolist())
        c, r = next((int(c), r) for c in calls for r in range(n) if parent[r] >= 0 and int(c) * n + r not in have)
        raise MtError(f"'{p}': call {c} has no link of child {r} ({len(a)} rows, expected {want}: one per recorded "
                      f"call and non-root rank)")


def load_run(d: Path, root: Path | None = None) -> dict:
    """A run directory -> {"meta", "events": {col: array}, "links": {col: array}} (numpy arrays),
    every file checked (see above); root: the directory the user named (d itself by default)."""
    from mpitempo.io.rundir import load_meta
    from mpitempo.io.safefs import check_not_link

    d = Path(d)
    root = d if root is None else Path(root)
    mp = d / "meta.json"
    if check_not_link(mp, root, want="any", verb="read") is None:
        raise MtError(f"'{mp}' is missing: not a complete tree run")
    meta = load_meta(mp)
    m = check_run_meta(meta, mp)
    rows = (m["recorded_calls"] or m["ncalls"]) * m["nprocs"]
    why = f"{rows} rows of meta.json's calls x ranks"
    ev_p, ln_p = d / "events.csv", d / "links.csv"
    ev_a = parse_rows(_read_run_file(ev_p, root, (rows + 1) * MAX_ROW_BYTES, why), ev_p, EVENTS_COLUMNS)
    calls = check_events(ev_a, ev_p, m)
    ln_a = parse_rows(_read_run_file(ln_p, root, (rows + 1) * MAX_ROW_BYTES, why), ln_p, LINKS_COLUMNS)
    check_links(ln_a, ln_p, m, calls)
    return {"meta": meta, "events": {c: ev_a[:, i] for i, c in enumerate(EVENTS_COLUMNS)},
            "links": {c: ln_a[:, i] for i, c in enumerate(LINKS_COLUMNS)}, "dir": str(d)}
