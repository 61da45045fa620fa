"""summary / compare / ingest / export on synthetic campaign directories (no MPI)."""
import json

import duckdb
import numpy as np
import pytest

from mpitempo.io.synthetic import make_campaign, write_run

SUMMARY_KEYS = {"config", "op", "msize", "nprocs", "runs", "median_s", "mean_s", "min_s", "max_s", "spread_pct",
                "measurements", "invalid"}
COMPARE_KEYS = {"op", "msize", "nprocs", "a", "b", "runs_a", "runs_b", "median_a_s", "median_b_s", "delta_pct",
                "p_value", "stars"}


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    """Two configurations, B 3% slower, 30 runs each."""
    return make_campaign(tmp_path_factory.mktemp("c") / "camp", {"A": 1.0, "B": 1.03}, runs=30, nrep=60, seed=5)


def test_summary_keys_and_values(cli, camp):
    code, out, err = cli("summary", camp, "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 8 and all(SUMMARY_KEYS <= set(r) for r in rows)
    r = rows[0]
    assert r["runs"] == 30 and r["filter"]["kind"] == "tukey" and r["filter"]["k"] == 1.5
    assert r["median_ci"]["lo_s"] <= r["median_s"] <= r["median_ci"]["hi_s"]
    assert r["run_medians"]["n"] == 30 and r["run_medians"]["median_s"] == pytest.approx(r["median_s"])
    # the same numbers by hand from the raw files
    con = duckdb.connect()
    x = con.execute(f"SELECT runtime_s FROM read_csv('{camp}/runs/A-000/measurements.csv') "
                    "WHERE op = ? AND msize = ?", [r["op"], r["msize"]]).fetchnumpy()["runtime_s"]
    q1, q3 = np.quantile(x, [0.25, 0.75])
    kept = x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]
    code, out, _ = cli("summary", camp, "--json", "--per-run")
    pr = [p for p in json.loads(out) if p["run_id"] == "A-000" and p["op"] == r["op"] and p["msize"] == r["msize"]][0]
    assert pr["n"] == kept.size and pr["median_s"] == pytest.approx(np.median(kept))
    assert pr["std_s"] == pytest.approx(np.std(kept, ddof=1)) and pr["outliers"] == x.size - kept.size
    code, out, _ = cli("summary", camp, "--json", "--per-run", "--filter", "none")
    pr = [p for p in json.loads(out) if p["run_id"] == "A-000" and p["op"] == r["op"] and p["msize"] == r["msize"]][0]
    assert pr["n"] == x.size and pr["mean_s"] == pytest.approx(x.mean())


def test_summary_text(cli, camp):
    code, out, err = cli("summary", camp, "--filter", "cutcoef", "--cut-coef", "3")
    assert code == 0 and "Found" in out and "outliers among" in out and "x median" in out and "(times in µs)" in out


