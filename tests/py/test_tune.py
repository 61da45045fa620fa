"""mpitempo tune without MPI: discovery parsing, the decision on synthetic campaigns, the library's
configuration files, budget planning and bad input."""
from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest

from mpitempo.build import Build
from mpitempo.errors import MtError
from mpitempo.io import tuning_files as tf
from mpitempo.mpilib import mpich, variants
from mpitempo.mpilib import openmpi as ompi
from mpitempo.runner import tuneplan
from mpitempo.stats.gain import gain_ci, gain_pct

OMPI_INFO = '''          MCA coll tuned: parameter "coll_tuned_allreduce_algorithm" (current value: "ignore", data source: default, level: 5 tuner/detail, type: int)
                          Valid values: 0|ignore, 1|basic_linear, 2|nonoverlapping, 3|recursive_doubling, 4|ring, 5|segmented_ring, 6|rabenseifner
          MCA coll tuned: parameter "coll_tuned_alltoall_algorithm" (current value: "ignore", data source: default, level: 5 tuner/detail, type: int)
                          Valid values: 0|ignore, 1|linear, 2|pairwise, 3|modified_bruck, 4|linear_sync, 5|two_proc
'''


def _fake_build(tmp_path, flavour, tools: dict[str, str]) -> Build:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, out in tools.items():
        p = bindir / name
        p.write_text("#!/bin/sh\ncat <<'EOF'\n" + out + "EOF\n")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return Build("f", str(bindir / "mpicc"), str(bindir / "mpiexec"), flavour, "", "fake 1.0", str(bindir))


# -- discovery ---------------------------------------------------------------------------------------

def test_parse_ompi_info_ids():
    assert ompi.parse_ompi_info_ids(OMPI_INFO, "allreduce")[:2] == [(0, "ignore"), (1, "basic_linear")]
    assert ompi.parse_ompi_info_ids(OMPI_INFO, "alltoall")[-1] == (5, "two_proc")
    assert ompi.parse_ompi_info_ids(OMPI_INFO, "bcast") == []


def test_catalogue_openmpi_from_ompi_info(tmp_path):
    b = _fake_build(tmp_path, "openmpi", {"ompi_info": OMPI_INFO})
    cat = variants.catalogue(b, ["allreduce", "alltoall", "bcast"], [4])
    assert cat.source == "ompi_info"
    ring = cat.find("allreduce", "ring")
    assert ring.id == 4 and ring.env == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                         "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}
    assert "two_proc" not in [a.name for a in cat.algorithms["alltoall"]]   # only for 2 ranks
    assert cat.find("allreduce", "ignore") is None                           # that is the default
    # bcast is not in this ompi_info text: the fallback table fills in, and says so
    assert [a.name for a in cat.algorithms["bcast"]] == ompi.FALLBACK["bcast"]
    assert cat.find("bcast", "binomial").id == 6
    assert any("bcast" in n for n in cat.notes)
    assert "two_proc" in [a.name for a in variants.catalogue(b, ["alltoall"], [2]).algorithms["alltoall"]]


def test_catalogue_mpich_fallback_and_env(tmp_path):
    b = _fake_build(tmp_path, "mpich", {})        # no mpivars next to mpiexec
    cat = variants.catalogue(b, ["allreduce", "gather"])
    assert cat.source == "fallback table"
    ring = cat.find("allreduce", "ring")
    assert ring.id is None
    assert ring.env == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error",
                       "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    assert ring.config == "allreduce.ring"


def test_fallback_tables_cover_the_nine_ops():
    for table in (ompi.FALLBACK, mpich.FALLBACK):
        assert set(table) == set(variants.TUNABLE_OPS)


def test_catalogue_refuses_libraries_without_selection(tmp_path):
    with pytest.raises(MtError, match="neither Open MPI nor MPICH"):
        variants.catalogue(_fake_build(tmp_path, "unknown", {}), ["allreduce"])
    b = _fake_build(tmp_path, "openmpi", {"ompi_info": "MCA coll basic: parameter \"x\"\n"})
    with pytest.raises(MtError, match="no coll tuned component"):
        variants.catalogue(b, ["allreduce"])
    with pytest.raises(MtError, match="unknown op 'allgatherw'"):
        variants.catalogue(b, ["allgatherw"])


