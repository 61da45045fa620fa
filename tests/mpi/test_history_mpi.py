"""A history of real campaigns: six tiny campaigns of the synthetic op `delay` (busy-wait 50 µs, then 150 µs
from the fourth on), ingested into DuckDB: the entries carry the real runs' factors (MPI library string,
kernel, the delay as an operation parameter), their per-run medians show the delay, the runs the start-up
check found sharing a CPU are flagged, ingesting again adds nothing, and `history` reads them back."""
from __future__ import annotations

import json

import duckdb
import pytest

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory, build):
    from mpitempo.cli import main

    d = tmp_path_factory.mktemp("realhist")
    out = []
    for i, delay in enumerate(["50us"] * 3 + ["150us"] * 3):
        c = d / f"night{i}"
        assert main(["run", "--ops", "delay", "--delay", delay, "--nrep", "20", "--mpiruns", "2", "-o", str(c),
                     "--quiet", "--no-summary"]) == 0
        out.append(c)
    return out


def test_real_campaigns_in_a_history(cli, campaigns, tmp_path):
    db = tmp_path / "h.duckdb"
    code, out, err = cli("ingest", *campaigns, "--db", db, "--json")
    assert code == 0, err
    recs = json.loads(out)
    assert [r["history"] for r in recs] == ["new"] * 6 and len({r["digest"] for r in recs}) == 6
    code, out, _ = cli("ingest", campaigns[2], "--db", db, "--json")
    assert json.loads(out)[0]["history"] == "known"

    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT name, factors, flagged_runs FROM hist_entries ORDER BY started_at").fetchall()
    assert [r[0] for r in rows] == [c.name for c in campaigns]          # in the order they ran
    for (name, factors, _), delay in zip(rows, ["50us"] * 3 + ["150us"] * 3):
        f = json.loads(factors)
        assert f["library"] and f["kernel"] and f["compiler"]
        assert json.loads(f["operation_params"])["delay"] == delay
    meds = con.execute("SELECT e.name, p.median_s, p.flags, p.op FROM hist_points p "
                       "JOIN hist_entries e USING (digest) ORDER BY e.started_at").fetchall()
    con.close()
    assert len(meds) == 6 * 2 and {m[3] for m in meds} == {"delay"}
    # a busy-wait can be stretched by other load, never shortened: lower bounds only
    for name, med, flags, _ in meds:
        assert med > (140e-6 if int(name[-1]) >= 3 else 45e-6), (name, med)

    code, out, err = cli("history", "--db", db, "--json", "--latest", "6")
    assert code in (0, 1), err
    res = json.loads(out)
    (s,) = res["series"]
    assert len(s["entries"]) == 6 and s["op"] == "delay"
    # a run is left out of the detection exactly when it is flagged (shared CPU on a loaded machine, ...)
    for e in s["entries"]:
        assert e["used"] == any(not f for f in e["flags"])
    assert (code == 1) == bool(res["regressions"])
