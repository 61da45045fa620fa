"""The Python layers of docs/design.md, enforced over the AST of python/mpitempo (like
tests/check_layers.sh for the C core): every import of an mpitempo module, at module level and inside
functions, points to the same layer or a lower one; no import circle between modules; the heavy
third-party modules stay out of `mpitempo --help`; imports of mpitempo modules inside functions only
where the allow-list below still counts them (it may only shrink)."""
from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import mpitempo

PKG = Path(mpitempo.__file__).parent

# Lowest first. A module belongs to the layer of its longest matching name (a package name matches
# the package and everything in it). The layers and what each may import: docs/design.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # errors, text made safe for a terminal, and the process guard every launch goes through (the
    # watchdog imports no mpitempo module; build arms it with the core it found)
    ("base", ("mpitempo", "mpitempo.errors", "mpitempo.safe_text", "mpitempo.runner.watchdog")),
    ("stats", ("mpitempo.stats",)),
    # the MPI library: one module per library (mpilib/), the build of the C core for it (build.py)
    ("mpilib", ("mpitempo.build", "mpitempo.mpilib")),
    # files and formats; the kinds registry (kinds/__init__.py, kinds/base.py) is a table the campaign
    # parser reads: the kind modules themselves are loaded by name (importlib), one layer up
    ("io", ("mpitempo.io", "mpitempo.kinds", "mpitempo.kinds.base")),
    ("kinds", ("mpitempo.tracer", *(f"mpitempo.kinds.{p.stem}" for p in (PKG / "kinds").glob("*.py")
                                    if p.stem not in ("__init__", "base")))),
    ("analysis", ("mpitempo.analysis", "mpitempo.history")),   # history/: results over time, read with analysis
    ("runner", ("mpitempo.runner",)),
    ("present", ("mpitempo.present",)),
    ("commands", ("mpitempo.options", "mpitempo.cmd_")),
    ("cli", ("mpitempo.cli",)),
]

# Third-party modules too heavy to load for `mpitempo --help`: imported inside the functions that use
# them (or in modules the commands load only when they run), never at the top of a module `--help` loads.
LAZY = ("duckdb", "numpy", "scipy", "matplotlib", "pyarrow", "pandas", "hypothesis")


def layer_of(mod: str) -> int:
    best, where = -1, None
    for i, (_, pats) in enumerate(LAYERS):
        for p in pats:
            hit = mod == p or mod.startswith(p + ".") or (p.endswith("_") and mod.startswith(p))
            if hit and len(p) > best:
                best, where = len(p), i
    assert where is not None, f"{mod} is in no layer: add it to LAYERS (and to docs/design.md)"
    return where


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODS = modules()


def imports(mod: str) -> list[tuple[str, int, bool]]:
    """(imported mpitempo module, line, inside a function) of every import of ``mod``."""
    path = MODS[mod]
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []

    def visit(node, in_fn):
        for ch in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(ch, ast.Import):
                out.extend((a.name, ch.lineno, in_fn) for a in ch.names if a.name.split(".")[0] == "mpitempo")
            elif isinstance(ch, ast.ImportFrom):
                if ch.level:
                    base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    base = base[: len(base) - ch.level + 1]
                    target = ".".join(base + ([ch.module] if ch.module else []))
                else:
                    target = ch.module or ""
                if target.split(".")[0] != "mpitempo":
                    continue
                subs = [f"{target}.{a.name}" for a in ch.names if f"{target}.{a.name}" in MODS]
                # `from pkg import submodule` imports the submodule (and the package's __init__)
                out.extend((t, ch.lineno, in_fn) for t in (subs or [target]))
                if subs and len(subs) < len(ch.names):
                    out.append((target, ch.lineno, in_fn))
            visit(ch, fn)

    visit(tree, False)
    return out


def edges():
    for m in MODS:
        for t, line, in_fn in imports(m):
            if t in MODS or t == "mpitempo":
                yield m, t, line, in_fn


def test_every_module_has_a_layer():
    for m in MODS:
        layer_of(m)


def test_no_import_points_up():
    bad = [f"{MODS[m].relative_to(PKG.parent)}:{line} ({LAYERS[layer_of(m)][0]}) imports {t} "
           f"({LAYERS[layer_of(t)][0]})" for m, t, line, _ in edges() if layer_of(t) > layer_of(m)]
    assert not bad, "imports against the layer order (docs/design.md):\n" + "\n".join(bad)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_circle():
    graph: dict[str, set[str]] = {}
    for m, t, _, _ in edges():
        # a package's __init__ is imported with any of its submodules: only its own imports count
        if t != m and not m.startswith(t + "."):
            graph.setdefault(m, set()).add(t)
    assert not cycles(graph), cycles(graph)


