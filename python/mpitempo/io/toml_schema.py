"""The TOML types of every key of every TOML file mpitempo reads, in one place.

TOML has types (string, integer, float, boolean, array, table, date), and a value of the wrong
type is refused here, before anything converts it: ``seed = "7"``, ``nrep = 2.0``, ``nrep = true``
(a boolean is an int in Python), ``name = 3``, ``timeout_s = "10"``, ``per_rank = 1``,
``ops = "allreduce"`` were all silently converted. The checks run where a file is read
(`check_campaign` for campaign files and a campaign directory's campaign.toml, `check_tree` for tree
files), so the one-line error names the file, the key with its table path, the value as given
(escaped) and the type allowed; the values of the right type then go through the range and format
checks of `io.campaign` / `io.params` / `io.tree` as before.

Types (docs/campaigns.md, "Types of the keys"):

* an integer key takes a TOML integer only (not ``2.0``, not ``"2"``, not ``true``);
* a number key (a float: ``timeout_s``, ``rt_slack``, ...) takes a float or an integer (``1`` is 1.0);
* a string key takes a string only (``name = 3`` is refused, not turned into "3");
* a boolean key takes ``true`` or ``false`` only (not ``1``, not ``"true"``);
* a size (``cache_size``, ``msize``) takes an integer (bytes) or a string with a suffix (``"4K"``);
* a duration takes a string with a unit (``"20us"``) or the number 0;
* ``warmup`` (of bench) takes an integer or the string ``"auto"``;
* a list parameter stored as a string (``msizes``, ``delay``, ``wait``, ...) takes an array of
  strings and numbers or one comma-separated string (``"8,1K"``, ranges ``"8-1M"``);
* a list parameter kept as a list (``ops``, trace's ``app``) takes an array of strings only;
* ``np`` takes an integer or an array of integers; ``env`` a table whose values are strings,
  numbers or booleans (an environment holds strings: ``OMP_NUM_THREADS = 4`` is "4", ``true`` "1");
  ``config`` one or more ``[[config]]`` tables.

A key that the campaign parser accepts but that has no type here is an internal error
(`tests/py/test_toml_types.py` enumerates every key of every kind from these tables).
"""
from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Callable

from mpitempo.errors import MtError


# -- showing a value as given ------------------------------------------------------------------------

def _esc_char(ch: str) -> str:
    o = ord(ch)
    if ch == "\\":
        return "\\\\"
    if ch == "'":
        return "\\'"
    if o < 0x20 or 0x7f <= o < 0xa0:
        return f"\\x{o:02x}"
    if not ch.isprintable():
        return f"\\u{o:04x}" if o <= 0xffff else f"\\U{o:08x}"
    return ch


def shown(v, limit: int = 60) -> str:
    """A TOML value as the user wrote it, one line, control characters as \\xNN: '7', 2.0, true,
    [1, 'a'], { A = 1 }."""
    if isinstance(v, bool):
        t = "true" if v else "false"
    elif isinstance(v, str):
        t = "'" + "".join(_esc_char(c) for c in v) + "'"
    elif isinstance(v, float):
        t = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    elif isinstance(v, int):
        t = str(v)
    elif isinstance(v, list):
        t = "[" + ", ".join(shown(x, limit) for x in v) + "]"
    elif isinstance(v, dict):
        t = "{ " + ", ".join(f"{_key(k)} = {shown(x, limit)}" for k, x in v.items()) + " }" if v else "{}"
    elif isinstance(v, (datetime.date, datetime.time)):
        t = v.isoformat()
    else:  # pragma: no cover - tomllib makes nothing else
        t = "".join(_esc_char(c) for c in repr(v))
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _key(k) -> str:
    k = str(k)
    return k if k and all(c.isalnum() and c.isascii() or c in "_-" for c in k) else shown(k)


_TYPE_NAMES = ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"), (list, "an array"),
               (dict, "a table"), ((datetime.date, datetime.time), "a date or time"))   # bool before int


