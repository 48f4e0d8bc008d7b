"""The ``Fs`` seam and the safe I/O built on it (S-IO-1..8).

Every filesystem and process call of the store passes through one ``Fs`` object, so the
harness can record calls, fail the k-th one or "crash" there.  Each method names its failure
the way Node does (syscall and path, libuv wording); the safe-I/O functions below are the
only way the rest of the reference reads or publishes store files.
"""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Callable
from typing import TypeVar

from .errors import NodeError, UnsafeFileError
from .text import decode_utf8, encode_utf8

MAX_BYTES = 51200
LOCK_READ_LIMIT = 1024

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
READ_FLAGS = os.O_RDONLY | O_NONBLOCK | O_CLOEXEC
CREATE_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_CLOEXEC

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"

T = TypeVar("T")

# getpid and getrandom are syscalls; a write asks for the pid and a random token several times.
_PID = [os.getpid()]
_RANDOM = random.Random()


def _after_fork() -> None:
    _PID[0] = os.getpid()
    _RANDOM.seed()


os.register_at_fork(after_in_child=_after_fork)


def _failure(e: OSError, syscall: str, path: str | None = None, dest: str | None = None) -> Exception:
    """The Node form of an OS error (an errno-less error stays as it is)."""
    return e if e.errno is None else NodeError(e.errno, syscall, path, dest)


def _call(syscall: str, fn: Callable[[], T], path: str | None = None, dest: str | None = None) -> T:
    try:
        return fn()
    except OSError as e:
        raise _failure(e, syscall, path, dest) from None


def list_regular(path: str) -> set[str]:
    """The names of the regular files in ``path``, from one listing (no ``lstat`` per entry)."""
    with os.scandir(path) as it:
        return {e.name for e in it if e.is_file(follow_symlinks=False)}


