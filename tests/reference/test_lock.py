"""The advisory ``.lock`` (S-LOCK-1..10, A-4, A-13, B-13, C-4, C-5).

Real processes: a live holder is a child that creates the lock and waits on a pipe; dead pids
are reaped children; EPERM comes from a probe run by a child that dropped to uid 65534.  Lock
ages are set with ``os.utime`` relative to the controlled clock (C-4).  Only S-LOCK-6/7 wait
for real windows; the other contention cases use a virtual clock whose sleeps advance time.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memconform.reference import lock as lockmod
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs
from memconform.reference.lock import (
    LOCK_BUSY_MESSAGE,
    owner_alive,
    release,
    try_acquire,
    with_lock,
)
from tests.conftest import NOW_MS, StoreEnv
from tests.support import (
    BUSY,
    TS,
    FaultFs,
    dead_pid,
    ends,
    run_promptly,
    store_with,
)

HOLDER = r"""
import os, secrets, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
token = f"{os.getpid()}\t{int(time.time() * 1000)}\t{secrets.token_hex(5)}"
os.write(fd, token.encode())
os.close(fd)
print("ready", flush=True)
sys.stdin.readline()
try:
    with open(path) as f:
        if f.read() == token:
            os.unlink(path)
except OSError:
    pass
print("released", flush=True)
"""


class Holder:
    """A live process holding ``path`` until ``release()``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"
        self.pid = self.proc.pid
        self.released = False
        self._mutex = threading.Lock()

    def content(self) -> str:
        return Path(self.path).read_text()

    def release(self) -> None:
        with self._mutex:
            if self.released:
                return
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            assert self.proc.stdout.readline() == "released\n"
            self.released = True

    def close(self) -> None:
        self.release()
        self.proc.wait(10)


@pytest.fixture
def holders() -> Iterator[Callable[[str], Holder]]:
    made: list[Holder] = []

    def make(path: str) -> Holder:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        h = Holder(path)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def age_lock(path: str, age_ms: int, now_ms: int = NOW_MS) -> None:
    """C-4: set the lock's mtime to ``now - age`` (exact milliseconds)."""
    t = (now_ms - age_ms) * 1_000_000
    os.utime(path, ns=(t, t), follow_symlinks=False)


def put_lock(directory: str, content: str | bytes, age_ms: int) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ".lock")
    data = content.encode() if isinstance(content, str) else content
    Path(path).write_bytes(data)
    age_lock(path, age_ms)
    return path


class VirtualClock:
    """Frozen wall time; sleeping advances a virtual monotonic time instead of waiting."""

    def __init__(self, now_ms: int = NOW_MS, step_ms: float = 0.0) -> None:
        self.wall = now_ms
        self.mono = 0.0
        self.step = step_ms
        self.sleeps: list[float] = []

    def now_ms(self) -> int:
        return self.wall

    def monotonic_ms(self) -> float:
        self.mono += self.step
        return self.mono

    def sleep_ms(self, ms: float) -> None:
        self.sleeps.append(ms)
        self.mono += ms


class CountingFs(Fs):
    """Counts exclusive creations of ``.lock`` (one per acquisition attempt)."""

    def __init__(self) -> None:
        self.attempts: list[float] = []

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        if path.endswith("/.lock") and flags & os.O_CREAT:
            self.attempts.append(time.monotonic())
        return super().open(path, flags, mode)


class EpermFs(Fs):
    """Signal-0 probes run by a child that dropped to an unprivileged uid (real EPERM)."""

    def __init__(self) -> None:
        self.errnos: list[int] = []

    def kill(self, pid: int, sig: int) -> None:
        if os.getuid() != 0:
            try:
                super().kill(pid, sig)
            except NodeError as e:
                self.errnos.append(e.errno)
                raise
            self.errnos.append(0)
            return
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            code = 0
            try:
                os.setuid(65534)
                os.kill(pid, sig)
            except OSError as e:
                code = e.errno or 255
            except Exception:
                code = 255
            os._exit(code)
        _, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status)
        self.errnos.append(code)
        if code:
            raise NodeError(code, "kill")


