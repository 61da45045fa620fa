"""Kind `logp`: LogP/LogGP parameters of a communicator (mpitempo-logp).

Every mpirun measures RTT, o_s, o_r, L and g (and G with msizes) between rank 0
and the other ranks (Hoefler et al. 2005 use such parameters to predict
barrier runtimes). Files of a run: meta.json (its `logp` object: medians over
the rank pairs; `pairs`: per pair) and logp.csv (every timing: rank_a, rank_b,
quantity, rep, value_s). See docs/barrier.md.
"""
from __future__ import annotations

import json
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind
from mpitempo.kinds.clocks import check_args


class LogpKind(Kind):
    def check(self, campaign, build, configs=None) -> None:
        for cfg in configs if configs is not None else campaign.configs:
            check_args(build.binary(self.executable), campaign.core_args(cfg))

    def status(self, returncode, complete):
        # complete, but a rank pair failed the sanity checks (L < 0 or g < o_s)
        return "insane" if returncode == 3 and complete else None


def load_logp(run_dirs: list[Path]) -> list[dict]:
    """The `logp` object of every complete run, with run_id and nprocs."""
    out = []
    for d in run_dirs:
        try:
            meta = json.loads((d / "meta.json").read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise MtError(f"cannot read the LogP results of run '{d.name}': {e}") from None
        lp = meta.get("logp")
        if not isinstance(lp, dict):
            raise MtError(f"run '{d.name}' has no 'logp' object in meta.json")
        out.append(dict(lp, run_id=d.name, nprocs=meta.get("nprocs")))
    return out


KIND = LogpKind(name="logp", app="logp", executable="mpitempo-logp", data_files=("logp.csv",),
                has_measurements=False, description="LogP/LogGP parameters between rank pairs")