def test_the_checks_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("mpitempo.io.campaign") < layer_of("mpitempo.kinds.bench") < layer_of("mpitempo.runner.execute")
    assert layer_of("mpitempo.kinds") == layer_of("mpitempo.io.campaign") < layer_of("mpitempo.kinds.bench")
    assert layer_of("mpitempo.kinds.base") == layer_of("mpitempo.io.params")
    assert layer_of("mpitempo.cmd_run") == layer_of("mpitempo.options") > layer_of("mpitempo.present.tables")


# Imports of mpitempo modules inside functions still left, per file. A module-level import is the
# rule (the layer order keeps it free of circles); this count may only go down: when you move one
# to the top of its file, lower the number here.
FUNCTION_LEVEL: dict[str, int] = {
    "analysis/barrier.py": 2, "analysis/flags.py": 2, "analysis/imbalance.py": 1, "analysis/perrun.py": 2,
    "analysis/store.py": 7, "analysis/summary.py": 2, "analysis/trace.py": 3, "analysis/trace_campaign.py": 4,
    "analysis/trace_sites.py": 2, "analysis/tune.py": 1, "build.py": 1, "cli.py": 2, "cmd_barrier.py": 16,
    "cmd_clocks.py": 5, "cmd_compare.py": 3, "cmd_drift.py": 10, "cmd_history.py": 5, "cmd_imbalance.py": 12,
    "cmd_info.py": 6, "cmd_pingpong.py": 13, "cmd_report.py": 13, "cmd_run.py": 10, "cmd_store.py": 14,
    "cmd_summary.py": 6, "cmd_trace.py": 13, "cmd_tree.py": 20, "cmd_tune.py": 50, "cmd_which.py": 2,
    "history/analyze.py": 1, "history/store.py": 8, "io/campaign.py": 9, "io/columnar.py": 4, "io/kindcsv.py": 4,
    "io/params.py": 2, "io/perrank.py": 1, "io/pingpong.py": 5, "io/platform.py": 2, "io/rundir.py": 7,
    "io/toml_schema.py": 1, "io/tree.py": 7, "kinds/__init__.py": 2, "kinds/base.py": 1,
    "kinds/bench.py": 1, "kinds/clocks.py": 4, "kinds/logp.py": 3, "kinds/trace.py": 7, "options.py": 3,
    "present/barrier.py": 2, "present/clocks.py": 1, "present/definitions.py": 1, "present/derived.py": 2,
    "present/history.py": 4, "present/osu.py": 4, "present/pingpong_pairs.py": 8, "present/plots/clocks.py": 1,
    "present/plots/trace.py": 2, "present/processing.py": 9, "present/report.py": 3, "present/studies.py": 2,
    "present/summary.py": 4, "present/trace.py": 6, "present/tree.py": 5, "present/tune.py": 1,
    "runner/adaptive.py": 4, "runner/barrier_study.py": 11, "runner/dvfs.py": 1, "runner/estimate.py": 4,
    "runner/execute.py": 15, "runner/launch.py": 3, "runner/lock.py": 1, "runner/preflight.py": 3,
    "runner/progress.py": 1, "runner/resume.py": 9, "runner/slurm.py": 2, "runner/tuneplan.py": 2,
    "stats/processing.py": 1, "stats/strata.py": 1, "tracer.py": 2,
}


def test_function_level_imports_only_shrink():
    counts = Counter(str(MODS[m].relative_to(PKG)) for m, _, _, in_fn in edges() if in_fn)
    grown = {f: (n, FUNCTION_LEVEL.get(f, 0)) for f, n in counts.items() if n > FUNCTION_LEVEL.get(f, 0)}
    assert not grown, ("imports of mpitempo modules inside functions (file: (now, allowed)); put them at the "
                       f"top of the file: {grown}")
    stale = {f: (counts.get(f, 0), n) for f, n in FUNCTION_LEVEL.items() if counts.get(f, 0) < n}
    assert not stale, f"fewer function-level imports than allowed: lower FUNCTION_LEVEL to (now): {stale}"


def test_help_loads_no_heavy_module():
    """`mpitempo --help` and every command's --help (in one process: what one loads stays loaded)."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom mpitempo.cli import cli\n"
            "for name in [None, *cli.list_commands(None)]:\n"
            "    r = CliRunner().invoke(cli, [name, '--help'] if name else ['--help'])\n"
            "    assert r.exit_code == 0, (name, r.output)\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {LAZY!r})\nassert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
