"""The `mpitempo` command line: one module per command, registered here."""
from __future__ import annotations

import sys

import click

from mpitempo import __version__
from mpitempo.errors import MtError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mpitempo")
def cli():
    """mpitempo: precise, reproducible, statistically sound MPI benchmarking.

    Measure MPI operations over many mpiruns (`run`), summarise them
    (`summary`), compare configurations with a statistical test (`compare`),
    write an HTML report (`report`), keep results in a DuckDB store (`ingest`,
    `export`), and record the experimental factors of the machine (`info`).
    """


def _register():
    from mpitempo.cmd_build import build
    from mpitempo.cmd_clocks import clocks
    from mpitempo.cmd_compare import compare_cmd
    from mpitempo.cmd_imbalance import imbalance
    from mpitempo.cmd_info import info
    from mpitempo.cmd_pingpong import pingpong
    from mpitempo.cmd_report import report
    from mpitempo.cmd_run import run
    from mpitempo.cmd_store import export, ingest
    from mpitempo.cmd_summary import summary

    for cmd in (build, info, run, summary, compare_cmd, report, clocks, pingpong, imbalance, ingest, export):
        cli.add_command(cmd)


_register()


def main(argv=None) -> int:
    """Entry point: every error is one line on stderr and a non-zero exit."""
    try:
        cli.main(args=argv, prog_name="mpitempo", standalone_mode=False)
    except MtError as e:
        print(f"mpitempo: error: {e}", file=sys.stderr)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
