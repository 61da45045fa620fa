"""The LogP predictions (stats/logp.py), the barrier study's analysis (analysis/barrier.py) on
synthetic campaigns, and the bad input of `mpitempo barrier` (refused before anything runs)."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from mpitempo.analysis import barrier as study
from mpitempo.errors import MtError
from mpitempo.stats import logp as model

US = 1e-6
M = model.LogP(L=2 * US, o_s=1 * US, o_r=1.5 * US, g=0.5 * US)   # o > g as in the paper's TCP cluster


def test_paper_formulas_by_hand():
    # t_r = t_s = max(g, o_s + L + o_r) = 4.5 us; f_r = 1.5, f_s = 1 us
    assert M.t_r == pytest.approx(4.5 * US) and M.f_r == pytest.approx(1.5 * US) and M.f_s == pytest.approx(US)
    # central counter (4.1): 2(o_s+L+o_r) + (P-2) f_r + (P-2) f_s, P = 10: 9 + 8*1.5 + 8*1 = 29 us
    assert model.predict("barrier:central", 10, M) == pytest.approx(29 * US)
    # binomial broadcast to 8: o_s + (3-1) t_s + L + o_r = 1 + 9 + 2 + 1.5 = 13.5 us
    assert model.t_bc(M, 8) == pytest.approx(13.5 * US)
    # combining tree n=4 on 16 (4.2): (o_s + L + 2 f_r + o_r) * 2 + t_bc(16) = 7.5*2 + (1+13.5+3.5) = 33 us
    assert model.predict("barrier:combining:4", 16, M) == pytest.approx(33 * US)
    # tournament on 8 (4.3): t_r * 3 + t_bc(8) = 13.5 + 13.5
    assert model.predict("barrier:tournament", 8, M) == pytest.approx(27 * US)
    # dissemination (4.4): max(t_r, t_s) ceil(log2 P): steps at powers of two
    assert model.predict("barrier:dissemination", 8, M) == pytest.approx(13.5 * US)
    assert model.predict("barrier:dissemination", 9, M) == pytest.approx(18 * US)
    assert model.predict("barrier", 8, M) is None                     # MPI_Barrier: no model
    # heap trees on 2 processes: one message up and one down, no further child
    for name in ("barrier:mcs", "barrier:bst"):
        assert model.predict(name, 2, M) == pytest.approx(2 * 4.5 * US), name
    for name in ("barrier:central", "barrier:mcs", "barrier:bst", "barrier:butterfly", "barrier:fway:3"):
        assert model.predict(name, 1, M) == 0.0


def test_combining_tree_optimum_is_four_when_overhead_dominates():
    """The paper's finding (n = 4) follows from the model when o dominates: L = o, g small, P = 64."""
    m = model.LogP(L=10 * US, o_s=10 * US, o_r=10 * US, g=1 * US)
    best, pred = model.optimal_arity(64, m)
    assert best == 4
    assert pred[4] < pred[2] and pred[4] < pred[8]


@settings(max_examples=60, deadline=None)
@given(L=st.floats(0, 1e-4), o_s=st.floats(1e-8, 1e-4), o_r=st.floats(1e-8, 1e-4), g=st.floats(0, 1e-4),
       p=st.integers(2, 300))
def test_predictions_positive_and_monotone(L, o_s, o_r, g, p):
    m = model.LogP(L=L, o_s=o_s, o_r=o_r, g=g)
    names = ["barrier:central", "barrier:combining:2", "barrier:combining:5", "barrier:fway:3", "barrier:mcs",
             "barrier:tournament", "barrier:bst", "barrier:butterfly", "barrier:pairwise",
             "barrier:dissemination"]
    for name in names:
        a, b = model.predict(name, p, m), model.predict(name, p + 1, m)
        assert a > 0
        if name in ("barrier:central", "barrier:dissemination", "barrier:tournament", "barrier:combining:2"):
            assert b >= a - 1e-18, name
    # the dissemination barrier never needs more rounds than the pairwise exchange on a power of two
    q = 1 << (p.bit_length() - 1)
    assert model.predict("barrier:dissemination", q, m) == pytest.approx(model.predict("barrier:pairwise", q, m))


@pytest.mark.parametrize("name, msg", [
    ("barrier:nope", "unknown barrier algorithm 'barrier:nope'"),
    ("barrier:combining", "needs its arity"),
    ("barrier:combining:1", "invalid arity 1"),
    ("barrier:fway:x", "invalid arity 'x'"),
    ("barrier:mcs:3", "takes no parameter"),
    ("allreduce", "unknown barrier algorithm"),
])
def test_bad_names(name, msg):
    with pytest.raises(ValueError, match=msg):
        model.split(name)


