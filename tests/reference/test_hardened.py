"""The opt-in hardened lock leaves alone every lock SPEC's liveness rules call live (S-LOCK-3),
and releases only its own token (S-LOCK-5): hardening narrows reclaims, it never adds one.

(What it closes under the nemesis is in tests/harness/test_nemesis_hardened.py.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from memconform.reference import hardened
from memconform.reference.clock import SystemClock
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs


def _aged(path: Path, text: str, age_s: float) -> None:
    path.write_text(text)
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_a_live_owners_old_lock_is_not_reclaimed(tmp_path: Path) -> None:
    """S-LOCK-3: a lock older than 10 s whose pid is alive stays."""
    path = tmp_path / ".lock"
    _aged(path, f"{os.getpid()}\t1\tlive", 30.0)
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    assert path.read_text() == f"{os.getpid()}\t1\tlive"


def test_a_young_dead_owners_lock_is_not_reclaimed(tmp_path: Path) -> None:
    """S-LOCK-3: only a lock older than 10 s can be stale, whatever its pid."""
    path = tmp_path / ".lock"
    _aged(path, "4194305\t1\tdead", 2.0)
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    assert path.exists()


def test_an_unreadable_pid_is_stale_only_past_a_minute(tmp_path: Path) -> None:
    """S-LOCK-3: no readable pid → stale after 60 s, not after 10 s."""
    path = tmp_path / ".lock"
    _aged(path, "garbage", 30.0)
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    _aged(path, "garbage", 61.0)
    token = hardened.try_acquire(Fs(), SystemClock(), str(path))
    assert token is not None and path.read_text() == token


def test_a_lock_that_is_not_a_regular_file_is_never_reclaimed(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    path.mkdir()
    then = time.time() - 120
    os.utime(path, (then, then))
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    assert path.is_dir()


def test_a_live_reclaim_guard_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    _aged(path, "4194305\t1\tdead", 20.0)
    _aged(tmp_path / ".lock.reclaim", f"{os.getpid()}\t1\tlive", 30.0)  # old, but its owner lives
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    assert path.read_text() == "4194305\t1\tdead"


def test_release_leaves_another_token_and_a_missing_lock_alone(tmp_path: Path) -> None:
    """S-LOCK-5: only our own token is removed; a lock already gone is nothing to release."""
    path = tmp_path / ".lock"
    path.write_text("1\t2\ttheirs")
    hardened.release(Fs(), SystemClock(), str(path), "1\t2\tmine")
    assert path.read_text() == "1\t2\ttheirs"
    path.unlink()
    hardened.release(Fs(), SystemClock(), str(path), "1\t2\tmine")
    assert not path.exists()


def test_release_gives_up_after_its_reads_keep_failing(tmp_path: Path) -> None:
    """Three failed reads of our own lock: it is left, as SPEC leaves it after one."""
    path = tmp_path / ".lock"
    path.write_text("1\t2\tmine")
    reads = [0]

    class Broken(Fs):
        def open(self, p: str, flags: int, mode: int = 0o666) -> int:
            if p == str(path) and not flags & os.O_CREAT:
                reads[0] += 1
                raise NodeError(5, "open", p)  # EIO
            return super().open(p, flags, mode)

    hardened.release(Broken(), SystemClock(), str(path), "1\t2\tmine")
    assert path.exists() and reads[0] == hardened.RELEASE_READS


def test_an_error_inside_a_reclaim_answers_not_acquired(tmp_path: Path) -> None:
    """A failing file system during the reclaim is "busy", never an exception out of the lock."""
    path = tmp_path / ".lock"
    _aged(path, "4194305\t1\tdead", 20.0)

    class NoLink(Fs):
        def link(self, src: str, dst: str) -> None:
            if dst.endswith(".reclaim"):
                raise NodeError(28, "link", dst)  # ENOSPC
            super().link(src, dst)

    assert hardened.try_acquire(NoLink(), SystemClock(), str(path)) is None
    assert path.read_text() == "4194305\t1\tdead"
