"""Received directories never hang or exhaust the reader; outputs never replace what they should not;
paths are names, never patterns (issue 32, classes 2-4). Rows of docs/reliability.md ("Received files:
the trust boundary") name these tests. The campaigns are synthetic (io.synthetic): no mpirun."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpitempo.errors import MtError


def _camp(path: Path, factor: float = 1.0) -> Path:
    from mpitempo.io.synthetic import make_campaign

    make_campaign(path, configs={"default": factor}, runs=2, ops=("allreduce",), msizes=(8,), nrep=20)
    return path


def _median(cli, camp) -> float:
    code, out, err = cli("summary", camp, "--json")
    assert code == 0, err
    rows = json.loads(out)
    return rows[0]["median_s"]


# -- class 2: never hang or exhaust -----------------------------------------------------------------------

def test_sparse_columnar_copy_is_not_read(cli, tmp_path):
    """Hostile input: a measurements.parquet replaced by a sparse 20 GB file after its record was
    written (before: summary read all 20 GB to check its digest, minutes of zeros). The copy is taken
    as damaged from its size alone and written again from the CSV; the numbers are the CSV's."""
    camp = _camp(tmp_path / "c")
    want = _median(cli, camp)   # writes the copies and their records
    pq = camp / "runs" / "default-000" / "measurements.parquet"
    assert pq.exists()
    os.truncate(pq, 20 << 30)
    from mpitempo.io.columnar import check_copy

    assert check_copy(pq.parent, "measurements.csv", camp) == (None, "damaged (its size does not match its record)")
    assert _median(cli, camp) == want
    assert pq.stat().st_size < 1 << 20


@pytest.mark.parametrize("with_record", [True, False], ids=["meta-files-record", "older-run-no-record"])
def test_sparse_measurements_csv_is_refused_unread(with_record, cli, tmp_path):
    """Hostile input: a sparse 20 GB measurements.csv (before: summary hung reading it). Refused in one
    line from its size (the record in meta.json) or, for a run older than the records, as a sparse
    file; nothing is read."""
    camp = _camp(tmp_path / "c")
    run = camp / "runs" / "default-000"
    if with_record:
        from mpitempo.io.integrity import digest

        meta = json.loads((run / "meta.json").read_text())
        n, lines, crc = digest(run / "measurements.csv")
        meta["files"] = {"measurements.csv": {"bytes": n, "lines": lines, "crc32": crc}}
        (run / "meta.json").write_text(json.dumps(meta))
    os.truncate(run / "measurements.csv", 20 << 30)
    code, out, err = cli("summary", camp)
    assert code == 2 and err.count("\n") == 1, err
    assert ("21474836480 bytes, meta.json records" in err) if with_record else ("is a sparse file" in err), err


@pytest.mark.parametrize("name", ["measurements.csv", "meta.json"])
@pytest.mark.parametrize("what", ["fifo", "socket"])
def test_special_files_in_a_run_are_refused_without_blocking(name, what, cli, tmp_path):
    import socket

    camp = _camp(tmp_path / "c")
    p = camp / "runs" / "default-000" / name
    p.unlink()
    if what == "fifo":
        os.mkfifo(p)
    else:
        s = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(p.parent)   # bind by a relative name: the temp path may exceed AF_UNIX's 108 bytes
        try:
            s.bind(p.name)
        finally:
            os.chdir(cwd)
    code, out, err = cli("summary", camp)
    assert code == 2 and ("FIFO" in err or "socket" in err) and err.count("\n") == 1, err


# -- class 3: outputs ----------------------------------------------------------------------------------------

