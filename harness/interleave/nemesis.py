"""Faults while writers race (issue 13): seeded schedules and the fault actions.

A ``Schedule`` is drawn from a seed before the run and saved in the history (``meta``), so a
run is re-run from its history: the same faults at the same offsets, on the same slots, with
the same parameters (timing of the writers still differs, so a finding reproduces "k of n").

Families, each as a real store sees it:

- ``kill``: SIGKILL a writer mid-op (its op becomes ``info``); the engine starts a fresh writer
  of the same implementation in its slot.  Half the kills aim at the lock holder (the pid in
  ``.lock``), so a dead owner's lock is left behind under racing writers.
- ``pause``: SIGSTOP a writer (half the time the holder, inside its critical section) for
  longer than every tool's lock window (local 0.5 s; shared 3 s, OpenCode 5 s), then SIGCONT.
- ``stale-lock``: plant, only with ``O_EXCL`` when no lock exists, what a crashed writer leaves:
  a dead pid's token aged past 10 s, or an empty lock aged past 60 s (S-INV-8.6); nobody removes
  it but the writers' reclaim (its owner is dead), the outcome says whether they did.
- ``foreign-lock``: plant the same way what other tools and restores leave: an empty file,
  garbage, a directory, a symlink, a FIFO, a live pid of another user; removed after a while
  as its owner would (only while it is still the planted inode).
- ``slow``: attach ``strace`` to a writer and delay one store syscall on one store path by
  1–50 ms (``delay_enter``) for the fault's duration.
- ``errno``: attach ``strace`` and fail the first matching store syscall with ENOSPC or EIO.
- ``clock``: skew a writer's clock by ± minutes (protocol ``set_clock`` in ``offset`` mode);
  the engine applies it between the writer's ops, and puts it back at the fault's end.
"""

from __future__ import annotations

import os
import random
import re
import signal
import stat
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..faults.strace import STRACE, strace_unavailable, traced_by

FAMILIES = ("kill", "pause", "stale-lock", "foreign-lock", "slow", "errno", "clock")
STRACE_FAMILIES = frozenset({"slow", "errno"})
FOREIGN_KINDS = ("empty", "garbage", "directory", "symlink", "fifo", "other-uid")
LOCK = ".lock"
INDEX = "MEMORY.md"
# (syscall, store file) pairs a writer really makes: lock create / token write / release,
# index read and publish, topic publish.  ``topic`` is resolved to a topic file of the run.
TARGETS = (
    ("openat", LOCK), ("write", LOCK), ("unlink", LOCK),
    ("openat", INDEX), ("rename", INDEX), ("rename", "topic"), ("openat", "topic"),
)


class ScheduleError(ValueError):
    """A family name or parameter that no schedule can have."""


