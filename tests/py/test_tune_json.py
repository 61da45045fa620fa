"""The JSON tuning files without MPI: MPICH's selection tree (grammar, per-size and per-process-count
rules, completeness, evaluation), Open MPI's JSON rules, provenance of predicted rules, the MPICH
MPIR-level decision, gain per rule, and bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mpitempo.build import Build
from mpitempo.errors import MtError
from mpitempo.mpilib import mpich_csel as mc
from mpitempo.io import tuning_files as tf
from mpitempo.mpilib import openmpi as ompi

BASE = {"collective=bcast": {"comm_type=intra": {"avg_msg_size<=12288": {"algorithm=MPIR_Bcast_intra_binomial": {}},
                                                 "avg_msg_size=any":
                                                     {"algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}},
                             "comm_type=inter": {"algorithm=MPIR_Bcast_inter_remote_send_local_bcast": {}}},
        "collective=allgather": {"comm_type=intra": {"any": {"algorithm=MPIR_Allgather_intra_ring": {}}}},
        "collective=barrier": {"comm_type=intra": {"any": {"algorithm=MPIR_Barrier_intra_k_dissemination": {}}}}}
KNOWN = {"algorithm=MPIR_Bcast_intra_binomial", "algorithm=MPIR_Bcast_intra_scatter_ring_allgather",
         "algorithm=MPIR_Bcast_inter_remote_send_local_bcast", "algorithm=MPIR_Bcast_intra_pipelined_tree",
         "algorithm=MPIR_Allgather_intra_ring", "algorithm=MPIR_Allgather_intra_brucks",
         "algorithm=MPIR_Barrier_intra_k_dissemination", "algorithm=MPIR_Bcast_allcomm_nb"}


def test_selection_tree_per_size_and_process_count():
    tree = mc.selection_tree(BASE, {"bcast": {2: [(8, "binomial", None), (4096, "pipelined_tree", {"chunk_size": 64})],
                                              4: [(8, "nb", None)]}}, KNOWN)
    mc.validate(tree, KNOWN)
    assert set(tree) == set(BASE)                                  # complete: untouched ops stay
    assert tree["collective=allgather"] == BASE["collective=allgather"]
    intra = tree["collective=bcast"]["comm_type=intra"]
    assert list(intra) == ["comm_size<2", "comm_size<4", "comm_size=any"]
    assert intra["comm_size<4"] == {"avg_msg_size<=4095": {"algorithm=MPIR_Bcast_intra_binomial": {}},
                                    "avg_msg_size=any": {"algorithm=MPIR_Bcast_intra_pipelined_tree":
                                                         {"chunk_size=64": {}}}}
    assert tree["collective=bcast"]["comm_type=inter"] == BASE["collective=bcast"]["comm_type=inter"]
    sel = lambda m, n: mc.select(tree, "bcast", m, n)             # noqa: E731
    assert sel(4095, 2) == "MPIR_Bcast_intra_binomial" and sel(4096, 2) == "MPIR_Bcast_intra_pipelined_tree"
    assert sel(4096, 3) == "MPIR_Bcast_intra_pipelined_tree"      # np 2's rules hold up to the next tuned count
    assert sel(8, 4) == sel(10 ** 6, 64) == "MPIR_Bcast_allcomm_nb"
    assert sel(8, 1) == "MPIR_Bcast_intra_binomial" and sel(10 ** 6, 1) == "MPIR_Bcast_intra_scatter_ring_allgather"
    assert mc.short_name("bcast", sel(8, 4)) == "nb"


def test_total_size_ops_and_barrier():
    tree = mc.selection_tree(BASE, {"allgather": {4: [(8, "ring", None), (1024, "brucks", None)]},
                                    "barrier": {2: [(0, "k_dissemination", None)]}}, KNOWN)
    # allgather's size is the bytes of all blocks: 1024 B per rank on 4 ranks is 4096
    assert "total_msg_size<=4095" in tree["collective=allgather"]["comm_type=intra"]["comm_size=any"]
    assert mc.select(tree, "allgather", 512, 4) == "MPIR_Allgather_intra_ring"
    assert mc.select(tree, "allgather", 1024, 4) == "MPIR_Allgather_intra_brucks"
    assert mc.select(tree, "barrier", 0, 2) == "MPIR_Barrier_intra_k_dissemination"


def test_selection_tree_refuses_unknown_algorithms_and_validate_catches_bad_files():
    with pytest.raises(MtError, match="has no 'algorithm=MPIR_Bcast_intra_fastest'"):
        mc.selection_tree(BASE, {"bcast": {2: [(8, "fastest", None)]}}, KNOWN)
    for bad, msg in (({"collective=bcast": {"msg_size<=8": {}}}, "does not know the key 'msg_size<=8'"),
                     ({"collective=bcast": {"any": []}}, "must be a JSON object"),
                     ({"collective=bcast": {"any": {"algorithm=MPIR_Bcast_intra_x": {}}}}, "has no")):
        with pytest.raises(MtError, match=msg):
            mc.validate(bad, KNOWN)


def _build(tmp_path, flavour):
    return Build("f", str(tmp_path / "mpicc"), str(tmp_path / "mpiexec"), flavour, "", "fake 1.0", str(tmp_path))


def test_write_config_mpich(tmp_path):
    rules = [tf.Rule("bcast", 2, 8, "binomial"), tf.Rule("bcast", 2, 4096, "pipelined_tree", source="predicted")]
    res = tf.write_config(_build(tmp_path, "mpich"), rules, tmp_path, ({"mpir": BASE}, KNOWN))
    assert res["settings"] == {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": res["config_file"],
                               "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE": "0"}
    tree = json.loads((tmp_path / "mpich-coll-selection.json").read_text())
    assert mc.select(tree, "bcast", 8192, 2) == "MPIR_Bcast_intra_pipelined_tree"
    env = (tmp_path / "tuning.env").read_text()
    assert "PREDICTED rule (model, not measured at that size): bcast np=2 from 4096 B: pipelined_tree" in env
    prov = json.loads((tmp_path / "tune-rules.json").read_text())
    assert [r["source"] for r in prov["rules"]] == ["measured", "predicted"]
    assert tf.read_settings(tmp_path / "tuning.env") == res["settings"]
    # an op tuned at the MPIR level needs an MPIR algorithm at every size
    with pytest.raises(MtError, match="names no algorithm"):
        tf.write_config(_build(tmp_path, "mpich"), [tf.Rule("bcast", 2, 8, "binomial"), tf.Rule("bcast", 2, 64, None)],
                        tmp_path / "o2", ({"mpir": BASE}, KNOWN))


def test_ompi_rules_json():
    rules = [tf.Rule("allreduce", 2, 8, "ring", 4), tf.Rule("allreduce", 2, 1024, None),
             tf.Rule("allreduce", 2, 65536, "rabenseifner", 6), tf.Rule("allreduce", 4, 8, "ring", 4),
             tf.Rule("alltoall", 4, 64, "pairwise", 2), tf.Rule("alltoall", 4, 128, "pairwise", 2)]
    j = ompi.ompi_rules_json(rules)
    assert j["rule_file_version"] == 3 and j["module"] == "tuned"
    assert j["collectives"]["allreduce"] == [
        {"comm_size_min": 2, "comm_size_max": 3, "rules": [
            {"msg_size_min": 0, "msg_size_max": 1023, "alg": "ring"},
            {"msg_size_min": 65536, "msg_size_max": "inf", "alg": "rabenseifner"}]},
        {"comm_size_min": 4, "comm_size_max": "inf", "rules": [{"msg_size_min": 0, "msg_size_max": "inf", "alg": "ring"}]}]
    # alltoall's size is x comm size; the two pairwise rules are one
    assert j["collectives"]["alltoall"][0]["rules"] == [{"msg_size_min": 0, "msg_size_max": "inf", "alg": "pairwise"}]


def test_write_config_openmpi_writes_both_formats(tmp_path):
    rules = [tf.Rule("bcast", 2, 8, "binomial", 6), tf.Rule("bcast", 2, 1024, None, source="predicted")]
    res = tf.write_config(_build(tmp_path, "openmpi"), rules, tmp_path)
    assert res["settings"]["OMPI_MCA_coll_tuned_dynamic_rules_filename"].endswith("ompi-coll-rules.conf")
    assert json.loads((tmp_path / "ompi-coll-rules.json").read_text())["collectives"]["bcast"][0]["rules"] == \
        [{"msg_size_min": 0, "msg_size_max": 1023, "alg": "binomial"}]
    conf = (tmp_path / "ompi-coll-rules.conf").read_text()
    assert "1024 0 0 0  # from 1024 B: default (PREDICTED by the model, not measured at this size)" in conf


def _cand(msize, alg, median, slower=False, gain=0.0):
    return {"op": "bcast", "msize": msize, "nprocs": 2, "algorithm": alg, "median_s": median, "slower": slower,
            "gain_pct": gain, "gain_ci_lo_pct": None, "gain_ci_hi_pct": None, "p_holm": 0.5}


def _row(msize, chosen):
    return {"op": "bcast", "msize": msize, "nprocs": 2, "chosen": chosen, "median_default_s": 1.0, "gain_pct": 0.0}


def test_mpich_mpir_level_fills_or_keeps_the_default():
    from mpitempo.analysis.tune import mpich_mpir_level

    rows = [_row(8, "binomial"), _row(1024, "default")]
    out, notes = mpich_mpir_level(rows, [_cand(1024, "binomial", 1.1), _cand(1024, "tree", 1.05)])
    assert [r["chosen"] for r in out] == ["binomial", "tree"] and out[1]["mpir_fill"]
    assert any("runs at MPICH's MPIR level" in n for n in notes)
    out, notes = mpich_mpir_level(rows, [_cand(1024, "binomial", 2.0, slower=True)])
    assert [r["chosen"] for r in out] == ["default", "default"] and out[0]["chosen_per_size"] == "binomial"
    assert any("the default is kept at every size" in n for n in notes)


def test_rule_gains():
    from mpitempo.analysis.tune import rule_gains

    rng = np.random.default_rng(1)
    samples = {}
    rows = []
    for m, f in ((8, 0.5), (64, 0.5), (512, 1.0)):
        samples[("default", "bcast", m, 2)] = list(1 + rng.normal(0, 0.01, 8))
        samples[("tuned", "bcast", m, 2)] = list(f + rng.normal(0, 0.01, 8))
        rows.append({"op": "bcast", "msize": m, "nprocs": 2, "chosen": "x" if f < 1 else "default", "confirmed": f < 1})
    g = rule_gains(rows, samples)
    assert [(r["algorithm"], r["msizes"]) for r in g] == [("x", [8, 64]), ("default", [512])]
    assert 45 < g[0]["gain_ci_lo_pct"] < g[0]["gain_pct"] < g[0]["gain_ci_hi_pct"] < 55 and g[0]["confirmed"]
    assert g[1]["gain_ci_lo_pct"] < 0 < g[1]["gain_ci_hi_pct"] and not g[1]["confirmed"]


def test_predicted_rows():
    from mpitempo.analysis.tune import predicted_rows

    samples = {}
    for m in (8, 64, 512, 4096, 32768):
        samples[("default", "bcast", m, 2)] = [1e-6 + 2e-9 * m] * 4
        samples[("bcast.ring", "bcast", m, 2)] = [3e-6 + 0.5e-9 * m] * 4
    rows = [_row(m, "default") for m in (8, 64, 512, 4096, 32768)]
    out = predicted_rows(samples, rows, [16, 16384, 65536], "openmpi")
    assert [(r["msize"], r["chosen"], r["predicted"]) for r in out] == [(16, "default", True), (16384, "ring", True),
                                                                       (65536, "ring", True)]
    assert out[1]["gain_pct"] > 0 and out[1]["p_value"] is None
    # MPICH: an op kept at the device level keeps the default, whatever the model says
    assert {r["chosen"] for r in predicted_rows(samples, rows, [16384], "mpich")} == {"default"}


@pytest.mark.parametrize("args,msg", [
    (["--msizes", "8,1K", "--predict", "1K"], "1024 B is also in --msizes"),
    (["--msizes", "8", "--predict", "1K"], "needs at least 2 measured --msizes"),
    (["--predict", "x"], "invalid size"),
    (["--verify", "x.env", "--predict", "1K"], "takes no --algorithms, --predict"),
])
def test_predict_bad_input(cli, tmp_path, args, msg):
    code, so, se = cli("tune", *args, "-o", tmp_path / "o")
    assert code != 0 and msg in se and len(se.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
