"""Time for the store: wall time for stamps, monotonic time for deadlines (S-FMT-3, S-FMT-4, C-1).

Wall time is what the JS core reads through ``Date``; deadlines use a monotonic source so a
frozen wall clock never makes a lock wait spin forever.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol


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


@dataclass
class ControlledClock:
    """A wall clock pinned at an instant (``frozen``) or running from it (``offset``).

    ``advance`` moves the wall clock without waiting; sleeping stays real so lock deadlines,
    which are monotonic, still expire.
    """

    start_ms: int
    mode: Literal["frozen", "offset"] = "frozen"
    _base: float = field(default_factory=time.monotonic)
    _shift_ms: int = 0

    def now_ms(self) -> int:
        if self.mode == "frozen":
            return self.start_ms + self._shift_ms
        elapsed = int((time.monotonic() - self._base) * 1000.0)
        return self.start_ms + self._shift_ms + elapsed

    def advance(self, ms: int) -> None:
        self._shift_ms += ms

    def monotonic_ms(self) -> float:
        return time.monotonic() * 1000.0

    def sleep_ms(self, ms: float) -> None:
        time.sleep(max(ms, 0.0) / 1000.0)


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
