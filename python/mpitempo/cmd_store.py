"""`mpitempo ingest DIR... --db FILE` and `mpitempo export DIR... --parquet OUT`."""
from __future__ import annotations

from pathlib import Path

import click

from mpitempo.errors import MtError
from mpitempo.io.paths import (check_not_in_data_dir, check_not_input, check_output_dir, check_output_file,
                               check_replaceable, looks_like_export, looks_like_parquet,
                               write_output)
from mpitempo.options import filter_options, json_option, make_filter
from mpitempo.safe_text import safe
from mpitempo.present.tables import cell, console, print_json, table


@click.command(epilog="Examples:\n\n  mpitempo ingest my-campaign --db results.duckdb\n\n  mpitempo summary results.duckdb\n\n"
                       "  mpitempo ingest nightly-* --db postgresql://bench@dbhost/mpitempo --machine cluster-a")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False), metavar="DIR...")
@click.option("--db", "db", default="results.duckdb", show_default=True, type=click.Path(dir_okay=False),
              metavar="FILE|URL",
              help="DuckDB store that accumulates campaigns (created when missing), or a PostgreSQL history "
                   "store postgresql://[user[:password]@]host[:port]/dbname (docs/history.md).")
@click.option("--machine", "machine", default=None, metavar="NAME",
              help="The machine name of the history entries (default: the hosts the runs ran on).")
@click.option("--date", "date", default=None, metavar="DATE",
              help="The date of the campaign's history entry (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS, UTC; one DIR): "
                   "for back-filling a history. Without it: the first run's start; with it, that start is "
                   "kept as the factor measured_at (the runs keep their measured times).")
@json_option
def ingest(dirs, db, machine, date, as_json):
    """Add campaign directories to a persistent store, for history and regression tracking.
    A DuckDB file keeps every measurement (summary, compare and report accept it in place of a DIR;
    ingesting a campaign again replaces its rows, never duplicates) and the history entries; a
    PostgreSQL store keeps the history entries (per-mpirun medians and factors, `mpitempo history`).
    A history entry is identified by the campaign's digest: ingesting it again adds nothing.

    --json prints a list of objects: campaign, path, digest, machine, history (new|known), runs, and
    for a DuckDB file name, ingested_at, failed, incomplete, measurements, replaced.
    """
    from mpitempo.history import store as hist

    if machine is not None and (not machine.strip() or any(ord(ch) < 32 for ch in machine)):
        raise MtError(f"invalid --machine {machine!r}: give a name (printable, not empty)")
    date_iso = hist.parse_date("--date", date)
    if date_iso is not None and len(dirs) > 1:
        raise MtError(f"--date '{date}' is the date of one campaign: give one DIR with it (got {len(dirs)})")
    hist.check_db(db, must_exist=False)
    pg = hist.is_postgres(db)
    if not pg:
        check_not_input(db, dirs, "--db")
        check_not_in_data_dir(db, "the store --db")   # never into any campaign, run or trace directory
        if not Path(db).is_file():   # a new store: its directory must exist and take files (DuckDB's "IO Error" otherwise)
            check_output_file(db, "the store --db")
    if pg:
        hrecs = hist.ingest(db, dirs, machine, date=date_iso)
        recs = [{"campaign": h["campaign"], "path": h["path"], "runs": h["runs"]} for h in hrecs]
    else:
        from mpitempo.analysis.store import ingest as do_ingest

        recs = do_ingest(db, dirs)
        hrecs = hist.ingest(db, dirs, machine, date=date_iso)
    for r, h in zip(recs, hrecs):
        r.update(digest=h["digest"], machine=h["machine"], history="new" if h["new"] else "known",
                 flagged_runs=h["flagged_runs"])
    if as_json:
        print_json(recs)
        return
    where = hist._hide_password(db) if pg else db
    if pg:
        t = table(f"mpitempo ingest into {where}", [("campaign", "left"), ("machine", "left"), ("runs", "right"),
                                                    ("flagged", "right"), ("history", "left")])
        for r in recs:
            t.add_row(cell(r["campaign"]), cell(r["machine"]), str(r["runs"]), str(r["flagged_runs"]),
                      r["history"])
    else:
        t = table(f"mpitempo ingest into {where}", [("campaign", "left"), ("runs", "right"),
                                                    ("measurements", "right"), ("failed", "right"),
                                                    ("incomplete", "right"), ("", "left"), ("history", "left")])
        for r in recs:
            t.add_row(cell(r["campaign"]), str(r["runs"]), f"{r['measurements']:,}", str(r["failed"]),
                      str(r["incomplete"]), "replaced" if r["replaced"] else "new", r["history"])
    console().print(t)