def test_report_never_onto_another_campaigns_data(cli, tmp_path):
    """Hostile input: `report A -o B/runs/x/measurements.csv` (before: only the campaign being read was
    protected; B's data was replaced with HTML)."""
    a, b = _camp(tmp_path / "a"), _camp(tmp_path / "b")
    target = b / "runs" / "default-000" / "measurements.csv"
    before = target.read_bytes()
    code, out, err = cli("report", a, "-o", target)
    assert code == 2 and "inside the run directory" in err and err.count("\n") == 1, err
    code, out, err = cli("report", a, "-o", b / "runs" / "new.html")
    assert code == 2 and "inside the campaign directory" in err, err
    assert target.read_bytes() == before and not (b / "runs" / "new.html").exists()


def test_report_replaces_only_a_report(cli, tmp_path):
    """Careless input: `report -o notes.txt` over the user's own file (before: replaced with HTML). A
    file that is not an mpitempo report is refused; a report written before is replaced; the default
    report.html beside campaign.toml stays allowed."""
    a = _camp(tmp_path / "a")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    code, out, err = cli("report", a, "-o", notes)
    assert code == 2 and "is not one this command wrote" in err, err
    assert notes.read_text() == "my notes\n"
    r = tmp_path / "r.html"
    assert cli("report", a, "-o", r, "--title", "no name in it")[0] == 0
    assert cli("report", a, "-o", r)[0] == 0            # its own earlier report: replaced
    assert cli("report", a)[0] == 0 and (a / "report.html").exists()
    assert cli("report", a)[0] == 0


def test_report_on_a_full_disk_keeps_the_previous_file(cli, tmp_path, small_fs):
    """Fault: `report -o r.html` on a full disk (before: the previous r.html destroyed, a 4 KB fragment
    under its name). The write goes to a temporary file, fsync'd, then renamed: a failure leaves the
    previous report as it was and no temporary file."""
    a = _camp(tmp_path / "a")
    r = small_fs / "r.html"
    r.write_text("<!DOCTYPE html><html><head><meta name='generator' content='mpitempo'></head>old</html>")
    filler = small_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\1" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    before = r.read_bytes()
    code, out, err = cli("report", a, "-o", r)
    assert code == 2 and "No space left" in err, err
    assert r.read_bytes() == before
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler", "r.html"]


def test_write_output_fsyncs_before_rename(tmp_path, monkeypatch):
    """A full disk that shows only at fsync (delayed allocation) leaves the previous file too."""
    from mpitempo.io import paths

    p = tmp_path / "out.html"
    p.write_text("previous")

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(paths.os, "fsync", boom)
    with pytest.raises(MtError, match="No space left"):
        paths.write_output(p, "new", "the report")
    assert p.read_text() == "previous" and sorted(x.name for x in tmp_path.iterdir()) == ["out.html"]


def test_summary_plot_never_onto_data_or_a_foreign_file(cli, tmp_path):
    a, b = _camp(tmp_path / "a"), _camp(tmp_path / "b")
    code, out, err = cli("summary", a, "--process", "all", "--plot", b / "runs" / "default-000" / "x.png")
    assert code == 2 and "inside the run directory" in err, err
    mine = tmp_path / "photo.png"
    mine.write_bytes(b"JFIF not a plot of ours")
    code, out, err = cli("summary", a, "--process", "all", "--plot", mine)
    assert code == 2 and "is not one this command wrote" in err, err
    assert mine.read_bytes() == b"JFIF not a plot of ours"


@pytest.mark.parametrize("where", ["run-dir", "runs", "trace-dir", "link-into-run"])
def test_trace_run_never_into_a_campaign_or_trace(where, cli, tmp_path):
    """Hostile input: `trace run -o DIR` with DIR a new directory inside a completed run directory of a
    campaign, inside its runs/, inside another trace, or reached through a link (before: the trace was
    written into the run). Refused before anything is built or launched."""
    camp = _camp(tmp_path / "c")
    tr = tmp_path / "tr"
    tr.mkdir()
    (tr / "trace.json").write_text("{}")
    out = {"run-dir": camp / "runs" / "default-000" / "t", "runs": camp / "runs" / "t", "trace-dir": tr / "t",
           "link-into-run": tmp_path / "ln" / "t"}[where]
    if where == "link-into-run":
        (tmp_path / "ln").symlink_to(camp / "runs" / "default-000")
    code, so, err = cli("trace", "run", "-n", "2", "-o", out, "--", "/bin/true")
    assert code == 2 and "refusing to write the trace directory" in err and err.count("\n") == 1, err
    assert not out.exists()


