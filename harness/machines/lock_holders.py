"""The ``.lock`` protocol with several logical holders on one directory (S-LOCK-2..5, S-INV-9):
the ``lock_holders`` machine, the reference in process.

Each holder is a process as the lock sees it: its own ``Fs`` (pid, a liveness probe answered
from a process table: alive, dead or EPERM) and its own clock (jumps and skew).  Lock mtimes
follow the creator's clock (SPEC C-4), so ages are exact.  Rules acquire (one attempt,
``try_acquire``) and release with real files, kill holders, reuse pids, plant foreign or
malformed locks, and run one holder's attempt *inside* another's at a chosen ``Fs`` call.

Invariants: every plain attempt reaches the verdict SPEC prescribes (acquire, reclaim or
busy, from the lock's age and owner); never two live holders believe they hold the lock,
except through the documented race — no atomic compare-and-unlink (S-INV-9 a): a holder
that unlinks a lock whose content changed since it looked displaces the lock's owner; that
case is counted (``event``), not failed.  A believing holder's token is the lock's content.

Reference only (``bind`` refuses every other implementation): the holders are logical — fake
pids answered from a table, a clock per holder, one holder's attempt run *inside* another's
at a chosen ``Fs`` call — and the drivers expose no lock op, only whole store operations.
The lock protocol on real processes of any implementation is the ``lock_protocol`` machine
(real writers under the syscall scheduler) and ``memconform locks`` (the adversary matrix).
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import currently_in_test_context, target
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from memconform.reference.clock import ControlledClock
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs
from memconform.reference.lock import HARD_STALE_MS, STALE_MS, release, try_acquire
from memconform.reference.text import parse_int, trim

from ..drivers.peers import PeerSpec
from ..drivers.sandbox import Sandbox
from .base import Machine, guarded, note

START_MS = 1_780_000_000_000
PLANTS = ("dead-token", "live-token", "eperm-token", "garbage", "empty", "huge-pid", "zero-pid", "directory")


@dataclass
class World:
    """What every holder shares: the lock path, the process table, the race log."""

    lock: str
    table: dict[int, str] = field(default_factory=dict)  # pid -> alive | dead | eperm
    displaced: set[str] = field(default_factory=set)  # tokens deleted by a blind unlink
    races: int = 0

    def peek(self) -> bytes | None:
        try:
            st_ = os.lstat(self.lock)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st_.st_mode):
            return b"<special>"
        with open(self.lock, "rb") as f:
            return f.read()


class HolderFs(Fs):
    """One process's view: its pid, liveness from the table, mtimes from its clock."""

    def __init__(self, pid: int, world: World, clock: ControlledClock) -> None:
        self.pid, self.world, self.clock = pid, world, clock
        self.created: set[int] = set()
        self.reading: set[int] = set()
        self.last_seen: bytes | None = None
        self.hook: tuple[int, Callable[[], None]] | None = None
        self.lock_calls = 0

    def _lock_call(self, path: str | None) -> None:
        if path != self.world.lock:
            return
        self.lock_calls += 1
        if self.hook is not None and self.hook[0] == self.lock_calls:
            _, fn = self.hook
            self.hook = None
            fn()

    def getpid(self) -> int:
        return self.pid

    def kill(self, pid: int, sig: int) -> None:
        if pid >= 2**31:
            raise OverflowError("signed integer is greater than maximum")
        state = self.world.table.get(pid, "dead")
        if state == "dead":
            raise NodeError(errno.ESRCH, "kill")
        if state == "eperm":
            raise NodeError(errno.EPERM, "kill")

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        self._lock_call(path)
        fd = super().open(path, flags, mode)
        if path == self.world.lock:
            (self.created if flags & os.O_CREAT else self.reading).add(fd)
        return fd

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        data = super().pread(fd, size, offset)
        if fd in self.reading:
            self.last_seen = data
        return data

    def close(self, fd: int) -> None:
        if fd in self.created:  # SPEC C-4: the lock's mtime is its creator's clock
            ns = self.clock.now_ms() * 1_000_000
            os.utime(fd, ns=(ns, ns))
        self.created.discard(fd)
        self.reading.discard(fd)
        super().close(fd)

    def lstat(self, path: str) -> os.stat_result:
        self._lock_call(path)
        return super().lstat(path)

    def unlink(self, path: str) -> None:
        self._lock_call(path)
        if path == self.world.lock:
            current = self.world.peek()
            if current is not None and current != self.last_seen:
                # S-INV-9 a: the lock changed since this process read it; the unlink is blind
                self.world.races += 1
                self.world.displaced.add(current.decode("utf-8", "replace"))
                note("S-INV-9a race: a replaced lock was unlinked")
        super().unlink(path)


