"""Campaign specification: what to run, how often, on which configurations.

A campaign is read from TOML (see examples/*.toml and docs/campaigns.md) and/or
command-line flags, validated completely before anything is launched, and
written back as ``campaign.toml`` (the spec as run) into the campaign directory.

Two kinds of keys:

* campaign keys (name, kind, np, mpiruns, seed, order, timeout_s, and the
  defaults for launcher, mpicc, env of the configurations);
* measurement parameters of the campaign's kind of run (for `bench`: ops,
  msizes, nrep, scheme, timer, sync, ...), passed to the C core: the rows of
  ``params/params.def`` (`mpitempo.io.params`) say for each its type, range,
  default and flag. A ``[[config]]`` may override any of them, so a campaign
  can compare schemes or sync algorithms as well as MPI libraries.
"""
from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mpitempo.errors import MtError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
ORDERS = ("interleave", "random")


def _int_check(lo: int, hi: int = 2**31 - 1):
    def check(key, v):
        if isinstance(v, bool) or not isinstance(v, int):
            try:
                v = int(str(v), 10)
            except ValueError:
                raise MtError(f"invalid {key} '{v}': expected an integer >= {lo}") from None
        if not lo <= v <= hi:
            raise MtError(f"invalid {key} {v}: must be an integer >= {lo}"
                          + (f" and <= {hi}" if hi < 2**31 - 1 or v > hi else ""))
        return v
    return check


def _choice(*allowed):
    def check(key, v):
        v = str(v)
        if v not in allowed:
            raise MtError(f"invalid {key} '{v}' (allowed: {', '.join(allowed)})")
        return v
    return check


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_table(value, where: str) -> dict[str, str]:
    """An `env` table: names a process environment can hold, string/number/bool values."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MtError(f"invalid env{where} {_short(value)}: expected a table such as env = {{ NAME = \"value\" }}")
    out = {}
    for k, v in value.items():
        if not _ENV_NAME.match(str(k)):
            raise MtError(f"invalid environment variable name {_short(k)}{where}: "
                          "use letters, digits and '_' (not starting with a digit)")
        if isinstance(v, bool):
            v = "1" if v else "0"
        if not isinstance(v, (str, int, float)):
            raise MtError(f"invalid value of env {k}{where} {_short(v)}: expected a string, number or boolean, "
                          f"not {'an array' if isinstance(v, list) else 'a table' if isinstance(v, dict) else 'that'}")
        if "\0" in str(v):
            raise MtError(f"invalid value of env {k}{where} {_short(v)}: expected a string without NUL bytes")
        out[str(k)] = str(v)
    return out


def _opt_str(value, key: str, where: str = "") -> str | None:
    """An optional string key (mpicc, launcher, description): anything else is an error."""
    if value is None:
        return None
    if not isinstance(value, str) or "\0" in value:
        raise MtError(f"invalid {key}{where} {_short(value)}: expected a string")
    if not value.strip() and key in _NONEMPTY:   # e.g. --launcher "$L" with L unset: not the default
        raise MtError(f"invalid {key}{where} {_short(value)}: expected {_NONEMPTY[key]} (leave it out for the default)")
    return value


_NONEMPTY = {"mpicc": "the path or name of an MPI compiler wrapper",
             "launcher": "'mpiexec', 'srun' or a command template with {cmd}",
             "governor": "the name of a cpufreq governor, e.g. 'performance'"}


def _short(v) -> str:
    t = repr(v)
    return t if len(t) <= 60 else t[:57] + "..."


CAMPAIGN_DEFAULTS = {
    "name": "campaign",
    "kind": "bench",
    "np": 2,
    "mpiruns": 10,
    "seed": None,
    "order": "interleave",
    "timeout_s": 600.0,
    "launcher": None,
    "mpicc": None,
    "env": {},
    "binding": "core",
    "cflags": None,
    "governor": None,     # cpufreq governor for the whole campaign (runner/dvfs.py), restored afterwards
    "max_mpiruns": None,  # with precision: add mpiruns up to this many while a row's CI is wider (runner/adaptive.py)
    "platform": None,     # a SimGrid platform file: the runs are simulated (docs/simulation.md)
    "platform_oversubscribe": False,   # allow more ranks than the platform's cores
    "platform_ppn": None,  # ranks per simulated host (default: one per core)
}
# `run` without --precision and without a fixed --nrep: adaptive repetitions to +-1%, at most 1 s of
# measuring per experiment and mpirun beyond the floor (docs/methods.md, "Adaptive repetitions")
ADAPTIVE_PRECISION = "1%"
ADAPTIVE_EXP_TIME = "1s"
CONFIG_BASE_KEYS = {"name", "mpicc", "launcher", "env", "description", "binding", "cflags", "platform",
                    "platform_oversubscribe", "platform_ppn"}
BINDINGS = ("core", "none")   # of the default launcher (Hunold and Carpen-Amarie 2016, Fig. 5: pinning)


@dataclass
class Config:
    name: str
    mpicc: str | None = None
    launcher: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    params: dict = field(default_factory=dict)   # overrides of measurement parameters
    binding: str = "core"                         # the default launcher binds ranks to cores, or not
    cflags: str | None = None                     # build the core with exactly these C flags
    platform: str | None = None                   # SimGrid platform file (absolute): a simulated run
    platform_oversubscribe: bool = False          # more ranks than the platform has cores
    platform_ppn: int | None = None               # ranks per simulated host (None: one per core)

    @property
    def platform_args(self) -> dict:
        """make_launch's platform arguments."""
        return {"platform": self.platform, "platform_oversubscribe": self.platform_oversubscribe,
                "platform_ppn": self.platform_ppn}

    @property
    def build_mpicc(self) -> str | None:
        """The MPI compiler this configuration's core is built with: a simulated platform defaults
        to SimGrid's smpicc."""
        return self.mpicc or ("smpicc" if self.platform else None)


