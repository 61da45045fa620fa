"""No library-name switch outside mpitempo/mpilib/ (docs/design.md, "The MPI library"): what differs
between MPI libraries is asked from the library object (``mpilib.of(build)``), so a new library is one
module. An AST scan of python/mpitempo, like tests/py/test_layers.py: a comparison with a library's name
(``flavour == "mpich"``, ``b.flavour in ("openmpi", "smpi")``, ``match`` cases) or an index by one
(``table["openmpi"]``) anywhere outside mpilib/ fails."""
from __future__ import annotations

import ast
from pathlib import Path

import mpitempo
from mpitempo import mpilib

PKG = Path(mpitempo.__file__).parent
NAMES = set(mpilib.NAMES)


def _names_in(node) -> list[str]:
    """Library names held by a constant or a literal tuple/list/set of constants."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in NAMES]
    return []


def switches(source: str) -> list[tuple[int, str]]:
    """(line, library name) of every comparison with, case on, or index by a library's name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                out += [(node.lineno, n) for n in _names_in(side)]
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    out += [(node.pattern.lineno, n) for n in _names_in(sub.value)]
        elif isinstance(node, ast.Subscript):
            out += [(node.lineno, n) for n in _names_in(node.slice)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args):
            out += [(node.lineno, n) for n in _names_in(node.args[0])]
    return out


def test_no_library_switch_outside_mpilib():
    bad = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG)
        if rel.parts[0] == "mpilib":
            continue
        bad += [f"{rel}:{line}: {name!r}" for line, name in switches(p.read_text())]
    assert not bad, ("library-name switches outside mpitempo/mpilib/ (ask mpilib.of(build) instead; "
                     "docs/design.md, \"The MPI library\"):\n" + "\n".join(bad))


def test_the_scan_can_fail():
    src = '''
if b.flavour == "mpich":
    pass
x = "openmpi" != y
ok = flavour in ("smpi", "other")
t = table["openmpi"]
u = table.get("mpich")
match f:
    case "smpi":
        pass
name = "mpich"          # a value, not a switch
sel = selector or "mpich"
'''
    assert switches(src) == [(2, "mpich"), (4, "openmpi"), (5, "smpi"), (6, "openmpi"), (7, "mpich"),
                             (9, "smpi")]


def test_every_library_answers_the_contract():
    """Each library module fills the contract's names, and detection finds each by its own launcher's text."""
    texts = {"openmpi": "mpirun (Open MPI) 5.0.3", "mpich": "HYDRA build details:\n    Version: 4.2.0",
             "smpi": "This program was linked against SimGrid 3.35.0"}
    assert set(texts) == NAMES
    for lib in mpilib.LIBRARIES:
        assert mpilib.detect(texts[lib.name]) == lib.name
        assert mpilib.of(lib.name) is lib and lib.lib_globs and lib.rules_file
    assert mpilib.detect("some other launcher 1.0") == "unknown" and mpilib.of("unknown") is mpilib.UNKNOWN
