"""`export --osu/--imb` with per-rank raw times: Avg / Min / Max over ranks as OSU and IMB define
them (each rank's average time of one call, then mean / min / max over ranks; per mpirun, then the
median over mpiruns), read back with ReFrame's own sanity functions and checked against numbers
computed here, independently, from perrank.bin (parsed with struct) and measurements.csv (Tukey
fences with numpy)."""
from __future__ import annotations

import csv
import json
import struct

import numpy as np
import pytest

from mpitempo.io.synthetic import op_info

sn = pytest.importorskip("reframe.utility.sanity", reason="reframe-hpc is not installed (pip install '.[test]')")

SIZES = (8, 1024, 65536)
NPROCS = 4
NREP = 50


def _write_perrank(path, start, end, exps, reps, valid, calls):
    nmeas, p = start.shape
    with open(path, "wb") as f:
        f.write(b"MTPRANK1" + struct.pack("<6I", 48, 1, p, calls, 0, 0x01020304) + struct.pack("<2Q", nmeas, 16 + 16 * p))
        for i in range(nmeas):
            f.write(struct.pack("<4I", exps[i], reps[i], valid[i], 0) + struct.pack(f"<{2 * p}d", *start[i], *end[i]))


def _write_run(root, cfg, run, rng, slow, calls=1, perrank=True, ops=("allreduce",), shape=None, timed=None,
               inner=None):
    """One mpirun: every rank has its own latency level (rank r: 1 + 0.15 r, or shape[op][r]),
    right-skewed noise, a few large outliers and some invalid measurements; runtime_s = max over
    ranks of the local runtime of one call, as the barrier and loop schemes define it. inner: msize ->
    calls per measurement decided by the run (--inner-min-time; meta.json experiments[].inner), the
    header keeping `calls`."""
    d = root / "runs" / f"{cfg}-{run:03d}"
    d.mkdir(parents=True)
    exps = [(op, m) for op in ops for m in SIZES]
    order = rng.permutation(len(exps))
    lines = ["op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s"]
    S, E, X, R, V = [], [], [], [], []
    t = 10.0 + run
    for exp, k in enumerate(order):
        op, msize = exps[k]
        base = slow * (1e-6 + 0.4e-9 * msize) * (1.6 if op == "allreduce" else 1.0)
        for rep in range(NREP):
            f = np.asarray((shape or {}).get(op, 1 + 0.15 * np.arange(NPROCS)), dtype=float)
            level = base * f * rng.lognormal(0, 0.1, NPROCS)
            if rng.random() < 0.04:
                level *= rng.uniform(5, 20)
            start = t + rng.uniform(0, 2e-7, NPROCS)
            c = (inner or {}).get(msize, calls)
            end = start + level * c
            valid = int(rng.random() > 0.03)
            lmax = float(((end - start) / c).max())
            lines.append(f"{op},{msize},{NPROCS},barrier,{exp},{rep},{lmax!r},{valid},{lmax!r}")
            S.append(start), E.append(end), X.append(exp), R.append(rep), V.append(valid)
            t = float(end.max()) + 1e-6
    (d / "measurements.csv").write_text("\n".join(lines) + "\n")
    if perrank:
        _write_perrank(d / "perrank.bin", np.array(S), np.array(E), X, R, V, calls)
    (d / "meta.json").write_text(json.dumps({
        "format_version": 1, "kind": "bench", "config": cfg, "run_index": run, "nprocs": NPROCS,
        "scheme": {"name": "barrier", "per_rank": perrank},
        "operation_params": {"datatype": "byte", "bw_window": 64, "bw_rbuf": "window", "rma_sync": "lock",
                             "rma_win": "allocate"},
        "experiments": [{"exp": e, "op": exps[k][0], "msize": exps[k][1], **op_info(*exps[k], NPROCS),
                         **({"timed_ranks": (timed or {})[exps[k][0]]} if exps[k][0] in (timed or {}) else {}),
                         **({"inner": inner[exps[k][1]]} if exps[k][1] in (inner or {}) else {})}
                        for e, k in enumerate(order)]}))


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks") / "camp"
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "ranks"\n')
    rng = np.random.default_rng(5)
    for run in range(5):                                    # odd: the median is one mpirun's value
        _write_run(root, "mpich", run, rng, 1.0 + 0.1 * (run % 2), ops=("allreduce", "bcast"))
    for run in range(4):                                    # even, 3 calls per measurement (loop scheme)
        _write_run(root, "ompi", run, rng, 1.2, calls=3)
    for run in range(3):                                    # one mpirun without perrank.bin
        _write_run(root, "mixed", run, rng, 1.1, perrank=run != 1)
    return root