def test_compare_detects_three_percent(cli, camp):
    code, out, err = cli("compare", camp, "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 4 and all(COMPARE_KEYS <= set(r) for r in rows)
    for r in rows:
        assert r["a"] == "A" and r["b"] == "B" and r["runs_a"] == r["runs_b"] == 30
        assert r["significant"] and r["stars"] and 1.5 < r["delta_pct"] < 4.5
    code, out, err = cli("compare", camp, "--alternative", "greater", "--json")
    assert all(r["p_value"] > 0.5 for r in json.loads(out))        # A is not slower
    code, out, err = cli("compare", camp, "--holm", "--markdown")
    assert code == 0 and out.startswith("| op |") and "p (Holm)" in out and "***" in out
    code, out, err = cli("compare", camp, "--csv")
    assert code == 0 and out.splitlines()[0].startswith("factor,a,b,op,msize") and len(out.splitlines()) == 5
    code, out, err = cli("compare", camp)
    assert code == 0 and "A [µs]" in out and "%" in out and "0.0" in out and "***" in out


def test_compare_two_dirs_same_distribution(cli, tmp_path):
    a = make_campaign(tmp_path / "a", {"x": 1.0}, runs=3, seed=1)
    b = make_campaign(tmp_path / "b", {"x": 1.0}, runs=3, seed=2, msizes=(8, 4096))
    code, out, err = cli("compare", a, b, "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert {r["msize"] for r in rows} == {8} and all(r["a"] == "a" and r["b"] == "b" for r in rows)
    assert "only in a (not compared): allreduce 1K np=2, bcast 1K np=2" in err
    assert "only in b" in err and "4K" in err
    assert "too few runs to reach p <= 0.05" in err and "smallest possible p = 0.1" in err
    code, out, err = cli("compare", a, b)
    assert code == 0 and "n.s." in out


def test_compare_warns_about_other_factors(cli, tmp_path):
    c = make_campaign(tmp_path / "c", {"A": 1.0, "B": 1.0}, runs=5, seed=3,
                      meta={"B": {"timer": {"name": "rdtscp"}}})
    code, out, err = cli("compare", c, "--json")
    assert code == 0 and "also differ in timer: monotonic vs rdtscp" in err
    code, out, err = cli("compare", c, "--by", "timer", "--json")
    assert code == 0 and {r["a"] for r in json.loads(out)} == {"monotonic"} and "differ in config" in err


@pytest.mark.parametrize("args,msg", [
    (["--by", "colour"], "unknown factor 'colour' for --by (allowed: campaign, config"),
    (["--by", "library"], "factor 'library' has only one level ('SynthMPI 1.0')"),
    (["--base", "Z"], "unknown level 'Z' of factor 'config' for --base (levels: A, B)"),
    (["--json", "--csv"], "at most one of --json, --markdown, --csv"),
    (["--filter", "cutcoef", "--cut-coef", "0.5"], "invalid --cut-coef 0.5: must be a finite number > 1"),
    (["--tukey-k", "-1"], "invalid --tukey-k -1:"),
])
def test_compare_bad_options(cli, camp, args, msg):
    code, out, err = cli("compare", camp, *args)
    assert code == 2 and msg in err and err.count("\n") == 1 and out == "", err


def test_bad_campaign_dirs(cli, tmp_path):
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    code, out, err = cli("compare", tmp_path / "empty")
    assert code == 2 and "has no complete runs" in err and err.count("\n") == 1
    part = tmp_path / "partial"
    (part / "runs" / "x-000").mkdir(parents=True)
    (part / "runs" / "x-000" / "measurements.csv").write_text("op,msize\n")
    code, out, err = cli("summary", part)
    assert code == 2 and "no complete runs (0 failed, 1 incomplete)" in err
    code, out, err = cli("compare", tmp_path)
    assert code == 2 and "not a campaign directory" in err
    code, out, err = cli("compare", tmp_path / "empty", tmp_path / "empty", tmp_path / "empty")
    assert code == 2 and "one or two campaign directories" in err
    bad = make_campaign(tmp_path / "bad", {"A": 1.0}, runs=1)
    (bad / "runs" / "A-000" / "meta.json").write_text("{not json")
    code, out, err = cli("summary", bad)
    assert code == 2 and "is not valid JSON" in err
    garbled = make_campaign(tmp_path / "garbled", {"A": 1.0}, runs=1)
    (garbled / "runs" / "A-000" / "measurements.csv").write_text("op,msize,nprocs\nx,y\n")
    code, out, err = cli("summary", garbled)
    assert code == 2 and "cannot read measurements" in err and err.count("\n") == 1


def test_run_with_zero_valid_measurements(cli, tmp_path):
    c = make_campaign(tmp_path / "c", {"A": 1.0, "B": 1.0}, runs=4, ops=("bcast",), msizes=(8,), nrep=20)
    write_run(c, "A-003", "A", 3, "bcast", 8, np.full(20, 1e-6), valid=np.zeros(20))
    code, out, err = cli("compare", c, "--json")
    assert code == 0, err
    r = json.loads(out)[0]
    assert r["runs_a"] == 3 and r["runs_b"] == 4
    assert "1 run(s) with no valid measurement left out: A-003 (bcast 8 np=2)" in err
    code, out, err = cli("summary", c)
    assert code == 0 and "no valid measurement" in out and "20 invalid measurements" in out


def test_ingest_store_and_parquet(cli, tmp_path):
    a = make_campaign(tmp_path / "a", {"A": 1.0, "B": 1.1}, runs=6, seed=1)
    b = make_campaign(tmp_path / "b", {"A": 1.0}, runs=6, seed=2)
    db = tmp_path / "results.duckdb"
    code, out, err = cli("ingest", a, b, "--db", db, "--json")
    assert code == 0, err
    assert [r["measurements"] for r in json.loads(out)] == [4800, 2400]
    code, out, err = cli("ingest", a, "--db", db, "--json")       # again: replaced, not duplicated
    assert code == 0 and json.loads(out)[0]["replaced"] is True
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM meas").fetchone()[0] == 7200
    assert con.execute("SELECT count(*) FROM campaigns").fetchone()[0] == 2
    con.close()
    code, out, err = cli("summary", db, "--json")
    rows = json.loads(out)
    assert {(r["campaign"], r["config"]) for r in rows} == {("a", "A"), ("a", "B"), ("b", "A")}
    code, out2, err = cli("summary", a, "--json")
    direct = {(r["op"], r["msize"], r["config"]): r["median_s"] for r in json.loads(out2)}
    assert all(direct[(r["op"], r["msize"], r["config"])] == r["median_s"] for r in rows if r["campaign"] == "a")
    code, out, err = cli("compare", db, "--by", "campaign", "--json")
    assert code == 0 and {(r["a"], r["b"]) for r in json.loads(out)} == {("a", "b")}
    pq = tmp_path / "pq"
    code, out, err = cli("export", a, "--parquet", pq)
    assert code == 0, err
    n = duckdb.connect().execute(f"SELECT count(*), count(DISTINCT run_id) FROM '{pq}/measurements.parquet'").fetchone()
    assert n == (4800, 12)
    code, out, err = cli("ingest", a, "--db", tmp_path / "a" / "campaign.toml")
    assert code == 2 and "refusing to write --db" in err and "'campaign.toml'" in err   # a file of the campaign read
    (tmp_path / "notes.txt").write_text("not a store\n")
    code, out, err = cli("ingest", a, "--db", tmp_path / "notes.txt")
    assert code == 2 and "cannot open store" in err
    code, out, err = cli("summary", tmp_path / "a" / "campaign.toml")
    assert code == 2 and err.count("\n") == 1


def test_export_needs_a_format(cli, tmp_path):
    (tmp_path / "runs").mkdir()
    code, out, err = cli("export", str(tmp_path))
    assert code == 2 and "--parquet" in err and "--osu" in err
