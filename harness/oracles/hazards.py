"""The ``raw-error`` hazard: an OS error class or errno text reaching the tool user where the
sandbox shows a plain explanation (issue 12 item 2).

SPEC fixes some of these errors (S-ERR-3/4/7 keep Node's ``ENOTDIR: not a directory, scandir
'…'``), so the conformance verdict stays SPEC's; this oracle says beside it what the user
suffers: a message naming a syscall where "the memory directory … is a file" would say what is
wrong.  ``raw_error`` is pure: it reads an answer and a ``Situation`` (what the store paths
are); ``situation`` is the one function that looks at the disk.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from .findings import HAZARD, Finding

__all__ = ["ERRNO_NAMES", "Situation", "explain", "hang", "os_text", "raw_error", "situation"]

ERRNO_NAMES = frozenset({
    "EACCES", "EAGAIN", "EBADF", "EBUSY", "EEXIST", "EFBIG", "EINVAL", "EIO", "EISDIR", "ELOOP",
    "EMFILE", "EMLINK", "ENAMETOOLONG", "ENFILE", "ENOENT", "ENOSPC", "ENOTDIR", "ENOTEMPTY",
    "EPERM", "EROFS", "ETXTBSY", "EXDEV", "EDQUOT",
})
_OS_CLASSES = (
    "OSError", "IOError", "FileNotFoundError", "FileExistsError", "IsADirectoryError",
    "NotADirectoryError", "PermissionError", "BlockingIOError", "InterruptedError",
)
_ERRNO = re.compile(r"\b(" + "|".join(sorted(ERRNO_NAMES)) + r")\b")
_PY_ERRNO = re.compile(r"\[Errno \d+\]")
_CLASS = re.compile(r"\b(" + "|".join(_OS_CLASSES) + r")\b")
_QUOTED = re.compile(r"'([^']+)'")
# The paths a store has, relative to the sandbox root, and what each is called.
STORE_PATHS = {
    "agent": "the agent directory",
    "agent/memory": "the memory directory",
    "home/.agents/memory": "the shared memory directory",
    "home/.agents": "the shared store's parent directory",
    "agent/memory.jsonc": "the configuration file",
    "agent/HANDOFF.md": "the handoff file",
    "agent/memory/MEMORY.md": "the index",
    "home/.agents/memory/MEMORY.md": "the shared index",
}
# A Situation: relative path -> "dir" | "file" | "fifo" | "missing" | "symlink-loop" |
# "dangling" | "symlink" | "unwritable-dir" | "unreadable-file" | "other".
Situation = Mapping[str, str]


class Reply(Protocol):
    ok: bool
    result: Any
    error: dict[str, Any] | None


def os_text(text: str) -> str | None:
    """The OS fragment a text shows the user (an errno name, ``[Errno n]``, an OSError
    class), or None."""
    for pattern in (_ERRNO, _PY_ERRNO, _CLASS):
        m = pattern.search(text)
        if m is not None:
            return m.group(0)
    return None


def _user_text(answer: Reply) -> str:
    """What the tool user reads: the error message, or a result text."""
    if not answer.ok:
        err = answer.error or {}
        return str(err.get("message", ""))
    return answer.result if isinstance(answer.result, str) else ""


def _kind_of(path: Path) -> str:
    try:
        st = path.lstat()
    except OSError:
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        try:
            path.stat()
        except OSError as e:
            return "symlink-loop" if e.errno == 40 else "dangling"
        return "symlink"
    if stat.S_ISDIR(st.st_mode):
        return "dir" if st.st_mode & 0o200 else "unwritable-dir"
    if stat.S_ISFIFO(st.st_mode):
        return "fifo"
    if stat.S_ISREG(st.st_mode):
        return "file" if st.st_mode & 0o400 else "unreadable-file"
    return "other"


def situation(root: str | os.PathLike[str], mentioned: tuple[str, ...] = ()) -> dict[str, str]:
    """What each store path (and each path ``mentioned`` under ``root``, with its ancestors)
    is on disk now."""
    base = Path(root)
    out = {rel: _kind_of(base / rel) for rel in STORE_PATHS}
    for rel in mentioned:
        parts = rel.split("/")
        for n in range(1, len(parts) + 1):
            sub = "/".join(parts[:n])
            out.setdefault(sub, _kind_of(base / sub))
    return out


def _name(rel: str) -> str:
    called = STORE_PATHS.get(rel)
    if called is None and rel.endswith(".md"):
        called = "the topic file"
    return f"{called} {rel}" if called else rel


def explain(situation: Situation, mentioned: tuple[str, ...] = ()) -> str | None:
    """A plain sentence for what is wrong with the store, or None if nothing plain is."""
    order = [*mentioned, *(p for p in STORE_PATHS if p not in mentioned)]
    for rel in order:
        # an ancestor that is not a directory blocks everything under it
        parts = rel.split("/")
        for n in range(1, len(parts)):
            sub = "/".join(parts[:n])
            if situation.get(sub) in ("file", "fifo", "other", "unreadable-file"):
                return f"{_name(sub)} is a file, where a directory should be"
        kind = situation.get(rel)
        wants_dir = rel in ("agent", "agent/memory", "home/.agents/memory", "home/.agents")
        if kind == "symlink-loop":
            return f"{_name(rel)} is a symlink that loops"
        if kind == "dangling":
            return f"{_name(rel)} is a symlink to nothing"
        if wants_dir and kind in ("file", "fifo", "other", "unreadable-file"):
            return f"{_name(rel)} is a file, where a directory should be"
        if not wants_dir and rel in mentioned and kind in ("dir", "unwritable-dir"):
            return f"{_name(rel)} is a directory where a file should be"
        if not wants_dir and kind == "fifo":
            return f"{_name(rel)} is a FIFO, not a file"
        if wants_dir and kind == "unwritable-dir":
            return f"{_name(rel)} is not writable"
        if kind == "unreadable-file" and rel in mentioned:
            return f"{_name(rel)} is not readable"
    for rel in ("agent/HANDOFF.md", "agent/memory.jsonc", "agent/memory/MEMORY.md", "home/.agents/memory/MEMORY.md"):
        if situation.get(rel) in ("dir", "unwritable-dir"):
            return f"{_name(rel)} is a directory where a file should be"
    return None


def mentioned_paths(answer: Reply, root: str) -> tuple[str, ...]:
    """The sandbox paths (relative) an answer's text quotes."""
    prefix = root.rstrip("/") + "/"
    out = []
    for q in _QUOTED.findall(_user_text(answer)):
        if q.startswith(prefix):
            out.append(q[len(prefix):].rstrip("/"))
    return tuple(out)


