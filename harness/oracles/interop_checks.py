"""What many writers under faults may not do to a store, written from SPEC.md (issue 13).

Three checks over a settled store and the history that wrote it:

- ``lost_writes``: an acknowledged append (not later removed or replaced) whose token is not
  reachable *through the index*: in a file named by a parseable index entry (S-IDX-1).  A token
  in an unindexed file is lost: no reader finds it (S-WRITE-6/7 resolve names through the index).
  A remove excuses only a token left in an unindexed file (it never touches topic files); a token
  gone from every file is excused only by a replace of the same file.
- ``split_topics``: one topic name (compared lowercased, S-WRITE-6) owned by two files, either
  as two index lines naming different files or as two indexed files whose frontmatter ``name``
  is the same topic; the lock serialises writers, so the name lookup always finds the one file.
- ``double_holders``: two writers in the critical section at once: two acknowledged writes that
  both *created* one topic (outcome ``ok:created``, same name) while their intervals overlap
  (serialised, the second would have found it and said ``updated``), or overlapping lock spans
  taken from a trace of lock creates and unlinks.

Every check reads an op's **outcome** (``kind_model.op_outcome``), never its result text
(issue 30 item 2), so a tool that words its results its own way is judged like the JS peers.

The store is read by the caller (the disk, and each implementation's own readers) into a
``StoreView``; every parse here is the SPEC grammar of ``oracles.grammar``.  Each check answers
``Finding`` values.  Severity: a fault of the families that stretch or fake lock ownership
(pause, clock, stale-lock, foreign-lock, slow) overlapping the evidence makes it the design
weakness S-INV-9 accepts (no atomic compare-and-unlink, mtimes against local clocks); with no
such fault it is a violation of S-INV-3 (no mutation without the lock).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memconform.reference.text import js_lower, trim

from . import kind_model
from .findings import HAZARD, VIOLATION, WEAKNESS, Finding
from .grammar import frontmatter_name, parse, to_slug
from .tokens import Tokens

LOCK_FAMILIES = frozenset({"pause", "clock", "stale-lock", "foreign-lock", "slow", "kill"})
"""Faults under which SPEC accepts two lock holders (S-INV-9 a, c): a kill leaves a dead
owner's lock, and its reclaim is the race S-INV-9 a names."""


class OpLike(Protocol):
    """An op of ``harness.checker.history`` (kept structural: an oracle needs only these fields)."""

    process: str
    op: str
    args: dict[str, Any]
    start: int
    end: int | None
    type: str
    result: Any
    outcome: str | None


@dataclass(frozen=True)
class StoreView:
    """One reader's view of one memory directory: the index text and topic bodies by filename.

    ``reader`` is ``disk`` for the files themselves, else the implementation that read them.
    ``files`` holds what the reader could read (the disk: every file; an implementation: the
    indexed topics through its topic reader).
    """

    reader: str
    index: str | None
    files: Mapping[str, str] = field(default_factory=dict)

    def entries(self) -> list[tuple[str, str]]:
        """``(name, filename)`` of every parseable index entry, in order (S-IDX-1)."""
        if self.index is None:
            return []
        return [(p.name, p.filename) for p in map(parse, self.index.split("\n")) if p is not None]

    def reachable(self) -> str:
        """The text a reader reaches through the index: the bodies of indexed files."""
        seen = dict.fromkeys(f for _, f in self.entries())
        return "\n".join(self.files.get(f, "") for f in seen)


def _is_append(op: OpLike) -> bool:
    return op.op == "write_memory" and op.args.get("mode") != "replace" and op.args.get("overwrite") is not True


def _names(topic: object) -> tuple[str, str]:
    text = trim(str(topic))
    return js_lower(text), to_slug(text)


def _may_reach(remover: str, topic: str) -> bool:
    """S-IDX-8: a lookup of ``remover`` can select the entry of ``topic`` (exact or partial
    match on the lowercased name or filename)."""
    low, slug = _names(topic)
    s = js_lower(str(remover))
    return s in low or s in f"{slug}.md"