def expand(families: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``all`` is every family in turn; names are checked."""
    out: list[str] = []
    for name in families:
        for part in str(name).split(","):
            part = part.strip()
            if part == "all":
                out.extend(FAMILIES)
            elif part in FAMILIES:
                out.append(part)
            elif part:
                raise ScheduleError(f"unknown nemesis family {part!r} (one of {', '.join(FAMILIES)}, all)")
    if not out:
        raise ScheduleError("no nemesis family given")
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class FaultPlan:
    """One planned fault: ``at`` seconds after the writers start, on ``target`` (a slot, or
    ``holder``: whoever holds the lock then, else ``slot``)."""

    id: int
    at: float
    family: str
    slot: int
    holder: bool = False
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Schedule:
    seed: int
    families: tuple[str, ...]
    interval: float
    time_limit: float
    writers: int
    shared: bool
    faults: tuple[FaultPlan, ...]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["families"] = list(self.families)
        d["faults"] = [f.to_json() for f in self.faults]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Schedule:
        faults = tuple(FaultPlan(int(f["id"]), float(f["at"]), str(f["family"]), int(f["slot"]),
                                 bool(f.get("holder", False)), dict(f.get("params") or {})) for f in d["faults"])
        return cls(int(d["seed"]), tuple(d["families"]), float(d["interval"]), float(d["time_limit"]),
                   int(d["writers"]), bool(d["shared"]), faults)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(self.families, 0)
        for f in self.faults:
            out[f.family] = out.get(f.family, 0) + 1
        return out


def _params(rng: random.Random, family: str, shared: bool, interval: float) -> dict[str, Any]:
    if family == "pause":
        return {"duration": round(rng.uniform(5.2, 7.5) if shared else rng.uniform(0.7, 2.0), 3)}
    if family == "stale-lock":
        if rng.random() < 0.5:
            return {"kind": "dead-pid", "age_s": round(rng.uniform(10.5, 30.0), 3), "duration": interval}
        return {"kind": "no-pid", "age_s": round(rng.uniform(60.5, 120.0), 3), "duration": interval}
    if family == "foreign-lock":
        return {"kind": rng.choice(FOREIGN_KINDS), "duration": round(rng.uniform(0.2, 1.5) * interval, 3)}
    if family in ("slow", "errno"):
        syscall, path = rng.choice(TARGETS)
        p: dict[str, Any] = {"syscall": syscall, "path": path, "topic_pick": rng.random(),
                             "duration": round(max(0.5, interval), 3)}
        if family == "slow":
            p["delay_ms"] = rng.randint(1, 50)
        else:
            p["errno"] = rng.choice(("ENOSPC", "EIO"))
        return p
    if family == "clock":
        minutes = rng.uniform(1.0, 30.0) * rng.choice((-1, 1))
        return {"skew_ms": round(minutes * 60_000), "duration": round(rng.uniform(1.0, 3.0) * interval, 3)}
    return {}


def make_schedule(
    seed: int,
    families: list[str] | tuple[str, ...],
    *,
    interval: float = 1.0,
    time_limit: float = 10.0,
    writers: int = 4,
    shared: bool = False,
) -> Schedule:
    """Faults every ``interval`` seconds (± 50 %) until ``time_limit``, families in turn."""
    if interval <= 0 or time_limit <= 0 or writers < 1:
        raise ScheduleError("interval, time limit and writers must be positive")
    names = expand(families)
    rng = random.Random(f"nemesis-{seed}")
    faults: list[FaultPlan] = []
    t = rng.uniform(0.2, 0.6) * interval
    while t < time_limit * 0.9:
        family = names[len(faults) % len(names)]
        holder = family in ("kill", "pause") and rng.random() < 0.5
        faults.append(FaultPlan(len(faults), round(t, 3), family, rng.randrange(writers), holder,
                                _params(rng, family, shared, interval)))
        t += interval * rng.uniform(0.5, 1.5)
    return Schedule(seed, names, interval, time_limit, writers, shared, tuple(faults))


def strace_reason(families: tuple[str, ...]) -> str | None:
    """Why the strace families of a schedule cannot run here, else None."""
    if STRACE_FAMILIES & set(families):
        return strace_unavailable()
    return None


# --- fault actions -------------------------------------------------------------------------


def lock_holder_pid(directory: Path) -> int | None:
    """The pid in ``D/.lock`` (S-FMT-13's first field), if it is a readable regular file."""
    try:
        fd = os.open(directory / LOCK, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 64).split(b"\t", 1)[0].strip()
    finally:
        os.close(fd)
    return int(head) if head.isdigit() else None


def signal_pid(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except OSError:
        return False
    return True


def _other_uid_pid() -> int:
    """A live process of another user (its liveness probe says EPERM, or, as root, alive)."""
    me = os.getuid()
    for entry in sorted(os.listdir("/proc"), key=lambda n: (not n.isdigit(), len(n), n)):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != me:
                    return int(entry)
            except OSError:
                continue
    return 1


@dataclass
class Planted:
    """A lock the nemesis created: where, what, and the inode it got (to remove only it)."""

    path: Path
    kind: str
    ino: int
    is_dir: bool = False
    content: bytes | None = None  # a regular file's bytes (inode numbers are reused at once)
    # file type and change time as planted: tmpfs hands a freed inode number to the next file
    # at once, so a writer that reclaimed the plant and created its own lock (empty for a
    # moment) can look like the plant by inode and content; its type or ctime differs
    fmt: int = 0
    ctime_ns: int = 0


def plant_lock(directory: Path, kind: str, *, age_s: float = 0.0, dead_pid: int = 0,
               attempts: int = 400) -> Planted | None:
    """Create ``D/.lock`` of ``kind`` only when none exists (``O_EXCL``, ``mkdir``, ``symlink``,
    ``mkfifo`` all fail on an existing name): a live lock is never replaced.  Polls (every 5 ms,
    up to ``attempts`` times) for a moment without a lock; None when there was none."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK
    now_ms = time.time_ns() // 1_000_000
    content = {
        "dead-pid": f"{dead_pid}\t{now_ms - int(age_s * 1000)}\tnemesis",
        "no-pid": "",
        "empty": "",
        "garbage": "not a lock token \x00\xff",
        "other-uid": f"{_other_uid_pid()}\t{now_ms}\tforeign",
    }
    for _ in range(attempts):
        try:
            if kind == "directory":
                os.mkdir(path)
                return _planted(path, kind, os.lstat(path), is_dir=True)
            if kind == "symlink":
                target = directory.parent / "foreign-owner.lock"
                target.write_text(f"{_other_uid_pid()}\t{now_ms}\tforeign")
                os.symlink(target, path)
                return _planted(path, kind, os.lstat(path))
            if kind == "fifo":
                os.mkfifo(path, 0o600)
                return _planted(path, kind, os.lstat(path))
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            time.sleep(0.005)
            continue
        data = content[kind].encode("utf-8", "surrogateescape")
        try:
            os.write(fd, data)
            if age_s:
                then = time.time() - age_s
                os.utime(fd, (then, then))
            st = os.fstat(fd)  # through the descriptor: the very file planted, even if reclaimed since
        finally:
            os.close(fd)
        return _planted(path, kind, st, content=data)
    return None


def _planted(path: Path, kind: str, st: os.stat_result, *, is_dir: bool = False,
             content: bytes | None = None) -> Planted:
    return Planted(path, kind, st.st_ino, is_dir=is_dir, content=content,
                   fmt=stat.S_IFMT(st.st_mode), ctime_ns=st.st_ctime_ns)


def _same_file(p: Planted, st: os.stat_result) -> bool:
    return (st.st_ino, stat.S_IFMT(st.st_mode), st.st_ctime_ns) == (p.ino, p.fmt, p.ctime_ns)


def still_planted(p: Planted) -> bool:
    """Whether ``D/.lock`` is still the planted file (inode, type, ctime) with the planted content."""
    try:
        st = os.lstat(p.path)
    except OSError:
        return False
    return _same_file(p, st) and (p.content is None or _content(p.path) == p.content)


def remove_planted(p: Planted) -> str:
    """Remove a planted lock as its owner would: only while it is still the same inode with
    the same content (the read and the unlink are not atomic, as S-INV-9 a says of release).
    Answers ``removed``, ``gone`` (someone reclaimed it) or ``replaced`` (left alone)."""
    try:
        st = os.lstat(p.path)
    except FileNotFoundError:
        return "gone"
    if not _same_file(p, st) or (p.content is not None and _content(p.path) != p.content):
        return "replaced"
    try:
        if p.is_dir:
            os.rmdir(p.path)
        else:
            os.unlink(p.path)
    except OSError:
        return "gone"
    return "removed"


def _content(path: Path) -> bytes | None:
    """A regular file's first KiB, read as S-LOCK-5's release reads (no-follow, non-blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, 1024) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


@dataclass
class Attached:
    """An ``strace -p`` attached to a running writer for one fault; ``detach`` ends it."""

    proc: subprocess.Popen[bytes]
    log: Path
    pid: int

    def detach(self) -> bool:
        """Stop strace (the tracee runs on) and tell whether the fault hit a call."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        resume(self.pid)
        try:
            text = self.log.read_text("utf-8", "replace")
        except OSError:
            return False
        return "(INJECTED)" in text or "(DELAYED)" in text

    def hits(self) -> int:
        """How many calls the tampering hit."""
        try:
            text = self.log.read_text("utf-8", "replace")
        except OSError:
            return 0
        return text.count("(INJECTED)") + text.count("(DELAYED)")


def resume(pid: int, wait_s: float = 1.0) -> None:
    """After a tracer went away: wait (bounded) for the kernel to detach it, then SIGCONT, so a
    writer caught in a ptrace stop by a tracer that died is never left stopped."""
    deadline = time.monotonic() + wait_s
    while traced_by(pid) and time.monotonic() < deadline:
        time.sleep(0.005)
    signal_pid(pid, signal.SIGCONT)


def attach(pid: int, syscall: str, path: Path, inject: str, log: Path, *, wait_s: float = 5.0) -> Attached | None:
    """Attach strace to ``pid`` with one tampering on ``syscall`` of ``path`` (``-P``), and
    wait (bounded) until the kernel shows the tracer."""
    cmd = [STRACE, "-f", "-qq", "-p", str(pid), "-e", f"trace={syscall}", "-e", "signal=none",
           "-P", str(path), "-e", f"inject={syscall}:{inject}", "-o", str(log)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            resume(pid)
            return None
        if traced_by(pid) == proc.pid:
            return Attached(proc, log, pid)
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    resume(pid)
    return None


# --- the lock timeline (double holders) -----------------------------------------------------

_TRACED = re.compile(r"^(\d+)\s+(\d+)\.(\d+)\s+(?:<\.\.\. )?(\w+)(?:\(| resumed>)(.*)$")


def lock_trace_wrapper(lock: Path, log: Path) -> list[str]:
    """A driver prefix that logs, with wall-clock times, every create, link and unlink of
    ``lock`` (``-P``: nothing else is stopped for long, nothing is tampered with)."""
    return [STRACE, "-f", "-qq", "-ttt", "-T", "-e", "trace=open,openat,link,linkat,unlink,unlinkat",
            "-e", "signal=none", "-P", str(lock), "-o", str(log)]


_DURATION = re.compile(r"<(\d+)\.(\d+)>\s*$")


def lock_events(text: str) -> list[tuple[int, str, int]]:
    """``(pid, "acquire" | "unlink", wall ns)`` from a lock trace: an exclusive create or a
    link onto the lock that succeeded, and an unlink of it that succeeded.

    Conservative times, so that only a certain overlap counts: an acquire at its call's *exit*
    (``-T``: entry + duration; the file existed by then), an unlink at its *entry* (the file
    still existed until then)."""
    out: list[tuple[int, str, int]] = []
    pending: dict[int, str] = {}
    for line in text.splitlines():
        m = _TRACED.match(line)
        if m is None:
            continue
        pid, name, rest = int(m.group(1)), m.group(4), m.group(5)
        t = int(m.group(2)) * 1_000_000_000 + int(m.group(3).ljust(9, "0")[:9])
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest
            continue
        if " resumed>" in line:
            rest = pending.pop(pid, "") + rest
        d = _DURATION.search(rest)
        took = int(d.group(1)) * 1_000_000_000 + int(d.group(2).ljust(9, "0")[:9]) if d else 0
        ret = rest.rsplit("= ", 1)[-1].split(" ", 1)[0].split("<", 1)[0] if "= " in rest else "?"
        if not ret.lstrip("-").isdigit() or int(ret) < 0:
            continue
        if (name in ("open", "openat") and "O_CREAT" in rest and "O_EXCL" in rest) or name in ("link", "linkat"):
            out.append((pid, "acquire", t + took))
        elif name in ("unlink", "unlinkat"):
            out.append((pid, "unlink", t))
    return out
