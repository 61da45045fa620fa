"""Message size lists: "8,64,1K" and ranges "8-1M" (powers of two), as in the C core."""
from __future__ import annotations

import re

from mpitempo.errors import MtError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# one grammar with the C core (src/core/base/util.c size_reason; tests/size_cases.py holds the cases both
# parsers are tested on): digits, then K, M or G optionally followed by B or iB, or a plain B; blanks around
_SIZE = re.compile(r"^\s*(\d+)\s*(?:([KMG])(?:I?B)?|B)?\s*$", re.IGNORECASE)
_MAX = (1 << 63) - 1


def parse_size(text: str | int, allow_zero: bool = False) -> int:
    least = 0 if allow_zero else 1
    what = "a number of bytes >= 0" if allow_zero else "a positive number of bytes"
    if isinstance(text, bool):
        raise MtError(f"invalid size '{text}': expected {what}, optionally with K, M or G")
    if isinstance(text, int):
        if text < least:
            raise MtError(f"invalid size '{text}': " + ("sizes cannot be negative" if allow_zero else
                                                          "sizes must be at least 1 byte"))
        return text
    m = _SIZE.match(str(text))
    if not m:
        if allow_zero and str(text).strip().startswith("-"):
            raise MtError(f"invalid size '{str(text).strip()}': sizes cannot be negative")
        raise MtError(f"invalid size '{text}': expected {what}, optionally with K, M or G")
    v = int(m.group(1)) * _UNITS[(m.group(2) or "").upper()]
    if v < least:
        raise MtError(f"invalid size '{text}': sizes must be at least 1 byte")
    if v > _MAX:
        raise MtError(f"invalid size '{str(text).strip()}': too large (at most {_MAX} bytes)")
    return v


def refuse_duplicates(sizes: list[int], spec, label: str = "msizes", nrep: str = "--nrep") -> list[int]:
    """A size given twice (8,8 or 8,8B or 8-16,16) would be measured twice and pooled: refused."""
    seen = set()
    for x in sizes:
        if x in seen:
            shown = ",".join(str(v) for v in spec) if isinstance(spec, (list, tuple)) else str(spec)
            raise MtError(f"invalid {label} '{shown}': {x} B is listed twice (each size once; more measurements "
                          f"with {nrep})")
        seen.add(x)
    return sizes


def parse_sizes(spec, label: str | None = "msizes", nrep: str = "--nrep", allow_zero: bool = False) -> list[int]:
    """A list of sizes from a string "8,1K,4-64" or a list of ints/strings; a size listed twice is an
    error naming ``label`` (None: duplicates are the caller's to check) and ``nrep``, the option that
    gives more measurements instead. ``allow_zero``: 0 is a size (a message of count 0) and a range
    from 0 continues with 1, 2, 4, ... ("0-8" is 0,1,2,4,8), as in the C core."""
    items = spec if isinstance(spec, (list, tuple)) else str(spec).split(",")
    if not items or (not isinstance(spec, (list, tuple)) and not str(spec).strip()):
        raise MtError(f"invalid size list {spec!r}: give at least one size in bytes, e.g. 8,1K,4-64")
    out: list[int] = []
    for item in items:
        if isinstance(item, str) and "-" in item.strip()[1:]:
            a, b = item.strip().split("-", 1)
            lo, hi = parse_size(a, allow_zero), parse_size(b, allow_zero)
            if hi < lo:
                raise MtError(f"invalid size range '{item.strip()}': the end is smaller than the start")
            x = lo
            while x <= hi:
                out.append(x)
                x = x * 2 if x else 1
        else:
            if isinstance(item, str) and not item.strip():
                raise MtError(f"invalid size list '{spec}': an empty item; give sizes in bytes such as 8,1K,4-64")
            out.append(parse_size(item, allow_zero))
    return out if label is None else refuse_duplicates(out, spec, label, nrep)


def format_size(n: int) -> str:
    for unit, mul in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mul and n % mul == 0:
            return f"{n // mul}{unit}"
    return str(n)


def size_cell(op: str, msize) -> str:
    """A row's message size as tables show it: "-" for the barrier ops (they take no size; the core
    records 0), else the size (0 B rows are real 0-byte messages)."""
    if not msize and "barrier" in str(op):
        return "-"
    return format_size(int(msize or 0))
