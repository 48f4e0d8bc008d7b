"""No lock left behind: after an op answers, its own token is not in any ``.lock``.

SPEC S-LOCK-5/S-LOCK-9 (SS-LOCK-4) release the lock an op created whatever the op's outcome
— done, busy, refused, raised — and S-INV-2 says the lock is gone after success.  A tool
that answers correctly but leaves its token behind (say, after waiting out a co-tenant)
blocks every other writer for the next 10 s at least, and for ever while its own process
lives (its pid is alive, S-LOCK-3).  The matrix, the scenarios and the nemesis each only
graded the answer; this oracle judges what the answer left.

"Its own token": a regular ``.lock`` whose bytes were not there before the op (a lock the
harness or a co-tenant planted and the op left alone is not the op's) and whose pid field
(S-LOCK-3: the first field, leading digits) is one of the implementation's process ids.
Pure over the bytes given, plus ``lock_files`` to read them; written from SPEC alone.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path

from .findings import VIOLATION, Finding
from .spec import LOCK_NAME, LOCK_PID

KIND = "lock-left-behind"
CLAUSE = "S-LOCK-5"


def lock_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every regular ``.lock`` under ``root`` (relative path → bytes); links and others are
    not tokens an op could have created (S-LOCK-2 creates a regular file)."""
    out: dict[str, bytes] = {}
    base = Path(root)
    for dirpath, _dirs, files in os.walk(base):
        if LOCK_NAME not in files:
            continue
        path = Path(dirpath) / LOCK_NAME
        try:
            if not path.is_symlink() and path.is_file():
                with open(path, "rb") as f:
                    out[path.relative_to(base).as_posix()] = f.read(4096)
        except OSError:
            continue  # gone between the listing and the read: nothing left behind
    return out


def lock_pid(content: bytes) -> int | None:
    """The owner pid a lock names (S-LOCK-3: first field, leading decimal digits), if any."""
    m = LOCK_PID.match(content)
    return int(m.group(1)) if m else None


def leftovers(before: Mapping[str, bytes], after: Mapping[str, bytes], pids: Collection[int]) -> list[str]:
    """Paths whose lock is new since ``before`` and names one of ``pids``: the op's own."""
    own = {p for p in pids if p > 0}
    return sorted(rel for rel, content in after.items()
                  if before.get(rel) != content and lock_pid(content) in own)


def findings(before: Mapping[str, bytes], after: Mapping[str, bytes], pids: Collection[int], *,
             op: str, impl: str = "", answer: str = "") -> list[Finding]:
    """One violation per lock the op left behind, naming the op, the answer and the path."""
    said = f" after answering {answer}" if answer else ""
    return [Finding(
        kind=KIND, severity=VIOLATION, clause=CLAUSE, impl=impl, op=op, path=rel,
        evidence=(f"{op}{said} left its own lock {rel} holding {after[rel][:80]!r}: every other writer is "
                  "busy until it is reclaimed (S-LOCK-5, S-LOCK-9: the lock is released whatever the outcome)"),
    ) for rel in leftovers(before, after, pids)]


def check(root: str | os.PathLike[str], before: Mapping[str, bytes], pids: Collection[int], *,
          op: str, impl: str = "", answer: str = "") -> list[Finding]:
    """``findings`` over the locks under ``root`` now."""
    return findings(before, lock_files(root), pids, op=op, impl=impl, answer=answer)
