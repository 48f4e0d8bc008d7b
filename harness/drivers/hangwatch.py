"""Catch a driver that will never answer at once, instead of at the step timeout (issue 15).

While an op runs, ``wait_line`` waits for the answer line and, whenever none has come for a
poll interval, looks at the driver process in ``/proc``:

- **hang**: a thread blocked in a kernel wait on a file under the sandbox (a FIFO ``openat``
  or ``read``, a ``flock`` …; ``procs.blocked_in`` names the syscall and resolves the fd) and
  the process makes no progress (not runnable, no CPU, no bytes read or written) for
  ``hang_after`` (200 ms) when the file is a FIFO, socket or device or the call a file lock,
  for 2 s when it is a regular file (contention on a directory is slow, not endless)
  → ``Stuck("hang", "read(/…/HANDOFF.md)")``;
- **livelock**: the process is runnable (state R: running, or waiting only for a CPU, so a
  loaded machine does not hide it) in ≥ 80 % of the samples for ``livelock_after`` (0.75 s, so it is reported within a second),
  burns ≥ 0.2 s of CPU meanwhile (a starved process is runnable too) and reads and writes
  no byte - no syscalls at all, or the same few stats/opens repeating - →
  ``Stuck("livelock", "…")`` naming the syscalls it was seen in.

An op that answers is never slowed: ``/proc`` is read only after a poll interval (50 ms)
without an answer.  The per-op timeout stays the last resort.  Nothing here kills; the
caller (``peers.Driver.call``) does.
"""

from __future__ import annotations

import os
import platform
import queue
import stat
import time
from collections import Counter
from dataclasses import dataclass

from ..oracles.findings import HAZARD, Finding
from .procs import blocked_in

HANG_AFTER = 0.2
LIVELOCK_AFTER = 0.75
POLL = 0.05
BUSY_SHARE = 0.8
MIN_SPIN_CPU = 0.2  # seconds of CPU in the window


@dataclass(frozen=True)
class Stuck:
    """Why a driver will not answer: ``kind`` hang | livelock; ``where`` the syscall(s)."""

    kind: str
    where: str | None
    seconds: float  # how long the op had run when it was judged stuck


@dataclass(frozen=True)
class Sample:
    """What ``/proc`` says of a process at one instant."""

    at: float
    cpu_ticks: int  # utime + stime of all threads
    runnable: bool  # the main thread is running or waiting for a CPU (state R)
    written: int  # wchar: bytes written, whatever the target
    read: int  # rchar
    syscalls: int  # syscr + syscw
    current: tuple[str, ...]  # each thread's syscall name, or "running"


_NAMES = {
    "x86_64": {0: "read", 1: "write", 2: "open", 4: "stat", 5: "fstat", 6: "lstat", 7: "poll",
               17: "pread64", 21: "access", 72: "fcntl", 73: "flock", 202: "futex", 232: "epoll_wait",
               257: "openat", 262: "newfstatat", 281: "epoll_pwait", 332: "statx", 3: "close"},
    "aarch64": {63: "read", 64: "write", 56: "openat", 79: "newfstatat", 80: "fstat", 291: "statx",
                98: "futex", 22: "epoll_pwait", 57: "close", 67: "pread64"},
}


