"""``MemFs``: an in-memory ``Fs`` that records every mutating call as an *effect*.

Crash states are materialised without processes by replaying effect prefixes (``Tree``),
under three persistence models: ``strict`` (every completed call persisted, i.e. a process
kill), ``lost-dirent`` (the reference never fsyncs a directory, so after power loss any
rename, link, create or unlink may be lost: one path reverts to an earlier binding) and
``torn`` (data written but not fsynced may be cut short).  The variants of one crash point
under the power-loss models are ``torn_variants`` and ``dirent_variants``.
"""

from __future__ import annotations

import errno as errno_mod
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs

from ..drivers.sandbox import SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET
from ..oracles.crash_judge import State, is_lock, is_temp
from .doubles import WRITE_FLAGS, Call

# An effect is a tuple whose first item names it:
#   ("create", path, ino) ("write", ino, offset, data) ("fsync", ino) ("rename", src, dst)
#   ("link", src, dst) ("unlink", path) ("mkdir", path, ino)
#   ("put", path, ino, data): a durable edit by the user between operations (never a crash point)
#   ("truncate", ino, size) ("rmdir", path) ("close", ino): only in traced runs (faults.trace)
Effect = tuple[Any, ...]

_KIND_MODE = {"file": stat.S_IFREG, "dir": stat.S_IFDIR, "fifo": stat.S_IFIFO, "symlink": stat.S_IFLNK, "socket": stat.S_IFSOCK}
_MARKER_KIND = {SNAPSHOT_DIR: "dir", SNAPSHOT_FIFO: "fifo", SNAPSHOT_SOCKET: "socket"}


@dataclass
class Tree:
    """Names, inode kinds and data: the persistent part of a filesystem (copyable)."""

    names: dict[str, int] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)
    synced: dict[int, int] = field(default_factory=dict)
    mtime: dict[int, int] = field(default_factory=dict)
    modes: dict[int, int] = field(default_factory=dict)

    def copy(self) -> Tree:
        return Tree(dict(self.names), dict(self.kinds), dict(self.data), dict(self.synced), dict(self.mtime), dict(self.modes))

    def apply(self, e: Effect, now_ns: int = 0) -> None:
        op = e[0]
        if op == "write":
            _, ino, off, chunk = e
            old = self.data.setdefault(ino, b"")  # a reordered replay may write a nameless inode
            self.kinds.setdefault(ino, "file")
            old = old + b"\0" * (off - len(old)) if off > len(old) else old
            self.data[ino] = old[:off] + chunk + old[off + len(chunk) :]
            self.mtime[ino] = now_ns or self.mtime.get(ino, 0)
        elif op == "create":
            _, path, ino = e
            self.names[path] = ino
            self.kinds[ino], self.data[ino], self.synced[ino] = "file", b"", 0
            self.mtime[ino] = now_ns
            self.modes.setdefault(ino, 0o600)
        elif op == "fsync":
            self.synced[e[1]] = len(self.data.get(e[1], b""))
        elif op == "rename":
            self.names[e[2]] = self.names.pop(e[1])
        elif op == "link":
            self.names[e[2]] = self.names[e[1]]
        elif op == "unlink":
            del self.names[e[1]]
        elif op == "mkdir":
            _, path, ino = e
            self.names[path] = ino
            self.kinds[ino], self.data[ino], self.synced[ino] = "dir", b"", 0
        elif op == "truncate":  # traced runs (harness.faults.trace): O_TRUNC, ftruncate
            _, ino, size = e
            old = self.data.setdefault(ino, b"")
            self.kinds.setdefault(ino, "file")
            self.data[ino] = old[:size] + b"\0" * max(0, size - len(old))
            self.synced[ino] = min(self.synced.get(ino, 0), size)
        elif op == "rmdir":
            del self.names[e[1]]
        elif op == "close":  # in a traced run's logical trace; persists nothing
            pass
        elif op == "put":
            _, path, ino, content = e
            self.names[path] = ino
            self.kinds[ino], self.data[ino], self.synced[ino] = "file", content, len(content)
            self.mtime[ino] = now_ns
            self.modes.setdefault(ino, 0o644)
        else:  # pragma: no cover - effects are produced by MemFs only
            raise ValueError(f"unknown effect {op}")

    def state(self, root: str) -> State:
        """The tree as a snapshot dict relative to ``root`` (same markers as ``snapshot``)."""
        out: State = {}
        cut = len(root) + 1
        prefix = root + "/"
        for path, ino in self.names.items():
            if not path.startswith(prefix):  # the root and its ancestors (a sandbox under /dev/shm)
                continue
            kind = self.kinds[ino]
            rel = path[cut:]
            if kind == "file":
                out[rel] = self.data[ino]
            elif kind == "dir":
                out[rel] = SNAPSHOT_DIR
            elif kind == "symlink":
                out[rel] = b"-> " + self.data[ino]
            elif kind == "fifo":
                out[rel] = SNAPSHOT_FIFO
            else:
                out[rel] = SNAPSHOT_SOCKET
        return out




