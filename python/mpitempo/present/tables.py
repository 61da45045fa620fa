"""Printing for people (rich tables, µs) and for scripts (JSON on stdout)."""
from __future__ import annotations

import json
import math
import sys

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from mpitempo.safe_text import SafeConsole, safe, safe_block


WIDTH = 100   # the width of output that goes to a pipe or a file (COLUMNS unset)


def width() -> int:
    """The width tables and notes are made to fit: COLUMNS when it is set (a positive number), else the
    terminal's when stdout is a terminal, else WIDTH (a pipe or a file)."""
    import os
    import shutil

    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((WIDTH, 24)).columns
    return WIDTH


def console(fit: bool = True) -> Console:
    """The console every table and note is printed on, ``width()`` columns wide. Tables are made to
    fit it with ``print_fitted`` (constant columns named above the table, least needed columns left
    out with a line under it that says which, long text wrapped in its column, a table still too wide
    printed in parts that repeat its naming columns). ``fit=False``: 200 columns when stdout is not a
    terminal, for output that must not wrap."""
    if fit:
        return SafeConsole(highlight=False, width=width())
    return SafeConsole(highlight=False, width=None if sys.stdout.isatty() else 200)


def wrap_line(text: str, width: int | None = None, indent: int = 2) -> str:
    """One finding or note as lines of at most ``width`` columns (default: ``width()``), continuation
    lines indented."""
    import textwrap

    w = width if width is not None else globals()["width"]()
    return "\n".join(textwrap.wrap(text, width=w, subsequent_indent=" " * indent, break_long_words=False,
                                    break_on_hyphens=False)) or text


def compact(columns: list[tuple[str, str]], rows: list[list[str]], keep=()) -> tuple[list, list, list[str]]:
    """Drop the columns whose value never changes (unless named in ``keep``), for a table that fits;
    returns (columns, rows, ["header = value", ...] of the dropped ones) so that the caller can say
    so above the table. Nothing is dropped from a table of one row."""
    if len(rows) < 2:
        return columns, rows, []
    drop = [i for i, (h, _) in enumerate(columns) if h not in keep and len({r[i] for r in rows}) == 1]
    const = [f"{columns[i][0]} = {rows[0][i]}" for i in drop if rows[0][i] not in ("", "-")]
    cols = [c for i, c in enumerate(columns) if i not in drop]
    return cols, [[v for i, v in enumerate(r) if i not in drop] for r in rows], const


def fit(columns: list[tuple[str, str]], rows: list[list[str]], drop_order=(), width: int = WIDTH, wrap=(),
        min_wrap: int = 16):
    """Leave out columns (first to last of ``drop_order``) until the table fits ``width``; a column
    named in ``wrap`` counts with at most ``min_wrap`` characters (its text wraps). Returns
    (columns, rows, [headers left out])."""
    def need(cols, rs):
        total = 0
        for i, (h, _) in enumerate(cols):
            w = max([len(h) if h not in wrap else min(len(h), min_wrap)] + [len(r[i]) for r in rs])
            total += min(w, min_wrap) if h in wrap else w
        return total + 2 * len(cols)    # 2 per column: separator or edge, one space of padding
    left_out = []
    for name in drop_order:
        if need(columns, rows) <= width:
            break
        idx = [i for i, (h, _) in enumerate(columns) if h == name]
        if not idx:
            continue
        i = idx[0]
        columns = columns[:i] + columns[i + 1:]
        rows = [r[:i] + r[i + 1:] for r in rows]
        left_out.append(name)
    return columns, rows, left_out


def print_fitted(title: str, columns: list[tuple[str, str]], rows: list[list[str]], keep=(), drop_order=(),
                 wrap=(), caption: str | None = None, con: Console | None = None, compact_rows: bool = True,
                 more: str = "--json") -> list[str]:
    """Print a table that fits the console (``width()`` columns): columns whose value never changes
    are named above it ("same in every row: ..."), columns of ``drop_order`` are left out until it fits
    (and a line under it says which; a column in ``wrap`` counts as at most 16 wide, its text wraps),
    every cell on one line while the table fits (else ``print_table`` wraps or splits it).
    Returns the lines printed above the table."""
    con = con or console()
    rows = [[safe(v) for v in r] for r in rows]   # widths are those of what is shown
    columns = [(safe(h), j) for h, j in columns]
    const: list[str] = []
    if compact_rows:
        columns, rows, const = compact(columns, rows, keep=keep)
    columns, rows, left_out = fit(columns, rows, drop_order, width=con.width, wrap=wrap)
    above = []
    if const:
        above.append("same in every row: " + ", ".join(const))
    for a in above:
        con.print(a, markup=False)
    print_table(con, title, columns, rows, caption=caption)
    if left_out:
        con.print(left_out_line(left_out, con.width, more), markup=False)
    return above


