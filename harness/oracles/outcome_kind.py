"""An op's outcome by kind (``ok``, ``busy``, ``refused``, ``not-found``, ``error``), per driver.

The shared-store profile (docs/SHARED_STORE.md, SS-OUT-1) judges what an op did, never the
English sentence one tool prints.  Two ways to know it:

- **Declared** (issue 22 item 1): a driver whose ``hello`` says ``"outcome_kinds": true``
  answers each store op (:data:`KIND_OPS`) with ``outcome: {"kind": …, "detail": …}``
  (protocol.schema.json): ``ok`` with what it did (:data:`DETAILS`), ``refused`` with a reason
  class, ``busy``, ``not-found``, ``error``.  The harness judges that kind and never reads the
  text, so a third implementation words its results as it likes.  Declaring kinds and then
  leaving one out is a protocol violation the driver answers for (``harness.drivers.peers``), never a
  guess from the text.
- **Text tables**, for drivers that do not declare (the two JS peers, whose texts we know).
  Each tool family gets its own table, written from SPEC.md: openpi-memory and the reference
  from §7–§9 (S-WRITE-2, S-WRITE-14, S-REMOVE-1…4, S-PIN-1…4), OpenCode's from §20 (PEER-12,
  PEER-13, PEER-14, PEER-16).  Two texts are common to every co-writer and exact (PEER-18):
  the busy text (S-LOCK-8) and ``No memory index found.``  A text no table knows is
  ``unknown``: it matches no expected kind, so a changed or new wording fails loudly instead
  of being guessed.  A raised error (an answer that is not ``ok``) is ``error``.

An outcome is ``kind`` or ``kind:detail`` (``ok:created``); an expectation of ``ok`` accepts
any ``ok``, one of ``ok:created`` only that detail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

KINDS = ("ok", "busy", "refused", "not-found", "error")
# What an ``ok`` did and why a ``refused`` refused, as the shared-store profile tells them apart;
# ``appended`` is an ``updated`` (a write to an existing topic appends, S-WRITE-3).
DETAILS: Mapping[str, tuple[str, ...]] = {
    "ok": ("created", "updated", "appended", "removed", "pinned", "unpinned", "unchanged", "repaired"),
    "refused": ("invalid-topic", "reserved-topic", "pinned", "ambiguous", "unsafe-name"),
}
SAME_DETAIL = {"appended": "updated"}
# The ops whose answers carry an outcome when the driver declares ``outcome_kinds``.
KIND_OPS = frozenset({"write_memory", "remove_memory", "pin_memory", "repair_memory"})
UNKNOWN = "unknown"
MISSING = "missing"  # a declaring driver's answer without an outcome
BUSY_TEXT = "Error: memory store is busy (another tool or process holds the lock) — please retry in a moment."
NO_INDEX_TEXT = "No memory index found."

# Families as drivers name themselves in ``hello`` (``impl``); a trailing ``?`` (a name the
# tool itself does not confirm, harness/drivers/node/protocol.mjs) is ignored.
OPENPI = "openpi"
OPENCODE = "opencode"
FAMILIES: Mapping[str, str] = {
    "memconform-reference": OPENPI,
    "openpi-memory": OPENPI,
    "openclaude-memory": OPENCODE,
}

Table = tuple[tuple[str, re.Pattern[str], str], ...]  # (op or "*", full-match pattern, kind)

_Q = r'"[^\n]*"'  # a quoted topic or name as the result repeats it
_OPENPI: Table = (
    ("write_memory", re.compile(rf"Created memory topic {_Q} \([^\n]*\)\."), "ok:created"),
    ("write_memory", re.compile(rf"Updated memory topic {_Q} \([^\n]*\)\."), "ok:updated"),
    ("write_memory", re.compile(r"Invalid topic: .*", re.S), "refused:invalid-topic"),
    ("write_memory", re.compile(r"Reserved topic: .*", re.S), "refused:reserved-topic"),
    ("remove_memory", re.compile(rf"Removed {_Q} from the index\. Topic file is preserved on disk\."), "ok:removed"),
    ("remove_memory", re.compile(rf"Cannot remove {_Q} — it is pinned\. Unpin it first with: /memory unpin .*", re.S),
     "refused:pinned"),
    ("pin_memory", re.compile(rf"Pinned {_Q}\.\nBefore: .*\n After: .*", re.S), "ok:pinned"),
    ("pin_memory", re.compile(rf"Unpinned {_Q}\.\nBefore: .*\n After: .*", re.S), "ok:unpinned"),
    ("pin_memory", re.compile(rf"{_Q} is already (pinned|unpinned)\."), "ok:unchanged"),
    ("*", re.compile(rf"No entry found matching {_Q}\.", re.S), "not-found"),
    ("*", re.compile(rf"Multiple entries match {_Q}, be more specific: .*", re.S), "refused:ambiguous"),
)
_OPENCODE: Table = (
    ("write_memory", re.compile(r"Memory created: [^\n]+\nIndex updated: [^\n]+\nEntry: .*", re.S), "ok:created"),
    ("write_memory", re.compile(r"Memory updated: [^\n]+\nIndex updated: [^\n]+\nEntry: .*", re.S), "ok:updated"),
    ("write_memory", re.compile(r"Error: .*", re.S), "refused:invalid-topic"),
    ("remove_memory", re.compile(r"Index entry removed: .*", re.S), "ok:removed"),
    ("remove_memory", re.compile(r"Entry is pinned and cannot be removed\..*", re.S), "refused:pinned"),
    ("pin_memory", re.compile(r"Pinned\.\nBefore: .*\nAfter:  .*", re.S), "ok:pinned"),
    ("pin_memory", re.compile(r"Unpinned\.\nBefore: .*\nAfter:  .*", re.S), "ok:unpinned"),
    ("pin_memory", re.compile(r"Already (pinned|unpinned): .*", re.S), "ok:unchanged"),
    ("repair_memory", re.compile(r"Re-indexed \d+ orphaned topic file\(s\).*", re.S), "ok:repaired"),
    ("repair_memory", re.compile(r"Index already consistent — \d+ topic\(s\) indexed, no orphaned topic files found\."),
     "ok:unchanged"),
    ("pin_memory", re.compile(r"Entry has an unsafe filename and was not modified\."), "refused:unsafe-name"),
    ("*", re.compile(rf"No matching entry found for {_Q}\.", re.S), "not-found"),
    ("*", re.compile(rf"Multiple entries match {_Q} — be more specific.*Nothing was modified\.", re.S), "refused:ambiguous"),
)
TABLES: Mapping[str, Table] = {OPENPI: _OPENPI, OPENCODE: _OPENCODE}


class Reply(Protocol):
    """A driver's answer as the classifier sees it (``harness.drivers.peers.Answer``; its ``outcome``
    and ``kinds_declared`` are read when present)."""

    ok: bool
    result: Any
    error: dict[str, Any] | None


def family(impl: str) -> str | None:
    """The text family of a driver's ``hello`` name (``None``: a tool no table describes)."""
    return FAMILIES.get(impl.rstrip("?"))


