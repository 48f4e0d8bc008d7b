"""Record an operation's syscalls once and parse them into a logical trace (issue 17 item 1).

ALICE and CrashMonkey build crash states from one recorded run instead of re-running the
program at each crash point; this module is the recording half.  A driver (the reference's
``serve``, pi's or OpenCode's node driver) runs under ``strace -f -y -x -s <big>`` for a whole
batch of op cases: for each case the harness lays down the case's store, sends ``reset`` (a
fresh module instance, as a fresh process) and ``set_clock``, snapshots the sandbox and runs
the op.  The log is split at the driver's answers (its ``write(1<pipe>)`` lines carry the
request ids) and each window is replayed against the snapshot taken before it, in an
in-memory ``Tree``: opens resolve to inodes, descriptor offsets are followed through
``write``/``lseek``/``O_APPEND``, and every call that changes the sandbox becomes an effect
(create, write at an offset, truncate, fsync, rename, link, unlink, mkdir, rmdir, close).

Only mutating and descriptor-bookkeeping calls are traced: ``read`` buffers would be logged
whole at ``-s`` big and say nothing about what persists.  ``copy_file_range`` and
``sendfile`` are traced because Node's ``copyFileSync`` (carry-over) copies with them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..drivers.peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox, remove_temp, snapshot, temp_dir
from ..oracles.crash_judge import State
from ..oracles.spec import TEMP_SUFFIX
from . import NOW, NOW_MS
from .memfs import Effect, MemFs, Tree
from .strace import STRACE, stable_python_env

TRACE_SYSCALLS = (
    "open", "openat", "creat", "close", "dup", "dup2", "dup3", "fcntl", "lseek",
    "write", "pwrite64", "writev", "pwritev", "pwritev2", "copy_file_range", "sendfile",
    "truncate", "ftruncate", "fsync", "fdatasync",
    "rename", "renameat", "renameat2", "link", "linkat", "unlink", "unlinkat",
    "mkdir", "mkdirat", "rmdir",
)
CLOCK = {"now": NOW, "mode": "frozen", "tz": "UTC"}
FAST_DIR = os.environ.get("MEMCONFORM_FAST_DIR") or ("/dev/shm" if os.access("/dev/shm", os.W_OK) else None)  # tmpfs: fsync is free
RENEW_OPS = ("reset", "fresh_instance")  # a fresh module instance (OpenCode's driver: fresh_instance)


def renew_op(driver: Driver) -> str | None:
    """The driver's op that renews all process state, or None (then: a driver per store)."""
    return next((op for op in RENEW_OPS if op in driver.ops), None)


def record_command(trace_file: str) -> list[str]:
    """The strace wrapper: threads followed, descriptor paths, written bytes in full."""
    return [STRACE, "-f", "-y", "-qq", "-x", "-s", str(1 << 24), "-e", "signal=none",
            "-e", "trace=" + ",".join(TRACE_SYSCALLS), "-o", trace_file]


# --- the log ------------------------------------------------------------------------------

_HEAD = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
_RESULT = re.compile(r"^(.*)\)\s+=\s+(-?\d+|\?)(?:<([^>]*)>)?(?:\s+(E[A-Z]+).*)?$")
_STDOUT = re.compile(r"^1<pipe:\[\d+\]>, ")
_ANSWER = re.compile(rb'^\{"id": ?(\d+)')
_FDARG = re.compile(r"^(AT_FDCWD|-?\d+)<(.*)>$")


@dataclass(frozen=True)
class Syscall:
    """One completed call: thread, name, its raw argument text, result and result path."""

    tid: int
    name: str
    args: str
    ret: int
    ret_path: str
    errno: str


def parse_log(text: str) -> list[Syscall]:
    """Every completed call of an ``strace -f -y -x`` log, in completion order (an
    ``<unfinished ...>`` entry is joined with its ``<... resumed>`` exit)."""
    out: list[Syscall] = []
    pending: dict[int, tuple[str, str]] = {}
    for line in text.splitlines():
        m = _RESUMED.match(line)
        if m is not None:
            tid = int(m.group(1))
            name, head = pending.pop(tid, (m.group(2), ""))
            body = head + m.group(3)
        else:
            m = _HEAD.match(line)
            if m is None:
                continue
            tid, name, body = int(m.group(1)), m.group(2), m.group(3)
            if body.endswith("<unfinished ...>"):
                pending[tid] = (name, body[: -len("<unfinished ...>")].rstrip())
                continue
        r = _RESULT.match(body)
        if r is None:
            continue
        ret = -1 if r.group(2) == "?" else int(r.group(2))
        out.append(Syscall(tid, name, r.group(1), ret, r.group(3) or "", r.group(4) or ""))
    return out


