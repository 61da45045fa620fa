"""Experimental factors of mpiruns: flatten meta.json, find what differs.

Some keys change from mpirun to mpirun by design (times, pids, seeds, the
measured timer quality, the experiment order); they are "volatile" and are
left out of the differences unless asked for.
"""
from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from mpitempo.io.rundir import find_runs, load_meta

VOLATILE = [
    "start_time", "end_time", "argv*", "seed", "run_index", "experiments*", "invalid_measurements",
    "launch.run_id", "launch.run_index", "launch.position_in_campaign", "launch.launcher.argv*",
    "ranks.*.pid", "ranks.*.cpu_at_start", "timer.study_reads", "timer.resolution*", "timer.min_overhead*",
    "timer.mean_read_s", "timer.ticks_per_s", "ranks.*.timer_ticks_per_s", "machine.cpu0_cur_freq_khz",
    "machine.cpuinfo_mhz", "environment.PMI_FD", "environment.PMI_PORT", "environment.PMIX_*",
    "environment.OMPI_COMM_WORLD_*", "environment.OMPI_FILE_LOCATION", "environment.OMPI_MCA_orte_*",
    "environment.OMPI_MCA_ess_*", "environment.OMPI_MCA_pmix*", "environment.OMPI_UNIVERSE*",
    "environment.OMPI_FIRST_RANKS", "environment.OMPI_APP_CTX*", "environment.OMPI_NUM_APP_CTX",
    "environment.OMPI_ARGV", "environment.OMPI_MCA_initial_wdir", "environment.PRTE_*",
    "environment.OMPI_MCA_prte*", "environment.SLURM_JOB*", "environment.SLURM_STEP*", "environment.SLURM_TASK_PID",
    "environment.SLURM_PROCID", "environment.SLURM_LOCALID", "environment.SLURM_SRUN_COMM*", "environment.SLURM_LAUNCH_NODE*",
    "clock.duration*", "clock.quality*", "clock.*_s", "check.seed", "results*", "files.*", "launch.system_warnings",
    # measured state of the machine, reported as result flags (analysis/flags.py), not a setting
    "shared_cpu*", "scheme.warmup_capped_experiments", "ranks.*.cpu_share", "ranks.*.run_delay_share", "ranks.*.cpus_seen",
    "ranks.*.cpu_check_s", "ranks.*.first_cpu_share", "ranks.*.first_run_delay_share", "core_latency*", "clock.rtt_preempted_ranks",
    "clock.below_accuracy_ranks",
    # the timer study reused from an earlier mpirun (--timer-cache), and what each clock fit reached
    "timer.study_cached", "timer.study_from", "clock.fit_points_per_rank*", "clock.fit_ci_ppm_per_rank*",
    "clock.fit_stop_per_rank*",
    # results of a LogP run (kind logp), not settings
    "logp.*", "pairs.*", "logp_config.timer_overhead*",
]


def flatten(obj, prefix: str = "") -> dict[str, str]:
    """{"a": {"b": 1}, "l": [x, y]} -> {"a.b": "1", "l.0": "x", "l.1": "y"}"""
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        if all(not isinstance(x, (dict, list)) for x in obj):
            out[prefix[:-1]] = json.dumps(obj)
        else:
            for i, v in enumerate(obj):
                out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = "null" if obj is None else str(obj)
    return out


def is_volatile(key: str) -> bool:
    k = key.replace(".", "\x00")
    for pat in VOLATILE:
        # "ranks.*.pid": "*" between dots matches one path element (a rank index)
        if fnmatch.fnmatchcase(key, pat) or fnmatch.fnmatchcase(k, pat.replace(".", "\x00")):
            return True
    return False


def load(root: str | Path) -> dict[str, dict[str, str]]:
    """run_id -> flattened meta.json, for the complete runs of a campaign."""

    complete, _, _ = find_runs(Path(root))
    return {d.name: flatten(load_meta(d / "meta.json")) for d in complete}


def differing(runs: dict[str, dict[str, str]], include_volatile: bool = False,
              ignore: tuple[str, ...] = ()) -> dict[str, dict[str, list[str]]]:
    """key -> {value -> [run ids]} for every key whose value is not the same in all runs
    (a key missing in some runs counts as the value "<absent>")."""
    keys = set().union(*[set(f) for f in runs.values()]) if runs else set()
    out = {}
    for key in sorted(keys, key=importance):
        vals: dict[str, list[str]] = {}
        for rid, f in runs.items():
            vals.setdefault(f.get(key, "<absent>"), []).append(rid)
        if len(vals) < 2:
            continue
        # the pattern checks only for the keys that differ (most keys agree; fnmatch is the slow part)
        if (not include_volatile and is_volatile(key)) or any(fnmatch.fnmatchcase(key, p) for p in ignore):
            continue
        out[key] = vals
    return out


_PRIORITY = ("mpi.", "nprocs", "scheme.", "timer.name", "clock.", "operation_params.", "cache_policy", "machine.",
             "ranks.", "build.", "launch.launcher.", "launch.build.", "environment.")


def importance(key: str) -> tuple[int, str]:
    """Sort key: the factors most likely to change results first."""
    for i, p in enumerate(_PRIORITY):
        if key.startswith(p):
            return (i, key)
    return (len(_PRIORITY), key)


def within_group_differences(runs: dict[str, dict[str, str]], group_key: str = "config") -> dict[str, list[str]]:
    """For each value of group_key: the non-volatile keys that differ between its runs."""
    groups: dict[str, dict[str, dict[str, str]]] = {}
    for rid, f in runs.items():
        groups.setdefault(f.get(group_key, "default"), {})[rid] = f
    out = {}
    for g, rs in groups.items():
        d = differing(rs, ignore=(group_key,))
        if d:
            out[g] = sorted(d, key=importance)
    return out