def test_restrict(tmp_path):
    cat = variants.catalogue(_fake_build(tmp_path, "openmpi", {"ompi_info": OMPI_INFO}), ["allreduce", "alltoall"])
    r = variants.restrict(cat, "allreduce:ring+basic_linear")
    assert [a.name for a in r.algorithms["allreduce"]] == ["basic_linear", "ring"]
    assert len(r.algorithms["alltoall"]) == len(cat.algorithms["alltoall"])
    for bad, msg in (("allreduce:nope", "no allreduce algorithm 'nope'"), ("bcast:ring", "not in --ops"),
                     ("allreduce", "expected OP:NAME"), ("", "invalid --algorithms ''"),
                     ("allreduce:ring,", "an empty item")):
        with pytest.raises(MtError, match=msg):
            variants.restrict(cat, bad)


# -- configuration files -----------------------------------------------------------------------------

def test_ompi_rule_size():
    assert ompi.ompi_rule_size("allreduce", 1024, 4) == 1024
    assert ompi.ompi_rule_size("bcast", 1024, 4) == 1024
    assert ompi.ompi_rule_size("alltoall", 1024, 4) == 4096
    assert ompi.ompi_rule_size("gather", 8, 2) == 16
    assert ompi.ompi_rule_size("reduce_scatter", 8, 3) == 24
    assert ompi.ompi_rule_size("barrier", 8, 2) == 0


def test_ompi_rules_text_roundtrip():
    rules = [tf.Rule("allreduce", 2, 8, "ring", 4), tf.Rule("allreduce", 2, 1024, None),
             tf.Rule("allreduce", 2, 65536, "rabenseifner", 6), tf.Rule("alltoall", 4, 64, "pairwise", 2),
             tf.Rule("alltoall", 4, 128, "pairwise", 2)]
    text = ompi.ompi_rules_text(rules, "hello\nworld")
    assert text.startswith("# hello\n# world\n2  # number of collectives\n")
    parsed = ompi.parse_ompi_rules(text)
    # the first rule of every table starts at 0 (Open MPI requires it); alltoall's sizes are x np;
    # the second pairwise rule is merged into the first
    assert parsed == [("allreduce", 2, 0, 4), ("allreduce", 2, 1024, 0), ("allreduce", 2, 65536, 6),
                      ("alltoall", 4, 0, 2)]


def test_parse_ompi_rules_errors():
    with pytest.raises(MtError, match="ends early"):
        ompi.parse_ompi_rules("1\n2\n1\n2\n2\n0 4 0 0\n")
    with pytest.raises(MtError, match="unknown collective id 42"):
        ompi.parse_ompi_rules("1\n42\n1\n2\n1\n0 4 0 0\n")
    with pytest.raises(MtError, match="invalid token 'x'"):
        ompi.parse_ompi_rules("1\nx\n")


def test_read_settings(tmp_path):
    p = tmp_path / "t.env"
    p.write_text("# c\nexport A=1\nB='x y'\n\n")
    assert tf.read_settings(p) == {"A": "1", "B": "x y"}
    p.write_text("# only comments\n")
    assert tf.read_settings(p) == {}
    p.write_text("not a setting\n")
    with pytest.raises(MtError, match="invalid line 1"):
        tf.read_settings(p)
    with pytest.raises(MtError, match="no such file"):
        tf.read_settings(tmp_path / "missing.env")


# -- gain and decision ---------------------------------------------------------------------------------

def test_gain_ci():
    rng = np.random.default_rng(3)
    a = 10 + rng.normal(0, 0.1, 10)
    assert gain_pct(a, a * 0.5) == pytest.approx(50.0)
    lo, hi = gain_ci(a, a * 0.5 + rng.normal(0, 0.05, 10))
    assert 40 < lo < 50 < hi < 60
    lo, hi = gain_ci(a, 10 + rng.normal(0, 0.1, 10))
    assert lo < 0 < hi
    assert gain_ci(a[:2], a) is None
    assert gain_ci(a, a, seed=1) == gain_ci(a, a, seed=1)


