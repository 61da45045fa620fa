"""SimGrid platform files (docs/simulation.md): what a run on a simulated platform needs to know.

A platform is a SimGrid XML file (``<platform version="4.1">`` with hosts, clusters, links, zones).
Before anything is created or launched, `read_platform` checks it (it exists, it is XML, its root
is a ``platform`` element, it declares at least one host) and counts its hosts and cores, so that a
run of more ranks than the platform has cores is refused unless oversubscription is asked for.
`hostfile` writes the smpirun hostfile that places ranks node by node (``host:cores`` lines, in
the order the platform declares its hosts), content-addressed in the mpitempo cache.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.errors import MtError

_MAX_BYTES = 64 << 20          # a platform file larger than this is refused (not a platform description)
DEFAULT_NETWORK_MODEL = "SMPI"  # what smpirun sets unless the platform's <config> says otherwise


@dataclass
class Platform:
    path: str                  # absolute path
    sha256: str
    hosts: list[tuple[str, int]] = field(default_factory=list)   # (host name, cores) in declaration order
    network_model: str = DEFAULT_NETWORK_MODEL
    config: dict = field(default_factory=dict)                   # the file's <config> props

    @property
    def nhosts(self) -> int:
        return len(self.hosts)

    @property
    def ncores(self) -> int:
        return sum(c for _, c in self.hosts)

    def to_json(self) -> dict:
        return {"platform": self.path, "platform_sha256": self.sha256, "platform_hosts": self.nhosts,
                "platform_cores": self.ncores, "network_model": self.network_model}


# Bounds on the counts a platform file gives, checked before anything is allocated (a 20 KB file can
# declare 10^12 hosts in one radical, or 10^18 cores): hosts in all, cores of one host, cores in all.
MAX_HOSTS = 1 << 18
MAX_CORES_PER_HOST = 1 << 16
MAX_CORES = 1 << 22


def _radical(text: str, where: str, room: int = MAX_HOSTS) -> list[int]:
    """SimGrid's radical: comma-separated numbers and ranges, "0-63" or "0-3,8,10-11"; at most
    `room` numbers in all (counted before the list is built)."""
    spans: list[tuple[int, int]] = []
    total = 0
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d{1,18})(?:-(\d{1,18}))?", part)
        if not m:
            raise MtError(f"invalid platform {where}: radical '{text[:80]}' (expected numbers and ranges like 0-63)")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        if b < a:
            raise MtError(f"invalid platform {where}: radical range '{part}'")
        total += b - a + 1
        if total > room:
            raise MtError(f"invalid platform {where}: its radical declares more than {MAX_HOSTS} hosts in all "
                          f"(at '{part}'); mpitempo reads platforms of at most {MAX_HOSTS} hosts")
        spans.append((a, b))
    return [i for a, b in spans for i in range(a, b + 1)]


def _cores(el, where: str) -> int:
    v = el.get("core", "1")
    try:
        n = int(v) if len(v) <= 20 else 0
    except ValueError:
        n = 0
    if n < 1:
        raise MtError(f"invalid platform {where}: core='{v[:40]}' (expected an integer >= 1)")
    if n > MAX_CORES_PER_HOST:
        raise MtError(f"invalid platform {where}: core='{v}' is more than {MAX_CORES_PER_HOST} cores per host")
    return n


def _hosts(root) -> list[tuple[str, int]]:
    hosts: list[tuple[str, int]] = []
    cores = 0
    for el in root.iter():
        tag = el.tag
        if tag == "host":
            name = el.get("id")
            if name:
                n = _cores(el, f"host '{name}'")
                hosts.append((name, n))
                cores += n
        elif tag in ("cluster", "cabinet"):
            where = f"{tag} '{el.get('id', '?')}'"
            prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
            n = _cores(el, where)
            ids = _radical(el.get("radical", ""), where, MAX_HOSTS - len(hosts))
            hosts += [(f"{prefix}{i}{suffix}", n) for i in ids]
            cores += n * len(ids)
        if len(hosts) > MAX_HOSTS:
            raise MtError(f"invalid platform: more than {MAX_HOSTS} hosts (mpitempo reads platforms of at most "
                          f"{MAX_HOSTS} hosts)")
        if cores > MAX_CORES:
            raise MtError(f"invalid platform: more than {MAX_CORES} cores in all (at {tag} "
                          f"'{el.get('id', '?')}'); mpitempo reads platforms of at most {MAX_CORES} cores")
    return hosts


# The SMPI/SimGrid configuration properties a platform file's <config> may set: each checked by what
# its value means (a built-in model name, a number, a piecewise factor list, a switch, a collective
# algorithm name). Anything else is refused: properties that load code or name files
# (smpi/privatize-libs loads libraries, plugin, path, smpi/tmpdir, smpi/comp-adjustment-file,
# smpi/papi-events, tracing/* writes files anywhere, model-check/*, exception/cutpath, ...) and any
# name mpitempo does not know. docs/security.md lists the same; a test checks they agree.
_NAME = r"[A-Za-z][A-Za-z0-9_]{0,63}"
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_UNIT = _NUM + r"(?:[A-Za-z]{1,6})?"                      # 1e9, 100Gf, 1.5us, 10GBps
_PIECES = rf"(?:{_NUM}(?::{_NUM})*)(?:;{_NUM}(?::{_NUM})*)*"   # smpi/os "0:1e-6:0;65536:2e-6:1e-9"
_BOOL = r"(?:yes|no|true|false|on|off|1|0)"
_COLLS = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "gather",
          "reduce", "reduce_scatter", "scatter")
PLATFORM_CONFIG_ALLOW = {
    **{k: _NAME for k in ("network/model", "cpu/model", "host/model", "network/optim", "cpu/optim",
                          "smpi/coll-selector", "smpi/privatization", "smpi/shared-malloc")},
    **{k: _UNIT for k in ("network/TCP-gamma", "network/latency-factor", "network/bandwidth-factor",
                          "network/weight-S", "network/loopback-bw", "network/loopback-lat", "maxmin/precision",
                          "surf/precision", "precision/timing", "precision/work-amount", "smpi/host-speed",
                          "smpi/cpu-threshold", "smpi/async-small-thresh", "smpi/send-is-detached-thresh",
                          "smpi/iprobe", "smpi/test", "smpi/wtime", "smpi/init", "smpi/shared-malloc-blocksize")},
    **{k: _PIECES for k in ("smpi/bw-factor", "smpi/lat-factor", "smpi/os", "smpi/or", "smpi/ois",
                            "smpi/IB-penalty-factors")},
    **{k: _BOOL for k in ("network/crosstraffic", "smpi/simulate-computation", "smpi/display-timing",
                          "smpi/grow-injected-times")},
    **{f"smpi/{op}": _NAME for op in _COLLS},
}


def check_config_prop(key: str, value: str, where: str) -> None:
    """A <config> property of a platform file: on the allow-list, its value of the kind it means."""
    pat = PLATFORM_CONFIG_ALLOW.get(key)
    if pat is None:
        raise MtError(f"invalid --platform '{where}': <config> property {key[:80]!r} is not one mpitempo accepts "
                      "from a platform file (it may load a library or plugin, name a file, or is unknown; the "
                      "allowed ones: network/model, smpi/os, smpi/bw-factor, ... docs/security.md)")
    if not re.fullmatch(pat, value or ""):
        raise MtError(f"invalid --platform '{where}': <config> property {key!r} has value {value[:80]!r}, "
                      "which is not a " + {_NAME: "built-in name", _UNIT: "number (with an optional unit)",
                                          _PIECES: "list of numbers (a:b:c;d:e:f)", _BOOL: "yes/no"}[pat])


# Elements and attributes of SimGrid's platform DTD (simgrid.dtd 4.1) that name a file SimGrid reads or
# code it runs: refused, whatever the value (a profile can be written inline, in <trace>'s text). The
# element of each is given for the message; an attribute ending in _file is refused on any element.
# docs/security.md lists the same; a test checks they agree.
PLATFORM_FILE_ATTRS = ("speed_file", "availability_file", "state_file", "bandwidth_file", "latency_file")
PLATFORM_FILE_ELEMENTS = {"include": "file", "trace": "file", "storage_type": "content", "storage": "content"}
PLATFORM_CODE_ELEMENTS = ("actor", "process")


def check_no_files(root, where: str) -> None:
    """Refuse what makes SimGrid read another file (a FIFO there blocks the simulation, a device never
    ends) or run an actor: the profile attributes (speed_file, bandwidth_file, ...), <include file>,
    <trace file>, a storage's content file, <actor>/<process> (a deployment, not a platform)."""
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in PLATFORM_CODE_ELEMENTS:
            raise MtError(f"invalid --platform '{where}': <{tag}> starts simulated code (a deployment, not a "
                          "platform); a platform file given to mpitempo declares hosts, links and zones only")
        for attr, value in el.attrib.items():
            if attr.endswith("_file") or PLATFORM_FILE_ELEMENTS.get(tag) == attr:
                if tag == "trace" and attr == "file" and not value:
                    continue   # an inline profile (its text)
                raise MtError(f"invalid --platform '{where}': <{tag}> attribute {attr}={value[:80]!r} names a file "
                              "that SimGrid would read; a platform file given to mpitempo may name no file (write a "
                              "profile inline: <trace id=... periodicity=...>TEXT</trace>; docs/security.md)")


