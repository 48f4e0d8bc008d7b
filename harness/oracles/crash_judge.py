"""The crash-state judge: what SPEC allows on disk after a crash, a fault, or a completed op.

``check_crash_state`` judges a store snapshot (``{relative path: bytes}``, the shape
``sandbox.snapshot`` returns) taken after an operation was killed, against SPEC S-INV-8:
each store file must be its version before the operation or one the operation publishes,
and the cross-file states must be among the allowed ones.  ``check_settled_state`` judges a
store after an operation completed (S-INV-2, S-INV-4, no lost or resurrected entries), and
``judge_fault`` one that met an injected error (S-WRITE-13).  Real kills
(``harness.faults.campaigns``) and the in-process explorer (``harness.faults.explorer``) both
feed it, so a finding means the same thing whichever way the state was produced.

Written from SPEC: index lines are read with ``oracles.grammar``, never the reference's parser.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..drivers.sandbox import SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET
from .findings import Finding
from .grammar import parse
from .spec import FRONTMATTER_KEYS, INDEX_NAME, LOCK_NAME, LOCK_PID, SENTINEL, TEMP_NAME, TOMBSTONES

State = dict[str, bytes]
STORE_DIRS = ("agent/memory", "home/.agents/memory", "home/.config/opencode/memory")
SHARED_REL = "home/.agents/memory"
HANDOFF_REL = "agent/HANDOFF.md"

# --- findings --------------------------------------------------------------------------


@dataclass(frozen=True)
class CrashFinding:
    """One broken guarantee: the clause, a short kind, the path and what was seen.

    ``severity`` is ``violation`` (the state is not one SPEC allows for this crash model),
    ``hazard`` (allowed by SPEC, yet the user is harmed: told an op failed while the store
    changed) or ``weakness`` (allowed only by the documented power-loss paragraph of S-INV-8 /
    S-INV-9 b, reported so the cost of never fsyncing directories is visible).
    """

    clause: str
    kind: str
    path: str
    detail: str
    severity: str = "violation"

    def __str__(self) -> str:
        return f"[{self.severity}] {self.clause} {self.kind} {self.path}: {self.detail}"

    def finding(self, *, impl: str = "", op: str = "", syscall: str = "", reproduce: str = "", rate: str = "") -> Finding:
        """The command-level ``Finding`` (docs/ARCHITECTURE.md §6); ``rate`` (``k of n runs``) is appended."""
        evidence = self.detail + (f" ({rate})" if rate else "")
        return Finding(self.kind, self.severity, self.clause, impl, op, syscall, evidence, reproduce, path=self.path)


@dataclass
class CrashVerdict:
    """The allowed crash states a snapshot shows (S-INV-8 items) and the findings."""

    allowed: set[str] = field(default_factory=set)
    findings: list[CrashFinding] = field(default_factory=list)

    @property
    def violations(self) -> list[CrashFinding]:
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
    return rel.endswith("/" + LOCK_NAME) or rel == LOCK_NAME


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
            (p.filename, line) for line in lines if (p := parse(line)) is not None
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
) -> CrashVerdict:
    """Judge one crash state of an operation that started from ``before`` (S-INV-8).

    ``published`` holds, per path, the complete versions the operation writes; ``history``
    the versions acknowledged earlier (a state showing one of those lost an update).  With
    ``power_loss`` each file may independently revert or vanish (S-INV-8, last paragraph),
    so cross-file consequences are reported as weaknesses, not violations.
    """
    v = CrashVerdict()
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
                CrashFinding("S-INV-8", "reverted", rel, "an acknowledged version was lost", cross)
            )
        elif got is None:
            v.findings.append(CrashFinding("S-INV-8", "vanished", rel, "file disappeared", cross))
        elif any(a is not None and len(got) < len(a) and a.startswith(got) for a in allowed):
            clause = "A-3" if rel == HANDOFF_REL else "S-INV-1"
            v.findings.append(CrashFinding(clause, "torn", rel, f"{len(got)} bytes: a cut-off version"))
        else:
            clause = "A-3" if rel == HANDOFF_REL else "S-INV-1"
            v.findings.append(CrashFinding(clause, "torn", rel, f"{_show(got)} is no complete version"))
    for d in store_dirs(state) or []:
        _check_dir(v, state, before, d, intent, cross)
    for rel in ("agent/memory.jsonc", "home/.config/opencode/memory.jsonc"):
        if before.get(rel) is None and state.get(rel) is None and published.get(rel):
            v.allowed.add("8.7 configuration absent")
    return v


def _check_dir(
    v: CrashVerdict, state: Mapping[str, bytes], before: Mapping[str, bytes], d: str, intent: Intent, cross: str
) -> None:
    idx_rel = f"{d}/{INDEX_NAME}"
    now_idx, old_idx = _index(state.get(idx_rel)), _index(before.get(idx_rel))
    tomb_now = _tombstones(state.get(f"{d}/{TOMBSTONES}"))
    tomb_old = _tombstones(before.get(f"{d}/{TOMBSTONES}"))
    indexed_now = set(now_idx.counts) if now_idx else set()
    indexed_old = set(old_idx.counts) if old_idx else set()
    if now_idx is not None:
        old_counts = old_idx.counts if old_idx else Counter[str]()
        for fname, n in now_idx.counts.items():
            if n > 1 and n > old_counts.get(fname, 0):
                v.findings.append(CrashFinding("S-INV-2", "duplicate-entry", idx_rel, f"{fname} indexed {n} times", cross))
            topic = state.get(f"{d}/{fname}")
            if not _is_regular_content(topic):
                was_orphan = fname in indexed_old and not _is_regular_content(before.get(f"{d}/{fname}"))
                if not was_orphan:
                    v.findings.append(CrashFinding("S-INV-2", "orphan-entry", idx_rel, f"{fname} names no regular file", cross))
            elif topic != before.get(f"{d}/{fname}") and topic is not None:
                missing = _frontmatter_missing(topic)
                if missing:
                    v.findings.append(
                        CrashFinding("S-INV-2", "frontmatter", f"{d}/{fname}", "no " + ", ".join(missing), cross)
                    )
            if fname in tomb_now:
                if fname in intent.writes or intent.may_remove(fname) or fname in indexed_old:
                    v.allowed.add("8.2/8.3 indexed and tombstoned")
                else:
                    v.findings.append(
                        CrashFinding("S-INV-7", "resurrected", idx_rel, f"{fname} is tombstoned yet indexed", cross)
                    )
        for fname in sorted(indexed_now - indexed_old):
            if fname in tomb_old and fname not in intent.writes and intent.kind != "carry-over":
                v.findings.append(CrashFinding("S-INV-7", "resurrected", idx_rel, f"{fname} was tombstoned", cross))
    if old_idx is not None:
        for fname in sorted(indexed_old - indexed_now):
            regular_before = _is_regular_content(before.get(f"{d}/{fname}"))
            if regular_before and not intent.may_remove(fname):
                v.findings.append(CrashFinding("S-INV-8", "lost-entry", idx_rel, f"{fname} lost its index entry", cross))
        v.findings += [CrashFinding("S-INV-7", "removal-unrecorded", idx_rel, detail, cross)
                       for detail in _unrecorded(d, state, indexed_old - indexed_now, tomb_now, intent)]
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
            v.findings.append(CrashFinding("S-INV-4", "topic-deleted", rel, "a topic file was deleted", cross))
    if intent.kind == "carry-over" and d == SHARED_REL:
        local = next((x for x in store_dirs(state) if x != SHARED_REL), None)
        changed = any(state.get(r) != before.get(r) for r in state if r.startswith(d + "/") and not is_temp(r) and not is_lock(r))
        if changed and local is not None and f"{local}/{SENTINEL}" not in state:
            v.allowed.add("8.4 partial carry-over")


def _unrecorded(d: str, state: Mapping[str, bytes], dropped: set[str], tombstoned: set[str], intent: Intent) -> list[str]:
    """Removed topics of the shared store that are neither indexed nor tombstoned (S-INV-7,
    S-INV-8 3: the tombstone comes first): their file is still there, so repair or another
    tool's carry-over (S-TOMB-5, S-MIGRATE-3) brings back a topic the user removed."""
    if d != SHARED_REL:
        return []
    return [f"{fname} left the index without a tombstone: its file remains, so repair or another tool's "
            "carry-over brings the removed topic back"
            for fname in sorted(dropped)
            if intent.may_remove(fname) and fname not in tombstoned and _is_regular_content(state.get(f"{d}/{fname}"))]


