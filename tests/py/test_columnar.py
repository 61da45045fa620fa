"""The columnar copy of measurements.csv (io.columnar) and the one-pass per-run statistics
(analysis.perrun): the same output as the CSV, a stale, damaged or swapped copy rebuilt, a linked
copy refused, a read-only campaign read from its CSV, the digests taken over without reading."""
from __future__ import annotations

import json
import os
import shutil

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpitempo.io import columnar, integrity
from mpitempo.io.synthetic import make_campaign, write_run

CSV = "measurements.csv"


def _out(cli, monkeypatch, *args, columnar_on=True):
    monkeypatch.setenv("MPITEMPO_COLUMNAR", "on" if columnar_on else "off")
    code, out, err = cli(*args)
    assert code == 0, err
    return out


def _both(cli, monkeypatch, *args):
    """(output from the CSV, output with the copies written, output read from the copies)"""
    a = _out(cli, monkeypatch, *args, columnar_on=False)
    b = _out(cli, monkeypatch, *args)
    c = _out(cli, monkeypatch, *args)
    return a, b, c


def _copies(root):
    return sorted(p.parent.name for p in (root / "runs").glob(f"*/{columnar.copy_name(CSV)}"))


@pytest.fixture
def camp(tmp_path):
    return make_campaign(tmp_path / "c", runs=4, nrep=120, ops=("allreduce", "bcast"), msizes=(8, 1024), seed=3)


def test_copy_written_once_and_output_equal(camp, cli, monkeypatch):
    for args in (("summary", camp, "--json"), ("summary", camp, "--json", "--per-run"),
                 ("summary", camp, "--json", "--filter", "cutcoef"), ("summary", camp, "--json", "--filter", "none"),
                 ("compare", camp, "--json"), ("compare", camp, "--json", "--test", "ttest")):
        a, b, c = _both(cli, monkeypatch, *args)
        assert a == b == c, args
    assert _copies(camp) == sorted(d.name for d in (camp / "runs").iterdir())
    rec = json.loads((camp / "runs" / "A-000" / "measurements.parquet.json").read_text())
    assert rec["csv"] == dict(zip(("bytes", "lines", "crc32"), integrity.digest(camp / "runs" / "A-000" / CSV)))
    assert rec["checks"]["rows"] == 4 * 120
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM read_parquet('{camp}/runs/A-000/measurements.parquet')").fetchone()[0]
    assert n == 4 * 120
    # the copies are not rewritten by a later read
    st0 = os.stat(camp / "runs" / "A-000" / "measurements.parquet")
    _out(cli, monkeypatch, "summary", camp, "--json")
    assert os.stat(camp / "runs" / "A-000" / "measurements.parquet").st_ino == st0.st_ino


def _runtimes():
    base = st.sampled_from([1e-6, 2.5e-6, 4e-5])
    vals = st.lists(st.floats(min_value=0.5, max_value=3.0, allow_nan=False), min_size=1, max_size=40)
    return st.tuples(base, vals, st.integers(0, 3), st.booleans())


@given(runs=st.lists(_runtimes(), min_size=2, max_size=5), ties=st.booleans())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_columnar_equals_csv_on_random_campaigns(tmp_path_factory, runs, ties):
    """summary and compare on random small campaigns (ties, invalid rows, outliers, one or two configs):
    the same bytes from the CSV and from the columnar copy."""
    from mpitempo.cli import main

    root = tmp_path_factory.mktemp("h")
    for i, (base, vals, ninvalid, outlier) in enumerate(runs):
        for cfg, f in (("A", 1.0), ("B", 1.1)):
            x = np.asarray(vals) * base * f
            if ties:
                x = np.round(x / base, 1) * base
            if outlier:
                x = np.append(x, 50 * base)
            valid = np.ones(x.size, dtype=int)
            valid[:min(ninvalid, x.size - 1)] = 0
            write_run(root, f"{cfg}-{i:03d}", cfg, i, np.where(np.arange(x.size) % 2 == 0, "allreduce", "bcast"), 8,
                      x, valid=valid)
    (root / "campaign.toml").write_text('name = "h"\n')
    import contextlib
    import io

    def run(*args):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            code = main([str(a) for a in args])
        return code, buf.getvalue()

    for args in (("summary", root, "--json"), ("summary", root, "--json", "--per-run"), ("compare", root, "--json")):
        os.environ["MPITEMPO_COLUMNAR"] = "off"
        try:
            a = run(*args)
        finally:
            os.environ.pop("MPITEMPO_COLUMNAR")
        b = run(*args)
        c = run(*args)
        assert a == b == c, args
    shutil.rmtree(root)


