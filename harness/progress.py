"""One progress reporter for every long command (conformance, interop, locks, crash, fuzz, bench).

A command asks for ``progress(label, total, quiet=...)`` and calls ``advance()`` per item; it
never prints progress itself.  On a terminal the reporter keeps one live line that fits the
width; in a log (no TTY, or ``CI`` set) it prints a plain line every few seconds, so a CI log
reads top to bottom; ``quiet`` silences it.  The live rendering may change behind this API.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from types import TracebackType
from typing import TextIO

LOG_EVERY_S = 5.0


class Progress:
    """Counts done items of ``total`` (None: unknown) and shows rate and ETA."""

    def __init__(self, label: str, total: int | None, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.label, self.total, self.quiet = label, total, quiet
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() and not os.environ.get("CI")
        self.done, self.note = 0, ""
        self.started = self._last = time.monotonic()

    def advance(self, n: int = 1, *, note: str = "") -> None:
        self.done += n
        if note:
            self.note = note
        now = time.monotonic()
        if self.live or now - self._last >= LOG_EVERY_S:
            self._last = now
            self._show(final=False)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        eta = ""
        if self.total is not None and rate > 0 and self.done < self.total:
            eta = f", ETA {(self.total - self.done) / rate:.0f}s"
        note = f" {self.note}" if self.note else ""
        return f"{self.label}: {count} ({rate:.1f}/s, {elapsed:.0f}s{eta}){note}"

    def _show(self, *, final: bool) -> None:
        if self.quiet:
            return
        text = self.line()
        if self.live:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            end = "\n" if final else ""
            print(f"\r\x1b[2K{text[:width]}", end=end, file=self.stream, flush=True)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        self._show(final=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def progress(label: str, total: int | None = None, *, quiet: bool = False) -> Progress:
    """The reporter for one long run; ``quiet`` (the commands' ``--quiet``) shows nothing."""
    return Progress(label, total, quiet=quiet)