def test_sanity_checks():
    model.check(model.LogP(L=2 * US, o_s=US, o_r=1.5 * US, g=1.5 * US))  # a measured g is a train's gap: >= o_s
    with pytest.raises(ValueError, match=r"L = -1.000 us < 0"):
        model.check(model.LogP(L=-1 * US, o_s=US, o_r=US, g=US), rtt=4 * US)
    model.check(model.LogP(L=-0.1 * US, o_s=US, o_r=US, g=US), rtt=4 * US)   # within 10% of RTT/2: noise
    model.check(model.LogP(L=-0.5 * US, o_s=US, o_r=US, g=US), rtt=4 * US, L_spread=0.6 * US)  # within the spread
    with pytest.raises(ValueError, match=r"by more than the 0.400 us"):
        model.check(model.LogP(L=-0.5 * US, o_s=US, o_r=US, g=US), rtt=4 * US, L_spread=0.4 * US)
    model.check(model.LogP(L=US, o_s=US, o_r=US, g=0.5 * US), g_spread=0.6 * US)
    with pytest.raises(ValueError, match=r"g = 0.100 us < o_s = 1.000 us"):
        model.check(model.LogP(L=US, o_s=US, o_r=US, g=0.1 * US))


def test_explain_names_the_term():
    pred = model.predict("barrier:dissemination", 8, M)
    assert model.explain("barrier:dissemination", 8, M, pred * 1.1) is None
    note = model.explain("barrier:dissemination", 8, M, pred * 2)
    assert "2.00x" in note and "t_r" in note and "9.000 us" in note   # 4.5 + 13.5/3


def _meds(d):
    return {k: list(v) for k, v in d.items()}


def test_choice_with_ties_and_without():
    meds = _meds({("barrier:dissemination", 4): [1.0, 1.1, 1.05, 0.98, 1.02, 1.01],
                  ("barrier:central", 4): [2.0, 2.1, 2.2, 1.9, 2.05, 2.15],
                  ("barrier:pairwise", 4): [1.0, 1.08, 1.03, 0.99, 1.04, 1.0]})
    c = study.choose(meds, 4)
    assert c["algorithm"] == "barrier:dissemination"
    assert c["tied_with"] == ["barrier:pairwise"] and not c["significant"]
    assert "no significant difference" in c["verdict"]
    assert "k_dissemination" in c["native_setting"] and "barrier_algorithm=4" in c["native_setting"]
    c = study.choose(_meds({("barrier:central", 4): [1, 1.1, 1.2, 0.9, 1.05, 1.0],
                            ("barrier:bst", 4): [3, 3.1, 3.2, 2.9, 3.05, 3.0]}), 4)
    assert c["algorithm"] == "barrier:central" and c["significant"] and c["tied_with"] == []
    assert "coll_tuned_barrier_algorithm=1" in c["native_setting"]
    # one mpirun cannot show a difference: said so
    c = study.choose(_meds({("barrier:central", 4): [1.0], ("barrier:bst", 4): [3.0]}), 4)
    assert "cannot show a difference" in c["verdict"]
    c = study.choose(_meds({("barrier:central", 4): [1.0, 2.0]}), 4)
    assert "nothing to compare" in c["verdict"] and not c["significant"]
    with pytest.raises(MtError, match="no measurements on 8"):
        study.choose(meds, 8)


def test_results_rows_and_oversubscription():
    lp = {"L_s": 2 * US, "o_s_s": US, "o_r_s": 1.5 * US, "g_s": 0.5 * US}
    meds = {("barrier:dissemination", 2): [4.5 * US] * 5, ("barrier", 2): [1 * US] * 5,
            ("barrier:dissemination", 4): [20 * US] * 5}
    rows = study.results(meds, lp, cores=2)
    r2 = next(r for r in rows if r["algorithm"] == "barrier:dissemination" and r["nprocs"] == 2)
    assert r2["predicted_s"] == pytest.approx(4.5 * US) and r2["ratio"] == pytest.approx(1.0)
    assert r2["within_tolerance"] and r2["note"] is None and not r2["oversubscribed"]
    assert r2["ci_lo_s"] is None and r2["ci_need_runs"] == 6   # 5 runs cannot give a 95% CI of the median
    r4 = next(r for r in rows if r["nprocs"] == 4)
    assert r4["oversubscribed"] and r4["ratio"] == pytest.approx(20 / 9) and "t_r" in r4["note"]
    nat = next(r for r in rows if r["algorithm"] == "barrier")
    assert nat["predicted_s"] is None and nat["ratio"] is None


