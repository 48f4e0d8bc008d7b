"""Crash states: what may be on disk after a crash, and an in-process explorer for the reference.

Two halves share one checker:

* ``check_crash_state`` judges a store snapshot (``{relative path: bytes}``, the shape
  ``sandbox.snapshot`` returns) taken after an operation was killed, against SPEC S-INV-8:
  each store file must be its version before the operation or one the operation publishes,
  and the cross-file states must be among the allowed ones.  ``check_settled_state`` judges a
  store after an operation completed (S-INV-2, S-INV-4, no lost or resurrected entries).
  Real kills (``harness.faults.inject``) and the explorer below both feed it, so a finding means the
  same thing whichever way the state was produced.
* The explorer runs the reference in process on ``MemFs``, an in-memory ``Fs`` that records
  every mutating call as an *effect*.  Crash states are then materialised without processes by
  replaying effect prefixes, under three persistence models: ``strict`` (every completed call
  persisted, i.e. a process kill), ``lost-dirent`` (the reference never fsyncs a directory, so
  after power loss any rename, link, create or unlink may be lost: one path reverts to an
  earlier binding) and ``torn`` (data written but not fsynced may be cut short).  States are
  dicts, checked in memory, so a bounded-exhaustive run covers every short op sequence.
"""

from __future__ import annotations

import errno as errno_mod
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference.clock import ControlledClock, parse_instant
from reference.errors import NodeError
from reference.fs import Fs
from reference.index import parse_index_line
from reference.serve import Server
from reference.store import Store

from ..sandbox import SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET

State = dict[str, bytes]
NOW = "2026-08-07T01:02:50Z"
NOW_MS = parse_instant(NOW)
TEMP_NAME = re.compile(r"\.tmp-\d+-")
LOCK_PID = re.compile(rb"^\s*([0-9]+)")
STORE_DIRS = ("agent/memory", "home/.agents/memory", "home/.config/opencode/memory")
SHARED_REL = "home/.agents/memory"
HANDOFF_REL = "agent/HANDOFF.md"
SENTINEL = ".shared-dir-migrated"
TOMBSTONES = ".ocl-removed"
FRONTMATTER_KEYS = ("name:", "description:", "last_updated:", "created:")