def test_tune_outdir_never_inside_a_campaign(cli, tmp_path):
    camp = _camp(tmp_path / "c")
    code, so, err = cli("tune", "--ops", "allreduce", "-o", camp / "runs" / "t")
    assert code == 2 and "inside the campaign directory" in err, err
    assert not (camp / "runs" / "t").exists()


def test_a_campaign_toml_of_ones_own_is_not_a_campaign_directory(tmp_path):
    """A project directory holding the user's own campaign.toml (no runs/) is not data: outputs into it
    are allowed."""
    from mpitempo.io.paths import check_not_in_data_dir

    (tmp_path / "campaign.toml").write_text('name = "x"\n')
    check_not_in_data_dir(tmp_path / "sub" / "r.html", "the report")


# -- class 4: paths are names ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, other", [("camp[1]", "camp1"), ("c*", "cX"), ("c?", "cY")])
def test_glob_characters_in_a_campaign_path_are_names(name, other, cli, tmp_path):
    """Hostile input: campaign paths with DuckDB glob characters (before: `summary 'camp[1]'` showed
    camp1's numbers and cached them inside camp[1]; `summary 'c*'` next to cX counted every row twice).
    Each file is read as itself."""
    a = _camp(tmp_path / name, factor=3.0)
    b = _camp(tmp_path / other, factor=1.0)
    ma, mb = _median(cli, a), _median(cli, b)
    assert ma > 2.5 * mb, (ma, mb)
    code, out, err = cli("summary", a, "--json")
    assert json.loads(out)[0]["measurements"] == 40
    # the copies were written from each campaign's own CSV
    from mpitempo.io.columnar import check_copy

    assert check_copy(a / "runs" / "default-000", "measurements.csv", a)[1] == "ok"


def test_glob_escape():
    from mpitempo.kinds.base import glob_escape, sql_list

    assert glob_escape("/a/c[1]/x*?.csv") == "/a/c[[]1]/x[*][?].csv"
    assert glob_escape("/plain/x.csv") == "/plain/x.csv"
    assert sql_list(["it's[1]"]) == "['it''s[[]1]']"


