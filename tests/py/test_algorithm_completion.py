"""What a selected collective algorithm needs to take effect, per library (mpilib ``complete``), and the
note `compare` gives on runs recorded without it. The real runs are tests/mpi/test_algorithm_selection.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mpitempo import mpilib
from mpitempo.analysis.comparison import selection_notes
from mpitempo.errors import MtError

MPICH, OMPI, SMPI = mpilib.of("mpich"), mpilib.of("openmpi"), mpilib.of("smpi")


def test_mpich_adds_the_device_switch_and_the_fallback_error():
    done = MPICH.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}, {})
    assert done.selects == {"allreduce": "ring"}
    assert done.added == {"MPIR_CVAR_COLLECTIVE_FALLBACK": "error", "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}
    # the user's environment selects too; what is already set is not added again
    done = MPICH.complete({}, {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial", "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE": "0"})
    assert done.added == {"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}
    # auto (and nothing) selects nothing
    assert MPICH.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "auto"}, {}).added == {}
    assert MPICH.complete({}, {"PATH": "/bin"}).added == {}
    # with the device collectives off altogether the per-op switch is not needed
    assert MPICH.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_DEVICE_COLLECTIVES": "none"},
                          {}).added == {"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}


@pytest.mark.parametrize("env, said", [
    ({"MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "1"}, "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=1 keeps"),
    ({"MPIR_CVAR_COLLECTIVE_FALLBACK": "print"}, "MPIR_CVAR_COLLECTIVE_FALLBACK=print lets MPICH run its own choice"),
    ({"MPIR_CVAR_DEVICE_COLLECTIVES": "all"}, "MPIR_CVAR_DEVICE_COLLECTIVES=all keeps"),
])
def test_mpich_refuses_what_keeps_the_selection_from_taking_effect(env, said):
    with pytest.raises(MtError, match=said):
        MPICH.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", **env}, {})


def test_open_mpi_adds_dynamic_rules_and_refuses_them_off():
    done = OMPI.complete({"OMPI_MCA_coll_tuned_allreduce_algorithm": "ring"}, {})
    assert done.selects == {"allreduce": "ring"} and done.added == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    assert OMPI.complete({"OMPI_MCA_coll_tuned_allreduce_algorithm": "0"}, {}).added == {}
    with pytest.raises(MtError, match="OMPI_MCA_coll_tuned_use_dynamic_rules=0 keeps Open MPI from reading"):
        OMPI.complete({"OMPI_MCA_coll_tuned_allreduce_algorithm": "4",
                       "OMPI_MCA_coll_tuned_use_dynamic_rules": "0"}, {})
    # another library's variables select nothing here
    assert OMPI.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}, {}).added == {}


def test_smpi_and_an_unknown_library_add_nothing():
    assert SMPI.complete({"MPITEMPO_SMPI_CFG": "smpi/allreduce:rdb"}, {}).added == {}
    assert mpilib.UNKNOWN.complete({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}, {}).added == {}


def test_signature_keeps_what_decides_the_measured_calls():
    sig = MPICH.signature({"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"}, {}, {"allreduce"})
    assert sig == {}     # a bcast selection decides nothing of allreduce (and the fallback decides no algorithm)
    sig = MPICH.signature({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}, {}, {"allreduce"})
    assert sig == {"MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}


def _meta(config, library, env):
    return {"config": config, "mpi": {"library": library}, "environment": env}


def test_compare_notes_runs_recorded_without_the_settings():
    old = SimpleNamespace(metas={
        "default-000": _meta("default", "MPICH Version: 5.0.2", {"PATH": "/bin"}),
        "ring-000": _meta("ring", "MPICH Version: 5.0.2", {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}),
        "ring-001": _meta("ring", "MPICH Version: 5.0.2", {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}),
        "omp-000": _meta("omp", "Open MPI v5.0.3", {"OMPI_MCA_coll_tuned_bcast_algorithm": "6"}),
        "bad-000": _meta("bad", "MPICH Version: 5.0.2", {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
                                                       "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "1"}),
    })
    notes = selection_notes(old)
    assert len(notes) == 3, notes
    ring = next(n for n in notes if n.startswith("configuration ring"))
    assert "selected allreduce ring without MPIR_CVAR_COLLECTIVE_FALLBACK=error, " \
           "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0" in ring and "library's own choice" in ring
    assert any(n.startswith("configuration omp selected bcast 6 without OMPI_MCA_coll_tuned_use_dynamic_rules=1")
               for n in notes)
    assert any(n.startswith("configuration bad: MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=1 keeps") for n in notes)
    new = SimpleNamespace(metas={"ring-000": _meta("ring", "MPICH Version: 5.0.2", {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring", "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0",
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"})})
    assert selection_notes(new) == []
