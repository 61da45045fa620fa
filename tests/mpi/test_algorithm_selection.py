"""A configuration that selects a collective algorithm gets every setting the library needs for it to take
effect, in `run` as in `tune`, and the library's own check that it did (mpilib: ``complete``): real mpiruns
with MPICH. No timing is asserted: the check is MPICH's MPIR_CVAR_COLLECTIVE_FALLBACK=error, which makes an
algorithm MPICH cannot use an error instead of a silent run of its own choice."""
from __future__ import annotations

import json

import pytest

from mpitempo.io.campaign import load_toml

pytestmark = pytest.mark.mpi


@pytest.fixture
def mpich(build):
    if build.flavour != "mpich":
        pytest.skip("MPICH-specific (the default MPI of this test run is not MPICH)")
    return build


def _campaign(tmp_path, configs: list[tuple[str, dict]], ops="allreduce") -> str:
    lines = ['name = "sel"', "np = 2", "mpiruns = 1", f'ops = ["{ops}"]', 'msizes = "8"', "nrep = 5"]
    for name, env in configs:
        lines += ["[[config]]", f'name = "{name}"']
        if env:
            lines.append("env = { " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }")
    p = tmp_path / "c.toml"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _launch_env(out, config: str) -> dict:
    meta = json.loads(next((out / "runs").glob(f"{config}-*/meta.json")).read_text())
    return meta["launch"]["launcher"]["env_added"]


def test_the_example_runs_ring_with_what_it_needs(cli, mpich, tmp_path):
    """examples/allreduce-algorithms.toml: 'ring' runs with the device switch off and the fallback an error;
    'default' with neither (the library's own choice)."""
    from pathlib import Path

    ex = Path(__file__).resolve().parents[2] / "examples" / "allreduce-algorithms.toml"
    assert {c["name"] for c in load_toml(ex)["config"]} == {"default", "ring"}
    out = tmp_path / "algos"
    code, so, se = cli("run", ex, "--mpiruns", "1", "--nrep", "5", "--msizes", "8", "-o", out, "--quiet",
                       "--no-summary")
    assert code == 0, se
    ring = _launch_env(out, "ring")
    assert ring["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "ring"
    assert ring["MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"] == "0" and ring["MPIR_CVAR_COLLECTIVE_FALLBACK"] == "error"
    default = _launch_env(out, "default")
    assert not any(k.startswith("MPIR_CVAR_ALLREDUCE") or k == "MPIR_CVAR_COLLECTIVE_FALLBACK" for k in default)
    launch = json.loads(next((out / "runs").glob("ring-*/meta.json")).read_text())["launch"]["launcher"]
    assert any("MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0" in n and "added" in n for n in launch["notes"])


def test_an_algorithm_mpich_cannot_use_fails_the_run_instead_of_measuring_the_default(cli, mpich, tmp_path):
    """reduce_scatter_allgather needs count >= 2 on 2 ranks: MPI_Init's own allreduce of one element cannot
    use it. Without the fallback setting MPICH runs its own choice and the configuration 'rsa' measured
    the default under the algorithm's name; now the mpirun fails and says why."""
    out = tmp_path / "c"
    code, so, se = cli("run", _campaign(tmp_path, [("default", {}), ("rsa", {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "reduce_scatter_allgather"})]), "-o", out, "--quiet", "--no-summary")
    failed = list((out / "runs").glob("rsa-*/failed.json"))
    assert failed, (code, se)
    reason = json.loads(failed[0].read_text())["reason"]
    assert "the collective algorithm the configuration selects is not usable by MPICH" in reason, reason
    assert not list((out / "runs").glob("default-*/failed.json"))


@pytest.mark.parametrize("env, said", [
    ({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "1"},
     "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=1 keeps MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring from taking effect"),
    ({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_COLLECTIVE_FALLBACK": "silent"},
     "MPIR_CVAR_COLLECTIVE_FALLBACK=silent lets MPICH run its own choice"),
    ({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_DEVICE_COLLECTIVES": "all"},
     "MPIR_CVAR_DEVICE_COLLECTIVES=all keeps"),
    ({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "fastest"},
     "invalid MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=fastest (config 'x'): not one of the MPICH allreduce algorithms"),
    ({"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"},
     "configurations 'default' and 'x' differ only in MPIR_CVAR_BCAST_INTRA_ALGORITHM, which selects no MPICH "
     "algorithm of what they measure (allreduce)"),
    ({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "auto"}, "differ only in MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "ring"}, "which selects no MPICH algorithm"),
])
def test_a_selection_that_cannot_take_effect_is_refused_before_anything_runs(cli, mpich, tmp_path, env, said):
    out = tmp_path / "c"
    code, so, se = cli("run", _campaign(tmp_path, [("default", {}), ("x", env)]), "-o", out)
    assert code != 0 and said in se, se
    assert "error" in se and len([ln for ln in se.splitlines() if "error" in ln]) == 1, se
    assert not out.exists()


def test_imbalance_says_which_discovered_algorithm_the_library_cannot_use(cli, mpich, tmp_path):
    """`imbalance` measures every barrier algorithm the library lists; MPICH's smp cannot run on one node:
    its mpiruns fail (they measured the default under the name smp before), the note says why, and the
    command succeeds with the others."""
    out = tmp_path / "imb"
    code, so, se = cli("imbalance", "-n", "2", "--mpiruns", "1", "--nrep", "20", "-o", out, "--json")
    assert code == 0, se
    rows = {r["variant"]: r for r in json.loads(so)}
    assert "default" in rows and "k_dissemination" in rows and rows["k_dissemination"]["runs"] == 1
    if "smp" in rows:
        assert rows["smp"]["runs"] == 0
        assert "variant smp is not usable by the library here: the collective algorithm the configuration " \
               "selects is not usable by MPICH" in se, se
