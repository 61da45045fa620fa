"""The measurement parameters, defined once in ``params/params.def``.

That file is an X-macro table compiled into the C core (its option parsers and
usage text are generated from it) and read here, so that the campaign parser
(`io.campaign`) and the click options of the commands (`options.param_options`)
come from the same rows. One row per line::

    MT_PARAM(name, type, default, unit, min, max, apps, help)

``type`` is INT, INT_AUTO, FLOAT, STR, BOOL, DURATION, SIZE, LIST or PERCENT; ``default`` "" means
unset; ``apps`` names the executables (MT_APP_BENCH | MT_APP_CLOCKS |
MT_APP_PINGPONG) that take the parameter. A name may appear once per app.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from mpitempo.errors import MtError

TYPES = ("INT", "FLOAT", "STR", "BOOL", "DURATION", "SIZE", "LIST", "INT_AUTO", "PERCENT")
# INT_AUTO: an INT or "auto"; PERCENT: "1%" or "off" (min/max in %), read as a fraction by percent_value
APPS = {"MT_APP_BENCH": "bench", "MT_APP_CLOCKS": "clocks", "MT_APP_PINGPONG": "pingpong", "MT_APP_TREE": "tree",
        "MT_APP_LOGP": "logp"}
_ROW = re.compile(r"^\s*MT_PARAM\((.*)\)\s*$")
_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[^,]+?)\s*(?:,|$)')
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|ns)?\s*$")
_UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, None: 1.0}


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: str | None
    unit: str
    min: float
    max: float
    apps: tuple[str, ...]
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value, where: str = "", label: str | None = None):
        """Validate a value from TOML or a flag; returns it normalised (int, float, bool or str).
        Errors name ``label`` (e.g. the flag the user typed) or the TOML key."""
        key = f"{label or self.name}{where}"
        if self.type == "BOOL":
            if not isinstance(value, bool):
                raise MtError(f"invalid {key} '{value}': expected true or false")
            return value
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise MtError(f"invalid {key} '{value}': expected {self.expects()}")
        if self.type == "INT_AUTO" and isinstance(value, str) and value.strip() == "auto":
            return "auto"
        if self.type in ("INT", "INT_AUTO"):
            lo, hi = int(self.min), int(min(self.max, 2**63 - 1))
            try:
                v = value if isinstance(value, int) else int(str(value).strip(), 10)
            except ValueError:
                raise MtError(f"invalid {key} '{value}': expected an integer >= {lo}"
                              + (" or auto" if self.type == "INT_AUTO" else "")) from None
            if not lo <= v <= hi:
                raise MtError(f"invalid {key} {v}: must be an integer >= {lo}"
                              + (f" and <= {hi}" if hi < 2**31 - 1 or v > hi else ""))
            return v
        if self.type == "FLOAT":
            try:
                v = float(value)
            except ValueError:
                raise MtError(f"invalid {key} '{value}': expected a number") from None
            if not (math.isfinite(v) and self.min <= v <= self.max):
                if 0 < self.min <= 1e-6:
                    raise MtError(f"invalid {key} {v:g}: must be > 0" + (f" and <= {self.max:g}" if self.max < 1e9 else ""))
                raise MtError(f"invalid {key} {v:g}: must be a number >= {self.min:g}"
                              + (f" and <= {self.max:g}" if self.max < 1e9 else ""))
            return v
        if self.type == "PERCENT":
            percent_value(value, key, self.min, self.max)
            return value
        if self.type == "DURATION":
            secs = parse_duration(value, key)
            self._in_range(key, secs, value)
            return str(value).strip()
        if self.type == "SIZE":
            from mpitempo.io.sizes import parse_size

            b = parse_size(value)
            self._in_range(key, b, value)
            return b
        s = str(value).strip()
        if not s:
            raise MtError(f"invalid {key} '{value}': expected a non-empty {'list' if self.type == 'LIST' else 'string'}")
        return s

    def _in_range(self, key, v, raw):
        if not math.isfinite(v) or not (self.min <= v <= self.max):
            raise MtError(f"invalid {key} '{raw}': must be {self.range_text()}")

    def range_text(self) -> str:
        u = f" {self.unit}" if self.unit else ""
        lo = int(self.min) if self.type in ("INT", "INT_AUTO", "SIZE") else self.min
        hi = int(self.max) if self.type in ("INT", "INT_AUTO", "SIZE") else self.max
        return f"between {lo:g}{u} and {hi:g}{u}"

    def expects(self) -> str:
        return {"INT": "an integer", "INT_AUTO": "an integer or auto", "FLOAT": "a number",
                "PERCENT": "a percentage such as 1% or 0.5%, or off", "DURATION": "a duration such as 1s, 200ms, 20us",
                "SIZE": "a size in bytes such as 64, 1K, 4M", "LIST": "a comma-separated list",
                "STR": "a string", "BOOL": "true or false"}[self.type]


_PERCENT = re.compile(r"^([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)%$")


def percent_value(value, key: str = "precision", lo_pct: float = 0.01, hi_pct: float = 50.0) -> float:
    """A PERCENT parameter's value as a fraction: "1%" -> 0.01, "off" -> 0.0 (the C core's
    mt_parse_percent reads the same strings); MtError naming the value and what is allowed."""
    text = value if isinstance(value, str) else None
    if text == "off":
        return 0.0
    m = _PERCENT.match(text) if text is not None else None
    if not m:
        raise MtError(f"invalid {key} '{value}': expected a percentage such as 1% or 0.5%, or off")
    v = float(m.group(1))
    if not (math.isfinite(v) and lo_pct <= v <= hi_pct):
        raise MtError(f"invalid {key} '{value}': expected a percentage between {lo_pct:g}% and {hi_pct:g}%, or off")
    return v / 100.0


DURATION_MAX_S = 1e9   # MT_DURATION_MAX_S of the core


def parse_duration(value, key: str = "duration") -> float:
    """'20us' -> 2e-5 s. A unit (s, ms, us, ns) is required except for 0: a bare 20 is a typo waiting
    to happen (20 s per measurement). NaN, infinities and values above DURATION_MAX_S are errors."""
    if isinstance(value, bool):
        raise MtError(f"invalid {key} '{value}': expected a duration with a unit such as 1s, 200ms, 20us")
    if isinstance(value, (int, float)) and value == 0:
        return 0.0
    m = _DURATION.match(str(value))
    if not m:
        raise MtError(f"invalid {key} '{value}': expected a finite duration with a unit such as 1s, 200ms, 20us")
    v = float(m.group(1))
    if m.group(2) is None and v != 0:
        raise MtError(f"invalid {key} '{value}': give a unit (s, ms, us or ns), e.g. {m.group(1)}s or {m.group(1)}us")
    secs = v * _UNIT_S[m.group(2)]
    if not math.isfinite(secs) or secs > DURATION_MAX_S:
        raise MtError(f"invalid {key} '{value}': longer than the largest duration, {DURATION_MAX_S:g}s")
    return secs


def _tokens(args: str) -> list[str]:
    out, pos = [], 0
    while pos < len(args):
        m = _TOKEN.match(args, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse '{args[pos:]}'")
        out.append(m.group(1).strip())
        pos = m.end()
    return out


def _string(tok: str) -> str:
    if not (len(tok) >= 2 and tok[0] == tok[-1] == '"'):
        raise ValueError(f"expected a string literal, got {tok}")
    return tok[1:-1].replace('\\"', '"').replace("\\\\", "\\")


def parse_def(text: str, source: str = "params.def") -> list[Param]:
    """Rows of a params.def text; a malformed row is an error naming its line."""
    rows: list[Param] = []
    seen: set[tuple[str, str]] = set()
    for no, line in enumerate(text.splitlines(), 1):
        m = _ROW.match(line)
        if not m:
            if line.strip().startswith("MT_PARAM"):
                raise MtError(f"{source}:{no}: malformed MT_PARAM row")
            continue
        try:
            t = _tokens(m.group(1))
            if len(t) != 8:
                raise ValueError(f"expected 8 fields, got {len(t)}")
            name, typ = t[0], t[1]
            if not re.match(r"^[a-z_][a-z0-9_]*$", name):
                raise ValueError(f"bad name '{name}'")
            if typ not in TYPES:
                raise ValueError(f"unknown type '{typ}' (allowed: {', '.join(TYPES)})")
            apps = tuple(APPS[a.strip()] for a in t[6].split("|"))
            default = _string(t[2])
            p = Param(name=name, type=typ, default=default if default != "" else None, unit=_string(t[3]),
                      min=float(t[4]), max=float(t[5]), apps=apps, help=_string(t[7]))
        except (ValueError, KeyError) as e:
            raise MtError(f"{source}:{no}: malformed MT_PARAM row: {e}") from None
        for a in apps:
            if (name, a) in seen:
                raise MtError(f"{source}:{no}: parameter '{name}' defined twice for {a}")
            seen.add((name, a))
        rows.append(p)
    return rows


def def_path() -> Path:
    from mpitempo.build import source_root

    return source_root() / "params" / "params.def"


@functools.lru_cache(maxsize=None)
def table() -> tuple[Param, ...]:
    p = def_path()
    try:
        return tuple(parse_def(p.read_text(), str(p)))
    except OSError as e:
        raise MtError(f"cannot read the parameter table '{p}': {e.strerror}") from None


def for_app(app: str) -> dict[str, Param]:
    """name -> Param of one executable ('bench', 'clocks', 'pingpong'), in table order."""
    return {p.name: p for p in table() if app in p.apps}