def settled(env: StoreEnv) -> dict[str, bytes]:
    env.store.parse_rules()
    return env.snapshot()


def lock_of(directory: str) -> str:
    return os.path.join(directory, ".lock")


# --- S-LOCK-1 constants and location ----------------------------------------------------


def test_s_lock_1_constants_and_path(env: StoreEnv) -> None:
    assert lockmod.STALE_MS == 10_000
    assert lockmod.HARD_STALE_MS == 60_000
    assert lockmod.POLL_MS == 20
    assert lockmod.LOCAL_WINDOW_MS == 500
    assert lockmod.SHARED_WINDOW_MS == 2_000
    assert lockmod.SHARED_RETRY_DELAY_MS == 1_000
    seen: list[str] = []

    def fn(directory: str) -> str:
        seen.extend(sorted(os.listdir(directory)))
        return "done"

    assert with_lock(Fs(), env.clock, env.local, False, fn) == "done"
    assert seen == [".lock"]
    assert os.listdir(env.local) == []


# --- S-LOCK-2 single attempt ------------------------------------------------------------


@pytest.mark.parametrize("pid", ["999999", "4194305"])
def test_s_lock_2_stale_dead_lock_reclaimed_by_write(env: StoreEnv, pid: str) -> None:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        pass
    else:  # pragma: no cover - only on hosts with a huge pid space
        pytest.skip(f"pid {pid} is alive here")
    put_lock(env.local, pid, 60_000)
    start = time.monotonic()
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert time.monotonic() - start < 0.4
    assert not env.exists("agent/memory/.lock")
    assert env.read("agent/memory/MEMORY.md") == f"# Memory Index\n\n\n- [T](t.md) {TS} -- s"


def test_s_lock_2_c4_age_boundary_is_strict(env: StoreEnv) -> None:
    pid = dead_pid()
    path = put_lock(env.local, f"{pid}\t1\tx", 10_000)
    assert try_acquire(Fs(), env.clock, path) is None
    assert Path(path).read_text() == f"{pid}\t1\tx"
    age_lock(path, 10_001)
    token = try_acquire(Fs(), env.clock, path)
    assert token is not None and token.startswith(f"{os.getpid()}\t{NOW_MS}\t")
    assert Path(path).read_text() == token  # re-created with the same token


def test_s_lock_2_create_error_other_than_eexist_raises(env: StoreEnv) -> None:
    denied = FaultFs()  # the first open of the lock is its exclusive creation
    denied.fail("open", match=ends("/.lock"), err=errno.EACCES, nth=None)
    env.store.parse_rules()
    with pytest.raises(NodeError) as e:
        store_with(env, denied).execute_write_memory("T", "c", "s")
    assert e.value.code == "EACCES"
    assert e.value.message == f"EACCES: permission denied, open '{lock_of(env.local)}'"
    assert os.listdir(env.local) == []


def test_s_lock_2_non_regular_lock_never_reclaimed(env: StoreEnv, tmp_path: Path) -> None:
    os.makedirs(env.local)
    path = lock_of(env.local)
    old_lock = tmp_path / "old"
    old_lock.write_text(str(dead_pid()))
    age_lock(str(old_lock), 120_000)
    kinds: list[Callable[[], None]] = [
        lambda: os.mkdir(path),
        lambda: os.mkfifo(path),
        lambda: os.symlink(old_lock, path),
    ]
    for make in kinds:
        make()
        if os.path.islink(path):
            age_lock(path, 120_000)
        assert try_acquire(Fs(), env.clock, path) is None
        st = os.lstat(path)
        assert not stat.S_ISREG(st.st_mode)
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
    assert old_lock.read_text().isdigit()


def test_s_lock_2_lost_race_at_recreate_is_busy(env: StoreEnv) -> None:
    path = put_lock(env.local, str(dead_pid()), 61_000)
    racer = f"{os.getpid() + 1}\t{NOW_MS}\tracer"

    def recreate(_: str) -> None:
        Path(path).write_text(racer)

    racing = FaultFs()
    racing.hook("unlink", run=recreate, match=lambda p: p == path, after=True, nth=None)
    assert try_acquire(racing, env.clock, path) is None
    assert Path(path).read_text() == racer