@dataclass
class Campaign:
    name: str
    kind: str
    np: list[int]
    mpiruns: int
    seed: int | None
    order: str
    timeout_s: float
    configs: list[Config]
    params: dict                                  # measurement parameters of the kind (params.def rows)
    governor: str | None = None                   # cpufreq governor set for the campaign (runner/dvfs.py)
    max_mpiruns: int | None = None                # adaptive mpiruns: the cap (mpiruns is the first look)

    def __getattr__(self, key):                   # c.nrep, c.ops, c.scheme, ...
        params = self.__dict__.get("params")
        if params is not None and key in params:
            return params[key]
        raise AttributeError(key)

    @property
    def kind_obj(self):
        from mpitempo import kinds

        return kinds.get(self.kind)

    def params_for(self, cfg: Config) -> dict:
        p = dict(self.params)
        p.update(cfg.params)
        return p

    def core_args(self, cfg: Config) -> list[str]:
        """The flags of the C core for one configuration."""
        return self.kind_obj.core_args(self.params_for(cfg))

    def to_toml(self) -> str:
        lines = ["# mpitempo campaign, as run (written by mpitempo)"]
        for k in ("name", "kind", "np", "mpiruns", "max_mpiruns", "seed", "order", "timeout_s", "governor"):  # binding, cflags: per config
            v = getattr(self, k)
            if v is not None and not (k == "kind" and v == "bench"):
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
            if c.binding != "core":
                lines.append(f"binding = {_toml_value(c.binding)}")
            if c.cflags is not None:
                lines.append(f"cflags = {_toml_value(c.cflags)}")
            if c.platform:
                lines.append(f"platform = {_toml_value(c.platform)}")
            if c.platform_oversubscribe:
                lines.append("platform_oversubscribe = true")
            if c.platform_ppn is not None:
                lines.append(f"platform_ppn = {c.platform_ppn}")
            for k, v in c.params.items():
                lines.append(f"{k} = {_toml_value(v)}")
            if c.env:
                lines.append("env = { " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}"
                                                    for k, v in c.env.items()) + " }")
        return "\n".join(lines) + "\n"