def read_platform(path: str | os.PathLike) -> Platform:
    """The checked platform at `path`; MtError with a one-line reason when it is not one."""
    p = Path(path)
    if not str(path).strip():
        raise MtError("invalid --platform '': give the path of a SimGrid platform XML file")
    if not p.exists():
        raise MtError(f"platform file '{path}' not found (give a SimGrid platform XML file, e.g. platforms/cluster64-fast.xml)")
    if not p.is_file():
        raise MtError(f"invalid --platform '{path}': not a regular file")
    try:   # opened without blocking (a FIFO swapped in after the check is refused), read within the limit
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            import stat as _stat

            if not _stat.S_ISREG(st.st_mode):
                raise MtError(f"invalid --platform '{path}': not a regular file")
            if st.st_size > _MAX_BYTES:
                raise MtError(f"invalid --platform '{path}': {st.st_size} bytes is too large for a platform "
                              f"description (at most {_MAX_BYTES >> 20} MiB)")
            data = f.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise MtError(f"invalid --platform '{path}': larger than {_MAX_BYTES >> 20} MiB")
    except OSError as e:
        raise MtError(f"cannot read platform file '{path}': {e.strerror}") from None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise MtError(f"invalid --platform '{path}': not XML ({e})") from None
    if root.tag != "platform":
        raise MtError(f"invalid --platform '{path}': the root element is <{root.tag}>, a SimGrid platform file "
                      "has <platform version=\"4.1\">")
    check_no_files(root, str(path))
    hosts = _hosts(root)
    if not hosts:
        raise MtError(f"invalid --platform '{path}': it declares no host (no <host>, <cluster> or <cabinet>)")
    names = [h for h, _ in hosts]
    if len(set(names)) != len(names):
        dup = next(h for h in names if names.count(h) > 1)
        raise MtError(f"invalid --platform '{path}': host '{dup}' is declared twice")
    config = {}
    for cfg in root.iter("config"):
        for prop in cfg.iter("prop"):
            if prop.get("id"):
                check_config_prop(prop.get("id"), prop.get("value", ""), str(path))
                config[prop.get("id")] = prop.get("value", "")
    return Platform(path=str(p.resolve()), sha256=hashlib.sha256(data).hexdigest(), hosts=hosts,
                    network_model=config.get("network/model", DEFAULT_NETWORK_MODEL), config=config)