def test_per_run_statistics_equal_the_sql_filter(camp):
    """The one-pass statistics keep the measurements the SQL filter keeps, with the same order
    statistics (quartiles, median, min, max), and means equal to the SQL's to rounding."""
    from mpitempo.analysis.filtering import filtered_view
    from mpitempo.analysis.perrun import per_run_table
    from mpitempo.analysis.store import open_campaigns
    from mpitempo.stats.outliers import Filter

    data = open_campaigns([camp])
    for filt in (Filter("tukey", 1.5), Filter("tukey", 3.0), Filter("cutcoef", cut_coef=1.2), Filter("none")):
        src = filtered_view(data.con, filt)
        sql = {r[:3]: r[3:] for r in data.con.execute(f"""SELECT run_id, op, msize,
            quantile_cont(runtime_s, [0.25, 0.5, 0.75]) FILTER (WHERE keep), count(*) FILTER (WHERE keep),
            min(runtime_s) FILTER (WHERE keep), max(runtime_s) FILTER (WHERE keep), avg(runtime_s) FILTER (WHERE keep),
            count(*) FILTER (WHERE valid AND NOT keep), count(*) FILTER (WHERE abs(oclass) = 2)
            FROM {src} GROUP BY ALL""").fetchall()}
        rows = per_run_table(data.con, filt)
        assert len(rows) == len(sql)
        for r in rows:
            qq, n, lo, hi, mean, out, severe = sql[(r["run_id"], r["op"], r["msize"])]
            assert [r["q1_s"], r["median_s"], r["q3_s"]] == qq
            assert (r["n"], r["min_s"], r["max_s"], r["outliers"], r["severe"]) == (n, lo, hi, out, severe)
            assert r["mean_s"] == pytest.approx(mean, rel=1e-12)


@given(st.lists(st.floats(min_value=1e-9, max_value=1e-1, allow_nan=False), min_size=1, max_size=300))
@settings(max_examples=200, deadline=None)
def test_quantile_interpolation_is_duckdbs(x):
    from mpitempo.analysis.perrun import pooled_quantiles, quantile_sorted

    x = np.sort(np.asarray(x))
    con = duckdb.connect()
    want = con.execute("SELECT quantile_cont(v, [0.25, 0.5, 0.75]) FROM (SELECT unnest(?::DOUBLE[]) AS v)",
                       [x.tolist()]).fetchone()[0]
    assert [quantile_sorted(x, q) for q in (0.25, 0.5, 0.75)] == want
    assert pooled_quantiles([x[::2], x[1::2]]) == want


def _replace_run(root, run_id, seed):
    """The run done again (as run --resume does): new measurements.csv and meta.json."""
    rng = np.random.default_rng(seed)
    cfg, idx = run_id.split("-")
    ops = np.repeat(np.array(["allreduce", "allreduce", "bcast", "bcast"]), 120)
    ms = np.tile(np.repeat(np.array([8, 1024]), 120), 2)
    write_run(root, run_id, cfg, int(idx), ops, ms, rng.lognormal(-13, 0.3, ops.size))


def test_stale_copy_is_rebuilt(camp, cli, monkeypatch):
    _out(cli, monkeypatch, "summary", camp, "--json")
    old = (camp / "runs" / "A-001" / "measurements.parquet.json").read_text()
    _replace_run(camp, "A-001", 99)
    a, b, c = _both(cli, monkeypatch, "summary", camp, "--json")
    assert a == b == c
    new = json.loads((camp / "runs" / "A-001" / "measurements.parquet.json").read_text())
    assert new != json.loads(old)
    assert new["csv"] == dict(zip(("bytes", "lines", "crc32"), integrity.digest(camp / "runs" / "A-001" / CSV)))
    assert columnar.check_copy(camp / "runs" / "A-001", CSV)[1] == "ok"


