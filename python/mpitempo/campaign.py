"""Campaign specification: what to run, how often, on which configurations.

A campaign is read from TOML (see examples/*.toml and docs/campaigns.md) and/or
command-line flags, validated completely before anything is launched, and
written back as ``campaign.toml`` (the spec as run) into the campaign directory.

Two kinds of keys:

* campaign keys (name, np, mpiruns, ops, msizes, seed, order, timeout_s, and
  the defaults for launcher, mpicc, env of the configurations);
* measurement parameters, passed to the C core (nrep, scheme, timer, sync,
  ...): one table, ``PARAMS``, says for each its default, how it is checked and
  which core flag it becomes. A ``[[config]]`` may override any of them, so a
  campaign can compare schemes or sync algorithms as well as MPI libraries.
"""
from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MtError
from .sizes import parse_size, parse_sizes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_DURATION = re.compile(r"^\s*\d+(\.\d*)?([eE][-+]?\d+)?\s*(s|ms|us|ns)?\s*$")
ORDERS = ("interleave", "random")
CACHE_POLICIES = ("warm", "cold", "cycle")


def _int_check(lo: int, hi: int = 2**31 - 1):
    def check(key, v):
        if isinstance(v, bool) or not isinstance(v, int):
            try:
                v = int(str(v), 10)
            except ValueError:
                raise MtError(f"invalid {key} '{v}': expected an integer >= {lo}") from None
        if not lo <= v <= hi:
            raise MtError(f"invalid {key} {v}: must be an integer >= {lo}" + (f" and <= {hi}" if hi < 2**31 - 1 else ""))
        return v
    return check


def _str(key, v):
    if not isinstance(v, (str, int, float)) or isinstance(v, bool) or str(v).strip() == "":
        raise MtError(f"invalid {key} '{v}': expected a non-empty string")
    return str(v).strip()


def _choice(*allowed):
    def check(key, v):
        v = str(v)
        if v not in allowed:
            raise MtError(f"invalid {key} '{v}' (allowed: {', '.join(allowed)})")
        return v
    return check


def _duration(key, v):
    if isinstance(v, bool) or not _DURATION.match(str(v)):
        raise MtError(f"invalid {key} '{v}': expected a duration such as 1s, 200ms, 20us or 2e-6")
    return str(v).strip()


def _positive_number(lo: float):
    def check(key, v):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise MtError(f"invalid {key} '{v}': expected a number >= {lo:g}") from None
        if isinstance(v, bool) or not x >= lo:
            raise MtError(f"invalid {key} '{v}': expected a number >= {lo:g}")
        return x
    return check


def _bool(key, v):
    if not isinstance(v, bool):
        raise MtError(f"invalid {key} '{v}': expected true or false")
    return v


def _size(key, v):
    return parse_size(v)


# key: (default, check, core flag). None as default: the flag is not passed.
# Flags of boolean keys take no value.
PARAMS = {
    "nrep": (100, _int_check(1, 10**8), "--nrep"),
    "warmup": (10, _int_check(0, 10**8), "--warmup"),
    "inner": (10, _int_check(1, 10**8), "--inner"),
    "scheme": ("barrier", _str, "--scheme"),
    "timer": ("monotonic", _str, "--timer"),
    "datatype": ("byte", _str, "--datatype"),
    "redop": ("sum", _str, "--redop"),
    "root": (0, _int_check(0), "--root"),
    "cache": ("warm", _choice(*CACHE_POLICIES), "--cache"),
    "cache_size": (None, _size, "--cache-size"),
    "delay": ("10us", _str, "--delay"),
    "sync": ("none", _str, "--sync"),
    "rt_slack": (None, _positive_number(1.0), "--rt-slack"),
    "time_slice": (None, _duration, "--time-slice"),
    "window": (None, _duration, "--window"),
    "window_chunk": (None, _int_check(1, 10**8), "--window-chunk"),
    "timestamps": (False, _bool, "--timestamps"),
    "min_valid": (None, _int_check(0, 10**8), "--min-valid"),
    "allow_few_valid": (False, _bool, "--allow-few-valid"),
    "barrier_skew": (None, _str, "--barrier-skew"),
    "resync_age": (None, _positive_number(0.0), "--resync-age"),
}

CAMPAIGN_DEFAULTS = {
    "name": "campaign",
    "np": 2,
    "mpiruns": 10,
    "ops": ["allreduce"],
    "msizes": "8,64,512,4K",
    "seed": None,
    "order": "interleave",
    "timeout_s": 600.0,
    "launcher": None,
    "mpicc": None,
    "env": {},
}
TOP_KEYS = set(CAMPAIGN_DEFAULTS) | set(PARAMS) | {"config"}
CONFIG_KEYS = {"name", "mpicc", "launcher", "env", "description"} | set(PARAMS)


@dataclass
class Config:
    name: str
    mpicc: str | None = None
    launcher: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    params: dict = field(default_factory=dict)   # overrides of measurement parameters


