"""Plans that cannot work are refused before launch (issue 32, class 5): memory per host (trace buffers,
message buffers with the ranks per host from a host file or the Slurm allocation; an unknown placement
is said, not passed over), compute phases against the timeout, simulation-only flags on every command
that has them. Rows of docs/reliability.md ("Received files: the trust boundary") name these tests.
Nothing here launches a job that the check should have refused."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mpitempo.errors import MtError

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT_VARS = ("SLURM_JOB_ID", "SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE",
                  "SLURM_MEM_PER_NODE", "PBS_NODEFILE", "LSB_HOSTS", "HYDRA_HOST_FILE",
                  "OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile")


@pytest.fixture
def no_allocation(monkeypatch):
    for v in PLACEMENT_VARS:
        monkeypatch.delenv(v, raising=False)


def _buffer_for(share: float) -> int:
    """--buffer whose events take `share` of this host's memory on one rank."""
    from mpitempo.runner.preflight import TRACE_EVENT_BYTES, host_memory_bytes

    return int(host_memory_bytes() * share) // TRACE_EVENT_BYTES


# -- trace --buffer: the ranks on one host together ----------------------------------------------------------

@pytest.mark.parametrize("mpiruns", [1, 2])
def test_trace_buffers_are_checked_per_host(mpiruns, cli, tmp_path, no_allocation):
    """Careless input: `trace run -n 4 --buffer N` where one rank's N events fit (30% of this host's
    memory) and four ranks' do not (before: launched; each rank allocates its buffer at MPI_Init).
    Refused in one line before the directory exists, for one trace and for a trace campaign."""
    n = _buffer_for(0.3)
    out = tmp_path / "tr"
    code, so, err = cli("trace", "run", "-n", 4, "--buffer", n, "--mpiruns", mpiruns, "-o", out, "--", "/bin/true")
    assert code == 2 and err.count("\n") == 1, err
    assert f"of trace buffers on this host (4 ranks x --buffer {n} events of 72 B), more than 75% of its memory" \
        in err and "lower --buffer" in err, err
    assert not out.exists()


def test_trace_buffers_of_one_rank_per_host_pass(tmp_path, no_allocation):
    """The same buffers spread by a host file: one or two ranks per host pass, three are refused."""
    from mpitempo.runner.preflight import check_trace_memory

    hosts = tmp_path / "hosts"
    hosts.write_text("a\nb\nc\nd\n")
    n = _buffer_for(0.3)
    check_trace_memory(4, n, f"mpiexec -f {hosts} -n {{np}} {{cmd}}")     # one per host
    check_trace_memory(8, n, f"mpiexec -f {hosts} -n {{np}} {{cmd}}")     # two per host: 60%
    with pytest.raises(MtError, match=r"of trace buffers on one host \(host file '.*hosts'\) \(3 ranks x"):
        check_trace_memory(12, n, f"mpiexec -f {hosts} -n {{np}} {{cmd}}")


def test_trace_event_size_is_the_tracers(build, tmp_path):
    """TRACE_EVENT_BYTES is sizeof(tr_ev_t) of src/trace/trace.h, compiled with this build's mpicc."""
    from mpitempo.runner.preflight import TRACE_EVENT_BYTES

    gen = next(Path(build.bindir).rglob("trace_count_auto.def"), None)
    if gen is None:
        pytest.skip("this build has no tracer (trace_count_auto.def not generated)")
    src = tmp_path / "sz.c"
    src.write_text('#include "trace.h"\n#include <stdio.h>\nint main(void){printf("%zu", sizeof(tr_ev_t));return 0;}\n')
    exe = tmp_path / "sz"
    subprocess.run([build.mpicc, f"-I{ROOT / 'src/trace'}", f"-I{ROOT / 'src/core'}", f"-I{ROOT / 'src'}",
                    f"-I{gen.parent}", "-o", str(exe), str(src)], check=True, capture_output=True)
    assert int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout) == TRACE_EVENT_BYTES


# -- ranks per host: where placement is known, and saying where it is not ------------------------------------

def test_ranks_per_host_from_host_files_and_slurm(tmp_path, monkeypatch, no_allocation):
    from mpitempo.runner.preflight import ranks_per_host

    hydra = tmp_path / "hydra"
    hydra.write_text("# two hosts\nn1:2\nn2:2\n")
    ompi = tmp_path / "ompi"
    ompi.write_text("n1 slots=4\nn2 slots=1\n")
    pbs = tmp_path / "pbs"
    pbs.write_text("n1\nn1\nn2\nn2\nn2\n")
    assert ranks_per_host(4, f"mpiexec -f {hydra} -n {{np}} {{cmd}}", False) == (2, f"host file '{hydra}'")
    assert ranks_per_host(8, f"mpiexec -f {hydra} -n {{np}} {{cmd}}", False)[0] == 4     # cycles: 2+2 per host
    assert ranks_per_host(5, f"mpirun --hostfile={ompi} -np {{np}} {{cmd}}", False)[0] == 4
    assert ranks_per_host(4, "mpirun --host n1:1,n2:1,n3:2 -np {np} {cmd}", False)[0] == 2
    assert ranks_per_host(4, f"mpiexec -f {tmp_path / 'missing'} -n {{np}} {{cmd}}", False)[0] is None
    assert ranks_per_host(4, "mylauncher {np} {cmd}", False) == (None, "launcher 'mylauncher {np} {cmd}' places the ranks")
    assert ranks_per_host(4, "srun", False)[0] is None                                   # outside an allocation
    assert ranks_per_host(4, None, False) == (4, "")
    monkeypatch.setenv("PBS_NODEFILE", str(pbs))
    assert ranks_per_host(4, None, False) == (2, "PBS_NODEFILE")
    monkeypatch.delenv("PBS_NODEFILE")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "2(x3),1")
    assert ranks_per_host(7, "srun", False) == (2, "the Slurm allocation's tasks per node")
    assert ranks_per_host(1, None, False)[0] == 1
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "16")
    assert ranks_per_host(8, "srun", False)[0] == 8