def test_s_lock_2_errors_after_creation_mean_not_acquired(env: StoreEnv) -> None:
    path = put_lock(env.local, str(dead_pid()), 61_000)

    broken = FaultFs()
    broken.fail("lstat", err=errno.EIO, nth=None)
    assert try_acquire(broken, env.clock, path) is None
    assert os.path.exists(path)


# --- S-LOCK-3 liveness ------------------------------------------------------------------

DEAD = "{dead}"  # replaced by a freshly reaped pid in the test (C-5)

LIVENESS_CASES: list[tuple[str, int, bool]] = [
    # (content, age ms, acquired)
    ("garbage", 20_000, False),
    ("garbage", 61_000, True),
    ("garbage", 60_000, False),
    ("garbage", 60_001, True),
    ("", 20_000, False),
    ("", 61_000, True),
    ("\tabc", 20_000, False),  # partial token: empty pid field
    ("\tabc", 61_000, True),
    # trimming drops the leading tab, so the stamp becomes the pid: out of range → alive
    (f"\t{NOW_MS}\tabc", 61_000, False),
    ("0x10", 20_000, False),
    ("0x10", 61_000, True),
    ("-5", 20_000, False),
    ("-5", 61_000, True),
    ("-0", 61_000, True),
    ("9" * 400, 20_000, False),  # parseInt → Infinity, not an integer
    ("9" * 400, 61_000, True),
    ("99999999999999999999", 61_000, False),  # out of range for the probe → alive
    ("2147483648", 61_000, False),
    (str(2**31 + 5) + "\tx", 120_000, False),
    ("4194305", 11_000, True),  # ESRCH → dead
    (f"{DEAD}", 11_000, True),
    (f"{DEAD}\t{NOW_MS}\tzz", 11_000, True),
    (f"  {DEAD}abc\tx", 11_000, True),
    (f"\u00a0\ufeff{DEAD}\tx", 11_000, True),
    (f"+{DEAD}", 11_000, True),
    (f"{DEAD}.5\tx", 11_000, True),
    (f"x{DEAD}", 20_000, False),
    (f"{DEAD}", 9_000, False),
]


@pytest.mark.parametrize(("content", "age", "acquired"), LIVENESS_CASES)
def test_s_lock_3_liveness_table(env: StoreEnv, content: str, age: int, acquired: bool) -> None:
    content = content.replace(DEAD, str(dead_pid()))
    path = put_lock(env.local, content, age)
    token = try_acquire(Fs(), env.clock, path)
    if acquired:
        assert token is not None and Path(path).read_text() == token
    else:
        assert token is None
        assert Path(path).read_text() == content


def test_s_lock_3_own_pid_is_alive(env: StoreEnv) -> None:
    path = put_lock(env.local, f"{os.getpid()}\t1\tx", 61_000)
    assert try_acquire(Fs(), env.clock, path) is None
    assert owner_alive(Fs(), path, 61_000)