# --- findings --------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One broken guarantee: the clause, a short kind, the path and what was seen.

    ``severity`` is ``violation`` (the state is not one SPEC allows for this crash model) or
    ``weakness`` (allowed only by the documented power-loss paragraph of S-INV-8 / S-INV-9 b,
    reported so the cost of never fsyncing directories is visible).
    """

    clause: str
    kind: str
    path: str
    detail: str
    severity: str = "violation"

    def __str__(self) -> str:
        return f"[{self.severity}] {self.clause} {self.kind} {self.path}: {self.detail}"


@dataclass
class Verdict:
    """The allowed crash states a snapshot shows (S-INV-8 items) and the findings."""

    allowed: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "violation"]


@dataclass(frozen=True)
class Intent:
    """What the crashed operation may legitimately change (from its op case).

    ``writes``: topic filenames a write may create, update or re-index; ``removes``: filenames
    it may drop from an index (remove, recap retirement).
    """

    kind: str
    writes: frozenset[str] = frozenset()
    removes: frozenset[str] = frozenset()

    def may_remove(self, filename: str) -> bool:
        """``*`` stands for any one entry (a remove by partial name may select any)."""
        return filename in self.removes or "*" in self.removes


# --- the dict checker ------------------------------------------------------------------


def is_temp(rel: str) -> bool:
    return TEMP_NAME.search(rel.rsplit("/", 1)[-1]) is not None


def is_lock(rel: str) -> bool:
    return rel.endswith("/.lock") or rel == ".lock"


@dataclass(frozen=True)
class _Index:
    lines: tuple[str, ...]
    entries: tuple[tuple[str, str], ...]  # (filename, whole line)

    @property
    def counts(self) -> Counter[str]:
        return Counter(f for f, _ in self.entries)

    def line_of(self, filename: str) -> str | None:
        return next((line for f, line in self.entries if f == filename), None)


_INDEX_CACHE: dict[bytes, _Index] = {}


def _index(data: bytes | None) -> _Index | None:
    """Parsed entries of an index (memoised: crash states repeat the same few versions)."""
    if data is None or data in (SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET) or data.startswith(b"-> "):
        return None
    got = _INDEX_CACHE.get(data)
    if got is None:
        lines = tuple(data.decode("utf-8", "replace").split("\n"))
        entries = tuple(
            (p.filename, line) for line in lines if (p := parse_index_line(line)) is not None
        )
        got = _Index(lines, entries)
        if len(_INDEX_CACHE) > 50_000:
            _INDEX_CACHE.clear()
        _INDEX_CACHE[data] = got
    return got


def _tombstones(data: bytes | None) -> set[str]:
    if data is None or not _is_regular_content(data):
        return set()
    return {p for p in data.decode("utf-8", "replace").split("\n") if p}


def _is_regular_content(data: bytes | None) -> bool:
    return data is not None and data not in (SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET) and not (
        data.startswith(b"-> ") or data == b"<unreadable>"
    )


def _frontmatter_missing(text: bytes) -> list[str]:
    head = text.decode("utf-8", "replace").split("\n---", 1)[0]
    return [k for k in FRONTMATTER_KEYS if f"\n{k}" not in head]


def store_dirs(state: Mapping[str, bytes]) -> list[str]:
    return [d for d in STORE_DIRS if state.get(d) == SNAPSHOT_DIR]


def _lock_label(data: bytes) -> str:
    m = LOCK_PID.match(data)
    return "8.6 leftover lock (dead pid)" if m else "8.6 leftover lock (unreadable pid, 60 s)"


def check_crash_state(
    state: Mapping[str, bytes],
    before: Mapping[str, bytes],
    published: Mapping[str, frozenset[bytes | None]],
    intent: Intent,
    *,
    history: Mapping[str, frozenset[bytes | None]] | None = None,
    power_loss: bool = False,
) -> Verdict:
    """Judge one crash state of an operation that started from ``before`` (S-INV-8).

    ``published`` holds, per path, the complete versions the operation writes; ``history``
    the versions acknowledged earlier (a state showing one of those lost an update).  With
    ``power_loss`` each file may independently revert or vanish (S-INV-8, last paragraph),
    so cross-file consequences are reported as weaknesses, not violations.
    """
    v = Verdict()
    cross = "weakness" if power_loss else "violation"
    paths = set(state) | set(before) | set(published)
    for rel in sorted(paths):
        got = state.get(rel)
        if is_temp(rel):
            if got is not None and before.get(rel) != got:
                v.allowed.add("8.5 leftover temporary")
            continue
        if is_lock(rel):
            if got is not None:
                v.allowed.add(_lock_label(got))
            continue
        allowed = {before.get(rel)} | set(published.get(rel, frozenset()))
        if got in allowed:
            continue
        older = history.get(rel, frozenset()) if history is not None else frozenset()
        if got in older:
            v.findings.append(
                Finding("S-INV-8", "reverted", rel, "an acknowledged version was lost", cross)
            )
        elif got is None:
            v.findings.append(Finding("S-INV-8", "vanished", rel, "file disappeared", cross))
        elif any(a is not None and len(got) < len(a) and a.startswith(got) for a in allowed):
            clause = "A-3" if rel == HANDOFF_REL else "S-INV-1"
            v.findings.append(Finding(clause, "torn", rel, f"{len(got)} bytes: a cut-off version"))
        else:
            clause = "A-3" if rel == HANDOFF_REL else "S-INV-1"
            v.findings.append(Finding(clause, "torn", rel, f"{_show(got)} is no complete version"))
    for d in store_dirs(state) or []:
        _check_dir(v, state, before, d, intent, cross)
    for rel in ("agent/memory.jsonc", "home/.config/opencode/memory.jsonc"):
        if before.get(rel) is None and state.get(rel) is None and published.get(rel):
            v.allowed.add("8.7 configuration absent")
    return v


def _check_dir(
    v: Verdict, state: Mapping[str, bytes], before: Mapping[str, bytes], d: str, intent: Intent, cross: str
) -> None:
    idx_rel = f"{d}/MEMORY.md"
    now_idx, old_idx = _index(state.get(idx_rel)), _index(before.get(idx_rel))
    tomb_now = _tombstones(state.get(f"{d}/{TOMBSTONES}"))
    tomb_old = _tombstones(before.get(f"{d}/{TOMBSTONES}"))
    indexed_now = set(now_idx.counts) if now_idx else set()
    indexed_old = set(old_idx.counts) if old_idx else set()
    if now_idx is not None:
        old_counts = old_idx.counts if old_idx else Counter[str]()
        for fname, n in now_idx.counts.items():
            if n > 1 and n > old_counts.get(fname, 0):
                v.findings.append(Finding("S-INV-2", "duplicate-entry", idx_rel, f"{fname} indexed {n} times", cross))
            topic = state.get(f"{d}/{fname}")
            if not _is_regular_content(topic):
                was_orphan = fname in indexed_old and not _is_regular_content(before.get(f"{d}/{fname}"))
                if not was_orphan:
                    v.findings.append(Finding("S-INV-2", "orphan-entry", idx_rel, f"{fname} names no regular file", cross))
            elif topic != before.get(f"{d}/{fname}") and topic is not None:
                missing = _frontmatter_missing(topic)
                if missing:
                    v.findings.append(
                        Finding("S-INV-2", "frontmatter", f"{d}/{fname}", "no " + ", ".join(missing), cross)
                    )
            if fname in tomb_now:
                if fname in intent.writes or intent.may_remove(fname) or fname in indexed_old:
                    v.allowed.add("8.2/8.3 indexed and tombstoned")
                else:
                    v.findings.append(
                        Finding("S-INV-7", "resurrected", idx_rel, f"{fname} is tombstoned yet indexed", cross)
                    )
        for fname in sorted(indexed_now - indexed_old):
            if fname in tomb_old and fname not in intent.writes and intent.kind != "carry-over":
                v.findings.append(Finding("S-INV-7", "resurrected", idx_rel, f"{fname} was tombstoned", cross))
    if old_idx is not None:
        for fname in sorted(indexed_old - indexed_now):
            regular_before = _is_regular_content(before.get(f"{d}/{fname}"))
            if regular_before and not intent.may_remove(fname):
                v.findings.append(Finding("S-INV-8", "lost-entry", idx_rel, f"{fname} lost its index entry", cross))
    for fname in sorted(intent.writes):
        topic_rel = f"{d}/{fname}"
        now_topic, old_topic = state.get(topic_rel), before.get(topic_rel)
        if now_topic is None or now_topic == old_topic:
            continue
        if fname not in indexed_now:
            v.allowed.add("8.1 unindexed new topic")
        elif now_idx is not None and old_idx is not None and now_idx.line_of(fname) == old_idx.line_of(fname):
            v.allowed.add("8.1 stale index metadata")
    for rel, data in before.items():
        in_dir = rel.startswith(d + "/") and "/" not in rel[len(d) + 1 :] and rel.endswith((".md", ".MD"))
        if in_dir and rel != idx_rel and _is_regular_content(data) and state.get(rel) is None:
            v.findings.append(Finding("S-INV-4", "topic-deleted", rel, "a topic file was deleted", cross))
    if intent.kind == "carry-over" and d == SHARED_REL:
        local = next((x for x in store_dirs(state) if x != SHARED_REL), None)
        changed = any(state.get(r) != before.get(r) for r in state if r.startswith(d + "/") and not is_temp(r) and not is_lock(r))
        if changed and local is not None and f"{local}/{SENTINEL}" not in state:
            v.allowed.add("8.4 partial carry-over")


def check_settled_state(
    state: Mapping[str, bytes],
    before: Mapping[str, bytes],
    intent: Intent,
    *,
    live_pids: Sequence[int] = (),
) -> list[Finding]:
    """After an operation completed (e.g. the recovery): S-INV-2, S-INV-4, S-INV-7, no loss.

    Locks and temporaries of processes that are gone are a crash's leftovers (S-INV-8 5/6);
    those of ``live_pids`` (the operation that just ran) are violations of S-INV-2.
    """
    out: list[Finding] = []
    for rel, data in sorted(state.items()):
        if is_lock(rel) and rel.rsplit("/", 1)[0] in STORE_DIRS:
            m = LOCK_PID.match(data)
            if m is None or int(m.group(1)) in live_pids or (before.get(rel) is None and not live_pids):
                out.append(Finding("S-INV-2", "lock-left", rel, f"lock {_show(data)} left behind"))
        elif is_temp(rel) and rel not in before:
            pid = re.search(r"\.tmp-(\d+)-", rel)
            if pid is not None and int(pid.group(1)) in live_pids:
                out.append(Finding("S-INV-2", "temporary-left", rel, "temporary of the finished operation"))
    for d in store_dirs(state):
        idx = _index(state.get(f"{d}/MEMORY.md"))
        old = _index(before.get(f"{d}/MEMORY.md"))
        if idx is None:
            continue
        for fname, n in idx.counts.items():
            if n > 1 and (old is None or old.counts.get(fname, 0) < n):
                out.append(Finding("S-INV-2", "duplicate-entry", f"{d}/MEMORY.md", f"{fname} indexed {n} times"))
            if not _is_regular_content(state.get(f"{d}/{fname}")):
                out.append(Finding("S-INV-2", "orphan-entry", f"{d}/MEMORY.md", f"{fname} names no regular file"))
        tomb_old = _tombstones(before.get(f"{d}/{TOMBSTONES}"))
        old_set = set(old.counts) if old else set()
        for fname in sorted(set(idx.counts) - old_set):
            if fname in tomb_old and fname not in intent.writes and intent.kind != "carry-over":
                out.append(Finding("S-INV-7", "resurrected", f"{d}/MEMORY.md", f"{fname} was tombstoned"))
        for fname in sorted(old_set - set(idx.counts)):
            if _is_regular_content(before.get(f"{d}/{fname}")) and not intent.may_remove(fname):
                out.append(Finding("S-INV-8", "lost-entry", f"{d}/MEMORY.md", f"{fname} lost its index entry"))
    for rel, data in before.items():
        parent, _, name = rel.rpartition("/")
        is_topic = parent in STORE_DIRS and name.lower().endswith(".md") and name != "MEMORY.md"
        if is_topic and _is_regular_content(data) and state.get(rel) is None:
            out.append(Finding("S-INV-4", "topic-deleted", rel, "a topic file was deleted"))
    return out


BEST_EFFORT = frozenset({"retire", "carry-over", "config"})  # never raise (S-RETIRE-5, S-MIGRATE-2, S-CFG-8)


@dataclass(frozen=True)
class Site:
    """Where a fault was injected: the call, its path relative to the sandbox, and whether
    an ``open`` creates the file (a lock's creation vs. its release read)."""

    call: str
    path: str
    creates: bool = False

    def __str__(self) -> str:
        return f"{self.call}({self.path}{', O_CREAT' if self.creates else ''})"


def judge_fault(
    intent: Intent,
    site: Site,
    before: Mapping[str, bytes],
    completed: Mapping[str, bytes],
    after: Mapping[str, bytes],
    ok: bool,
    result: object,
) -> Verdict:
    """An operation that met an injected error: it fails and leaves the store as it was
    (S-WRITE-13 rollback), or absorbs the fault and completes, or — only when a rollback step
    itself failed — raises AggregateError with every file individually complete (S-INV-8 8).
    Best-effort operations (retirement, carry-over, configuration) never raise and may stop
    in any allowed crash state.  The lock is released in every case (S-LOCK-9), except that a
    failed release is ignored by design (S-LOCK-5, reported as a weakness)."""
    v = Verdict()
    site_is_lock = is_lock(site.path)
    for rel in sorted(after):
        if is_lock(rel) and before.get(rel) is None:
            if site_is_lock and (site.call.startswith("write") or site.creates):
                v.findings.append(Finding("A-13", "lock-left", rel, f"{_show(after[rel])} left after {site}"))
            elif site_is_lock:
                v.findings.append(
                    Finding("S-LOCK-5", "lock-left", rel, f"release failed at {site}; the live owner blocks", "weakness")
                )
            else:
                v.findings.append(Finding("S-LOCK-9", "lock-left", rel, f"lock not released after {site}"))
        elif is_temp(rel) and before.get(rel) is None:
            if site.call.startswith("unlink") and is_temp(site.path):
                v.allowed.add("8.5 leftover temporary")
            else:
                v.findings.append(Finding("S-IO-4", "temporary-left", rel, f"not removed after {site}"))

    def differs(a: Mapping[str, bytes], b: Mapping[str, bytes]) -> list[str]:
        # directories created on the way to the lock are not part of the rollback (S-PATH-8)
        keys = set(a) | set(b)
        return sorted(
            k for k in keys
            if not is_temp(k) and not is_lock(k) and a.get(k) != b.get(k) and SNAPSHOT_DIR not in (a.get(k), b.get(k))
        )

    vs_before, vs_done = differs(after, before), differs(after, completed)
    kind = result.get("kind") if isinstance(result, dict) else None
    if site.path.endswith("memory.jsonc") and not site.creates and vs_done:
        # S-CFG-8: an unreadable configuration is the fallback record, so the operation ran
        # in local mode whatever ``shared_dir`` says (S-PATH-4): conformant, but a hazard.
        v.findings.append(Finding(
            "S-CFG-8", "config-fallback", ", ".join(vs_done),
            f"{site} failed: defaults used, the op ran against another store ({_show_result(result)})", "weakness",
        ))
        return v
    if intent.kind in BEST_EFFORT:
        if not ok:
            v.findings.append(Finding("S-ERR-5", "raised", site.path, f"best-effort {intent.kind} raised {result!r}"))
        crash = check_crash_state(after, before, published_versions(before, completed), intent)
        v.allowed |= crash.allowed
        v.findings += crash.findings
        if vs_before and vs_done:
            v.allowed.add("stopped part way")
        return v
    if not ok:
        if not vs_before:
            v.allowed.add("failed and rolled back")
        elif kind == "AggregateError" and all(after.get(k) in (before.get(k), completed.get(k)) for k in vs_before):
            v.allowed.add("8.8 rollback failed (AggregateError), files complete")
        elif not vs_done:
            v.findings.append(
                Finding("S-IO-4", "failed-after-commit", ", ".join(vs_before),
                        f"{kind} at {site} reported although the change is in place", "weakness")
            )
        elif intent.kind != "write" and not check_crash_state(
            after, before, published_versions(before, completed), intent
        ).violations:
            v.findings.append(
                Finding("S-INV-8", "failed-part-way", ", ".join(vs_before),
                        f"{kind} at {site}; no rollback, an allowed crash state remains", "weakness")
            )
        else:
            clause = "A-3" if HANDOFF_REL in vs_before else "S-WRITE-13"
            v.findings.append(
                Finding(clause, "partial-update", ", ".join(vs_before), f"failed with {kind} at {site} but changed the store")
            )
    elif vs_done:
        what = "nothing" if not vs_before else ", ".join(vs_done)
        v.findings.append(
            Finding("S-INV-8", "silent-failure", ", ".join(vs_done), f"answered {_show_result(result)} after {site}; differs: {what}")
        )
    else:
        v.allowed.add("fault absorbed, completed")
    return v


def _show_result(result: object) -> str:
    text = repr(result)
    return text if len(text) < 80 else text[:80] + "…"


def lock_age_ms(data: bytes) -> int:
    """How old a dead owner's lock must be to be reclaimable (S-INV-8 6): 10 s with a
    readable pid, 60 s without one; recovery sets the mtime this far back (C-4)."""
    return 11_000 if LOCK_PID.match(data) else 61_000


def _show(data: bytes | None, limit: int = 60) -> str:
    if data is None:
        return "<absent>"
    text = repr(data[:limit])
    return text + ("…" if len(data) > limit else "")


# --- MemFs: an in-memory Fs that records effects ------------------------------------------

# An effect is a tuple whose first item names it:
#   ("create", path, ino) ("write", ino, offset, data) ("fsync", ino) ("rename", src, dst)
#   ("link", src, dst) ("unlink", path) ("mkdir", path, ino)
#   ("put", path, ino, data): a durable edit by the user between operations (never a crash point)
Effect = tuple[Any, ...]

_KIND_MODE = {"file": stat.S_IFREG, "dir": stat.S_IFDIR, "fifo": stat.S_IFIFO, "symlink": stat.S_IFLNK, "socket": stat.S_IFSOCK}
_MARKER_KIND = {SNAPSHOT_DIR: "dir", SNAPSHOT_FIFO: "fifo", SNAPSHOT_SOCKET: "socket"}


@dataclass
class _Tree:
    """Names, inode kinds and data: the persistent part of a filesystem (copyable)."""

    names: dict[str, int] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)
    synced: dict[int, int] = field(default_factory=dict)
    mtime: dict[int, int] = field(default_factory=dict)
    modes: dict[int, int] = field(default_factory=dict)

    def copy(self) -> _Tree:
        return _Tree(dict(self.names), dict(self.kinds), dict(self.data), dict(self.synced), dict(self.mtime), dict(self.modes))

    def apply(self, e: Effect, now_ns: int = 0) -> None:
        op = e[0]
        if op == "write":
            _, ino, off, chunk = e
            old = self.data[ino]
            self.data[ino] = old[:off] + chunk + old[off + len(chunk) :]
            self.mtime[ino] = now_ns or self.mtime.get(ino, 0)
        elif op == "create":
            _, path, ino = e
            self.names[path] = ino
            self.kinds[ino], self.data[ino], self.synced[ino] = "file", b"", 0
            self.mtime[ino] = now_ns
            self.modes.setdefault(ino, 0o600)
        elif op == "fsync":
            self.synced[e[1]] = len(self.data[e[1]])
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
        for path, ino in self.names.items():
            if path == root:
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


