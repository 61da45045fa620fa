"""The `mpitempo` command line: one module per command, registered here."""
from __future__ import annotations

import errno

import sys

import click

from mpitempo import __version__
from mpitempo.errors import ExitStatus, MtError


# command -> (module, attribute, one-line help). Commands are imported only when used, so that
# `mpitempo --help` and every command's `--help` start fast (numpy, scipy, duckdb, matplotlib are
# imported inside the commands that need them).
COMMANDS = {
    "build": ("mpitempo.cmd_build", "build", "Build (or find) the C core for an MPI installation."),
    "info": ("mpitempo.cmd_info", "info", "Experimental factors of this machine and MPI; --check, --diff DIR."),
    "run": ("mpitempo.cmd_run", "run", "Run a campaign: many mpiruns x shuffled experiments."),
    "summary": ("mpitempo.cmd_summary", "summary", "Summarise campaign directories (medians over mpiruns)."),
    "compare": ("mpitempo.cmd_compare", "compare_cmd", "Compare configurations: Wilcoxon rank-sum on run medians."),
    "report": ("mpitempo.cmd_report", "report", "Write a static HTML report with plots."),
    "clocks": ("mpitempo.cmd_clocks", "clocks", "Evaluate clock-synchronisation algorithms."),
    "drift": ("mpitempo.cmd_drift", "drift", "Is clock drift linear? Offsets over time, windowed fits, R²."),
    "pingpong": ("mpitempo.cmd_pingpong", "pingpong", "Small-message ping-pong latency (timer resolution, npp)."),
    "imbalance": ("mpitempo.cmd_imbalance", "imbalance", "Exit imbalance of an operation under a global clock."),
    "trace": ("mpitempo.cmd_trace", "trace", "Global-clock traces of unmodified MPI applications (OTF2, Perfetto, Gantt)."),
    "tree": ("mpitempo.cmd_tree", "tree", "Allreduce spanning trees: event collectors, analysis, timemaps, tuning."),
    "tune": ("mpitempo.cmd_tune", "tune", "Choose the MPI library's fastest collective algorithms; write its config."),
    "barrier": ("mpitempo.cmd_barrier", "barrier", "Barrier algorithms vs the LogP model; the fastest one."),
    "ingest": ("mpitempo.cmd_store", "ingest", "Add campaign directories to a store (DuckDB, or PostgreSQL for history)."),
    "export": ("mpitempo.cmd_store", "export", "Export campaigns as Parquet, OSU or IMB text."),
    "which": ("mpitempo.cmd_which", "which", "Where the C executables are (to run them under mpirun/srun)."),
    "history": ("mpitempo.cmd_history", "history", "Change points and regressions across a store's campaigns; dashboard."),
}


_PATH_METAVARS = ("FILE", "DIR", "OUTDIR", "PATH", "CONFIG")


def _refuse_blank(orig):
    def callback(ctx, param, value):
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(v, str) and not v.strip():
                raise click.BadParameter(f"{v!r} is not a path: give a file or directory name", ctx, param)
        return orig(ctx, param, value) if orig else value
    callback.mt_guarded = True
    return callback


def _guard_paths(cmd):
    """Every path option or argument of cmd (and of its subcommands) refuses an empty or
    whitespace-only value (-o '', --db ' ', report -o ''): never the default, never a file named ' '."""
    for p in cmd.params:
        meta = (p.metavar or "").split("|")[0].split(".")[0]
        if (isinstance(p.type, click.Path) or meta in _PATH_METAVARS) and \
                not getattr(p.callback, "mt_guarded", False):
            p.callback = _refuse_blank(p.callback)
    for sub in getattr(cmd, "commands", {}).values():
        _guard_paths(sub)
    return cmd


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        import importlib

        mod, attr, _ = COMMANDS[name]
        return _guard_paths(getattr(importlib.import_module(mod), attr))

    def format_commands(self, ctx, formatter):
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog="Example:\n\n  mpitempo run --ops allreduce --msizes 8-4K --mpiruns 6 -o c && mpitempo summary c",
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mpitempo")
def cli():
    """mpitempo: precise, reproducible, statistically sound MPI benchmarking.

    Measure MPI operations over many mpiruns (`run`), summarise them
    (`summary`), compare configurations with a statistical test (`compare`),
    write an HTML report (`report`), evaluate clock synchronisation
    (`clocks`), small-message latency (`pingpong`) and exit imbalance
    (`imbalance`), keep results in a store and find regressions over time
    (`ingest`, `history`, `export`), and record the experimental factors of
    the machine (`info`).
    """


# What a terminal that cannot show a character gets instead (a C or POSIX locale without
# Python's UTF-8 mode, PYTHONIOENCODING=ascii): µs reads as us, never as a UnicodeEncodeError.
_ASCII = {"µ": "u", "±": "+/-", "×": "x", "²": "^2", "≈": "~", "≤": "<=", "≥": ">=", "–": "-", "—": "-",
          "…": "...", "’": "'", "‘": "'", "“": '"', "”": '"', "•": "*", "→": "->", "│": "|", "─": "-",
          "━": "-", "┃": "|", "╇": "+", "┡": "+", "┩": "+", "┏": "+", "┓": "+", "┗": "+", "┛": "+", "┳": "+",
          "┻": "+", "╋": "+", "┼": "+", "├": "+", "┤": "+", "┬": "+", "┴": "+", "└": "+", "┘": "+", "┌": "+",
          "┐": "+", "█": "#", "▏": "|", "·": "."}


def _ascii_fallback(err):
    text = err.object[err.start:err.end]
    return "".join(_ASCII.get(ch, f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
                   for ch in text), err.end


def _safe_streams() -> None:
    """stdout and stderr that cannot encode µ (a non-UTF-8 locale) replace what they cannot show."""
    import codecs

    try:
        codecs.lookup_error("mpitempo-ascii")
    except LookupError:
        codecs.register_error("mpitempo-ascii", _ascii_fallback)
    for stream in (sys.stdout, sys.stderr):
        enc = getattr(stream, "encoding", None) or "utf-8"
        try:
            "µ±".encode(enc)
        except (UnicodeEncodeError, LookupError):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="mpitempo-ascii")


def main(argv=None) -> int:
    """Entry point: every error is one line on stderr and a non-zero exit. Whatever reaches stdout
    and stderr has its control characters escaped (safe_text: strings from files)."""
    from mpitempo.safe_text import guard

    _safe_streams()
    with guard():
        return _main(argv)


def _main(argv) -> int:
    try:
        cli.main(args=argv, prog_name="mpitempo", standalone_mode=False)
    except MtError as e:
        print(f"mpitempo: error: {e}", file=sys.stderr)
        return e.code
    except ExitStatus as e:   # the result is printed; the status is part of it (history: a regression)
        return e.code
    except click.exceptions.Abort:
        print("mpitempo: interrupted", file=sys.stderr)
        return 130
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)
        where = f" {ctx.command_path.split(' ', 1)[1]}" if ctx and " " in ctx.command_path else ""
        print(f"mpitempo{where}: error: {e.format_message()} (see --help)", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("mpitempo: interrupted", file=sys.stderr)
        return 130
    except OSError as e:   # a file the command had to read or write: one line naming it, never a traceback
        where = f" '{e.filename}'" if e.filename else ""
        if e.errno == errno.ENOSPC:
            from mpitempo.runner.reason import disk_full

            print(f"mpitempo: error: cannot write{where}: {disk_full(e.filename or '.')}", file=sys.stderr)
            return 2
        print(f"mpitempo: error: cannot access{where}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