def type_name(v) -> str:
    """'a string', 'an integer', ... of a TOML value."""
    for t, name in _TYPE_NAMES:
        if isinstance(v, t):
            return name
    return "a " + type(v).__name__  # pragma: no cover


# -- the types -------------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return _is_int(v) or isinstance(v, float)


@dataclass(frozen=True)
class TomlType:
    name: str                           # what the error says is allowed
    ok: Callable[[object], bool]        # whether a value has this type
    bad_examples: tuple = ()            # convertible values of the wrong type (tests/py/test_toml_types.py)


INTEGER = TomlType("an integer", _is_int, ("7", 2.0, True))
NUMBER = TomlType("a number (an integer or a float)", _is_num, ("10", True, False))
STRING = TomlType("a string", lambda v: isinstance(v, str), (3, True, 1.5, ["x"]))
BOOLEAN = TomlType("true or false", lambda v: isinstance(v, bool), (1, 0, "true", "false"))
SIZE = TomlType("an integer (bytes) or a string such as \"4K\"", lambda v: _is_int(v) or isinstance(v, str),
                (True, 4096.0, [64]))
DURATION = TomlType("a string with a unit such as \"20us\" (or 0)",
                    lambda v: _is_num(v) or isinstance(v, str), (True, ["1s"]))
PERCENT = TomlType("a string such as \"1%\" or \"off\"", lambda v: isinstance(v, str), (1, 0.01, True, ["1%"]))
INT_OR_AUTO = TomlType("an integer or the string \"auto\"", lambda v: _is_int(v) or v == "auto",
                       ("5", 5.0, True, "Auto"))
LIST_STR = TomlType("an array of strings and numbers or one comma-separated string",
                    lambda v: isinstance(v, str) or isinstance(v, list) and all(
                        isinstance(x, str) or _is_num(x) for x in v), (True, 64, [True], [["8"]]))
STRINGS = TomlType("an array of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                   ("allreduce", "a,b", [1], True))
NP = TomlType("an integer or an array of integers", lambda v: _is_int(v) or isinstance(v, list) and all(
    _is_int(x) for x in v), ("2", 2.0, True, ["2"], [2.0], [True]))
ENV = TomlType("a table such as env = { NAME = \"value\" }", lambda v: isinstance(v, dict), ("X=1", ["X=1"], 1))
ENV_VALUE = TomlType("a string, number or boolean", lambda v: isinstance(v, (str, int, float)),
                     ([1, 2], {"b": 1}))
CONFIGS = TomlType("one or more [[config]] tables",
                   lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), ("x", {"name": "a"}, [1]))
INT_ARRAY = TomlType("an array of integers", lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
                     ("1,2", [1.0], ["1"], [True]))
