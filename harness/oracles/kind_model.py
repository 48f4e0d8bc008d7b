"""A pure model of the store's logical state and its transitions (SPEC §7–10).

Small enough to read in one sitting: topics are files with a name, a summary and a body of
sections; the index is an ordered list of entries; shared mode adds tombstones.  Results are
compared by *kind* (``created``, ``removed``, ``busy`` …) because exact strings carry
timestamps the model cannot know.  The model covers what op scripts and state machines do:
no hand-made index lines (those are exercised by the scenario corpus instead).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any

from . import outcome_kind
from .grammar import to_slug

BUSY = "busy"


@dataclass(frozen=True)
class Entry:
    name: str
    filename: str
    summary: str
    pinned: bool


@dataclass(frozen=True)
class Topic:
    """A topic file: its frontmatter name and summary, and its body sections."""

    name: str
    summary: str
    sections: tuple[str, ...]


@dataclass(frozen=True)
class State:
    files: tuple[tuple[str, Topic], ...] = ()  # (filename, topic), sorted by filename
    index: tuple[Entry, ...] = ()
    tombstones: frozenset[str] = frozenset()
    shared: bool = False
    has_index: bool = False  # MEMORY.md exists (created by the first write)

    def file(self, filename: str) -> Topic | None:
        return dict(self.files).get(filename)

    def with_file(self, filename: str, topic: Topic) -> State:
        files = dict(self.files)
        files[filename] = topic
        return replace(self, files=tuple(sorted(files.items())))

    def entry_for(self, filename: str) -> Entry | None:
        return next((e for e in self.index if e.filename == filename), None)


def result_kind(text: object) -> str:
    """Classify an implementation's result string (openpi and OpenCode wording, PEER-12..14)."""
    if not isinstance(text, str):
        return "error"
    for prefix, kind in (
        ("Memory created:", "created"),
        ("Memory updated:", "updated"),
        ("Index entry removed:", "removed"),
        ("No matching entry found", "not_found"),
        ("Entry is pinned", "pinned_refused"),
        ("Pinned.", "pinned"),
        ("Unpinned.", "unpinned"),
        ("Already pinned:", "already_pinned"),
        ("Already unpinned:", "already_unpinned"),
        ("Created memory topic", "created"),
        ("Updated memory topic", "updated"),
        ("Removed ", "removed"),
        ("No entry found matching", "not_found"),
        ("No memory index found", "no_index"),
        ("Multiple entries match", "ambiguous"),
        ("Cannot remove", "pinned_refused"),
        ("Pinned ", "pinned"),
        ("Unpinned ", "unpinned"),
        ("Invalid topic", "invalid"),
        ("Reserved topic", "invalid"),
        ("Error: memory store is busy", BUSY),
    ):
        if text.startswith(prefix):
            return kind
    if re.match(r'^".*" is already pinned\.$', text, re.S):
        return "already_pinned"
    if re.match(r'^".*" is already unpinned\.$', text, re.S):
        return "already_unpinned"
    return "other"


# A declared outcome (protocol.schema.json $defs/outcome, oracles.outcome_kind) as a model kind.
_DECLARED = {
    "busy": BUSY, "not-found": "not_found", "error": "error", "ok:created": "created", "ok:updated": "updated",
    "ok:appended": "updated", "ok:removed": "removed", "ok:pinned": "pinned", "ok:unpinned": "unpinned",
    "refused:pinned": "pinned_refused", "refused:ambiguous": "ambiguous", "refused:invalid-topic": "invalid",
    "refused:reserved-topic": "invalid",
}


def answer_kind(answer: Any) -> str:
    """The kind of an ok answer: what a driver declaring ``outcome_kinds`` says it did (its
    text is its own), else what its result text says (:func:`result_kind`)."""
    outcome = getattr(answer, "outcome", None)
    if isinstance(outcome, dict) and isinstance(outcome.get("kind"), str):
        kind, detail = outcome["kind"], outcome.get("detail")
        return _DECLARED.get(f"{kind}:{detail}", _DECLARED.get(kind, "other"))
    return result_kind(answer.result)


# --- outcome kinds (issue 30 item 2): what a history records and the checks compare ------------

