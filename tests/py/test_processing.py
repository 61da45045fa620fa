"""Processing schemes PS1-PS8 (stats/processing.py) against values computed by hand, the per-rank
file reader, and `summary --process` on a synthetic campaign."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpitempo.errors import MtError
from mpitempo.io.perrank import file_bytes, read_perrank
from mpitempo.stats import processing as ps

# 2 ranks x 4 measurements. local runtimes: rank 0 = [2, 3, 1, 8], rank 1 = [3, 1, 4, 2]
START = [[0, 10, 20, 30], [1, 11, 21, 31]]
END = [[2, 13, 21, 38], [4, 12, 25, 33]]


def test_ps1_skampi_mean_of_middle_half_of_sorted_maxima():
    r = ps.ps1_skampi(START, END)         # lmax = [3, 3, 4, 8] -> sorted middle half [3, 4]
    assert r["value_s"] == pytest.approx(3.5) and r["std_s"] == pytest.approx(np.sqrt(0.5)) and r["n_used"] == 2


def test_ps2_mpiblib_mean_ci_min_max_of_maxima():
    r = ps.ps2_mpiblib(START, END)        # mean 4.5, s = sqrt(17/3), t(0.975, 3) = 3.182446
    half = 3.182446305284263 * np.sqrt(17 / 3) / 2
    assert r["value_s"] == pytest.approx(4.5) and r["min_s"] == 3 and r["max_s"] == 8
    assert r["ci_lo_s"] == pytest.approx(4.5 - half) and r["ci_hi_s"] == pytest.approx(4.5 + half)


def test_ps3_osu_per_rank_averages():
    r = ps.ps3_osu(START, END)            # rank averages 3.5 and 2.5
    assert (r["value_s"], r["min_s"], r["max_s"]) == pytest.approx((3.0, 2.5, 3.5))


def test_ps4_mpiblib_global_max_end_minus_root_start():
    r = ps.ps4_mpiblib_global(START, END, global_clock=True)   # [4, 3, 5, 8]: mean 5, s = sqrt(14/3)
    half = 3.182446305284263 * np.sqrt(14 / 3) / 2
    assert r["value_s"] == pytest.approx(5.0)
    assert (r["ci_lo_s"], r["ci_hi_s"]) == pytest.approx((5 - half, 5 + half))
    with pytest.raises(MtError, match="global clock"):
        ps.ps4_mpiblib_global(START, END, global_clock=False)


def test_ps5_mpibench_pooled_with_threshold():
    r = ps.ps5_mpibench(START, END)       # pooled [1,1,2,2,3,3,4,8]: t99 = 4 + 0.93 x 4 = 7.72
    assert r["threshold_s"] == pytest.approx(2 * 7.72) and r["removed"] == 0
    assert (r["value_s"], r["min_s"], r["max_s"]) == pytest.approx((3.0, 1, 8))
    r = ps.ps5_mpibench(START, END, a=1.0)  # 8 > 7.72 is removed: mean 16 / 7
    assert r["removed"] == 1 and r["value_s"] == pytest.approx(16 / 7) and r["max_s"] == 4


def test_ps6_nbcbench_op_per_rank_then_max():
    r = ps.ps6_nbcbench(START, END)
    assert (r["mean_s"], r["min_s"], r["max_s"], r["median_s"]) == pytest.approx((3.5, 1, 8, 2.5))
    assert r["value_s"] == r["mean_s"]


def test_ps7_imb_min_max_avg_of_rank_means():
    r = ps.ps7_imb(START, END)
    assert (r["t_avg_s"], r["min_s"], r["max_s"]) == pytest.approx((3.0, 2.5, 3.5))


def test_ps8_mpptest_min_of_root():
    assert ps.ps8_mpptest(START, END)["value_s"] == 1


def test_calls_per_measurement_divide_every_runtime():
    for name in ps.FUNCTIONS:
        a = ps.process(name, START, END, calls=1, global_clock=True)["value_s"]
        b = ps.process(name, START, END, calls=4, global_clock=True)["value_s"]
        assert b == pytest.approx(a / 4), name


def test_unknown_scheme_and_bad_shapes():
    with pytest.raises(MtError, match="unknown processing scheme 'osu'.*ps3_osu"):
        ps.check_process("osu")
    assert ps.check_process("all")[0] == "reprompi" and len(ps.check_process("all")) == 9
    with pytest.raises(MtError, match="shape"):
        ps.ps3_osu([1, 2], [3, 4])


def test_across_runs_takes_medians():
    out = ps.across_runs([{"value_s": 1.0, "min_s": 0.5, "ci_lo_s": None}, {"value_s": 3.0, "min_s": 1.5,
                                                                            "ci_lo_s": None},
                          {"value_s": 2.0, "min_s": 9.0, "ci_lo_s": None}])
    assert out["value_s"] == 2.0 and out["min_s"] == 1.5 and out["ci_lo_s"] is None
    assert out["run_values_s"] == [1.0, 3.0, 2.0]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 30), st.integers(0, 2**31))
def test_orderings_hold_on_any_data(p, n, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0, 1, (p, n))
    e = s + rng.exponential(1e-6, (p, n)) + 1e-9
    osu, mpp, imb = ps.ps3_osu(s, e), ps.ps8_mpptest(s, e), ps.ps7_imb(s, e)
    loc = e - s
    assert osu["value_s"] == pytest.approx(loc.mean())          # equal counts per rank
    assert imb["t_avg_s"] == pytest.approx(osu["value_s"])      # same arithmetic, other benchmark
    assert mpp["value_s"] <= osu["max_s"] + 1e-18
    sk = ps.ps1_skampi(s, e)
    assert loc.max(axis=0).min() - 1e-18 <= sk["value_s"] <= loc.max(axis=0).max() + 1e-18
    g = ps.ps4_mpiblib_global(s, e, global_clock=True)
    span = e.max(axis=0) - s[0]                                  # global: max end - root start
    assert span.min() - 1e-15 <= g["value_s"] <= span.max() + 1e-15


def write_perrank(path, start, end, valid, exps, calls=1, clock=1):
    """An independent writer of the documented format (docs/file-formats.md)."""
    p, nmeas = len(start[0]), len(start)
    with open(path, "wb") as f:
        f.write(b"MTPRANK1" + struct.pack("<6I", 48, 1, p, calls, clock, 0x01020304)
                + struct.pack("<2Q", nmeas, 16 + 16 * p))
        for i in range(nmeas):
            f.write(struct.pack("<4I", exps[i], i, valid[i], 0) + struct.pack(f"<{2 * p}d", *start[i], *end[i]))


def test_reader_reads_the_documented_format(tmp_path):
    st_, en = np.array(START, float).T, np.array(END, float).T        # (nmeas, nprocs)
    write_perrank(tmp_path / "perrank.bin", st_, en, [1, 1, 0, 1], [0, 0, 0, 0], calls=3)
    assert (tmp_path / "perrank.bin").stat().st_size == file_bytes(4, 2)
    pr = read_perrank(tmp_path / "perrank.bin")
    assert pr.nprocs == 2 and pr.calls == 3 and pr.global_clock
    s, e = pr.experiment(0)
    assert s.shape == (2, 3) and list(e[0]) == [2, 13, 38]
    raw = (tmp_path / "perrank.bin").read_bytes()
    (tmp_path / "cut.bin").write_bytes(raw[:-5])
    with pytest.raises(MtError, match="truncated"):
        read_perrank(tmp_path / "cut.bin")
    (tmp_path / "bad.bin").write_bytes(b"XXXX" + raw[4:])
    with pytest.raises(MtError, match="not a perrank.bin"):
        read_perrank(tmp_path / "bad.bin")


def make_campaign(root, with_perrank=True, clock=1):
    """A 2-run bench campaign with hand-made data (local runtimes as START/END)."""
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "t"\n')
    for run in range(2):
        d = root / "runs" / f"default-{run:03d}"
        d.mkdir()
        shift = run * 100.0
        st_ = (np.array(START, float) + shift).T
        en = (np.array(END, float) + shift).T
        lines = ["op,msize,nprocs,scheme,exp,rep,runtime_s,valid,local_max_s"]
        for i in range(4):
            lm = float((en[i] - st_[i]).max())
            lines.append(f"allreduce,8,2,barrier,0,{i},{lm},1,{lm}")
        (d / "measurements.csv").write_text("\n".join(lines) + "\n")
        if with_perrank:
            write_perrank(d / "perrank.bin", st_, en, [1] * 4, [0] * 4, clock=clock)
        (d / "meta.json").write_text(json.dumps({
            "format_version": 1, "kind": "bench", "config": "default", "run_index": run, "nprocs": 2,
            "scheme": {"name": "barrier", "per_rank": with_perrank},
            "experiments": [{"exp": 0, "op": "allreduce", "msize": 8}]}))
    return root


def test_summary_process_all_json(cli, tmp_path):
    root = make_campaign(tmp_path / "c")
    code, out, err = cli("summary", root, "--process", "all", "--json", "--filter", "none")
    assert code == 0, err
    rows = {r["process"]: r for r in json.loads(out)}
    assert list(rows) == list(ps.PROCESS_NAMES)
    assert rows["ps3_osu"]["value_s"] == pytest.approx(3.0) and rows["ps3_osu"]["run_values_s"] == [3.0, 3.0]
    assert rows["ps1_skampi"]["value_s"] == pytest.approx(3.5)
    assert rows["ps4_mpiblib_global"]["value_s"] == pytest.approx(5.0)
    assert rows["ps8_mpptest"]["value_s"] == 1
    assert rows["reprompi"]["value_s"] == pytest.approx(3.5)   # median of lmax [3, 3, 4, 8]
    for r in rows.values():
        assert {"config", "op", "msize", "nprocs", "process", "value_s", "runs"} <= set(r)


def test_summary_process_table_and_plot(cli, tmp_path):
    root = make_campaign(tmp_path / "c")
    code, out, err = cli("summary", root, "--process", "all", "--plot", tmp_path / "p.png")
    assert code == 0, err
    assert "ps5_mpibench" in out and "vs reprompi" in out
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_summary_process_bad_input(cli, tmp_path):
    root = make_campaign(tmp_path / "c", with_perrank=False)
    code, out, err = cli("summary", root, "--process", "ps9")
    assert code != 0 and "unknown processing scheme 'ps9'" in err and out == ""
    code, out, err = cli("summary", root, "--process", "ps3_osu")
    assert code != 0 and "per-rank raw times" in err and "--per-rank" in err
    code, _, err = cli("summary", root, "--process", "reprompi", "--json")
    assert code == 0, err
    code, _, err = cli("summary", root, "--plot", tmp_path / "x.png")
    assert code != 0 and "--plot needs --process" in err and not (tmp_path / "x.png").exists()
    local = make_campaign(tmp_path / "l", clock=0)
    code, _, err = cli("summary", local, "--process", "ps4_mpiblib_global")
    assert code != 0 and "global clock" in err and "--sync" in err
    code, out, err = cli("summary", local, "--process", "all")
    assert code == 0 and "ps4_mpiblib_global left out" in out


def test_clt_check_tells_light_from_heavy_tails():
    rng = np.random.default_rng(3)
    light = ps.clt_check(rng.normal(1e-6, 1e-8, 2000), 30)
    assert light["normal_at_nrep"] and light["normal_from_n"] is not None and light["normal_from_n"] <= 30
    heavy = rng.normal(1e-6, 1e-8, 2000)
    heavy[:4] = 1e-3                                  # rare huge outliers, as preempted measurements
    h = ps.clt_check(heavy, 30)
    assert not h["normal_at_nrep"]


def test_summary_process_warns_below_500(cli, tmp_path):
    root = make_campaign(tmp_path / "c")
    code, out, err = cli("summary", root, "--process", "ps2_mpiblib")
    assert code == 0, err
    assert "fewer than 500 valid measurements per mpirun" in out