@dataclass(frozen=True)
class Call:
    """One store-touching Fs call, as a crash point names it."""

    name: str
    path: str
    effect: int  # number of effects recorded before this call
    creates: bool = False

    def __str__(self) -> str:
        return f"{self.name}({self.path})"


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
        self.tree = _Tree()
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

    def _touch(self, name: str, path: str, creates: bool = False) -> None:
        self.calls.append(Call(name, path, len(self.effects), creates))
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
        self._touch("open", path, bool(flags & os.O_CREAT))
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
        self._touch("write", f.path)
        if not f.writable:
            raise NodeError(errno_mod.EBADF, "write")
        self._effect(("write", f.ino, f.offset, bytes(data)))
        f.offset += len(data)
        return len(data)

    def fsync(self, fd: int) -> None:
        f = self._get(fd, "fsync")
        self._touch("fsync", f.path)
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
        self._touch("rename", dst)
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
        self._touch("link", dst)
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
        self._touch("unlink", path)
        self._parent_ok(path, "unlink")
        ino = self.tree.names.get(path)
        if ino is None:
            raise NodeError(errno_mod.ENOENT, "unlink", path)
        if self.tree.kinds[ino] == "dir":
            raise NodeError(errno_mod.EISDIR, "unlink", path)
        self._effect(("unlink", path))

    def mkdir(self, path: str) -> None:
        path = self._norm(path)
        self._touch("mkdir", path)
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
        self._touch("open", path)  # opendir: an openat of the directory, as strace sees it
        ino = self._resolve(path, "scandir", True)
        if self.tree.kinds[ino] != "dir":
            raise NodeError(errno_mod.ENOTDIR, "scandir", path)
        prefix = path.rstrip("/") + "/"
        names = [p[len(prefix) :] for p in self.tree.names if p.startswith(prefix) and "/" not in p[len(prefix) :]]
        return sorted(names, key=os.fsencode)

    def regular_names(self, path: str) -> set[str]:
        self._touch("open", self._norm(path))
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


