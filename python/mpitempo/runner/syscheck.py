"""What spoils measurements on this machine here and now (`mpitempo info --check`, and the warnings
`mpitempo run` prints and records at its start), in the spirit of pyperf's system check.

Every check reads procfs/sysfs below ``root`` (tests point it at a fake tree) and returns findings:
``{"check", "status": "ok"|"warning"|"info", "message", "advice"}``, one line each when printed.
"""
from __future__ import annotations

import os
from pathlib import Path


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel.lstrip("/")).read_text().strip()
    except OSError:
        return None


def parse_cpulist(text: str | None) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    out: list[int] = []
    for part in (text or "").replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def _fmt_cpus(cpus) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def _f(check, status, message, advice=""):
    return {"check": check, "status": status, "message": message, "advice": advice}


def check_governor(root: Path, cpus: list[int]) -> list[dict]:
    govs: dict[str, list[int]] = {}
    for c in cpus:
        g = _read(root, f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor")
        if g is not None:
            govs.setdefault(g, []).append(c)
    if not govs:
        return [_f("governor", "info", "no CPU frequency scaling in sysfs (typical of a virtual machine): "
                   "the frequency cannot be checked or fixed here")]
    bad = {g: cs for g, cs in govs.items() if g != "performance"}
    if not bad:
        return [_f("governor", "ok", f"frequency governor 'performance' on CPUs {_fmt_cpus(cpus)}")]
    return [_f("governor", "warning", f"frequency governor '{g}' on CPUs {_fmt_cpus(cs)}: the clock speed "
               "changes with load", "set 'performance': cpupower frequency-set -g performance")
            for g, cs in sorted(bad.items())]


def check_turbo(root: Path) -> list[dict]:
    no_turbo = _read(root, "sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read(root, "sys/devices/system/cpu/cpufreq/boost")
    if no_turbo == "0" or boost == "1":
        how = ("echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo" if no_turbo == "0"
               else "echo 0 > /sys/devices/system/cpu/cpufreq/boost")
        return [_f("turbo", "warning", "turbo boost is enabled: the clock speed depends on temperature and on "
                   "how many cores are busy", f"disable it for timing runs: {how}")]
    if no_turbo is None and boost is None:
        return [_f("turbo", "info", "turbo boost state not visible in sysfs")]
    return [_f("turbo", "ok", "turbo boost disabled")]


def check_smt(root: Path, cpus: list[int], np: int) -> list[dict]:
    """SMT siblings among the CPUs this process may use: ranks bound to siblings share one core."""
    groups = set()
    for c in cpus:
        sib = _read(root, f"sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")
        if sib is not None:
            groups.add(tuple(x for x in parse_cpulist(sib) if x in cpus))
    shared = [g for g in groups if len(g) > 1]
    active = _read(root, "sys/devices/system/cpu/smt/active")
    if shared:
        cores = len(groups)
        msg = (f"SMT: the usable CPUs {_fmt_cpus(cpus)} are {cores} cores with hyperthread siblings "
               f"({'; '.join(_fmt_cpus(g) for g in sorted(shared))})")
        if np > cores:
            return [_f("smt", "warning", msg + f": {np} ranks cannot each have a core of their own",
                       "use at most one rank per core, or bind to cores (mpiexec -bind-to core)")]
        return [_f("smt", "warning", msg + ": ranks bound to CPUs (not cores) may share a core",
                   "bind ranks to cores, or disable SMT: echo off > /sys/devices/system/cpu/smt/control")]
    if active == "1":
        return [_f("smt", "info", "SMT is active on this machine, but no two usable CPUs are siblings")]
    return [_f("smt", "ok", "no SMT siblings among the usable CPUs")]


def check_placement(np: int, ncpu: int, binding: str | None, oversubscribed: bool) -> list[dict]:
    if oversubscribed or np > ncpu:
        return [_f("oversubscription", "warning", f"{np} ranks on {ncpu} usable CPUs: ranks share CPUs "
                   "(oversubscribed); such runs are for correctness, their times are not meaningful",
                   f"use -n {ncpu} or fewer for timing")]
    out = [_f("oversubscription", "ok", f"{np} ranks on {ncpu} usable CPUs")]
    if binding in ("none", None):
        out.append(_f("binding", "warning", "ranks are not bound to CPUs: the OS may move them during a "
                      "measurement", "use the default launcher (binds to cores) or add your MPI's binding flags"))
    elif binding == "custom":
        out.append(_f("binding", "info", "custom launcher: binding is whatever it applies (recorded per rank "
                      "in meta.json)", "check meta.json's placement, or bind in the template"))
    else:
        out.append(_f("binding", "ok", f"ranks bound to {binding}s by the launcher"))
    return out


def check_load(root: Path, ncpu: int) -> list[dict]:
    text = _read(root, "proc/loadavg")
    if not text:
        return [_f("load", "info", "no /proc/loadavg")]
    parts = text.split()
    load1 = float(parts[0])
    running = int(parts[3].split("/")[0]) - 1 if len(parts) > 3 and "/" in parts[3] else None  # minus ourselves
    if load1 >= 0.5 or (running is not None and running >= 1):
        now = f", {running} other process(es) running now" if running else ""
        return [_f("load", "warning", f"load average {load1:.2f} over the last minute on {ncpu} CPUs{now}: "
                   "other work competes with the benchmark",
                   "wait for an idle machine, or serialise timing runs: flock /tmp/mpitempo-cpu.lock CMD")]
    return [_f("load", "ok", f"load average {load1:.2f} over the last minute")]


def check_timer(root: Path) -> list[dict]:
    src = _read(root, "sys/devices/system/clocksource/clocksource0/current_clocksource")
    flags: set[str] = set()
    for line in (_read(root, "proc/cpuinfo") or "").splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    out = []
    if src is None:
        out.append(_f("clocksource", "info", "clock source not visible in sysfs"))
    elif src != "tsc":
        out.append(_f("clocksource", "warning", f"kernel clock source '{src}', not 'tsc': clock_gettime is slower "
                      "and coarser", "see /sys/devices/system/clocksource/clocksource0/available_clocksource"))
    else:
        out.append(_f("clocksource", "ok", "kernel clock source tsc"))
    if flags and not {"constant_tsc", "nonstop_tsc"} <= flags:
        miss = ", ".join(sorted({"constant_tsc", "nonstop_tsc"} - flags))
        out.append(_f("tsc", "warning", f"the TSC lacks {miss}: the rdtscp timer does not tick at a fixed rate",
                      "use --timer monotonic (the default)"))
    if "hypervisor" in flags:
        out.append(_f("virtual", "info", "running under a hypervisor: vCPUs can move between physical cores, "
                      "so levels may switch between and within mpiruns", "use many mpiruns (--mpiruns >= 10)"))
    return out


def check_timens(root: Path) -> list[dict]:
    text = _read(root, "proc/self/timens_offsets")
    if text is None:
        return []
    offs = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) >= 3:
            offs[p[0]] = int(p[1]) + int(p[2]) * 1e-9
    shifted = {k: v for k, v in offs.items() if v}
    if shifted:
        return [_f("time_namespace", "warning", "this process runs in a time namespace: "
                   + ", ".join(f"{k} shifted by {v:+.9g} s" for k, v in shifted.items())
                   + "; CLOCK_MONOTONIC differs from other processes (MPICH's MPI_Wtime follows CLOCK_REALTIME)",
                   "sync clocks with a global-clock algorithm (--sync) before comparing timestamps across hosts")]
    return [_f("time_namespace", "ok", "no time-namespace offset")]


def check_isolation(root: Path, cpus: list[int]) -> list[dict]:
    iso = parse_cpulist(_read(root, "sys/devices/system/cpu/isolated"))
    if iso and set(cpus) <= set(iso):
        return [_f("isolation", "ok", f"the usable CPUs {_fmt_cpus(cpus)} are isolated (isolcpus)")]
    return [_f("isolation", "info", "no isolated CPUs (isolcpus): the OS schedules other work on the benchmark's CPUs",
               "on a dedicated node: boot with isolcpus=/nohz_full= and run the ranks there")]


def system_check(np: int = 2, binding: str | None = "core", oversubscribed: bool | None = None,
                 root: str | Path = "/", cpus: list[int] | None = None) -> list[dict]:
    """Every finding for a run of ``np`` ranks with the launcher's ``binding`` ('core', 'none', 'custom')."""
    root = Path(root)
    if cpus is None:
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - non-Linux
            cpus = list(range(os.cpu_count() or 1))
    over = np > len(cpus) if oversubscribed is None else oversubscribed
    return (check_placement(np, len(cpus), binding, over) + check_load(root, len(cpus))
            + check_governor(root, cpus) + check_turbo(root) + check_smt(root, cpus, np) + check_timer(root)
            + check_timens(root) + check_isolation(root, cpus))


def warnings_of(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["status"] == "warning"]


def line(f: dict) -> str:
    """One line: 'warning: <message>; <advice>'."""
    adv = f"; {f['advice']}" if f.get("advice") and f["status"] != "ok" else ""
    return f"{f['status']}: {f['message']}{adv}"
