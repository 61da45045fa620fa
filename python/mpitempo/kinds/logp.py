"""Kind `logp`: LogP/LogGP parameters of a communicator (mpitempo-logp).

Every mpirun measures RTT, o_s, o_r, L and g (and G with msizes) between rank 0
and the other ranks (Hoefler et al. 2005 use such parameters to predict
barrier runtimes). Files of a run: meta.json (its `logp` object: medians over
the rank pairs; `pairs`: per pair) and logp.csv (every timing: rank_a, rank_b,
quantity, rep, value_s). See docs/barrier.md.
"""
from __future__ import annotations

from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind, sql_list, sql_str
from mpitempo.kinds.clocks import check_args


class LogpKind(Kind):
    def normalise(self, key, value, where="", label=None):
        if key == "msizes" and not (isinstance(value, str) and not value.strip()):   # "": no G (the default)
            from mpitempo.io.sizes import parse_sizes

            # a size twice (1K,1K or 1K,1024) was measured twice and weighed twice in the fit of G
            parse_sizes(value, (label or key) + where)
        return super().normalise(key, value, where, label)

    def check(self, campaign, build, configs=None) -> None:
        for cfg in configs if configs is not None else campaign.configs:
            check_args(build.binary(self.executable), campaign.core_args(cfg), build)

    def check_run_files(self, rundir, root) -> None:
        """logp.csv and meta.json through the strict reader (io/kindcsv.py): the measurement query
        reads logp.csv by column position."""
        from mpitempo.io.kindcsv import load_logp

        load_logp(rundir, root)

    def meas_sql(self, files):
        """Every timing as a row of the common measurement table, so that summary, compare and
        report read LogP campaigns: op "logp:<quantity>" (rtt, o_s, o_r, train_1, train_k) of the
        pair 0-<rank_b> (";peer=<b>" when a run measured several pairs), msize 4 (the message)."""
        consts = ", ".join(f"({sql_str(f)}, {int(m.get('nprocs', 2))})" for f, m in files)
        return f"""
            SELECT t.filename,
                   'logp:' || t.quantity ||
                   (CASE WHEN count(DISTINCT t.rank_b) OVER (PARTITION BY t.filename) > 1
                         THEN ';peer=' || t.rank_b ELSE '' END) AS op,
                   4 AS msize, f.nprocs, 'logp' AS scheme, t.rank_b AS exp, t.rep,
                   t.value_s AS runtime_s, 1 AS valid, t.value_s AS local_max_s
            FROM read_csv({sql_list(f for f, _ in files)}, header=true, filename=true,
                          columns={{'rank_a': 'INTEGER', 'rank_b': 'INTEGER', 'quantity': 'VARCHAR',
                                    'rep': 'INTEGER', 'value_s': 'DOUBLE'}}) t
            JOIN (VALUES {consts}) f(file, nprocs) ON f.file = t.filename"""

    def status(self, returncode, complete):
        # complete, but a rank pair failed the sanity checks (L < 0 or g < o_s)
        return "insane" if returncode == 3 and complete else None


def load_logp(run_dirs: list[Path]) -> list[dict]:
    """The `logp` object of every complete run, with run_id and nprocs."""
    out = []
    for d in run_dirs:
        from mpitempo.io.rundir import load_meta

        meta = load_meta(d / "meta.json")
        lp = meta.get("logp")
        if not isinstance(lp, dict):
            raise MtError(f"run '{d.name}' has no 'logp' object in meta.json")
        out.append(dict(lp, run_id=d.name, nprocs=meta.get("nprocs")))
    return out


KIND = LogpKind(name="logp", app="logp", executable="mpitempo-logp", data_files=("logp.csv",),
                description="LogP/LogGP parameters between rank pairs")
