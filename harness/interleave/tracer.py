"""Hold a real writer process at each store syscall: strace stops it right after the call.

The mechanism (issue 24, measured in docs/RACES.md): ``strace -f -y -p PID`` attached to a
running driver, with ``--inject=SET:signal=SIGSTOP`` on every syscall of ``HELD``.  The kernel
delivers the injected SIGSTOP on the syscall's return, so the whole process (every thread: a
group stop) stops right after the call, before it can make another.  The line strace prints
for the call says what it was and on which path (``-y`` names the file behind each fd); a
call outside the store (a module load, the protocol's pipe) is let go at once, a call on the
store becomes a ``Held`` the scheduler sees, and the process stays stopped until the scheduler
sends it SIGCONT.  One writer runs at a time, so the store sees one total order of calls.

No tracer of our own (no ptrace in ctypes): strace already follows threads and forks, decodes
every architecture's syscalls and paths, and is what the rest of the harness relies on.
"""

from __future__ import annotations

import collections
import os
import queue
import re
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from ..faults.strace import STRACE
from ..oracles.spec import TEMP_SUFFIX  # S-IO-5 temporaries: their pid and random part vary per run

HELD = (
    "open", "openat", "link", "linkat", "unlink", "unlinkat", "rename", "renameat", "renameat2",
    "write", "fsync", "fdatasync", "stat", "lstat", "newfstatat", "statx", "read", "pread64", "mkdir", "mkdirat", "kill",
)
"""The calls strace stops a writer after; the store-path filter below narrows them."""
_COUNTED = frozenset({"open", "openat", "read", "pread64", "write"})
_FD_CALLS = frozenset({"write", "read", "pread64", "fsync", "fdatasync"})
_LINE = re.compile(r"^(?:\[pid\s+(\d+)\] |(\d+) +)?(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(.*)$")
_UNFINISHED = re.compile(r"^(\w+)\((.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"^(?:-?\d+|AT_FDCWD)<([^>]*)>")
_STOPPED = "--- stopped by SIGSTOP ---"
_NOTE = re.compile(r"^\S*strace: ")  # strace's own messages (argv[0] first)
_END = re.compile(r"^(?:\[pid\s+(\d+)\] |(?:\d+) +)?\+\+\+ (.*) \+\+\+$")


@dataclass(frozen=True)
class Call:
    """One completed syscall as strace printed it: thread, name, the paths it names, result."""

    tid: int
    name: str
    paths: tuple[str, ...]
    ret: str
    excl: bool = False  # an exclusive create (O_CREAT|O_EXCL): how a lock is taken
    flags: str = ""  # the O_/AT_ flags the call named (``O_WRONLY|O_CREAT|O_TRUNC``): the protocol oracle's evidence
    data: str = ""  # a read's first bytes (strace -s 8): whose token a lock read saw

    def on(self, roots: tuple[str, ...]) -> bool:
        """Whether the call touches the store: a path under a root, or a pid probe (kill 0)."""
        if self.name == "kill":
            return self.paths == ("signal 0",)
        return any(p == r or p.startswith(r.rstrip("/") + "/") for p in self.paths for r in roots)

    def short(self, roots: tuple[str, ...]) -> str:
        """``openat(.lock) = 3`` with paths relative to the store (what a schedule records); a
        path in the i-th further root is ``Li:name``, so two stores' locks never read as one."""
        def rel(p: str) -> str:
            for i, r in enumerate(roots):
                tag = f"L{i}:" if i else ""  # a second store (a carry-over's local one): its own names
                if p == r.rstrip("/"):
                    return tag + "."
                if p.startswith(r.rstrip("/") + "/"):
                    return tag + TEMP_SUFFIX.sub(".tmp-*", p[len(r.rstrip("/")) + 1:])
            return p
        ret = self.ret.split("<", 1)[0].split(" (", 1)[0].strip()
        if ret.isdigit() and self.name in _COUNTED:
            ret = "ok"  # an fd number or a byte count: they vary with the process, not the race
        what = ",".join(rel(p) for p in self.paths) if self.name != "kill" else "pid,0"
        name = "create" if self.excl else "open" if self.name == "openat" else self.name
        return f"{name}({what}) = {ret}"


def _unescape(s: str) -> str:
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def call_paths(name: str, args: str) -> tuple[str, ...]:
    """The paths a call names, absolute: quoted path arguments resolved against their dirfd,
    or the file behind the fd of a read/write/fsync (``-y``)."""
    if name == "kill":
        parts = [a.strip() for a in args.split(",")]
        return ("signal 0",) if len(parts) == 2 and parts[1] == "0" else ()
    if name in _FD_CALLS:
        m = _FD.match(args)
        return (m.group(1),) if m else ()
    out: list[str] = []
    base = ""
    for piece in re.split(r",\s*(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", args):
        piece = piece.strip()
        fd = _FD.match(piece)
        if fd:
            base = fd.group(1)
            continue
        q = _QUOTED.fullmatch(piece.rstrip("."))
        if q:
            p = _unescape(q.group(1))
            if not p and base:
                out.append(base)  # AT_EMPTY_PATH: the call is on the fd itself
            elif p:
                out.append(p if p.startswith("/") or not base else f"{base.rstrip('/')}/{p}")
    return tuple(out)


_FLAGS = re.compile(r"\b(?:O|AT)_(?!FDCWD)[A-Z_]+(?:\|(?:O|AT)_[A-Z_]+)*")


def _call(tid: int, name: str, args: str, ret: str) -> Call:
    excl = name in ("open", "openat") and "O_EXCL" in args and "O_CREAT" in args
    bare = _QUOTED.sub('""', args)  # a quoted path may spell a flag's name
    flags = "|".join(m.group(0) for m in _FLAGS.finditer(bare))
    data = ""
    if name in ("read", "pread64"):
        q = _QUOTED.search(args)
        data = _unescape(q.group(1)) if q else ""
    return Call(tid, name, call_paths(name, args), ret, excl, flags, data)


class LineParser:
    """strace's output, line by line, to calls and stops (threads interleave their lines:
    an ``<unfinished ...>`` call is completed by its ``resumed`` line)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.partial: dict[int, tuple[str, str]] = {}

    def feed(self, line: str) -> Call | int | None:
        """A completed call, the tid of a thread now stopped, or None."""
        m = _LINE.match(line.rstrip("\n"))
        if m is None:
            return None
        tid = int(m.group(1) or m.group(2) or self.pid)
        body = m.group(3)
        if body.startswith(_STOPPED):
            return tid
        u = _UNFINISHED.match(body)
        if u:
            self.partial[tid] = (u.group(1), u.group(2))
            return None
        r = _RESUMED.match(body)
        if r:
            name, head = self.partial.pop(tid, (r.group(1), ""))
            return _call(tid, name, head + r.group(2), r.group(3))
        c = _CALL.match(body)
        if c:
            return _call(tid, c.group(1), c.group(2), c.group(3))
        return None


@dataclass(frozen=True)
class Event:
    """What a writer did since it was let go: held after a store call, answered, or exited."""

    kind: str  # "held" | "done" | "exit"
    call: Call | None = None
    note: str = ""


class Traced:
    """One writer process under strace: its store calls arrive as ``held`` events."""

    def __init__(self, pid: int, roots: tuple[str, ...]) -> None:
        self.pid, self.roots = pid, roots
        # Signals go through a pidfd: this machine reuses pids within seconds (pid_max 32768
        # here), and a SIGCONT sent by pid after our writer exits would let some other
        # scheduler's held writer run out of turn.
        self._pidfd: int | None = os.pidfd_open(pid)
        self.events: queue.Queue[Event] = queue.Queue()
        self.held_calls = 0
        self.passed_calls = 0
        self._proc: subprocess.Popen[str] | None = None
        self._attached = threading.Event()
        self._armed = False  # store calls are held only once the scheduler says so
        self._holding = False  # a held call not yet let go: no other thread's stop may resume it
        self.tail: collections.deque[str] = collections.deque(maxlen=12)  # strace's last lines, for a hang's report

    def attach(self, timeout: float = 10.0) -> None:
        assert STRACE is not None
        calls = ",".join(HELD)
        self._proc = subprocess.Popen(
            [STRACE, "-f", "-y", "-s", "8", "-e", f"trace={calls}", "-e", f"inject={calls}:signal=SIGSTOP",
             "-p", str(self.pid)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            errors="replace",
        )
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._attached.wait(timeout):
            self.detach()
            raise RuntimeError(f"strace did not attach to pid {self.pid} within {timeout:g} s")

    def arm(self) -> None:
        self._armed = True

    def disarm(self) -> None:
        self._armed = False

    def _pump(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        parser = LineParser(self.pid)
        pending: dict[int, Call] = {}  # tid -> the call it stopped after, until its stop shows
        for line in self._proc.stderr:
            self.tail.append(line.rstrip("\n")[:160])
            if _NOTE.match(line):
                if " attached" in line:
                    self._attached.set()
                continue
            end = _END.match(line)
            if end:
                if int(end.group(1) or self.pid) == self.pid:
                    self.events.put(Event("exit", note=end.group(2)))
                continue
            got = parser.feed(line)
            if isinstance(got, Call):
                pending[got.tid] = got
            elif isinstance(got, int):
                call = pending.pop(got, None)
                if call is None:
                    continue  # another thread caught in the group stop
                if self._armed and call.on(self.roots):
                    self.held_calls += 1
                    self._holding = True
                    self.events.put(Event("held", call))
                else:
                    self.passed_calls += 1
                    # Another thread's call (node's workers read /proc while the main thread
                    # polls the lock) may stop in the same group stop as a store call: a
                    # SIGCONT then would let the held thread run out of turn (seen: pi, ~1 run
                    # in 2 of a 6-writer nemesis schedule).  The scheduler's resume lets both go.
                    if not self._holding and not any(self._armed and c.on(self.roots) for c in pending.values()):
                        self._signal_cont()
        self._attached.set()

    def state(self) -> str:
        """The process's state letter and wait channel, and strace's last lines."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{self.pid}/wchan").read_text()
        except OSError:
            stat, wchan = "gone", ""
        return f"state {stat} in {wchan or '-'}; strace last: " + " / ".join(self.tail)

    def resume(self) -> None:
        """Let the held writer go (the scheduler's pick)."""
        self._holding = False
        self._signal_cont()

    def _signal_cont(self) -> None:
        fd = self._pidfd
        if fd is None:
            return
        try:
            signal.pidfd_send_signal(fd, signal.SIGCONT)
        except (ProcessLookupError, OSError):
            pass

    def detach(self) -> None:
        """End the tracer; strace lets its tracee go (and a stopped one runs on)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self.resume()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
