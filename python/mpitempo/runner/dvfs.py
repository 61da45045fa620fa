"""DVFS as a campaign factor (Hunold and Carpen-Amarie 2016, section 4.6): set one cpufreq
governor on every CPU of this host for the duration of a campaign and restore the previous ones
afterwards (also on errors and Ctrl-C). Needs Linux cpufreq in sysfs and the right to write it;
where that is missing the campaign is refused before anything is created, with the reason.
Only the local host is changed: on a cluster, set the governor through the batch system."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

from mpitempo.errors import MtError


def cpu_root() -> Path:
    # tests point this at a fake sysfs tree
    return Path(os.environ.get("MPITEMPO_SYSFS_CPU", "/sys/devices/system/cpu"))


def governor_files() -> list[Path]:
    root = cpu_root()
    return sorted(root.glob("cpu[0-9]*/cpufreq/scaling_governor"), key=lambda p: int(p.parts[-3][3:]))


def check_governor(name: str) -> list[Path]:
    """The scaling_governor files to write; MtError saying why the governor cannot be set here."""
    root = cpu_root()
    files = governor_files()
    if not files:
        raise MtError(f"cannot set governor '{name}': {root}/cpu0/cpufreq does not exist (no cpufreq driver: "
                      "a virtual machine, or a kernel without cpufreq); remove 'governor' from the campaign "
                      "(the frequency each rank saw is recorded in meta.json either way)")
    avail_f = files[0].parent / "scaling_available_governors"
    avail = avail_f.read_text().split() if avail_f.exists() else []
    if avail and name not in avail:
        raise MtError(f"invalid governor '{name}' (allowed here: {', '.join(avail)})")
    for f in files:
        if not os.access(f, os.W_OK):
            raise MtError(f"cannot set governor '{name}': no permission to write {f} (run as root, or ask the "
                          "administrator to set it)")
    return files


def _write_record(record: Path, info: dict) -> None:
    from mpitempo.io.safefs import safe_write_text

    safe_write_text(record, json.dumps(info, indent=2) + "\n", record.parent)


@contextmanager
def fixed_governor(name: str | None, record: Path | None = None):
    """Set governor `name` on every CPU, restore the previous governors at exit. None: no change.
    record: a JSON file written with what was set and, at the end, restored."""
    if not name:
        yield None
        return
    files = check_governor(name)
    before = {str(f): f.read_text().strip() for f in files}
    info = {"governor": name, "cpus": len(files), "before": before, "restored": False}
    try:
        for f in files:
            f.write_text(name + "\n")
        info["after_set"] = {str(f): f.read_text().strip() for f in files}
        if record and record.parent.exists():
            _write_record(record, info)
        yield info
    finally:
        errors = []
        for f, old in before.items():
            try:
                Path(f).write_text(old + "\n")
            except OSError as e:
                errors.append(f"{f}: {e.strerror}")
        info["restored"] = not errors
        if record and record.parent.exists():
            _write_record(record, info)
        if errors:
            raise MtError("could not restore the cpufreq governors: " + "; ".join(errors))
