"""`mpitempo ingest` into a DuckDB history and `mpitempo history` on synthetic nightly campaigns with
controlled dates and factors: the change is found at its night with its size and the factor that changed,
loaded (flagged) nights make no change point, the exit status says regression, the filters and formats work,
ingest is idempotent and concurrent ingests are safe; bad input is one line, status 2, nothing written."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import duckdb
import pytest

from mpitempo.history.synthetic import make_history


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    d = tmp_path_factory.mktemp("hist")
    return make_history(d / "c", nights=12, change_at=7, factor=1.10, loaded=(3, 4))


@pytest.fixture(scope="module")
def store(nights, tmp_path_factory):
    from mpitempo.cli import main

    db = tmp_path_factory.mktemp("db") / "h.duckdb"
    assert main(["ingest", *map(str, nights), "--db", str(db)]) == 0
    return db


def test_change_found_with_size_dates_and_factor(cli, store):
    code, out, err = cli("history", "--db", store, "--json")
    assert code == 1, err                     # a regression in the latest 5 entries: exit status 1
    res = json.loads(out)
    assert len(res["series"]) == 2 and all(len(s["entries"]) == 12 for s in res["series"])
    assert len(res["changes"]) == 2, res["changes"]
    for c in res["changes"]:
        assert c["first_after"].startswith("2026-10-08") and c["last_before"].startswith("2026-10-07")
        assert c["first_after_campaign"] == "night07"
        assert c["size_pct"] == pytest.approx(10, abs=2.5) and c["ci_pct"][0] > 5
        assert c["factors_changed"]["library"] == ["SynthMPI 1.0", "SynthMPI 1.1"]
        assert c["regression"] and c["p_value"] <= 0.05
    # the loaded nights (40% slower, flagged shared_cpu) are shown, flagged, and no change point
    s = res["series"][0]
    assert [e["used"] for e in s["entries"]][3:5] == [False, False]
    assert all(f == "shared_cpu" for e in s["entries"][3:5] for f in e["flags"])


def test_threshold_latest_since_and_filters(cli, store):
    assert cli("history", "--db", store, "--threshold", "15")[0] == 0      # +10% is below 15%
    assert cli("history", "--db", store, "--latest", "4")[0] == 0          # night 7 is not in the latest 4
    code, out, err = cli("history", "--db", store, "--since", "2026-10-02", "--json")
    assert code == 1 and all(len(s["entries"]) == 11 for s in json.loads(out)["series"])
    # 2 entries before the change and 5 after: a permutation of 7 entries cannot reach p <= 0.05 (2/21)
    code, out, err = cli("history", "--db", store, "--since", "2026-10-06", "--json")
    assert code == 0 and all(len(s["entries"]) == 7 for s in json.loads(out)["series"])
    code, out, _ = cli("history", "--db", store, "--op", "allreduce", "--machine", "node0", "--json")
    assert code == 1 and len(json.loads(out)["series"]) == 2
    code, out, _ = cli("history", "--db", store, "--since", "2026-10-09")   # after the change: none
    assert code == 0 and "no change point" in out


def test_table_and_csv(cli, store):
    code, out, _ = cli("history", "--db", store)
    assert code == 1 and "REGRESSION" in out and "library: SynthMPI 1.0 -> SynthMPI 1.1" in out
    assert "2026-10-07..2026-10-08" in out
    code, out, _ = cli("history", "--db", store, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 1 and len(rows) == 2 and {r["msize"] for r in rows} == {"8", "1024"}
    assert all(r["regression"] == "1" and 7 < float(r["size_pct"]) < 13 for r in rows)
    assert json.loads(rows[0]["factors_changed"])["library"][1] == "SynthMPI 1.1"


def test_same_without_flags_is_a_change(cli, tmp_path):
    """The loaded nights, unflagged, do make change points (so the flag is what keeps them out)."""
    camps = make_history(tmp_path / "c", nights=12, change_at=None, loaded=(9, 10, 11), load_factor=1.4)
    db = tmp_path / "f.duckdb"
    assert cli("ingest", *camps, "--db", db)[0] == 0
    code, out, _ = cli("history", "--db", db, "--json", "--latest", "12")
    assert code == 0 and json.loads(out)["changes"] == []
    for c in camps[9:]:
        for m in c.glob("runs/*/meta.json"):
            meta = json.loads(m.read_text())
            meta.pop("shared_cpu")
            m.write_text(json.dumps(meta))
    db = tmp_path / "u.duckdb"
    assert cli("ingest", *camps, "--db", db)[0] == 0
    code, out, _ = cli("history", "--db", db, "--json", "--latest", "12")
    assert code == 1 and [c["first_after_campaign"] for c in json.loads(out)["changes"]] == ["night09"] * 2


def test_ingest_idempotent_by_digest(cli, nights, tmp_path):
    db = tmp_path / "h.duckdb"
    code, out, err = cli("ingest", nights[0], nights[1], "--db", db, "--json")
    assert code == 0, err
    first = json.loads(out)
    assert [r["history"] for r in first] == ["new", "new"] and len({r["digest"] for r in first}) == 2
    code, out, _ = cli("ingest", nights[1], "--db", db, "--json")
    assert json.loads(out)[0]["history"] == "known" and json.loads(out)[0]["digest"] == first[1]["digest"]
    # the same campaign copied elsewhere is the same entry
    import shutil

    shutil.copytree(nights[2], tmp_path / "copy")
    a = json.loads(cli("ingest", nights[2], "--db", db, "--json")[1])[0]
    b = json.loads(cli("ingest", tmp_path / "copy", "--db", db, "--json")[1])[0]
    assert a["digest"] == b["digest"] and b["history"] == "known"
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM hist_entries").fetchone()[0] == 3
    assert con.execute("SELECT count(*) FROM hist_points").fetchone()[0] == 3 * 5 * 2
    f = json.loads(con.execute("SELECT factors FROM hist_entries LIMIT 1").fetchone()[0])
    assert f["library"] == "SynthMPI 1.0" and f["hosts"] == "node0" and "compiler" in f
    con.close()


def test_concurrent_ingests_into_one_duckdb_file(nights, tmp_path):
    """Four processes ingest at once (two of them the same campaign): each campaign is one entry."""
    db = tmp_path / "h.duckdb"
    sets = [nights[0:3], nights[3:6], nights[6:9], nights[6:9]]
    procs = [subprocess.Popen([sys.executable, "-m", "mpitempo.cli", "ingest", *map(str, s), "--db", str(db),
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in sets]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT digest) FROM hist_entries").fetchone() == (9, 9)
    assert con.execute("SELECT count(*) FROM hist_points").fetchone()[0] == 9 * 5 * 2
    con.close()
    states = sorted(r["history"] for o in outs[2:] for r in json.loads(o[0]))
    assert states == ["known"] * 3 + ["new"] * 3


@pytest.mark.parametrize("args, says", [
    (["--db", "mysql://h/db"], "invalid --db 'mysql://h/db'"),
    (["--db", "postgresql://h"], "name the database"),
    (["--db", "postgresql://h:70000/db"], "Port out of range"),
    (["--db", "{tmp}/missing.duckdb"], "not found"),
    (["--threshold", "0"], "invalid --threshold '0'"),
    (["--threshold", "nan"], "invalid --threshold 'nan'"),
    (["--threshold", "abc"], "invalid --threshold 'abc'"),
    (["--latest", "0"], "invalid --latest '0'"),
    (["--alpha", "1"], "invalid --alpha '1'"),
    (["--permutations", "5"], "invalid --permutations '5'"),
    (["--since", "yesterday"], "invalid --since 'yesterday'"),
    (["--op", "bcast"], "--op 'bcast' is not in the store: choose from allreduce"),
    (["--machine", "nodeX"], "--machine 'nodeX' is not in the store: choose from node0"),
    (["--op", "allreduce,"], "invalid --op 'allreduce,'"),
    (["--json", "--csv"], "--json and --csv"),
])
def test_bad_input_one_line_nothing_written(cli, store, tmp_path, args, says):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    dbargs = [] if "--db" in args else ["--db", store]
    code, out, err = cli("history", *dbargs, *args, "--html", tmp_path / "dash")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mpitempo: error: ") and says in err, err
    assert not (tmp_path / "dash").exists()


def test_ingest_bad_db_and_machine(cli, nights, tmp_path):
    for args, says in ((["--db", "sqlite:///x.db"], "invalid --db 'sqlite:///x.db'"),
                       (["--db", tmp_path / "h.duckdb", "--machine", " "], "invalid --machine ' '"),
                       (["--db", "postgresql://127.0.0.1:1/db"], "cannot connect to --db"),
                       (["--db", "postgresql://u:s3cret@127.0.0.1:1/db"], "postgresql://u:***@127.0.0.1:1/db")):
        code, out, err = cli("ingest", nights[0], *args)
        assert code == 2 and err.count("\n") == 1 and says in err and "s3cret" not in err, err
    assert not (tmp_path / "h.duckdb").exists()


def test_machine_name_given_at_ingest(cli, nights, tmp_path):
    db = tmp_path / "h.duckdb"
    assert cli("ingest", *nights[:5], "--db", db, "--machine", "cluster-a")[0] == 0
    code, out, _ = cli("history", "--db", db, "--machine", "cluster-a", "--json")
    assert code == 0 and {s["machine"] for s in json.loads(out)["series"]} == {"cluster-a"}


def test_store_without_history(cli, tmp_path):
    db = tmp_path / "x.duckdb"
    duckdb.connect(str(db)).close()
    code, _, err = cli("history", "--db", db)
    assert code == 2 and "has no history" in err


def test_ingest_date_backfills_one_night(cli, nights, tmp_path):
    """ingest --date gives the entry its night: the history follows the dates given, not the runs' start;
    the measured start stays as the factor measured_at (never a changed factor) and the values are the same."""
    db, plain = tmp_path / "h.duckdb", tmp_path / "p.duckdb"
    for i, n in enumerate(nights[:4]):                    # back-filled in reverse: night00 is the latest
        code, out, err = cli("ingest", n, "--db", db, "--date", f"2027-01-{10 - i:02d}", "--json")
        assert code == 0, err
    assert cli("ingest", *nights[:4], "--db", plain)[0] == 0
    res = json.loads(cli("history", "--db", db, "--json")[1])
    ents = res["series"][0]["entries"]
    assert [e["name"] for e in ents] == ["night03", "night02", "night01", "night00"]
    assert ents[0]["started_at"] == "2027-01-07T00:00:00.000000Z"
    assert ents[-1]["factors"]["measured_at"].startswith("2026-10-01T02:00:00")
    assert all("measured_at" not in c["factors_changed"] for c in res["changes"])
    ref = json.loads(cli("history", "--db", plain, "--json")[1])["series"][0]["entries"]
    assert {e["name"]: e["medians"] for e in ents} == {e["name"]: e["medians"] for e in ref}
    # a time of day and a zone are taken, stored in UTC
    assert cli("ingest", nights[5], "--db", db, "--date", "2027-02-01T03:00:00+02:00")[0] == 0
    last = json.loads(cli("history", "--db", db, "--json")[1])["series"][0]["entries"][-1]
    assert last["name"] == "night05" and last["started_at"] == "2027-02-01T01:00:00.000000Z"


def test_ingest_bad_date(cli, nights, tmp_path):
    db = tmp_path / "h.duckdb"
    for args, says in ((["--date", "2027-13-01"], "invalid --date '2027-13-01': give a date YYYY-MM-DD"),
                       (["--date", "yesterday"], "invalid --date 'yesterday'"),
                       (["--date", ""], "invalid --date ''"),
                       ([nights[1], "--date", "2027-01-01"], "give one DIR with it (got 2)")):
        code, out, err = cli("ingest", nights[0], *args, "--db", db)
        assert code == 2 and err.count("\n") == 1 and says in err, err
    assert not db.exists()


def test_load_reads_columns(store):
    """store.load returns the points as numpy columns (no object per point), and the series built from them
    are those built from the same points as row dicts."""
    import numpy as np

    from mpitempo.history import store as st
    from mpitempo.history.analyze import build_series

    ents, pts = st.load(str(store))
    assert isinstance(pts, st.Points) and len(pts) == 12 * 2 * 5
    assert pts.median_s.dtype == np.float64 and pts.sid.dtype == np.int64 and pts.eid.dtype == np.int64
    assert set(pts.flag_names) == {"", "shared_cpu"}
    with duckdb.connect(str(store), read_only=True) as con:
        rows = [dict(zip(st.POINT_COLUMNS, r))
                for r in con.execute(f"SELECT {', '.join(st.POINT_COLUMNS)} FROM hist_points").fetchall()]
    assert build_series(ents, pts) == build_series(ents, rows)
    ents2, pts2 = st.load(str(store), since="2026-10-05", ops=["allreduce"])
    assert len(ents2) == 8 and len(pts2) == 8 * 2 * 5 and set(pts2.eid.tolist()) == set(range(8))
