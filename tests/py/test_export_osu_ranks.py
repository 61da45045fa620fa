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


def _write_run(root, cfg, run, rng, slow, calls=1, perrank=True, ops=("allreduce",)):
    """One mpirun: every rank has its own latency level (rank r: 1 + 0.15 r), right-skewed noise,
    a few large outliers and some invalid measurements; runtime_s = max over ranks of the local
    runtime of one call, as the barrier and loop schemes define it."""
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
            level = base * (1 + 0.15 * np.arange(NPROCS)) * rng.lognormal(0, 0.1, NPROCS)
            if rng.random() < 0.04:
                level *= rng.uniform(5, 20)
            start = t + rng.uniform(0, 2e-7, NPROCS)
            end = start + level * calls
            valid = int(rng.random() > 0.03)
            lmax = float(((end - start) / calls).max())
            lines.append(f"{op},{msize},{NPROCS},barrier,{exp},{rep},{lmax!r},{valid},{lmax!r}")
            S.append(start), E.append(end), X.append(exp), R.append(rep), V.append(valid)
            t = float(end.max()) + 1e-6
    (d / "measurements.csv").write_text("\n".join(lines) + "\n")
    if perrank:
        _write_perrank(d / "perrank.bin", np.array(S), np.array(E), X, R, V, calls)
    (d / "meta.json").write_text(json.dumps({
        "format_version": 1, "kind": "bench", "config": cfg, "run_index": run, "nprocs": NPROCS,
        "scheme": {"name": "barrier", "per_rank": perrank},
        "experiments": [{"exp": e, "op": exps[k][0], "msize": exps[k][1]} for e, k in enumerate(order)]}))


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
