"""stats/ is the layer of pure functions: it imports no DuckDB and nothing from analysis/, io/,
present/ or the commands (issue 10, point 4)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mpitempo

PKG = Path(mpitempo.__file__).parent
STATS = PKG / "stats"
FORBIDDEN = ("duckdb", "mpitempo.analysis", "mpitempo.io", "mpitempo.present", "mpitempo.runner",
             "mpitempo.kinds", "mpitempo.cli", "mpitempo.cmd_")
# every import of stats/ is checked; no exceptions
SHIM = ("", "")  # no exception left


def _imports(path: Path) -> list[str]:
    """Absolute names of every import in the file (module level and inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # relative: resolve against mpitempo.stats
                base = ["mpitempo", "stats"][: max(0, 3 - node.level)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(mod)
            if mod in ("mpitempo", "mpitempo.stats"):
                out += [f"{mod}.{a.name}" for a in node.names]
    return out


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f if f.endswith("_") else f + ".") or
               (f.endswith("_") and name.startswith(f)) for f in FORBIDDEN)


def test_stats_imports_only_pure_modules():
    bad = []
    for f in sorted(STATS.glob("*.py")):
        for name in _imports(f):
            if _forbidden(name) and (f.name, name) != SHIM:
                bad.append(f"{f.name}: {name}")
    assert not bad, "stats/ must stay pure: " + ", ".join(bad)


def test_forbidden_names_are_detected():
    assert _forbidden("duckdb") and _forbidden("mpitempo.analysis.summary") and _forbidden("mpitempo.cmd_summary")
    assert not _forbidden("mpitempo.errors") and not _forbidden("mpitempo.stats.describe")
    assert not _forbidden("duckdbx")


def test_importing_stats_loads_no_duckdb():
    mods = sorted(f"mpitempo.stats.{f.stem}" for f in STATS.glob("*.py") if f.stem != "__init__")
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods) +
            "bad = [m for m in sys.modules if m == 'duckdb' or m.startswith(('mpitempo.analysis', 'mpitempo.io', "
            "'mpitempo.present'))]\nassert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_no_module_imports_a_command_module():
    """Dependencies point one way: only cli.py reaches the cmd_* modules."""
    bad = []
    for f in sorted(PKG.rglob("*.py")):
        if f.name == "cli.py":
            continue
        for name in _imports(f):
            if name.startswith("mpitempo.cmd_"):
                bad.append(f"{f.relative_to(PKG)}: {name}")
    assert not bad, bad
