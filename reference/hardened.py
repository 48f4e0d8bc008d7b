"""An opt-in hardened lock (issue 13 item 6), OFF by default: ``MEMCONFORM_REFERENCE_HARDENED=1``.

The default reference follows SPEC exactly; this mode exists to measure what two SPEC-allowed
weaknesses cost under the nemesis and what closing them buys, with the same ``.lock`` file, the
same token format and the same liveness rules, so unchanged peers interoperate with it:

1. *Reclaim race* (S-INV-9 a; S-LOCK-2 step 4, S-LOCK-4): two writers that both judged a dead
   owner's lock stale can both pass the inode+mtime recheck; the later unlink then deletes the
   earlier reclaimer's fresh lock and both hold it.  Hardened: a reclaim (recheck, unlink,
   create) runs only while holding a second exclusive file ``D/.lock.reclaim`` with our token;
   that guard is itself taken over only when older than 10 s with a dead owner (S-LOCK-3).
   The liveness read must see the same file the ``lstat`` saw (a lock released meanwhile is
   not "unreadable", it is gone), and the recheck compares the content too: inode numbers are
   reused at once and mtimes are coarse, so inode+mtime alone cannot tell two locks apart.
2. *A visible empty lock* (S-LOCK-2 step 2 with S-LOCK-3's unreadable-pid rule; S-INV-9 c):
   between the exclusive create and the token write the lock is empty, and a writer whose clock
   runs more than a minute ahead judges it older than 60 s and reclaims a live lock.  Hardened:
   the token goes into a temporary first and is published with ``link`` (S-IO-5's exclusive
   publish), so no reader ever sees the lock without its token.
3. *A failed release read* (S-LOCK-5): if reading our own lock back fails (EIO), release leaves
   it, and with our pid alive it blocks every writer for as long as we live.  Hardened: the read
   is retried (three times, 20 ms apart) before the lock is left alone.

Measured under the nemesis (docs/NEMESIS.md): double holders 8 -> 0 pairs with 4 writers and
16 -> 2 with 8 (those 2 unexplained), no lost update left.  What stays when mixed with peers
that do not use it: a peer's reclaim still races ours (the peer does not take the guard), and
a peer's own lock is still empty for a moment after its create.
"""

from __future__ import annotations

import os
import stat

from .clock import Clock
from .errors import NodeError
from .fs import CREATE_EXCLUSIVE, Fs, read_lock_content
from .lock_owner import STALE_MS, content_owner_alive, make_token, mtime_ms

ENV = "MEMCONFORM_REFERENCE_HARDENED"  # opt-in, off by default
HARDENED_ENV = ENV
GUARD_SUFFIX = ".reclaim"
RELEASE_READS = 3


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def create_lock(fs: Fs, path: str, token: str) -> bool:
    """Publish ``path`` holding ``token`` whole, or answer False when it exists: the token is
    written to a temporary, then hard-linked (fails with EEXIST on an existing lock)."""
    tmp = f"{path}.tmp-{fs.getpid()}-{fs.random_token()}"
    fd = fs.open(tmp, CREATE_EXCLUSIVE, 0o666)
    try:
        try:
            data = token.encode("utf-8")
            while data:
                data = data[fs.write(fd, data) :]
        finally:
            fs.close(fd)
        try:
            fs.link(tmp, path)
        except NodeError as e:
            if e.code == "EEXIST":
                return False
            raise
        return True
    finally:
        try:
            fs.unlink(tmp)
        except NodeError:
            pass


def _same(st: os.stat_result, first: os.stat_result) -> bool:
    return st.st_ino == first.st_ino and st.st_mtime_ns == first.st_mtime_ns


def _stale(fs: Fs, clock: Clock, path: str) -> tuple[os.stat_result, str | None] | None:
    """``path`` as first seen and its content, when it is a regular file older than 10 s whose
    owner is dead (S-LOCK-3); the liveness read must see that same file (one released
    meanwhile is gone, not "unreadable")."""
    first = fs.lstat(path)
    if not stat.S_ISREG(first.st_mode):
        return None
    age = clock.now_ms() - mtime_ms(first)
    if age <= STALE_MS:
        return None
    content = read_lock_content(fs, path)
    if not _same(fs.lstat(path), first) or content_owner_alive(fs, content, age):
        return None
    return first, content


def _unchanged(fs: Fs, path: str, first: os.stat_result, content: str | None) -> bool:
    """S-LOCK-4's recheck, with the content too: inode numbers are reused at once and mtimes
    are coarse (tmpfs: a clock tick), so inode+mtime alone cannot tell two locks apart."""
    return _same(fs.lstat(path), first) and read_lock_content(fs, path) == content


def _take_guard(fs: Fs, clock: Clock, guard: str, token: str) -> bool:
    """Hold ``D/.lock.reclaim``; a guard whose owner died more than 10 s ago is taken over."""
    if create_lock(fs, guard, token):
        return True
    seen = _stale(fs, clock, guard)
    if seen is None or not _unchanged(fs, guard, *seen):
        return False
    try:
        fs.unlink(guard)
    except NodeError:
        pass
    return create_lock(fs, guard, token)


def try_acquire(fs: Fs, clock: Clock, path: str) -> str | None:
    """S-LOCK-2 with the token published whole and the reclaim serialised by the guard."""
    token = make_token(fs, clock)
    if create_lock(fs, path, token):
        return token
    try:
        seen = _stale(fs, clock, path)
        if seen is None:
            return None
        guard = path + GUARD_SUFFIX
        if not _take_guard(fs, clock, guard, token):
            return None
        try:
            if not _unchanged(fs, path, *seen):  # S-LOCK-4, now that no hardened reclaimer races us
                return None
            try:
                fs.unlink(path)
            except NodeError:
                pass
            return token if create_lock(fs, path, token) else None
        finally:
            release(fs, clock, guard, token)
    except Exception:
        return None


def release(fs: Fs, clock: Clock, path: str, token: str) -> None:
    """S-LOCK-5, with the read of our own lock retried before we give up on it."""
    for attempt in range(RELEASE_READS):
        content = read_lock_content(fs, path)
        if content is not None:
            break
        try:
            fs.lstat(path)
        except NodeError:
            return  # gone: nothing to release
        if attempt + 1 < RELEASE_READS:
            clock.sleep_ms(20)
    else:
        return
    if content != token:
        return
    try:
        fs.unlink(path)
    except NodeError:
        pass
