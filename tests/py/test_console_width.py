"""Console output fits the terminal and never drops data silently (docs/design.md, "Console output"):
the width is COLUMNS, else the terminal's, 100 columns only for a pipe or a file; a table too wide
wraps its text and headers, then prints in parts that repeat its naming columns, never a cut cell; a
column left out is named under the table; no markup escape (``\\[``) is visible; every --help reads
its defaults as values. Rendered at 80, 100 and 200 columns."""
from __future__ import annotations

import re

import pytest

from mpitempo.io.synthetic import make_campaign

WIDTHS = (80, 100, 200)


def widest(text: str) -> int:
    return max((len(ln.rstrip()) for ln in text.splitlines()), default=0)


# -- the width ---------------------------------------------------------------------------------------

def test_width_is_columns_then_terminal_then_100(monkeypatch):
    import shutil
    import sys

    from mpitempo.present import tables

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert tables.width() == 100 and tables.console().width == 100          # a pipe or a file
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: __import__("os").terminal_size((220, 50)))
    assert tables.width() == 220 and tables.console().width == 220          # a terminal: all of it
    monkeypatch.setenv("COLUMNS", "132")
    assert tables.width() == 132                                            # COLUMNS honoured
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert tables.width() == 132
    monkeypatch.setenv("COLUMNS", "wide")                                   # not a number: ignored
    assert tables.width() == 100


# -- tables --------------------------------------------------------------------------------------------

RANKS = 8
WAIT_COLS = [("pattern", "left"), ("call", "left"), ("total ms", "right")] + \
            [(f"rank {i} ms", "right") for i in range(RANKS)]
WAIT_ROWS = [["Late Sender", "MPI_Recv", "123.456"] + [f"{10 + i}.{i}45" for i in range(RANKS)],
             ["Wait at Barrier", "MPI_Barrier", "3.456"] + [f"0.{i}45" for i in range(RANKS)]]
SITE = "compute_halo_exchange_with_neighbours (/home/user/project/src/solver/halo.c:1234)"
SITE_COLS = [("pattern", "left"), ("call site", "left"), ("call", "left"), ("waits", "right"),
             ("total ms", "right"), ("mean ms", "right")]
SITE_ROWS = [["Late Sender", SITE, "MPI_Recv", "1234", "123.456", "0.100"],
             ["Late Receiver", "main (app.c:7)", "MPI_Send", "12", "0.456", "0.038"]]


def render(monkeypatch, capsys, cols, fn):
    monkeypatch.setenv("COLUMNS", str(cols))
    fn()
    return capsys.readouterr().out


def joined(text: str) -> str:
    """The text with the lines of each table cell put back together (wrapped cells are split)."""
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("cols", WIDTHS)
def test_wide_table_is_split_not_cut(monkeypatch, capsys, cols):
    from mpitempo.present.tables import print_fitted

    out = render(monkeypatch, capsys, cols,
                 lambda: print_fitted("wait states", WAIT_COLS, WAIT_ROWS, compact_rows=False, caption="per call"))
    assert widest(out) <= cols, out
    assert "…" not in out
    for row in WAIT_ROWS:
        for v in row[2:]:
            assert re.search(rf"(?<![\d.]){re.escape(v)}(?![\d.])", out), (v, out)   # numbers whole
    for i in range(RANKS):                   # headers wrap at their spaces ("rank 0" over "ms")
        assert f"rank {i}" in out, out
    parts = out.count("wait states")
    assert parts == (2 if cols == 80 else 1), out
    assert out.count("Late") == parts and out.count("Wait at") == parts, out    # every part names its rows
    assert "MPI_Barrier" in out and out.count("per call") == 1


@pytest.mark.parametrize("cols", WIDTHS)
def test_long_text_wraps_in_its_column(monkeypatch, capsys, cols):
    from mpitempo.present.tables import print_fitted

    out = render(monkeypatch, capsys, cols, lambda: print_fitted("wait states per call site", SITE_COLS, SITE_ROWS,
                                                                 compact_rows=False))
    assert widest(out) <= cols, out
    for word in SITE.split():              # words wrap whole; a word longer than 20 is folded, not cut
        assert (word in out) if len(word) <= 20 else (word[:20] in out and word[-8:] in out), (word, out)
    assert "MPI_Recv" in out and "MPI_Send" in out and "123.456" in out
    assert "0.038" in out and "1234" in out
    if cols >= len(SITE) + 60:
        assert SITE in out                 # room: on one line