def test_message_buffers_per_host_under_a_host_file_and_slurm(tmp_path, monkeypatch, capsys, no_allocation):
    """Message buffers of 8 ranks x 4 GiB: refused when a host file or the allocation puts 8 on one
    23.5 GiB host (before: skipped whenever a host file or srun was involved), passed when 2 per host;
    an unknown placement prints one note that they were not checked."""
    from mpitempo.runner.preflight import check_host_memory, ranks_per_host

    plan = {"options": {"bw_window": 64, "bw_rbuf": "window"}, "experiments": [{"op": "mbw_mr", "msize": 64 << 20}]}
    mem = int(23.5 * 2**30)
    one = tmp_path / "one"
    one.write_text("n1:8\n")
    four = tmp_path / "four"
    four.write_text("n1:2\nn2:2\nn3:2\nn4:2\n")
    for hosts, refused in ((one, True), (four, False)):
        r, why = ranks_per_host(8, f"mpiexec -f {hosts} -n {{np}} {{cmd}}", False)
        if refused:
            with pytest.raises(MtError, match=r"32.0 GiB of message buffers on one host \(host file '.*one'\) "
                                              r"\(8 ranks x 64 x 67108864 B"):
                check_host_memory(plan, r, mem=mem, np=8, why=why, source=why)
        else:
            check_host_memory(plan, r, mem=mem, np=8, why=why, source=why)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "8(x2)")
    r, why = ranks_per_host(8, "srun", False)
    with pytest.raises(MtError, match=r"on one host \(the Slurm allocation's tasks per node\) \(8 ranks"):
        check_host_memory(plan, r, mem=mem, np=8, why=why, source=why)
    capsys.readouterr()
    r, why = ranks_per_host(8, "mylauncher {np} {cmd}", False)
    check_host_memory(plan, r, mem=mem, np=8, why=why)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "message buffers per host not checked" in err and "mylauncher" in err, err
    check_host_memory(plan, r, mem=mem * 100, np=8, why=why)   # fits even all on one host: nothing to say
    assert capsys.readouterr().err == ""


def test_slurm_memory_per_node_is_the_limit(monkeypatch, no_allocation):
    from mpitempo.runner.preflight import host_memory_limit

    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "1024")
    assert host_memory_limit() == (1 << 30, "its memory in the allocation")


# -- compute phases against the timeout ------------------------------------------------------------------------

def test_overlap_compute_longer_than_the_timeout_is_refused(cli, tmp_path, no_allocation):
    """Careless input: `run --ops iallreduce_overlap --overlap-compute 10s --timeout 10` (before: launched
    and killed by the timeout). Every measured call computes 10 s: refused in one line before the
    directory exists, with the fewest calls the stopping rule allows."""
    out = tmp_path / "out"
    code, so, err = cli("run", "--ops", "iallreduce_overlap", "--msizes", "8", "--overlap-compute", "10s",
                        "--timeout", "10", "-o", out)
    assert code == 2 and err.count("\n") == 1, err
    assert "needs at least 200 s (1 overlap experiment(s) x 20 calls with --overlap-compute 10 s at the fewest " \
           "the stopping rule allows), more than the timeout of 10 s" in err, err
    assert not out.exists()


def test_certain_calls_follow_the_stopping_rule():
    from mpitempo.runner.preflight import certain_calls

    base = {"scheme": "barrier", "min_valid": 10,
            "options": {"nrep": 100, "nrep_min": 20, "precision": 0.01, "exp_time": 1, "warmup": 10, "inner": 10}}
    assert certain_calls(base)[0] == 20                       # the early look at min_valid, plus the warm-up
    assert certain_calls(dict(base, options=dict(base["options"], exp_time=None)))[0] == 30   # --nrep-min
    assert certain_calls(dict(base, options=dict(base["options"], precision=0)))[0] == 110    # fixed --nrep
    assert certain_calls(dict(base, options=dict(base["options"], warmup="auto")))[0] == 10   # auto: none certain
    loop = dict(base, scheme="loop", options=dict(base["options"], precision=0))
    assert certain_calls(loop)[0] == 1010
    assert certain_calls(dict(loop, options=dict(loop["options"], inner_min_time=0.001)))[0] == 110


# -- simulation-only flags on every command that has them -------------------------------------------------------

@pytest.mark.parametrize("flag", [["--platform-ppn", "2"], ["--platform-oversubscribe"]])
@pytest.mark.parametrize("cmd", [["run", "--ops", "allreduce"], ["clocks"], ["tree"], ["barrier"], ["pingpong"],
                                 ["imbalance"], ["tune", "--ops", "allreduce"]])
def test_simulation_only_flags_need_a_platform(cmd, flag, cli, tmp_path):
    """Careless input: a simulation-only flag without --platform (the issue saw run and clocks ignore
    them): refused in one line by every command that has the flag, before anything is created."""
    out = tmp_path / "out"
    code, so, err = cli(*cmd, *flag, "-n", "2", "-o", out)
    assert code == 2 and err.count("\n") == 1 and f"{flag[0]} needs --platform FILE.xml" in err, err
    assert not out.exists()