def _shown(text: str, root: str) -> str:
    text = text.replace(root.rstrip("/") + "/", "")
    return text if len(text) <= 160 else text[:160] + "…"


def raw_error(
    answer: Reply, situation: Situation, *, root: str, op: str, clause: str, mentioned: tuple[str, ...] = ()
) -> Finding | None:
    """A ``raw-error`` hazard when the user's text carries OS error text and ``situation``
    has a plain explanation for it; None otherwise (an OS error with no explanation in the
    store, e.g. a full disk, is the plainest thing to say)."""
    text = _user_text(answer)
    fragment = os_text(text)
    if fragment is None:
        return None
    plain = explain(situation, mentioned)
    if plain is None:
        return None
    return Finding(
        "raw-error", HAZARD, clause=clause, op=op, syscall=_syscall(text), path=mentioned[0] if mentioned else "",
        evidence=f"the tool user sees `{_shown(text, root)}` where '{plain}' would say what is wrong",
    )


def _syscall(text: str) -> str:
    m = re.search(r"\b(E[A-Z]+): [^,]*, ([a-z]+) ", text + " ")
    return m.group(2) if m else ""


def looks_raw(answer: Reply) -> bool:
    """Cheap first test (no disk): does the user's text carry OS error text at all?"""
    return os_text(_user_text(answer)) is not None


def hang(op: str, blocked: str | None, *, root: str, clause: str, seconds: float) -> Finding:
    """The ``hang`` hazard: a driver stopped answering ``op``; where it waited, when readable.

    ``blocked`` is ``syscall(path)`` read from ``/proc`` before the driver was killed (a
    blocking open or read of a FIFO, a lock read …); the path is shown relative to the sandbox.
    """
    syscall = ""
    where = "its kernel wait could not be read"
    if blocked:
        name, _, target = blocked.partition("(")
        target = target[:-1] if target.endswith(")") else target
        shown = _shown(target, root)
        syscall = f"{name}({shown})"
        kind = _kind_of(Path(target)) if Path(target).is_absolute() else ""
        where = f"blocked in {name} of {shown}" + (f" ({kind})" if kind else "")
    return Finding(
        kind="hang", severity=HAZARD, clause=clause, op=op, syscall=syscall,
        evidence=f"the tool never answers: {where}; the driver was killed after {seconds:g} s",
    )