class _Excuses:
    """Which appends a replace of the same file or (``removes``) a remove that can select
    their entry, not definitely failed and not over before the append began, may have
    emptied.

    A remove only drops the index line (S-REMOVE-4/5, S-INV-4: topic files are never deleted
    or touched), so it can explain a token left in an unindexed file, never a token gone from
    every file: that only a replace (or a second holder) can do.  Built once per history: each
    name keeps the latest end of the ops that may empty it (issue 22: one scan of the history
    per append was quadratic)."""

    def __init__(self, ops: Sequence[OpLike]) -> None:
        self.replaced: dict[str, float] = {}  # a replaced topic's names -> latest end
        self.removed: dict[str, float] = {}  # a remove's query -> latest end
        self._names: dict[str, tuple[str, str]] = {}
        self._reach: dict[tuple[str, str], bool] = {}
        for o in ops:
            if o.type == "fail":
                continue
            end = float("inf") if o.end is None else float(o.end)
            if o.op == "write_memory" and not _is_append(o):
                for name in self.names(str(o.args.get("topic", ""))):
                    self.replaced[name] = max(end, self.replaced.get(name, end))
            elif o.op == "remove_memory" and (o.type == "info" or kind_model.op_outcome(o) in ("ok", "ok:removed")):
                query = str(o.args.get("topic", ""))
                self.removed[query] = max(end, self.removed.get(query, end))

    def names(self, topic: str) -> tuple[str, str]:
        known = self._names.get(topic)
        if known is None:
            known = self._names[topic] = _names(topic)
        return known

    def __call__(self, op: OpLike, *, removes: bool = True) -> bool:
        topic = str(op.args.get("topic", ""))
        names = self.names(topic)
        if any(self.replaced.get(name, -1.0) >= op.start for name in names):
            return True
        return removes and any(end >= op.start and self._reaches(query, topic) for query, end in self.removed.items())

    def _reaches(self, query: str, topic: str) -> bool:
        known = self._reach.get((query, topic))
        if known is None:
            known = self._reach[(query, topic)] = _may_reach(query, topic)
        return known


KILL_REACH_NS = 20_000_000_000
"""How long a kill reaches: its victim's lock is reclaimed once 10 s old (S-LOCK-1), by writers
still polling it some seconds later."""


CLOCK_REACH_NS = 6_000_000_000
"""A skewed writer gets its clock back between ops: up to one op (OpenCode's 5 s shared
window) after the fault's end."""


def overlapping(start: int, end: int | None, faults: Iterable[OpLike]) -> list[OpLike]:
    """The faults active at some moment of ``[start, end]`` (an open end: until the end); a
    kill counts for ``KILL_REACH_NS`` after it, while the lock it left is being reclaimed."""
    stop = end if end is not None else 1 << 62
    out = []
    for f in faults:
        family = f.args.get("family")
        if family == "kill":
            until: int | None = f.start + KILL_REACH_NS
        elif family == "clock" and f.end is not None:
            until = f.end + CLOCK_REACH_NS  # the skew is put back only at the writer's next op
        else:
            until = f.end
        if f.start <= stop and (until is None or until >= start):
            out.append(f)
    return out


def _describe_faults(faults: Sequence[OpLike]) -> str:
    return ", ".join(f"{f.args.get('family')}#{f.args.get('id')}" for f in faults)


def _severity(faults: Sequence[OpLike]) -> tuple[str, str]:
    if any(f.args.get("family") in LOCK_FAMILIES for f in faults):
        return WEAKNESS, "S-INV-9"
    return VIOLATION, "S-INV-3"


