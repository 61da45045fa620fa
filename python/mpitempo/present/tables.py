"""Printing for people (rich tables, µs) and for scripts (JSON on stdout)."""
from __future__ import annotations

import json
import math
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def console() -> Console:
    """A console that keeps tables readable when stdout is a pipe or a file."""
    width = None if sys.stdout.isatty() else 200
    return Console(highlight=False, width=width)


def print_json(obj) -> None:
    """Strict JSON: NaN and infinities (which json would print bare, invalid JSON) become null."""
    json.dump(_finite(obj), sys.stdout, indent=2, default=_default, allow_nan=False)
    sys.stdout.write("\n")


def _finite(o):
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    if hasattr(o, "item") and not isinstance(o, (str, bytes)):
        return _finite(o.item())
    return o


def _default(o):
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def us(x) -> str:
    """seconds -> µs with 3 significant decimals for a table cell."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    v = x * 1e6
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def table(title: str, columns: list[tuple[str, str]]) -> Table:
    """columns: (header, justify)"""
    t = Table(title=title, title_justify="left", header_style="bold")
    for name, justify in columns:
        t.add_column(escape(name), justify=justify)  # "[ns]" is not markup
    return t