class Fs:
    """The only object in the reference that talks to the operating system.

    Subclasses change how, never what: ``reference.dirwatch.WatchingFs`` answers
    ``regular_names`` from a directory watch, the harness's doubles record or fail calls.
    """

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        try:
            return os.open(path, flags, mode)
        except OSError as e:
            raise _failure(e, "open", path) from None

    def read(self, fd: int, size: int) -> bytes:
        try:
            return os.read(fd, size)
        except OSError as e:
            raise _failure(e, "read") from None

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        try:
            return os.pread(fd, size, offset)
        except OSError as e:
            raise _failure(e, "read") from None

    def write(self, fd: int, data: bytes) -> int:
        try:
            return os.write(fd, data)
        except OSError as e:
            raise _failure(e, "write") from None

    def fsync(self, fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as e:
            raise _failure(e, "fsync") from None

    def close(self, fd: int) -> None:
        try:
            os.close(fd)
        except OSError as e:
            raise _failure(e, "close") from None

    def fstat(self, fd: int) -> os.stat_result:
        try:
            return os.fstat(fd)
        except OSError as e:
            raise _failure(e, "fstat") from None

    def lstat(self, path: str) -> os.stat_result:
        try:
            return os.lstat(path)
        except OSError as e:
            raise _failure(e, "lstat", path) from None

    def stat(self, path: str) -> os.stat_result:
        try:
            return os.stat(path)
        except OSError as e:
            raise _failure(e, "stat", path) from None

    def rename(self, src: str, dst: str) -> None:
        try:
            os.rename(src, dst)
        except OSError as e:
            raise _failure(e, "rename", src, dst) from None

    def link(self, src: str, dst: str) -> None:
        _call("link", lambda: os.link(src, dst), src, dst)

    def unlink(self, path: str) -> None:
        try:
            os.unlink(path)
        except OSError as e:
            raise _failure(e, "unlink", path) from None

    def mkdir(self, path: str) -> None:
        """Recursive creation; Node names the target, never the parent, when it fails."""
        try:
            os.mkdir(path)  # the usual case, one syscall: the parent exists
            return
        except FileExistsError:
            if os.path.isdir(path):
                return
            raise NodeError(17, "mkdir", path) from None
        except OSError:
            pass  # a missing parent or anything else: the general path decides, as before
        try:
            os.makedirs(path, exist_ok=True)
        except FileExistsError:
            raise NodeError(17, "mkdir", path) from None
        except OSError as e:
            if e.errno is None:
                raise
            raise NodeError(e.errno, "mkdir", path) from None

    def scandir(self, path: str) -> list[str]:
        """Entry names sorted by their raw bytes, decoded as Node decodes them (S-IO-7).

        A name that is not valid UTF-8 comes back with U+FFFD, so it may name another file
        or none at all, exactly as ``readdirSync`` in the JS core.
        """
        names = _call("scandir", lambda: os.listdir(os.fsencode(path)), path)
        return [decode_utf8(n) for n in sorted(names)]

    def regular_names(self, path: str) -> set[str]:
        """Names of the regular files in a directory, without a syscall per entry.

        Index maintenance asks "is this entry's file regular?" for every entry; one listing
        answers it for all of them, as ``lstat`` would.  A subclass may answer from a watch
        (``reference.dirwatch.WatchingFs``), so the set may be live: use it before the next
        call.
        """
        return _call("scandir", lambda: list_regular(path), path)

    def kill(self, pid: int, sig: int) -> None:
        _call("kill", lambda: os.kill(pid, sig))

    def getpid(self) -> int:
        """The process id (cached, refreshed in a forked child)."""
        return _PID[0]

    def random_token(self) -> str:
        """Base-36 digits like JS ``Math.random().toString(36).slice(2)`` (S-FMT-13)."""
        n = _RANDOM.getrandbits(56)  # like Math.random: not a secret, just unlikely to repeat
        out = ""
        while n:
            n, r = divmod(n, 36)
            out = _BASE36[r] + out
        return out or "0"


# --- probes ----------------------------------------------------------------------------


def is_regular_file(fs: Fs, path: str) -> bool:
    """S-IO-1: ``lstat`` says regular file; any error (missing included) is false."""
    try:
        return stat.S_ISREG(fs.lstat(path).st_mode)
    except NodeError:
        return False


def exists(fs: Fs, path: str) -> bool:
    """Node ``existsSync``: follows symlinks, never raises."""
    try:
        fs.stat(path)
    except NodeError:
        return False
    return True


# --- reads -----------------------------------------------------------------------------


def _open_regular(fs: Fs, path: str, follow: bool) -> tuple[int, os.stat_result]:
    fd = fs.open(path, READ_FLAGS | (0 if follow else O_NOFOLLOW))
    try:
        st = fs.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(path)
    except BaseException:
        _close_quietly(fs, fd)
        raise
    return fd, st


def _close_quietly(fs: Fs, fd: int) -> None:
    try:
        fs.close(fd)
    except NodeError:
        pass


def read_bytes(fs: Fs, path: str, *, follow: bool = False) -> bytes:
    """S-IO-2 as bytes: non-blocking open, regular descriptor only, whole content."""
    fd, st = _open_regular(fs, path, follow)
    try:
        chunks: list[bytes] = []
        want = max(st.st_size + 1, 65536)
        while True:
            chunk = fs.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < want:
                break  # a regular file reads short only at its end: no read for the 0
        return b"".join(chunks)
    finally:
        _close_quietly(fs, fd)


def store_read(fs: Fs, path: str, *, follow: bool = False) -> str:
    """S-IO-2: the whole file, decoded with U+FFFD replacement."""
    return decode_utf8(read_bytes(fs, path, follow=follow))


def bounded_read(fs: Fs, path: str, limit: int = MAX_BYTES) -> tuple[str, bool]:
    """S-IO-3: one positional read of at most ``limit`` bytes; ``(text, truncated)``."""
    fd, st = _open_regular(fs, path, False)
    try:
        size = st.st_size
        data = fs.pread(fd, min(size, limit), 0) if size > 0 else b""
        return decode_utf8(data), size > limit
    finally:
        _close_quietly(fs, fd)


# --- writes ----------------------------------------------------------------------------


def temp_name(fs: Fs, target: str) -> str:
    return f"{target}.tmp-{fs.getpid()}-{fs.random_token()}"


def _check_target(fs: Fs, target: str) -> None:
    try:
        st = fs.lstat(target)
    except NodeError as e:
        if e.code == "ENOENT":
            return
        raise
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(target)


def _write_temp(fs: Fs, tmp: str, data: bytes) -> None:
    fd = fs.open(tmp, CREATE_EXCLUSIVE, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = fs.write(fd, bytes(view))
            view = view[written:]
        fs.fsync(fd)
    finally:
        fs.close(fd)


def _remove_temp(fs: Fs, tmp: str) -> None:
    try:
        fs.unlink(tmp)
    except NodeError as e:
        if e.code != "ENOENT":
            raise


def atomic_write(fs: Fs, target: str, content: str) -> None:
    """S-IO-4: exclusive 0600 temporary, fsync, re-check, rename over the target."""
    _check_target(fs, target)
    tmp = temp_name(fs, target)
    try:
        _write_temp(fs, tmp, encode_utf8(content))
        _check_target(fs, target)
        fs.rename(tmp, target)
    finally:
        _remove_temp(fs, tmp)


def exclusive_publish(fs: Fs, target: str, content: str) -> None:
    """S-IO-5: like ``atomic_write`` but published by ``link``; EEXIST when the target exists."""
    tmp = temp_name(fs, target)
    try:
        _write_temp(fs, tmp, encode_utf8(content))
        fs.link(tmp, target)
    finally:
        _remove_temp(fs, tmp)


def read_lock_content(fs: Fs, path: str) -> str | None:
    """A-4: the lock's text read non-blocking, no-follow, regular only, ≤ 1 024 bytes."""
    try:
        text, _ = bounded_read(fs, path, LOCK_READ_LIMIT)
    except (NodeError, UnsafeFileError):
        return None
    return text
