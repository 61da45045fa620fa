"""Kind `barrier`: our barrier algorithms and MPI_Barrier (mpitempo-bench with the
barrier ops), measured with Round-Time (Hunold and Carpen-Amarie 2018) so that
the exit imbalance of a barrier is part of its runtime (Hoefler et al. 2005
compare such runtimes with LogP predictions). A run is a bench run: the same
measurements.csv, so summary, compare and report read it as they read bench.
"""
from __future__ import annotations

from mpitempo.kinds.bench import BenchKind

DEFAULT_ALGORITHMS = ("barrier", "barrier:central", "barrier:combining:2", "barrier:combining:4",
                      "barrier:fway:4", "barrier:mcs", "barrier:tournament", "barrier:bst", "barrier:butterfly",
                      "barrier:pairwise", "barrier:dissemination")

KIND = BenchKind(name="barrier", app="bench", executable="mpitempo-bench", data_files=("measurements.csv",),
                 optional_files=("timestamps.csv",), list_keys=("ops",),
                 defaults={"ops": list(DEFAULT_ALGORITHMS), "scheme": "roundtime", "nrep": "200",
                           "time_slice": "0.5s"},
                 description="barrier algorithms vs MPI_Barrier with Round-Time")