def lost_writes(
    ops: Sequence[OpLike],
    views: Sequence[StoreView],
    *,
    impl_of: Mapping[str, str] | None = None,
    faults: Sequence[OpLike] = (),
    reproduce: str = "",
) -> list[Finding]:
    """Acknowledged appends not reachable through the index, and tokens reachable twice.

    ``views[0]`` is the disk; a token the disk view reaches but another reader's view does
    not is lost *for that reader* (its ``impl`` is the reader).
    """
    impl_of = impl_of or {}
    disk = views[0]
    appends = [op for op in ops if op.type == "ok" and _is_append(op) and str(op.args.get("content", ""))]
    tokens = Tokens(str(op.args["content"]) for op in appends)
    counts = [(v, tokens.count(v.reachable())) for v in views]
    in_files = [(f, tokens.count(body)) for f, body in disk.files.items()]
    excused = _Excuses(ops)
    found: list[Finding] = []
    for op in appends:
        token = str(op.args["content"])
        topic = op.args.get("topic")
        during = overlapping(op.start, op.end, faults)
        severity, clause = _severity(during)
        extra = f"; faults during the op: {_describe_faults(during)}" if during else ""
        for view, in_view in counts:
            count = in_view.get(token, 0)
            if count > 1 and view is disk:
                found.append(Finding("duplicated-write", VIOLATION, clause="S-INV-3", impl=impl_of.get(op.process, ""),
                                     op="write_memory", evidence=f"acknowledged append {op.process}: {topic!r} {token} "
                                     f"×{count} in indexed files{extra}", reproduce=reproduce))
            if count:
                continue
            holders = sorted(f for f, in_file in in_files if token in in_file)
            if excused(op, removes=bool(holders) or view is not disk):
                continue
            where = f"in unindexed {', '.join(holders)}" if holders else "in no file"
            reader = "" if view is disk else f" as {view.reader} reads it"
            found.append(Finding(
                "lost-write", severity, clause=clause,
                impl=impl_of.get(op.process, "") if view is disk else view.reader, op="write_memory",
                evidence=f"acknowledged append {op.process}: {topic!r} {token} is not reachable through the "
                         f"index{reader}: {where}{extra}",
                reproduce=reproduce,
            ))
            if view is disk:
                break  # lost on disk: every reader loses it, one finding says so
    return found


def _frontmatter_name(body: str) -> str | None:
    """The ``name:`` value of a topic's frontmatter block (S-FMT-9/10), decoded as S-WRITE-7
    reads it (JSON when quoted, else single quotes dropped)."""
    if not body.startswith("---\n"):
        return None
    head = body[4:].split("\n---", 1)[0]
    m = re.search(r"^name:[ \t]*(.+)$", head, re.M)
    if m is None:
        return None
    return frontmatter_name(m.group(1))


def split_topics(view: StoreView, *, path: str = "", reproduce: str = "") -> list[Finding]:
    """One topic name owned by two files: two index lines for it naming different files, or
    two indexed files whose frontmatter names it (S-WRITE-6: the name finds one file)."""
    by_line: dict[str, dict[str, None]] = defaultdict(dict)
    for name, filename in view.entries():
        by_line[js_lower(name)][filename] = None
    by_front: dict[str, dict[str, None]] = defaultdict(dict)
    for filename in dict.fromkeys(f for _, f in view.entries()):
        owner = _frontmatter_name(view.files.get(filename, ""))
        if owner is not None:
            by_front[js_lower(owner)][filename] = None
    found = []
    for source, groups in (("index lines", by_line), ("frontmatter names of indexed files", by_front)):
        for name, files in sorted(groups.items()):
            if len(files) > 1:
                found.append(Finding(
                    "split-topic", VIOLATION, clause="S-WRITE-6", impl=view.reader if view.reader != "disk" else "",
                    path=path, evidence=f"topic {name!r} is owned by {len(files)} files ({source}): {', '.join(files)}",
                    reproduce=reproduce,
                ))
    return found


def created_topic(op: OpLike) -> str | None:
    """The topic an acknowledged write answered it *created* (outcome ``ok:created``), by
    its name as lookups compare it (S-WRITE-6: trimmed, lowercased), else None.  Read from
    the outcome, never the text (issue 30 item 2): serialised, a second write of that name
    finds the first one's entry (or its file, which no op deletes) and answers ``updated``."""
    if kind_model.op_outcome(op) != "ok:created":
        return None
    return _names(op.args.get("topic", ""))[0]


@dataclass(frozen=True)
class LockSpan:
    """One writer's hold of one lock, from a trace: created at ``start``, unlinked at ``end``
    (nanoseconds on one clock; ``end`` None when the trace ends first)."""

    writer: str
    lock: str
    start: int
    end: int | None


