"""Who holds a ``.lock``: its token (S-FMT-13), its age and its owner's liveness (S-LOCK-3).

Apart from ``lock.py`` because both lock algorithms read it: the plain one of SPEC and the
opt-in ``hardened.py``, which ``lock.py`` dispatches to and which must not import it back.
"""

from __future__ import annotations

import errno
import math

from .clock import Clock
from .errors import NodeError
from .fs import Fs, read_lock_content
from .text import parse_int, trim

STALE_MS = 10_000
HARD_STALE_MS = 60_000


def make_token(fs: Fs, clock: Clock) -> str:
    """``«pid»\\t«epoch ms»\\t«base-36 random»`` (S-FMT-13)."""
    return f"{fs.getpid()}\t{clock.now_ms()}\t{fs.random_token()}"


def mtime_ms(st: object) -> float:
    return getattr(st, "st_mtime_ns", 0) / 1e6


def owner_alive(fs: Fs, path: str, age_ms: float) -> bool:
    """S-LOCK-3: pid probe with signal 0; unreadable owners live for 60 s."""
    return content_owner_alive(fs, read_lock_content(fs, path), age_ms)


def content_owner_alive(fs: Fs, content: str | None, age_ms: float) -> bool:
    """S-LOCK-3 on lock content already read (``None``: unreadable)."""
    pid = math.nan if content is None else parse_int(trim(content).split("\t")[0])
    if math.isnan(pid) or math.isinf(pid) or pid <= 0 or pid != int(pid):
        return age_ms <= HARD_STALE_MS
    try:
        fs.kill(int(pid), 0)
    except NodeError as e:
        return e.errno != errno.ESRCH
    except (OverflowError, ValueError):
        return True
    return True