def test_logp_params_over_mpiruns_and_sanity():
    rows = [{"L_s": a * US, "o_s_s": US, "o_r_s": US, "g_s": 2 * US, "rtt_s": 8 * US, "G_s_per_byte": None,
             "nprocs": 2} for a in (1, 2, 3, 4)]
    lp = study.logp_params(rows)
    assert lp["L_s"] == pytest.approx(2.5 * US) and lp["L_iqr_s"] == pytest.approx(1.5 * US)
    assert lp["mpiruns"] == 4 and lp["G_s_per_byte"] is None
    bad = [dict(r, L_s=-1 * US) for r in rows]
    with pytest.raises(MtError, match=r"L = -1.000 us < 0.*4 mpirun"):
        study.logp_params(bad)


def test_logp_runs_that_fail_alone_are_judged_over_mpiruns():
    """L about 0 (shared memory): its sign changes between mpiruns. Runs that failed their own check
    are kept and listed; the medians pass when L is below 0 by less than its spread over mpiruns,
    and fail when L is negative in (nearly) every mpirun."""
    def row(L, rid):
        r = {"L_s": L * US, "o_s_s": 0.09 * US, "o_r_s": 0.17 * US, "g_s": 0.2 * US, "rtt_s": 0.5 * US,
             "G_s_per_byte": None, "nprocs": 2, "run_id": rid}
        if L < -0.025:
            r["sanity_problem"] = f"LogP sanity check failed for ranks 0-1: L = {L:.3f} us < 0"
        return r
    mixed = [row(L, f"default-00{i}") for i, L in enumerate((-0.126, -0.081, 0.02, 0.06))]
    lp = study.logp_params(mixed)
    assert lp["L_s"] == pytest.approx(-0.0305 * US)
    assert [p["run_id"] for p in lp["run_problems"]] == ["default-000", "default-001"]
    negative = [row(L, f"default-00{i}") for i, L in enumerate((-0.08, -0.075, -0.085, -0.165))]
    with pytest.raises(MtError, match=r"L = -0.083 us < 0.*4 mpirun\(s\), 4 of them failed it on their own"):
        study.logp_params(negative)
    assert study.logp_params([row(0.05, "default-000")])["run_problems"] == []
    with pytest.raises(MtError, match=r"1 mpirun\(s\), 1 of them"):
        study.logp_params([row(-0.05, "default-000")])    # one mpirun: its own tolerance (10% of RTT/2)


@pytest.mark.parametrize("args, msg", [
    (["-n", "1"], "invalid -n 1"),
    (["-n", "4", "--algorithms", "barrier:nope"], "unknown barrier algorithm 'barrier:nope'"),
    (["-n", "4", "--algorithms", "barrier:combining:1"], "invalid arity 1"),
    (["-n", "4", "--algorithms", "barrier:combining"], "needs its arity"),
    (["-n", "4", "--algorithms", "barrier:fway:8"], "an arity above P makes the tree a central counter"),
    (["-n", "4", "--algorithms", "barrier:mcs,barrier:mcs"], "listed twice"),
    (["-n", "4", "--procs", "1,2"], "integers >= 2"),
    (["-n", "4", "--procs", "2,8"], "8 is more than -n 4"),
    (["-n", "4", "--model-start-cost", "-0.5"], "invalid --model-start-cost -0.5"),
    (["-n", "4", "--model-start-cost", "nan"], "--model-start-cost"),
])
def test_bad_input_is_refused_before_anything_runs(cli, tmp_path, args, msg):
    out = tmp_path / "never"
    code, stdout, err = cli("barrier", *args, "-o", out)
    assert code != 0 and msg in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists() and stdout == ""


def test_help_has_an_example(cli):
    code, out, _ = cli("barrier", "--help")
    assert code == 0 and "mpitempo barrier -n" in out and "--algorithms" in out


# ---- the library's own implementations (rows native:<name>) and --resume ------------------------------------