@click.command(epilog="Examples:\n\n  mpitempo export my-campaign --osu osu-out        # osu_allreduce.<config>.np2.txt ...\n\n"
                       "  mpitempo export my-campaign --osu - --op allreduce --config mpich\n\n"
                       "  mpitempo export my-campaign --imb imb-out --values pooled\n\n"
                       "  mpitempo run --per-rank -o c && mpitempo export c --osu - --values ranks\n\n"
                       "  mpitempo export my-campaign --parquet pq")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True), metavar="DIR...")
@click.option("--parquet", "out", default=None, type=click.Path(), metavar="OUTDIR",
              help="Directory to write measurements.parquet and runs.parquet into.")
@click.option("--osu", "osu", default=None, type=click.Path(), metavar="OUTDIR|-",
              help="Write OSU Micro-Benchmarks output, one file per (op, configuration, nprocs), into "
                   "OUTDIR ('-': all of them to stdout).")
@click.option("--imb", "imb", default=None, type=click.Path(), metavar="OUTDIR|-",
              help="Write Intel MPI Benchmarks (IMB-MPI1) output, one file per (op, configuration, nprocs).")
@click.option("--values", "values", type=click.Choice(["auto", "ranks", "runs", "pooled"]), default="auto",
              show_default=True,
              help="OSU/IMB columns: 'ranks' = OSU's and IMB's own Avg / Min / Max over ranks of each rank's "
                   "average (needs perrank.bin: run --per-rank), median over the mpiruns; 'runs' = median / min / "
                   "max of the per-mpirun medians; 'pooled' = mean / min / max of all kept measurements; "
                   "'auto' = 'ranks' where every mpirun has per-rank data, else 'runs'.")
@click.option("--tail", "tail", is_flag=True, default=False,
              help="OSU: also the P50 / P90 / P99 Tail columns, as OSU 7.4 prints them with -z (its per-iteration "
                   "percentiles; comparable on a shared machine where means are not). Needs per-rank raw times in "
                   "every mpirun (run --per-rank) and --values auto or ranks.")
@click.option("--op", "ops", default=None, metavar="LIST", help="OSU/IMB: only these ops (comma-separated).")
@click.option("--config", "configs", default=None, metavar="LIST",
              help="OSU/IMB: only these configurations (comma-separated).")