@pytest.mark.parametrize("cols", WIDTHS)
def test_left_out_named_under_the_table(monkeypatch, capsys, cols):
    from mpitempo.present.tables import print_fitted

    columns = [("config", "left"), ("median", "right"), ("mean", "right"), ("std", "right"), ("note", "left")]
    rows = [[f"configuration-{i}-" + "x" * 30, f"{i}.123", f"{i}.456", f"{i}.789", "note " * 12] for i in range(3)]
    out = render(monkeypatch, capsys, cols,
                 lambda: print_fitted("t", columns, rows, drop_order=("std", "mean"), compact_rows=False))
    assert widest(out) <= cols
    lines = out.splitlines()
    said = [i for i, ln in enumerate(lines) if ln.startswith("not shown to fit")]
    if cols < 140:
        assert said and said[0] > max(i for i, ln in enumerate(lines) if "configuration-2" in ln), out
        assert f"not shown to fit {cols} columns: std" in out
    else:
        assert not said and "2.789" in out


def test_no_markup_escape_in_cells_headers_notes(monkeypatch, capsys):
    from mpitempo.present.tables import console, print_fitted, table

    def show():
        print_fitted("flags [x]", [("a [ns]", "left"), ("verdict", "left")],
                     [["[bold]v[/bold]", "+4.5% [need more runs]"], ["b", "slower [flagged: shared_cpu]"]],
                     compact_rows=False, caption="caption [y]")
        t = table("timers [z]", [("resolution [ns]", "right")])
        t.add_row("1.0")
        console().print(t, markup=True)      # text, whether printed with markup or not
    out = render(monkeypatch, capsys, 100, show)
    assert "\\[" not in out, out
    for s in ("flags [x]", "a [ns]", "[bold]v[/bold]", "[need more runs]", "[flagged: shared_cpu]", "caption [y]",
              "timers [z]", "resolution [ns]"):
        assert s in out, (s, out)


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    d = tmp_path_factory.mktemp("width")
    return make_campaign(d / "c", {"mpich-default": 1.0, "mpich-recursive-doubling": 1.07,
                                   "ompi-tuned-ring-segmented": 1.01},
                         runs=3, ops=("allreduce", "alltoall"), msizes=(8, 65536), nrep=20, seed=5)


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("cmd", [["summary"], ["compare"], ["summary", "--per-run"], ["info", "--diff"]])
def test_commands_fit(cli, camp, monkeypatch, cmd, cols):
    monkeypatch.setenv("COLUMNS", str(cols))
    code, out, err = cli(*cmd, camp)
    assert code == 0, err
    assert widest(out) <= cols, out
    assert "\\[" not in out and "…" not in out, out
    if cmd[0] != "info":
        assert "ompi-tuned-ring-segmented" in out and "allreduce" in out and "alltoall" in out
    if cmd == ["compare"]:
        assert "[need more runs]" in joined(out) or "[" in out
    lines = out.splitlines()
    for i, ln in enumerate(lines):     # a column left out is said under its table, not above it
        if ln.startswith("not shown to fit"):
            assert any("───" in x for x in lines[:i]), out


# -- --help ----------------------------------------------------------------------------------------------

def _commands():
    from mpitempo.cli import cli as group

    return [None, *group.list_commands(None)]


DEFAULT = re.compile(r"\[default: ([^\]]*)\]")