def left_out_line(names, cols: int, more: str) -> str:
    """The line under a table that names the columns left out to fit it."""
    return f"not shown to fit {cols} columns: {', '.join(names)} (see {more})"


def _longest_word(text: str) -> int:
    return max((len(w) for w in str(text).split()), default=0)


def print_table(con: Console, title: str, columns: list[tuple[str, str]], rows: list[list[str]],
                caption: str | None = None, max_word: int = 20) -> None:
    """Print rows (text as shown, safe) under columns (header, justify) within con.width, losing no
    cell: a table that fits keeps every cell on one line; one that does not wraps its text columns
    (at word boundaries, words longer than ``max_word`` folded) and
    its headers, numbers staying whole; one still too wide is printed in parts, each with the text
    (left-justified) columns that name its rows and as many of the others as fit."""
    n = len(columns)
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, (h, _) in enumerate(columns)]
    if sum(natural) + 2 * n <= con.width:        # 2 per column: a space of padding, a separator or edge
        con.print(_part(title, columns, rows, caption, None))
        return
    # the narrowest each column can be without cutting a number or a word (of at most max_word)
    least = []
    for i, (h, j) in enumerate(columns):
        cells = max([len(r[i]) for r in rows] + [0]) if j == "right" else \
            min(max([_longest_word(r[i]) for r in rows] + [1]), max_word)
        least.append(max(cells, min(_longest_word(h), max_word), 1))
    natural = [max(a, b) for a, b in zip(natural, least)]
    names = [i for i, (_, j) in enumerate(columns) if j != "right"]

    def need(idx):
        return sum(least[i] + 2 for i in idx)

    parts: list[list[int]] = [list(range(n))]
    if need(range(n)) > con.width and names and need(names) < con.width:
        parts, cur = [], []
        for i in (i for i in range(n) if i not in names):
            if cur and need(names + cur + [i]) > con.width:
                parts.append(cur)
                cur = []
            cur.append(i)
        parts.append(cur)
        parts = [sorted(names + p) for p in parts]
    for k, idx in enumerate(parts):
        # the room left goes to the headers of the numbers first (short: kept on one line), then to the text
        widths = {i: least[i] for i in idx}
        room = con.width - need(idx)
        for i in sorted(idx, key=lambda i: columns[i][1] != "right"):
            add = max(0, min(room, natural[i] - widths[i]))
            widths[i] += add
            room -= add
        head = title if len(parts) == 1 else f"{title} (part {k + 1} of {len(parts)})".lstrip()
        con.print(_part(head, [columns[i] for i in idx], [[r[i] for i in idx] for r in rows],
                        caption if k == len(parts) - 1 else None, [widths[i] for i in idx]))


def _part(title, columns, rows, caption, widths) -> Table:
    """The rich table; with ``widths`` (of every column, chosen to fit) text and headers wrap in them."""
    t = table(title, columns)
    for i, col in enumerate(t.columns):
        name, justify = columns[i]
        if widths is not None:
            col.overflow = "fold"
            col.width = widths[i]
        else:
            col.no_wrap = True
            col.min_width = max([len(r[i]) for r in rows] + [len(name) if justify == "left" else 1])
    for r in rows:
        t.add_row(*[Text(str(v)) for v in r])
    if caption:
        t.caption = Text(safe_block(caption))   # text, never markup: it may quote names from files
        t.caption_justify = "left"
    return t


def plain_table(columns: list[tuple[str, str]], rows: list[list[str]], fmt: str) -> str:
    """The table as CSV (every column, raw header names) or GitHub Markdown."""
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([h for h, _ in columns])
        w.writerows(rows)
        return buf.getvalue()
    esc_ = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(esc_(h) for h, _ in columns) + " |",
           "|" + "|".join("---:" if j == "right" else ":---" for _, j in columns) + "|"]
    out += ["| " + " | ".join(esc_(v) for v in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


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
    """columns: (header, justify). Title and headers are text, never markup ("[ns]" is shown as it is
    written, whether or not the table is printed with markup); so are the cells of ``cell``."""
    t = Table(title=Text(safe(title)) if title else None, title_justify="left", header_style="bold",
              box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    for name, justify in columns:
        t.add_column(Text(safe(name)), justify=justify)
    return t


def cell(v) -> Text:
    """A table cell shown as it is written (control characters escaped, never markup)."""
    return Text(safe(v))
    return t
