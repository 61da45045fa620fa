"""Kind `trace`: mpiruns of an unmodified MPI application under libmpitempo-trace.so
(`mpitempo trace run --mpiruns N`, docs/trace.md).

Unlike the other kinds the mpirun does not start an executable of the C core: it starts the
user's application, with the tracer configured through the environment and put in front of the
rank's LD_PRELOAD by the shell shim of cmd_trace. Each run directory runs/<id>/ is the trace
directory of that mpirun (trace.json, events.csv, perfetto.json, otf2/, not_recorded.json,
sites.tsv). The runner does the rest as for every kind: campaign directory, interleaving,
resume, timeouts, progress, failure records; the tracer writes no meta.json, so this kind writes
it after the mpirun, from trace.json (the experimental factors: application, calls, timer,
clock sync, buffer) with the digest of the data files.

The parameters are this kind's own (the tracer's environment, not the core's option table).
"""
from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from mpitempo import mpilib
from mpitempo.errors import MtError
from mpitempo.io import params as ptable
from mpitempo.kinds.base import Kind

MAX_BUFFER = 1_000_000_000
_PARAMS = {
    "app": ptable.Param("app", "LIST", None, "", 0, 0, ("trace",),
                        "the application and its arguments (a list: [\"./app\", \"--iters\", \"100\"])"),
    "timer": ptable.Param("timer", "STR", "monotonic", "", 0, 0, ("trace",),
                          "time source of the timestamps (monotonic, gettimeofday, rdtscp, monotonic_raw, realtime)"),
    "sync": ptable.Param("sync", "STR", None, "", 0, 0, ("trace",),
                         "clock sync at MPI_Init and MPI_Finalize (default h2:hca3/prop; docs/clocks.md)"),
    "calls": ptable.Param("calls", "STR", "default", "", 0, 0, ("trace",), "MPI calls to record (names or groups)"),
    "buffer": ptable.Param("buffer", "INT", "1000000", "", 1, MAX_BUFFER, ("trace",), "events per rank held in memory"),
    "on_full": ptable.Param("on_full", "STR", "stop", "", 0, 0, ("trace",), "when the buffer is full: stop or wrap"),
}