def _toml_key(k: str) -> str:
    return k if re.match(r"^[A-Za-z0-9_-]+$", k) else _toml_value(k)


_TOML_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):   # a TOML basic string: backslash, quote and control characters escaped
        return '"' + "".join(_TOML_ESC.get(ch) or (f"\\u{ord(ch):04X}" if ch < " " and ch != "\t" or ch == "\x7f"
                                                   else ch) for ch in v) + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def load_toml(path: str | Path, kind: str | None = None) -> dict:
    """A campaign file as a dict, every key known and of its TOML type (io.toml_schema)."""
    from mpitempo.io.safeload import load_toml_text
    from mpitempo.io.toml_schema import check_campaign

    p = Path(path)
    if not str(path).strip():
        raise MtError(f"invalid campaign file {str(path)!r}: give the path of a .toml file")
    if not p.exists():
        raise MtError(f"campaign file '{path}' not found")
    text = load_toml_text(p, what=f"campaign file '{path}'")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"campaign file '{path}' is not valid TOML: {e}") from None
    except RecursionError:
        raise MtError(f"campaign file '{path}' is not valid TOML: nested too deeply") from None
    check_campaign(doc, f"campaign file '{path}'", kind)
    return doc


def build_campaign(file_spec: dict | None, overrides: dict | None = None, kind: str | None = None) -> Campaign:
    """Merge defaults < kind defaults < file < flags, check every key and value, return the spec."""
    from mpitempo import kinds

    raw = copy.deepcopy(file_spec or {})
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    kind_name = kind or overrides.get("kind") or raw.get("kind") or "bench"
    if not isinstance(kind_name, str):
        raise MtError(f"invalid kind '{kind_name}' (allowed: {', '.join(kinds.NAMES)})")
    k = kinds.get(kind_name)
    pnames = list(k.params())
    top_keys = set(CAMPAIGN_DEFAULTS) | set(pnames) | {"config"}
    config_keys = CONFIG_BASE_KEYS | set(pnames)
    stray = sorted(set(overrides) - top_keys - {"kind"})
    if stray:
        raise MtError(f"option --{stray[0].replace('_', '-')} does not apply to a campaign of kind '{kind_name}'")
    unknown = sorted(set(raw) - top_keys)
    if unknown:
        raise MtError(f"unknown key '{unknown[0]}' in campaign file (allowed: {', '.join(sorted(top_keys))})")
    d = dict(CAMPAIGN_DEFAULTS)
    d.update({key: v for key, v in raw.items() if key in CAMPAIGN_DEFAULTS})
    d.update({key: v for key, v in overrides.items() if key in CAMPAIGN_DEFAULTS})

    params = {}
    for key in pnames:
        if key in overrides:   # a flag: errors name the flag the user typed
            if raw.get(key) is not None:   # the file's value is overridden, but a bad one is still an error
                k.normalise(key, raw[key])
            params[key] = k.normalise(key, overrides[key], label="--" + key.replace("_", "-"))
        else:
            v = raw.get(key, k.default(key))
            params[key] = None if v is None else k.normalise(key, v)
    if "precision" in pnames and "precision" not in overrides and raw.get("precision") is None:
        # adaptive repetitions by default (docs/methods.md, "Adaptive repetitions"), unless a fixed nrep was asked for
        nrep_given = "nrep" in overrides or raw.get("nrep") is not None
        params["precision"] = "off" if nrep_given else ADAPTIVE_PRECISION
    if "exp_time" in pnames and params.get("exp_time") is None and params.get("precision") not in (None, "off"):
        # adaptive repetitions stop an experiment after --exp-time unless one was given (docs/methods.md)
        params["exp_time"] = ADAPTIVE_EXP_TIME

    check_np = _int_check(1, 1 << 20)
    np_raw = d["np"] if isinstance(d["np"], list) else [d["np"]]
    nps = [check_np("np", x) for x in np_raw]
    if not nps:
        raise MtError("invalid np []: give at least one process count")
    dup = sorted({x for x in nps if nps.count(x) > 1})
    if dup:
        raise MtError(f"invalid np {nps}: {dup[0]} is listed twice (each process count once; "
                      "more mpiruns with --mpiruns)")
    order = _choice(*ORDERS)("order", d["order"])
    try:
        if isinstance(d["timeout_s"], bool):   # float(True) would be a timeout of 1 s
            raise TypeError
        timeout = float(d["timeout_s"])
    except (TypeError, ValueError):
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected seconds > 0") from None
    if not 0 < timeout < float("inf"):
        raise MtError(f"invalid timeout_s '{d['timeout_s']}': expected a finite number of seconds > 0")
    seed = None if d["seed"] is None else _int_check(0, 2**63 - 1)("seed", d["seed"])
    name = str(d["name"])
    if not _NAME.match(name):
        raise MtError(f"invalid campaign name '{name}': use letters, digits, '_', '.', '+', '-'")

    def binding_of(v, where=""):
        if v not in BINDINGS:
            raise MtError(f"invalid binding '{v}'{where} (allowed: {', '.join(BINDINGS)})")
        return v

    def cflags_of(v, where=""):
        if v is not None and not isinstance(v, str):
            raise MtError(f"invalid cflags {v!r}{where}: expected a string of C compiler flags, e.g. \"-O2\"")
        return v

    def platform_of(v, over, ppn=None, where=""):
        """A checked platform file (absolute path), every np fitting it: before anything is created."""
        if v is None:
            return None
        if not isinstance(v, str):
            raise MtError(f"invalid platform {_short(v)}{where}: expected the path of a SimGrid platform XML file")
        if not isinstance(over, bool):
            raise MtError(f"invalid platform_oversubscribe {_short(over)}{where}: expected true or false")
        from mpitempo.io.platform import check_np, read_platform
        plat = read_platform(v)
        for n in nps:
            check_np(plat, n, over, ppn)
        return plat.path

    def ppn_of(v, where=""):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise MtError(f"invalid platform_ppn {_short(v)}{where}: expected an integer >= 1 (ranks per host)")
        return v

    d["mpicc"] = _opt_str(d["mpicc"], "mpicc")
    d["launcher"] = _opt_str(d["launcher"], "launcher")
    d["env"] = _env_table(d["env"], "")
    configs_raw = raw.get("config")
    configs: list[Config] = []
    if configs_raw is None:
        configs.append(Config(name="default", mpicc=d["mpicc"], launcher=d["launcher"], env=d["env"],
                              binding=binding_of(d["binding"]), cflags=cflags_of(d["cflags"]),
                              platform=platform_of(d["platform"], d["platform_oversubscribe"],
                                                   ppn_of(d["platform_ppn"])),
                              platform_oversubscribe=bool(d["platform_oversubscribe"]),
                              platform_ppn=ppn_of(d["platform_ppn"])))
    else:
        if not isinstance(configs_raw, list) or not configs_raw:
            raise MtError("invalid 'config': expected one or more [[config]] tables")
        for i, c in enumerate(configs_raw):
            if not isinstance(c, dict):
                raise MtError(f"invalid [[config]] #{i + 1}: expected a table")
            bad = sorted(set(c) - config_keys)
            if bad:
                raise MtError(f"unknown key '{bad[0]}' in [[config]] #{i + 1} "
                              f"(allowed: {', '.join(sorted(config_keys))})")
            if "name" not in c:
                raise MtError(f"[[config]] #{i + 1} has no name")
            if not isinstance(c["name"], str):
                raise MtError(f"invalid name of [[config]] #{i + 1} {_short(c['name'])}: expected a string")
            where = f" in [[config]] '{c['name']}'"
            env = dict(d["env"])
            env.update(_env_table(c.get("env"), where))
            c = dict(c, mpicc=_opt_str(c.get("mpicc", d["mpicc"]), "mpicc", where),
                     launcher=_opt_str(c.get("launcher", d["launcher"]), "launcher", where),
                     description=_opt_str(c.get("description", ""), "description", where))
            # a flag on the command line wins over the configuration's value
            cparams = {key: k.normalise(key, v, f" in [[config]] '{c['name']}'") for key, v in c.items()
                       if key in pnames and key not in overrides}
            configs.append(Config(name=c["name"], mpicc=c["mpicc"],
                                  launcher=overrides.get("launcher") or c["launcher"],
                                  env=env, description=c["description"] or "", params=cparams,
                                  binding=binding_of(c.get("binding", d["binding"]), where),
                                  cflags=cflags_of(c.get("cflags", d["cflags"]), where),
                                  platform=platform_of(overrides.get("platform") or c.get("platform", d["platform"]),
                                                       c.get("platform_oversubscribe", d["platform_oversubscribe"]),
                                                       ppn_of(c.get("platform_ppn", d["platform_ppn"]), where),
                                                       where),
                                  platform_ppn=ppn_of(c.get("platform_ppn", d["platform_ppn"]), where),
                                  platform_oversubscribe=bool(c.get("platform_oversubscribe",
                                                                    d["platform_oversubscribe"]))))
    if not any(c.platform for c in configs):   # simulation-only settings of a campaign that simulates nothing
        from mpitempo.io.platform import check_platform_flags

        check_platform_flags(None, platform_ppn=overrides.get("platform_ppn"),
                             platform_oversubscribe=overrides.get("platform_oversubscribe") or None)
        for key in ("platform_ppn", "platform_oversubscribe"):
            tables = [raw] + [c for c in (configs_raw or []) if isinstance(c, dict)]
            if any(t.get(key) not in (None, False) for t in tables):
                raise MtError(f"{key} needs platform = \"FILE.xml\" (a simulated platform), which no configuration "
                              "of the campaign has: remove it or add the platform")
    seen = set()
    for c in configs:
        if not _NAME.match(c.name):
            raise MtError(f"invalid configuration name '{c.name}': use letters, digits, '_', '.', '+', '-'")
        if c.name in seen:
            raise MtError(f"duplicate configuration name '{c.name}'")
        seen.add(c.name)
    from mpitempo.io.profiles import apply as apply_profiles

    # OSU/IMB names in ops, --like osu|imb: resolved and applied (or refused) before anything is created
    apply_profiles(kind_name, params, configs, raw, overrides, nps)

    mpiruns = _int_check(1, 100000)("mpiruns", d["mpiruns"])
    max_mpiruns = None if d["max_mpiruns"] is None else _int_check(1, 100000)("max_mpiruns", d["max_mpiruns"])
    if max_mpiruns is not None:
        from mpitempo.io.params import percent_value
        if kind_name != "bench":
            raise MtError(f"max_mpiruns applies to campaigns of kind 'bench' (this one: '{kind_name}')")
        if max_mpiruns < mpiruns:
            raise MtError(f"invalid max_mpiruns {max_mpiruns}: must be >= mpiruns ({mpiruns}), the first look")
        if not all(percent_value(c_params.get("precision") or "off") > 0 for c_params in
                   [params, *({**params, **cfg.params} for cfg in configs)]):
            raise MtError(f"max_mpiruns {max_mpiruns} adds mpiruns until the precision is reached: it needs a "
                          "precision (e.g. --precision 1%), not 'off' (or a fixed --nrep without --precision)")
        from mpitempo.stats.describe import looks_level, run_looks, runs_needed
        looks = run_looks(mpiruns, max_mpiruns)
        need = runs_needed(looks_level(len(looks)))
        if max_mpiruns > mpiruns and max_mpiruns < need:
            raise MtError(f"invalid max_mpiruns {max_mpiruns}: with {len(looks)} looks ({', '.join(map(str, looks))} "
                          f"mpiruns) each interval has the level {looks_level(len(looks)):.2%}, which needs at least "
                          f"{need} run medians: give max_mpiruns >= {need}")
    return Campaign(name=name, kind=kind_name, np=nps, mpiruns=mpiruns,
                    seed=seed, order=order, timeout_s=timeout, configs=configs, params=params,
                    governor=_opt_str(d["governor"], "governor"), max_mpiruns=max_mpiruns)