def _campaign(root: Path, factors: dict[str, dict[int, float]], runs=10, nprocs=2, seed=0) -> Path:
    """A tune campaign: config -> {msize: runtime factor}; 'default' measures allreduce at every size."""
    from mpitempo.io.synthetic import sample_runtimes, write_run

    rng = np.random.default_rng(seed)
    (root / "runs").mkdir(parents=True)
    (root / "campaign.toml").write_text('name = "t"\nkind = "tune"\n')
    for i in range(runs):
        for cfg, per in factors.items():
            sizes = sorted(per)
            op = np.repeat("allreduce", 50 * len(sizes))
            ms = np.repeat(np.array(sizes, dtype=np.int64), 50)
            rt = np.concatenate([sample_runtimes(rng, 50, 1e-6 * (1 + m / 1024) * per[m] * np.exp(rng.normal(0, 0.01)))
                                 for m in sizes])
            write_run(root, f"{cfg}-{i:03d}", cfg, i, op, ms, rt, nprocs=nprocs)
    return root


def test_decide_boundaries(tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide, rules_from

    sizes = (8, 1024, 65536)
    root = _campaign(tmp_path / "c", {
        "default": {m: 1.0 for m in sizes},
        "allreduce.ring": {8: 1.3, 1024: 0.8, 65536: 0.6},     # faster from 1 KiB
        "allreduce.rd": {8: 0.7, 1024: 0.97, 65536: 1.5},      # faster at 8 B; 3% at 1 KiB is below --min-gain
        "allreduce.same": {m: 1.0 for m in sizes}})
    dec = decide(open_campaign(root), min_gain_pct=5.0, failed={"allreduce.bad": "not usable"})
    got = {r["msize"]: r["chosen"] for r in dec.rows}
    assert got == {8: "rd", 1024: "ring", 65536: "ring"}
    r8 = next(r for r in dec.rows if r["msize"] == 8)
    assert 20 < r8["gain_pct"] < 40 and r8["gain_ci_lo_pct"] < r8["gain_pct"] < r8["gain_ci_hi_pct"]
    assert r8["p_value"] < 0.05
    assert any("allreduce.bad: not measured: not usable" in n for n in dec.notes)
    rules = rules_from(dec.rows, {("allreduce", "rd"): 3, ("allreduce", "ring"): 4})
    assert [(r.msize, r.algorithm, r.alg_id) for r in rules] == [(8, "rd", 3), (1024, "ring", 4)]
    # a larger minimum gain keeps the default where the gain is smaller
    dec = decide(open_campaign(root), min_gain_pct=35.0)
    assert {r["msize"]: r["chosen"] for r in dec.rows} == {8: "default", 1024: "default", 65536: "ring"}
    assert "fastest other: rd" in next(r for r in dec.rows if r["msize"] == 8)["why_default"]


def test_decide_keeps_default_without_evidence(tmp_path):
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide

    # 10% faster but only 3 mpiruns a side: the rank-sum test cannot reach p <= 0.05 (two-sided)
    root = _campaign(tmp_path / "c", {"default": {8: 1.0}, "allreduce.ring": {8: 0.9}}, runs=3)
    dec = decide(open_campaign(root))
    assert dec.rows[0]["chosen"] == "default" and dec.rows[0]["gain_pct"] == 0.0
    assert any("too few runs" in n for n in dec.notes)


def test_decide_when_every_algorithm_failed(tmp_path):
    """Only the default has runs (e.g. --algorithms barrier:smp, which MPICH refuses on 2 ranks): the
    default is kept with the failure as a note, not compare()'s 'factor config has only one level'."""
    from mpitempo.analysis.store import open_campaign
    from mpitempo.analysis.tune import decide

    root = _campaign(tmp_path / "c", {"default": {8: 1.0}}, runs=3)
    dec = decide(open_campaign(root), failed={"allreduce.smp": "not usable"})
    assert [r["chosen"] for r in dec.rows] == ["default"]
    assert any("allreduce.smp: not measured: not usable" in n for n in dec.notes)


# -- planning ----------------------------------------------------------------------------------------

def test_parse_budget():
    assert tuneplan.parse_budget("10m") == 600
    assert tuneplan.parse_budget("90s") == 90
    assert tuneplan.parse_budget("1.5h") == 5400
    for bad in ("0", "ten", "-3m", "5d"):
        with pytest.raises(MtError, match="invalid --budget"):
            tuneplan.parse_budget(bad)


def _plan(**kw):
    d = dict(ops=["allreduce", "bcast"], msizes=[8, 64, 512, 4096, 32768, 262144],
             algorithms={"allreduce": ["a", "b", "c"], "bcast": ["x", "y"]}, np_list=[2], mpiruns=10,
             time_slice_s=0.2)
    d.update(kw)
    return tuneplan.Plan(**d)


def test_plan_fits_budget_and_says_what_it_left_out():
    p = tuneplan.fit(_plan(), None, 0.05)
    assert p.left_out == [] and p.configs == 6 and p.total_mpiruns == 60
    full = p.estimate_s
    p = tuneplan.fit(_plan(), full / 4, 0.05)
    assert p.estimate_s <= full / 4 and p.left_out
    p = tuneplan.fit(_plan(), 40, 0.05)
    assert p.estimate_s <= 40
    assert p.mpiruns == 4          # the fewest that can reach p <= 0.05 two-sided
    assert any("message sizes left out" in x for x in p.left_out)
    assert p.msizes[0] == 8        # the smallest size is kept longest
    with pytest.raises(MtError, match="too small: 6 configurations .* one mpirun each"):
        tuneplan.fit(_plan(), 5, 0.05)


# -- the command: bad input before anything is built or launched ---------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["--ops", "allgatherv"], "unknown op 'allgatherv' for tune"),
    (["--ops", "bcast,bcast"], "listed twice"),
    (["--msizes", "0"], "invalid size"),
    (["-n", "two"], "invalid -n/--np 'two'"),
    (["--budget", "soon"], "invalid --budget 'soon'"),
    (["--time-slice", "fast"], "time-slice"),
    (["--verify", "x.env", "--algorithms", "allreduce:ring"], "takes no --algorithms"),
])
def test_bad_input_one_line(cli, tmp_path, args, msg):
    out = tmp_path / "o"
    code, so, se = cli("tune", *args, "-o", out)
    assert code != 0
    assert msg in se and len(se.strip().splitlines()) == 1
    assert not out.exists()


