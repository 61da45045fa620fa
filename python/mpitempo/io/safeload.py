"""Reading files a campaign directory holds, as untrusted input.

A campaign directory is often received from someone else; any of its files may be
truncated, edited, in another encoding, enormous or nested without end. Every
reader here turns such a file into one MtError line naming the file (and the key),
never into another exception:

* a size limit: JSON files of a run at most ``MAX_JSON_BYTES`` (64 MiB),
  campaign.toml at most ``MAX_TOML_BYTES`` (1 MiB);
* UTF-8 only, named with the offset of the first bad byte (a campaign.toml saved
  as Latin-1 or UTF-16 says so);
* nesting deeper than ``MAX_DEPTH`` (64) is refused before it is parsed (Python's
  parsers recurse);
* JSON numbers are finite: ``NaN``, ``Infinity`` and ``1e999`` (which Python's json
  accepts) are refused with the key they are at.
"""
from __future__ import annotations

import json
import math
import re

from mpitempo.errors import MtError

MAX_JSON_BYTES = 64 << 20
MAX_TOML_BYTES = 1 << 20
MAX_DEPTH = 64


def read_bytes(path, limit: int, what: str = "") -> bytes:
    """The bytes of ``path``, refused above ``limit`` bytes (read no further than that)."""
    import os
    import stat

    label = what or f"'{path}'"
    try:   # O_NONBLOCK: opening a FIFO without a writer must not wait for one
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) \
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
                raise MtError(f"{label} is {kind}, not a regular file")
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise MtError(f"{label} is a directory, not a file") from None
    except OSError as e:
        raise MtError(f"cannot read {label}: {e.strerror or e}") from None
    if len(data) > limit:
        raise MtError(f"{label} is larger than {_mib(limit)} (the limit for this file): refusing to read it")
    return data


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def decode_utf8(data: bytes, label: str, fmt: str = "") -> str:
    """UTF-8 text (a byte-order mark dropped); fmt ("JSON", "TOML") puts "is not valid FMT" first."""
    lead = f"{label} is not valid {fmt}: it is" if fmt else f"{label} is"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise MtError(f"{lead} UTF-16 text: save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MtError(f"{lead} not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): "
                      "save it as UTF-8") from None
    return text.removeprefix("\ufeff")


_OPEN = re.compile(r"[\[{]")


def _json_depth_ok(text: str) -> bool:
    """Nesting of [ and { outside strings at most MAX_DEPTH (a linear scan, no recursion)."""
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


class _NonFinite(float):
    """A JSON number that is not finite, kept to name its key after parsing."""


def _constant(name: str):
    return _NonFinite("nan")


def _float(text: str):
    v = float(text)
    return v if math.isfinite(v) else _NonFinite("nan")


def _nonfinite_path(doc) -> str | None:
    """The key path ('clock.offsets[3]') of the first non-finite number, or None (iterative)."""
    stack = [(doc, "")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, _NonFinite):
            return where or "(the document)"
        if isinstance(v, dict):
            stack.extend((x, f"{where}.{k}" if where else str(k)) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, f"{where}[{i}]") for i, x in reversed(list(enumerate(v))))
    return None


def loads_json(data: bytes, label: str):
    """Parse JSON bytes read from a file: UTF-8, bounded depth, finite numbers; MtError otherwise."""
    text = decode_utf8(data, label, "JSON")
    if not _json_depth_ok(text):
        raise MtError(f"{label} is not valid JSON: nested deeper than {MAX_DEPTH} levels")
    try:
        doc = json.loads(text, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as e:
        raise MtError(f"{label} is not valid JSON: {e}") from None
    except (RecursionError, ValueError) as e:   # ValueError: an integer of more than 4300 digits
        raise MtError(f"{label} is not valid JSON: {str(e).splitlines()[0][:100]}") from None
    bad = _nonfinite_path(doc)
    if bad:
        raise MtError(f"{label} has a number that is not finite (NaN or infinity) at key '{bad}'")
    return doc


def load_json(path, limit: int | None = None, what: str = ""):
    """A JSON file of a campaign directory (see the module text); limit: MAX_JSON_BYTES."""
    label = what or f"'{path}'"
    return loads_json(read_bytes(path, MAX_JSON_BYTES if limit is None else limit, label), label)


def load_toml_text(path, limit: int | None = None, what: str = "") -> str:
    """The text of a TOML file of a campaign: UTF-8, at most ``limit`` bytes, nesting of arrays and
    inline tables at most MAX_DEPTH."""
    label = what or f"'{path}'"
    text = decode_utf8(read_bytes(path, MAX_TOML_BYTES if limit is None else limit, label), label, "TOML")
    if "\0" in text:
        raise MtError(f"{label} holds a NUL byte: not a text file")
    if not _toml_depth_ok(text):
        raise MtError(f"{label} is not valid TOML: arrays or inline tables nested deeper than {MAX_DEPTH} levels")
    return text


def _toml_depth_ok(text: str) -> bool:
    """Nesting of [ and { inside values (not table headers) at most MAX_DEPTH: a scan that skips
    strings and comments, linear and without recursion."""
    depth = 0
    i, n = 0, len(text)
    quote = None
    while i < n:
        ch = text[i]
        if quote:
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            if ch == "\\" and quote in ('"', '"""'):
                i += 2
                continue
            i += 1
            continue
        if ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        for q in ('"""', "'''", '"', "'"):
            if text.startswith(q, i):
                quote = q
                i += len(q)
                break
        else:
            if ch in "[{":
                depth += 1
                if depth > MAX_DEPTH + 1:   # + 1: the [[config]] header itself
                    return False
            elif ch in "]}":
                depth = max(0, depth - 1)
            i += 1
    return True