def test_native_rows_named_predicted_and_compared():
    assert study.row_name("native-k_dissemination", "barrier") == "native:k_dissemination"
    assert study.row_name("default", "barrier") == "barrier"
    assert study.row_name("native-bruck", "barrier:dissemination") == "barrier:dissemination"
    assert model.native_ours("native:bruck") == "barrier:dissemination"
    assert model.native_ours("native:recexch") == "barrier:pairwise"
    assert model.native_ours("native:tree") == "barrier:tournament"
    assert model.native_ours("barrier:central") is None and model.native_ours("native:nope") is None
    lp = {"L_s": 2 * US, "o_s_s": US, "o_r_s": 1.5 * US, "g_s": 0.5 * US}
    ours = [4.5 * US, 4.6 * US, 4.4 * US, 4.55 * US, 4.5 * US, 4.45 * US]
    fast = [x / 3 for x in ours]
    meds = {("barrier:dissemination", 2): ours, ("native:k_dissemination", 2): fast,
            ("native:nb", 2): fast, ("barrier:pairwise", 2): ours}
    rows = {r["algorithm"]: r for r in study.results(meds, lp, cores=2)}
    n = rows["native:k_dissemination"]    # predicted as the algorithm it implements
    assert n["implements"] == "barrier:dissemination" and n["predicted_s"] == pytest.approx(4.5 * US)
    assert n["ratio"] == pytest.approx(n["median_s"] / (4.5 * US)) and "t_r" in n["note"]
    assert rows["native:nb"]["predicted_s"] is None and rows["native:nb"]["implements"] is None
    assert rows["barrier:dissemination"]["implements"] is None
    settings = {"native:k_dissemination": "MPIR_CVAR_BARRIER_INTRA_ALGORITHM=k_dissemination"}
    vs = study.versus_native(meds, settings)
    assert [(v["algorithm"], v["native"]) for v in vs] == [("barrier:dissemination", "native:k_dissemination")]
    v = vs[0]
    assert v["significant"] and v["verdict"] == "the library's is faster" and v["delta_pct"] < -60
    assert v["setting"] == settings["native:k_dissemination"]
    # equal samples: no difference; one mpirun: cannot tell
    same = study.versus_native({("barrier:dissemination", 2): ours, ("native:bruck", 2): list(ours)})
    assert same[0]["verdict"] == "no significant difference" and not same[0]["significant"]
    one = study.versus_native({("barrier:dissemination", 2): [1.0], ("native:bruck", 2): [2.0]})
    assert "cannot show a difference" in one[0]["verdict"]
    # a native algorithm can be the choice: its setting is the environment that selects it
    c = study.choose(meds, 2, settings=settings)
    assert c["algorithm"] in ("native:k_dissemination", "native:nb")
    c = study.choose({k: v for k, v in meds.items() if k[0] != "native:nb"}, 2, settings=settings)
    assert c["algorithm"] == "native:k_dissemination" and c["native_setting"] == settings["native:k_dissemination"]


def test_native_table_names_selectable_algorithms():
    """Every native algorithm we measure is one the library's discovery fallback lists (the names
    mpilib uses), and implements one of our algorithms."""
    from mpitempo.mpilib import mpich
    from mpitempo.mpilib import openmpi as ompi

    for name in model.NATIVE_SAME["mpich"]:
        assert name in mpich.FALLBACK["barrier"]
    for name in model.NATIVE_SAME["openmpi"]:
        assert name in ompi.FALLBACK["barrier"]
    for table in model.NATIVE_SAME.values():
        for ours, env in table.values():
            model.split(ours)
            assert all(k.startswith(("MPIR_CVAR_", "OMPI_MCA_")) for k in env)


def test_resume_refuses_what_is_not_a_barrier_study(cli, tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "campaign.toml").write_text('name = "c"\nops = ["bcast"]\n')
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "barrier-study.json").write_text("{not json")
    for d, msg in [(tmp_path / "none", "no such directory"),
                   (bench, "not a barrier study but a campaign of kind 'bench'"),
                   (empty, "it is not a barrier study (no campaign.toml and no barrier-study.json)"),
                   (bad, "barrier-study.json is unreadable")]:
        code, stdout, err = cli("barrier", "--resume", d)
        assert code != 0 and msg in err and f"cannot resume '{d}'" in err, err
        assert len(err.strip().splitlines()) == 1 and stdout == "", err
    assert sorted(p.name for p in empty.iterdir()) == []      # nothing written into it


@pytest.mark.parametrize("args, opt", [(["-n", "4"], "-n"), (["--mpiruns", "3"], "--mpiruns"),
                                       (["--no-native"], "--native"), (["-o", "x"], "-o/--outdir"),
                                       (["--algorithms", "barrier"], "--algorithms")])
def test_resume_goes_alone(cli, tmp_path, args, opt):
    code, stdout, err = cli("barrier", "--resume", tmp_path, *args)
    assert code != 0 and f"give it without {opt}" in err and len(err.strip().splitlines()) == 1, err


