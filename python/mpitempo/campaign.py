"""Campaign specification: what to run, how often, on which configurations.

A campaign is read from TOML (see examples/*.toml and docs/campaigns.md) and/or
command-line flags, validated completely before anything is launched, and
written back as ``campaign.toml`` (the spec as run) into the campaign directory.
"""
from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MtError
from .sizes import parse_sizes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULTS = {
    "name": "campaign",
    "np": 2,
    "mpiruns": 10,
    "ops": ["allreduce"],
    "msizes": "8,64,512,4K",
    "nrep": 100,
    "warmup": 10,
    "inner": 10,
    "scheme": "barrier",
    "timer": "monotonic",
    "datatype": "byte",
    "redop": "sum",
    "root": 0,
    "seed": None,
    "order": "interleave",
    "timeout_s": 600.0,
    "launcher": None,
    "mpicc": None,
    "env": {},
}
TOP_KEYS = set(DEFAULTS) | {"config"}
CONFIG_KEYS = {"name", "mpicc", "launcher", "env", "description"}
ORDERS = ("interleave", "random")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


@dataclass
class Config:
    name: str
    mpicc: str | None = None
    launcher: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""


@dataclass
class Campaign:
    name: str
    np: list[int]
    mpiruns: int
    ops: list[str]
    msizes: list[int]
    nrep: int
    warmup: int
    inner: int
    scheme: str
    timer: str
    datatype: str
    redop: str
    root: int
    seed: int | None
    order: str
    timeout_s: float
    configs: list[Config]

    def to_toml(self) -> str:
        lines = ["# mpitempo campaign, as run (written by mpitempo run)"]
        simple = {k: getattr(self, k) for k in ("name", "np", "mpiruns", "ops", "msizes", "nrep", "warmup",
                                                 "inner", "scheme", "timer", "datatype", "redop", "root",
                                                 "seed", "order", "timeout_s")}
        for k, v in simple.items():
            if v is not None:
                lines.append(f"{k} = {_toml_value(v)}")
        for c in self.configs:
            lines += ["", "[[config]]", f"name = {_toml_value(c.name)}"]
            if c.description:
                lines.append(f"description = {_toml_value(c.description)}")
            if c.mpicc:
                lines.append(f"mpicc = {_toml_value(c.mpicc)}")
            if c.launcher:
                lines.append(f"launcher = {_toml_value(c.launcher)}")
            if c.env:
                lines.append("env = { " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}"
                                                    for k, v in c.env.items()) + " }")
        return "\n".join(lines) + "\n"


def _toml_key(k: str) -> str:
    return k if re.match(r"^[A-Za-z0-9_-]+$", k) else _toml_value(k)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def load_toml(path: str | Path) -> dict:
    p = Path(path)
    if not p.exists():
        raise MtError(f"campaign file '{path}' not found")
    try:
        with open(p, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"campaign file '{path}' is not valid TOML: {e}") from None
    except OSError as e:
        raise MtError(f"cannot read campaign file '{path}': {e.strerror}") from None


def _int(d: dict, key: str, lo: int, hi: int = 2**31 - 1) -> int:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            v = int(str(v), 10)
        except ValueError:
            raise MtError(f"invalid {key} '{d[key]}': expected an integer >= {lo}") from None
    if not lo <= v <= hi:
        raise MtError(f"invalid {key} {v}: must be an integer >= {lo}" + (f" and <= {hi}" if hi < 2**31 - 1 else ""))
    return v


def _names(v, key: str) -> list[str]:
    items = v if isinstance(v, list) else str(v).split(",")
    items = [str(x).strip() for x in items]
    if not items or any(not x for x in items):
        raise MtError(f"invalid {key} '{v}': expected a non-empty comma-separated list")
    return items