_AS_OUTCOME = {
    "created": "ok:created", "updated": "ok:updated", "removed": "ok:removed", "pinned": "ok:pinned",
    "unpinned": "ok:unpinned", "already_pinned": "ok:unchanged", "already_unpinned": "ok:unchanged",
    "not_found": outcome_kind.NO_ENTRY, "no_index": outcome_kind.NO_INDEX, "ambiguous": "refused:ambiguous",
    "pinned_refused": "refused:pinned", "invalid": "refused:invalid-topic", BUSY: "busy",
    "repaired": "ok:repaired", "consistent": "ok:unchanged",
}
_INVALID = frozenset({"invalid-topic", "reserved-topic"})  # the model's one ``invalid``


def as_outcome(kind: str) -> str:
    """A model kind as the outcome an op answers (docs/IMPLEMENTING.md §2; already pinned and
    already unpinned are ``ok:unchanged``), no index and no entry told apart by the
    harness-only details of ``outcome_kind.history_outcome``."""
    return _AS_OUTCOME.get(kind, kind)


def agrees(recorded: str, expected: str) -> bool:
    """A recorded outcome is the one the model expects: the same kind, and the same detail
    where the answer gives one (a bare ``ok`` says less, and is taken for any ``ok``); an
    ``unknown`` or ``missing`` outcome agrees with nothing."""
    if recorded in (outcome_kind.UNKNOWN, outcome_kind.MISSING):
        return False
    kind, _, detail = recorded.partition(":")
    want, _, want_detail = expected.partition(":")
    if kind != want:
        return False
    detail = outcome_kind.SAME_DETAIL.get(detail, detail)
    return not detail or not want_detail or detail == want_detail or {detail, want_detail} <= _INVALID


class _Text:
    """A recorded text as an answer the text tables read (a history without outcomes)."""

    def __init__(self, ok: bool, result: Any) -> None:
        self.ok, self.result = ok, result
        self.error: dict[str, Any] | None = None


def recorded_outcome(op: str, type_: str, result: Any, outcome: str | None) -> str:
    """An op's outcome as its history holds it; a history written before outcomes were
    recorded (or a hand-made op) has only texts, read by every text table where they agree
    (``oracles.outcome_kind``, the family unknown).  A ``fail`` is busy (its only cause),
    an ``info`` an error."""
    if outcome is not None:
        return outcome
    if type_ == "fail":
        return "busy"
    if type_ == "info":
        return "error"
    return _of_text(op, result) if isinstance(result, str) else outcome_kind.history_outcome("", op, _Text(True, result))


@functools.lru_cache(maxsize=4096)
def _of_text(op: str, text: str) -> str:
    return outcome_kind.history_outcome("", op, _Text(True, text))


def op_outcome(op: Any) -> str:
    """The outcome of a history op (``checker.history.Op`` or any op with those fields)."""
    return recorded_outcome(op.op, op.type, op.result, getattr(op, "outcome", None))


def _find(state: State, query: str) -> Entry | list[str] | None:
    """S-IDX-8 over model entries."""
    q = query.lower()
    partial = []
    for e in state.index:
        if e.name.lower() == q or e.filename.lower() == q:
            return e
        if q in e.name.lower() or q in e.filename.lower():
            partial.append(e)
    if len(partial) == 1:
        return partial[0]
    return [e.name for e in partial] if partial else None


def _filename_for(state: State, topic: str) -> str:
    """S-WRITE-6/7: last entry with the name, else the first free or self-named slug file."""
    slug = to_slug(topic)
    matched = [e.filename for e in state.index if e.name.lower() == topic.lower()]
    if matched:
        return matched[-1]
    indexed = {e.filename for e in state.index}
    candidate, n = f"{slug}.md", 2
    while candidate in indexed or state.file(candidate) is not None:
        existing = state.file(candidate)
        if candidate not in indexed and existing is not None and existing.name.lower() == topic.lower():
            return candidate
        candidate, n = f"{slug}-{n}.md", n + 1
    return candidate


