"""Fake hosts on one machine for tests that must cross a network (see
docs/design.md, "Machines that share or oversubscribe cores").

Each host is a network namespace with one veth into a bridge that lives in its
own namespace (nothing is added to the root namespace), an address in a
private /24 and a hosts file in /etc/netns/HOST/hosts. A launcher agent
replaces ssh: it runs the command in the host's network namespace, in a new
UTS namespace (hostname = host name) and, optionally, in a new time namespace
with the host's CLOCK_MONOTONIC offset (whole seconds).

    with Cluster(4, monotonic_offsets=[0, 7, 1000, 35]) as c:
        argv = c.mpiexec_argv(mpiexec, ranks_per_host=2, cmd=[...])

Everything is torn down on exit, also when the body raises; names carry the
pid, so concurrent clusters (other worktrees) do not collide. `unavailable()`
returns the reason why no cluster can be built here (for pytest.skip), or None.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

NETNS_ETC = Path("/etc/netns")


def _run(argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def unavailable(time_namespaces: bool = True) -> str | None:
    """Why fake hosts cannot be built here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root (euid is not 0)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found on PATH"
    probe = f"mtprobe{os.getpid()}"
    r = _run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    try:
        r = _run(["ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"], check=False)
        if r.returncode != 0:
            return f"cannot create veth pairs: {r.stderr.strip()}"
        r = _run(["ip", "-n", probe, "link", "add", "b0", "type", "bridge"], check=False)
        if r.returncode != 0:
            return f"cannot create a bridge: {r.stderr.strip()}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    if time_namespaces:
        r = _run(["unshare", "--time", "--monotonic", "5", "true"], check=False)
        if r.returncode != 0:
            return f"cannot create a time namespace: {r.stderr.strip()}"
    return None


class Cluster:
    def __init__(self, nhosts: int, monotonic_offsets: list[int] | None = None, subnet: str = "10.77.0"):
        if monotonic_offsets is not None and len(monotonic_offsets) != nhosts:
            raise ValueError("one monotonic offset per host")
        tag = f"mt{os.getpid()}"
        self.hosts = [f"{tag}h{i + 1}" for i in range(nhosts)]
        self.bridge_ns = f"{tag}br"
        self.addr = {h: f"{subnet}.{i + 1}" for i, h in enumerate(self.hosts)}
        self.offsets = {h: int(o) for h, o in zip(self.hosts, monotonic_offsets or [0] * nhosts)}
        self.use_time = monotonic_offsets is not None
        self.dir = Path(tempfile.mkdtemp(prefix=f"{tag}-cluster-"))
        self.agent = self.dir / "agent"
        self._made_ns: list[str] = []
        self._made_etc: list[Path] = []

    # ---- set-up / tear-down ----
    def __enter__(self):
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    def _netns_add(self, name):
        _run(["ip", "netns", "add", name])
        self._made_ns.append(name)

    def _build(self):
        br = self.bridge_ns
        self._netns_add(br)
        _run(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", br, "link", "set", "br0", "up"])
        hosts_text = "127.0.0.1 localhost\n" + "".join(f"{self.addr[h]} {h}\n" for h in self.hosts)
        for i, h in enumerate(self.hosts):
            self._netns_add(h)
            # the veth is created inside the bridge namespace, its peer moved into the host
            _run(["ip", "-n", br, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", h])
            _run(["ip", "-n", br, "link", "set", f"v{i}", "master", "br0", "up"])
            _run(["ip", "-n", h, "addr", "add", f"{self.addr[h]}/24", "dev", "eth0"])
            _run(["ip", "-n", h, "link", "set", "eth0", "up"])
            _run(["ip", "-n", h, "link", "set", "lo", "up"])
            etc = NETNS_ETC / h
            etc.mkdir(parents=True, exist_ok=True)
            self._made_etc.append(etc)
            (etc / "hosts").write_text(hosts_text)
        self.agent.write_text(self._agent_text())
        self.agent.chmod(0o755)

    def teardown(self):
        for ns in reversed(self._made_ns):
            _run(["ip", "netns", "del", ns], check=False)
        self._made_ns.clear()
        for etc in self._made_etc:
            shutil.rmtree(etc, ignore_errors=True)
        self._made_etc.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- running ----
    def wrap(self, host: str, command: str) -> list[str]:
        """argv that runs the shell command `command` on `host`"""
        argv = ["ip", "netns", "exec", host, "unshare", "--uts"]
        if self.use_time:
            argv += ["--time", "--monotonic", str(self.offsets[host])]
        return argv + ["sh", "-c", 'hostname "$0" && exec sh -c "$1"', host, command]

    def _agent_text(self) -> str:
        cases = "".join(f"  {h}) exec {' '.join(shlex.quote(a) for a in self.wrap(h, 'X')[:-1])} \"$*\" ;;\n"
                        for h in self.hosts)
        return ("#!/bin/sh\n"
                "# launcher agent instead of ssh: agent [-options] HOST COMMAND...\n"
                "while [ $# -gt 0 ]; do case \"$1\" in -*) shift ;; *) break ;; esac; done\n"
                "host=$1; shift\n"
                "case \"$host\" in\n" + cases +
                "  *) echo \"agent: unknown host '$host'\" >&2; exit 255 ;;\n"
                "esac\n")

    def mpiexec_argv(self, mpiexec: str, ranks_per_host: int, cmd: list[str]) -> list[str]:
        """MPICH Hydra started on the first host, ranks spread over all hosts
        (block mapping: ranks 0..k-1 on host 1, ...) through the agent."""
        hosts = ",".join(f"{h}:{ranks_per_host}" for h in self.hosts)
        inner = " ".join(shlex.quote(a) for a in [mpiexec, "-launcher", "rsh", "-launcher-exec", str(self.agent),
                                                   "-hosts", hosts, "-n", str(ranks_per_host * len(self.hosts)),
                                                   *cmd])
        return self.wrap(self.hosts[0], inner)
