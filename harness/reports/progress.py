"""One progress reporter for every long command (conformance, interop, locks, crash, fuzz, bench).

A command asks for ``progress(label, total, quiet=...)`` and calls ``advance()`` per item; it
never prints progress itself.  On a terminal the reporter keeps one live line that fits the
width (``rich``'s progress bar: counts, rate, ETA, redrawn in place and resized with the
window); in a log (no TTY, ``CI`` set, or ``TERM=dumb``) it prints a plain line every few
seconds — also while one long item runs (a heartbeat), so a 5-minute workload is not silent —
and one at the end, so a CI log reads top to bottom; ``quiet`` silences it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

LOG_EVERY_S = 5.0
EVERY_ENV = "MEMCONFORM_PROGRESS_EVERY"  # seconds between plain lines in a log (a positive number)


def log_every() -> float:
    """Seconds between plain lines: ``MEMCONFORM_PROGRESS_EVERY`` when it is a positive number
    (a CI log that wants fewer lines, a test that needs one early), else every 5 s."""
    try:
        every = float(os.environ[EVERY_ENV])
    except (KeyError, ValueError):
        return LOG_EVERY_S
    return every if 0 < every < float("inf") else LOG_EVERY_S


def is_live(stream: TextIO) -> bool:
    """A terminal a person watches: redraw one line.  Logs and CI get plain lines."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


class Progress:
    """Counts done items of ``total`` (None: unknown) and shows rate and ETA."""

    def __init__(self, label: str, total: int | None, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.label, self.total, self.quiet = label, total, quiet
        self.stream = stream if stream is not None else sys.stderr
        self.live = not quiet and is_live(self.stream)
        self.done, self.note = 0, ""
        self.started = self._last = time.monotonic()
        self._closed = False
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.every = log_every()
        if self.live:
            self._start_live()
        elif not quiet and self.every > 0:
            threading.Thread(target=self._heartbeat, name=f"progress {label}", daemon=True).start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.every):
            self._plain(due=True)

    def _plain(self, *, due: bool) -> None:
        with self._lock:
            now = time.monotonic()
            if self._closed or (due and now - self._last < self.every):
                return
            self._last = now
            print(self.line(), file=self.stream, flush=True)

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        counts = MofNCompleteColumn() if self.total is not None else TextColumn("{task.completed:.0f}")
        self._bar = Bar(
            TextColumn("{task.description}"), BarColumn(bar_width=None), counts, TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[note]}", style="dim"),
            console=console, transient=False, expand=True, refresh_per_second=4,
        )
        self._task = self._bar.add_task(self.label, total=self.total, rate="", note="")
        self._bar.start()

    def rate(self) -> float:
        return self.done / max(time.monotonic() - self.started, 1e-9)

    def advance(self, n: int = 1, *, note: str = "") -> None:
        self.done += n
        if note:
            self.note = note
        if self.quiet or self._closed:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=n, note=self.note[:60], rate=f"{self.rate():.1f}/s")
            return
        self._plain(due=True)

    def line(self) -> str:
        """The plain line a log gets: ``label: 12/662 (4.1/s, 3s, ETA 158s) note``."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        eta = ""
        if self.total is not None and rate > 0 and self.done < self.total:
            eta = f", ETA {(self.total - self.done) / rate:.0f}s"
        note = f" {self.note}" if self.note else ""
        return f"{self.label}: {count} ({rate:.1f}/s, {elapsed:.0f}s{eta}){note}"

    def close(self) -> None:
        """The last line (plain), or the live line left in place; idempotent."""
        if self._closed:
            return
        self._stop.set()
        if self.quiet:
            self._closed = True
            return
        if self._bar is not None:
            self._closed = True
            self._bar.update(self._task, note=self.note[:60], rate=f"{self.rate():.1f}/s")
            self._bar.stop()
            return
        self._plain(due=False)
        self._closed = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def progress(label: str, total: int | None = None, *, quiet: bool = False, stream: TextIO | None = None) -> Progress:
    """The reporter for one long run; ``quiet`` (the commands' ``--quiet``) shows nothing."""
    return Progress(label, total, quiet=quiet, stream=stream)
