"""A real one-node Slurm cluster on localhost for tests (slurmctld + slurmd + munged).

Everything lives in one directory (config, munge key and socket, state, logs,
pid files); nothing goes into /etc. Needs root and Debian's slurmctld, slurmd,
slurm-client and munge. `start()` returns an environment (SLURM_CONF, PATH) to
run srun/sbatch with; `stop()` cancels jobs first, then stops the daemons.
"""
from __future__ import annotations

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
    def __init__(self, root: Path, cpus: int = 8):
        self.root = Path(root)
        self.cpus = cpus
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
SlurmdPidFile={r}/run/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
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
NodeName={host} CPUs={self.cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
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
        self._spawn("slurmd", [tools["slurmd"], "-D", "-f", str(conf)])

        def node_idle():
            p = subprocess.run([tools["sinfo"], "-h", "-o", "%t"], capture_output=True, text=True, env=base)
            return p.returncode == 0 and p.stdout.strip().startswith("idle")

        self._wait(node_idle, timeout, "the Slurm node did not become idle")
        return self.env

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
        for name in ("slurmd", "slurmctld", "munged"):
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