@pytest.mark.parametrize("damage", ["flip", "truncate", "swap", "record"])
def test_damaged_copy_is_detected_and_rebuilt(camp, cli, monkeypatch, damage):
    want = _out(cli, monkeypatch, "summary", camp, "--json", columnar_on=False)
    _out(cli, monkeypatch, "summary", camp, "--json")
    d = camp / "runs" / "B-002"
    p = d / "measurements.parquet"
    if damage == "flip":          # same size, a few bytes changed in the middle
        b = bytearray(p.read_bytes())
        for i in range(len(b) // 2, len(b) // 2 + 8):
            b[i] ^= 0xFF
        p.write_bytes(bytes(b))
    elif damage == "truncate":
        p.write_bytes(p.read_bytes()[:100])
    elif damage == "swap":        # another run's copy (a valid Parquet file of other rows)
        shutil.copyfile(camp / "runs" / "A-000" / "measurements.parquet", p)
    else:                         # a record naming a digest that is not the CSV's
        rec = json.loads((d / "measurements.parquet.json").read_text())
        rec["csv"]["crc32"] = "00000000"
        (d / "measurements.parquet.json").write_text(json.dumps(rec))
    assert columnar.check_copy(d, CSV)[0] is None
    assert _out(cli, monkeypatch, "summary", camp, "--json") == want
    assert columnar.check_copy(d, CSV)[1] == "ok"
    assert _out(cli, monkeypatch, "summary", camp, "--json") == want


@pytest.mark.parametrize("which", ["measurements.parquet", "measurements.parquet.json"])
def test_linked_copy_is_refused(camp, cli, monkeypatch, tmp_path, which):
    _out(cli, monkeypatch, "summary", camp, "--json")
    d = camp / "runs" / "A-002"
    outside = tmp_path / "elsewhere"
    shutil.copyfile(d / which, outside)
    before = outside.read_bytes()
    (d / which).unlink()
    (d / which).symlink_to(outside)
    monkeypatch.setenv("MPITEMPO_COLUMNAR", "on")
    code, out, err = cli("summary", camp, "--json")
    assert code != 0 and out == ""
    assert "symbolic link" in err and which in err and err.count("\n") == 1
    assert outside.read_bytes() == before and (d / which).is_symlink()


def test_hard_linked_copy_is_refused(camp, cli, monkeypatch, tmp_path):
    _out(cli, monkeypatch, "summary", camp, "--json")
    p = camp / "runs" / "A-003" / "measurements.parquet"
    os.link(p, tmp_path / "other")
    code, _, err = cli("summary", camp, "--json")
    assert code != 0 and "hard link" in err


def test_read_only_campaign_is_read_from_the_csv(camp, cli, monkeypatch):
    want = _out(cli, monkeypatch, "summary", camp, "--json", columnar_on=False)

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(columnar.tempfile, "mkdtemp", refuse)
    assert _out(cli, monkeypatch, "summary", camp, "--json") == want
    assert _out(cli, monkeypatch, "compare", camp, "--json") == _out(cli, monkeypatch, "compare", camp, "--json",
                                                                      columnar_on=False)
    assert _copies(camp) == []
    assert not list(camp.rglob(".columnar-*"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory(camp, cli, monkeypatch):   # pragma: no cover - CI runs as root here
    want = _out(cli, monkeypatch, "summary", camp, "--json", columnar_on=False)
    for d in (camp / "runs").iterdir():
        d.chmod(0o555)
    try:
        assert _out(cli, monkeypatch, "summary", camp, "--json") == want
        assert _copies(camp) == []
    finally:
        for d in (camp / "runs").iterdir():
            d.chmod(0o755)


def test_recorded_digests_spare_the_reading_until_a_file_changes(camp, cli, monkeypatch):
    _out(cli, monkeypatch, "summary", camp, "--json")
    read = []
    real = integrity._digest
    monkeypatch.setattr(integrity, "_digest", lambda p: read.append(p) or real(p))
    # freshly written: inside the racy window, so the next reader digests the files and records when
    integrity._CACHE.clear()
    _out(cli, monkeypatch, "summary", camp, "--json")
    assert read
    # as if that reading had been long after the files' last change
    for d in (camp / "runs").iterdir():
        rp = d / "measurements.parquet.json"
        rec = json.loads(rp.read_text())
        rec["csv_read_at_ns"] += 10 * columnar.RACY_NS
        rec["copy_read_at_ns"] += 10 * columnar.RACY_NS
        rp.write_text(json.dumps(rec))
    integrity._CACHE.clear()
    read.clear()
    _out(cli, monkeypatch, "summary", camp, "--json")
    assert read == []
    # a CSV edited (same size): read again, the copy found stale and rebuilt from the new rows
    csv = camp / "runs" / "A-001" / CSV
    text = csv.read_text()
    assert ",1," in text
    csv.write_text(text.replace(",1,", ",0,", 1))
    integrity._CACHE.clear()
    assert "files" not in json.loads((camp / "runs" / "A-001" / "meta.json").read_text())
    assert _out(cli, monkeypatch, "summary", camp, "--json") == _out(cli, monkeypatch, "summary", camp, "--json",
                                                                      columnar_on=False)
    assert any(str(csv) == str(p) for p in read)
    rec = json.loads((camp / "runs" / "A-001" / "measurements.parquet.json").read_text())
    assert rec["csv"]["crc32"] == integrity.digest(csv)[2]


def test_refused_campaign_keeps_no_copy(tmp_path, cli, monkeypatch):
    root = make_campaign(tmp_path / "r", runs=2, nrep=20)
    (root / "runs" / "B-001" / CSV).write_text((root / "runs" / "B-001" / CSV).read_text().splitlines()[0] + "\n")
    meta = json.loads((root / "runs" / "B-001" / "meta.json").read_text())
    meta.pop("files", None)
    (root / "runs" / "B-001" / "meta.json").write_text(json.dumps(meta))
    monkeypatch.setenv("MPITEMPO_COLUMNAR", "on")
    code, _, err = cli("summary", root, "--json")
    assert code != 0 and "B-001" in err
    assert _copies(root) == [] and not list(root.rglob(".columnar-*"))


def test_leftover_private_directories_are_removed(camp, cli, monkeypatch):
    """The directory of a copy never put in place (a reader killed while writing it) is removed once
    old; a fresh one (another reader writing now) and a link named like one are left alone."""
    d = camp / "runs" / "A-000"
    old, fresh = d / ".columnar-old", d / ".columnar-fresh"
    for x in (old, fresh):
        x.mkdir()
        (x / "measurements.parquet").write_bytes(b"partial")
    os.utime(old, (1, 1))
    target = camp.parent / "keep-me"
    target.mkdir()
    (d / ".columnar-link").symlink_to(target)
    os.utime(d / ".columnar-link", (1, 1), follow_symlinks=False)
    _out(cli, monkeypatch, "summary", camp, "--json")
    assert not old.exists() and fresh.exists() and target.exists()


def test_record_groups_that_do_not_fit_the_copy_are_not_used(camp, cli, monkeypatch):
    """The experiments listed in a record are checked against the copy's rows (counts, valid flags,
    order of the runtimes); a list that does not fit (here: 5 rows moved from one experiment to the
    one before it, so an experiment's runtimes are no longer sorted) is replaced by a query."""
    want = _out(cli, monkeypatch, "summary", camp, "--json", columnar_on=False)
    _out(cli, monkeypatch, "summary", camp, "--json")
    rp = camp / "runs" / "B-001" / "measurements.parquet.json"
    rec = json.loads(rp.read_text())
    g = rec["groups"]
    assert [x[:3] for x in g] == sorted(x[:3] for x in g)
    g[0][3], g[0][4] = g[0][3] + 5, g[0][4] + 5
    g[1][3], g[1][4] = g[1][3] - 5, g[1][4] - 5
    rp.write_text(json.dumps(rec))
    assert _out(cli, monkeypatch, "summary", camp, "--json") == want


def _edit_row(root, run, line_no, col, value):
    p = root / "runs" / run / CSV
    lines = p.read_text().splitlines(keepends=True)
    parts = lines[line_no - 1].rstrip("\n").split(",")
    parts[col] = value
    lines[line_no - 1] = ",".join(parts) + "\n"
    p.write_text("".join(lines))


@pytest.mark.parametrize("col,value,what", [
    (7, "2", "1 row(s) have a valid other than 0 or 1"),
    (7, "", "1 row(s) have a valid other than 0 or 1"),
    (8, "nan", "1 row(s) have a missing, NaN or infinite local_max_s"),
    (8, "-1e-06", "1 row(s) have a negative local_max_s"),
    (6, "1e300", "1 row(s) have a runtime_s above 1e9 s"),
    (8, "1e300", "1 row(s) have a local_max_s above 1e9 s"),
])
@pytest.mark.parametrize("columnar_on", [True, False])
def test_impossible_rows_are_refused_from_copy_and_csv(tmp_path, cli, monkeypatch, col, value, what, columnar_on):
    """A valid other than 0/1 (a cast read 2 as true), a NaN or negative local_max_s, a runtime above 1e9 s
    (it moved every mean): the run is refused naming the file and line, whether its rows come from a
    columnar copy written now or from the CSV; no copy is left."""
    root = make_campaign(tmp_path / "r", runs=2, nrep=20, seed=1)
    _edit_row(root, "A-001", 6, col, value)
    monkeypatch.setenv("MPITEMPO_COLUMNAR", "on" if columnar_on else "off")
    code, _, err = cli("summary", root, "--json")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"run 'A-001' of '{root}' is damaged: {what}" in err
    assert f"(the first: {root}/runs/A-001/{CSV}:6)" in err
    assert _copies(root) == [] and not list(root.rglob(".columnar-*"))


def test_a_record_without_the_new_checks_is_checked_again(camp, cli, monkeypatch):
    """A copy whose record predates the valid/local_max_s/too-long counts is not taken as clean: its rows
    are checked again (here a copy made from a row with valid 2 under an older record)."""
    _out(cli, monkeypatch, "summary", camp, "--json")
    assert columnar.clean(camp / "runs" / "A-000", CSV, 2)
    rp = camp / "runs" / "A-000" / "measurements.parquet.json"
    rec = json.loads(rp.read_text())
    for k in ("too_long", "bad_valid", "bad_local_max"):
        rec["checks"].pop(k)
    rp.write_text(json.dumps(rec))
    assert not columnar.clean(camp / "runs" / "A-000", CSV, 2)
