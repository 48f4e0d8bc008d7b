"""The reference's opt-in hardened lock (issue 13 item 6): off by default, and what it changes
when on — the token is never visible missing, reclaims are serialised, a failed release read
is retried."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memconform.reference import hardened, lock
from memconform.reference.clock import SystemClock
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs


def _dead_pid_lock(path: Path, age_s: float = 20.0) -> None:
    path.write_text("4194305\t1\tdead")  # below 2^31, no process can have it: ESRCH (S-LOCK-3)
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_off_by_default_the_spec_path_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hardened.ENV, raising=False)
    created: list[str] = []

    class Watch(Fs):
        def link(self, src: str, dst: str) -> None:
            created.append(dst)
            super().link(src, dst)

    path = str(tmp_path / ".lock")
    token = lock.try_acquire(Watch(), SystemClock(), path)
    assert token is not None and created == []  # SPEC: exclusive create, no temporary, no link
    assert (tmp_path / ".lock").read_text() == token


def test_on_the_lock_appears_with_its_token_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(hardened.ENV, "1")
    seen: list[str] = []

    class Watch(Fs):
        def link(self, src: str, dst: str) -> None:
            seen.append(Path(src).read_text())  # what readers see the instant the lock exists
            super().link(src, dst)

    path = str(tmp_path / ".lock")
    token = lock.try_acquire(Watch(), SystemClock(), path)
    assert token is not None and seen == [token]
    assert sorted(os.listdir(tmp_path)) == [".lock"]  # the temporary is gone
    assert lock.try_acquire(Watch(), SystemClock(), path) is None  # EEXIST: not acquired


def test_a_held_reclaim_guard_stops_a_second_reclaimer(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    _dead_pid_lock(path)
    (tmp_path / ".lock.reclaim").write_text(f"{os.getpid()}\t1\tlive")  # a live reclaimer
    assert hardened.try_acquire(Fs(), SystemClock(), str(path)) is None
    assert path.read_text() == "4194305\t1\tdead"  # left for the reclaimer that holds the guard
    (tmp_path / ".lock.reclaim").unlink()
    token = hardened.try_acquire(Fs(), SystemClock(), str(path))
    assert token is not None and path.read_text() == token
    assert not (tmp_path / ".lock.reclaim").exists()  # released after the reclaim


def test_a_dead_reclaimers_old_guard_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    _dead_pid_lock(path)
    _dead_pid_lock(tmp_path / ".lock.reclaim", age_s=11.0)
    token = hardened.try_acquire(Fs(), SystemClock(), str(path))
    assert token is not None and path.read_text() == token


def test_release_retries_a_failed_read_of_its_own_lock(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    token = "1\t2\tmine"
    path.write_text(token)
    fails = [2]

    class Flaky(Fs):
        def open(self, p: str, flags: int, mode: int = 0o666) -> int:
            if p == str(path) and not flags & os.O_CREAT and fails[0] > 0:
                fails[0] -= 1
                raise NodeError(5, "open", p)  # EIO
            return super().open(p, flags, mode)

    hardened.release(Flaky(), SystemClock(), str(path), token)
    assert not path.exists() and fails == [0]
    path.write_text(token)
    fails[0] = 2
    lock.release(Flaky(), str(path), token)  # SPEC: one read; a failure leaves our lock behind
    assert path.exists()