# --- operation cases (shared by the explorer and real kills) ------------------------------


@dataclass(frozen=True)
class Layout:
    """Where an implementation keeps its local store and configuration (relative paths)."""

    local: str
    config: str


LAYOUTS: dict[str, Layout] = {
    "python": Layout("agent/memory", "agent/memory.jsonc"),
    "pi": Layout("agent/memory", "agent/memory.jsonc"),
    "opencode": Layout("home/.config/opencode/memory", "home/.config/opencode/memory.jsonc"),
}
STAMP = "2026-08-01T00:00:00+00:00"


def topic_text(name: str, summary: str, body: str) -> str:
    return (
        f'---\nmetadata:\n  node_type: memory\nname: "{name}"\ndescription: "{summary}"\n'
        f"last_updated: {STAMP}\ncreated: {STAMP}\n---\n\n{body}\n"
    )


def entry(name: str, fname: str, summary: str) -> str:
    return f"- [{name}]({fname}) {STAMP} -- {summary}"


LOCAL_CFG = '{"shared_dir": false}\n'
SHARED_CFG = '{"shared_dir": true}\n'
INDEX_B = "# Memory Index\n\n" + entry("B", "b.md", "bee") + "\n"
INDEX_AB = "# Memory Index\n\n" + entry("A", "a.md", "ay") + "\n" + entry("B", "b.md", "bee") + "\n"
TOPIC_A = topic_text("A", "ay", "alpha")
TOPIC_B = topic_text("B", "bee", "beta")
HANDOFF_OLD = "## 2026-08-06T10:00:00+00:00 (manual)\n\n- earlier work\n"
MESSAGES = [{"role": "assistant", "content": [{"type": "text", "text": "- fixed the build\n- next step: deploy"}]}]


