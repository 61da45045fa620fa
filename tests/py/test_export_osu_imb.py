"""`export --osu/--imb`: OSU Micro-Benchmarks and IMB text that the parsers users run read exactly.

ReFrame's OSU check (hpctestlib.microbenchmarks.mpi.osu, osu_benchmark) decides sanity with
``assert_found(rf'^{message_size}', stdout)`` and takes its latency with
``extractsingle(rf'^{message_size}\\s+(\\S+)', stdout, 1, float)``; hpctestlib is not part of the
reframe-hpc distribution on PyPI, so the test applies those patterns with ReFrame's own sanity
functions (reframe.utility.sanity) to every size of every exported file. IMB has no hpctestlib
check; its rows are read with ReFrame's extractall in the same way.
"""
import json
import re

import pytest

from mpitempo.io.synthetic import make_campaign

sn = pytest.importorskip("reframe.utility.sanity", reason="reframe-hpc is not installed (pip install '.[test]')")


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    d = tmp_path_factory.mktemp("osu")
    return make_campaign(d / "camp", {"mpich": 1.0, "ompi": 1.07}, runs=6, ops=("allreduce", "bcast", "alltoall"),
                         msizes=(8, 1024, 65536), nrep=60, seed=11)


def _summary(cli, camp, *args):
    code, out, err = cli("summary", camp, "--json", *args)
    assert code == 0, err
    return {(r["config"], r["op"], r["msize"]): r for r in json.loads(out)}


@pytest.mark.parametrize("values", ["runs", "pooled"])
def test_reframe_osu_check_reads_every_value(cli, camp, tmp_path, values):
    code, out, err = cli("export", camp, "--osu", tmp_path / "osu", "--values", values)
    assert code == 0, err
    summ = _summary(cli, camp)
    files = sorted((tmp_path / "osu").glob("osu_*.txt"))
    assert len(files) == 6                      # 3 ops x 2 configurations, one file each
    for f in files:
        op, cfg = f.name.split(".")[0][len("osu_"):], f.name.split(".")[1]
        text = f.read_text()
        title = {"allreduce": "Allreduce", "bcast": "Broadcast", "alltoall": "All-to-All Personalized Exchange"}[op]
        assert text.splitlines()[:2] == ["", f"# OSU MPI {title} Latency Test v7.4"]   # OSU's leading empty line
        for size in (8, 1024, 65536):
            r = summ[(cfg, op, size)]
            if values == "runs":
                want = (r["median_s"], r["min_s"], r["max_s"])
            else:
                p = r["pooled"]
                want = (p["mean_s"], p["min_s"], p["max_s"])
            # ReFrame's OSU sanity and performance functions
            assert sn.evaluate(sn.assert_found(rf"^{size}", str(f)))
            lat = sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)", str(f), 1, float))
            assert lat == round(want[0] * 1e6, 2)
            # every column of the row
            row = sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)$", str(f),
                                               [1, 2, 3, 4], [float, float, float, int]))
            assert row[:3] == tuple(round(v * 1e6, 2) for v in want)
            assert row[3] == r["pooled"]["n"] and row[3] <= r["measurements"]
        # the layout of a configure-built OSU 7.4 with -f: size left in 10 columns, 18-column latencies
        # (FIELD_WIDTH), 12-column iterations
        data = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
        assert len(data) == 3
        assert all(re.fullmatch(r"\d+ +( {0,17}\d+\.\d\d){3} +\d+", ln) and len(ln) == 10 + 3 * 18 + 12 for ln in data)


def test_reframe_imb_rows(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--imb", tmp_path / "imb", "--op", "allreduce", "--config", "ompi")
    assert code == 0, err
    files = list((tmp_path / "imb").iterdir())
    assert [f.name for f in files] == ["IMB-MPI1_Allreduce.ompi.np2.txt"]
    f = str(files[0])
    summ = _summary(cli, camp)
    assert sn.evaluate(sn.assert_found(r"^# Benchmarking Allreduce", f))
    assert sn.evaluate(sn.extractsingle(r"^# #processes = (\d+)", f, 1, int)) == 2
    rows = sn.evaluate(sn.extractall(r"^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4, 5],
                                     [int, int, float, float, float]))
    assert [r[0] for r in rows] == [8, 1024, 65536]
    for size, reps, tmin, tmax, tavg in rows:
        r = summ[("ompi", "allreduce", size)]
        assert (tmin, tmax, tavg) == (round(r["min_s"] * 1e6, 2), round(r["max_s"] * 1e6, 2),
                                      round(r["median_s"] * 1e6, 2))
        assert reps == r["pooled"]["n"]


def test_export_same_filter_as_summary(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--osu", "-", "--op", "bcast", "--config", "mpich", "--filter", "none")
    assert code == 0, err
    summ = _summary(cli, camp, "--filter", "none")
    got = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"^(\d+)\s+(\S+)", out, re.M)}
    assert got == {s: round(summ[("mpich", "bcast", s)]["median_s"] * 1e6, 2) for s in (8, 1024, 65536)}
    assert "(after no outlier filter)" in out


@pytest.mark.parametrize("args, msg", [
    (["--osu", "-", "--op", "nosuch"], "--op 'nosuch' is not in the data: choose from"),
    (["--osu", "-", "--config", "x"], "--config 'x' is not in the data"),
    (["--osu", "-", "--imb", "-"], "cannot both write to stdout"),
    (["--osu", "-", "--values", "mean"], "'mean' is not one of"),
])
def test_export_bad_input(cli, camp, tmp_path, args, msg):
    code, out, err = cli("export", camp, *args)
    assert code == 2 and msg in err and err.count("\n") == 1 and out == ""


def test_export_target_is_a_file(cli, camp, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    code, out, err = cli("export", camp, "--osu", f)
    assert code == 2 and "is not a directory" in err