@pytest.mark.parametrize("cols", WIDTHS)
def test_every_help_reads_well(cols):
    from click.testing import CliRunner

    from mpitempo.cli import cli as group

    for name in _commands():
        r = CliRunner(env={"COLUMNS": str(cols)}).invoke(group, [name, "--help"] if name else ["--help"],
                                                         terminal_width=cols)
        assert r.exit_code == 0, (name, r.output)
        out = r.output
        assert widest(out) <= cols, (name, out)
        assert "\\[" not in out, (name, out)
        flat = re.sub(r"\s+", " ", out)      # a default wrapped over two lines
        assert "None" not in flat.replace("--no-", ""), (name, out)
        for d in DEFAULT.findall(flat):
            assert d.strip(), (name, out)
            # a unit given twice ('10us s'), or one after a value that has its own
            assert not re.search(r"\d(ns|us|µs|ms|s|%|B|K|M|G)\s+(ns|us|µs|ms|s|%|B)\b", d), (name, d)


def test_help_checks_can_fail():
    assert re.search(r"\d(ns|us|µs|ms|s|%|B|K|M|G)\s+(ns|us|µs|ms|s|%|B)\b", "10us s")
    assert DEFAULT.findall("x [default: 1800; x<=None] y") == ["1800; x<=None"]


# -- every table of tests/py/test_tables_fit.py (there at 100 columns), at 80 and 200 --------------------

def _renderers():
    import json

    from test_tables_fit import DATA, _pingpong_analysis

    def clocks():
        from mpitempo.present.clocks import clocks_table
        rows = [{"algorithm": a, "wait_s": w, "mpiruns": 10, "sync_duration_s": 0.0005, "max_abs_offset_s": 3e-8 * (i + 1),
                 "worst_max_abs_offset_s": 5.5e-8, "median_abs_offset_s": 2e-8, "max_abs_drift_ppm": 0.013 * i}
                for i, a in enumerate(["skampi", "hca3", "h2hca:skampi/hca3"]) for w in (0, 1)]
        clocks_table(rows, "clock sync on 8 ranks, 10 mpirun(s), medians over mpiruns")

    def pingpong():
        from mpitempo.present import pingpong as pp
        a = _pingpong_analysis()
        for lines in (pp.rate_curve_lines(a), pp.compare_lines(a), pp.bidir_lines(a)):
            print(pp._fit(lines), end="")

    def barrier():
        from mpitempo.present.barrier import print_study
        print_study(json.loads((DATA / "barrier.json").read_text()))

    def tree():
        from mpitempo.present.tree import text
        res = json.loads((DATA / "tree-analysis.json").read_text())
        runs = [{"mpi": False, "config": c, "calls": 30, "workload": {"name": "gsum"}} for c in ("binomial", "flat")]
        print(text(runs, res), end="")

    def tune():
        from mpitempo.present.tune import print_rows
        rows = [{"op": "allreduce", "msize": 8 << i, "nprocs": 4, "median_default_s": 8.69e-7 * (i + 1),
                 "chosen": "recursive_doubling", "median_chosen_s": 7.1e-7 * (i + 1), "gain_pct": -12.3,
                 "gain_ci_lo_pct": -15.2, "gain_ci_hi_pct": -9.8, "p_value": 0.0031, "oversubscribed": False,
                 "why_default": "fastest other: pipelined_tree +3.1% (Holm p=1)"} for i in range(3)]
        print_rows(rows, "mpich: default vs chosen per size")

    def imbalance():
        from mpitempo.present.imbalance import print_table
        res = [{"variant": v, "runs": 10, "n": 500, "median_skew_s": 1.2e-6, "mean_skew_s": 1.5e-6,
                "p95_skew_s": 4.1e-6, "max_skew_s": 1.234e-3, "per_rank": [{"rank": 1, "last_to_exit_fraction": 0.4}]}
               for v in ("base", "MPIR_CVAR_BARRIER_INTRA_ALGORITHM=recexch")]
        print_table(res, "barrier", 4, "hca3")

    return {"clocks": clocks, "pingpong": pingpong, "barrier": barrier, "tree": tree, "tune": tune,
            "imbalance": imbalance}


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("name", ["clocks", "pingpong", "barrier", "tree", "tune", "imbalance"])
def test_every_table_fits(monkeypatch, capsys, name, cols):
    out = render(monkeypatch, capsys, cols, _renderers()[name])
    assert out.strip() and widest(out) <= cols, out
    assert "\\[" not in out and "…" not in out, out
