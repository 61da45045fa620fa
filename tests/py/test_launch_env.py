"""The environment a launch adds for the MPI flavour (runner/launch.py flavour_env): oversubscribed Open
MPI gets the variable its own launcher reads, ORTE's (Open MPI 4) as well as PRRTE's (Open MPI 5), so that a
user's template without --oversubscribe still starts more ranks than cores."""
from __future__ import annotations

import pytest

from mpitempo.build import Build
from mpitempo.mpilib.mpich import THROTTLE as MPICH_THROTTLE
from mpitempo.runner.launch import flavour_env


def _build(flavour: str, version: str) -> Build:
    return Build(fingerprint="0", mpicc="mpicc", mpiexec="mpiexec", flavour=flavour, show="", mpiexec_version=version,
                 bindir="/nonexistent")


@pytest.mark.parametrize("version, orte", [("mpiexec.openmpi (OpenRTE) 4.1.4", True),
                                           ("mpiexec (Open MPI) 5.0.8", False)])
def test_oversubscribed_open_mpi(version, orte):
    env = flavour_env(_build("openmpi", version), True)
    assert env["PRTE_MCA_rmaps_default_mapping_policy"] == ":oversubscribe"
    assert env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert ("OMPI_MCA_rmaps_base_oversubscribe" in env) == orte
    if orte:
        assert env["OMPI_MCA_rmaps_base_oversubscribe"] == "1"


def test_not_oversubscribed_adds_no_mapping():
    for b in (_build("openmpi", "mpiexec.openmpi (OpenRTE) 4.1.4"), _build("openmpi", "mpiexec (Open MPI) 5.0.8")):
        env = flavour_env(b, False)
        assert not any(k.startswith(("PRTE_MCA_rmaps", "OMPI_MCA_rmaps")) for k in env), env


def test_mpich_oversubscribed_throttles():
    assert flavour_env(_build("mpich", "HYDRA build details:"), True) == dict(MPICH_THROTTLE)
    assert flavour_env(_build("mpich", "HYDRA build details:"), False) == {}


def test_user_setting_kept_and_configuration_replacement_said(monkeypatch, capsys):
    """mpitempo's own launch settings give way to the user's explicit value (noted); a configuration's
    env applies (it is the configuration) and a note says which value of the user's it replaces."""
    import mpitempo.runner.launch as launch

    monkeypatch.setattr(launch, "ncores", lambda: 1)
    monkeypatch.setattr(launch, "_SAID", set())   # notes are printed once per process
    monkeypatch.setenv("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "0")
    monkeypatch.setenv("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "ring")
    b = _build("mpich", "HYDRA build details:")
    lw = launch.make_launch(b, 2, ["true"], "sh -c 'exec \"$@\"' x {cmd}",
                            {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"})
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE" not in lw.env
    assert lw.env["MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT"] == "1"
    assert lw.env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "recursive_doubling"
    err = capsys.readouterr().err
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE=0 of your environment kept" in err, err
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring of your environment replaced by the configuration's" in err
    # and the settings MPICH needs for the selected algorithm to take effect (mpilib.mpich.Mpich.complete)
    assert "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0 added for MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recursive_doubling" in err
    assert len(lw.notes) == 3
