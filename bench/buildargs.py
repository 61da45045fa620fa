"""The --build LABEL=DIR arguments of the benchmarks that compare builds of the core side by side
(sync_fast.py, sync_load.py, launch_phases.py)."""
from __future__ import annotations

import sys
from pathlib import Path


def parse_builds(values: list[str], exe: str, prog: str) -> list[tuple[str, Path]]:
    """[(label, DIR/exe)] of each LABEL=DIR; exits with one line naming a bad one."""
    builds = []
    for b in values:
        label, sep, d = b.partition("=")
        path = Path(d) / exe
        if not sep or not label or not path.is_file():
            sys.exit(f"{prog}: --build {b!r}: expected LABEL=DIR with DIR/{exe}")
        builds.append((label, path))
    return builds
