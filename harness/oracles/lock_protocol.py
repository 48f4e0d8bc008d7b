"""The lock protocol read from one writer's own syscalls (issue 29): SPEC's lock algorithm,
step by step, judged from a single run, no race needed.

A race shows a broken protocol only when the schedule happens to open the window the broken
step leaves; the calls show it every time.  For each op of a writer, in the order it made
them, this module follows SPEC S-LOCK-2..5 and S-INV-3 and reports every call made where a
required step was missing:

- **holding** (S-LOCK-2, S-INV-3, S-LOCK-8, S-MIGRATE-2): every write, rename, unlink and
  write-open of a file in a memory directory happens while the writer holds that directory's
  ``.lock`` (taken by its own successful exclusive create); every read of a store file (index,
  topic, removal list) made outside that lock by an op that goes on to change the store is a
  read that feeds a write: its content may be stale by the time the write lands.
- **exclusive create** (S-LOCK-2 steps 2 and 4): ``.lock`` is only ever created with
  ``O_CREAT|O_EXCL``, on the first take and on a reclaim alike.
- **reclaim** (S-LOCK-2 step 4, S-LOCK-3, S-LOCK-4): an unlink of a lock the writer does not
  hold comes after a failed create, an lstat, the liveness probe (``kill(pid, 0)`` failing
  with ESRCH when the lock names a pid; an empty or unreadable lock needs no probe, S-LOCK-3),
  and a second lstat made after the probe (the recheck).
- **release** (S-LOCK-5): an unlink of the writer's own lock comes after a read of the lock
  that returned the writer's own token (its pid is the token's first field, S-FMT-13).

What it cannot see: the values a stat returned (strace prints no inode), so a recheck that
compares the wrong fields passes; the age a reclaim judged; the content beyond a read's first
bytes.  The S-INV-9 window itself (a lock replaced between the release's read and its unlink)
is no breach here: every step was made.

Pure: calls in, findings out.  A call is anything with the fields of the tracer's ``Call``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from .findings import VIOLATION, Finding

LOCK = ".lock"
KIND = "lock-protocol"
_STATS = frozenset({"stat", "lstat", "newfstatat", "statx", "fstatat64"})
_OPENS = frozenset({"open", "openat"})
_READS = frozenset({"read", "pread64"})
_WRITE_OPEN = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
_PID = re.compile(r"^\s*[+]?(\d+)")


class SysCall(Protocol):
    """What the oracle reads of a call (``harness.interleave.tracer.Call`` has these)."""

    @property
    def name(self) -> str: ...
    @property
    def paths(self) -> tuple[str, ...]: ...
    @property
    def ret(self) -> str: ...
    @property
    def excl(self) -> bool: ...
    @property
    def flags(self) -> str: ...
    @property
    def data(self) -> str: ...


@dataclass
class OpTrace:
    """One op of one writer and the store calls it made, each with its step number."""

    writer: str
    impl: str
    pid: int
    op: str
    calls: Sequence[tuple[int, SysCall]]


@dataclass
class _Reclaim:
    """An acquisition attempt on one lock since its create failed: the steps seen so far."""

    failed_at: int
    observed: bool = False  # the first lstat
    probed: int | None = None  # the step of the liveness decision (kill, or a read with no pid)
    alive: bool = False  # the probe said the owner lives
    rechecked: bool = False  # an lstat after the probe
    content: str | None = None


@dataclass
class _State:
    held: dict[str, int] = field(default_factory=dict)  # directory -> step of its take
    token_read: dict[str, str] = field(default_factory=dict)  # directory -> what the last lock read returned
    reclaim: dict[str, _Reclaim] = field(default_factory=dict)
    unlocked_reads: list[tuple[int, str, str, str]] = field(default_factory=list)  # (step, directory, path, call) read outside the lock
    unlocked_changes: set[str] = field(default_factory=set)  # directories changed without their lock
    locked_reads: set[str] = field(default_factory=set)  # paths read while their directory's lock was held
    fresh: set[str] = field(default_factory=set)  # directories whose lock was just opened: its next read is the content


def _ok(ret: str) -> bool:
    return not ret.strip().startswith("-")


def _errno(ret: str) -> str:
    parts = ret.split()
    return parts[1] if len(parts) > 1 and parts[0].startswith("-") else ""


def _where(path: str, roots: Sequence[str]) -> str | None:
    """The memory directory a path lies in (its parent), or None."""
    parent = str(PurePosixPath(path).parent)
    for r in roots:
        if parent == r.rstrip("/"):
            return parent
    return None


def _show(call: SysCall, roots: Sequence[str]) -> str:
    def rel(p: str) -> str:
        d = _where(p, roots)
        return p if d is None else f"{PurePosixPath(d).parent.name}/{PurePosixPath(d).name}/{PurePosixPath(p).name}"
    what = ",".join(rel(p) for p in call.paths) if call.name != "kill" else "pid,0"
    flags = f", {call.flags}" if call.name in _OPENS and call.flags else ""
    return f"{call.name}({what}{flags}) = {call.ret.split('<', 1)[0].split(' (', 1)[0].strip()}"


def _is_lock(path: str) -> bool:
    return PurePosixPath(path).name == LOCK


def judge_op(t: OpTrace, roots: Sequence[str]) -> list[Finding]:
    """Every breach of the lock protocol in one op's calls (see the module doc)."""
    st = _State()
    out: list[Finding] = []

    def breach(clause: str, step: int, call: SysCall, missing: str) -> None:
        out.append(Finding(KIND, VIOLATION, clause=clause, impl=t.impl, op=t.op, syscall=_show(call, roots),
                           evidence=f"{t.writer} {t.op}, step {step}: {_show(call, roots)} {missing}"))

    mutated = -1  # the step of the op's last change to the store
    for step, c in t.calls:
        paths = c.paths
        if c.name == "kill":
            for r in st.reclaim.values():
                if r.probed is None:
                    r.probed, r.alive = step, _ok(c.ret) or _errno(c.ret) != "ESRCH"
            continue
        if not paths:
            continue
        path = paths[-1] if c.name in ("rename", "renameat", "renameat2", "link", "linkat") else paths[0]
        d = _where(path, roots)
        if d is None:
            continue
        if _is_lock(path):
            _lock_call(t, st, c, step, d, breach)
            continue
        if PurePosixPath(path).name.startswith(LOCK):
            continue  # the lock's own machinery (a hardened lock's temporary and reclaim guard)
        # a store file other than the lock
        writes = c.name in ("write", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat") \
            or (c.name in _OPENS and any(f in c.flags.split("|") for f in _WRITE_OPEN))
        if c.name in ("rename", "renameat", "renameat2"):
            dirs = {x for x in (_where(p, roots) for p in paths) if x is not None}
        else:
            dirs = {d}
        if writes:
            for x in sorted(dirs):
                if x not in st.held and x not in st.unlocked_changes:
                    st.unlocked_changes.add(x)  # the first change says it; the rest follow from it
                    breach("S-INV-3", step, c, f"changes {PurePosixPath(x).parent.name}/{PurePosixPath(x).name}/ without holding its .lock "
                                                "(no successful exclusive create of it before; S-LOCK-8)")
            mutated = step
        elif c.name in _READS and ".tmp-" not in PurePosixPath(path).name:
            if d in st.held:
                st.locked_reads.add(path)
            elif path not in {p for _, _, p, _ in st.unlocked_reads}:
                st.unlocked_reads.append((step, d, path, _show(c, roots)))
    for step, d, path, shown in st.unlocked_reads:
        if step < mutated:
            if path in st.locked_reads:
                continue  # read again under the lock: the early read is not what the write used
            out.append(Finding(KIND, VIOLATION, clause="S-LOCK-2", impl=t.impl, op=t.op, syscall=shown,
                               evidence=f"{t.writer} {t.op}, step {step}: {shown} read a store file outside "
                                        f"{PurePosixPath(d).parent.name}/{PurePosixPath(d).name}/.lock in an op that then changes the store "
                                        f"(a read that feeds a write before the lock is taken; S-INV-3)"))
    return out


def _lock_call(t: OpTrace, st: _State, c: SysCall, step: int, d: str, breach: _Breach) -> None:
    """One call on ``D/.lock``: take, reclaim steps, token write, release."""
    flags = c.flags.split("|")
    if c.name in _OPENS and "O_CREAT" in flags:
        if not c.excl:
            breach("S-LOCK-2", step, c, "creates the lock without O_EXCL (an existing lock is overwritten, "
                                        "two writers can both hold it)")
        if _ok(c.ret):
            st.held[d] = step
            st.token_read.pop(d, None)
            st.reclaim.pop(d, None)
        elif _errno(c.ret) == "EEXIST":
            st.reclaim[d] = _Reclaim(step)
        return
    if c.name in ("link", "linkat"):
        if _ok(c.ret):
            st.held[d] = step
            st.reclaim.pop(d, None)
        elif _errno(c.ret) == "EEXIST":
            st.reclaim[d] = _Reclaim(step)
        return
    r = st.reclaim.get(d)
    if c.name in _STATS and _ok(c.ret) and "AT_EMPTY_PATH" not in c.flags.split("|"):
        if r is not None:
            if not r.observed:
                r.observed = True
            elif r.probed is not None:
                r.rechecked = True
        return
    if c.name in _OPENS and _ok(c.ret):
        st.fresh.add(d)
        if r is not None and r.probed is None and d not in st.held:
            # the liveness read began: an empty lock gives no read at all (size 0), and then
            # its age alone decides (S-LOCK-3); a read naming a pid asks for the probe again
            r.probed, r.alive = step, False
        return
    if c.name in _READS:
        if d not in st.fresh:
            return  # a later read of the same open (node reads to EOF): the content was the first
        st.fresh.discard(d)
        if d in st.held:
            st.token_read[d] = c.data if _ok(c.ret) else ""
        elif r is not None:
            r.content = c.data if _ok(c.ret) else ""
            if _PID.match(r.content) and not r.rechecked:  # a pid: only kill(pid, 0) decides (S-LOCK-3)
                r.probed = None
        return
    if c.name in _OPENS and d not in st.held and r is not None and not _ok(c.ret):
        r.content = ""
        r.probed, r.alive = step, False  # unreadable: the age alone decides
        return
    if c.name == "write" and d not in st.held:
        breach("S-LOCK-2", step, c, "writes a lock it did not create exclusively")
        return
    if c.name not in ("unlink", "unlinkat"):
        return
    if d in st.held:
        seen = st.token_read.get(d)
        pid = _PID.match(seen or "")
        if seen is None:
            breach("S-LOCK-5", step, c, "releases the lock without reading it first (the token check is skipped: "
                                        "a lock another writer took over would be deleted)")
        elif pid is None or pid.group(1) != str(t.pid)[:len(pid.group(1))] or len(pid.group(1)) > len(str(t.pid)):
            breach("S-LOCK-5", step, c, f"releases a lock whose token is not its own (read {seen!r}, "
                                        f"its pid is {t.pid})")
        del st.held[d]
        st.token_read.pop(d, None)
        return
    # an unlink of a lock the writer does not hold: a reclaim
    missing = []
    if r is None:
        missing.append("a failed exclusive create")
    else:
        if not r.observed:
            missing.append("the lstat that judges its age")
        if r.probed is None:
            missing.append("the liveness probe (kill(pid, 0), S-LOCK-3)")
        elif r.alive:
            breach("S-LOCK-3", step, c, "deletes the lock of an owner its probe found alive")
            return
        if r.probed is not None and not r.rechecked:
            breach("S-LOCK-4", step, c, "reclaims without the recheck: no lstat of the lock after the liveness "
                                        "probe, so a lock replaced meanwhile is deleted")
            return
    if missing:
        breach("S-LOCK-2", step, c, "deletes a lock it does not hold, without " + ", ".join(missing))


class _Breach(Protocol):
    def __call__(self, clause: str, step: int, call: SysCall, missing: str) -> None: ...


def judge(ops: Iterable[OpTrace], roots: Sequence[str]) -> list[Finding]:
    """Every op's breaches; one finding per (clause, implementation, op, call shape)."""
    out: list[Finding] = []
    seen: set[tuple[str, str, str, str]] = set()
    for t in ops:
        for f in judge_op(t, roots):
            key = (f.clause, f.impl, f.op, f.syscall)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out
