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

    try:
        d = tomllib.loads(load_toml_text(path, what=f"tree file '{path}'"))
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"tree file '{path}' is not valid TOML: {e}") from None
    where = f" in '{path.name}'"
    bad = sorted(set(d) - TOML_KEYS)
    if bad:
        raise MtError(f"unknown key '{bad[0]}' in tree file '{path}' (allowed: {', '.join(sorted(TOML_KEYS))})")
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

def load_run(d: Path) -> dict:
    """A run directory -> {"meta", "events": {col: array}, "links": {col: array}} (numpy arrays)."""

    import numpy as np

    from mpitempo.io.rundir import load_meta

    meta = load_meta(d / "meta.json")

    def read(name):
        f = d / name
        with open(f) as fh:
            cols = fh.readline().strip().split(",")
            empty = not fh.readline()
        a = np.zeros((0, len(cols))) if empty else np.loadtxt(f, delimiter=",", skiprows=1, ndmin=2)
        return {c: a[:, i] for i, c in enumerate(cols)}

    return {"meta": meta, "events": read("events.csv"), "links": read("links.csv"), "dir": str(d)}