STR_ARRAY = TomlType("an array of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                     ("a,b", [1], True))
CHILDREN = TomlType("a table of arrays of node numbers such as { 0 = [1, 2] }",
                    lambda v: isinstance(v, dict) and all(isinstance(x, list) and all(_is_int(c) for c in x)
                                                          for x in v.values()),
                    ("0:1,2", {"0": ["1"]}, {"0": [1.0]}, {"0": 1}))

# the parameters of params.def, by their type there
PARAM_TYPES = {"INT": INTEGER, "FLOAT": NUMBER, "STR": STRING, "BOOL": BOOLEAN, "DURATION": DURATION,
               "SIZE": SIZE, "LIST": LIST_STR, "INT_AUTO": INT_OR_AUTO, "PERCENT": PERCENT}

# the campaign keys (io.campaign.CAMPAIGN_DEFAULTS) and the keys of a [[config]] besides parameters
CAMPAIGN_TYPES = {
    "name": STRING, "kind": STRING, "np": NP, "mpiruns": INTEGER, "max_mpiruns": INTEGER, "seed": INTEGER, "order": STRING,
    "timeout_s": NUMBER, "launcher": STRING, "mpicc": STRING, "env": ENV, "binding": STRING, "cflags": STRING,
    "governor": STRING, "platform": STRING, "platform_oversubscribe": BOOLEAN, "platform_ppn": INTEGER,
    "config": CONFIGS,
}
CONFIG_TYPES = {
    "name": STRING, "mpicc": STRING, "launcher": STRING, "env": ENV, "description": STRING, "binding": STRING,
    "cflags": STRING, "platform": STRING, "platform_oversubscribe": BOOLEAN, "platform_ppn": INTEGER,
}
# tree files (io.tree.TOML_KEYS, docs/tree.md)
TREE_TYPES = {
    "name": STRING, "description": STRING, "shape": STRING, "k": INTEGER, "fanout": INT_ARRAY,
    "parents": INT_ARRAY, "children": CHILDREN, "inter": STRING, "intra": STRING, "ranks": INT_ARRAY,
    "hosts": STR_ARRAY, "down_order": STRING,
}


def param_types(kind) -> dict[str, TomlType]:
    """The type of each parameter key of a kind of run."""
    out = {}
    for key, p in kind.params().items():
        out[key] = STRINGS if key in kind.list_keys else PARAM_TYPES[p.type]
    return out


# -- the checks ------------------------------------------------------------------------------------

def _refuse(label: str, key_text: str, v, t: TomlType) -> MtError:
    got = type_name(v)
    if isinstance(v, list) and v:
        got += " holding " + ", ".join(dict.fromkeys(type_name(x) for x in v))
    return MtError(f"{label}: invalid {key_text} {shown(v)}: expected {t.name}, not {got}")


def _check_table(d: dict, types: dict[str, TomlType], label: str, where: str, key_text=None) -> None:
    for key, v in d.items():
        t = types.get(key)
        if t is None:
            continue   # unknown keys: refused by the caller, with the allowed ones
        if not t.ok(v):
            raise _refuse(label, key_text(key) if key_text else f"{key}{where}", v, t)
        if t is ENV:
            for name, x in v.items():
                if not ENV_VALUE.ok(x):
                    raise MtError(f"{label}: invalid value of env {name}{where} {shown(x)}: expected "
                                  f"{ENV_VALUE.name}, not {type_name(x)}")


def check_campaign(doc: dict, source: str, kind_name: str | None = None) -> None:
    """Every key of a campaign file (or a campaign directory's campaign.toml) known and of its type;
    MtError names `source` (e.g. "campaign file 'c.toml'"), the key and the value as given."""
    from mpitempo import kinds

    if "kind" in doc and not STRING.ok(doc["kind"]):
        raise _refuse(source, "kind", doc["kind"], STRING)
    name = doc.get("kind") or kind_name or "bench"
    if name not in kinds.NAMES:
        raise MtError(f"{source}: unknown kind {shown(name)} (allowed: {', '.join(kinds.NAMES)})")
    ptypes = param_types(kinds.get(name))
    top = {**CAMPAIGN_TYPES, **ptypes}
    unknown = sorted(set(doc) - set(top))
    if unknown:
        raise MtError(f"{source}: unknown key {shown(unknown[0])} (allowed: {', '.join(sorted(top))})")
    _check_table(doc, top, source, "", key_text=lambda k: "'config'" if k == "config" else k)
    cfg_types = {**CONFIG_TYPES, **ptypes}
    for i, c in enumerate(doc.get("config") or [], 1):
        bad = sorted(set(c) - set(cfg_types))
        if bad:
            raise MtError(f"{source}: unknown key {shown(bad[0])} in [[config]] #{i} "
                          f"(allowed: {', '.join(sorted(cfg_types))})")
        if "name" in c and not STRING.ok(c["name"]):
            raise _refuse(source, f"name of [[config]] #{i}", c["name"], STRING)
        where = f" in [[config]] {shown(c['name'])}" if "name" in c else f" in [[config]] #{i}"
        _check_table(c, cfg_types, source, where)


def check_tree(doc: dict, source: str) -> None:
    """Every key of a tree file known and of its type (docs/tree.md)."""
    bad = sorted(set(doc) - set(TREE_TYPES))
    if bad:
        raise MtError(f"unknown key {shown(bad[0])} in {source} (allowed: {', '.join(sorted(TREE_TYPES))})")
    _check_table(doc, TREE_TYPES, source, "")