def split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments (quotes, brackets and braces respected)."""
    args, depth, cur, i, quoted = [], 0, [], 0, False
    while i < len(text):
        ch = text[i]
        if quoted:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            cur.append(ch)
        elif ch in "[{(<":  # <…>: a -y descriptor path, which may hold commas
            depth += 1
            cur.append(ch)
        elif ch in "]})>":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur or args:
        args.append("".join(cur).strip())
    return args


_ESC = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "\\": 92, '"': 34, "'": 39}


def unquote(text: str) -> bytes:
    """The bytes of one strace string literal (``-x``: non-ASCII as ``\\xNN``)."""
    text = text.strip()
    if text.endswith("..."):
        raise ValueError("strace cut a string short (raise -s)")
    body = text[text.index('"') + 1 : text.rindex('"')]
    out, i = bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif nxt.isdigit():
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1 : j], 8))
            i = j
        else:
            out.append(_ESC.get(nxt, ord(nxt)))
            i += 2
    return bytes(out)


def _iov(text: str) -> bytes:
    return b"".join(unquote(m) for m in re.findall(r'iov_base=("(?:[^"\\]|\\.)*")', text))


def answers(calls: list[Syscall]) -> dict[int, int]:
    """Request id -> index (into ``calls``) of the driver's answer on stdout."""
    out: dict[int, int] = {}
    for i, c in enumerate(calls):
        if c.name in ("write", "writev") and _STDOUT.match(c.args):
            try:  # -x prints a string holding any non-ASCII byte wholly in hex
                data = _iov(c.args) if c.name == "writev" else unquote(split_args(c.args)[1])
            except (ValueError, IndexError):
                continue
            m = _ANSWER.match(data)
            if m is not None:
                out.setdefault(int(m.group(1)), i)
    return out


# --- replay into effects ------------------------------------------------------------------


@dataclass(frozen=True)
class TraceOp:
    """One step of the logical trace: the effect on the tree and the call that made it."""

    effect: Effect
    call: str  # sandbox-relative, e.g. rename(agent/memory/a.md.tmp-1-x, agent/memory/a.md)

    @property
    def kind(self) -> str:
        return str(self.effect[0])


@dataclass
class _File:
    ino: int
    offset: int
    append: bool
    writable: bool = False


class TraceError(Exception):
    """A log the parser cannot follow (a string cut short, an unknown descriptor)."""