@dataclass
class Holder:
    name: str
    fs: HolderFs
    clock: ControlledClock
    token: str | None = None  # what this process believes it holds
    last_token: str | None = None


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """The reference in process only; a peer is refused with the command that attacks it."""
    if spec.kind == "python":
        return None
    return ("drives reference.lock with fake pids and per-holder clocks through the Fs seam; "
            "drivers have no lock op (for a peer: the lock_protocol machine, or `memconform locks`)")


class LockHoldersMachine(Machine):
    """Logical holders on one lock: SPEC's verdicts, and no double holding outside S-INV-9 a."""

    NAME = "lock_holders"
    CLAUSES = ("S-LOCK-2", "S-LOCK-3", "S-LOCK-4", "S-LOCK-5", "S-INV-9")
    EXAMPLES_SCALE = 2.0

    def __init__(self) -> None:
        super().__init__()
        self.sandbox = Sandbox.create()
        directory = self.sandbox.local_dir
        directory.mkdir(parents=True)
        self.world = World(str(directory / ".lock"))
        self.next_pid = 40_000
        self.holders = [self._spawn(f"h{i}", 0) for i in range(3)]
        self.recorder.tags.append("not-replayable: logical lock holders")

    def teardown(self) -> None:
        if currently_in_test_context():
            target(float(self.world.races), label="S-INV-9a races")  # steer towards the race
        shutil.rmtree(self.sandbox.root, ignore_errors=True)

    def _spawn(self, name: str, skew: int) -> Holder:
        """A fresh live process whose clock reads ``START_MS + skew``."""
        self.next_pid += 1
        self.world.table[self.next_pid] = "alive"
        clock = ControlledClock(START_MS)
        clock.advance(skew)
        return Holder(name, HolderFs(self.next_pid, self.world, clock), clock)

    # --- the oracle (S-LOCK-2/3) ---------------------------------------------------------

    def _predict(self, h: Holder) -> bool:
        """Would one plain attempt by ``h`` get the lock now?"""
        path = Path(self.world.lock)
        try:
            st_ = path.lstat()
        except FileNotFoundError:
            return True
        if not stat.S_ISREG(st_.st_mode):
            return False
        age = h.clock.now_ms() - st_.st_mtime_ns / 1e6
        if age <= STALE_MS:
            return False
        content = path.read_bytes()[:1024].decode("utf-8", "replace")
        pid = parse_int(trim(content).split("\t")[0])
        if math.isnan(pid) or math.isinf(pid) or pid <= 0 or pid != int(pid):
            return age > HARD_STALE_MS
        if pid >= 2**31:
            return False
        return self.world.table.get(int(pid), "dead") == "dead"

    # --- rules ------------------------------------------------------------------------

    @rule(i=st.integers(0, 2))
    @guarded
    def acquire(self, i: int) -> None:
        h = self.holders[i]
        expected = self._predict(h)
        got = try_acquire(h.fs, h.clock, self.world.lock)
        self.recorder.step("lock.try_acquire", {"holder": h.name})
        assert (got is not None) == expected, (
            f"{h.name} (pid {h.fs.pid}) {'acquired' if got else 'was refused'} the lock; SPEC says "
            f"{'acquire' if expected else 'busy'} (lock {self.world.peek()!r})"
        )
        if got is not None:
            h.token = h.last_token = got
        self.executed("acquire", "acquired" if got else "busy")

    @rule(i=st.integers(0, 2), stale=st.booleans())
    @guarded
    def release(self, i: int, stale: bool) -> None:
        """Release the held token, or (``stale``) one held earlier: never someone else's lock."""
        h = self.holders[i]
        token = h.token if h.token is not None and not stale else h.last_token or "0\t0\tnever"
        before = self.world.peek()
        release(h.fs, self.world.lock, token)
        after = self.world.peek()
        self.recorder.step("lock.release", {"holder": h.name, "stale": stale})
        if before == token.encode():
            assert after is None, f"{h.name} released its own lock but it is still there"
        else:
            assert after == before, f"{h.name} released a lock that was not its own: {before!r}"
        if token == h.token:
            h.token = None
        self.executed("release", "own" if before == token.encode() else "not own")

    @rule(i=st.integers(0, 2), state=st.sampled_from(("dead", "eperm", "reuse")))
    @guarded
    def process(self, i: int, state: str) -> None:
        """The holder's process dies (a new one takes the slot), turns EPERM, or a dead pid is reused."""
        h = self.holders[i]
        if state == "dead":
            self.world.table[h.fs.pid] = "dead"
            self.holders[i] = self._spawn(h.name, h.clock.now_ms() - START_MS)
        elif state == "eperm":
            self.world.table[h.fs.pid] = "eperm"
        else:
            dead = sorted(p for p, s in self.world.table.items() if s == "dead")
            if dead:
                self.world.table[dead[0]] = "alive"
        self.recorder.step("lock.process", {"holder": h.name, "state": state})
        self.executed("process", state)

    @rule(ms=st.sampled_from((1_000, 5_000, 10_001, 30_000, 61_000, -4_000)), i=st.one_of(st.none(), st.integers(0, 2)))
    @guarded
    def clock_jump(self, ms: int, i: int | None) -> None:
        """All clocks jump (``i`` None), or one holder's clock is skewed."""
        for h in self.holders if i is None else [self.holders[i]]:
            h.clock.advance(ms)
        self.recorder.step("lock.clock_jump", {"ms": ms, "holder": None if i is None else self.holders[i].name})
        self.executed("clock_jump", "all" if i is None else "skew")

    @rule(kind=st.sampled_from(PLANTS), age_s=st.sampled_from((61, 11, 0)))
    @guarded
    def plant(self, kind: str, age_s: int) -> None:
        """A lock left by someone outside the holders (crashed tool, half-written file …)."""
        for h in self.holders:  # a believing holder lets go first: planting is not clobbering
            if h.token is not None:
                release(h.fs, self.world.lock, h.token)
                h.token = None
        path = Path(self.world.lock)
        if path.is_dir():
            path.rmdir()
        elif path.exists():
            path.unlink()
        now = self.holders[0].clock.now_ms()
        created = now - age_s * 1000
        pid = {"dead-token": 4_194_000, "live-token": 41_999, "eperm-token": 41_998}.get(kind)
        self.world.table.update({41_999: "alive", 41_998: "eperm"})
        if kind == "directory":
            path.mkdir()
            self.recorder.step("mkdir", {"path": "agent/memory/.lock"})["note"] = "a directory as lock"
        else:
            text = {
                "garbage": "garbage", "empty": "", "huge-pid": "99999999999999999999\t1\tx",
                "zero-pid": "0\t1\tx",
            }.get(kind, f"{pid}\t{created}\tplanted")
            path.write_text(text)
            self.recorder.step("plant_lock", {"dir": "agent/memory", "content": text, "age_seconds": age_s})
        os.utime(path, ns=(created * 1_000_000, created * 1_000_000), follow_symlinks=False)
        self.executed("plant", kind)

    @rule(a=st.integers(0, 2), b=st.integers(0, 2), at=st.sampled_from((5, 4, 3, 2, 6, 1)), inner=st.sampled_from(("acquire", "release")), crashed=st.booleans())
    @guarded
    def interleave(self, a: int, b: int, at: int, inner: str, crashed: bool) -> None:
        """B acquires or releases just before A's ``at``-th call on the lock file.

        A releases when it believes it holds the lock, else it makes one attempt; the
        interesting window is A's stale-lock reclaim (calls 2-6: lstat, read, recheck,
        unlink, create), where B's own reclaim makes A's unlink blind (S-INV-9 a).
        """
        if a == b:
            b = (b + 1) % 3
        if crashed:  # both find the stale lock of a crashed holder: the S-INV-9 a setting
            self.plant("dead-token", 61)
        ha, hb = self.holders[a], self.holders[b]
        races = self.world.races

        def nested() -> None:
            if inner == "acquire":
                got = try_acquire(hb.fs, hb.clock, self.world.lock)
                if got is not None:
                    hb.token = hb.last_token = got
            elif hb.token is not None:
                release(hb.fs, self.world.lock, hb.token)
                hb.token = None

        ha.fs.lock_calls = 0
        ha.fs.hook = (at, nested)
        if ha.token is not None and ha.token not in self.world.displaced:
            outer = "release"
            release(ha.fs, self.world.lock, ha.token)
            ha.token = None
        else:
            outer = "acquire"
            got = try_acquire(ha.fs, ha.clock, self.world.lock)
            if got is not None:
                ha.token = ha.last_token = got
        reached = ha.fs.hook is None
        ha.fs.hook = None
        self.recorder.step("lock.interleave", {"outer": ha.name, "inner": hb.name, "at": at, "nested": inner})
        outcome = f"{outer}/{inner}" + ("" if reached else " (window missed)")
        if self.world.races > races:
            outcome += " RACE S-INV-9a"
        self.executed("interleave", outcome)

    # --- after every step -------------------------------------------------------------

    @invariant()
    @guarded
    def one_holder(self) -> None:
        believers = [
            h for h in self.holders
            if h.token is not None and h.token not in self.world.displaced
        ]
        assert len(believers) <= 1, (
            f"two live holders outside the documented race: {[(h.name, h.token) for h in believers]}"
        )
        if believers:
            content = self.world.peek()
            assert content == believers[0].token.encode(), (  # type: ignore[union-attr]
                f"{believers[0].name} believes it holds the lock, but it contains {content!r}"
            )
        for h in self.holders:  # a displaced holder no longer holds anything it could release
            if h.token is not None and h.token in self.world.displaced:
                note("S-INV-9a: a live holder lost its lock to a blind unlink")
