"""Progress of a campaign: a live display on a terminal, log lines otherwise."""
from __future__ import annotations

import sys
import time

from rich.markup import escape

from mpitempo.safe_text import SafeConsole, safe


class Progress:
    """runs done / total, current run and config, elapsed, estimated remaining."""

    def __init__(self, total: int, already: int = 0, quiet: bool = False, live: bool | None = None):
        self.total, self.done, self.quiet = total, already, quiet
        self.t0 = time.monotonic()
        self.finished_here = 0
        self.live = sys.stderr.isatty() if live is None else live
        self._bar = None
        self._current = ""
        self._last_inside = time.monotonic()
        if self.live and not quiet:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self._bar = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("runs"), TimeElapsedColumn(), TextColumn("left"),
                                     TimeRemainingColumn(), console=SafeConsole(stderr=True), transient=False)
            self._task = self._bar.add_task("starting", total=total, completed=already)
            self._bar.start()

    def _eta(self) -> float | None:
        if not self.finished_here:
            return None
        per_run = (time.monotonic() - self.t0) / self.finished_here
        return per_run * (self.total - self.done)

    def start(self, run_id: str, config: str, np: int) -> None:
        if self.quiet:
            return
        self._current = escape(safe(f"{run_id} (config {config}, {np} ranks)"))   # shown as markup
        self._last_inside = time.monotonic()
        if self._bar:
            self._bar.update(self._task, description=self._current)
        else:
            print(f"mpitempo: [{self.done + 1}/{self.total}] {run_id} (config {config}, {np} ranks) ...",
                  file=sys.stderr, flush=True)

    def wants_inside(self) -> bool:
        """Whether progress inside an mpirun is shown (not with --quiet)."""
        return not self.quiet

    def inside(self, done: int, total: int, op: str, msize: int, measurements: int) -> None:
        """Progress inside the current mpirun: experiments done of total, the last op and size,
        measurements taken so far. Live display: updated in place; log lines: at most every 10 s."""
        from mpitempo.io.sizes import format_size

        text = (f"{done}/{total} experiments, last {op} {format_size(msize) if msize else '-'}, "
                f"{measurements:,} measurements")
        if self._bar:
            self._bar.update(self._task, description=f"{self._current} {escape(safe(text))}")
            return
        now = time.monotonic()
        if now - self._last_inside >= 10.0 and done < total:
            self._last_inside = now
            print(f"mpitempo:     ... {text}", file=sys.stderr, flush=True)

    def finish(self, run_id: str, ok: bool, duration_s: float, message: str = "") -> None:
        self.done += 1
        self.finished_here += 1
        if self.quiet:
            if not ok:
                print(f"mpitempo: run {run_id} {message}", file=sys.stderr, flush=True)
            return
        if self._bar:
            self._bar.update(self._task, completed=self.done)
            if not ok:
                self._bar.console.print(f"[red]{escape(safe(f'run {run_id} {message}'))}[/red]", markup=True)
            return
        el = time.monotonic() - self.t0
        eta = self._eta()
        left = f", about {eta:.0f} s left" if eta is not None else ""
        status = f"done in {duration_s:.1f} s" if ok else message
        print(f"mpitempo:   {run_id} {status} (elapsed {el:.0f} s{left})", file=sys.stderr, flush=True)

    def add(self, n: int, why: str = "") -> None:
        """n more runs planned (adaptive mpiruns), said once."""
        self.total += n
        if self._bar:
            self._bar.update(self._task, total=self.total)
        if why and not self.quiet:
            (self._bar.console.print if self._bar else lambda t: print(t, file=sys.stderr, flush=True))(
                safe(f"mpitempo: {why}") if self._bar else f"mpitempo: {why}")

    def close(self) -> None:
        if self._bar:
            self._bar.stop()