def slots(plat: Platform, ppn: int | None = None) -> list[tuple[str, int]]:
    """(host, ranks it takes) for the hostfile: every core, or at most `ppn` ranks per host."""
    return [(h, c if ppn is None else min(c, ppn)) for h, c in plat.hosts]


def check_np(plat: Platform, np: int, oversubscribe: bool = False, ppn: int | None = None) -> None:
    """Refuse more ranks than the platform has cores (or ppn x hosts), unless oversubscription is asked for."""
    if ppn is not None and (not isinstance(ppn, int) or isinstance(ppn, bool) or ppn < 1):
        raise MtError(f"invalid platform_ppn {ppn!r}: expected an integer >= 1 (ranks per host)")
    cap = sum(n for _, n in slots(plat, ppn))
    if np > cap and not oversubscribe:
        per = f" at {ppn} rank(s) per host" if ppn is not None else ""
        raise MtError(f"{np} ranks do not fit the platform '{plat.path}': it has {plat.nhosts} hosts with "
                      f"{plat.ncores} cores in all, room for {cap} ranks{per} (use at most {cap} ranks, or ask for "
                      "platform_oversubscribe = true / --platform-oversubscribe)")


def hostfile(plat: Platform, ppn: int | None = None) -> Path:
    """The smpirun hostfile of the platform (a host's name on N lines, hosts in declaration order, N its
    cores or ppn: ranks fill a host before the next one), written once into the cache. Not the shorter
    'host:N': smpirun unrolls that into a file 'smpitmp-hostfXXXXXX' in the current directory and keeps
    it there whenever the program fails."""
    from mpitempo.build import cache_root

    path = cache_root() / "platforms" / f"{plat.sha256[:24]}{'' if ppn is None else f'-ppn{ppn}'}.slots"
    text = "".join(f"{h}\n" * c for h, c in slots(plat, ppn))
    from mpitempo.build import cached_text

    try:
        cached_text(path, text)
    except OSError as e:
        raise MtError(f"cannot write the hostfile for platform '{plat.path}' to {path}: {e.strerror}") from None
    return path


def simgrid_version(smpirun: str | None = None) -> str:
    """'3.32' from `smpirun -version`, or '' when it cannot be run."""
    exe = smpirun or shutil.which("smpirun")
    if not exe:
        return ""
    try:
        r = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"SimGrid version ([0-9][0-9.]*\S*)", r.stdout + r.stderr)
    return m.group(1) if m else ""


def check_platform_flags(platform, **flags) -> None:
    """--platform-ppn, --platform-oversubscribe (and other simulation-only flags, given as name=value) need
    --platform: refuse them without it instead of ignoring them."""
    if platform is None:
        for name, v in flags.items():
            if v is not None:
                raise MtError(f"--{name.replace('_', '-')} needs --platform FILE.xml (a simulated platform)")