def build_campaign(file_spec: dict | None, overrides: dict | None = None) -> Campaign:
    """Merge defaults < file < flags, check every key and value, return the spec."""
    raw = copy.deepcopy(file_spec or {})
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise MtError(f"unknown key '{unknown[0]}' in campaign file (allowed: {', '.join(sorted(TOP_KEYS))})")
    d = dict(DEFAULTS)
    d.update({k: v for k, v in raw.items() if k != "config"})
    for k, v in (overrides or {}).items():
        if v is not None:
            d[k] = v

    np_raw = d["np"] if isinstance(d["np"], list) else [d["np"]]
    nps = [_int({"np": x}, "np", 1, 1 << 20) for x in np_raw]
    if not nps:
        raise MtError("invalid np []: give at least one process count")
    order = str(d["order"])
    if order not in ORDERS:
        raise MtError(f"invalid order '{order}' (allowed: {', '.join(ORDERS)})")
    try:
        timeout = float(d["timeout_s"])
    except (TypeError, ValueError):
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected seconds > 0") from None
    if not timeout > 0:
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected seconds > 0")
    seed = d["seed"]
    if seed is not None:
        seed = _int(d, "seed", 0, 2**63 - 1)
    name = str(d["name"])
    if not _NAME.match(name):
        raise MtError(f"invalid campaign name '{name}': use letters, digits, '_', '.', '+', '-'")

    configs_raw = raw.get("config")
    configs: list[Config] = []
    if configs_raw is None:
        configs.append(Config(name="default", mpicc=d["mpicc"], launcher=d["launcher"], env=dict(d["env"] or {})))
    else:
        if not isinstance(configs_raw, list) or not configs_raw:
            raise MtError("invalid 'config': expected one or more [[config]] tables")
        for i, c in enumerate(configs_raw):
            if not isinstance(c, dict):
                raise MtError(f"invalid [[config]] #{i + 1}: expected a table")
            bad = sorted(set(c) - CONFIG_KEYS)
            if bad:
                raise MtError(f"unknown key '{bad[0]}' in [[config]] #{i + 1} "
                              f"(allowed: {', '.join(sorted(CONFIG_KEYS))})")
            if "name" not in c:
                raise MtError(f"[[config]] #{i + 1} has no name")
            env = dict(d["env"] or {})
            env.update(c.get("env") or {})
            configs.append(Config(name=str(c["name"]), mpicc=c.get("mpicc", d["mpicc"]),
                                  launcher=overrides.get("launcher") if overrides and overrides.get("launcher")
                                  else c.get("launcher", d["launcher"]),
                                  env={str(k): str(v) for k, v in env.items()},
                                  description=str(c.get("description", ""))))
    seen = set()
    for c in configs:
        if not _NAME.match(c.name):
            raise MtError(f"invalid configuration name '{c.name}': use letters, digits, '_', '.', '+', '-'")
        if c.name in seen:
            raise MtError(f"duplicate configuration name '{c.name}'")
        seen.add(c.name)

    return Campaign(
        name=name, np=nps, mpiruns=_int(d, "mpiruns", 1, 100000), ops=_names(d["ops"], "ops"),
        msizes=parse_sizes(d["msizes"]), nrep=_int(d, "nrep", 1, 10**8), warmup=_int(d, "warmup", 0, 10**8),
        inner=_int(d, "inner", 1, 10**8), scheme=str(d["scheme"]), timer=str(d["timer"]),
        datatype=str(d["datatype"]), redop=str(d["redop"]), root=_int(d, "root", 0), seed=seed,
        order=order, timeout_s=timeout, configs=configs)


def check_against_registry(c: Campaign, reg: dict) -> None:
    """Names the C core does not know, and ops that need more ranks than given."""
    def allowed(key):
        return [x["name"] if isinstance(x, dict) else x for x in reg[key]]

    ops = {o["name"]: o for o in reg["ops"]}
    for op in c.ops:
        if op not in ops:
            raise MtError(f"unknown op '{op}' (allowed: {', '.join(allowed('ops'))})")
        for np in c.np:
            if np < ops[op]["min_procs"]:
                raise MtError(f"op '{op}' needs at least {ops[op]['min_procs']} ranks, but np is {np}")
    if len(set(c.ops)) != len(c.ops):
        raise MtError(f"an op is listed twice in ops {c.ops}")
    for key, val in (("schemes", c.scheme), ("timers", c.timer), ("datatypes", c.datatype), ("redops", c.redop)):
        if val not in allowed(key):
            raise MtError(f"unknown {key[:-1]} '{val}' (allowed: {', '.join(allowed(key))})")
    for np in c.np:
        if c.root >= np:
            raise MtError(f"invalid root {c.root}: the job has {np} ranks (allowed: 0..{np - 1})")