def write(
    state: State, topic: str, content: str, summary: str, pin: bool = False,
    replace_body: bool = False, bodies: bool = True,
) -> tuple[State, str]:
    topic = topic.strip()
    filename = _filename_for(state, topic)
    old = state.file(filename)
    if not bodies:
        sections: tuple[str, ...] = ()  # result kinds never depend on bodies
    elif old is None or replace_body:
        sections = (content,)
    else:
        sections = (*old.sections, content)
    new = state.with_file(filename, Topic(topic, summary, sections))
    index = list(new.index)
    current = new.entry_for(filename)
    entry = Entry(topic, filename, summary, pin or (current.pinned if current else False))
    if current is None:
        index.append(entry)
    else:
        index[index.index(current)] = entry
    new = replace(new, index=tuple(index), tombstones=new.tombstones - {filename}, has_index=True)
    return new, "created" if old is None else "updated"


def _locate(state: State, topic: str) -> Entry | str:
    """The shared prologue of remove and pin (S-REMOVE-1/2, S-PIN-1): an entry or a refusal."""
    if not state.has_index:
        return "no_index"
    found = _find(state, topic)
    if found is None:
        return "not_found"
    return "ambiguous" if isinstance(found, list) else found


def remove(state: State, topic: str) -> tuple[State, str]:
    found = _locate(state, topic)
    if isinstance(found, str):
        return state, found
    if found.pinned:
        return state, "pinned_refused"
    index = tuple(e for e in state.index if e is not found)
    tombstones = state.tombstones | {found.filename} if state.shared else state.tombstones
    return replace(state, index=index, tombstones=tombstones), "removed"


def pin(state: State, topic: str, on: bool) -> tuple[State, str]:
    found = _locate(state, topic)
    if isinstance(found, str):
        return state, found
    if found.pinned == on:
        return state, "already_pinned" if on else "already_unpinned"
    index = tuple(replace(e, pinned=on) if e is found else e for e in state.index)
    return replace(state, index=index), "pinned" if on else "unpinned"


def repair(state: State) -> tuple[State, str]:
    """PEER-16, SS-TOMB-4: every topic file neither indexed nor tombstoned gets an unpinned
    entry, in filename order; with none (an empty store included) the index is ``consistent``.
    Only a shared-store state has tombstones (``State.shared``): in a local model a removed
    topic's file is an orphan that repair re-indexes."""
    indexed = {e.filename for e in state.index}
    orphans = [(f, t) for f, t in state.files if f not in indexed and f not in state.tombstones]
    if not orphans:
        return state, "consistent"
    added = tuple(Entry(t.name, f, t.summary, False) for f, t in orphans)
    return replace(state, index=state.index + added, has_index=True), "repaired"


def apply(state: State, op: str, args: dict[str, Any], bodies: bool = True) -> tuple[State, str]:
    """One protocol op on the model: the next state and the expected result kind.

    ``bodies=False`` keeps topic bodies out of the state, for searches that only compare
    result kinds (the linearizability checker): states then stay small and cheap to hash.
    """
    if op == "write_memory":
        return write(
            state,
            str(args["topic"]),
            str(args["content"]),
            str(args.get("summary", "")),
            bool(args.get("pin", False)),
            args.get("mode") == "replace" or args.get("overwrite") is True,
            bodies,
        )
    if op == "remove_memory":
        return remove(state, str(args["topic"]))
    if op == "pin_memory":
        return pin(state, str(args["topic"]), bool(args["pin"]))
    if op == "repair_memory":
        return repair(state)
    raise ValueError(f"the model has no op {op!r}")


def keys_of(op: str, args: dict[str, Any]) -> str:
    """The partition key of an op (its topic's slug) for P-compositional checking."""
    return to_slug(str(args.get("topic", "")).strip())


def independent_topics(topics: list[str]) -> bool:
    """Ops on different topics commute iff no name or slug is a substring of another's.

    Then lookups (exact or substring) and slug choice of one topic never see another topic,
    and a history may be checked one topic at a time.
    """
    keys = [(t.strip().lower(), to_slug(t.strip())) for t in topics]
    for i, (a_name, a_slug) in enumerate(keys):
        for j, (b_name, b_slug) in enumerate(keys):
            if i == j:
                continue
            if a_name in b_name or a_slug in b_slug or a_name in f"{b_slug}.md" or a_slug == b_slug:
                return False
    return True
