"""Strings from campaign files never reach a terminal raw (safe_text.py).

A hostile campaign directory carries escape sequences that retitle (ESC ] 0 ; ... BEL) or clear
(ESC [ 2 J) the terminal, and U+202E RIGHT-TO-LEFT OVERRIDE, in its configuration name, hostnames,
MPI library string and a value that produces a warning (a governor, an oversubscribed run). Each
command is run as a user runs it (a child process, its stdout and stderr captured as bytes) and its
output is scanned for any C0 or C1 control character other than newline and tab, and for Unicode
format characters.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.markup import escape

from mpitempo.io.synthetic import make_campaign
from mpitempo.safe_text import SafeConsole, safe, safe_block

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
RLO = "\u202e"
CONFIG = f"a{CLEAR}{RLO}b"
# a control or format character, other than newline and tab, in the decoded output
BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                 "\ufff9-\ufffb]")


def _bad_chars(data: bytes) -> list[str]:
    text = data.decode("utf-8", "surrogateescape")
    return sorted({repr(c) for c in BAD.findall(text)} | {repr(c) for c in text if 0xDC80 <= ord(c) <= 0xDCFF})


def test_safe_escapes_controls_and_format_characters():
    assert safe(f"x{TITLE}y{CLEAR}z{RLO}") == "x\\x1b]0;pwned\\x07y\\x1b[2Jz\\u202e"
    assert safe("a\nb\tc\rd\x00\x7f\x85\u200b\u2066\U000e0041") == "a\\x0ab\\x09c\\x0dd\\x00\\x7f\\x85\\u200b\\u2066\\U000e0041"
    assert safe_block("a\nb\tc\x1b") == "a\nb\tc\\x1b"
    assert safe("grüße, 東京, Ω, a b") == "grüße, 東京, Ω, a b"     # letters of any script are kept
    assert safe("\udcff") == "\\udcff"      # an undecodable byte (surrogateescape) prints instead of failing
    assert safe(42) == "42"


def test_safe_console_escapes_keeps_styles_and_refuses_markup_from_values():
    """Hostile values: an escape sequence, markup that hides text ([conceal]) or makes a link, and
    markup that does not parse ([/x]): printed as text, never interpreted."""
    import io

    buf = io.StringIO()
    con = SafeConsole(file=buf, force_terminal=True, color_system="standard", width=200, highlight=False)
    con.print(f"config {CLEAR}x [conceal]hidden[/conceal] [link=http://e.x]l[/link] [/x]")
    con.print(f"[bold]warning:[/bold] {escape(safe('[conceal]' + TITLE))}", markup=True)
    out = buf.getvalue()
    assert "\\x1b[2J" in out and "[conceal]hidden[/conceal]" in out and "[link=http://e.x]" in out and "[/x]" in out
    assert "\x1b]" not in out and "\x1b[2J" not in out and "\x1b[8m" not in out    # no OSC, no clear, no conceal
    assert "\x1b[1m" in out and "[conceal]\\x1b]0;pwned\\x07" in out                 # rich's own bold is kept


@pytest.fixture
def hostile(tmp_path):
    """A campaign of two configurations, one named with a clear-screen sequence and U+202E, whose
    meta.json strings carry escape sequences (hosts, library, governor) and whose runs are
    oversubscribed (a warning naming the configuration)."""
    meta = {"mpi": {"library": f"MPICH{TITLE} 4.2{RLO}", "version": f"4.2{CLEAR}"},
            "ranks": [{"rank": r, "host": f"node{TITLE}{r}"} for r in range(2)],
            "machine": {"frequency_governor": f"power{CLEAR}save"},
            "scheme": {"name": "barrier", "oversubscribed": True},
            "launcher": {"argv": ["mpiexec", f"-n{TITLE}", "2"]}, "env": {"MPIR_CVAR_X": f"1{RLO}"}}
    root = make_campaign(tmp_path / "camp", configs={CONFIG: 1.0, "b": 1.05}, runs=6, ops=("allreduce",),
                         msizes=(8, 1024), nrep=30, meta={CONFIG: meta, "b": meta}, name=f"c{TITLE}")
    return root


def _run(*args, cwd=None):
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", *map(str, args)], capture_output=True, cwd=cwd,
                       timeout=300, env=dict(os.environ, COLUMNS="200"))
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("argv", [
    pytest.param(["summary", "{d}"], id="summary"),
    pytest.param(["summary", "{d}", "--per-run"], id="summary-per-run"),
    pytest.param(["summary", "{d}", "--markdown"], id="summary-markdown"),
    pytest.param(["summary", "{d}", "--csv"], id="summary-csv"),
    pytest.param(["compare", "{d}", "--by", "config", "--allow-oversubscribed"], id="compare"),
    pytest.param(["info", "--diff", "{d}"], id="info-diff"),
    pytest.param(["info", "--diff", "{d}", "--all"], id="info-diff-all"),
    pytest.param(["report", "{d}", "-o", "{t}/r.html"], id="report"),
    pytest.param(["export", "{d}", "--osu", "{t}/osu"], id="export-osu-files"),
    pytest.param(["export", "{d}", "--osu", "-"], id="export-osu-stdout"),
    pytest.param(["export", "{d}", "--imb", "-"], id="export-imb-stdout"),
])
def test_no_control_character_reaches_the_terminal(hostile, tmp_path, argv):
    """Hostile input: escape sequences and U+202E in a campaign's configuration name, hostnames, MPI
    library string, governor, launcher, environment and campaign name (see ``hostile``). No raw
    control or format character in stdout or stderr, nor in the files read in terminals (OSU text)."""
    args = [a.format(d=hostile, t=tmp_path) for a in argv]
    code, out, err = _run(*args)
    assert code in (0, 1), err.decode()
    assert not _bad_chars(out), (_bad_chars(out), out.decode(errors="replace")[:3000])
    assert not _bad_chars(err), (_bad_chars(err), err.decode(errors="replace")[:3000])
    assert b"Traceback" not in err
    if argv[0] == "report":
        html = (tmp_path / "r.html").read_bytes()
        assert not _bad_chars(html.replace(b"\r", b""))
        assert b"a\\x1b[2J\\u202eb" in html    # the configuration is named, escaped
    if argv[:3] == ["export", "{d}", "--osu"] and argv[3] != "-":
        files = list((tmp_path / "osu").iterdir())
        assert files
        for f in files:
            assert not _bad_chars(f.read_bytes()), f
    if argv[0] in ("summary", "compare"):
        assert b"a\\x1b[2J\\u202eb" in out    # shown escaped, not dropped


def test_error_quoting_file_content_is_escaped(hostile):
    """Hostile input: the configuration name is quoted by a one-line error (compare refuses the
    oversubscribed runs and names their levels): it is shown escaped."""
    code, out, err = _run("compare", hostile, "--by", "config")
    assert code == 2 and err.count(b"\n") == 1, err
    assert not _bad_chars(err) and not _bad_chars(out), err
    assert b"a\\x1b[2J\\u202eb" in err


def test_json_output_stays_exact(hostile):
    """--json keeps the strings as they are in the files (JSON escapes control characters itself)."""
    code, out, err = _run("summary", hostile, "--json")
    assert code == 0, err
    assert not _bad_chars(out)
    assert CONFIG in {r["config"] for r in json.loads(out)}


def test_markup_in_names_is_shown_as_text(tmp_path):
    """Hostile input: configuration names that are rich markup (`[conceal]` hides what follows,
    `[red]y\\` ends in an escape): summary and compare show them as they are, in table cells and in
    the caption that names A and B."""
    d = make_campaign(tmp_path / "camp", configs={"[conceal]x": 1.0, "[red]y\\": 1.1}, runs=6, ops=("allreduce",),
                      msizes=(8,), nrep=20)
    code, out, err = _run("compare", d, "--by", "config")
    assert code == 0, err
    assert b"A = [conceal]x" in out and b"[red]y\\" in out, out
    code, out, err = _run("summary", d)
    assert code == 0 and b"[conceal]x" in out and b"[red]y\\" in out, out


def test_newline_in_a_name_cannot_forge_a_line(tmp_path):
    """Hostile input: a configuration name holding a newline and a fake mpitempo line: shown as \\x0a
    inside its cell, never as a line of its own."""
    d = make_campaign(tmp_path / "camp", configs={"x\nmpitempo: all runs OK": 1.0, "b": 1.1}, runs=6,
                      ops=("allreduce",), msizes=(8,), nrep=20)
    for argv in (["summary", d], ["compare", d, "--by", "config"], ["info", "--diff", d]):
        code, out, err = _run(*argv)
        assert code == 0, err
        assert not [ln for ln in (out + err).splitlines() if ln.lstrip().startswith(b"mpitempo: all runs OK")], out
        assert b"x\\x0ampitempo: all runs OK" in out, out


# -- hostile pass D: every plot shows names from files as text ---------------------------------------

NAME = "x$\\nosuchcmd{$y\x1b[2J"     # mathtext that does not parse, and ESC


def _texts(fig) -> list[str]:
    """Every text drawn in fig (tick labels as drawn), after a draw."""
    from matplotlib.text import Text

    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(Text)] + [
        lab.get_text() for ax in fig.axes for lab in (*ax.get_xticklabels(), *ax.get_yticklabels())]


def _check_file(path) -> None:
    assert path.stat().st_size > 0


@pytest.mark.parametrize("plot", ["clocks", "tune", "imbalance", "pingpong", "trace", "barrier", "tree",
                                  "pingpong_pairs"])
def test_plots_show_names_as_text(plot, tmp_path):
    """Configuration, algorithm, op, variant and host names and trace call sites reach plot titles,
    legends and tick labels: a name holding '$...$' that is not valid mathtext made the plot fail (a
    traceback after the whole campaign had run), ESC gave glyph warnings. Each plot is drawn with
    warnings as errors; the name is shown escaped, with its '$' kept."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if plot == "clocks":
            from mpitempo.present.plots.clocks import duration_vs_offset

            rows = [{"wait_s": 1.0, "algorithm": NAME, "sync_duration_s": 0.1, "max_abs_offset_s": 1e-6}]
            duration_vs_offset(rows, str(tmp_path / "p.png"))
            _check_file(tmp_path / "p.png")
            return
        if plot == "tune":
            from mpitempo.present.plots.tune import algorithm_plot

            cands = [{"op": "allreduce", "nprocs": 2, "msize": m, "median_s": 1e-6, "algorithm": NAME} for m in (8, 64)]
            rows = [{"op": "allreduce", "nprocs": 2, "msize": m, "median_default_s": 2e-6, "chosen": NAME,
                     "median_chosen_s": 1e-6} for m in (8, 64)]
            fig = algorithm_plot("allreduce", 2, cands, rows, f"{NAME}: allreduce")
        elif plot == "imbalance":
            from mpitempo.present.plots.imbalance import boxplot

            fig = boxplot([NAME, "b"], [np.array([1e-6, 2e-6]), np.array([1e-6])], f"{NAME}: exit imbalance")
        elif plot == "pingpong":
            from mpitempo.present.plots.pingpong import histogram_png

            h = {"edges": [0.0, 1e-6, 2e-6], "counts": [3, 4], "over": 0, "upper": 2e-6}
            histogram_png(h, tmp_path / "p.png", f"timer {NAME}")
            _check_file(tmp_path / "p.png")
            return
        elif plot == "trace":
            from mpitempo.present.plots.trace import gantt

            ev = {"rank": np.array([], dtype=int), "start_raw_s": np.array([]), "end_raw_s": np.array([]),
                  "start_s": np.array([]), "end_s": np.array([])}
            from mpitempo.stats.trace import CLOCKS

            for a, b in CLOCKS.values():
                ev.setdefault(a, np.array([]))
                ev.setdefault(b, np.array([]))
            gantt(ev, [], NAME, f"{NAME} instances", str(tmp_path / "p.png"))
            _check_file(tmp_path / "p.png")
            return
        elif plot == "barrier":
            from mpitempo.present.barrier import plot_runtime

            doc = {"logp": {"L_s": 1e-6, "o_s_s": 1e-7, "o_r_s": 1e-7, "g_s": 1e-7},
                   "results": [{"algorithm": NAME, "nprocs": p, "median_s": 1e-6 * p, "ci_lo_s": None, "ci_hi_s": None,
                                "predicted_s": None, "oversubscribed": False} for p in (2, 3)]}
            plot_runtime(doc, str(tmp_path / "p.png"))
            _check_file(tmp_path / "p.png")
            return
        elif plot == "tree":
            from mpitempo.present.plots import png
            from mpitempo.present.plots.tree import comparison_timemap

            tm = {"down_x_s": [-2e-6, -1e-6, 0.0], "up_x_s": [0.0, 1e-6, 2e-6], "down_names": [NAME, NAME],
                  "up_names": [NAME, NAME]}
            fig = comparison_timemap(tm, tm, NAME, "b", f"{NAME} path")
            assert png(fig)[:4] == b"\x89PNG"
            return
        else:
            from mpitempo.present.plots import plain_text
            from mpitempo.present.plots.pingpong_pairs import heatmap

            fig = heatmap(np.array([[0.0, 1e-6], [1e-6, 0.0]]), f"{NAME} pairs", hosts=[NAME, "h$1$"])
            plain_text(fig)
        texts = _texts(fig)
        plt.close(fig)
    joined = "\n".join(texts)
    assert "\x1b" not in joined and "\\x1b[2J" in joined, texts
    assert "x$\\nosuchcmd{$y" in joined or "x\\$\\nosuchcmd{\\$y" in joined, texts
