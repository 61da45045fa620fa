"""What every kind of run has in common.

A kind of run names the executable of the C core it launches, the parameters
it passes (rows of ``params/params.def`` for that executable, with the kind's
own defaults), the files a complete run leaves beside meta.json, and how to
read them. The runner (`mpitempo.runner.execute`) does the rest for every kind
alike: campaign directory, mpiruns, interleaving, resume, timeouts, progress,
failure records.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io import params as ptable


@dataclass(frozen=True)
class Kind:
    name: str                                # recorded in campaign.toml as `kind`
    app: str                                 # the executable's column in params.def
    executable: str                          # binary of the C core
    data_files: tuple[str, ...]              # result files beside meta.json of a complete run
    optional_files: tuple[str, ...] = ()     # further result files (kept aside with an incomplete attempt)
    defaults: dict = field(default_factory=dict)   # the kind's defaults, over the table's
    runner_owned: tuple[str, ...] = ("seed",)      # parameters the runner sets per mpirun
    list_keys: tuple[str, ...] = ()          # LIST parameters kept as Python lists (written as TOML arrays)
    description: str = ""
    has_measurements: bool = True            # its runs feed the common measurement table (meas_sql)

    # -- parameters ------------------------------------------------------------------------------
    def params(self) -> dict[str, ptable.Param]:
        return {k: p for k, p in ptable.for_app(self.app).items() if k not in self.runner_owned}

    def default(self, key: str):
        if key in self.defaults:
            return self.defaults[key]
        p = self.params()[key]
        if p.default is None:
            return None
        if p.type == "BOOL":
            return p.default in ("1", "true")
        return p.default

    def normalise(self, key: str, value, where: str = "", label: str | None = None):
        """Check one parameter value (TOML or flag) and return it in its canonical form; errors name
        ``label`` (the flag) or the key."""
        p = self.params()[key]
        if key in self.list_keys:
            items = value if isinstance(value, list) else str(value).split(",")
            items = [str(x).strip() for x in items]
            if not items or any(not x for x in items):
                from mpitempo.errors import MtError
                why = ("an empty item (two commas in a row, or a comma at an end)" if any(items) else
                       "give one or more comma-separated items")
                raise MtError(f"invalid {label or key}{where} '{value}': {why}")
            return items
        if isinstance(value, list) and p.type == "LIST":
            value = ",".join(str(x) for x in value)
        return p.check(value, where, label)

    def core_args(self, values: dict) -> list[str]:
        """The core's flags for these parameter values (None and False are not passed)."""
        ps = self.params()
        args: list[str] = []
        for key, val in values.items():
            if val is None or val is False or key not in ps:
                continue
            flag = ps[key].flag
            if val is True:
                args.append(flag)
            elif isinstance(val, (list, tuple)):
                args += [flag, ",".join(str(x) for x in val)]
            else:
                args += [flag, str(val)]
        return args

    # -- hooks -----------------------------------------------------------------------------------
    def check(self, campaign, build, configs) -> None:
        """Checks against the built core (its registries, or a dry run of its option parser) before
        anything is created or launched; raises MtError with a one-line reason."""

    def complete(self, rundir: Path) -> bool:
        """meta.json and the data files are there, and the runner did not record the attempt as
        failed: an mpirun killed after the core wrote its files (a timeout in MPI_Finalize, a rank
        that crashed at exit) is never counted complete by resume nor used by the readers."""
        return ((rundir / "meta.json").exists() and all((rundir / f).exists() for f in self.data_files)
                and not (rundir / "failed.json").exists())

    def check_run_files(self, rundir: Path, root: Path) -> None:
        """Refuse (MtError, naming file and line) a complete run whose data files the measurement
        query would misread; the query itself checks the kinds that have csv_columns."""
        return None

    def status(self, returncode: int | None, complete: bool) -> str | None:
        """A kind-specific status for a finished mpirun (None: the runner's own)."""
        return None

    def meas_sql(self, files: list[tuple[str, dict]]) -> str:
        """A DuckDB query over the data files of complete runs ((path, meta.json) pairs) with the
        columns of the common measurement table: filename, op, msize, nprocs, scheme, exp, rep,
        runtime_s, valid, local_max_s (docs/file-formats.md)."""
        raise NotImplementedError


def sql_str(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def glob_escape(path) -> str:
    """A path as a DuckDB file pattern that matches only itself: DuckDB globs every file name it is
    given ('camp[1]' would read camp1, 'c*' every c-directory), so [, * and ? are each put in a
    bracket class of their own ('[[]', '[*]', '[?]'), which matches exactly that character."""
    import re

    text = str(path)
    if not re.search(r"[\[*?]", text):
        return text
    if "\\" in text:
        # DuckDB's glob never matches a name with a backslash, and reads the literal path when its
        # pattern matches nothing: the literal path is right unless the pattern matches another file
        import glob

        others = [m for m in glob.glob(text) if m != text]
        if others:
            raise MtError(f"cannot read '{text}' unambiguously: as a DuckDB pattern it also names '{others[0]}' "
                          "(rename the directory: a backslash with [, * or ? in one path)")
        return text
    return re.sub(r"([\[*?])", r"[\1]", text)


def sql_path(path) -> str:
    """A file path as a DuckDB string literal that reads exactly that file (quoted, glob-escaped)."""
    return sql_str(glob_escape(path))


def sql_list(paths) -> str:
    """A list of file paths for read_csv/read_parquet: each read as itself, never as a pattern."""
    return "[" + ", ".join(sql_path(p) for p in paths) + "]"
