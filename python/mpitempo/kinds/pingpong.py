"""Kind `pingpong`: small-message latency after Luecke, Spanoyannis and Kraeva (2004): timer study,
ping-pongs with hand-shake, npp from the timer resolution (mpitempo-pingpong).

Files of a run: meta.json and timings.csv (kind, msize, npp, trial, ticks, time_s). In the common
measurement table a ping-pong timing becomes a measurement of op `pingpong` (one-way time = ticks x
s_per_tick / (2 npp), the timer's minimum overhead already subtracted by the core) and a
loop-averaged timing one of op `pingpong-loop`; with several npp per size the op names carry
`/npp=N`.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind, sql_list, sql_str
from mpitempo.io.kindcsv import load_timings
from mpitempo.io.sizes import parse_sizes, refuse_duplicates


def parse_sizes0(spec, label: str = "msizes") -> list[int]:
    """Sizes with 0 allowed (latency is defined on 0-byte messages): "0",
    "0-4M" (0, 1, 2, 4, ... 4M) and everything parse_sizes accepts; a size listed twice is refused."""

    items = spec if isinstance(spec, list) else str(spec).split(",")
    out: list[int] = []
    for item in items:
        s = str(item).strip()
        if s.startswith("-") and s[1:2].isdigit():
            raise MtError(f"invalid size '{s}': sizes cannot be negative")
        if s == "0":
            out.append(0)
        elif s.startswith("0-"):
            out.append(0)
            hi = parse_sizes(s[2:], None)[0]
            out += parse_sizes(f"1-{hi}", None)
        else:
            out += parse_sizes(s, None)
    return refuse_duplicates(out, spec, label)


def parse_npp_list(spec) -> list[int]:
    items = spec if isinstance(spec, list) else str(spec).split(",")
    vals = []
    for item in items:
        try:
            v = int(str(item).strip())
        except ValueError:
            raise MtError(f"invalid --npp-sweep item '{str(item).strip()}': expected a comma-separated list of "
                          "integers >= 1, e.g. 1,2,4,8") from None
        if v < 1:
            raise MtError(f"invalid --npp-sweep item {v}: npp must be an integer >= 1")
        vals.append(v)
    return vals


@dataclass(frozen=True)
class PingpongKind(Kind):
    def normalise(self, key, value, where="", label=None):
        if key == "msizes":
            return parse_sizes0(value, label or key)
        if key == "npp_sweep":
            return parse_npp_list(value)
        return super().normalise(key, value, where, label)

    def check(self, campaign, build, configs=None) -> None:
        for cfg in configs if configs is not None else campaign.configs:
            p = campaign.params_for(cfg)
            if p.get("npp") is not None and p.get("npp_sweep"):
                raise MtError("--npp and --npp-sweep exclude each other: give one of them")
            for np_ in campaign.np:
                if np_ < 2:
                    raise MtError(f"ping-pong needs at least 2 ranks, but -n/--np is {np_}")
                src = p.get("source") or 0
                dst = np_ - 1 if p.get("dest") is None else p["dest"]
                for name, v in (("--source", src), ("--dest", dst)):
                    if v < 0 or v >= np_:
                        raise MtError(f"invalid {name} {v}: the job has {np_} ranks (allowed: 0..{np_ - 1})")
                if src == dst:
                    raise MtError(f"--source and --dest are both rank {src}: they must differ")

    def check_run_files(self, rundir, root) -> None:
        """timings.csv and meta.json through the strict reader (io/kindcsv.py): the measurement query
        reads timings.csv by column position and takes s_per_tick from meta.json."""

        load_timings(rundir, root)

    def meas_sql(self, files):
        consts = ", ".join(f"({sql_str(f)}, {float(m['timer']['s_per_tick'])!r}, {int(m.get('nprocs', 2))})"
                           for f, m in files)
        return f"""
            SELECT t.filename,
                   (CASE WHEN t.kind = 'loop' THEN 'pingpong-loop' ELSE 'pingpong' END) ||
                   (CASE WHEN count(DISTINCT t.npp) OVER (PARTITION BY t.filename, t.kind, t.msize) > 1
                         THEN '/npp=' || t.npp ELSE '' END) AS op,
                   t.msize, f.nprocs, 'pingpong' AS scheme, 0 AS exp, t.trial AS rep,
                   t.ticks * f.spt / (2.0 * t.npp) AS runtime_s, 1 AS valid,
                   t.ticks * f.spt / (2.0 * t.npp) AS local_max_s
            FROM read_csv({sql_list(f for f, _ in files)}, header=true, filename=true,
                          columns={{'kind': 'VARCHAR', 'msize': 'BIGINT', 'npp': 'BIGINT', 'trial': 'INTEGER',
                                    'ticks': 'BIGINT', 'time_s': 'DOUBLE'}}) t
            JOIN (VALUES {consts}) f(file, spt, nprocs) ON f.file = t.filename
            WHERE t.kind IN ('pingpong', 'loop')"""


KIND = PingpongKind(name="pingpong", app="pingpong", executable="mpitempo-pingpong", data_files=("timings.csv",),
                    description="small-message ping-pong latency (timer resolution, npp)")