# -- the independent computation --------------------------------------------------------------------

def _read(path):
    raw = path.read_bytes()
    hb, _, p, calls, _, _ = struct.unpack_from("<6I", raw, 8)
    nmeas, rb = struct.unpack_from("<2Q", raw, 32)
    recs = {}
    for i in range(nmeas):
        exp, rep, _, _ = struct.unpack_from("<4I", raw, hb + i * rb)
        t = struct.unpack_from(f"<{2 * p}d", raw, hb + i * rb + 16)
        recs[(exp, rep)] = (np.array(t[:p]), np.array(t[p:]))
    return calls, recs


def expected(root, cfg, op, k=1.5, filt=True):
    """{msize: (avg_us, min_us, max_us, iterations)}: OSU per mpirun, median over mpiruns."""
    per = {}
    for d in sorted((root / "runs").glob(f"{cfg}-*")):
        calls, recs = _read(d / "perrank.bin")
        rows = [r for r in csv.DictReader(open(d / "measurements.csv")) if r["op"] == op and r["valid"] == "1"]
        for msize in SIZES:
            rs = [r for r in rows if int(r["msize"]) == msize]
            x = np.array([float(r["runtime_s"]) for r in rs])
            q1, q3 = np.quantile(x, [0.25, 0.75])
            kept = [r for r, v in zip(rs, x) if not filt or q1 - k * (q3 - q1) <= v <= q3 + k * (q3 - q1)]
            local = np.array([(recs[(int(r["exp"]), int(r["rep"]))][1] - recs[(int(r["exp"]), int(r["rep"]))][0])
                              / calls for r in kept])          # (kept, nprocs)
            rank_avg = local.mean(axis=0)                       # each rank: its average latency
            per.setdefault(msize, []).append((rank_avg.mean(), rank_avg.min(), rank_avg.max(), len(kept) * calls))
    out = {}
    for msize, v in per.items():
        a = np.array(v)
        its = sorted(int(x) for x in a[:, 3])
        out[msize] = (round(float(np.median(a[:, 0])) * 1e6, 2), round(float(np.median(a[:, 1])) * 1e6, 2),
                      round(float(np.median(a[:, 2])) * 1e6, 2), its[(len(its) - 1) // 2])
    return out


# -- the tests --------------------------------------------------------------------------------------

def test_osu_ranks_every_value_by_reframe(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--osu", tmp_path / "osu", "--json")
    assert code == 0, err
    res = json.loads(out)
    files = {p.split("/")[-1]: m for p, m in res["values"].items()}
    assert files == {"osu_allreduce.mpich.np4.txt": "ranks", "osu_bcast.mpich.np4.txt": "ranks",
                     "osu_allreduce.ompi.np4.txt": "ranks", "osu_allreduce.mixed.np4.txt": "runs"}
    for name, (cfg, op, runs) in {"osu_allreduce.mpich.np4.txt": ("mpich", "allreduce", 5),
                                  "osu_bcast.mpich.np4.txt": ("mpich", "bcast", 5),
                                  "osu_allreduce.ompi.np4.txt": ("ompi", "allreduce", 4)}.items():
        f = str(tmp_path / "osu" / name)
        text = open(f).read()
        assert "OSU's definition" in text and f"over {runs} mpirun(s)" in text and "over the 4 ranks" in text
        want = expected(camp, cfg, op)
        for size in SIZES:
            # ReFrame's OSU check: sanity, then the latency of the size
            assert sn.evaluate(sn.assert_found(rf"^{size}", f))
            assert sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)", f, 1, float)) == want[size][0]
            row = sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)$", f,
                                               [1, 2, 3, 4], [float, float, float, int]))
            assert row == want[size]
            assert row[1] < row[0] < row[2]                 # ranks differ: min < avg < max
        if cfg == "ompi":
            assert all(w[3] % 3 == 0 for w in want.values())   # calls per rank = kept x 3


