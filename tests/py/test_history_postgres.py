"""The history store on a real PostgreSQL server, started by the test in a temporary directory (initdb,
pg_ctl; as the postgres user when the tests run as root, which PostgreSQL refuses): the same entries and
the same change points as DuckDB, idempotent and concurrent ingests from several processes."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mpitempo.history.synthetic import make_history


def _pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / name).exists():
            return str(d / name)
    return None


INITDB, PG_CTL = _pg_bin("initdb"), _pg_bin("pg_ctl")
try:
    import psycopg  # noqa: F401
    HAVE_DRIVER = True
except ImportError:
    HAVE_DRIVER = False

pytestmark = [
    pytest.mark.skipif(INITDB is None or PG_CTL is None,
                       reason="PostgreSQL is not installed (initdb, pg_ctl: Debian's postgresql package)"),
    pytest.mark.skipif(not HAVE_DRIVER, reason="the psycopg driver is not installed (pip install 'mpitempo[postgresql]')"),
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def pg():
    """postgresql://mt@127.0.0.1:PORT/postgres of a throwaway server; stopped and removed afterwards."""
    root = os.geteuid() == 0
    if root:
        try:
            import pwd

            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
    d = Path(tempfile.mkdtemp(prefix="mt-pg-", dir="/tmp"))
    as_pg = ["runuser", "-u", "postgres", "--"] if root else []
    if root:
        os.chown(d, pw.pw_uid, pw.pw_gid)
    port = _free_port()
    try:
        r = subprocess.run(as_pg + [INITDB, "-D", str(d / "data"), "-A", "trust", "-U", "mt", "--no-sync"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(as_pg + [PG_CTL, "-D", str(d / "data"), "-l", str(d / "log"), "-w", "-t", "120", "-o",
                                    f"-p {port} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off "
                                    "-c max_connections=40", "start"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr + (d / "log").read_text()
        yield f"postgresql://mt@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_pg + [PG_CTL, "-D", str(d / "data"), "-m", "immediate", "stop"], capture_output=True,
                       timeout=120)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def db(pg):
    """A fresh database on the server for each test."""
    import uuid

    import psycopg

    name = "h" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    return pg.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    return make_history(tmp_path_factory.mktemp("pgh") / "c", nights=12, change_at=7, factor=1.10, loaded=(3, 4))


def test_same_history_as_duckdb(cli, db, nights, tmp_path):
    code, out, err = cli("ingest", *nights, "--db", db, "--json")
    assert code == 0, err
    assert all(r["history"] == "new" for r in json.loads(out))
    duck = tmp_path / "h.duckdb"
    assert cli("ingest", *nights, "--db", duck)[0] == 0
    code, pg_out, err = cli("history", "--db", db, "--json")
    assert code == 1, err
    code, duck_out, _ = cli("history", "--db", duck, "--json")
    a, b = json.loads(pg_out), json.loads(duck_out)
    assert len(a["changes"]) == 2
    for k in ("series", "changes", "regressions"):   # the same numbers from both stores
        assert a[k] == b[k]
    code, out, _ = cli("history", "--db", db, "--op", "bcast")
    assert code == 2 and "--op 'bcast' is not in the store" in _


def test_ingest_idempotent(cli, db, nights):
    assert cli("ingest", *nights[:3], "--db", db)[0] == 0
    code, out, _ = cli("ingest", *nights[:4], "--db", db, "--json")
    assert [r["history"] for r in json.loads(out)] == ["known"] * 3 + ["new"]
    import psycopg

    with psycopg.connect(db) as con:
        assert con.execute("SELECT count(*) FROM hist_entries").fetchone()[0] == 4
        assert con.execute("SELECT count(*) FROM hist_points").fetchone()[0] == 4 * 5 * 2


def test_concurrent_ingests_from_several_processes(db, nights):
    """Six processes at once on an empty database (they race to create the schema), two pairs of them
    with the same campaigns: each campaign is one entry, every process succeeds."""
    sets = [nights[0:4], nights[4:8], nights[8:12], nights[8:12], nights[0:2], nights[5:7]]
    procs = [subprocess.Popen([sys.executable, "-m", "mpitempo.cli", "ingest", *map(str, s), "--db", db, "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in sets]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    import psycopg

    with psycopg.connect(db) as con:
        assert con.execute("SELECT count(*), count(DISTINCT digest) FROM hist_entries").fetchone() == (12, 12)
        assert con.execute("SELECT count(*) FROM hist_points").fetchone()[0] == 12 * 5 * 2
    news = sum(r["history"] == "new" for o in outs for r in json.loads(o[0]))
    assert news == 12


def test_bad_server_and_database(cli, pg, nights):
    base = pg.rsplit("/", 1)[0]
    code, out, err = cli("ingest", nights[0], "--db", base + "/nosuchdb")
    assert code == 2 and err.count("\n") == 1 and "cannot connect to --db" in err and "nosuchdb" in err
    code, out, err = cli("history", "--db", base + "/postgres")
    assert code == 2 and "has no history" in err