def test_s_lock_3_live_holder_aged_is_alive(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    h = holders(lock_of(env.local))
    age_lock(h.path, 120_000)
    before = h.content()
    assert try_acquire(Fs(), env.clock, h.path) is None
    assert h.content() == before
    h.release()
    assert not os.path.exists(h.path)


def test_s_lock_3_c5_reaped_child_pid_is_dead(env: StoreEnv) -> None:
    pid = dead_pid()
    path = put_lock(env.local, f"{pid}\t1\tx", 11_000)
    assert not owner_alive(Fs(), path, 11_000)
    assert owner_alive(Fs(), path, 11_000) is False


def test_s_lock_3_eperm_counts_as_alive(env: StoreEnv, holders: Callable[[str], Holder]) -> None:
    h = holders(os.path.join(env.sandbox.root, "other", ".lock"))  # a live root-owned process
    pid = h.pid if os.getuid() == 0 else 1  # not root: pid 1 is someone else's
    path = put_lock(env.local, f"{pid}\t1\tx", 61_000)
    fs = EpermFs()
    assert owner_alive(fs, path, 61_000) is True
    assert fs.errnos == [errno.EPERM]
    assert try_acquire(fs, env.clock, path) is None
    assert Path(path).read_text() == f"{pid}\t1\tx"
    # the same probe of a reaped pid is ESRCH, i.e. dead, even from the unprivileged child
    Path(path).write_text(str(dead_pid()))
    age_lock(path, 61_000)
    fs = EpermFs()
    assert owner_alive(fs, path, 61_000) is False
    assert fs.errnos == [errno.ESRCH]


def test_s_lock_3_b13_out_of_range_pid_alive(env: StoreEnv) -> None:
    for pid in ["2147483648", "99999999999999999999", str(2**63)]:
        path = put_lock(env.local, pid, 600_000)
        assert owner_alive(Fs(), path, 600_000) is True
        assert try_acquire(Fs(), env.clock, path) is None
        os.unlink(path)


def test_s_lock_3_a4_unreadable_lock_content(env: StoreEnv, tmp_path: Path) -> None:
    target = tmp_path / "content"
    target.write_text(str(dead_pid()))
    os.makedirs(env.local)
    link = lock_of(env.local)
    os.symlink(target, link)
    # no-follow read fails → unreadable pid → alive until 60 s
    assert owner_alive(Fs(), link, 30_000) is True
    assert owner_alive(Fs(), link, 61_000) is False
    os.unlink(link)
    os.mkfifo(link)
    start = time.monotonic()
    assert owner_alive(Fs(), link, 30_000) is True
    assert owner_alive(Fs(), link, 61_000) is False
    assert time.monotonic() - start < 2.0
    os.unlink(link)
    # at most 1 024 bytes are read: a pid beyond them is not seen
    Path(link).write_text(" " * 1024 + str(dead_pid()))
    assert owner_alive(Fs(), link, 30_000) is True
    Path(link).write_text(" " * 1000 + str(dead_pid()))
    assert owner_alive(Fs(), link, 30_000) is False


# --- S-LOCK-4 reclaim recheck -----------------------------------------------------------


def test_s_lock_4_replaced_during_liveness_check(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    path = put_lock(env.local, f"{dead_pid()}\t1\tx", 61_000)
    spare = holders(os.path.join(env.sandbox.root, "spare", ".lock"))
    replacement = f"{spare.pid}\t{NOW_MS}\treplacement"

    def replace(_: str) -> None:
        os.unlink(path)
        Path(path).write_text(replacement)
        age_lock(path, 61_000 - 5)

    fs = FaultFs()
    replaced = fs.hook("kill", run=replace)  # at the first liveness probe
    assert try_acquire(fs, env.clock, path) is None
    assert replaced.fired
    assert Path(path).read_text() == replacement
    # through a write: busy, and the replacement lock is intact
    fs = FaultFs()
    fs.hook("kill", run=replace)
    result = store_with(env, fs, VirtualClock()).execute_write_memory("T", "c", "s")
    assert result == BUSY
    assert Path(path).read_text() == replacement
    assert sorted(os.listdir(env.local)) == [".lock"]


def test_s_lock_4_mtime_compared_to_the_millisecond(env: StoreEnv) -> None:
    path = put_lock(env.local, str(dead_pid()), 61_000)

    def touch(_: str) -> None:
        t = os.lstat(path).st_mtime_ns + 1_000_000
        os.utime(path, ns=(t, t))

    fs = FaultFs()
    probes = fs.hook("kill", run=touch, nth=None)
    clock = VirtualClock()
    result = store_with(env, fs, clock).execute_write_memory("T", "c", "s")
    assert result == BUSY
    assert probes.fired == 25
    assert os.path.exists(path) and sorted(os.listdir(env.local)) == [".lock"]


# --- S-LOCK-5 release -------------------------------------------------------------------


def test_s_lock_5_release_only_own_token(env: StoreEnv, tmp_path: Path) -> None:
    fs = Fs()
    os.makedirs(env.local)
    path = lock_of(env.local)
    token = f"{os.getpid()}\t{NOW_MS}\tabc"
    Path(path).write_text(token)
    release(fs, path, token)
    assert not os.path.exists(path)
    release(fs, path, token)  # missing: ignored
    for other in [token + "\n", token[:-1], f"{os.getpid()}\t{NOW_MS}\tabd", token + "x" * 2000]:
        Path(path).write_text(other)
        release(fs, path, token)
        assert Path(path).read_text() == other
    os.unlink(path)
    target = tmp_path / "target"
    target.write_text(token)
    os.symlink(target, path)
    release(fs, path, token)
    assert os.path.islink(path) and target.read_text() == token
    os.unlink(path)
    os.mkdir(path)
    release(fs, path, token)
    assert os.path.isdir(path)


def test_s_lock_5_replaced_lock_left_alone(env: StoreEnv) -> None:
    other = f"{os.getpid() + 1}\t{NOW_MS}\tsomeoneelse"

    def replace(_: str) -> None:
        lock = lock_of(env.local)
        os.unlink(lock)
        Path(lock).write_text(other)

    fs = FaultFs()
    fs.hook("rename", run=replace, match=ends("MEMORY.md"), after=True, nth=None)
    result = store_with(env, fs).execute_write_memory("T", "c", "s")
    assert result == 'Created memory topic "T" (t.md).'
    assert Path(lock_of(env.local)).read_text() == other


def test_s_lock_5_a4_fifo_swapped_in_does_not_block_release(env: StoreEnv) -> None:
    lock = lock_of(env.local)

    def swap_in_fifo(_: str) -> None:
        os.unlink(lock)
        os.mkfifo(lock)

    fs = FaultFs()
    fs.hook("rename", run=swap_in_fifo, match=ends("MEMORY.md"), after=True, nth=None)
    box = run_promptly(lambda: store_with(env, fs).execute_write_memory("T", "c", "s"), lock)
    assert box["result"] == 'Created memory topic "T" (t.md).'
    assert stat.S_ISFIFO(os.lstat(lock).st_mode)


# --- S-LOCK-6 local policy --------------------------------------------------------------


def test_s_lock_6_local_busy_after_half_a_second(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    h = holders(lock_of(env.local))
    timer = threading.Timer(1.0, h.release)
    before = settled(env)
    timer.start()
    try:
        start = time.monotonic()
        result = env.store.execute_write_memory("T", "c", "s")
        elapsed = time.monotonic() - start
        after = env.snapshot()
    finally:
        timer.join()
    assert result == BUSY
    assert 0.45 <= elapsed < 0.95, elapsed
    assert after == before


def test_s_lock_6_poll_structure(env: StoreEnv, holders: Callable[[str], Holder]) -> None:
    h = holders(lock_of(env.local))
    fs, clock = CountingFs(), VirtualClock()
    assert store_with(env, fs, clock).execute_write_memory("T", "c", "s") == BUSY
    assert clock.sleeps == [20] * 25
    assert len(fs.attempts) == 25
    assert os.path.exists(h.path)


def test_s_lock_6_at_least_one_attempt(env: StoreEnv, holders: Callable[[str], Holder]) -> None:
    fs, clock = CountingFs(), VirtualClock(step_ms=10_000)
    assert store_with(env, fs, clock).execute_write_memory("T", "c", "s") == (
        'Created memory topic "T" (t.md).'
    )
    assert len(fs.attempts) == 1
    holders(lock_of(env.local))
    fs, clock = CountingFs(), VirtualClock(step_ms=10_000)
    assert store_with(env, fs, clock).execute_write_memory("U", "c", "s") == BUSY
    assert len(fs.attempts) == 1


def test_s_lock_6_released_within_window_succeeds(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    h = holders(lock_of(env.local))
    fs = CountingFs()
    timer = threading.Timer(0.2, h.release)
    timer.start()
    try:
        result = store_with(env, fs).execute_write_memory("T", "c", "s")
    finally:
        timer.join()
    assert result == 'Created memory topic "T" (t.md).'
    assert len(fs.attempts) >= 2


# --- S-LOCK-7 shared policy -------------------------------------------------------------


def test_s_lock_7_shared_window_then_one_retry(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    env.shared_mode()
    h = holders(lock_of(env.shared))
    before = settled(env)
    fs = CountingFs()
    start = time.monotonic()
    result = store_with(env, fs).execute_write_memory("T", "c", "s")
    elapsed = time.monotonic() - start
    assert result == BUSY
    assert 2.9 <= elapsed < 4.0, elapsed
    assert env.snapshot() == before
    gaps = [b - a for a, b in zip(fs.attempts, fs.attempts[1:], strict=False)]
    assert gaps[-1] >= 0.95
    assert all(g < 0.5 for g in gaps[:-1])
    assert fs.attempts[-2] - fs.attempts[0] < 2.3
    assert os.path.exists(h.path)


def test_s_lock_7_released_at_2_5_s_succeeds_at_3_s(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    env.shared_mode()
    env.store.parse_rules()
    h = holders(lock_of(env.shared))
    timer = threading.Timer(2.5, h.release)
    timer.start()
    try:
        start = time.monotonic()
        result = env.store.execute_write_memory("T", "c", "s")
        elapsed = time.monotonic() - start
    finally:
        timer.join()
    assert result == 'Created memory topic "T" (t.md).'
    assert 2.9 <= elapsed < 3.8, elapsed
    assert env.read("home/.agents/memory/MEMORY.md") == f"# Memory Index\n\n\n- [T](t.md) {TS} -- s"
    assert not env.exists("home/.agents/memory/.lock")


def test_s_lock_7_poll_structure(env: StoreEnv, holders: Callable[[str], Holder]) -> None:
    env.shared_mode()
    holders(lock_of(env.shared))
    fs, clock = CountingFs(), VirtualClock()
    assert store_with(env, fs, clock).execute_write_memory("T", "c", "s") == BUSY
    assert clock.sleeps == [20] * 100 + [1000]
    assert len(fs.attempts) == 101


# --- S-LOCK-8 busy text, nothing written ------------------------------------------------


def test_s_lock_8_busy_text_for_all_mutations(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    assert LOCK_BUSY_MESSAGE == BUSY
    env.put("agent/memory/MEMORY.md", "- [A](a.md) 2020-01-01 -- a")
    env.put("agent/memory/a.md", "a\n")
    holders(lock_of(env.local))
    before = settled(env)
    store = store_with(env, clock=VirtualClock())
    assert store.execute_write_memory("A", "c", "s") == BUSY
    assert store.execute_remove_memory("A") == BUSY
    assert store.execute_pin_memory("A", True) == BUSY
    assert env.snapshot() == before


def test_s_lock_8_every_store_write_happens_under_own_lock(env: StoreEnv) -> None:
    checked: list[str] = []

    def check(dst: str) -> None:
        with open(lock_of(os.path.dirname(dst))) as f:
            assert f.read().startswith(f"{os.getpid()}\t")
        checked.append(os.path.basename(dst))

    fs = FaultFs()
    fs.hook("rename", run=check, nth=None)
    env.shared_mode()
    env.store.parse_rules()
    store = store_with(env, fs)
    store.execute_write_memory("A", "a", "a")
    store.execute_pin_memory("A", True)
    store.execute_pin_memory("A", False)
    store.execute_remove_memory("A")
    store.execute_write_memory("A", "b", "b")
    assert checked == ["a.md", "MEMORY.md"] + ["MEMORY.md"] * 2 + [".ocl-removed", "MEMORY.md"] + [
        "a.md",
        "MEMORY.md",
        ".ocl-removed",
    ]


# --- S-LOCK-9 withLock ------------------------------------------------------------------


def test_s_lock_9_creates_directory_passes_it_and_releases(tmp_path: Path) -> None:
    clock = VirtualClock()
    target = str(tmp_path / "a" / "b" / "c")
    got: list[str] = []

    def fn(d: str) -> int:
        got.append(d)
        return 42

    assert with_lock(Fs(), clock, target, False, fn) == 42
    assert got == [target]
    assert os.listdir(target) == []

    class Boom(Exception):
        pass

    err = Boom("x")

    def raising(d: str) -> None:
        assert os.path.exists(os.path.join(d, ".lock"))
        raise err

    with pytest.raises(Boom) as e:
        with_lock(Fs(), clock, target, False, raising)
    assert e.value is err
    assert os.listdir(target) == []


def test_s_lock_9_policy_follows_the_directory(
    env: StoreEnv, holders: Callable[[str], Holder]
) -> None:
    holders(lock_of(env.local))
    holders(lock_of(env.shared))
    clock = VirtualClock()
    assert store_with(env, clock=clock).execute_write_memory("T", "c", "s") == BUSY
    assert clock.sleeps == [20] * 25
    env.shared_mode()
    clock = VirtualClock()
    assert store_with(env, clock=clock).execute_write_memory("T", "c", "s") == BUSY
    assert clock.sleeps == [20] * 100 + [1000]


def test_s_lock_9_directory_resolved_once(env: StoreEnv) -> None:
    rules = os.path.join(env.agent, "memory.jsonc")

    def toggle(_: str) -> None:
        Path(rules).write_text('{"shared_dir": true}')

    fs = FaultFs()
    fs.hook("rename", run=toggle, match=ends("/t.md"), nth=None)
    env.store.parse_rules()
    store = store_with(env, fs)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert sorted(os.listdir(env.local)) == ["MEMORY.md", "t.md"]
    assert env.read("agent/memory/MEMORY.md") == f"# Memory Index\n\n\n- [T](t.md) {TS} -- s"
    assert not env.exists("home/.agents/memory/MEMORY.md")


# --- S-LOCK-10 no in-process mutex ------------------------------------------------------


def test_s_lock_10_concurrent_writes_in_one_process(env: StoreEnv) -> None:
    a_holds, b_polled = threading.Event(), threading.Event()
    labels: dict[int, str] = {}

    class ContendedFs(Fs):
        def open(self, path: str, flags: int, mode: int = 0o666) -> int:
            label = labels.get(threading.get_ident())
            creating_lock = path.endswith("/.lock") and bool(flags & os.O_CREAT)
            try:
                fd = super().open(path, flags, mode)
            except NodeError as e:
                if e.code == "EEXIST" and label == "B" and creating_lock:
                    b_polled.set()
                raise
            if label == "A" and creating_lock:
                a_holds.set()
            return fd

        def rename(self, src: str, dst: str) -> None:
            if labels.get(threading.get_ident()) == "A" and dst.endswith("/a.md"):
                assert b_polled.wait(5), "the second write never polled the lock"
            super().rename(src, dst)

    env.store.parse_rules()
    store = store_with(env, ContendedFs())
    results: dict[str, str] = {}

    def write(label: str) -> None:
        labels[threading.get_ident()] = label
        if label == "B":
            assert a_holds.wait(5)
        results[label] = store.execute_write_memory(label, "c", label.lower())

    threads = [threading.Thread(target=write, args=(label,)) for label in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert b_polled.is_set()
    assert results == {
        "A": 'Created memory topic "A" (a.md).',
        "B": 'Created memory topic "B" (b.md).',
    }
    index = env.read("agent/memory/MEMORY.md")
    assert index.count("](a.md)") == 1 and index.count("](b.md)") == 1
    assert index == f"# Memory Index\n\n\n- [A](a.md) {TS} -- a\n- [B](b.md) {TS} -- b"
    assert sorted(os.listdir(env.local)) == ["MEMORY.md", "a.md", "b.md"]


# --- A-13 failed token write ------------------------------------------------------------


def test_s_lock_2_a13_failed_token_write_leaves_no_lock(env: StoreEnv) -> None:
    full = FaultFs()  # only the lock's creator writes to it
    full.fail("write", match=ends("/.lock"), err=errno.ENOSPC, nth=None)
    before = settled(env)
    with pytest.raises(NodeError) as e:
        store_with(env, full).execute_write_memory("T", "c", "s")
    assert e.value.code == "ENOSPC"
    assert e.value.message == "ENOSPC: no space left on device, write"
    assert not env.exists("agent/memory/.lock")
    after = env.snapshot()
    after.pop("agent/memory", None)
    before.pop("agent/memory", None)
    assert after == before
    start = time.monotonic()
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert time.monotonic() - start < 0.4