@dataclass(frozen=True)
class OpCase:
    """One operation kind to crash: the store before it, the call, and what it may change.

    ``given`` paths use ``{L}`` (the implementation's local store), ``{S}`` (the shared store)
    and ``{C}`` (its configuration file).  ``recover`` is the next operation a fresh process
    runs after the crash (by default the same call again).
    """

    name: str
    kind: str
    given: dict[str, str]
    op: str
    args: dict[str, Any]
    intent: Intent
    recover: tuple[str, dict[str, Any]] | None = None
    impls: frozenset[str] = frozenset({"python", "pi", "opencode"})
    description: str = ""

    def files(self, impl: str) -> State:
        lay = LAYOUTS[impl]
        out: State = {}
        for rel, text in self.given.items():
            rel = rel.replace("{L}", lay.local).replace("{S}", SHARED_REL).replace("{C}", lay.config)
            out[rel] = text.encode("utf-8")
        return out

    def recovery(self) -> tuple[str, dict[str, Any]]:
        return self.recover if self.recover is not None else (self.op, self.args)


def _case(name: str, kind: str, given: dict[str, str], op: str, args: dict[str, Any], **kw: Any) -> OpCase:
    return OpCase(name, kind, given, op, args, **kw)


_LOCAL_AB = {"{C}": LOCAL_CFG, "{L}/MEMORY.md": INDEX_AB, "{L}/a.md": TOPIC_A, "{L}/b.md": TOPIC_B}
_SHARED_AB = {"{C}": SHARED_CFG, "{S}/MEMORY.md": INDEX_AB, "{S}/a.md": TOPIC_A, "{S}/b.md": TOPIC_B}
_PI_ONLY = frozenset({"python", "pi"})

