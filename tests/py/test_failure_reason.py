"""The one-line reason of a failed mpirun, from stderr (and stdout) as MPICH, Open MPI and Slurm
print it (recorded on this machine)."""
from __future__ import annotations

import pytest

from mpitempo.runner.reason import MAX_LEN, failure_reason

OMPI_NOISE = """\
[vm:27725] /openmpi-5.0.11/ompi/mca/osc/ucx/osc_ucx_component.c:375  Error: OSC UCX component priority set inside component query failed 
 
[vm:27726] /openmpi-5.0.11/ompi/mca/osc/ucx/osc_ucx_component.c:375  Error: OSC UCX component priority set inside component query failed 
 
"""
OMPI_NONZERO = """\
--------------------------------------------------------------------------
prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-vm-27722@1,0]
   Exit code:    2
--------------------------------------------------------------------------
"""
OMPI_KILLED = """\
--------------------------------------------------------------------------
prterun noticed that process rank 1 with PID 0 on node vm exited on
signal 9 (Killed).
--------------------------------------------------------------------------
"""
HYDRA_KILLED = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 30917 RUNNING AT vm
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
This typically refers to a problem with your application.
Please see the FAQ page for debugging suggestions
"""
ENOSPC = ("mpitempo-bench: error: writing /x/camp/runs/default-001/.meta.json.27725.tmp failed: "
          "No space left on device\n")

CASES = [
    ("ompi-core-error", OMPI_NOISE + ENOSPC + OMPI_NONZERO, "failed", 2,
     "writing /x/camp/runs/default-001/.meta.json.27725.tmp failed: No space left on device"),
    ("mpich-core-error", ENOSPC, "failed", 2,
     "writing /x/camp/runs/default-001/.meta.json.27725.tmp failed: No space left on device"),
    ("ompi-killed", OMPI_NOISE + OMPI_KILLED, "failed", 9,
     "prterun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."),
    ("ompi-nonzero-no-core-line", OMPI_NONZERO, "failed", 2,
     "prterun detected that one or more processes exited with non-zero status, thus causing the job to "
     "be terminated. The first process to do so was: Process name: [prterun-vm-27722@1,0]; Exit code: 2"),
    ("hydra-killed", HYDRA_KILLED, "failed", 9,
     "a rank terminated: Killed (signal 9) (PID 30917 RUNNING AT vm; EXIT CODE: 9)"),
    ("timeout", OMPI_NOISE + "mpitempo: killed after the timeout of 4 s", "timeout", -9,
     "killed after the timeout of 4 s"),
    ("interrupted", ENOSPC + "mpitempo: interrupted by SIGTERM; the mpirun's process group was killed",
     "interrupted", -15, "interrupted by SIGTERM; the mpirun's process group was killed"),
    ("srun", "srun: error: vm: task 1: Killed\nsrun: Terminating StepId=12.0\n", "failed", 137,
     "srun: error: vm: task 1: Killed"),
    # a node lost mid-run (tests/mpi/test_slurm_lost_node.py, recorded): srun reports the death of the rank on
    # the surviving node first; the reason is the lost node
    ("srun-node-lost", "MPIDI_OFI_send_lightweight(108)............: OFI call tinjectdata failed\n"
     "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
     "srun: error: n1: task 0: Segmentation fault\nsrun: error: Node failure on n2\nsrun: error: Node failure on n2\n",
     "failed", 139, "srun: error: Node failure on n2"),
    ("nothing-printed", "", "failed", 9, "the launcher exited with code 9 and printed nothing on stderr"),
    ("nothing-printed-signal", "\n\n", "killed", -9,
     "the launcher was killed by SIGKILL and printed nothing on stderr"),
    ("incomplete", OMPI_NOISE, "incomplete", 0,
     "the mpirun exited with code 0 without writing its complete results (no meta.json)"),
    ("rank-prefixed-core-line", "[1,0]<stderr>: noise\n[1,1]mpitempo-clocks: error: bad spec 'x'\n", "failed", 2,
     "bad spec 'x'"),
]


@pytest.mark.parametrize("text,status,rc,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_failure_reason(text, status, rc, want):
    got = failure_reason(text, status, rc)
    assert got == want
    assert "\n" not in got and got.strip() == got and not set(got) <= set("-=* ")


def test_failure_reason_is_bounded():
    got = failure_reason("mpitempo-bench: error: " + "x" * 5000, "failed", 2)
    assert len(got) == MAX_LEN and got.endswith("…")