class Replay:
    """Follows one window of calls against a tree, producing the logical trace."""

    def __init__(self, root: str, start: Tree, next_ino: int) -> None:
        self.root = root
        self.tree = start.copy()
        self.fds: dict[int, _File] = {}
        self.ops: list[TraceOp] = []
        self._ino = next_ino

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + "/")

    def rel(self, path: str) -> str:
        return path[len(self.root) + 1 :] if path.startswith(self.root + "/") else path

    def _emit(self, e: Effect, call: str) -> None:
        self.tree.apply(e)
        self.ops.append(TraceOp(e, call))

    def _path(self, dirfd: str | None, quoted: str) -> str:
        p = unquote(quoted).decode("utf-8", "surrogateescape")
        if not p.startswith("/"):
            m = _FDARG.match(dirfd or "")
            base = m.group(2) if m else os.getcwd()
            p = os.path.join(base, p)
        return os.path.normpath(p)

    def _fd(self, arg: str) -> _File | None:
        m = _FDARG.match(arg.strip())
        if m is None:
            return None
        fd, path = int(m.group(1)) if m.group(1) != "AT_FDCWD" else -100, m.group(2)
        f = self.fds.get(fd)
        if f is None and self.inside(path) and path in self.tree.names:
            f = self.fds[fd] = _File(self.tree.names[path], 0, False)  # opened before the window
        return f

    def _new_ino(self) -> int:
        self._ino += 1
        return self._ino

    def _write(self, f: _File, data: bytes, offset: int | None, call: str) -> None:
        at = len(self.tree.data.get(f.ino, b"")) if f.append else (f.offset if offset is None else offset)
        self._emit(("write", f.ino, at, data), call)
        if offset is None:
            f.offset = at + len(data)

    def _describe(self, name: str, *paths: str) -> str:
        """``rename(agent/memory/a.md.tmp-*, agent/memory/a.md)``: stable across runs."""
        return f"{name}({', '.join(TEMP_SUFFIX.sub('.tmp-*', self.rel(p)) for p in paths)})"

    def _fdpath(self, arg: str) -> str:
        m = _FDARG.match(arg.strip())
        return m.group(2) if m else arg

    def step(self, c: Syscall) -> None:
        """Apply one completed call (failed calls change nothing)."""
        if c.ret < 0:
            return
        a = split_args(c.args)
        n = c.name
        if n in ("open", "openat", "creat"):
            dirfd, quoted, flags = (a[0], a[1], a[2]) if n == "openat" else (None, a[0], a[1] if n == "open" else "O_CREAT|O_WRONLY|O_TRUNC")
            path = self._path(dirfd, quoted)
            if not self.inside(path):
                self.fds.pop(c.ret, None)
                return
            ino = self.tree.names.get(path)
            if ino is None:
                if "O_CREAT" not in flags:
                    return
                ino = self._new_ino()
                self._emit(("create", path, ino), self._describe("create", path))
            elif "O_TRUNC" in flags and ("O_WRONLY" in flags or "O_RDWR" in flags) and self.tree.data.get(ino):
                self._emit(("truncate", ino, 0), self._describe("open O_TRUNC", path))
            self.fds[c.ret] = _File(ino, 0, "O_APPEND" in flags, "O_WRONLY" in flags or "O_RDWR" in flags)
        elif n == "close":
            f = self._fd(a[0])
            self.fds.pop(int(a[0].split("<", 1)[0]), None)
            if f is not None and f.writable:
                self._emit(("close", f.ino), self._describe("close", self._fdpath(a[0])))
        elif n in ("dup", "dup2", "dup3") or (n == "fcntl" and "F_DUPFD" in c.args):
            f = self._fd(a[0])
            if f is not None:
                self.fds[c.ret] = f
        elif n == "lseek":
            f = self._fd(a[0])
            if f is not None:
                f.offset = c.ret
        elif n in ("write", "pwrite64", "writev", "pwritev", "pwritev2"):
            f = self._fd(a[0])
            if f is None:
                return
            data = (_iov(a[1]) if "writev" in n else unquote(a[1]))[: c.ret]
            offset = int(a[3]) if n in ("pwrite64", "pwritev", "pwritev2") else None
            self._write(f, data, offset, self._describe(n, self._fdpath(a[0])))
        elif n in ("copy_file_range", "sendfile"):
            src, dst = (a[0], a[2]) if n == "copy_file_range" else (a[1], a[0])
            fin, fout = self._fd(src), self._fd(dst)
            if fout is None:
                return
            off_arg = a[1] if n == "copy_file_range" else a[2]
            in_at = int(off_arg.strip("[]")) if off_arg.startswith("[") else (fin.offset if fin else 0)
            data = self.tree.data.get(fin.ino, b"")[in_at : in_at + c.ret] if fin else b""
            if fin is not None and not off_arg.startswith("["):
                fin.offset += len(data)
            out_arg = a[3] if n == "copy_file_range" else "NULL"
            self._write(fout, data, int(out_arg.strip("[]")) if out_arg.startswith("[") else None,
                        self._describe(n, self._fdpath(src), self._fdpath(dst)))
        elif n in ("truncate", "ftruncate"):
            if n == "truncate":
                path = self._path(None, a[0])
                ino = self.tree.names.get(path) if self.inside(path) else None
            else:
                f = self._fd(a[0])
                ino, path = (f.ino if f else None), self._fdpath(a[0])
            if ino is not None:
                self._emit(("truncate", ino, int(a[1])), self._describe(n, path))
        elif n in ("fsync", "fdatasync"):
            f = self._fd(a[0])
            if f is not None:
                self._emit(("fsync", f.ino), self._describe(n, self._fdpath(a[0])))
        elif n in ("rename", "renameat", "renameat2", "link", "linkat"):
            if n in ("rename", "link"):
                src, dst = self._path(None, a[0]), self._path(None, a[1])
            else:
                src, dst = self._path(a[0], a[1]), self._path(a[2], a[3])
            if not self.inside(dst):
                return
            if not self.inside(src) or src not in self.tree.names:
                raise TraceError(f"{n} into the sandbox from {src}: content unknown")
            kind = "rename" if n.startswith("rename") else "link"
            if kind == "rename" and self.tree.names.get(dst) == self.tree.names[src]:
                return
            self._emit((kind, src, dst), self._describe(n, src, dst))
        elif n in ("unlink", "unlinkat", "rmdir"):
            path = self._path(a[0] if n == "unlinkat" else None, a[1] if n == "unlinkat" else a[0])
            if self.inside(path) and path in self.tree.names:
                gone = "rmdir" if n == "rmdir" or "AT_REMOVEDIR" in c.args else "unlink"
                self._emit((gone, path), self._describe(n, path))
        elif n in ("mkdir", "mkdirat"):
            path = self._path(a[0] if n == "mkdirat" else None, a[1] if n == "mkdirat" else a[0])
            if self.inside(path) and path not in self.tree.names:
                self._emit(("mkdir", path, self._new_ino()), self._describe(n, path))


# --- recording ------------------------------------------------------------------------------