@pytest.mark.parametrize("cmd", [["summary"], ["report", "-o", "{d}/r.html"], ["compare"]])
def test_non_ascii_paths_under_the_posix_locale(cmd, tmp_path):
    """A campaign path with non-ASCII characters, mpitempo started with LC_ALL=POSIX: summary, report and
    compare work (exit 0), in a separate process so that the locale is the one Python starts with."""
    d = tmp_path / "café ü"
    a = _camp(d / "kämpf")
    b = _camp(d / "zwei ß", factor=1.1)
    args = [x.format(d=d) for x in cmd] + [str(a)] + ([str(b)] if cmd == ["compare"] else [])
    env = dict(os.environ, LC_ALL="POSIX", LANG="POSIX")
    env.pop("PYTHONUTF8", None)
    r = subprocess.run([sys.executable, "-m", "mpitempo.cli", *args], capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")


def _owned(path: Path, name: str = "synthetic") -> Path:
    """A synthetic campaign with the records `run` writes: spec.json (campaign_id) and a launch.json per
    run naming its campaign, id and run id."""
    from mpitempo.io.campaign import build_campaign, load_toml
    from mpitempo.runner.resume import write_record

    camp = _camp(path)
    (camp / "campaign.toml").write_text(
        build_campaign(__import__("tomllib").loads(f'name = "{name}"\nmpiruns = 2\nnrep = 20\nops = ["allreduce"]\n'
                                                   'msizes = [8]\n')).to_toml())
    write_record(camp, build_campaign(load_toml(camp / "campaign.toml")))
    from mpitempo.io.rundir import campaign_id

    for d in (camp / "runs").iterdir():
        (d / "launch.json").write_text(json.dumps({"run_id": d.name, "config": "default", "campaign": name,
                                                   "campaign_id": campaign_id(camp)}))
    return camp


@pytest.mark.parametrize("how", ["other-campaign", "copied-under-another-name", "other-name"])
def test_a_run_directory_of_another_campaign_is_not_merged(how, cli, tmp_path):
    """Hostile input: a run directory copied in from another campaign (its launch.json records another
    campaign id), or a run of this campaign copied under a second name (before: merged into the
    summary unnoticed, its rows counted as this campaign's). Every reader refuses it in one line."""
    import shutil

    a = _owned(tmp_path / "a")
    b = _owned(tmp_path / "b", name="other" if how == "other-name" else "synthetic")
    assert cli("summary", a)[0] == 0
    if how == "copied-under-another-name":
        shutil.copytree(a / "runs" / "default-001", a / "runs" / "default-002")
    else:
        shutil.copytree(b / "runs" / "default-001", a / "runs" / "default-002")
    if how == "other-name":   # a campaign from before the id: only the name tells
        for c in (a, b):
            (c / "spec.json").unlink()
    for cmd in (["summary", a], ["report", a, "-o", tmp_path / "r.html"], ["compare", a, b]):
        code, out, err = cli(*cmd)
        assert code == 2 and "does not belong to this campaign" in err and "default-002" in err, (cmd, err)


def test_own_runs_are_accepted(cli, tmp_path):
    a = _owned(tmp_path / "a")
    assert cli("summary", a)[0] == 0


def test_an_interrupted_tune_says_what_to_do(cli, tmp_path):
    """Careless input: `tune -o t1` again after an interrupted tune (before: "not empty", nothing more).
    The refusal names the interrupted campaign and the command that completes it."""
    t1 = tmp_path / "t1"
    (t1 / "campaign" / "runs").mkdir(parents=True)
    (t1 / "campaign" / "campaign.toml").write_text('name = "tune"\n')
    code, out, err = cli("tune", "--ops", "allreduce", "-o", t1)
    assert code == 2 and "interrupted tune" in err and f"mpitempo run --resume {t1 / 'campaign'}" in err, err


@pytest.mark.parametrize("value, on", [("off", False), ("0", False), ("No", False), ("on", True), ("1", True)])
def test_columnar_switch_values(value, on, monkeypatch):
    from mpitempo.io.columnar import enabled

    monkeypatch.setenv("MPITEMPO_COLUMNAR", value)
    assert enabled() is on


def test_an_unknown_switch_value_is_refused(cli, tmp_path, monkeypatch):
    """Careless input: MPITEMPO_COLUMNAR=of (a typo of off; before: taken as on, the copy written)."""
    camp = _camp(tmp_path / "c")
    monkeypatch.setenv("MPITEMPO_COLUMNAR", "of")
    code, out, err = cli("summary", camp)
    assert code == 2 and "invalid MPITEMPO_COLUMNAR 'of'" in err and err.count("\n") == 1, err
    assert not (camp / "runs" / "default-000" / "measurements.parquet").exists()


def test_a_backslash_path_with_glob_characters_is_read_as_itself(tmp_path):
    """DuckDB's glob never matches a name with a backslash; such a path is read literally, unless as a
    pattern it would also name another file (then refused)."""
    from mpitempo.kinds.base import glob_escape

    d = tmp_path / "[red]y\\-000"
    d.mkdir()
    (d / "m.csv").write_text("a\n1\n")
    assert glob_escape(d / "m.csv") == str(d / "m.csv")
    assert glob_escape(tmp_path / "camp[1]" / "m.csv") == str(tmp_path / "camp[[]1]" / "m.csv")
    (tmp_path / "ry\\-000").mkdir()
    (tmp_path / "ry\\-000" / "m.csv").write_text("a\n2\n")
    with pytest.raises(MtError, match="unambiguously"):
        glob_escape(d / "m.csv")


# -- export and store outputs: never inside a campaign, run or trace directory; never over a foreign file ------

@pytest.mark.parametrize("flag", ["--osu", "--imb", "--parquet"])
@pytest.mark.parametrize("where", ["in-run", "run-dir", "campaign-dir", "trace-dir", "link-into-run"])
def test_export_never_into_data(flag, where, cli, tmp_path):
    """Hostile input: `export A --osu/--imb/--parquet OUTDIR` with OUTDIR inside or equal to another
    campaign's run directory, that campaign itself, a trace directory, or a link into a run (before: the
    files were written there, only the campaign being read was protected). Refused in one line."""
    a, b = _camp(tmp_path / "a"), _camp(tmp_path / "b")
    tr = tmp_path / "tr"
    tr.mkdir()
    (tr / "trace.json").write_text("{}")
    (tmp_path / "ln").symlink_to(b / "runs" / "default-000")
    out = {"in-run": b / "runs" / "default-000" / "x", "run-dir": b / "runs" / "default-000", "campaign-dir": b,
           "trace-dir": tr, "link-into-run": tmp_path / "ln" / "x"}[where]
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, so, err = cli("export", a, flag, out)
    assert code == 2 and err.count("\n") == 1 and f"refusing to write the {flag} directory" in err, err
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("flag,name", [("--osu", "osu_allreduce.default.np2.txt"),
                                       ("--imb", "IMB-MPI1_Allreduce.default.np2.txt"),
                                       ("--parquet", "runs.parquet")])
def test_export_replaces_only_its_own_files(flag, name, cli, tmp_path):
    """Careless input: `export --osu DIR` into a directory holding the user's own OSU output of the same
    name (before: replaced by mpitempo's). Refused; its own earlier export is replaced."""
    a = _camp(tmp_path / "a")
    d = tmp_path / "d"
    d.mkdir()
    (d / name).write_text("# OSU MPI Allreduce Latency Test v7.4 -- measured by OSU itself\n8 1.0\n")
    code, so, err = cli("export", a, flag, d)
    assert code == 2 and err.count("\n") == 1 and "is not one this command wrote" in err and name in err, err
    assert (d / name).read_text().startswith("# OSU MPI Allreduce Latency Test v7.4 -- measured by OSU")
    (d / name).unlink()
    assert cli("export", a, flag, d)[0] == 0
    assert cli("export", a, flag, d)[0] == 0          # its own earlier export: replaced


@pytest.mark.parametrize("where", ["in-runs", "campaign-top", "trace-dir"])
def test_ingest_store_never_into_data(where, cli, tmp_path):
    """Hostile input: `ingest A --db PATH` with PATH inside another campaign (its runs/ or beside its
    campaign.toml) or inside a trace directory (before: created there). Refused in one line, nothing
    created. (An existing file that is not a DuckDB store: test_reliability's ingest-db-not-duckdb.)"""
    a, b = _camp(tmp_path / "a"), _camp(tmp_path / "b")
    tr = tmp_path / "tr"
    tr.mkdir()
    (tr / "trace.json").write_text("{}")
    db = {"in-runs": b / "runs" / "s.duckdb", "campaign-top": b / "s.duckdb", "trace-dir": tr / "s.duckdb"}[where]
    code, so, err = cli("ingest", a, "--db", db)
    assert code == 2 and err.count("\n") == 1 and "refusing to write the store --db" in err, err
    assert not any(p.name.startswith("s.duckdb") for p in tmp_path.rglob("*"))
    s = tmp_path / "s.duckdb"
    assert cli("ingest", a, "--db", s)[0] == 0 and cli("ingest", a, "--db", s)[0] == 0   # its own store again
