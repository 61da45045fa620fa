"""Text from files made safe for a terminal.

A campaign directory can come from someone else, and its strings (configuration names, hostnames,
library versions, the launcher, environment values, failure reasons, trace metadata) reach the
terminal in tables, warnings and error messages. A control character in them could retitle the
terminal (ESC ] 0 ; ... BEL), clear it (ESC [ 2 J), move the cursor over earlier lines, or, for
Unicode format characters such as U+202E RIGHT-TO-LEFT OVERRIDE, reorder or hide text. ``safe``
shows every such character escaped, as Python writes it in a string literal: ``\\x1b``, ``\\u202e``.

Escaped: C0 controls (U+0000-U+001F) and DEL, C1 controls (U+0080-U+009F), the Unicode format
characters (category Cf: bidirectional overrides, isolates and marks, zero-width characters, ...),
line and paragraph separators (Zl, Zp) and lone surrogates (undecodable bytes, which a UTF-8
terminal cannot print). Everything else, including non-ASCII letters, is kept.

Every terminal output path goes through it: ``guard()`` (installed by the CLI's ``main``) wraps
stdout and stderr so that whatever is printed there has its control characters escaped (newlines
and tabs kept), and ``SafeConsole`` (every rich table, note and progress display) escapes the text
of what it renders while keeping rich's own styling sequences. Table cells and values quoted in one
line are escaped with ``safe`` first, so that their width is that of what is shown. JSON output is
exact (json.dumps escapes control characters itself); the HTML report escapes them as HTML does
not allow them either (present.report).
"""
from __future__ import annotations

import contextlib
import sys
import unicodedata

from rich.console import Console
from rich.errors import MarkupError
from rich.segment import Segment


def _unsafe(c: str) -> bool:
    o = ord(c)
    if o < 0x20 or 0x7F <= o <= 0x9F:
        return True
    if o < 0xA0:
        return False
    return unicodedata.category(c) in ("Cf", "Zl", "Zp", "Cs")


def _escape(c: str) -> str:
    o = ord(c)
    if o <= 0xFF:
        return f"\\x{o:02x}"
    if o <= 0xFFFF:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def _sub(s: str, keep: str) -> str:
    if s.isprintable():   # C speed: no control, format or separator character (but the space) in it
        return s
    return "".join(_escape(c) if c not in keep and _unsafe(c) else c for c in s)


def safe(value) -> str:
    """``str(value)`` with every control and format character escaped (newlines and tabs too: for
    one value shown on one line or in a table cell)."""
    return _sub(value if isinstance(value, str) else str(value), "")


def safe_block(text: str) -> str:
    """``text`` with every control and format character escaped except newlines and tabs (for whole
    messages of several lines)."""
    return _sub(text, "\n\t")


class SafeStream:
    """A text stream whose writes have their control characters escaped (``safe_block``)."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, s: str) -> int:
        self._inner.write(safe_block(s))
        return len(s)

    def writelines(self, lines) -> None:
        for ln in lines:
            self.write(ln)

    @property
    def rich_proxied_file(self):
        """rich writes to the stream below (its own styling sequences kept); SafeConsole escapes the text."""
        return self._inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


@contextlib.contextmanager
def guard():
    """While inside, sys.stdout and sys.stderr escape every control character written to them."""
    old = sys.stdout, sys.stderr
    sys.stdout = SafeStream(sys.stdout) if not isinstance(sys.stdout, SafeStream) else sys.stdout
    sys.stderr = SafeStream(sys.stderr) if not isinstance(sys.stderr, SafeStream) else sys.stderr
    try:
        yield
    finally:
        sys.stdout, sys.stderr = old


class SafeConsole(Console):
    """A rich console that escapes control characters in the text it renders (``safe_block``), keeps
    its own styling and cursor sequences, and never emits hyperlinks. A string printed is plain text
    unless the caller asks for markup (``markup=True``, with the values in it escaped: rich.markup.escape
    of ``safe``), so that a value such as ``[conceal]`` cannot style or hide what follows; markup
    that does not parse (a stray ``[/x]``) is printed as plain text instead of failing."""

    def print(self, *objects, markup=None, **kw):
        super().print(*objects, markup=bool(markup), **kw)

    def _render_buffer(self, buffer) -> str:
        out = []
        for text, style, control in buffer:
            if not control:
                text = safe_block(text)
                if style is not None and style.link:
                    style = style.clear_meta_and_links()
            out.append(Segment(text, style, control))
        return super()._render_buffer(out)

    def render_str(self, text: str, **kw):
        try:
            return super().render_str(text, **kw)
        except MarkupError:
            kw["markup"] = False
            return super().render_str(text, **kw)
