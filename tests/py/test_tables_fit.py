"""Every terminal table fits 100 columns: summary (also --process), compare, clocks, pingpong,
barrier, tree, tune, imbalance, info --check and info --diff, rendered at COLUMNS=100 with realistic
data (campaigns with long configuration names; the barrier and tree documents of real runs on this
machine, in tests/py/data/tables; result rows with the numbers of real runs, every column varying so
that nothing is dropped for being constant). Checks the widest line and that what was left out or
found constant is said above the table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpitempo.io.synthetic import make_campaign

DATA = Path(__file__).parent / "data" / "tables"
WIDTH = 100


@pytest.fixture(autouse=True)
def columns_100(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")


def widest(text: str) -> int:
    return max((len(ln.rstrip()) for ln in text.splitlines()), default=0)


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    d = tmp_path_factory.mktemp("fit")
    return make_campaign(d / "camp", {"mpich-default": 1.0, "mpich-recursive-doubling": 1.07,
                                      "ompi-tuned-ring-segmented": 1.01},
                         runs=8, ops=("allreduce", "bcast", "alltoall"), msizes=(8, 1024, 65536, 1 << 20), nrep=40,
                         seed=7)


def test_summary(cli, camp):
    code, out, err = cli("summary", camp)
    assert code == 0, err
    assert widest(out) <= WIDTH and "same in every row: nprocs = 2" in out


@pytest.mark.parametrize("args", [[], ["--base", "mpich-recursive-doubling"], ["--equivalence", "1%"], ["--holm"]])
def test_compare(cli, camp, args):
    code, out, err = cli("compare", camp, *args)
    assert code == 0, err
    assert widest(out) <= WIDTH, out
    lines = out.splitlines()
    assert lines[0].startswith("A = ") and "same in every row: nprocs = 2" in out
    head = next(ln for ln in lines if ln.lstrip().startswith("op "))
    assert "A [µs]" in head and "B [µs]" in head and "verdict" in head and "shift [95% CI]" in head
    # the verdict is shortened, not cut: its words are all there
    assert "slower" in out or "faster" in out or "n.s." in out or "equivalent" in out


def test_compare_two_levels_short_verdict(cli, tmp_path):
    c = make_campaign(tmp_path / "c", {"mpich-default": 1.0, "mpich-recursive-doubling": 1.07}, runs=8,
                      ops=("allreduce",), msizes=(8, 1024), nrep=40, seed=3)
    code, out, err = cli("compare", c)
    assert code == 0, err
    assert widest(out) <= WIDTH
    assert "B = mpich-recursive-doubling" in out
    assert any(ln.rstrip().endswith("slower") for ln in out.splitlines()), out
    code, out, err = cli("compare", c, "--json")           # the full verdict stays in --json
    assert all("(CI " in r["verdict"] and "p=" in r["verdict"] for r in json.loads(out))


def test_clocks(capsys):
    from mpitempo.present.clocks import clocks_table

    algs = ["skampi", "hoefler", "jk", "hca", "hca2", "hca3", "h2hca:skampi/hca3", "clockpropsync"]
    rows = [{"algorithm": a, "wait_s": w, "mpiruns": 10 + i, "sync_duration_s": 0.0005 + 0.25 * i,
             "max_abs_offset_s": 3e-8 * (i + 1) + w * 1e-7, "worst_max_abs_offset_s": 5.5e-8 * (i + 1) + w * 1e-6,
             "median_abs_offset_s": 2e-8 * (i + 1), "max_abs_drift_ppm": 0.013 * i * (1 + w)}
            for i, a in enumerate(algs) for w in (0, 1, 10)]
    clocks_table(rows, "clock sync on 8 ranks, 10 mpirun(s), medians over mpiruns")
    out = capsys.readouterr().out
    assert widest(out) <= WIDTH and "h2hca:skampi/hca3" in out and "max |offset| [µs]" in out


def _pingpong_analysis():
    res, loop, bidir = [], [], []
    for i, m in enumerate([0, 8, 1024, 65536, 1 << 20, 4 << 20]):
        t = 1.9e-6 + m * 2.5e-10
        res.append({"msize": m, "npp": max(1, 1000 >> (2 * i)), "ntrial": 1000, "min_s": t * 0.9, "median_s": t,
                    "mean_s": t * 1.02, "max_s": t * 23.4, "rate_min_mb_s": m / t / 0.9e6, "rate_median_mb_s": m / t / 1e6,
                    "rate_mean_mb_s": m / t / 1.02e6, "filtered": {"removed": 17 * i}})
        loop.append({"msize": m, "iters": 10000, "reps": 20, "median_s": t * 1.05, "min_s": t, "max_s": t * 1.3,
                     "ours_npp": 7, "ours_min_s": t * 0.9, "ours_median_s": t, "ours_mean_s": t * 1.02,
                     "ours_max_s": t * 23.4, "min_vs_loop": -0.142, "median_vs_loop": -0.047})
        bidir.append({"msize": m, "median_s": 2 * t, "rate_both_median_mb_s": m / t / 1e6,
                      "pingpong_one_way_median_s": t, "rate_uni_median_mb_s": m / t / 1e6})
    return {"results": res, "loop": loop, "bidir": bidir}


def test_pingpong_tables():
    from mpitempo.present import pingpong as pp

    a = _pingpong_analysis()
    sweep = {"msize": 8, "npp": [1, 2, 4, 8, 16, 32], "ntrial": [1000] * 6,
             **{k: [1.2345e3 * (j + 1) for j in range(6)] for k in ("minimum time", "median time", "average time",
                                                                    "maximum time", "Variance", "Standard deviation")}}
    for lines in (pp.rate_curve_lines(a), pp.compare_lines(a), pp.bidir_lines(a), pp.sweep_lines(sweep)):
        text = pp._fit(lines)               # what summary_text and full_text print: prose wraps, tables fit
        assert lines and widest(text) <= WIDTH, text
        assert all(ln in text.splitlines() for ln in lines if len(ln) <= WIDTH)   # table rows are not wrapped


def test_barrier(capsys):
    from mpitempo.present.barrier import print_study

    doc = json.loads((DATA / "barrier.json").read_text())      # `mpitempo barrier -n 2 ...` on this machine
    for r in doc["results"]:                                    # a study over several P: nothing constant
        r["mpiruns"] = 10 + len(r["algorithm"])
    doc["results"].append(dict(doc["results"][1], algorithm="barrier:tournament", nprocs=16, oversubscribed=True,
                               ci_lo_s=1.1e-5, ci_hi_s=1.4e-5))
    doc["native"] = [{"algorithm": "barrier:dissemination", "native": "native-k_dissemination", "nprocs": 2,
                      "setting": "MPIR_CVAR_BARRIER_INTRA_ALGORITHM=k_dissemination", "median_s": 2.27e-6,
                      "native_median_s": 1.21e-6, "delta_pct": 87.6, "p_value": 0.002,
                      "verdict": "the library's implementation is faster (p=0.002)"}]
    print_study(doc)
    out = capsys.readouterr().out
    assert widest(out) <= WIDTH and "barrier:dissemination" in out and "OVERSUBSCRIBED" in out
    assert "native-k_dissemination" in out              # names are not cut


def test_tree():
    from mpitempo.present.tree import text

    res = json.loads((DATA / "tree-analysis.json").read_text())   # `mpitempo tree -n 4 --tree binomial --tree flat`
    runs = [{"mpi": False, "config": c, "calls": 30, "workload": {"name": "gsum"}} for c in ("binomial", "flat")]
    out = text(runs, res)
    assert widest(out) <= WIDTH and "imbalance:" in out and "node 0:" in out


def test_tune(capsys):
    from mpitempo.present.tune import print_rows

    rows = []
    for i, (op, m) in enumerate([("allreduce", 8), ("allreduce", 1024), ("allreduce", 65536), ("bcast", 8),
                                 ("bcast", 1 << 20), ("alltoall", 4 << 20)]):
        chosen = ["default", "recursive_doubling", "reduce_scatter_allgather", "default", "scatter_ring_allgather",
                  "pairwise_sendrecv_many"][i]
        rows.append({"op": op, "msize": m, "nprocs": 2 + 2 * i, "median_default_s": 8.69e-7 * (i + 1) * 10 ** i,
                     "chosen": chosen, "median_chosen_s": 7.1e-7 * (i + 1) * 10 ** i, "gain_pct": -12.3 - i,
                     "gain_ci_lo_pct": -15.2 - i, "gain_ci_hi_pct": -9.8 - i, "p_value": 0.0031 * (i + 1),
                     "why_default": "fastest other: pipelined_tree +3.1% (Holm p=1)", "oversubscribed": i == 5})
    print_rows(rows, "mpich: default vs chosen per size (gain: median of mpirun medians, bootstrap 95% CI; "
                     "p: Holm-adjusted)")
    out = capsys.readouterr().out
    assert widest(out) <= WIDTH and "[1] fastest other: pipelined_tree +3.1% (Holm p=1)" in out
    assert "OVERSUBSCRIBED" in out and "recursive_doubling" in out


def test_imbalance(capsys):
    from mpitempo.present.imbalance import print_table

    res = [{"variant": v, "runs": 10 + i, "n": 500 - i, "median_skew_s": 1.2e-6 * (i + 1), "mean_skew_s": 1.5e-6 * (i + 1),
            "p95_skew_s": 4.1e-6 * (i + 1), "max_skew_s": 1.234e-3 * (i + 1),
            "per_rank": [{"rank": r, "last_to_exit_fraction": (r + i) / 10} for r in range(4)]}
           for i, v in enumerate(["base", "smp", "MPIR_CVAR_BARRIER_INTRA_ALGORITHM=recexch", "k-nomial"])]
    print_table(res, "barrier", 4, "hca3")
    out = capsys.readouterr().out
    assert widest(out) <= WIDTH and "median skew [µs]" in out


def test_info_check(cli):
    code, out, err = cli("info", "--check", "-n", "64")      # oversubscribed: the longest findings
    assert code == 0, err
    assert widest(out) <= WIDTH and "oversubscri" in out


def test_info_diff(cli, tmp_path):
    c = make_campaign(tmp_path / "c", {"a": 1.0, "b": 1.0}, runs=2, ops=("allreduce",), msizes=(8,), nrep=5,
                      meta={"b": {"build": {"compiler": "gcc (Debian 12.2.0-14) 12.2.0 with a very long version "
                                                        "string that goes on and on"}}})
    code, out, err = cli("info", "--diff", c)
    assert code == 0, err
    assert widest(out) <= WIDTH and "factor" in out


def test_summary_process(cli, tmp_path):
    from test_processing import make_campaign as per_rank_campaign   # per-rank raw times, 2 mpiruns

    code, out, err = cli("summary", per_rank_campaign(tmp_path / "c"), "--process", "all")
    assert code == 0, err
    assert widest(out) <= WIDTH and "same in every row: config = default" in out and "ps7_imb" in out
