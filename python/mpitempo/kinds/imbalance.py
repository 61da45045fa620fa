"""Kind `imbalance`: exit skew of an operation started simultaneously by Round-Time (Hunold and
Carpen-Amarie 2018, section V-B, Fig. 8).

A bench run with the Round-Time scheme, a global clock and per-rank timestamps
(timestamps.csv): every measurement starts at a common time; its exit skew is
last exit - first exit. One configuration per algorithm variant of the library.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpitempo.kinds.bench import BenchKind

DEFAULTS = {"scheme": "roundtime", "sync": "hca3", "time_slice": "5s", "timestamps": True, "nrep": "500",
            "allow_few_valid": False, "ops": "barrier", "msizes": "8"}


@dataclass(frozen=True)
class ImbalanceKind(BenchKind):
    pass


KIND = ImbalanceKind(name="imbalance", app="bench", executable="mpitempo-bench", data_files=("measurements.csv",
                                                                                           "timestamps.csv"),
                     defaults=DEFAULTS, list_keys=("ops",),
                     description="exit imbalance of an operation under a global clock")