def double_holders(
    ops: Sequence[OpLike],
    *,
    spans: Sequence[LockSpan] = (),
    impl_of: Mapping[str, str] | None = None,
    faults: Sequence[OpLike] = (),
    reproduce: str = "",
    apart: Callable[[int], str] = lambda ns: f"{ns / 1e6:.1f} ms",
) -> list[Finding]:
    """Two writers inside one critical section at once.

    From the history: two acknowledged writes of different processes that both created the
    same file while their intervals overlap.  From ``spans``: two writers' holds of the same
    lock that overlap in time.  ``apart`` words a distance on the ops' clock (nanoseconds by
    default; the race suite's clock counts store calls).
    """
    impl_of = impl_of or {}
    found: list[Finding] = []
    created: dict[str, list[OpLike]] = defaultdict(list)
    for op in ops:
        if op.type == "ok" and op.op == "write_memory" and op.end is not None:
            name = created_topic(op)
            if name is not None:
                created[name].append(op)
    for filename, makers in sorted(created.items()):
        makers.sort(key=lambda o: o.start)
        for i, a in enumerate(makers):
            for b in makers[i + 1:]:
                assert a.end is not None and b.end is not None
                if b.start >= a.end:
                    break
                if a.process == b.process:
                    continue
                during = overlapping(min(a.start, b.start), max(a.end, b.end), faults)
                severity, clause = _severity(during)
                impls = ", ".join(dict.fromkeys(x for x in (impl_of.get(a.process, ""), impl_of.get(b.process, "")) if x))
                found.append(Finding(
                    "double-holder", severity, clause=clause, impl=impls, op="write_memory",
                    evidence=f"{a.process} and {b.process} both answered that they created topic {filename!r} "
                             f"while their calls overlapped ({apart(b.start - a.start)} apart); "
                             f"serialised, the second would have found the file"
                             + (f"; faults: {_describe_faults(during)}" if during else ""),
                    reproduce=reproduce,
                ))
    by_lock: dict[str, list[LockSpan]] = defaultdict(list)
    for s in spans:
        by_lock[s.lock].append(s)
    for lock, holds in sorted(by_lock.items()):
        holds.sort(key=lambda s: s.start)
        for i, h1 in enumerate(holds):
            for h2 in holds[i + 1:]:
                a_end = h1.end if h1.end is not None else 1 << 62
                if h2.start >= a_end:
                    break
                if h1.writer == h2.writer:
                    continue
                during = overlapping(h2.start, min(a_end, h2.end or a_end), faults)
                severity, clause = _severity(during)
                impls = ", ".join(dict.fromkeys(x for x in (impl_of.get(h1.writer, ""), impl_of.get(h2.writer, "")) if x))
                found.append(Finding(
                    "double-holder", severity, clause=clause, impl=impls, path=lock,
                    evidence=f"{h1.writer} held {lock} from its create until its unlink, and {h2.writer} created it "
                             f"again {apart(h2.start - h1.start)} after {h1.writer}'s create"
                             + (f"; faults: {_describe_faults(during)}" if during else ""),
                    reproduce=reproduce,
                ))
    return found


UNAVAILABLE_AFTER_S = 15.0
"""A dead holder's lock is reclaimed once 10 s old (S-LOCK-1/3), then the longest policy
window (OpenCode's shared 5 s, PEER-2) may pass: longer than that is a hazard."""


def unavailable(impl: str, seconds: float | None, busy: int, *, limit_s: float,
                threshold_s: float = UNAVAILABLE_AFTER_S, left: str = "", reproduce: str = "") -> list[Finding]:
    """After the faults stopped, how long a fresh writer of ``impl`` took to succeed: a hazard
    when longer than every lock window (a lock left behind, S-LOCK-3's 10 s / 60 s ages, A-13)."""
    if seconds is not None and seconds <= threshold_s:
        return []
    took = f"first succeeded after {seconds:.1f} s" if seconds is not None else f"did not succeed within {limit_s:.0f} s"
    return [Finding("unavailable", HAZARD, clause="S-LOCK-3", impl=impl, op="write_memory",
                    evidence=f"after the nemesis ended a fresh {impl} writer {took} ({busy} busy answers)"
                             + (f"; {left}" if left else ""),
                    reproduce=reproduce)]