@filter_options
@json_option
def export(dirs, out, osu, imb, values, tail, ops, configs, filter_kind, tukey_k, cut_coef, as_json):
    """Export campaign directories (or a store) as Parquet: measurements.parquet (every raw
    measurement with campaign, run_id, config, run_index) and runs.parquet (factors per mpirun);
    or as the text that OSU Micro-Benchmarks (--osu) and IMB (--imb) print, so that the scripts,
    plots and ReFrame checks written for those tools read mpitempo's numbers. The OSU/IMB numbers
    use the same outlier filter as `summary`; the '#' lines of every file say what the columns mean.
    With per-rank raw times (run --per-rank) Avg / Min / Max are OSU's own over-rank numbers.

    --json prints {"files": [...], "values": {file: ranks|runs|pooled}} for --osu/--imb and the
    row counts for --parquet.
    """
    from mpitempo.errors import MtError
    from mpitempo.analysis.store import export_parquet, open_campaigns

    if not out and not osu and not imb:
        raise MtError("give --parquet OUTDIR, --osu OUTDIR|- and/or --imb OUTDIR|-")
    if not osu and not imb:   # they select what --osu/--imb write: with --parquet alone they would be ignored
        for flag, v in (("--op", ops), ("--config", configs), ("--values", None if values == "auto" else values)):
            if v is not None:
                raise MtError(f"{flag} '{v}' applies to --osu and --imb only: --parquet exports every row")
    for flag, given in (("--op", ops), ("--config", configs)):
        items = [x.strip() for x in given.split(",")] if given is not None else ["-"]
        if not all(items):
            why = ("an empty item (two commas in a row, or a comma at an end)" if any(items) else
                   "give one or more comma-separated items")
            raise MtError(f"invalid {flag} '{given}': {why}")
    if tail and not osu:
        raise MtError("--tail adds OSU's -z columns: it needs --osu OUTDIR|- (IMB prints no percentiles)")
    if tail and values in ("runs", "pooled"):
        raise MtError(f"--tail needs per-rank raw times (--values auto or ranks), not --values {values}")
    if osu == "-" and imb == "-":
        raise MtError("--osu - and --imb - cannot both write to stdout: give one of them a directory")
    if as_json and "-" in (osu, imb):
        flag = "--osu" if osu == "-" else "--imb"
        raise MtError(f"--json and {flag} - both write to stdout: give {flag} a directory, or leave out --json")
    for target, flag in ((osu, "--osu"), (imb, "--imb"), (out, "--parquet")):
        if target and target != "-":
            check_not_input(target, dirs, flag, directory=True)
            check_not_in_data_dir(target, f"the {flag} directory", directory=True)
            check_output_dir(target, flag)
    if out:   # replaced only when they are Parquet files (what --parquet wrote before)
        for name in ("measurements.parquet", "runs.parquet"):
            check_replaceable(Path(out) / name, "--parquet file", looks_like_parquet)
    data = open_campaigns(list(dirs))
    result: dict = {}
    if osu or imb:
        filt = make_filter(filter_kind, tukey_k, cut_coef)
        texts, notes = _osu_imb_texts(data, dirs, filt, values, ops, configs, osu, imb, tail)
        for target, named in texts:   # every file checked before the first is written
            if target != "-":
                for name, _, _ in named:
                    check_replaceable(Path(target) / name, "--osu file" if osu == target else "--imb file",
                                      looks_like_export, head_bytes=1 << 20)
        for n in notes:
            click.echo(f"mpitempo: note: {n}", err=True)
        files, used = [], {}
        for target, named in texts:
            if target == "-":
                click.echo("".join(t for _, t, _ in named), nl=False)   # outputs one after the other
                continue
            Path(target).mkdir(parents=True, exist_ok=True)
            for name, text, mode in named:
                path = write_output(Path(target) / name, text, "--osu" if osu == target else "--imb")
                files.append(str(path))
                used[str(path)] = mode
        result["files"] = files
        result["values"] = used
        if files and not as_json:
            click.echo(f"mpitempo: wrote {len(files)} file(s) into " + ", ".join(
                sorted({str(Path(f).parent) for f in files})), err=(osu == "-" or imb == "-"))
    if out:
        res = export_parquet(data, out)
        result.update({"out": str(out), **{k.replace(".parquet", "_rows"): v for k, v in res.items()}})
        if not as_json:
            for name, n in res.items():
                console().print(f"{out}/{name}: {n:,} rows")
    if as_json:
        print_json(result)