@dataclass(frozen=True)
class TraceKind(Kind):
    def params(self) -> dict[str, ptable.Param]:
        return dict(_PARAMS)

    def normalise(self, key, value, where="", label=None):
        v = super().normalise(key, value, where, label)
        if key == "app":
            if any("\n" in x or "\0" in x for x in v):
                raise MtError(f"invalid {label or key}{where}: an argument holds a newline or NUL")
        if key == "on_full" and v not in ("stop", "wrap"):
            raise MtError(f"invalid {label or key}{where} '{v}' (allowed: stop, wrap)")
        return v

    def core_args(self, values: dict) -> list[str]:
        """What identifies the mpiruns of a configuration (recorded, compared on resume)."""
        return [f"{k}={values[k]!r}" for k in sorted(values) if values.get(k) is not None]

    # -- checks before anything is created ---------------------------------------------------------
    def check(self, campaign, build, configs) -> None:
        from mpitempo.tracer import SMPI_REFUSAL, call_table, check_calls, check_sync, find_app, find_library
        from mpitempo.build import list_registry

        if mpilib.of(build).simulated:
            raise MtError(SMPI_REFUSAL)
        for cfg in configs:
            v = campaign.params_for(cfg)
            if not v.get("app"):
                raise MtError("a trace campaign needs the application: give it after -- (or app = [\"./app\", ...])")
            find_app(v["app"][0])
            try:
                check_calls(v["calls"], call_table())
            except FileNotFoundError:
                pass
            timers = [t["name"] if isinstance(t, dict) else t for t in list_registry(build)["timers"]]
            timers = [t for t in timers if t != "wtime"]
            if v["timer"] not in timers:
                raise MtError(f"unknown timer '{v['timer']}' (allowed: {', '.join(timers)})")
            if v.get("sync"):
                check_sync(build, v["sync"])
            find_library(build)

    # -- the runner's hooks -------------------------------------------------------------------------
    def command(self, campaign, cfg, build, rdir: Path, run) -> list[str]:
        """The mpirun's command in place of {cmd}: the application under the tracer, writing into rdir."""
        from mpitempo.tracer import find_app, find_library, preload_shim

        v = campaign.params_for(cfg)
        env = {"MPITEMPO_TRACE_DIR": str(Path(rdir).resolve()), "MPITEMPO_TRACE_TIMER": v["timer"],
               "MPITEMPO_TRACE_CALLS": v["calls"], "MPITEMPO_TRACE_BUFFER": str(v["buffer"]),
               "MPITEMPO_TRACE_ON_FULL": v["on_full"]}
        if v.get("sync"):
            env["MPITEMPO_TRACE_SYNC"] = v["sync"]
        app = v["app"]
        return ["env", *[f"{k}={x}" for k, x in env.items()], *preload_shim(find_library(build)), find_app(app[0]),
                *app[1:]]

    def command_text(self, campaign, cfg, rdir: Path) -> str:
        """The application part of the command, for the consent of a resume (no build needed)."""
        app = campaign.params_for(cfg).get("app") or []
        return f"env MPITEMPO_TRACE_DIR={shlex.quote(str(rdir))} ... <core>/libmpitempo-trace.so " + shlex.join(app)

    def stored_commands(self, campaign, cfg, outdir: Path) -> list[tuple[str, object, list[str]]]:
        """The application stored in campaign.toml: a program the resume runs on every rank, always
        shown and run only with consent (runner.resume.consent)."""
        app = campaign.params_for(cfg).get("app") or []
        return [("app", app, [f"on every rank of every mpirun still to run: {shlex.join(app)}"])]

    def after_run(self, campaign, cfg, build, rdir: Path, info: dict, status: str, started: float,
                  duration_s: float) -> None:
        """meta.json of a run whose tracer wrote trace.json and events.csv, written last (beside the
        runner's launch.json): a run without it is not complete and is run again on resume."""
        from mpitempo.io import safefs
        from mpitempo.io.integrity import digest
        from mpitempo.io.rundir import FORMAT_VERSION
        from mpitempo.io.safeload import load_json

        root = Path(rdir).parent.parent
        if status != "ok":
            return
        try:
            for f in self.data_files:
                safefs.check_not_link(Path(rdir) / f, root, want="file")
            tj = load_json(Path(rdir) / "trace.json")
        except (MtError, OSError, safefs.UnsafePath):
            return
        if not isinstance(tj, dict) or not all((Path(rdir) / f).is_file() for f in self.data_files):
            return
        v = campaign.params_for(cfg)
        files = {}
        for f in self.data_files:
            n, lines, crc = digest(Path(rdir) / f)
            files[f] = {"bytes": n, "lines": lines, "crc32": crc}
        sync = tj.get("sync") if isinstance(tj.get("sync"), dict) else {}
        fmt = "%Y-%m-%dT%H:%M:%SZ"
        meta = {
            "format_version": FORMAT_VERSION, "kind": "trace", "tool": "mpitempo trace (libmpitempo-trace.so)",
            "config": cfg.name, "run_index": info["run_index"], "nprocs": info["np"], "run_id": info["run_id"],
            "campaign": campaign.name, "position_in_campaign": info.get("position_in_campaign"),
            "start_time": time.strftime(fmt, time.gmtime(started)),
            "end_time": time.strftime(fmt, time.gmtime(started + duration_s)),
            "duration_s": round(duration_s, 6),
            "argv": [str(a) for a in info["launcher"].get("argv", [])],
            "files": files,
            "build": info.get("build") or {},
            "launch": info.get("launcher") or {},
            "timer": {"name": v["timer"], "resolution_s": tj.get("timer_resolution_s")},
            "clock": {"sync_requested": v.get("sync"), "sync": sync.get("algorithm"), "note": sync.get("note"),
                      "max_abs_offset_after_sync_s": sync.get("max_abs_offset_after_sync_s"),
                      "drift_at_end_s": sync.get("drift_at_end_s")},
            "mpi": {"library": tj.get("mpi_library")},
            "machine": {"hosts": tj.get("hosts") if isinstance(tj.get("hosts"), list) else [],
                        "oversubscribed": bool(tj.get("oversubscribed"))},
            "trace": {"app": v["app"], "calls": v["calls"], "buffer": v["buffer"], "on_full": v["on_full"],
                      "events": tj.get("events_per_rank"), "buffer_record": tj.get("buffer")},
            "system_warnings": info.get("system_warnings", []),
        }
        tmp = Path(rdir) / ".meta.json.tmp"
        safefs.safe_write_text(tmp, json.dumps(meta, indent=2) + "\n", root)
        safefs.safe_rename(tmp, Path(rdir) / "meta.json", root)


KIND = TraceKind(name="trace", app="trace", executable="", data_files=("trace.json", "events.csv"),
                 optional_files=("perfetto.json", "not_recorded.json", "sites.tsv", "otf2", "partial", "gantt.png"),
                 runner_owned=(), list_keys=("app",), has_measurements=False,
                 description="global-clock traces of an MPI application (libmpitempo-trace.so)")
