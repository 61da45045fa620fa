"""`mpitempo history --db STORE`: series over time, change points, regressions (exit 1), dashboard."""
from __future__ import annotations

import math

import click

from mpitempo.errors import ExitStatus, MtError


def _list(flag, given):
    if given is None:
        return None
    items = [x.strip() for x in given.split(",")]
    if not all(items):
        raise MtError(f"invalid {flag} '{given}': give one or more comma-separated names (no empty item)")
    return items


# the numeric options: (flag, parameter, default, metavar, help, type, valid, what is allowed)
NUMBERS = (
    ("--threshold", "threshold", "5", "PCT", "A change that makes a series slower by at least PCT % is a regression.",
     float, lambda v: math.isfinite(v) and v > 0, "a number > 0 (percent)"),
    ("--latest", "latest", "5", "N", "Exit with status 1 when a regression starts in one of the latest N entries of "
     "its series.", int, lambda v: v >= 1, "an integer >= 1"),
    ("--alpha", "alpha", "0.05", "A", "Significance level of the permutation test of each change point.",
     float, lambda v: 0 < v < 1, "a number between 0 and 1"),
    ("--permutations", "permutations", "199", "R", "Permutations per tested change point (p-values are multiples "
     "of 1/(R+1)).", int, lambda v: 19 <= v <= 100000, "an integer from 19 to 100000"),
    ("--min-entries", "min_entries", "2", "K", "Entries (campaigns) on each side of a change point at least.",
     int, lambda v: v >= 1, "an integer >= 1"),
    ("--seed", "seed", "0", "S", "Seed of the permutations and bootstrap (same seed, same result).",
     int, lambda v: v >= 0, "an integer >= 0"),
)


def _number_options(f):
    for flag, dest, default, metavar, text, _, _, _ in reversed(NUMBERS):
        f = click.option(flag, dest, default=default, show_default=True, metavar=metavar, help=text)(f)
    return f


@click.command(epilog="Examples:\n\n  mpitempo ingest nightly-2026-11-27 --db history.duckdb\n\n"
                       "  mpitempo history --db history.duckdb --since 2026-09-01 --op allreduce\n\n"
                       "  mpitempo history --db postgresql://bench@dbhost/mpitempo --threshold 3 --html dash\n\n"
                       "  mpitempo history --db history.duckdb --latest 2 || echo 'regression'")
@click.option("--db", "db", default="results.duckdb", show_default=True, metavar="FILE|URL",
              help="The history store: a DuckDB file or postgresql://[user[:password]@]host[:port]/dbname "
                   "(written by `mpitempo ingest`).")
@click.option("--since", "since", default=None, metavar="DATE", help="Only entries started on or after DATE (UTC).")
@click.option("--machine", "machines", default=None, metavar="LIST", help="Only these machines (comma-separated).")
@click.option("--op", "ops", default=None, metavar="LIST", help="Only these operations (comma-separated).")
@_number_options
@click.option("--json", "as_json", is_flag=True, help="Print series, changes and regressions as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the change points as CSV.")
@click.option("--html", "html", default=None, type=click.Path(), metavar="OUTDIR",
              help="Write a static dashboard (OUTDIR/index.html, self-contained): trend plots, changes, regressions.")
def history(db, since, machines, ops, as_json, as_csv, html, **numbers):
    """Look across the campaigns of a history store: for every (machine, config, op, size, nprocs) series,
    the change points of its per-mpirun medians over time (E-divisive means with a permutation test over
    whole campaigns; Matteson and James 2014, as in Daly et al. 2020), each with its dates, size in % with a
    95% CI, p-value and the factors that changed there. Runs flagged as distorted (shared CPU, oversubscribed,
    >= 3x off their siblings, ...) are shown but never make a change point.

    Exit status 1 when a regression (slower by >= --threshold %) starts in the latest --latest entries of a
    series: for CI and cron. --json prints {settings, series, changes, regressions}.
    """
    from mpitempo.history import store

    v = {dest: _num(flag, numbers[dest], typ, ok, allowed) for flag, dest, _, _, _, typ, ok, allowed in NUMBERS}
    thr, n_latest, a, r, k, s = (v[d] for d in ("threshold", "latest", "alpha", "permutations", "min_entries", "seed"))
    if as_json and as_csv:
        raise MtError("--json and --csv both write to stdout: give one of them")
    since_iso = store.parse_date("--since", since)
    mlist, olist = _list("--machine", machines), _list("--op", ops)
    store.check_db(db, must_exist=True)
    if html:
        from mpitempo.io.paths import check_output_dir

        if html.strip() == "":
            raise MtError("invalid --html '': give a directory")
        check_output_dir(html, "--html")
    entries, points = store.load(db, since_iso, mlist, olist)
    if not points:
        raise MtError(f"store '{db}' has no history entries" + (" on or after --since " + since if since else ""))
    from mpitempo.history.analyze import analyse

    res = analyse(entries, points, a, r, k, thr, n_latest, s)
    settings = {"db": store._hide_password(db), "since": since_iso, "machines": mlist, "ops": olist,
                "threshold_pct": thr, "latest": n_latest, "alpha": a, "permutations": r, "min_entries": k,
                "seed": s, "method": "E-divisive means (Matteson and James 2014) on log run medians, "
                                     "permutations of whole entries; size: ratio of medians, 95% bootstrap CI"}
    from mpitempo.present import history as pres

    if html:
        path = pres.write_html(html, res, settings)
        click.echo(f"mpitempo: wrote {path}", err=True)
    if as_json:
        from mpitempo.present.tables import print_json

        print_json({"settings": settings, "series": res["series"], "changes": res["changes"],
                    "regressions": res["regressions"]})
    elif as_csv:
        click.echo(pres.csv_text(res["changes"]), nl=False)
    else:
        pres.print_table(res, settings)
    if res["regressions"]:
        raise ExitStatus(1)


def _num(flag, given, typ, ok, allowed):
    try:
        v = typ(str(given).strip())
    except (TypeError, ValueError, OverflowError):
        v = None
    if v is None or not ok(v):
        raise MtError(f"invalid {flag} '{given}': give {allowed}")
    return v
