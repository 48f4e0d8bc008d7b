"""The advisory ``.lock`` protocol (S-LOCK-1..10, S-FMT-13, A-4, A-13).

One attempt creates the lock exclusively; a lock older than 10 s whose owner is dead is
reclaimed after an inode+mtime recheck; release unlinks only a lock holding our own token.
Deadlines run on the clock's monotonic source, stamps on its wall time.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from typing import TypeVar

from . import hardened
from .clock import Clock
from .errors import NodeError
from .fs import CREATE_EXCLUSIVE, Fs, read_lock_content
from .lock_owner import (
    HARD_STALE_MS,
    STALE_MS,
    content_owner_alive,
    make_token,
    mtime_ms,
    owner_alive,
)
from .paths import lock_path

POLL_MS = 20
LOCAL_WINDOW_MS = 500
SHARED_WINDOW_MS = 2_000
SHARED_RETRY_DELAY_MS = 1_000

LOCK_BUSY_MESSAGE = (
    "Error: memory store is busy (another tool or process holds the lock) — "
    "please retry in a moment."
)

T = TypeVar("T")


class LockBusy(Exception):
    """The lock could not be acquired within the policy's window (S-LOCK-8)."""

    def __init__(self) -> None:
        super().__init__(LOCK_BUSY_MESSAGE)
        self.message = LOCK_BUSY_MESSAGE


def create_lock(fs: Fs, path: str, token: str) -> bool:
    """Exclusive creation with the token; False when the lock exists (S-LOCK-2 step 2).

    If writing the token (or closing the new file) fails, the lock is ours alone and may be
    empty or never acknowledged, so it is unlinked before the error propagates (A-13): a lock
    we gave up on must not keep the store busy.
    """
    try:
        fd = fs.open(path, CREATE_EXCLUSIVE, 0o666)
    except NodeError as e:
        if e.code == "EEXIST":
            return False
        raise
    closed = False
    try:
        data = token.encode("utf-8")
        while data:
            data = data[fs.write(fd, data) :]
        closed = True
        fs.close(fd)
    except BaseException:
        try:
            if not closed:
                fs.close(fd)
        finally:
            try:
                fs.unlink(path)
            except NodeError:
                pass
        raise
    return True


def try_acquire(fs: Fs, clock: Clock, path: str) -> str | None:
    """One attempt (S-LOCK-2): create, or reclaim a stale lock of a dead owner."""
    if hardened.enabled():
        return hardened.try_acquire(fs, clock, path)
    token = make_token(fs, clock)
    if create_lock(fs, path, token):
        return token
    try:
        first = fs.lstat(path)
        if not stat.S_ISREG(first.st_mode):
            return None
        age = clock.now_ms() - mtime_ms(first)
        if age <= STALE_MS or owner_alive(fs, path, age):
            return None
        again = fs.lstat(path)  # S-LOCK-4: nobody replaced it while we looked
        if again.st_ino != first.st_ino or again.st_mtime_ns != first.st_mtime_ns:
            return None
        try:
            fs.unlink(path)
        except NodeError:
            pass
        return token if create_lock(fs, path, token) else None
    except Exception:
        return None


def release(fs: Fs, path: str, token: str) -> None:
    """S-LOCK-5: unlink only a lock that still holds our token; errors are ignored."""
    if read_lock_content(fs, path) != token:
        return
    try:
        fs.unlink(path)
    except NodeError:
        pass


def acquire(fs: Fs, clock: Clock, path: str, shared: bool) -> str:
    """S-LOCK-6/7: poll every 20 ms within the window; shared mode adds one late retry."""
    deadline = clock.monotonic_ms() + (SHARED_WINDOW_MS if shared else LOCAL_WINDOW_MS)
    while True:
        token = try_acquire(fs, clock, path)
        if token is not None:
            return token
        clock.sleep_ms(POLL_MS)
        if clock.monotonic_ms() >= deadline:
            break
    if shared:
        clock.sleep_ms(SHARED_RETRY_DELAY_MS)
        token = try_acquire(fs, clock, path)
        if token is not None:
            return token
    raise LockBusy()


def with_lock(
    fs: Fs, clock: Clock, directory: str, shared: bool, fn: Callable[[str], T]
) -> T:
    """S-LOCK-9: create the directory, hold its lock around ``fn``, always release."""
    fs.mkdir(directory)
    path = lock_path(directory)
    token = acquire(fs, clock, path, shared)
    try:
        return fn(directory)
    finally:
        if hardened.enabled():
            hardened.release(fs, clock, path, token)
        else:
            release(fs, path, token)


__all__ = [
    "HARD_STALE_MS", "LOCK_BUSY_MESSAGE", "STALE_MS", "LockBusy", "acquire", "content_owner_alive",
    "create_lock", "make_token", "mtime_ms", "owner_alive", "release", "try_acquire", "with_lock",
]