CASES: dict[str, OpCase] = {
    c.name: c
    for c in [
        _case(
            "write-create", "write",
            {"{C}": LOCAL_CFG, "{L}/MEMORY.md": INDEX_B, "{L}/b.md": TOPIC_B},
            "write_memory", {"topic": "A", "content": "alpha", "summary": "ay"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            description="a new topic next to an indexed one",
        ),
        _case(
            "write-append", "write", dict(_LOCAL_AB),
            "write_memory", {"topic": "A", "content": "more", "summary": "ay two"},
            intent=Intent("write", writes=frozenset({"a.md"})),
        ),
        _case(
            "write-replace", "write", dict(_LOCAL_AB),
            "write_memory", {"topic": "A", "content": "fresh", "summary": "ay three", "mode": "replace"},
            intent=Intent("write", writes=frozenset({"a.md"})),
        ),
        _case(
            "write-shared-tombstoned", "write",
            {"{C}": SHARED_CFG, "{S}/MEMORY.md": INDEX_B, "{S}/b.md": TOPIC_B, "{S}/a.md": TOPIC_A,
             f"{{S}}/{TOMBSTONES}": "a.md\n"},
            "write_memory", {"topic": "A", "content": "back", "summary": "ay again"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            impls=_PI_ONLY, description="shared write of a tombstoned topic: index, then tombstone cleared",
        ),
        _case(
            "remove", "remove", dict(_LOCAL_AB),
            "remove_memory", {"topic": "A"}, intent=Intent("remove", removes=frozenset({"a.md"})),
        ),
        _case(
            "remove-shared", "remove", dict(_SHARED_AB),
            "remove_memory", {"topic": "A"}, intent=Intent("remove", removes=frozenset({"a.md"})),
            impls=_PI_ONLY, description="tombstone recorded before the index drops the entry",
        ),
        _case(
            "pin", "pin", dict(_LOCAL_AB),
            "pin_memory", {"topic": "A", "pin": True}, intent=Intent("pin"),
        ),
        _case(
            "retire", "retire",
            {"{C}": LOCAL_CFG,
             "{L}/MEMORY.md": INDEX_B + entry("Recap", "last-session-recap.md", "old recap") + "\n",
             "{L}/b.md": TOPIC_B, "{L}/last-session-recap.md": topic_text("Recap", "old recap", "recap"),
             "{S}/MEMORY.md": "# Memory Index\n\n" + entry("Recap", "last-session-recap.md", "shared recap") + "\n",
             "{S}/last-session-recap.md": topic_text("Recap", "shared recap", "recap")},
            "retire_recaps", {}, intent=Intent("retire", removes=frozenset({"last-session-recap.md"})),
            impls=_PI_ONLY,
        ),
        _case(
            "carry-over", "carry-over",
            {"{C}": SHARED_CFG, "{L}/MEMORY.md": INDEX_AB, "{L}/a.md": TOPIC_A, "{L}/b.md": TOPIC_B,
             "{S}/MEMORY.md": "# Memory Index\n\n" + entry("C", "c.md", "sea") + "\n",
             "{S}/c.md": topic_text("C", "sea", "gamma"), "{S}/b.md": topic_text("B", "other", "foreign")},
            "memory_dir", {}, intent=Intent("carry-over"),
            description="copy a.md, b.md as b-<suffix>.md, append both lines, then the sentinel",
        ),
        _case(
            "config-create", "config", {}, "parse_rules", {}, intent=Intent("config"),
        ),
        _case(
            "handoff-write", "handoff", {"agent/HANDOFF.md": HANDOFF_OLD},
            "write_handoff", {"messages": MESSAGES, "reason": "manual"}, intent=Intent("handoff"),
            recover=("read_handoff", {}), impls=_PI_ONLY,
        ),
        _case(
            "handoff-replace", "handoff", {"agent/HANDOFF.md": HANDOFF_OLD},
            "replace_latest_handoff", {"summary": "## Goal\nship it", "reason": "threshold"},
            intent=Intent("handoff"), recover=("read_handoff", {}), impls=_PI_ONLY,
        ),
    ]
}


def published_versions(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> dict[str, frozenset[bytes | None]]:
    """The versions a completed run publishes: each changed path's final content."""
    return {
        rel: frozenset({after.get(rel)})
        for rel in set(before) | set(after)
        if before.get(rel) != after.get(rel)
    }


# --- the in-process explorer ---------------------------------------------------------------

MODELS = ("strict", "lost-dirent", "torn")
ROOT = "/mem"


def new_server(fs: MemFs, clock: ControlledClock) -> Server:
    """A fresh reference store on ``fs``, as a fresh process would load it (S-INV-10)."""
    env = {
        "PI_CODING_AGENT_DIR": f"{ROOT}/agent",
        "PI_SHARED_MEMORY_HOME": f"{ROOT}/home",
        "HOME": f"{ROOT}/home",
    }
    return Server(Store(env, fs=fs, clock=clock, diagnostics=lambda _line: None))


def run_op(server: Server, op: str, args: Mapping[str, Any]) -> tuple[bool, object]:
    """One protocol op in process: ``(ok, result or error dict)``, exactly as a driver answers."""
    answer, _ = server.answer(json.dumps({"id": 1, "op": op, "args": dict(args)}))
    ok = bool(answer.get("ok"))
    return ok, answer.get("result") if ok else answer.get("error")


@dataclass
class Recording:
    """A recorded run: the durable start, every effect since, and where the explored op begins."""

    start: _Tree
    effects: list[Effect]
    calls: list[Call]
    effect_call: list[int]
    first: int
    result: tuple[bool, object]

    def crash_point(self, k: int) -> str:
        if k >= len(self.effects):
            return "after its last call"
        c = self.calls[self.effect_call[k]]
        return f"crash at {c.name}({c.path.replace(ROOT + '/', '')})"


@dataclass
class ModelStats:
    """Counts for one persistence model."""

    states: int = 0
    distinct: int = 0
    violating: int = 0
    by_clause: Counter[str] = field(default_factory=Counter)
    weakness: Counter[str] = field(default_factory=Counter)
    allowed: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    recovered: int = 0
    recovery_failures: int = 0

    def add(self, verdict: Verdict, where: str) -> None:
        self.states += 1
        bad = False
        for f in verdict.findings:
            key = f"{f.clause} {f.kind}"
            if f.severity == "violation":
                self.by_clause[key] += 1
                bad = True
                self.examples.setdefault(key, f"{where}: {f}")
            else:
                self.weakness[key] += 1
                self.examples.setdefault("weakness " + key, f"{where}: {f}")
        self.violating += bad
        for label in verdict.allowed:
            self.allowed[label] += 1


@dataclass
class Exploration:
    """Totals of an exploration, per model."""

    models: dict[str, ModelStats]
    sequences: int = 0
    crash_points: int = 0
    seconds: float = 0.0
    check_seconds: float = 0.0

    @property
    def states(self) -> int:
        return sum(m.states for m in self.models.values())

    @property
    def violations(self) -> int:
        return sum(m.violating + m.recovery_failures for m in self.models.values())

    def render(self) -> str:
        rate = self.states / self.check_seconds if self.check_seconds else 0.0
        lines = [
            f"{self.sequences} op sequences, {self.crash_points} crash points, {self.states} crash "
            f"states checked in {self.seconds:.1f} s ({rate:,.0f} states/s materialise+check)"
        ]
        for name, m in self.models.items():
            extra = f"; recovery run on {m.recovered}, {m.recovery_failures} failed" if m.recovered else ""
            lines.append(f"  {name:12s} {m.states:8d} states ({m.distinct} distinct), {m.violating} violating{extra}")
            for key, n in sorted(m.by_clause.items()):
                lines.append(f"      violation {key}: {n}  e.g. {m.examples[key]}")
            for key, n in sorted(m.weakness.items()):
                lines.append(f"      weakness  {key}: {n}  e.g. {m.examples['weakness ' + key]}")
            for key, n in sorted(m.allowed.items()):
                lines.append(f"      allowed   {key}: {n}")
        return "\n".join(lines)


def _touched(tree: _Tree, e: Effect) -> list[str]:
    """Paths whose binding or content an effect changes."""
    op = e[0]
    if op == "write":
        return [p for p, ino in tree.names.items() if ino == e[1]]
    if op in ("rename", "link"):
        return [e[1], e[2]]
    if op == "fsync":
        return []
    return [e[1]]


class Explorer:
    """Runs ops on MemFs and checks every crash state of the explored op under each model.

    With ``recover`` each distinct strict state also gets a fresh store (the dead owner's lock
    aged 11 s, C-4) that runs the case's recovery op; the settled store is checked as well.
    """

    def __init__(self, *, recover: bool = True, models: Sequence[str] = MODELS) -> None:
        self.recover = recover
        self.models = tuple(models)
        self.result = Exploration({m: ModelStats() for m in self.models})
        self._seen: dict[str, set[int]] = {m: set() for m in self.models}

    @staticmethod
    def new_fs(state: Mapping[str, bytes]) -> tuple[MemFs, ControlledClock]:
        clock = ControlledClock(NOW_MS)
        return MemFs(ROOT, clock.now_ms).load(state), clock

    def record_case(self, case: OpCase) -> Recording:
        fs, clock = self.new_fs(case.files("python"))
        start = fs.tree.copy()
        result = run_op(new_server(fs, clock), case.op, case.args)
        return Recording(start, fs.effects, fs.calls, fs.effect_call, 0, result)

    # --- the states of one op ------------------------------------------------------------

    def explore(
        self, rec: Recording, intent: Intent, recovery: tuple[str, Mapping[str, Any]] | None, label: str
    ) -> None:
        """Every crash point of the op that starts at effect ``rec.first``, under each model."""
        t0 = time.perf_counter()
        tree = rec.start.copy()
        history: dict[str, set[bytes | None]] = {}
        for p, ino in tree.names.items():
            if tree.kinds[ino] == "file":
                history[p[len(ROOT) + 1 :]] = {tree.data[ino]}

        def step(e: Effect, versions: dict[str, set[bytes | None]], synced_only: bool) -> None:
            tree.apply(e)
            for p in _touched(tree, e):
                rel = p[len(ROOT) + 1 :]
                history.setdefault(rel, {None})
                ino = tree.names.get(p)
                seen = versions.setdefault(rel, set())
                if ino is None:
                    seen.add(None)
                elif tree.kinds[ino] == "file" and (not synced_only or tree.synced.get(ino, 0) == len(tree.data[ino])):
                    seen.add(tree.data[ino])

        for e in rec.effects[: rec.first]:
            step(e, history, False)
        before = tree.state(ROOT)
        published: dict[str, set[bytes | None]] = {}
        points: list[tuple[int, State, _Tree]] = [(rec.first, before, tree.copy())]
        for k in range(rec.first, len(rec.effects)):
            step(rec.effects[k], published, True)
            points.append((k + 1, tree.state(ROOT), tree.copy()))
        final = points[-1][1]
        for rel in set(before) | set(final):
            if before.get(rel) != final.get(rel):
                published.setdefault(rel, set()).add(final.get(rel))
        pub = {k: frozenset(v) for k, v in published.items()}
        hist = {k: frozenset(v) for k, v in history.items()}
        # binding history per path up to each crash point (for the lost-dirent model)
        btree = rec.start.copy()
        bhist: dict[str, list[int | None]] = {}
        marks: list[dict[str, list[int | None]]] = []
        for k, e in enumerate(rec.effects):
            if k >= rec.first:
                marks.append({p: list(v) for p, v in bhist.items()})
            if e[0] in ("create", "rename", "link", "unlink", "mkdir", "put"):
                paths = [e[1], e[2]] if e[0] in ("rename", "link") else [e[1]]
                for p in paths:
                    if e[0] == "put":
                        bhist.pop(p, None)
                    else:
                        bhist.setdefault(p, [btree.names.get(p)])
                btree.apply(e)
                for p in paths:
                    if e[0] != "put":
                        bhist[p].append(btree.names.get(p))
            else:
                btree.apply(e)
        marks.append(bhist)
        self.result.check_seconds += time.perf_counter() - t0
        for i, (k, state, snap) in enumerate(points):
            self.result.crash_points += 1
            where = f"{label} {rec.crash_point(k)}"
            if "strict" in self.result.models:
                self._check("strict", state, before, pub, hist, intent, where, False, recovery)
            if "torn" in self.result.models:
                for variant, what in _torn_variants(snap):
                    self._check("torn", variant, before, pub, hist, intent, f"{where}, {what}", False, None)
            if "lost-dirent" in self.result.models:
                for variant, what in _dirent_variants(snap, marks[i]):
                    self._check("lost-dirent", variant, before, pub, hist, intent, f"{where}, {what}", True, None)

    def _check(
        self,
        model: str,
        state: State,
        before: State,
        published: Mapping[str, frozenset[bytes | None]],
        history: Mapping[str, frozenset[bytes | None]],
        intent: Intent,
        where: str,
        power_loss: bool,
        recovery: tuple[str, Mapping[str, Any]] | None,
    ) -> None:
        t0 = time.perf_counter()
        stats = self.result.models[model]
        key = hash((frozenset(state.items()), frozenset(before.items())))
        fresh = key not in self._seen[model]
        if fresh:
            self._seen[model].add(key)
            stats.distinct += 1
        verdict = check_crash_state(state, before, published, intent, history=history, power_loss=power_loss)
        stats.add(verdict, where)
        self.result.check_seconds += time.perf_counter() - t0
        if fresh and self.recover and recovery is not None:
            stats.recovered += 1
            findings = self.recover_from(state, before, intent, recovery)
            if findings:
                stats.recovery_failures += 1
                for f in findings:
                    key2 = f"recovery {f.clause} {f.kind}"
                    stats.by_clause[key2] += 1
                    stats.examples.setdefault(key2, f"{where}: {f}")

    def recover_from(
        self, state: State, before: State, intent: Intent, recovery: tuple[str, Mapping[str, Any]]
    ) -> list[Finding]:
        """A fresh process after the crash: age the dead owner's lock (C-4), run, check."""
        fs, clock = self.new_fs(state)
        fs.pid += 1  # the crashed process is gone; this is another one
        for rel, data in state.items():
            if is_lock(rel):
                fs.set_mtime(rel, clock.now_ms() - lock_age_ms(data))
        ok, result = run_op(new_server(fs, clock), *recovery)
        out = check_settled_state(fs.state(), before, intent, live_pids=(fs.pid,))
        if not ok or (isinstance(result, str) and "busy" in result):
            out.append(Finding("S-INV-8", "not-recoverable", recovery[0], f"recovery answered {result!r}"))
        return out

    # --- drivers ---------------------------------------------------------------------------

    def explore_case(self, case: OpCase) -> Exploration:
        """All crash states of one op case."""
        started = time.perf_counter()
        rec = self.record_case(case)
        self.result.sequences += 1
        self.explore(rec, case.intent, case.recovery(), case.name)
        self.result.seconds += time.perf_counter() - started
        return self.result

    def exhaustive(self, topics: int = 2, max_ops: int = 3, starts: Sequence[str] | None = None) -> Exploration:
        """Every sequence of ≤ ``max_ops`` ops over ``topics`` topics from each start state,
        every crash point of its last op (crashes inside earlier ops are those of the shorter
        sequences), every model; power-loss models may lose any earlier op's entries too."""
        started = time.perf_counter()
        alphabet = sequence_alphabet([chr(ord("A") + i) for i in range(topics)])
        for name in starts or tuple(START_STATES):
            fs, clock = self.new_fs(START_STATES[name])
            self._dfs(fs, clock, fs.tree.copy(), alphabet, [], max_ops, name)
        self.result.seconds += time.perf_counter() - started
        return self.result

    def _dfs(
        self,
        fs: MemFs,
        clock: ControlledClock,
        start: _Tree,
        alphabet: Sequence[SeqOp],
        done: list[str],
        depth: int,
        name: str,
    ) -> None:
        if depth == 0:
            return
        for sop in alphabet:
            child = fs.clone()
            if sop.prepare is not None:
                sop.prepare(child)
            first = len(child.effects)
            result = run_op(new_server(child, clock), sop.op, sop.args)
            rec = Recording(start, child.effects, child.calls, child.effect_call, first, result)
            self.result.sequences += 1
            self.explore(rec, sop.intent, sop.recovery, f"[{name}] " + " ; ".join([*done, sop.label]))
            self._dfs(child, clock, start, alphabet, [*done, sop.label], depth - 1, name)


ERRNOS: dict[str, int] = {
    "ENOSPC": errno_mod.ENOSPC,
    "EIO": errno_mod.EIO,
    "EACCES": errno_mod.EACCES,
    "EINTR": errno_mod.EINTR,
}


@dataclass
class FaultReport:
    """Outcomes of one op with an error injected at each store-touching call."""

    case: str
    runs: int = 0
    allowed: Counter[str] = field(default_factory=Counter)
    findings: list[tuple[str, Finding]] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"{self.case}: {self.runs} faulted runs, {len(self.findings)} findings"]
        lines += [f"    allowed {k}: {n}" for k, n in sorted(self.allowed.items())]
        lines += [f"    {where}: {f}" for where, f in self.findings]
        return "\n".join(lines)


def fault_case(case: OpCase, errnos: Sequence[str] = tuple(ERRNOS)) -> FaultReport:
    """In-process ``--errors`` through the Fs seam: each errno at each store-touching call."""
    files = case.files("python")
    fs, clock = Explorer.new_fs(files)
    before = fs.state()
    run_op(new_server(fs, clock), case.op, case.args)
    completed, calls = fs.state(), list(fs.calls)
    report = FaultReport(case.name)
    for k, call in enumerate(calls, 1):
        site = Site(call.name, call.path.replace(ROOT + "/", ""), call.creates)
        for name in errnos:
            fs, clock = Explorer.new_fs(files)
            fs.fail = (k, ERRNOS[name])
            ok, result = run_op(new_server(fs, clock), case.op, case.args)
            verdict = judge_fault(case.intent, site, before, completed, fs.state(), ok, result)
            report.runs += 1
            report.allowed.update(verdict.allowed)
            report.findings += [(f"{name} at call {k} {site}", f) for f in verdict.findings]
    return report


def _torn_variants(snap: _Tree) -> Iterator[tuple[State, str]]:
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
            yield t.state(ROOT), f"{path[len(ROOT) + 1:]} torn at {cut}/{len(data)} bytes"


def _dirent_variants(snap: _Tree, bindings: Mapping[str, list[int | None]]) -> Iterator[tuple[State, str]]:
    """One directory entry reverted to an earlier binding (no directory is ever fsynced)."""
    for path, seen in bindings.items():
        rel = path[len(ROOT) + 1 :]
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
            yield t.state(ROOT), what


# --- the bounded-exhaustive alphabet ---------------------------------------------------------


@dataclass(frozen=True)
class SeqOp:
    """One step of an explored sequence; ``prepare`` edits the store as a user would (not
    recorded, so it is durable and never a crash point)."""

    label: str
    op: str
    args: dict[str, Any]
    intent: Intent
    recovery: tuple[str, dict[str, Any]] | None
    prepare: Callable[[MemFs], None] | None = None


def _enable_shared(fs: MemFs) -> None:
    fs.put("agent/memory.jsonc", SHARED_CFG.encode())


def sequence_alphabet(topics: Sequence[str]) -> list[SeqOp]:
    ops: list[SeqOp] = []
    for t in topics:
        fname = t.lower() + ".md"
        w = Intent("write", writes=frozenset({fname}))
        args = {"topic": t, "content": f"{t} body", "summary": f"about {t}"}
        ops.append(SeqOp(f"write {t}", "write_memory", args, w, ("write_memory", args)))
        rargs = {**args, "content": f"{t} new", "mode": "replace"}
        ops.append(SeqOp(f"replace {t}", "write_memory", rargs, w, ("write_memory", rargs)))
        rm = Intent("remove", removes=frozenset({"*"}))
        ops.append(SeqOp(f"remove {t}", "remove_memory", {"topic": t}, rm, ("remove_memory", {"topic": t})))
        for flag in (True, False):
            pargs = {"topic": t, "pin": flag}
            ops.append(SeqOp(f"{'pin' if flag else 'unpin'} {t}", "pin_memory", pargs, Intent("pin"), ("pin_memory", pargs)))
    retire = Intent("retire", removes=frozenset({"last-session-recap.md"}))
    ops.append(SeqOp("retire", "retire_recaps", {}, retire, ("retire_recaps", {})))
    ops.append(SeqOp("handoff", "write_handoff", {"messages": MESSAGES, "reason": "manual"}, Intent("handoff"), ("read_handoff", {})))
    ops.append(SeqOp("consolidate", "replace_latest_handoff", {"summary": "S", "reason": "threshold"}, Intent("handoff"), ("read_handoff", {})))
    ops.append(SeqOp("enable shared", "memory_dir", {}, Intent("carry-over"), ("memory_dir", {}), _enable_shared))
    return ops


START_STATES: dict[str, State] = {
    "fresh": {"agent": SNAPSHOT_DIR, "home": SNAPSHOT_DIR},
    "shared": {
        "agent/memory.jsonc": SHARED_CFG.encode(),
        f"{SHARED_REL}/MEMORY.md": (
            "# Memory Index\n\n" + entry("Recap", "last-session-recap.md", "r") + "\n"
        ).encode(),
        f"{SHARED_REL}/last-session-recap.md": topic_text("Recap", "r", "recap").encode(),
        f"{SHARED_REL}/{TOMBSTONES}": b"b.md\n",
        f"{SHARED_REL}/b.md": topic_text("B", "old b", "old").encode(),
        "agent/HANDOFF.md": HANDOFF_OLD.encode(),
    },
}