def sample(pid: int) -> Sample | None:
    """The process's counters now, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        runnable = fields[0] == "R"
        io: dict[str, int] = {}
        try:
            with open(f"/proc/{pid}/io", encoding="ascii") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    io[key] = int(value)
        except OSError:
            pass  # not readable here: progress is judged on CPU alone
        current = []
        table = _NAMES.get(platform.machine(), {})
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/syscall", encoding="ascii") as f:
                    first = f.read().split(" ", 1)[0].strip()
            except OSError:
                continue
            if first.isdigit():
                current.append(table.get(int(first), f"syscall {first}"))
            elif first == "running":
                current.append("running")
    except (OSError, ValueError, IndexError):
        return None
    return Sample(time.monotonic(), ticks, runnable, io.get("wchar", 0), io.get("rchar", 0),
                  io.get("syscr", 0) + io.get("syscw", 0), tuple(current))


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
REGULAR_PATIENCE = 2.0


def _patience(blocked: str, hang_after: float) -> float:
    """How long a wait may last before it is a hang: ``hang_after`` for what can block for ever
    (a FIFO, socket or device; a file lock), longer for a regular file, whose open or read
    only waits for the kernel (a directory busy with a dozen writers on a starved machine)."""
    name, _, target = blocked.partition("(")
    if name in ("flock", "fcntl"):
        return hang_after
    try:
        mode = os.stat(target[:-1] if target.endswith(")") else target).st_mode
    except OSError:
        return max(hang_after, REGULAR_PATIENCE)
    special = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
    return hang_after if special else max(hang_after, REGULAR_PATIENCE)


class Watch:
    """Judges a run of samples of one process: stuck yet?"""

    def __init__(self, pid: int, under: str | None, *, hang_after: float = HANG_AFTER,
                 livelock_after: float = LIVELOCK_AFTER) -> None:
        self.pid, self.under = pid, under
        self.hang_after, self.livelock_after = hang_after, livelock_after
        self.started = time.monotonic()
        self._blocked: str | None = None
        self._blocked_since: Sample | None = None
        self._busy_since: Sample | None = None
        self._seen: Counter[str] = Counter()
        self._samples = 0
        self._runnable = 0

    def check(self) -> Stuck | None:
        now = sample(self.pid)
        if now is None:
            return None
        return self._hang(now) or self._livelock(now)

    def _hang(self, now: Sample) -> Stuck | None:
        blocked = blocked_in(self.pid, self.under)
        first = self._blocked_since
        if blocked is None or blocked != self._blocked or first is None:
            self._blocked, self._blocked_since = blocked, now if blocked else None
            return None
        moved = now.cpu_ticks != first.cpu_ticks or now.written != first.written or now.read != first.read
        if moved or now.runnable:  # woken (maybe still waiting for a CPU): not stuck
            self._blocked_since = now
            return None
        if now.at - first.at >= _patience(blocked, self.hang_after):
            return Stuck("hang", blocked, now.at - self.started)
        return None

    def _livelock(self, now: Sample) -> Stuck | None:
        first = self._busy_since
        if first is None or now.written != first.written or now.read != first.read:  # I/O is progress
            self._busy_since, self._seen = now, Counter(now.current)
            self._samples, self._runnable = 1, int(now.runnable)
            return None
        self._samples += 1
        self._runnable += int(now.runnable)
        self._seen.update(now.current)
        if self._runnable < BUSY_SHARE * self._samples:
            self._busy_since = None  # it waits: not a spin
            return None
        wall = now.at - first.at
        cpu = (now.cpu_ticks - first.cpu_ticks) / _TICK
        # a process starved on a loaded machine is runnable too: it must also burn CPU for nothing
        if wall >= self.livelock_after and cpu >= MIN_SPIN_CPU:
            seen = [n for n, _ in self._seen.most_common(3) if n not in ("running", "futex", "epoll_wait", "epoll_pwait")]
            calls = now.syscalls - first.syscalls
            what = f"runnable for {wall:.2f} s ({cpu / wall:.0%} CPU), {calls} syscalls, no byte read or written"
            where = f"{what}; seen in {', '.join(seen)}" if seen else what
            return Stuck("livelock", where, now.at - self.started)
        return None


def wait_line(lines: queue.Queue[bytes | None], pid: int, under: str | None, timeout: float,
              *, hang_after: float = HANG_AFTER, livelock_after: float = LIVELOCK_AFTER,
              poll: float = POLL) -> tuple[bytes | None, Stuck | None]:
    """The next line (None: the driver closed stdout), or why it will not come.

    Raises ``queue.Empty`` at ``timeout`` when the driver was neither blocked nor spinning."""
    deadline = time.monotonic() + timeout
    try:
        return lines.get(timeout=min(poll, timeout)), None
    except queue.Empty:
        pass
    watch = Watch(pid, under, hang_after=hang_after, livelock_after=livelock_after)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise queue.Empty
        try:
            return lines.get(timeout=min(poll, left)), None
        except queue.Empty:
            pass
        stuck = watch.check()
        if stuck is not None:
            try:  # the answer may have come while we looked
                return lines.get_nowait(), None
            except queue.Empty:
                return None, stuck


def livelock(op: str, where: str | None, *, clause: str, seconds: float) -> Finding:
    """The ``livelock`` hazard: the tool spins and never answers (a loop with nothing changing)."""
    return Finding(
        kind="livelock", severity=HAZARD, clause=clause, op=op,
        syscall=(where or "").partition("seen in ")[2],
        evidence=f"the tool never answers: it spins ({where or 'busy'}); the driver was killed after {seconds:.2f} s",
    )