def test_existing_outdir_refused(cli, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "x").write_text("")
    code, so, se = cli("tune", "-o", out)
    assert code != 0 and "already exists" in se


def test_outdir_symlink_refused(cli, tmp_path):
    """-o a link to someone's empty directory: refused, nothing written through it."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "lnk").symlink_to("empty")
    code, so, se = cli("tune", "--ops", "barrier", "-o", tmp_path / "lnk")
    assert code == 2 and "is a symbolic link" in se and len(se.strip().splitlines()) == 1
    assert not any((tmp_path / "empty").iterdir())


def test_budget_too_small_and_dry_run(cli, tmp_path):
    code, so, se = cli("tune", "--ops", "allreduce", "--budget", "2s", "-o", tmp_path / "o")
    assert code != 0 and "--budget 2 s is too small" in se and not (tmp_path / "o").exists()
    code, so, se = cli("tune", "--ops", "allreduce,bcast", "--msizes", "8-1M", "--budget", "3m", "--dry-run",
                       "--json")
    assert code == 0, se
    plan = json.loads(so)
    assert plan["estimate_s"] <= 180 and plan["left_out"] and plan["library"] in ("mpich", "openmpi")
    assert set(plan["algorithms"]) == {"allreduce", "bcast"}


def test_unknown_algorithm_refused(cli, tmp_path):
    code, so, se = cli("tune", "--ops", "allreduce", "--algorithms", "allreduce:fastest", "-o", tmp_path / "o")
    assert code != 0 and "no allreduce algorithm 'fastest'" in se and not (tmp_path / "o").exists()


def test_selection_env_names_the_variables_that_change_the_selection():
    env = {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE": "0",
           "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "/x.json", "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
           "OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll": "^han", "OMPI_MCA_btl": "self,vader",
           "PATH": "/bin"}
    assert list(variants.selection_env("mpich", env)) == ["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
                                                         "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE",
                                                         "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"]
    assert list(variants.selection_env("openmpi", env)) == ["OMPI_MCA_coll", "OMPI_MCA_coll_tuned_use_dynamic_rules"]
    assert variants.selection_env("smpi", env) == {}
    assert variants.selection_env_note("mpich", {"PATH": "/bin"}) is None
    note = variants.selection_env_note("openmpi", {"OMPI_MCA_coll": "^han\x1b[2J"})
    assert "OMPI_MCA_coll=^han" in note and "\x1b" not in note
