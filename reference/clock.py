"""Time for the store: wall time for stamps, monotonic time for deadlines (S-FMT-3, S-FMT-4, C-1).

Wall time is what the JS core reads through ``Date``; deadlines use a monotonic source so a
frozen wall clock never makes a lock wait spin forever.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from .fs import Fs


class Clock(Protocol):
    def now_ms(self) -> int:
        """Epoch milliseconds (``Date.now()``)."""

    def monotonic_ms(self) -> float:
        """A monotonic source for deadlines."""

    def sleep_ms(self, ms: float) -> None:
        """Wait (real time) for ``ms`` milliseconds."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> float:
        return time.monotonic() * 1000.0

    def sleep_ms(self, ms: float) -> None:
        time.sleep(max(ms, 0.0) / 1000.0)


ClockMode = Literal["frozen", "offset", "virtual"]
CLOCK_MODES: tuple[ClockMode, ...] = ("frozen", "offset", "virtual")


@dataclass
class ControlledClock:
    """A wall clock pinned at an instant (``frozen``), running from it (``offset``), or
    moved only by the store's own sleeps (``virtual``).

    ``advance`` moves the wall clock without waiting.  In ``frozen`` and ``offset`` sleeping
    stays real so lock deadlines, which are monotonic, still expire.  In ``virtual`` a sleep
    returns at once and moves both the wall and the monotonic time by its length, so a lock
    window of 500 ms takes 500 ms of clock and no wall time, and every timing is exact.
    """

    start_ms: int
    mode: ClockMode = "frozen"
    _base: float = field(default_factory=time.monotonic)
    _shift_ms: int = 0
    _slept_ms: float = 0.0

    def now_ms(self) -> int:
        if self.mode == "frozen":
            return self.start_ms + self._shift_ms
        if self.mode == "virtual":
            return self.start_ms + self._shift_ms + int(self._slept_ms)
        elapsed = int((time.monotonic() - self._base) * 1000.0)
        return self.start_ms + self._shift_ms + elapsed

    def advance(self, ms: int) -> None:
        self._shift_ms += ms

    def monotonic_ms(self) -> float:
        if self.mode == "virtual":
            return self._slept_ms
        return time.monotonic() * 1000.0

    def sleep_ms(self, ms: float) -> None:
        if self.mode == "virtual":
            self._slept_ms += max(ms, 0.0)
            return
        time.sleep(max(ms, 0.0) / 1000.0)

    @property
    def virtual(self) -> bool:
        return self.mode == "virtual"


def parse_instant(text: str) -> int:
    """Epoch ms of an ISO-8601 instant as given to ``set_clock`` (``Z`` or an offset)."""
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1000)


def local_iso(ms: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS±HH:MM`` in the host zone (``TZ``), milliseconds dropped (S-FMT-3)."""
    tm = time.localtime(ms // 1000)
    # ``getTimezoneOffset`` is whole minutes truncated toward zero: a historical offset with
    # seconds (St John's LMT -03:30:52) prints as -03:30, not -03:31.
    offset_min = int((tm.tm_gmtoff or 0) / 60)
    sign = "+" if offset_min >= 0 else "-"
    hours, minutes = divmod(abs(offset_min), 60)
    return (
        f"{tm.tm_year}-{tm.tm_mon:02d}-{tm.tm_mday:02d}T"
        f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}{sign}{hours:02d}:{minutes:02d}"
    )


def utc_date(ms: int) -> str:
    """``YYYY-MM-DD`` of the instant in UTC (S-FMT-4): ``toISOString().slice(0, 10)``.

    Years outside 0000–9999 use the ISO extended form (``+010000-01``), cut the same way.
    """
    tm = time.gmtime(ms // 1000)
    year = f"{tm.tm_year:04d}" if 0 <= tm.tm_year <= 9999 else f"{tm.tm_year:+07d}"
    return f"{year}-{tm.tm_mon:02d}-{tm.tm_mday:02d}"[:10]


def stamp_own_locks(fs: Fs, now_ms: Callable[[], int | None]) -> None:
    """Give each ``.lock`` this process creates the mtime ``now_ms()`` (when not None).

    Lock ages are ``now − mtime`` (S-LOCK-2); under a virtual clock the kernel's mtime is
    real time and would not compare with the clock, so a lock we create is stamped with the
    clock's time as it is closed (after its token is written, which would move the mtime
    again).  Done on the instance, so the same ``Fs`` (and its subclasses' speed paths)
    keeps working; a no-op the second time.
    """
    if getattr(fs, "_stamps_own_locks", False):
        return
    opened: dict[int, str] = {}
    inner_open, inner_close = fs.open, fs.close

    def open_(path: str, flags: int, mode: int = 0o666) -> int:
        fd = inner_open(path, flags, mode)
        if flags & os.O_EXCL and os.path.basename(path) == ".lock":
            opened[fd] = path
        return fd

    def close_(fd: int) -> None:
        path = opened.pop(fd, None)
        inner_close(fd)
        ms = now_ms() if path is not None else None
        if path is not None and ms is not None:
            try:
                os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000), follow_symlinks=False)
            except OSError:
                pass  # gone already, or not a real path (a test double)

    fs.open = open_  # type: ignore[method-assign]
    fs.close = close_  # type: ignore[method-assign]
    fs._stamps_own_locks = True  # type: ignore[attr-defined]