def _osu_imb_texts(data, dirs, filt, values, ops, configs, osu, imb, tail=False):
    """[(target, [(file name, text), ...]), ...] for --osu and --imb, after validating the selection."""
    from mpitempo.analysis.summary import summary_rows
    from mpitempo.errors import MtError
    from mpitempo.present import osu as fmt

    rows = summary_rows(data, filt)
    for flag, given, have in (("--op", ops, {r["op"] for r in rows}), ("--config", configs, {r["config"] for r in rows})):
        if given is not None:
            want = [x.strip() for x in given.split(",")]
            bad = [x for x in want if x not in have]
            if bad:
                raise MtError(f"{flag} '{bad[0]}' is not in the data: choose from {', '.join(sorted(have))}")
            key = "op" if flag == "--op" else "config"
            rows = [r for r in rows if r[key] in want]
    from mpitempo.analysis.flags import campaign_metas

    from mpitempo.present.definitions import campaign_toml, factors_of

    cm = campaign_metas(data)
    params: dict = {}
    first: dict = {}
    for camp, runs in cm.items():
        toml = campaign_toml(data, camp)
        for meta in runs.values():
            key = (camp, meta.get("config", "default"))
            params.setdefault(key, meta.get("operation_params") or {})
            first.setdefault(key, (meta, factors_of(meta, toml)))
    from mpitempo.analysis.derived import exp_info

    for r in rows:
        r["operation_params"] = params.get((r["campaign"], r["config"]), {})
        meta, r["factors"] = first.get((r["campaign"], r["config"])) or ({}, {})
        r["one_way_divisor"] = exp_info(meta, r["op"], r["msize"]).get("one_way_divisor")
    pure = {(r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]): r for r in rows}
    chosen, notes = {}, []
    for fl, target in (("osu", osu), ("imb", imb)):
        if not target:
            continue
        yes, why = fmt.exportable({(r["op"], r["nprocs"]) for r in rows}, fl)
        chosen[fl] = [r for r in rows if (r["op"], r["nprocs"]) in yes]
        if why:
            notes.append(fmt.skipped_note(why, fl))
    if not any(chosen.values()):
        raise MtError("nothing to export as OSU/IMB text: no operation of the selection has an OSU/IMB counterpart ("
                      + ", ".join(sorted({r["op"] for r in rows})) + ")")
    keep = {id(r) for c in chosen.values() for r in c}
    partners = {r["op"][:-len("_overlap")] for c in chosen.values() for r in c if r["op"].endswith("_overlap")}
    rows = [r for r in rows if id(r) in keep or r["op"] in partners]    # pure ops: the Pure Comm. column
    over = {(m.get("launch") or {}).get("config") or m.get("config")
            for m in data.metas.values()
            if (m.get("launch") or {}).get("launcher", {}).get("oversubscribed")
            or (m.get("scheme") or {}).get("oversubscribed")}
    from mpitempo.analysis.flags import simulation_of

    sim = {}
    for m in data.metas.values():
        s = simulation_of(m)
        if s:
            sim[(m.get("launch") or {}).get("config") or m.get("config")] = s
    modes = _modes(data, filt, rows, values, tail)
    src = "exported from " + ", ".join(str(d) for d in dirs)
    many = len(data.labels) > 1
    out = []
    for target, block, kind in ((osu, fmt.osu_block, "osu"), (imb, fmt.imb_block, "imb")):
        if not target:
            continue
        named, by_name = [], {}
        for key, rs in fmt.groups(chosen.get(kind, [])).items():
            name = fmt.file_name(kind, key, many)
            if name in by_name:   # names made file-safe alike ('a b', 'a/b'): one file would overwrite the other
                k = by_name[name]
                raise MtError(f"configurations '{safe(k[1])}' and '{safe(key[1])}'"
                              + (f" (campaigns '{safe(k[0])}', '{safe(key[0])}')" if many else "")
                              + f" would both be written to '{name}': export them one at a time with --config")
            by_name[name] = key
            extra = ["WARNING: oversubscribed mpiruns (more ranks than cores): correctness only, not timing"] \
                if key[1] in over else []
            if key[1] in sim:
                extra.append("WARNING: SIMULATED platform (SimGrid/SMPI " + str(sim[key[1]].get("simgrid_version") or "")
                             + ", platform " + str(sim[key[1]].get("platform") or "?")
                             + "): the times are the model's, not a measurement of hardware")
            mode, note = modes[key]
            extra += [note] if note else []
            if kind == "imb":
                meta = (first.get((key[0], key[1])) or ({}, {}))[0]
                text = block(rs, mode, filt.describe(), src, extra, pure, meta=meta)
            else:
                text = block(rs, mode, filt.describe(), src, extra, pure, tail=tail)
            named.append((name, text, mode))
        out.append((target, named))
    return out, notes


def _modes(data, filt, rows, values, tail=False):
    """Per (campaign, config, op, nprocs): (the values actually written, a '#' note or None). With
    'auto' and 'ranks', the per-rank numbers are attached to the rows as row["ranks"]."""
    from mpitempo.errors import MtError
    from mpitempo.present import osu as fmt

    keys = set(fmt.groups(rows))
    if values in ("runs", "pooled"):
        return {k: (values, None) for k in keys}
    from mpitempo.analysis.osu_ranks import HOW_TO_RECORD, rank_rows, run_coverage

    cov = run_coverage(data)
    full = {k for k in keys if cov.get(k, (0, 0))[1] and cov[k][0] == cov[k][1]}
    if (values == "ranks" or tail) and keys - full:
        k = sorted(keys - full, key=str)[0]
        have, n = cov.get(k, (0, 0))
        raise MtError(f"{'--tail' if tail else '--values ranks'} needs per-rank raw times (perrank.bin) in every mpirun, "
                      f"but {n - have} of {n} mpiruns of {k[2]} (configuration {k[1]}) have none; {HOW_TO_RECORD}, "
                      + ("or leave out --tail" if tail else "or use --values runs"))
    per = rank_rows(data, filt, full) if full else {}
    for r in rows:
        rk = per.get((r["campaign"], r["config"], r["op"], r["msize"], r["nprocs"]))
        if rk:
            r["ranks"] = rk
    out = {}
    for k in keys:
        if k[2].split("/")[0] in ("pingpong", "pingpong-loop"):
            # the source rank's own timings: what osu_latency and IMB PingPong time
            out[k] = ("runs", "no -z columns (--tail): this op times its round trips as one block, not one by one"
                      if tail else None)
        elif k in full:
            out[k] = ("ranks", None)
        else:
            have, n = cov.get(k, (0, 0))
            why = "no mpirun has" if not have else f"only {have} of {n} mpiruns have"
            out[k] = ("runs", f"NOT OSU's/IMB's over-rank Avg/Min/Max: {why} per-rank raw times (perrank.bin; "
                              "record them with `mpitempo run --per-rank`)")
    return out
