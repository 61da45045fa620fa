"""Shared fixtures: the real build of the C core, and a runner for the CLI."""
from __future__ import annotations

import os
import shutil
import subprocess
import signal
import sys
from pathlib import Path

import pytest

# pytest-xdist's workers run with COLUMNS=80 (their terminal width): tables and notes would be made
# for 80 columns there but for 100 (a pipe) in a serial run; the width tests set COLUMNS themselves
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPITEMPO_CACHE", str(ROOT / ".mpitempo-cache"))


@pytest.fixture(scope="session")
def build():
    from mpitempo.build import ensure_build
    from mpitempo.errors import MtError

    try:
        return ensure_build()
    except MtError as e:  # pragma: no cover - set-up problem, not a test result
        pytest.fail(f"cannot build the C core: {e}")


@pytest.fixture
def cli(capsys):
    """Run `mpitempo ARGS` in-process through main(); returns (code, stdout, stderr)."""
    from mpitempo.cli import main

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def bad_launcher(tmp_path):
    """A wrapper put in front of every rank that kills rank 1 of the mpirun with
    run index 3 (the 4th) while a flag file exists."""
    flag = tmp_path / "kill-flag"
    wrap = tmp_path / "wrap.sh"
    wrap.write_text("#!/bin/sh\n"
                    f"case \" $* \" in *' --run-index 3 '*) "
                    f"if [ -e {flag} ] && [ \"${{PMI_RANK:-$OMPI_COMM_WORLD_RANK}}\" = 1 ]; then kill -9 $$; fi;; esac\n"
                    "exec \"$@\"\n")
    wrap.chmod(0o755)
    return flag, "{mpiexec} -n {np} " + str(wrap) + " {cmd}"


