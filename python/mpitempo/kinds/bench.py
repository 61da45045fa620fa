"""Kind `bench`: MPI operations x message sizes with one measurement scheme (mpitempo-bench).

Files of a run: meta.json, measurements.csv (one row per measurement) and, with
--timestamps, timestamps.csv (docs/file-formats.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind, sql_list
from mpitempo.build import list_registry
from mpitempo.io import opnames

CSV_COLUMNS = {
    "op": "VARCHAR", "msize": "BIGINT", "nprocs": "INTEGER", "scheme": "VARCHAR", "exp": "INTEGER",
    "rep": "INTEGER", "runtime_s": "DOUBLE", "valid": "INTEGER", "local_max_s": "DOUBLE",
}


@dataclass(frozen=True)
class BenchKind(Kind):
    csv_columns = CSV_COLUMNS   # of measurements.csv, for messages naming a bad line

    def normalise(self, key, value, where="", label=None):
        if key == "msizes":
            from mpitempo.io.sizes import parse_sizes

            return parse_sizes(value, label or key, allow_zero=True)   # 0 B: count 0, as MPI allows
        return super().normalise(key, value, where, label)

    def check(self, campaign, build, configs=None) -> None:
        check_against_registry(campaign, list_registry(build), configs)

    def meas_sql(self, files):
        cols = ", ".join(f"'{k}': '{v}'" for k, v in CSV_COLUMNS.items())
        return (f"SELECT filename, op, msize, nprocs, scheme, exp, rep, runtime_s, valid, local_max_s "
                f"FROM read_csv({sql_list(f for f, _ in files)}, header=true, columns={{{cols}}}, filename=true)")

    columnar = True   # analysis reads a Parquet copy of measurements.csv (io.columnar)

    def csv_select(self, path) -> str:
        """The columns of the common measurement table (without filename) from one measurements.csv,
        in the order of the columnar copy: by op, msize, nprocs, valid, runtime_s (analysis.perrun)."""
        cols = ", ".join(f"'{k}': '{v}'" for k, v in CSV_COLUMNS.items())
        return (f"SELECT op, msize, nprocs, scheme, exp, rep, runtime_s, valid, local_max_s "
                f"FROM read_csv({sql_list([str(path)])}, header=true, columns={{{cols}}}) "
                f"ORDER BY op, msize, nprocs, valid, runtime_s, exp, rep")

    def status(self, returncode, complete):
        # complete, but some experiment had too few valid measurements
        return "few_valid" if returncode == 3 and complete else None


SHORT_LIST = 12   # an unknown op is told every allowed op when there are at most this many


def unknown_op(ops: dict, name: str, where: str = "", aliases: bool = False) -> MtError:
    """One line for an op the core does not have: the close matches among the ops (and, where OSU and
    IMB names are accepted, those names: mpitempo run), and where every op is listed."""
    import difflib

    bench = opnames.lookup(name)
    if bench is not None:   # here only where such names are not accepted (imbalance, tune, barrier)
        here = f"its op{'s' if len(bench.ops) > 1 else ''}: {', '.join(bench.ops)}" if bench.ops else bench.why
        return MtError(f"'{name}' is an {opnames.SUITES[bench.suite]} benchmark name, accepted by mpitempo run "
                       f"--ops{where}; {here}")
    allowed = [x["name"] + (":N" if "param" in x else "") for x in ops.values()]
    mine = {x["name"]: x["name"] + (":N" if "param" in x else "") for x in ops.values()}
    suite = {n.lower(): n for n in opnames.alias_names()} if aliases else {}
    # a name in a suite's style is matched with the suites' names first, any other with the ops first
    order = [suite, mine] if opnames.suite_of_name(name) else [mine, suite]
    shown = []
    for cands in order:
        shown = [cands[c] for c in difflib.get_close_matches(name.lower(), list(cands), n=3, cutoff=0.6)]
        if shown:
            break
    mean = (f"did you mean {', '.join(shown[:-1])} or {shown[-1]}?; " if len(shown) > 1 else
            f"did you mean {shown[0]}?; " if shown else "")
    if len(allowed) <= SHORT_LIST:
        return MtError(f"unknown op '{name}'{where} ({mean}allowed: {', '.join(allowed)})")
    more = "; OSU and IMB names: docs/methods.md#profiles-like-osu-and-like-imb" if aliases else ""
    return MtError(f"unknown op '{name}'{where} ({mean}every op: $(mpitempo which mpitempo-bench) --list{more})")


def resolve_op(ops: dict, name: str, where: str = "", aliases: bool = False) -> str:
    """The registry entry's name of op `name`: itself, or the family of "family:N" (an op with a
    "param", e.g. barrier:combining:4); MtError with the core's wording otherwise (with "did you
    mean", over OSU and IMB names too when ``aliases``: they are accepted where the op came from)."""
    if name in ops and "param" not in ops[name]:
        return name
    fam, _, n = name.rpartition(":")
    o = ops.get(name) or ops.get(fam)
    if o is not None and "param" in o:
        fam = o["name"]
        if name == fam:
            raise MtError(f"op '{name}' needs its {o['param']}: {fam}:N with N >= {o['param_min']} (e.g. {fam}:4)")
        if not n.isdigit() or int(n) < o["param_min"]:
            raise MtError(f"invalid {o['param']} of '{name}'{where}: {fam}:N needs an integer N >= {o['param_min']}")
        return fam
    raise unknown_op(ops, name, where, aliases)


def check_against_registry(c, reg: dict, configs=None) -> None:
    """Names the C core does not know, and ops that need more ranks than given."""
    def allowed(key):
        return [x["name"] if isinstance(x, dict) else x for x in reg[key]]

    ops = {o["name"]: o for o in reg["ops"]}
    for cfg in configs if configs is not None else c.configs:
        p = c.params_for(cfg)
        where = f" (config '{cfg.name}')" if len(c.configs) > 1 else ""
        for name in p["ops"]:
            op = resolve_op(ops, name, where, aliases=c.kind == "bench")
            for np in c.np:
                if np < ops[op]["min_procs"]:
                    raise MtError(f"op '{op}' needs at least {ops[op]['min_procs']} ranks, but np is {np}")
        if len(set(p["ops"])) != len(p["ops"]):
            raise MtError(f"an op is listed twice in ops {p['ops']}")
        for key, val in (("schemes", p["scheme"]), ("timers", p["timer"]), ("datatypes", p["datatype"]),
                         ("redops", p["redop"])):
            if val not in allowed(key):
                raise MtError(f"unknown {key[:-1]} '{val}'{where} (allowed: {', '.join(allowed(key))})")
        for np in c.np:
            if p["root"] >= np:
                raise MtError(f"invalid root {p['root']}{where}: the job has {np} ranks (allowed: 0..{np - 1})")


KIND = BenchKind(name="bench", app="bench", executable="mpitempo-bench", data_files=("measurements.csv",),
                 optional_files=("timestamps.csv", "perrank.bin"), list_keys=("ops",),
                 description="MPI operations x message sizes, one measurement scheme")
