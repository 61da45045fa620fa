"""Moved to mpitempo/safe_text.py (the base layer: every layer escapes text from files); this name
stays for imports on branches written before the move (docs/design.md)."""
from mpitempo.safe_text import SafeConsole, SafeStream, guard, safe, safe_block  # noqa: F401