@pytest.fixture
def ctrl_c():
    """Run `mpitempo ARGS` in a child, press Ctrl-C once the first mpirun of OUT is complete and the
    second has started (plus ``settle`` seconds); returns (returncode, stdout, stderr)."""
    import signal
    import subprocess
    import sys
    import time

    def run(args, out: Path, settle: float = 0.0):
        p = subprocess.Popen([sys.executable, "-m", "mpitempo.cli", *[str(a) for a in args]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             # a background job of a non-interactive shell ignores SIGINT, and so would the
                             # child: give it the default disposition, as in a terminal
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        for path in (out / "runs" / "default-000" / "meta.json", out / "runs" / "default-001" / "launch.json"):
            while time.monotonic() < deadline and not path.exists():
                time.sleep(0.02)
        time.sleep(settle)
        p.send_signal(signal.SIGINT)
        so, se = p.communicate(timeout=60)
        return p.returncode, so, se

    return run


@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs (skipped where mounting is not allowed)."""
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


# ---------------------------------------------------------------------------------------------------
# CPU sharing and load (issue 35): `make test` runs the tests in parallel (pytest-xdist), on a
# machine that other jobs may share. Two kinds of tests need care:
#
# * ``@pytest.mark.exclusive_cpu``: the test's assertion holds only when the ranks it starts have the
#   CPUs to themselves (clock accuracy, CPU-share flags). It holds the suite lock exclusively (the
#   other xdist workers wait between their tests: every test holds that lock shared) and the machine's
#   CPU lock ($TMPDIR/mpitempo-cpu.lock, that benchmarks take), for the whole test.
# * ``@pytest.mark.load_sensitive``: the test runs in parallel with others, but its assertion can fail
#   on a busy machine (oversubscribed ranks whose flags depend on preemption).
#
# Both are watched by a load probe: a thread that counts, every 0.1 s, the runnable processes that are
# not this test's (not descendants of this pytest process), and reads the machine's run delay
# (/proc/schedstat). When such a test fails while the probe saw competing load, it is run again under
# the exclusive locks; when it fails again under measured load, it is reported as skipped with the
# load measured in both attempts. A failure on a machine the probe saw idle stays a failure: no
# assertion is weakened, and the retry and its reason are in the test's report.
# ---------------------------------------------------------------------------------------------------
import fcntl
import threading
import time

_TMP = os.environ.get("TMPDIR", "/tmp")
CPU_LOCK = os.path.join(_TMP, "mpitempo-cpu.lock")
# the longest an exclusive test waits for the machine's CPU lock (a benchmark of someone else) before
# it runs without it (the load probe then sees that benchmark as load); once a wait has run out, a
# process waits at most CPU_LOCK_WAIT_AGAIN_S: a machine whose lock stays taken must not multiply it
CPU_LOCK_WAIT_S = float(os.environ.get("MPITEMPO_TEST_CPU_LOCK_WAIT", "60"))
CPU_LOCK_WAIT_AGAIN_S = min(CPU_LOCK_WAIT_S, 5.0)
_cpu_lock_timed_out = [False]
# competing runnable processes (mean over the test) from which an attempt counts as loaded: a
# quarter of the CPUs (0.5 on 2 cores: one busy process half of the time)
NCPU = os.cpu_count() or 1
LOAD_THRESHOLD = float(os.environ.get("MPITEMPO_TEST_LOAD_THRESHOLD", str(0.25 * NCPU)))


def pytest_configure(config):
    config.addinivalue_line("markers", "exclusive_cpu: holds the CPU to itself (suite and machine CPU lock); "
                            "retried, or skipped with the load measured, when other load was seen")
    config.addinivalue_line("markers", "load_sensitive: runs in parallel; when it fails under measured load it "
                            "is retried under the exclusive lock, and skipped with the load measured if "
                            "that load persists")
    config.addinivalue_line("markers", "truth: a slow truth study (simulated platforms, fake hosts, OS-level "
                            "drift): `make test-truth`, not `make test`")
    # one suite lock for the controller and its xdist workers (inherited through the environment)
    if "MPITEMPO_SUITE_LOCK" not in os.environ:
        os.environ["MPITEMPO_SUITE_LOCK"] = os.path.join(_TMP, f"mpitempo-suite-{os.getpid()}.lock")


def _flock(path, mode, wait_s=None):
    """Open PATH and flock it (mode LOCK_SH/LOCK_EX); None when wait_s passed without the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    if wait_s is None:
        fcntl.flock(fd, mode)
        return fd
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.1)


def _unlock(fd):
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class _SuiteLocks:
    """Readers-writer lock between the xdist workers, with a turnstile (a waiting writer stops new
    readers: without it the other worker's next test could always get in first)."""

    def __init__(self):
        base = os.environ["MPITEMPO_SUITE_LOCK"]
        self.rw, self.gate = base, base + ".gate"
        self.held = []

    def shared(self):
        g = _flock(self.gate, fcntl.LOCK_SH)      # waits while a writer queues
        self.held.append(_flock(self.rw, fcntl.LOCK_SH))
        _unlock(g)

    def exclusive(self, machine=True):
        """The suite to ourselves, then the machine's CPU lock (waited for up to CPU_LOCK_WAIT_S)."""
        g = _flock(self.gate, fcntl.LOCK_EX)
        self.held.append(_flock(self.rw, fcntl.LOCK_EX))
        _unlock(g)
        waited = time.monotonic()
        wait = CPU_LOCK_WAIT_AGAIN_S if _cpu_lock_timed_out[0] else CPU_LOCK_WAIT_S
        cpu = _flock(CPU_LOCK, fcntl.LOCK_EX, wait) if machine else None
        self.held.append(cpu)
        if machine:
            _cpu_lock_timed_out[0] = cpu is None
        return None if cpu is not None or not machine else \
            f"the machine's CPU lock ({CPU_LOCK}) stayed taken for {time.monotonic() - waited:.0f} s"

    def release(self):
        for fd in reversed(self.held):
            _unlock(fd)
        self.held = []


def _cpu_pressure_us():
    """The machine's CPU pressure so far (PSI: microseconds in which some runnable task waited for a
    CPU, /proc/pressure/cpu), or None where the kernel has no PSI."""
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some"):
                    return int(line.split("total=")[1])
    except (OSError, IndexError, ValueError):
        pass
    return None


def _own_run_delay_ns():
    """The time this process waited for a CPU so far (/proc/self/schedstat, second field)."""
    try:
        with open("/proc/self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


class LoadProbe:
    """Counts the runnable processes that are not descendants of this process (other jobs, the other
    xdist worker) every `period` seconds, and the machine's run delay, while it runs."""

    def __init__(self, period=0.1):
        self.period, self.samples = period, []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def foreign_runnable():
        """The pids of runnable processes (state R) that are neither descendants of this process nor
        kernel threads."""
        me, parent, state = os.getpid(), {}, {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            rest = s[s.rfind(")") + 2:].split()
            parent[int(d)], state[int(d)] = int(rest[1]), rest[0]
        out = []
        for pid, st in state.items():
            if st != "R" or pid == 2 or parent.get(pid) == 2:   # kernel threads are not load
                continue
            p, ours = pid, False
            for _ in range(64):
                if p == me:
                    ours = True
                    break
                p = parent.get(p)
                if not p:
                    break
            if not ours:
                out.append(pid)
        return out

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.samples.append(len(self.foreign_runnable()))
            except Exception:   # pragma: no cover - /proc races
                pass
            self._stop.wait(self.period)

    def start(self):
        self.t0, self.p0, self.d0 = time.monotonic(), _cpu_pressure_us(), _own_run_delay_ns()
        self._t.start()
        return self

    def stop(self):
        self._stop.set()
        self._t.join(timeout=5)
        self.wall = time.monotonic() - self.t0
        p1, d1 = _cpu_pressure_us(), _own_run_delay_ns()
        w = max(self.wall, 1e-9)
        self.pressure = None if self.p0 is None or p1 is None else (p1 - self.p0) / 1e6 / w
        self.run_delay = None if self.d0 is None or d1 is None else (d1 - self.d0) / 1e9 / w
        return self

    @property
    def mean(self):
        return sum(self.samples) / len(self.samples) if self.samples else 0.0

    @property
    def loaded(self):
        return self.mean >= LOAD_THRESHOLD

    def describe(self):
        rd = "" if self.pressure is None else f", CPU pressure {100 * self.pressure:.0f}% of the time"
        rd += "" if self.run_delay is None else f", pytest's own run delay {1e3 * self.run_delay:.1f} ms/s"
        return (f"{self.mean:.2f} competing runnable processes on {NCPU} CPUs on average "
                f"(max {max(self.samples, default=0)}, {len(self.samples)} samples over {self.wall:.1f} s{rd})")


@pytest.fixture(autouse=True)
def _cpu_sharing(request):
    """Every test holds the suite lock shared; exclusive_cpu tests (and retries) hold it exclusively
    plus the machine's CPU lock. The load probe watches exclusive_cpu and load_sensitive tests."""
    item = request.node
    locks = _SuiteLocks()
    exclusive = item.get_closest_marker("exclusive_cpu") is not None or getattr(item, "_mt_retry", False)
    watched = exclusive or item.get_closest_marker("load_sensitive") is not None
    note = locks.exclusive() if exclusive else locks.shared()
    probe = LoadProbe().start() if watched else None
    item._mt_probe, item._mt_lock_note = probe, note
    try:
        yield probe
    finally:
        if probe is not None:
            probe.stop()
        locks.release()


def pytest_collection_modifyitems(config, items):
    """Markers of tests in files of other areas, by node id (so that those files need no edit)."""
    for item in items:
        for prefix, marker in _MARKS_BY_ID:
            if item.nodeid.startswith(prefix):
                item.add_marker(getattr(pytest.mark, marker))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("exclusive_cpu") is None and item.get_closest_marker("load_sensitive") is None:
        return None
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    tries = []
    for attempt in range(2):
        item._mt_retry = attempt > 0
        if attempt:
            item._initrequest()     # fresh function-scoped fixtures
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        probe = getattr(item, "_mt_probe", None)
        failed = any(r.failed for r in reports)
        tries.append((failed, probe))
        if not failed or probe is None or not probe.loaded:
            break
    seen = "; ".join(f"attempt {i + 1}{' (exclusive)' if i or item.get_closest_marker('exclusive_cpu') else ''}: "
                     f"{p.describe() if p else 'not measured'}" for i, (_, p) in enumerate(tries))
    note = getattr(item, "_mt_lock_note", None)
    if note:
        seen += f"; {note}"
    if len(tries) > 1:
        for r in reports:
            r.sections.append(("load", f"retried under the exclusive lock after a failure under load: {seen}"))
    failed, probe = tries[-1]
    if failed and probe is not None and probe.loaded:
        for r in reports:
            if r.when == "call" and r.failed:
                crash = getattr(getattr(r.longrepr, "reprcrash", None), "message", "") or str(r.longrepr)
                crash = crash.strip().splitlines()[0][:300] if crash.strip() else "?"
                r.outcome = "skipped"
                r.longrepr = (str(item.path), item.location[1] + 1,
                              f"Skipped: failed under load that persisted under the exclusive lock: {seen}; "
                              f"the failure: {crash}")
    for r in reports:
        item.ihook.pytest_runtest_logreport(report=r)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


# Tests of files other areas own: what their assertions need from the machine.
# exclusive_cpu: an accuracy or timing bound that holds on ranks that have their CPUs (2 bound ranks);
# load_sensitive: oversubscribed ranks or a bound generous enough to run beside other tests, whose
# flags or bounds still depend on preemption. truth: the slow truth studies (`make test-truth`).
M = "tests/mpi/"
_MARKS_BY_ID = [
    (M + "test_clocks_mpi.py::test_sim_drift_recovered_2_ranks", "exclusive_cpu"),
    (M + "test_clocks_mpi.py::test_adaptive_window_keeps_accuracy_under_sim_drift", "exclusive_cpu"),
    (M + "test_clocks_mpi.py::test_offset_only_baseline_fails_with_drift", "exclusive_cpu"),
    (M + "test_clocks_mpi.py::", "load_sensitive"),
    (M + "test_clocks_meanrtt.py::test_two_bound_ranks_are_not_flagged", "exclusive_cpu"),
    (M + "test_clocks_meanrtt.py::test_skampi_has_no_rtt_spread", "exclusive_cpu"),
    (M + "test_clocks_meanrtt.py::", "load_sensitive"),
    (M + "test_busy_process.py::", "exclusive_cpu"),
    (M + "test_core_mpi.py::test_delay_op_is_measured_as_the_max_delay", "exclusive_cpu"),
    (M + "test_schemes_clock.py::", "exclusive_cpu"),
    (M + "test_delay_step_knob.py::", "exclusive_cpu"),
    (M + "test_trace_mpi.py::", "exclusive_cpu"),
    (M + "test_barrier_mpi.py::test_logp_files", "load_sensitive"),
    (M + "test_clocklib_mpi.py::", "load_sensitive"),
    # Round-Time in the tour refuses a run with too few valid measurements (the product's own flag
    # of preempted ranks: too_few_valid), which a busy machine causes
    (M + "test_readme_tour.py::test_readme_tour_runs_in_order", "load_sensitive"),
    (M + "test_clocks_hier_netns.py::", "exclusive_cpu"),
    (M + "test_clocks_os_drift.py::", "exclusive_cpu"),
    (M + "test_tree_netns.py::", "exclusive_cpu"),
    (M + "test_tune_netns.py::", "exclusive_cpu"),
    (M + "test_clocks_hier_netns.py::", "truth"),
    (M + "test_clocks_os_drift.py::", "truth"),
    (M + "test_tree_netns.py::", "truth"),
    (M + "test_tune_netns.py::", "truth"),
    (M + "test_smpi.py::", "truth"),
    (M + "test_smpi_tune_tree.py::", "truth"),
    (M + "test_tune_cliffs_smpi.py::", "truth"),
]


_retried = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        for name, text in report.sections:
            if name == "load":
                _retried.append((report.nodeid, report.outcome, text))


def pytest_terminal_summary(terminalreporter):
    """The tests retried under the exclusive lock after a failure under load, with the load measured."""
    if _retried:
        terminalreporter.section("retried under load")
        for nodeid, outcome, text in _retried:
            terminalreporter.write_line(f"{outcome.upper()} {nodeid}: {text}")


# ---- fixtures of the MPI tests: busy processes beside a run, the amg_like example built once ----
@pytest.fixture
def busy():
    """busy(n, cpu=None): start n busy processes (`while True: pass`, each in its own session), pinned to
    CPU `cpu` with taskset when given, and return them (a test may stop one early); every one is killed
    when the test ends."""
    procs = []

    def start(n=1, cpu=None):
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        new = [subprocess.Popen([*pin, sys.executable, "-c", "while True: pass"], start_new_session=True)
               for _ in range(n)]
        procs.extend(new)
        if new:
            time.sleep(0.3)     # running before the mpirun starts
        assert all(p.poll() is None for p in new), "a busy process did not start"
        return new

    try:
        yield start
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


@pytest.fixture(scope="session")
def amg(build, tmp_path_factory):
    """examples/trace/amg_like.c compiled with the MPI of the core, as a user would."""
    exe = tmp_path_factory.mktemp("amg") / "amg_like"
    subprocess.run([build.mpicc, "-O2", "-o", str(exe), str(ROOT / "examples/trace/amg_like.c")], check=True)
    return str(exe)
