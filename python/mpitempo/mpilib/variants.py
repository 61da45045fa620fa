"""Algorithm variants of an MPI library's collectives and the campaigns that compare them (docs/design.md,
"The MPI library"): the library's own catalogue (``catalogue``, ``discover``: from ompi_info, mpivars or
SMPI's selectors, in the library's module), a user's ``--variants`` and ``--algorithms``, and the
variables of the user's environment that change the selection. A variant is a name plus the environment
that selects it.
"""
from __future__ import annotations

import difflib
import os
import re

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.mpilib.base import TUNABLE_OPS, Algorithm, Catalogue, Variant  # noqa: F401 (the types of the catalogue)
from mpitempo.safe_text import safe


def discover(build, op: str, np: int, smpi_selector: str = "mpich") -> list[Variant]:
    """The library's own algorithm variants of op, plus its default selection."""
    out = mpilib.of(build).discover(build, op, np, smpi_selector)
    if len(out) == 1:
        raise MtError(f"the MPI library lists no algorithms for {op}; give --variants explicitly")
    return out


def selection_env(flavour: str, environ=None) -> dict[str, str]:
    """The variables of ``environ`` (the process environment) that change the collective-algorithm
    selection of a library of this flavour."""
    return mpilib.of(flavour).selection_env(os.environ if environ is None else environ)


def selection_env_note(flavour: str, environ=None) -> str | None:
    """A note for results that compare against the library's default, when the environment changes it."""
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
            close = difflib.get_close_matches(name.lower(), ["auto", "none", "default"], n=1, cutoff=0.5)
            if close:
                where = f"'{spec}'" if spec.strip() == name else f"'{name}' in '{spec}'"
                raise MtError(f"invalid --variants {where}: not a keyword; did you mean '{close[0]}'? (a variant "
                              "name without VAR=VALUE settings would run the library's default)")
        out.append(Variant(name, env))
    if not out:
        raise MtError(f"invalid --variants '{spec}': expected NAME:VAR=VAL[,VAR=VAL][;NAME2:...]")
    return out




def catalogue(build, ops, np_list=(2,), use_tool: bool = True, smpi_selector: str = "mpich") -> Catalogue:
    """The library's selectable algorithms of ``ops`` (discovered from the installed library, else the
    fallback table). Raises MtError for a library without algorithm selection."""
    ops = list(ops)
    bad = [o for o in ops if o not in TUNABLE_OPS]
    if bad:
        raise MtError(f"unknown op '{bad[0]}' for tune (allowed: {', '.join(TUNABLE_OPS)})")
    lib = mpilib.of(build)
    cat = lib.catalogue(build, ops, np_list, use_tool, smpi_selector)
    for op in ops:
        if not cat.algorithms.get(op):
            raise MtError(f"the {build.flavour} library lists no selectable algorithms for {op}")
    return cat


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