def check_settled_state(
    state: Mapping[str, bytes],
    before: Mapping[str, bytes],
    intent: Intent,
    *,
    live_pids: Sequence[int] = (),
) -> list[CrashFinding]:
    """After an operation completed (e.g. the recovery): S-INV-2, S-INV-4, S-INV-7, no loss.

    Locks and temporaries of processes that are gone are a crash's leftovers (S-INV-8 5/6);
    those of ``live_pids`` (the operation that just ran) are violations of S-INV-2.
    """
    out: list[CrashFinding] = []
    for rel, data in sorted(state.items()):
        if is_lock(rel) and rel.rsplit("/", 1)[0] in STORE_DIRS:
            m = LOCK_PID.match(data)
            if m is None or int(m.group(1)) in live_pids or (before.get(rel) is None and not live_pids):
                out.append(CrashFinding("S-INV-2", "lock-left", rel, f"lock {_show(data)} left behind"))
        elif is_temp(rel) and rel not in before:
            pid = TEMP_NAME.search(rel)
            if pid is not None and int(pid.group(1)) in live_pids:
                out.append(CrashFinding("S-INV-2", "temporary-left", rel, "temporary of the finished operation"))
    for d in store_dirs(state):
        idx = _index(state.get(f"{d}/{INDEX_NAME}"))
        old = _index(before.get(f"{d}/{INDEX_NAME}"))
        if idx is None:
            continue
        for fname, n in idx.counts.items():
            if n > 1 and (old is None or old.counts.get(fname, 0) < n):
                out.append(CrashFinding("S-INV-2", "duplicate-entry", f"{d}/{INDEX_NAME}", f"{fname} indexed {n} times"))
            if not _is_regular_content(state.get(f"{d}/{fname}")):
                out.append(CrashFinding("S-INV-2", "orphan-entry", f"{d}/{INDEX_NAME}", f"{fname} names no regular file"))
        tomb_old = _tombstones(before.get(f"{d}/{TOMBSTONES}"))
        old_set = set(old.counts) if old else set()
        for fname in sorted(set(idx.counts) - old_set):
            if fname in tomb_old and fname not in intent.writes and intent.kind != "carry-over":
                out.append(CrashFinding("S-INV-7", "resurrected", f"{d}/{INDEX_NAME}", f"{fname} was tombstoned"))
        for fname in sorted(old_set - set(idx.counts)):
            if _is_regular_content(before.get(f"{d}/{fname}")) and not intent.may_remove(fname):
                out.append(CrashFinding("S-INV-8", "lost-entry", f"{d}/{INDEX_NAME}", f"{fname} lost its index entry"))
        tomb_now = _tombstones(state.get(f"{d}/{TOMBSTONES}"))
        out += [CrashFinding("S-INV-7", "removal-unrecorded", f"{d}/{INDEX_NAME}", detail)
                for detail in _unrecorded(d, state, old_set - set(idx.counts), tomb_now, intent)]
    for rel, data in before.items():
        parent, _, name = rel.rpartition("/")
        is_topic = parent in STORE_DIRS and name.lower().endswith(".md") and name != INDEX_NAME
        if is_topic and _is_regular_content(data) and state.get(rel) is None:
            out.append(CrashFinding("S-INV-4", "topic-deleted", rel, "a topic file was deleted"))
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
) -> CrashVerdict:
    """An operation that met an injected error: it fails and leaves the store as it was
    (S-WRITE-13 rollback), or absorbs the fault and completes, or — only when a rollback step
    itself failed — raises AggregateError with every file individually complete (S-INV-8 8).
    Best-effort operations (retirement, carry-over, configuration) never raise and may stop
    in any allowed crash state.  The lock is released in every case (S-LOCK-9), except that a
    failed release is ignored by design (S-LOCK-5, reported as a weakness)."""
    v = CrashVerdict()
    site_is_lock = is_lock(site.path)
    for rel in sorted(after):
        if is_lock(rel) and before.get(rel) is None:
            if site_is_lock and (site.call.startswith("write") or site.creates):
                v.findings.append(CrashFinding("A-13", "lock-left", rel, f"{_show(after[rel])} left after {site}"))
            elif site_is_lock:
                v.findings.append(
                    CrashFinding("S-LOCK-5", "lock-left", rel, f"release failed at {site}; the live owner blocks", "weakness")
                )
            else:
                v.findings.append(CrashFinding("S-LOCK-9", "lock-left", rel, f"lock not released after {site}"))
        elif is_temp(rel) and before.get(rel) is None:
            if site.call.startswith("unlink") and is_temp(site.path):
                v.allowed.add("8.5 leftover temporary")
            else:
                v.findings.append(CrashFinding("S-IO-4", "temporary-left", rel, f"not removed after {site}"))

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
        v.findings.append(CrashFinding(
            "S-CFG-8", "config-fallback", ", ".join(vs_done),
            f"{site} failed: defaults used, the op ran against another store ({_show_result(result)})", "weakness",
        ))
        return v
    if intent.kind in BEST_EFFORT:
        if not ok:
            v.findings.append(CrashFinding("S-ERR-5", "raised", site.path, f"best-effort {intent.kind} raised {result!r}"))
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
                CrashFinding("S-IO-4", "failed-after-commit", ", ".join(vs_before),
                        f"{kind} at {site} reported although the change is in place", "weakness")
            )
        elif intent.kind != "write" and not (
            crash := check_crash_state(after, before, published_versions(before, completed), intent)
        ).violations:
            # SPEC has no rollback outside write: the user is told the op failed, yet the
            # store holds a crash state (S-INV-8) — a hazard, shown by default
            states = ", ".join(sorted(a for a in crash.allowed if not a.startswith("8.6"))) or "a partial change"
            v.findings.append(
                CrashFinding("S-INV-8", "failed-part-way", ", ".join(vs_before),
                        f"{kind} at {site} reported failure, yet {_changed(before, after, vs_before)}: "
                        f"the store is left in crash state {states} (no rollback outside write)", "hazard")
            )
        elif intent.kind == "write" and site.call.startswith("unlink") and is_temp(site.path):
            # S-IO-4 step 6: after a successful rename an unlink error of the temporary
            # propagates; S-WRITE-13 (a) restores only an index it knows it wrote.  SPEC-literal,
            # yet the caller is told the write failed while the store changed.
            left = check_settled_state(after, before, intent)
            harm = "; ".join(f"{f.kind}: {f.detail}" for f in left) or "the change stays in place"
            v.findings.append(
                CrashFinding("S-IO-4", "failed-part-way", ", ".join(vs_before),
                        f"{kind} at {site} after its rename reported failure, yet "
                        f"{_changed(before, after, vs_before)} ({harm}); S-IO-4 step 6 propagates the "
                        "error and S-WRITE-13 (a) rolls back only an index it wrote", "hazard")
            )
        else:
            clause = "A-3" if HANDOFF_REL in vs_before else "S-WRITE-13"
            v.findings.append(
                CrashFinding(clause, "partial-update", ", ".join(vs_before), f"failed with {kind} at {site} but changed the store")
            )
    elif vs_done:
        what = "nothing" if not vs_before else ", ".join(vs_done)
        v.findings.append(
            CrashFinding("S-INV-8", "silent-failure", ", ".join(vs_done), f"answered {_show_result(result)} after {site}; differs: {what}")
        )
    else:
        v.allowed.add("fault absorbed, completed")
    return v


def _changed(before: Mapping[str, bytes], after: Mapping[str, bytes], paths: Sequence[str]) -> str:
    """``MEMORY.md changed, a.md deleted`` — what the failed op left, in file terms."""
    words = []
    for rel in paths:
        name = rel.rsplit("/", 1)[-1]
        if before.get(rel) is None:
            words.append(f"{name} created")
        elif after.get(rel) is None:
            words.append(f"{name} deleted")
        else:
            words.append(f"{name} changed")
    return ", ".join(words) or "the store changed"


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



def published_versions(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> dict[str, frozenset[bytes | None]]:
    """The versions a completed run publishes: each changed path's final content."""
    return {
        rel: frozenset({after.get(rel)})
        for rel in set(before) | set(after)
        if before.get(rel) != after.get(rel)
    }