def _by_table(table: Table, op: str, text: str) -> str | None:
    for table_op, pattern, kind in table:
        if table_op in (op, "*") and pattern.fullmatch(text):
            return kind
    return None


def declared_outcome(outcome: object) -> str:
    """A declared ``outcome`` object as ``kind`` or ``kind:detail``; one outside the vocabulary
    (:data:`KINDS`, :data:`DETAILS`) is ``unknown``, never taken at its word."""
    if not isinstance(outcome, dict) or outcome.get("kind") not in KINDS:
        return UNKNOWN
    kind, detail = str(outcome["kind"]), outcome.get("detail")
    if detail is None:
        return kind
    if not isinstance(detail, str) or detail not in DETAILS.get(kind, ()):
        return UNKNOWN
    return f"{kind}:{SAME_DETAIL.get(detail, detail)}"


def outcome_of(impl: str, op: str, answer: Reply) -> str:
    """The outcome (``kind`` or ``kind:detail``) of ``answer`` to ``op`` from the driver that
    calls itself ``impl``: what it declares, else what its text says.

    For a tool of no known family every table is tried and the kind is taken only when they
    agree (a third implementation that reuses one tool's texts is classified by them)."""
    declared = getattr(answer, "outcome", None)
    if declared is not None:
        return declared_outcome(declared)
    if getattr(answer, "kinds_declared", False) and op in KIND_OPS:
        return "error" if not answer.ok else MISSING
    if not answer.ok:
        return "error"
    if not isinstance(answer.result, str):
        return UNKNOWN
    text = answer.result
    if text == BUSY_TEXT:
        return "busy"
    if text == NO_INDEX_TEXT:
        return "not-found"
    fam = family(impl)
    tables = [TABLES[fam]] if fam is not None else list(TABLES.values())
    kinds = {k for t in tables if (k := _by_table(t, op, text)) is not None}
    return kinds.pop() if len(kinds) == 1 else UNKNOWN


NO_INDEX, NO_ENTRY = "not-found:no-index", "not-found:no-entry"
"""Which ``not-found`` a text tells (harness-only details, never declared): the fixed
``No memory index found.`` (SS-OUT-1) or any other not-found text."""


def history_outcome(impl: str, op: str, answer: Reply) -> str:
    """:func:`outcome_of` as a history records it (issue 30 item 2): a ``not-found`` read
    from a text says whether it was the fixed no-index text, so the linearizability model
    still checks when ``MEMORY.md`` came to exist; a declared ``not-found`` says nothing of
    that and stays bare (it agrees with either)."""
    out = outcome_of(impl, op, answer)
    if out == "not-found" and getattr(answer, "outcome", None) is None and answer.ok:
        return NO_INDEX if answer.result == NO_INDEX_TEXT else NO_ENTRY
    return out


def classify(impl: str, op: str, answer: Reply) -> str:
    """The kind of ``answer`` (``ok``, ``busy``, …: :func:`outcome_of` without its detail)."""
    return outcome_of(impl, op, answer).split(":", 1)[0]


def matches(kind: str, wanted: str | tuple[str, ...]) -> bool:
    """``kind`` (an outcome, ``ok`` or ``ok:created``) is the expected one, or one of them: an
    expected ``ok`` takes any ``ok``; ``unknown`` and ``missing`` never match."""
    allowed = (wanted,) if isinstance(wanted, str) else wanted
    if kind in (UNKNOWN, MISSING):
        return False
    base = kind.split(":", 1)[0]
    return any(_same(w) in (kind, base) for w in allowed)


def _same(outcome: str) -> str:
    kind, _, detail = outcome.partition(":")
    return f"{kind}:{SAME_DETAIL.get(detail, detail)}" if detail else kind