def test_imb_ranks_every_value_by_reframe(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--imb", tmp_path / "imb", "--config", "ompi")
    assert code == 0, err
    f = str(tmp_path / "imb" / "IMB-MPI1_Allreduce.ompi.np4.txt")
    text = open(f).read()
    assert "IMB's definition" in text and "t_avg / t_min / t_max" in text
    assert sn.evaluate(sn.extractsingle(r"^# #processes = (\d+)", f, 1, int)) == NPROCS
    rows = sn.evaluate(sn.extractall(r"^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)$", f, [1, 2, 3, 4, 5],
                                     [int, int, float, float, float]))
    want = expected(camp, "ompi", "allreduce")
    assert [r[0] for r in rows] == list(SIZES)
    for size, reps, tmin, tmax, tavg in rows:
        assert (tavg, tmin, tmax, reps) == want[size]


def test_without_per_rank_data_the_old_numbers_clearly_labelled(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--osu", "-", "--config", "mixed")
    assert code == 0, err
    assert "NOT OSU's/IMB's over-rank Avg/Min/Max: only 2 of 3 mpiruns have per-rank raw times" in out
    assert "median of the per-mpirun medians" in out
    code, summ, err = cli("summary", camp, "--json")
    s = {(r["config"], r["msize"]): r for r in json.loads(summ) if r["op"] == "allreduce"}
    for size in SIZES:
        lat = sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)", _tmp(tmp_path, out), 1, float))
        assert lat == round(s[("mixed", size)]["median_s"] * 1e6, 2)


def _tmp(tmp_path, text):
    p = tmp_path / "stdout.txt"
    p.write_text(text)
    return str(p)


def test_values_runs_ignores_per_rank_data(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--osu", "-", "--config", "mpich", "--op", "bcast", "--values", "runs")
    assert code == 0, err
    assert "OSU's definition" not in out and "median of the per-mpirun medians" in out


def test_values_ranks_refuses_runs_without_per_rank_data(cli, camp, tmp_path):
    code, out, err = cli("export", camp, "--osu", tmp_path / "o", "--values", "ranks")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--values ranks needs per-rank raw times (perrank.bin) in every mpirun, but 1 of 3 mpiruns of " \
           "allreduce (configuration mixed) have none" in err
    assert not (tmp_path / "o").exists()
    code, out, err = cli("export", camp, "--osu", "-", "--values", "ranks", "--config", "ompi")
    assert code == 0 and "OSU's definition" in out


def test_same_filter_as_summary(cli, camp, tmp_path):
    for filt in ("none", "tukey"):
        code, out, err = cli("export", camp, "--osu", "-", "--config", "mpich", "--op", "allreduce",
                             "--filter", filt)
        assert code == 0, err
        got = {int(m.split()[0]): float(m.split()[1]) for m in out.splitlines() if m[:1].isdigit()}
        want = expected(camp, "mpich", "allreduce", filt=filt == "tukey")
        assert got == {s: w[0] for s, w in want.items()}
        assert ("after the Tukey filter" in out) == (filt == "tukey")


# -- each suite's own statistic over ranks (origin, initiators, slowest rank) ------------------------

# per-rank time factors of 4 ranks: rank 0 the origin / sender, rank 2 (= p/2) its partner
SHAPES = {"put": [1.0, 0.02, 0.05, 0.02],        # lock: the target does nothing inside the timed call
          "bw": [1.0, 0.02, 0.97, 0.02],         # ranks 0 and p/2 only; the others idle
          "multi_lat": [1.0, 1.3, 0.99, 1.29],   # pairs (0, 2) and (1, 3): initiators 0 and 1
          "mbw_mr": [1.0, 1.4, 0.98, 1.38],
          "pingping": [1.0, 0.02, 1.2, 0.02],
          "exchange": [1.0, 1.1, 1.2, 1.3]}


@pytest.fixture(scope="module")
def p2p(tmp_path_factory):
    root = tmp_path_factory.mktemp("p2p") / "camp"
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "p2p"\n')
    rng = np.random.default_rng(9)
    for run in range(5):
        _write_run(root, "m", run, rng, 1.0 + 0.05 * run, ops=tuple(SHAPES), shape=SHAPES)
    return root


def rank_avgs(root, cfg, op, k=1.5):
    """{msize: [per mpirun: each rank's average time of one call (numpy array)]} after the Tukey filter."""
    per = {}
    for d in sorted((root / "runs").glob(f"{cfg}-*")):
        calls, recs = _read(d / "perrank.bin")
        rows = [r for r in csv.DictReader(open(d / "measurements.csv")) if r["op"] == op and r["valid"] == "1"]
        for msize in SIZES:
            rs = [r for r in rows if int(r["msize"]) == msize]
            x = np.array([float(r["runtime_s"]) for r in rs])
            q1, q3 = np.quantile(x, [0.25, 0.75])
            kept = [r for r, v in zip(rs, x) if q1 - k * (q3 - q1) <= v <= q3 + k * (q3 - q1)]
            local = np.array([(recs[(int(r["exp"]), int(r["rep"]))][1] - recs[(int(r["exp"]), int(r["rep"]))][0])
                              / calls for r in kept])
            per.setdefault(msize, []).append(local.mean(axis=0))
    return per


def _col(path, size, col=1):
    return sn.evaluate(sn.extractsingle(rf"^{size}\s+(\S+)" + r"\s+(\S+)" * (col - 1), str(path), col, float))


def test_osu_one_sided_and_bw_take_the_origins_time(cli, p2p, tmp_path):
    """osu_put_latency and osu_bw print rank 0's time: an idle target (lock) or idle ranks never
    halve the latency or double the bandwidth."""
    code, out, err = cli("export", p2p, "--osu", tmp_path / "o")
    assert code == 0, err
    for op, stem in (("put", "osu_put_latency"), ("bw", "osu_bw")):
        f = tmp_path / "o" / f"{stem}.m.np4.txt"
        text = f.read_text()
        assert "then rank 0's (the origin's" in text
        per = rank_avgs(p2p, "m", op)
        for size in SIZES:
            origin = float(np.median([a[0] for a in per[size]]))
            mean = float(np.median([a.mean() for a in per[size]]))
            got = _col(f, size)
            if op == "put":
                assert got == round(origin * 1e6, 2) and got > 1.5 * round(mean * 1e6, 2)
            else:
                assert got == round(64 * size / origin / 1e6, 2) and got < 0.7 * round(64 * size / mean / 1e6, 2)


def test_osu_multi_lat_and_mbw_mr_take_the_initiators_mean(cli, p2p, tmp_path):
    code, out, err = cli("export", p2p, "--osu", tmp_path / "o", "--op", "multi_lat,mbw_mr")
    assert code == 0, err
    ml, mb = tmp_path / "o" / "osu_multi_lat.m.np4.txt", tmp_path / "o" / "osu_mbw_mr.m.np4.txt"
    assert "the mean over the initiating ranks 0..1" in ml.read_text()
    for size in SIZES:
        lat = float(np.median([a[:2].mean() for a in rank_avgs(p2p, "m", "multi_lat")[size]]))
        assert _col(ml, size) == round(lat / 2 * 1e6, 2)                  # half the round trip
        t = float(np.median([a[:2].mean() for a in rank_avgs(p2p, "m", "mbw_mr")[size]]))
        mbps, rate = _col(mb, size), _col(mb, size, 2)
        assert mbps == round(2 * 64 * size / t / 1e6, 2) and rate == round(2 * 64 / t, 2)


def test_imb_takes_the_slowest_ranks_time(cli, p2p, tmp_path):
    """IMB prints t = timing[MAX] for PingPing and divides every Mbytes/sec by t_max: per-rank mode
    takes the slowest rank's average, and says so (the old comment claimed every measurement was
    already the slowest rank's, which per-rank averages are not)."""
    code, out, err = cli("export", p2p, "--imb", tmp_path / "i", "--op", "pingping,exchange,mbw_mr")
    assert code == 0, err
    pp = tmp_path / "i" / "IMB-MPI1_PingPing.m.np4.txt"
    ex = tmp_path / "i" / "IMB-MPI1_Exchange.m.np4.txt"
    un = tmp_path / "i" / "IMB-MPI1_Uniband-mbw_mr.m.np4.txt"
    assert "already the slowest rank's" not in pp.read_text() + ex.read_text()
    assert "t = t_max, the slowest rank's average (as IMB)" in ex.read_text()
    assert "# #processes = 2 \n# ( 2 additional processes waiting in MPI_Barrier)" in pp.read_text()
    row = r"^\s+{}\s+\d+" + r"\s+(\S+)" * 2
    for size in SIZES:
        t = float(np.median([a.max() for a in rank_avgs(p2p, "m", "pingping")[size]]))
        got = sn.evaluate(sn.extractsingle(row.format(size), str(pp), [1, 2], [float, float]))
        assert got == (round(t * 1e6, 2), round(size / (t * 1e6), 2))
        per = rank_avgs(p2p, "m", "exchange")[size]
        tmin, tmax, tavg = (float(np.median([f(a) for a in per])) for f in (np.min, np.max, np.mean))
        got = sn.evaluate(sn.extractsingle(r"^\s+{}\s+\d+".format(size) + r"\s+(\S+)" * 4, str(ex), [1, 2, 3, 4],
                                           [float] * 4))
        assert got == (round(tmin * 1e6, 2), round(tmax * 1e6, 2), round(tavg * 1e6, 2), round(4 * size / (tmax * 1e6), 2))
        t = float(np.median([a.max() for a in rank_avgs(p2p, "m", "mbw_mr")[size]]))
        got = sn.evaluate(sn.extractsingle(row.format(size), str(un), [1, 2], [float, float]))
        assert got == (round(2 * 64 * size / t / 1e6, 2), round(2 * 64 / t))


def test_statistics_over_the_timed_ranks_only(tmp_path):
    """meta.json's experiments[].timed_ranks names the ranks whose times are the op's: an idle
    target (put with lock: [0]) enters no statistic, not even the mean over ranks."""
    from mpitempo.analysis.osu_ranks import rank_rows, rank_statistics
    from mpitempo.analysis.store import open_campaign
    from mpitempo.stats.outliers import Filter

    start = np.zeros((4, 3))
    end = np.array([[3.0, 3.0, 3.0], [0.1, 0.1, 0.1], [1.0, 1.0, 1.0], [0.1, 0.1, 0.1]]) * 1e-6
    allr = rank_statistics(start, end, 1)
    assert allr["avg_s"] == pytest.approx(1.05e-6) and allr["min_s"] == pytest.approx(0.1e-6)
    two = rank_statistics(start, end, 1, timed=[0, 2])
    assert (two["avg_s"], two["min_s"], two["max_s"], two["origin_s"], two["first_half_s"]) == \
        pytest.approx((2e-6, 1e-6, 3e-6, 3e-6, 3e-6))
    assert rank_statistics(start, end, 1, timed="all")["avg_s"] == pytest.approx(1.05e-6)
    root = tmp_path / "camp"
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "t"\n')
    rng = np.random.default_rng(3)
    for run in range(3):
        _write_run(root, "m", run, rng, 1.0, ops=("put", "bw"), shape=SHAPES, timed={"put": [0], "bw": [0, 2]})
    rows = rank_rows(open_campaign(root), Filter())
    for (camp, cfg, op, msize, n), r in rows.items():
        assert r["avg_s"] == pytest.approx(r["origin_s"]) if op == "put" else r["min_s"] > 0.5 * r["max_s"]


def test_calls_decided_per_experiment(tmp_path):
    """The loop scheme with --inner-min-time decides the calls per measurement per experiment
    (meta.json experiments[].inner: 1 for a call of >= the time, fewer than --inner in between);
    perrank.bin's header keeps --inner. Every per-rank statistic divides a span by the experiment's
    own count: with the header's, `export --osu` of osu_bw read 10x OSU's bandwidth at 4 MiB."""
    from mpitempo.analysis.osu_ranks import rank_rows
    from mpitempo.analysis.processing import process_campaigns
    from mpitempo.analysis.store import open_campaign
    from mpitempo.stats.outliers import Filter

    decided = {8: 10, 1024: 3, 65536: 1}
    for name, inner in (("fixed", None), ("decided", decided)):
        root = tmp_path / name
        (root / "runs").mkdir(parents=True)
        (root / "campaign.toml").write_text(f'name = "{name}"\n')
        rng = np.random.default_rng(11)          # the same per-call times in both campaigns
        for run in range(3):
            _write_run(root, "m", run, rng, 1.0, calls=10, inner=inner)
    fixed = {k[2:]: v for k, v in rank_rows(open_campaign(tmp_path / "fixed"), Filter()).items()}
    got = {k[2:]: v for k, v in rank_rows(open_campaign(tmp_path / "decided"), Filter()).items()}
    assert set(got) == set(fixed) and len(got) == len(SIZES)
    for key, r in got.items():
        for stat in ("avg_s", "min_s", "max_s", "origin_s"):
            assert r[stat] == pytest.approx(fixed[key][stat], rel=1e-9), (key, stat)
    rows, _ = process_campaigns([tmp_path / "decided"], ["ps3_osu"])
    rows_fixed, _ = process_campaigns([tmp_path / "fixed"], ["ps3_osu"])
    assert len(rows) == len(SIZES)
    for a, b in zip(sorted(rows, key=lambda r: r["msize"]), sorted(rows_fixed, key=lambda r: r["msize"])):
        assert a["msize"] == b["msize"] and a["value_s"] == pytest.approx(b["value_s"], rel=1e-9), (a, b)
