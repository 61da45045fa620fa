"""A real Slurm cluster on localhost for tests (slurmctld + slurmd + munged).

One node by default (named after the host); with nodes=N, N Slurm nodes n1..nN, each with its own
slurmd (`slurmd -N nI` on its own port and spool directory, all on this host), so that a job
spans several nodes and one node can be lost (`kill_node`) and brought back (`restart_node`).

Everything lives in one directory (config, munge key and socket, state, logs,
pid files); nothing goes into /etc. Needs root and Debian's slurmctld, slurmd,
slurm-client and munge. `start()` returns an environment (SLURM_CONF, PATH) to
run srun/sbatch with; `stop()` cancels jobs first, then stops the daemons.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


class SlurmUnavailable(Exception):
    pass


def _which(name: str) -> str | None:
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


class SlurmCluster:
    def __init__(self, root: Path, cpus: int = 8, nodes: int = 1, slurmd_timeout: int | None = None):
        self.root = Path(root)
        self.cpus = cpus
        self.nnodes = nodes
        self.slurmd_timeout = slurmd_timeout
        # job ids unique across clusters: MPICH names its shared-memory segments after the PMI job
        # (/dev/shm/mpich_shm_*); a rank killed by SIGKILL leaves its segment behind, and a later
        # cluster starting again at job 1 would collide with it (MPI_Init: "Out of memory")
        self.first_job_id = 1000 + int.from_bytes(os.urandom(3), "little") % 50_000_000
        self.pids: dict[str, int] = {}
        self.env: dict[str, str] = {}

    def start(self, timeout: float = 20.0) -> dict[str, str]:
        if os.geteuid() != 0:
            raise SlurmUnavailable("the test Slurm cluster needs root (SlurmUser=root)")
        tools = {n: _which(n) for n in ("slurmctld", "slurmd", "munged", "srun", "sbatch", "scancel", "sinfo")}
        missing = [n for n, p in tools.items() if not p]
        if missing:
            raise SlurmUnavailable(f"Slurm not installed (missing {', '.join(missing)}); "
                                   "apt-get install slurmctld slurmd slurm-client munge")
        self.tools = tools
        r = self.root
        for d in ("state", "spool", "log", "run", "munge"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o755)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = r / "munge" / "munge.socket"
        host = socket.gethostname()
        ctl_port, d_port = _free_port(), _free_port()
        if self.nnodes == 1:
            self.nodes = [host]
            node_lines = f"NodeName={host} CPUs={self.cpus} State=UNKNOWN"
            pidf, logf = "slurmd.pid", "slurmd.log"
        else:
            self.nodes = [f"n{i + 1}" for i in range(self.nnodes)]
            node_lines = "\n".join(f"NodeName={n} NodeHostname={host} Port={_free_port()} CPUs={self.cpus} State=UNKNOWN"
                                   for n in self.nodes)
            pidf, logf = "slurmd-%n.pid", "slurmd-%n.log"
            for n in self.nodes:
                (r / "spool" / n).mkdir(parents=True, exist_ok=True)
        timeout_line = f"SlurmdTimeout={self.slurmd_timeout}\n" if self.slurmd_timeout else ""
        conf = r / "slurm.conf"
        conf.write_text(f"""ClusterName=mpitempo-test
