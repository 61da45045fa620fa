"""Options shared by every command, so that each keeps one name everywhere."""
from __future__ import annotations

import click

np_option = click.option("-n", "--np", "np", type=click.IntRange(min=1), default=None,
                         help="Number of MPI ranks (default 2).")
launcher_option = click.option(
    "--launcher", default=None, metavar="TEMPLATE",
    help="'mpiexec' (default: the mpiexec of the MPI the core was built with, binding ranks to cores), "
         "'srun' (Slurm, with the PMI plugin of that MPI), or a command template with {np} and {cmd} "
         "(and {mpiexec}), e.g. \"mpirun -n {np} ./wrap.sh {cmd}\".")
mpicc_option = click.option("--mpicc", default=None, metavar="PATH",
                            help="MPI compiler wrapper to build with (default: mpicc on PATH).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
timer_option = click.option("--timer", default=None, metavar="NAME",
                            help="monotonic (default), monotonic_raw, realtime, gettimeofday, rdtscp, wtime.")