@dataclass
class Campaign:
    name: str
    np: list[int]
    mpiruns: int
    ops: list[str]
    msizes: list[int]
    seed: int | None
    order: str
    timeout_s: float
    configs: list[Config]
    params: dict                                  # measurement parameters (PARAMS keys)

    def __getattr__(self, key):                   # c.nrep, c.scheme, ...
        params = self.__dict__.get("params")
        if params is not None and key in params:
            return params[key]
        raise AttributeError(key)

    def params_for(self, cfg: Config) -> dict:
        p = dict(self.params)
        p.update(cfg.params)
        return p

    def core_args(self, cfg: Config) -> list[str]:
        """The flags of the C core for one configuration."""
        args = ["--ops", ",".join(self.ops), "--msizes", ",".join(str(s) for s in self.msizes)]
        for key, val in self.params_for(cfg).items():
            flag = PARAMS[key][2]
            if val is None or val is False:
                continue
            args += [flag] if val is True else [flag, str(val)]
        return args

    def to_toml(self) -> str:
        lines = ["# mpitempo campaign, as run (written by mpitempo run)"]
        for k in ("name", "np", "mpiruns", "ops", "msizes", "seed", "order", "timeout_s"):
            v = getattr(self, k)
            if v is not None:
                lines.append(f"{k} = {_toml_value(v)}")
        for k, v in self.params.items():
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
            for k, v in c.params.items():
                lines.append(f"{k} = {_toml_value(v)}")
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


def _names(v, key: str) -> list[str]:
    items = v if isinstance(v, list) else str(v).split(",")
    items = [str(x).strip() for x in items]
    if not items or any(not x for x in items):
        raise MtError(f"invalid {key} '{v}': expected a non-empty comma-separated list")
    return items


def build_campaign(file_spec: dict | None, overrides: dict | None = None) -> Campaign:
    """Merge defaults < file < flags, check every key and value, return the spec."""
    raw = copy.deepcopy(file_spec or {})
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise MtError(f"unknown key '{unknown[0]}' in campaign file (allowed: {', '.join(sorted(TOP_KEYS))})")
    d = dict(CAMPAIGN_DEFAULTS)
    d.update({k: v for k, v in raw.items() if k in CAMPAIGN_DEFAULTS})
    d.update({k: v for k, v in overrides.items() if k in CAMPAIGN_DEFAULTS})

    params = {}
    for key, (default, check, _flag) in PARAMS.items():
        v = overrides.get(key, raw.get(key, default))
        params[key] = None if v is None else check(key, v)

    check_np = _int_check(1, 1 << 20)
    np_raw = d["np"] if isinstance(d["np"], list) else [d["np"]]
    nps = [check_np("np", x) for x in np_raw]
    if not nps:
        raise MtError("invalid np []: give at least one process count")
    order = _choice(*ORDERS)("order", d["order"])
    try:
        timeout = float(d["timeout_s"])
    except (TypeError, ValueError):
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected seconds > 0") from None
    if not timeout > 0:
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected seconds > 0")
    seed = None if d["seed"] is None else _int_check(0, 2**63 - 1)("seed", d["seed"])
    name = str(d["name"])
    if not _NAME.match(name):
        raise MtError(f"invalid campaign name '{name}': use letters, digits, '_', '.', '+', '-'")

    configs_raw = raw.get("config")
    configs: list[Config] = []
    if configs_raw is None:
        configs.append(Config(name="default", mpicc=d["mpicc"], launcher=d["launcher"],
                              env={str(k): str(v) for k, v in (d["env"] or {}).items()}))
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
            # a flag on the command line wins over the configuration's value
            cparams = {k: PARAMS[k][1](k, v) for k, v in c.items() if k in PARAMS and k not in overrides}
            configs.append(Config(name=str(c["name"]), mpicc=c.get("mpicc", d["mpicc"]),
                                  launcher=overrides.get("launcher") or c.get("launcher", d["launcher"]),
                                  env={str(k): str(v) for k, v in env.items()},
                                  description=str(c.get("description", "")), params=cparams))
    seen = set()
    for c in configs:
        if not _NAME.match(c.name):
            raise MtError(f"invalid configuration name '{c.name}': use letters, digits, '_', '.', '+', '-'")
        if c.name in seen:
            raise MtError(f"duplicate configuration name '{c.name}'")
        seen.add(c.name)

    return Campaign(name=name, np=nps, mpiruns=_int_check(1, 100000)("mpiruns", d["mpiruns"]),
                    ops=_names(d["ops"], "ops"), msizes=parse_sizes(d["msizes"]), seed=seed, order=order,
                    timeout_s=timeout, configs=configs, params=params)


def check_against_registry(c: Campaign, reg: dict, configs: list[Config] | None = None) -> None:
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
    for cfg in configs if configs is not None else c.configs:
        p = c.params_for(cfg)
        where = f" (config '{cfg.name}')" if len(c.configs) > 1 else ""
        for key, val in (("schemes", p["scheme"]), ("timers", p["timer"]), ("datatypes", p["datatype"]),
                         ("redops", p["redop"])):
            if val not in allowed(key):
                raise MtError(f"unknown {key[:-1]} '{val}'{where} (allowed: {', '.join(allowed(key))})")
        for np in c.np:
            if p["root"] >= np:
                raise MtError(f"invalid root {p['root']}{where}: the job has {np} ranks (allowed: 0..{np - 1})")
