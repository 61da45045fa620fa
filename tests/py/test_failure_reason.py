"""The one-line reason of a failed mpirun, from stderr (and stdout) as MPICH, Open MPI and Slurm
print it (recorded on this machine)."""
from __future__ import annotations

import pytest

from mpitempo.runner.reason import MAX_LEN, failure_reason, known_library_bug, with_known_bug

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


# Open MPI 4.1.4 (Debian), `examples/one-sided.toml` (rma_sync flush, rma_win allocate): the target
# rank crashes in btl/vader after MPI_Compare_and_swap (open-mpi/ompi#11349), recorded on this machine
OMPI41_CAS_ALLOCATE = """\
mpitempo-bench: [1/17] put 1024 B: median 0.100 us (100/100 valid)
mpitempo-bench: [2/17] get 65536 B: median 1.653 us (100/100 valid)
[vm:10736] *** Process received signal ***
[vm:10736] Signal: Segmentation fault (11)
[vm:10736] Signal code: Address not mapped (1)
[vm:10736] Failing at address: 0x7f4b1ea13008
[vm:10736] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f09d6cea050]
[vm:10736] [ 1] /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so(+0x78a7)[0x7f09d57ac8a7]
[vm:10736] [ 2] /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so(mca_btl_vader_poll_handle_frag+0x91)[0x7f09d57a9b41]
[vm:10736] [ 3] /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so(+0x500f)[0x7f09d57aa00f]
[vm:10736] [ 4] /lib/x86_64-linux-gnu/libopen-pal.so.40(opal_progress+0x2c)[0x7f09d6b68e1c]
[vm:10736] [ 5] /lib/x86_64-linux-gnu/libmpi.so.40(ompi_request_default_wait+0x55)[0x7f09d701ebc5]
[vm:10736] [ 6] /lib/x86_64-linux-gnu/libmpi.so.40(ompi_coll_base_barrier_intra_recursivedoubling+0xe5)[0x7f09d70886b5]
[vm:10736] [ 7] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Barrier+0xa8)[0x7f09d7038568]
[vm:10736] [ 8] /build/mpitempo-bench(+0x2480e)[0x56036497580e]
[vm:10736] [ 9] /build/mpitempo-bench(+0x215d1)[0x5603649725d1]
[vm:10736] [10] /build/mpitempo-bench(+0x2203d)[0x56036497303d]
[vm:10736] [11] /build/mpitempo-bench(+0xdd95)[0x56036495ed95]
[vm:10736] [12] /build/mpitempo-bench(+0x26646)[0x560364977646]
[vm:10736] [13] /lib/x86_64-linux-gnu/libc.so.6(+0x2724a)[0x7f09d6cd524a]
[vm:10736] [14] /lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x85)[0x7f09d6cd5305]
[vm:10736] [15] /build/mpitempo-bench(+0xcc21)[0x56036495dc21]
[vm:10736] *** End of error message ***
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpiexec.openmpi noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).
--------------------------------------------------------------------------
"""
CAS_ARGV = ["/usr/bin/mpiexec.openmpi", "-n", "2", "--bind-to", "core", "/build/mpitempo-bench", "--ops",
            "put,get,acc,fop,cas,put_bw,get_bw", "--msizes", "8,1024,65536", "--rma-sync", "flush",
            "--rma-win", "allocate"]


def test_known_open_mpi_cas_allocate_bug_is_named():
    reason = failure_reason(OMPI41_CAS_ALLOCATE, "failed", 139)
    out = with_known_bug(reason, OMPI41_CAS_ALLOCATE, CAS_ARGV)
    assert out.startswith("a known Open MPI 4.x bug: MPI_Compare_and_swap") and "ompi#11349" in out, out
    assert "rma_win = \"create\"" in out and "OMPI_MCA_osc=^rdma" in out and len(out) <= MAX_LEN, out


@pytest.mark.parametrize("change", ["no-cas", "create", "dynamic", "no-vader", "not-a-crash"])
def test_known_bug_needs_every_sign(change):
    """Only the combination is the bug: cas, an allocated window, a crash in btl/vader."""
    argv, text = list(CAS_ARGV), OMPI41_CAS_ALLOCATE
    if change == "no-cas":
        argv[argv.index("--ops") + 1] = "put,get,acc,fop,put_bw,get_bw"
    elif change in ("create", "dynamic"):
        argv[argv.index("--rma-win") + 1] = change
    elif change == "no-vader":
        text = text.replace("mca_btl_vader", "mca_btl_tcp")
    else:
        text = "\n".join(ln for ln in text.splitlines() if "Segmentation" not in ln and "signal 11" not in ln)
    assert known_library_bug(text, argv) is None
    reason = failure_reason(text, "failed", 1)
    assert with_known_bug(reason, text, argv) == reason