@dataclass
class Trace:
    """One op's recorded run: the sandbox before, its logical trace, the answer, the tree after."""

    root: str
    name: str
    before: State
    start: Tree
    ops: list[TraceOp]
    answer: Answer | None
    error: str = ""
    syscalls: int = 0

    @property
    def effects(self) -> list[Effect]:
        return [o.effect for o in self.ops]

    def after(self) -> State:
        tree = self.start.copy()
        for e in self.effects:
            tree.apply(e)
        return tree.state(self.root)


def start_tree(root: str, state: Mapping[str, bytes]) -> tuple[Tree, int]:
    """A durable tree holding ``state`` under ``root`` (and the next free inode number)."""
    fs = MemFs(root, lambda: NOW_MS).load(state)
    return fs.tree, fs._next_ino + 1000


@dataclass
class Recorder:
    """One traced warm driver running a batch of ops, each from its own store."""

    spec: PeerSpec
    timeout: float = 15.0
    sandbox: Sandbox = field(default_factory=lambda: Sandbox.create(FAST_DIR))
    _windows: list[tuple[str, State, int, int, Answer | None, str]] = field(default_factory=list)

    def record(self, jobs: list[tuple[str, Mapping[str, bytes], str, Mapping[str, Any]]]) -> list[Trace]:
        """Run each ``(name, files, op, args)`` once under strace; one trace per job."""
        from .campaigns import put_state

        tmp = temp_dir("memconform-record-")
        log = tmp / "trace.txt"
        env = {**self.sandbox.env(), **stable_python_env()}
        driver: Driver | None = None
        try:
            for name, files, op, args in jobs:
                if driver is not None and renew_op(driver) is None:
                    driver.close()
                    driver = None
                put_state(self.sandbox, files)
                fresh = driver is None
                try:
                    if driver is None:
                        driver = start_driver(self.spec, env, cwd=str(self.sandbox.root), timeout=self.timeout,
                                              wrapper=record_command(str(log) + f".{len(self._windows)}"))
                    if not fresh:
                        driver.call(str(renew_op(driver)))
                    clock_id = driver._next_id
                    driver.call("set_clock", dict(CLOCK))
                    before = snapshot(self.sandbox.root)
                    op_id = driver._next_id
                    answer: Answer | None = driver.call(op, dict(args))
                    error = ""
                except DriverError as e:
                    answer, error, before, clock_id, op_id = None, str(e), {}, -1, -1
                    if driver is not None:
                        driver.kill()
                        driver.close()
                    driver = None
                self._windows.append((name, before, clock_id, op_id, answer, error))
        finally:
            if driver is not None:
                driver.close()
        traces = list(self._parse(tmp, len(jobs)))
        remove_temp(tmp)
        return traces

    def _parse(self, tmp: Path, n: int) -> Iterator[Trace]:
        root = str(self.sandbox.root)
        logs = sorted(tmp.glob("trace.txt.*"), key=lambda p: int(p.suffix[1:]))
        starts = [int(p.suffix[1:]) for p in logs]
        parsed: list[tuple[list[Syscall], dict[int, int]]] = []
        for p in logs:
            calls = parse_log(p.read_text(encoding="utf-8", errors="surrogateescape"))
            parsed.append((calls, answers(calls)))
        for i, (name, before, clock_id, op_id, answer, error) in enumerate(self._windows[:n]):
            log_no = max(k for k, s in enumerate(starts) if s <= i) if starts else -1
            tree, next_ino = start_tree(root, before)
            if answer is None or log_no < 0:
                yield Trace(root, name, before, tree, [], answer, error or "no trace")
                continue
            calls, ans = parsed[log_no]
            lo, hi = ans.get(clock_id), ans.get(op_id)
            if lo is None or hi is None:
                yield Trace(root, name, before, tree, [], answer, "the driver's answers are not in the trace")
                continue
            replay = Replay(root, tree, next_ino)
            window = calls[lo + 1 : hi]
            try:
                for c in window:
                    replay.step(c)
            except (TraceError, ValueError, IndexError) as e:
                yield Trace(root, name, before, tree, replay.ops, answer, f"trace not followed: {e}", len(window))
                continue
            yield Trace(root, name, before, tree, replay.ops, answer, "", len(window))


def record_cases(spec: PeerSpec, cases: list[Any], *, timeout: float = 15.0) -> tuple[list[Trace], float]:
    """Record every op case once (one traced warm driver); the traces and the seconds taken."""
    t0 = time.perf_counter()
    rec = Recorder(spec, timeout)
    try:
        traces = rec.record([(c.name, c.files(spec.kind), c.op, c.args) for c in cases])
    finally:
        rec.sandbox.remove()
    return traces, time.perf_counter() - t0
