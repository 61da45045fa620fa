"""Kind `tune`: the library's collective algorithms, one configuration per forced algorithm, measured with
Round-Time on a global clock (Hunold and Carpen-Amarie 2018) over several interleaved mpiruns
(Hunold and Carpen-Amarie 2016). A bench run: meta.json and measurements.csv.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpitempo.kinds.bench import BenchKind

DEFAULTS = {"scheme": "roundtime", "sync": "hca3", "time_slice": "200ms", "nrep": "300", "allow_few_valid": True,
            "ops": "allreduce", "msizes": "8,1K,64K"}


@dataclass(frozen=True)
class TuneKind(BenchKind):
    pass


KIND = TuneKind(name="tune", app="bench", executable="mpitempo-bench", data_files=("measurements.csv",),
                optional_files=("timestamps.csv",), defaults=DEFAULTS, list_keys=("ops",),
                description="collective algorithms of the MPI library, one configuration per algorithm")