def test_a_new_study_refuses_an_existing_directory(cli, tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    code, stdout, err = cli("barrier", "-n", "2", "--no-native", "-o", tmp_path / "x")
    assert code != 0 and "already exists" in err and "mpitempo barrier --resume" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_study_stopped_before_its_campaigns_resumes_from_its_record(tmp_path):
    """barrier-study.json is written before either campaign: a study stopped at any point can be resumed,
    with both campaigns exactly as they were to run."""
    from mpitempo.io.campaign import build_campaign
    from mpitempo.runner import barrier_study

    bc = build_campaign({"ops": ["barrier:mcs", "barrier"], "config": [
        {"name": "default"}, {"name": "native-bruck", "ops": ["barrier"],
                              "env": {"OMPI_MCA_coll_tuned_barrier_algorithm": "4"}}]},
        {"np": [2, 3], "name": "barrier", "mpiruns": 3, "nrep": "20"}, kind="barrier")
    lc = build_campaign(None, {"np": 3, "name": "logp", "mpiruns": 3, "o_r_method": "wait"}, kind="logp")
    out = tmp_path / "s"
    barrier_study.create(out, bc, lc, ["a note"])
    assert [p.name for p in out.iterdir()] == ["barrier-study.json"]
    s = barrier_study.load(out)
    assert s.resume and s.barrier.to_toml() == bc.to_toml() and s.logp.to_toml() == lc.to_toml()
    assert s.notes == ["a note"]
    assert barrier_study.settings(s.barrier) == {"native:bruck": "OMPI_MCA_coll_tuned_barrier_algorithm=4"}
    with pytest.raises(MtError, match="already exists"):
        barrier_study.create(out, bc, lc, [])


def test_results_carry_the_extended_model_and_the_choice_at_each_p():
    """Rows get the extended model's prediction (stats/logp_sched.py), with one L when no platform is
    known; a start cost raises it by one cold message on 2 ranks; choice_by_p names the fastest measured
    algorithm per P and what following each model's pick costs."""
    lp = {"L_s": 2e-6, "o_s_s": 0.3e-6, "o_r_s": 0.4e-6, "g_s": 0.4e-6, "nprocs": 2}
    meds = {("barrier:dissemination", 2): [2.7e-6], ("barrier:central", 2): [5.4e-6],
            ("barrier:dissemination", 3): [5.4e-6], ("barrier:tournament", 3): [6.1e-6], ("barrier", 3): [4e-6]}
    rows = study.results(meds, lp, cores=64)
    by = {(r["algorithm"], r["nprocs"]): r for r in rows}
    assert by[("barrier:tournament", 3)]["predicted_ext_s"] == pytest.approx(6.1e-6)
    assert by[("barrier:tournament", 3)]["ratio"] == pytest.approx(6.1 / 10.8)     # the formula counts 2 levels
    assert by[("barrier:tournament", 3)]["ratio_ext"] == pytest.approx(1.0)
    assert by[("barrier", 3)]["predicted_ext_s"] is None and by[("barrier", 3)]["ratio_ext"] is None
    ext = study.extended_model(lp, None, None, 0.5e-6)
    assert ext["routes"] is None and ext["start_cost_s"] == 0.5e-6
    rows_c = study.results(meds, lp, cores=64, ext=ext)
    assert {(r["algorithm"], r["nprocs"]): r for r in rows_c}[("barrier:dissemination", 2)]["predicted_ext_s"] == \
        pytest.approx(3.2e-6)
    ch = {c["nprocs"]: c for c in study.choice_by_p(meds, rows)}
    assert ch[3]["measured_best"] == "barrier" and ch[3]["predicted_ext_best"] == "barrier:dissemination"
    assert ch[3]["predicted_ext_best_loss_pct"] == pytest.approx(35.0)
    assert ch[2]["measured_best"] == ch[2]["predicted_best"] == "barrier:dissemination"


def test_extended_model_routes_from_a_platform(tmp_path):
    plat = tmp_path / "ft.xml"
    plat.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\"><cluster id=\"f\" prefix=\"n\" suffix=\"\" "
                    "radical=\"0-63\" core=\"1\" speed=\"1Gf\" bw=\"1GBps\" lat=\"0.5us\" topology=\"FAT_TREE\" "
                    "topo_parameters=\"2;8,8;1,8;1,1\"/></platform>\n")
    lp = {"L_s": 2.0015e-6, "o_s_s": 0.3e-6, "o_r_s": 0.4e-6, "g_s": 0.4e-6, "nprocs": 64}
    ext = study.extended_model(lp, str(plat), 1)
    assert ext["routes"] == "FAT_TREE" and ext["route_ref_s"] == pytest.approx(2e-6)
    assert ext["latency"](0, 1) == pytest.approx(1.0015e-6) and ext["latency"](0, 9) == pytest.approx(2.0015e-6)
    bad = tmp_path / "bad.xml"
    bad.write_text("<platform")
    assert study.extended_model(lp, str(bad), 1)["routes"] is None