SlurmctldHost={host}
SlurmctldPort={ctl_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/{pidf}
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/{logf}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=5
MinJobAge=300
FirstJobId={self.first_job_id}
{timeout_line}{node_lines}
PartitionName=debug Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
        self.env = {"SLURM_CONF": str(conf)}
        base = dict(os.environ, **self.env)
        for var in list(base):
            if var.startswith("SLURM_") and var != "SLURM_CONF":
                base.pop(var)
        self._base_env = base
        self._spawn("munged", [tools["munged"], "--force", "-S", str(sock), "--key-file", str(key),
                               "--pid-file", str(r / "run" / "munged.pid"), "--log-file", str(r / "log" / "munged.log"),
                               "--seed-file", str(r / "munge" / "munged.seed")])
        self._wait(lambda: sock.exists(), timeout, "munged did not create its socket")
        self._spawn("slurmctld", [tools["slurmctld"], "-D", "-i", "-f", str(conf)])
        for n in self.nodes:
            self._spawn(self._slurmd(n), self._slurmd_argv(n))

        def node_idle():
            p = subprocess.run([tools["sinfo"], "-h", "-N", "-o", "%t"], capture_output=True, text=True, env=base)
            states = p.stdout.split()
            return p.returncode == 0 and len(states) == len(self.nodes) and all(t.startswith("idle") for t in states)

        self._wait(node_idle, timeout, "the Slurm node did not become idle")
        return self.env

    def _slurmd(self, node: str) -> str:
        return "slurmd" if self.nnodes == 1 else f"slurmd-{node}"

    def _slurmd_argv(self, node: str) -> list[str]:
        argv = [self.tools["slurmd"], "-D", "-f", str(self.root / "slurm.conf")]
        return argv if self.nnodes == 1 else argv + ["-N", node]

    def node_state(self, node: str) -> str:
        p = subprocess.run([self.tools["sinfo"], "-h", "-N", "-n", node, "-o", "%T"], capture_output=True, text=True,
                           env=self._base_env, timeout=30)
        return p.stdout.strip()

    def kill_node(self, node: str, mark_down: bool = True) -> list[int]:
        """What a node crash does: SIGKILL to its slurmd, and to every process of a job step on it
        (the tasks, found by SLURMD_NODENAME, and their slurmstepd). With mark_down, the node is then
        set DOWN at once (`scontrol update`), as slurmctld does by itself after SlurmdTimeout.
        Returns the pids killed."""
        victims = set()
        for e in os.listdir("/proc"):
            if not e.isdigit():
                continue
            try:
                env = open(f"/proc/{e}/environ", "rb").read().split(b"\0")
                ppid = int(open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if f"SLURMD_NODENAME={node}".encode() in env:
                victims.update({int(e), ppid})
        p = self._procs.get(self._slurmd(node))
        victims = {v for v in victims if v > 1}
        for pid in sorted(victims):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if pid == os.getpid() or comm in ("python", "python3", "pytest", "srun"):
                continue     # never the test itself, nor the srun of the other side (it has no SLURMD_NODENAME)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if p is not None and p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        if mark_down:
            subprocess.run([_which("scontrol") or "scontrol", "update", f"nodename={node}", "state=down",
                            "reason=lost in a test"], capture_output=True, env=self._base_env, timeout=30)
        return sorted(victims)

    def restart_node(self, node: str, timeout: float = 60.0) -> None:
        self._spawn(self._slurmd(node), self._slurmd_argv(node))
        self._wait(lambda: self.node_state(node).startswith(("idle", "mixed", "allocated")), timeout,
                   f"node {node} did not return to service")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self._base_env,
                             start_new_session=True)
        self.pids[name] = p.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = p
        time.sleep(0.1)
        if p.poll() is not None and name != "munged":
            raise SlurmUnavailable(f"{name} exited at start: {self.log_tail(name)}")

    def _wait(self, cond, timeout: float, what: str) -> None:
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if cond():
                return
            time.sleep(0.2)
        raise SlurmUnavailable(f"{what} within {timeout:g} s: {self.log_tail('slurmctld')} {self.log_tail('slurmd')}")

    def log_tail(self, name: str, n: int = 5) -> str:
        for f in (self.root / "log" / f"{name}.log", self.root / "log" / f"{name}.stdout"):
            if f.exists():
                lines = f.read_text(errors="replace").strip().splitlines()
                if lines:
                    return f"[{name}] " + " | ".join(lines[-n:])
        return ""

    def stop(self) -> None:
        if getattr(self, "tools", None) and self.env:
            subprocess.run([self.tools["scancel"], "--full", "-u", "root"],
                           capture_output=True, env=self._base_env, timeout=30)
            time.sleep(0.5)
        for name in [self._slurmd(n) for n in getattr(self, "nodes", [])] + ["slurmctld", "munged"]:
            p = getattr(self, "_procs", {}).get(name)
            if p is None:
                continue
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
        # munged daemonizes unless told otherwise: stop it by its pid file too
        pidf = self.root / "run" / "munged.pid"
        if pidf.exists():
            try:
                os.kill(int(pidf.read_text().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError, PermissionError):
                pass


@contextlib.contextmanager
def running(directory, **kw):
    """A started SlurmCluster(directory, **kw) whose environment is set in os.environ while inside;
    stopped and the environment restored on leaving. SlurmUnavailable if it cannot start."""
    c = SlurmCluster(directory, **kw)
    try:
        env = c.start()
    except SlurmUnavailable:
        c.stop()
        raise
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield c
    finally:
        c.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cluster_or_skip(tmp_path_factory, name: str, **kw):
    """The body of a module-scoped pytest fixture: yields a `running` cluster in a fresh directory
    NAME, or skips the tests that use it, saying why it cannot start."""
    import pytest

    with contextlib.ExitStack() as stack:
        try:
            c = stack.enter_context(running(tmp_path_factory.mktemp(name), **kw))
        except SlurmUnavailable as e:
            pytest.skip(f"cannot start a{' ' + str(kw['nodes']) + '-node' if kw.get('nodes', 1) > 1 else ''} "
                        f"local Slurm cluster: {e}")
        yield c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
