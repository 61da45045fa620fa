"""Kind `tree`: allreduce along explicit spanning trees with event collectors (mpitempo-tree;
Bongo, Anshus and Bjorndalen 2004).

Files of a run: meta.json, events.csv (call, inst, rank, enter_s, up_s, down_s, exit_s) and
links.csv (call, inst, parent, child, arrive_s, depart_s, arrival_order, departure_order), all
times on the global clock (docs/tree.md). In the common measurement table every allreduce call is
a measurement of op `allreduce-tree` (`allreduce` for the MPI_Allreduce baseline) with runtime
max(exit) - min(enter) over the ranks, scheme `tree`.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind, sql_list, sql_str
from mpitempo.build import core_error_line, direct_argv
from mpitempo.io.tree import load_run


@dataclass(frozen=True)
class TreeKind(Kind):
    def check(self, campaign, build, configs=None) -> None:
        """The core's own checks of every configuration at every job size (--check-args, no MPI)."""

        exe = direct_argv(build, build.binary(self.executable))   # an SMPI core runs under smpirun
        for cfg in configs if configs is not None else campaign.configs:
            args = campaign.core_args(cfg)
            for np_ in campaign.np:
                r = subprocess.run(exe + ["--check-args", "--expect-np", str(np_)] + args, capture_output=True,
                                   text=True, timeout=60)
                if r.returncode != 0:
                    msg = core_error_line(r.stderr) if r.stderr.strip() else f"exit {r.returncode}"
                    msg = msg.split(": error: ", 1)[-1]
                    raise MtError(f"configuration '{cfg.name}': {msg}")

    def check_run_files(self, rundir, root) -> None:
        """events.csv and links.csv through the strict reader of `tree --from` (io/tree.py): the
        measurement query reads events.csv by column position and trusts its values."""

        load_run(rundir, root)

    def meas_sql(self, files):
        consts = ", ".join(f"({sql_str(f)}, {int(m.get('nprocs', 2))}, {int(m['workload']['msize'])}, "
                           f"{sql_str('allreduce' if m['tree'].get('mpi_allreduce') else 'allreduce-tree')})"
                           for f, m in files)
        return f"""
            SELECT e.filename, f.op, f.msize, f.nprocs, 'tree' AS scheme, 0 AS exp, e.call AS rep,
                   max(e.exit_s) - min(e.enter_s) AS runtime_s, 1 AS valid,
                   max(e.exit_s - e.enter_s) AS local_max_s
            FROM read_csv({sql_list(f for f, _ in files)}, header=true, filename=true,
                          columns={{'call': 'BIGINT', 'inst': 'INTEGER', 'rank': 'INTEGER', 'enter_s': 'DOUBLE',
                                    'up_s': 'DOUBLE', 'down_s': 'DOUBLE', 'exit_s': 'DOUBLE'}}) e
            JOIN (VALUES {consts}) f(file, nprocs, msize, op) ON f.file = e.filename
            GROUP BY e.filename, f.op, f.msize, f.nprocs, e.call"""


KIND = TreeKind(name="tree", app="tree", executable="mpitempo-tree", data_files=("events.csv", "links.csv"),
                runner_owned=(), list_keys=(),
                description="allreduce spanning trees with event collectors (Gsum, SOR)")
