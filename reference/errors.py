"""Errors as the JS core raises them: a kind (class name), a message and an errno code (S-ERR-7).

Callers of the reference and the peer protocol observe the triple (kind, message, code), so
every raised error carries exactly that, with libuv's wording for operating-system failures.
"""

from __future__ import annotations

import errno as _errno
import os

# libuv's descriptions (S-ERR-7); Python's strerror texts differ and are never used.
_LIBUV_TEXT: dict[str, str] = {
    "ENOENT": "no such file or directory",
    "EEXIST": "file already exists",
    "ENOTDIR": "not a directory",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "ENOSPC": "no space left on device",
    "EROFS": "read-only file system",
    "ENAMETOOLONG": "name too long",
    "EMFILE": "too many open files",
    "ENFILE": "file table overflow",
    "EBUSY": "resource busy or locked",
    "EINVAL": "invalid argument",
    "EXDEV": "cross-device link not permitted",
    "EIO": "i/o error",
    "ENOTEMPTY": "directory not empty",
    "EAGAIN": "resource temporarily unavailable",
    "EINTR": "interrupted system call",
    "ESRCH": "no such process",
    "EBADF": "bad file descriptor",
    "EDQUOT": "disk quota exceeded",
    "EFBIG": "file too large",
    "ENXIO": "no such device or address",
    "ETXTBSY": "text file is busy",
}


class JsError(Exception):
    """An error as the JS core would raise it."""

    kind = "Error"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "message": self.message}
        if self.code is not None:
            out["code"] = self.code
        return out


class JsTypeError(JsError):
    """V8's TypeError for malformed argument types (S-ERR-8)."""

    kind = "TypeError"


class UnsafeFileError(JsError):
    """A store file that is not a regular file (S-IO-2, S-IO-4)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"Unsafe non-regular file: {path}")
        self.path = path


class AggregateJsError(JsError):
    """Rollback failed after a failed commit (S-WRITE-13)."""

    kind = "AggregateError"

    def __init__(self, message: str, errors: list[BaseException]) -> None:
        super().__init__(message)
        self.errors = errors

    def as_dict(self) -> dict[str, object]:
        out = super().as_dict()
        out["errors"] = [describe(e) for e in self.errors]
        return out


class NodeError(JsError):
    """An operating-system failure, worded as Node/libuv words it (S-ERR-7)."""

    def __init__(
        self, err: int, syscall: str, path: str | None = None, dest: str | None = None
    ) -> None:
        code = _errno.errorcode.get(err, f"E{err}")
        text = _LIBUV_TEXT.get(code) or os.strerror(err).lower()
        where = f"{code}: {text}, {syscall}"
        if path is not None:
            where += f" '{path}'"
            if dest is not None:
                where += f" -> '{dest}'"
        super().__init__(where, code)
        self.errno = err
        self.syscall = syscall
        self.path = path
        self.dest = dest


def describe(exc: BaseException) -> dict[str, object]:
    """The protocol triple of any exception (unknown Python errors keep their class name)."""
    if isinstance(exc, JsError):
        return exc.as_dict()
    return {"kind": type(exc).__name__, "message": str(exc)}


def message_of(value: object) -> str:
    """``err.message`` for errors, the string form otherwise (S-ERR-5)."""
    if isinstance(value, JsError):
        return value.message
    return str(value)