@dataclass
class _Open:
    ino: int
    path: str
    offset: int
    writable: bool




class MemFs(Fs):
    """An in-memory filesystem behind the ``Fs`` seam, recording every mutating call.

    It mirrors the Linux semantics the reference relies on (exclusive create, no-follow
    opens, rename over a file, hard links, recursive mkdir) and raises ``NodeError`` with
    the errno Linux would give.  ``fail`` makes the k-th store-touching call raise an errno
    instead (in-process fault injection through the seam).
    """

    TOUCHING = frozenset({"open", "write", "fsync", "rename", "link", "unlink", "mkdir"})

    def __init__(self, root: str, now_ms: Callable[[], int], pid: int = 4_000_001) -> None:
        self.root = root
        self.now_ms = now_ms
        self.pid = pid
        self.tree = Tree()
        self.effects: list[Effect] = []
        self.calls: list[Call] = []
        self.effect_call: list[int] = []  # effect index -> index of the call that made it
        self.fail: tuple[int, int] | None = None
        self._fds: dict[int, _Open] = {}
        self._next_fd = 3
        self._next_ino = 1
        self._token = 0
        self._mkdir_tree(root)

    # --- setup ----------------------------------------------------------------------------

    def _new_ino(self) -> int:
        self._next_ino += 1
        return self._next_ino

    def _mkdir_tree(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            if p not in self.tree.names:
                ino = self._new_ino()
                self.tree.names[p] = ino
                self.tree.kinds[ino], self.tree.data[ino], self.tree.synced[ino] = "dir", b"", 0

    def load(self, state: Mapping[str, bytes]) -> MemFs:
        """Put a snapshot dict on the (durable) tree, without recording effects."""
        for rel in sorted(state, key=lambda r: r.count("/")):
            data = state[rel]
            path = f"{self.root}/{rel}"
            self._mkdir_tree(os.path.dirname(path))
            if data in _MARKER_KIND:
                kind = _MARKER_KIND[data]
                if kind == "dir":
                    self._mkdir_tree(path)
                    continue
                ino = self._new_ino()
                self.tree.kinds[ino], self.tree.data[ino] = kind, b""
            elif data.startswith(b"-> "):
                ino = self._new_ino()
                self.tree.kinds[ino], self.tree.data[ino] = "symlink", data[3:]
            else:
                ino = self._new_ino()
                self.tree.kinds[ino], self.tree.data[ino] = "file", data
            self.tree.synced[ino] = len(self.tree.data[ino])
            self.tree.mtime[ino] = self.now_ms() * 1_000_000
            self.tree.modes[ino] = 0o644
            self.tree.names[path] = ino
        return self

    def state(self) -> State:
        return self.tree.state(self.root)

    def set_mtime(self, rel: str, ms: int) -> None:
        self.tree.mtime[self.tree.names[f"{self.root}/{rel}"]] = ms * 1_000_000

    # --- recording --------------------------------------------------------------------------

    def _touch(self, name: str, args: tuple[Any, ...], path: str) -> None:
        """Record a store-touching call (as ``RecordingFs`` names it); fail it if armed."""
        self.calls.append(Call(name, args, path, mutates=name != "open" or bool(args[1] & WRITE_FLAGS),
                               effect=len(self.effects)))
        if self.fail is not None and len(self.calls) == self.fail[0]:
            raise NodeError(self.fail[1], name, path if name not in ("write", "fsync") else None)

    def _effect(self, e: Effect) -> None:
        self.effects.append(e)
        self.effect_call.append(len(self.calls) - 1)
        self.tree.apply(e, self.now_ms() * 1_000_000)

    def put(self, rel: str, content: bytes) -> None:
        """A user's edit between operations: recorded so replays see it, never cut or lost."""
        self._effect(("put", f"{self.root}/{rel}", self._new_ino(), content))

    def clone(self) -> MemFs:
        """An independent copy (tree, logs and counters) with no open descriptors."""
        twin = MemFs.__new__(MemFs)
        twin.__dict__.update(self.__dict__)
        twin.tree = self.tree.copy()
        twin.effects, twin.calls, twin.effect_call = list(self.effects), list(self.calls), list(self.effect_call)
        twin._fds = {}
        return twin

    # --- path helpers ---------------------------------------------------------------------

    @staticmethod
    def _norm(path: str) -> str:
        return os.path.normpath(path)

    def _parent_ok(self, path: str, syscall: str) -> None:
        parent = os.path.dirname(path)
        ino = self.tree.names.get(parent)
        if ino is None:
            raise NodeError(errno_mod.ENOENT, syscall, path)
        if self.tree.kinds[ino] != "dir":
            raise NodeError(errno_mod.ENOTDIR, syscall, path)

    def _resolve(self, path: str, syscall: str, follow: bool) -> int:
        seen = 0
        while True:
            self._parent_ok(path, syscall)
            ino = self.tree.names.get(path)
            if ino is None:
                raise NodeError(errno_mod.ENOENT, syscall, path)
            if self.tree.kinds[ino] != "symlink" or not follow:
                return ino
            seen += 1
            if seen > 40:
                raise NodeError(errno_mod.ELOOP, syscall, path)
            target = self.tree.data[ino].decode("utf-8", "surrogateescape")
            path = self._norm(os.path.join(os.path.dirname(path), target))

    def _stat(self, ino: int) -> os.stat_result:
        kind = self.tree.kinds[ino]
        mode = _KIND_MODE[kind] | (0o755 if kind == "dir" else self.tree.modes.get(ino, 0o644))
        size = len(self.tree.data[ino])
        mt = self.tree.mtime.get(ino, 0)
        nlink = sum(1 for i in self.tree.names.values() if i == ino) if kind == "file" else 2
        return os.stat_result(
            (mode, ino, 1, nlink, 0, 0, size, mt // 10**9, mt // 10**9, mt // 10**9),
            {"st_mtime_ns": mt, "st_atime_ns": mt, "st_ctime_ns": mt},
        )

    # --- the Fs interface -----------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        path = self._norm(path)
        self._touch("open", (path, flags, mode), path)
        self._parent_ok(path, "open")
        exists = path in self.tree.names
        writable = bool(flags & (os.O_WRONLY | os.O_RDWR))
        if flags & os.O_CREAT:
            if exists and flags & os.O_EXCL:
                raise NodeError(errno_mod.EEXIST, "open", path)
            if not exists:
                ino = self._new_ino()
                self.tree.modes[ino] = mode & 0o777 & ~0o022
                self._effect(("create", path, ino))
                return self._fd(_Open(ino, path, 0, writable))
        follow = not flags & os.O_NOFOLLOW
        if not follow and exists and self.tree.kinds[self.tree.names[path]] == "symlink":
            raise NodeError(errno_mod.ELOOP, "open", path)
        ino = self._resolve(path, "open", follow)
        if self.tree.kinds[ino] == "dir" and writable:
            raise NodeError(errno_mod.EISDIR, "open", path)
        if self.tree.kinds[ino] == "socket":
            raise NodeError(errno_mod.ENXIO, "open", path)
        if flags & os.O_TRUNC and writable and self.tree.data[ino]:
            raise NotImplementedError("MemFs: O_TRUNC on an existing file")
        return self._fd(_Open(ino, path, 0, writable))

    def _fd(self, f: _Open) -> int:
        fd = self._next_fd
        self._next_fd += 1
        self._fds[fd] = f
        return fd

    def _get(self, fd: int, syscall: str) -> _Open:
        f = self._fds.get(fd)
        if f is None:
            raise NodeError(errno_mod.EBADF, syscall)
        return f

    def read(self, fd: int, size: int) -> bytes:
        f = self._get(fd, "read")
        if self.tree.kinds[f.ino] == "dir":
            raise NodeError(errno_mod.EISDIR, "read")
        chunk = self.tree.data[f.ino][f.offset : f.offset + size]
        f.offset += len(chunk)
        return chunk

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        f = self._get(fd, "read")
        if self.tree.kinds[f.ino] == "dir":
            raise NodeError(errno_mod.EISDIR, "read")
        return self.tree.data[f.ino][offset : offset + size]

    def write(self, fd: int, data: bytes) -> int:
        f = self._get(fd, "write")
        self._touch("write", (fd, data), f.path)
        if not f.writable:
            raise NodeError(errno_mod.EBADF, "write")
        self._effect(("write", f.ino, f.offset, bytes(data)))
        f.offset += len(data)
        return len(data)

    def fsync(self, fd: int) -> None:
        f = self._get(fd, "fsync")
        self._touch("fsync", (fd,), f.path)
        self._effect(("fsync", f.ino))

    def close(self, fd: int) -> None:
        if self._fds.pop(fd, None) is None:
            raise NodeError(errno_mod.EBADF, "close")

    def fstat(self, fd: int) -> os.stat_result:
        return self._stat(self._get(fd, "fstat").ino)

    def lstat(self, path: str) -> os.stat_result:
        return self._stat(self._resolve(self._norm(path), "lstat", False))

    def stat(self, path: str) -> os.stat_result:
        return self._stat(self._resolve(self._norm(path), "stat", True))

    def rename(self, src: str, dst: str) -> None:
        src, dst = self._norm(src), self._norm(dst)
        self._touch("rename", (src, dst), dst)
        self._parent_ok(src, "rename")
        self._parent_ok(dst, "rename")
        ino = self.tree.names.get(src)
        if ino is None:
            raise NodeError(errno_mod.ENOENT, "rename", src, dst)
        if self.tree.kinds[ino] == "dir":
            raise NotImplementedError("MemFs: renaming a directory")
        other = self.tree.names.get(dst)
        if other is not None and self.tree.kinds[other] == "dir":
            raise NodeError(errno_mod.EISDIR, "rename", src, dst)
        if other == ino:
            return
        self._effect(("rename", src, dst))

    def link(self, src: str, dst: str) -> None:
        src, dst = self._norm(src), self._norm(dst)
        self._touch("link", (src, dst), dst)
        self._parent_ok(dst, "link")
        ino = self.tree.names.get(src)
        if ino is None:
            raise NodeError(errno_mod.ENOENT, "link", src, dst)
        if self.tree.kinds[ino] == "dir":
            raise NodeError(errno_mod.EPERM, "link", src, dst)
        if dst in self.tree.names:
            raise NodeError(errno_mod.EEXIST, "link", src, dst)
        self._effect(("link", src, dst))

    def unlink(self, path: str) -> None:
        path = self._norm(path)
        self._touch("unlink", (path,), path)
        self._parent_ok(path, "unlink")
        ino = self.tree.names.get(path)
        if ino is None:
            raise NodeError(errno_mod.ENOENT, "unlink", path)
        if self.tree.kinds[ino] == "dir":
            raise NodeError(errno_mod.EISDIR, "unlink", path)
        self._effect(("unlink", path))

    def mkdir(self, path: str) -> None:
        path = self._norm(path)
        self._touch("mkdir", (path,), path)
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            ino = self.tree.names.get(p)
            if ino is None:
                self._effect(("mkdir", p, self._new_ino()))
            elif self.tree.kinds[ino] != "dir":
                raise NodeError(errno_mod.EEXIST if i == len(parts) else errno_mod.ENOTDIR, "mkdir", path)

    def scandir(self, path: str) -> list[str]:
        path = self._norm(path)
        self._touch("open", (path, os.O_RDONLY | os.O_DIRECTORY), path)  # opendir: an openat of the directory, as strace sees it
        ino = self._resolve(path, "scandir", True)
        if self.tree.kinds[ino] != "dir":
            raise NodeError(errno_mod.ENOTDIR, "scandir", path)
        prefix = path.rstrip("/") + "/"
        names = [p[len(prefix) :] for p in self.tree.names if p.startswith(prefix) and "/" not in p[len(prefix) :]]
        return sorted(names, key=os.fsencode)

    def regular_names(self, path: str) -> set[str]:
        self._touch("open", (self._norm(path), os.O_RDONLY | os.O_DIRECTORY), self._norm(path))
        ino = self._resolve(self._norm(path), "scandir", True)
        if self.tree.kinds[ino] != "dir":
            raise NodeError(errno_mod.ENOTDIR, "scandir", path)
        prefix = self._norm(path).rstrip("/") + "/"
        return {
            p[len(prefix) :] for p, i in self.tree.names.items()
            if p.startswith(prefix) and "/" not in p[len(prefix) :] and self.tree.kinds[i] == "file"
        }

    def kill(self, pid: int, sig: int) -> None:
        if pid != self.pid:
            raise NodeError(errno_mod.ESRCH, "kill")

    def getpid(self) -> int:
        return self.pid

    def random_token(self) -> str:
        self._token += 1
        n, out = self._token, ""
        while n:
            n, r = divmod(n, 36)
            out = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + out
        return "t" + out


def torn_variants(snap: Tree, root: str) -> Iterator[tuple[State, str]]:
    """Un-fsynced data of each file cut to its synced length and to half of the rest."""
    for path, ino in snap.names.items():
        if snap.kinds[ino] != "file":
            continue
        data, synced = snap.data[ino], snap.synced.get(ino, 0)
        if len(data) <= synced:
            continue
        for cut in sorted({synced, synced + (len(data) - synced) // 2}):
            t = snap.copy()
            t.data[ino] = data[:cut]
            yield t.state(root), f"{path[len(root) + 1:]} torn at {cut}/{len(data)} bytes"


def dirent_variants(snap: Tree, bindings: Mapping[str, list[int | None]], root: str) -> Iterator[tuple[State, str]]:
    """One directory entry reverted to an earlier binding (no directory is ever fsynced)."""
    for path, seen in bindings.items():
        rel = path[len(root) + 1 :]
        if is_temp(rel) or is_lock(rel):
            continue
        current = snap.names.get(path)
        if current is not None and snap.kinds.get(current) == "dir":
            continue
        for old in dict.fromkeys(seen):
            if old == current or (old is not None and snap.kinds.get(old) != "file"):
                continue
            t = snap.copy()
            if old is None:
                del t.names[path]
                what = f"{rel} entry lost"
            else:
                t.names[path] = old
                what = f"{rel} reverted"
            yield t.state(root), what
