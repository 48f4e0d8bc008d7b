"""An op's outcome by kind (``ok``, ``busy``, ``refused``, ``not-found``, ``error``), per driver.

The shared-store profile (docs/SHARED_STORE.md, SS-OUT-1) judges what an op did, never the
English sentence one tool prints.  Each tool family gets its own table of result texts, written
from SPEC.md: openpi-memory and the reference from §7–§9 (S-WRITE-2, S-WRITE-14, S-REMOVE-1…4,
S-PIN-1…4), OpenCode's from §20 (PEER-12, PEER-13, PEER-14, PEER-16).  Two texts are common
to every co-writer and exact (PEER-18): the busy text (S-LOCK-8) and ``No memory index found.``

A text no table knows is ``unknown``: it matches no expected kind, so a changed or new wording
fails loudly instead of being guessed.  A raised error (an answer that is not ``ok``) is
``error`` whatever the tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

KINDS = ("ok", "busy", "refused", "not-found", "error")
UNKNOWN = "unknown"
BUSY_TEXT = "Error: memory store is busy (another tool or process holds the lock) — please retry in a moment."
NO_INDEX_TEXT = "No memory index found."

# Families as drivers name themselves in ``hello`` (``impl``); a trailing ``?`` (a name the
# tool itself does not confirm, harness/peers/protocol.mjs) is ignored.
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
    ("write_memory", re.compile(rf"(Created|Updated) memory topic {_Q} \([^\n]*\)\."), "ok"),
    ("write_memory", re.compile(r"Invalid topic: .*", re.S), "refused"),
    ("write_memory", re.compile(r"Reserved topic: .*", re.S), "refused"),
    ("remove_memory", re.compile(rf"Removed {_Q} from the index\. Topic file is preserved on disk\."), "ok"),
    ("remove_memory", re.compile(rf"Cannot remove {_Q} — it is pinned\. Unpin it first with: /memory unpin .*", re.S),
     "refused"),
    ("pin_memory", re.compile(rf"(Pinned|Unpinned) {_Q}\.\nBefore: .*\n After: .*", re.S), "ok"),
    ("pin_memory", re.compile(rf"{_Q} is already (pinned|unpinned)\."), "ok"),
    ("*", re.compile(rf"No entry found matching {_Q}\.", re.S), "not-found"),
    ("*", re.compile(rf"Multiple entries match {_Q}, be more specific: .*", re.S), "refused"),
)
_OPENCODE: Table = (
    ("write_memory", re.compile(r"Memory (created|updated): [^\n]+\nIndex updated: [^\n]+\nEntry: .*", re.S), "ok"),
    ("write_memory", re.compile(r"Error: .*", re.S), "refused"),
    ("remove_memory", re.compile(r"Index entry removed: .*", re.S), "ok"),
    ("remove_memory", re.compile(r"Entry is pinned and cannot be removed\..*", re.S), "refused"),
    ("pin_memory", re.compile(r"(Pinned|Unpinned)\.\nBefore: .*\nAfter:  .*", re.S), "ok"),
    ("pin_memory", re.compile(r"Already (pinned|unpinned): .*", re.S), "ok"),
    ("repair_memory", re.compile(r"Re-indexed \d+ orphaned topic file\(s\).*", re.S), "ok"),
    ("repair_memory", re.compile(r"Index already consistent — \d+ topic\(s\) indexed, no orphaned topic files found\."), "ok"),
    ("pin_memory", re.compile(r"Entry has an unsafe filename and was not modified\."), "refused"),
    ("*", re.compile(rf"No matching entry found for {_Q}\.", re.S), "not-found"),
    ("*", re.compile(rf"Multiple entries match {_Q} — be more specific.*Nothing was modified\.", re.S), "refused"),
)
TABLES: Mapping[str, Table] = {OPENPI: _OPENPI, OPENCODE: _OPENCODE}


class Reply(Protocol):
    """A driver's answer as the classifier sees it (``harness.peers.Answer``)."""

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


def classify(impl: str, op: str, answer: Reply) -> str:
    """The kind of ``answer`` to ``op`` from the driver that calls itself ``impl``.

    For a tool of no known family every table is tried and the kind is taken only when they
    agree (a third implementation that reuses one tool's texts is classified by them)."""
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


def matches(kind: str, wanted: str | tuple[str, ...]) -> bool:
    """``kind`` is the expected one (or one of the expected ones); ``unknown`` never is."""
    allowed = (wanted,) if isinstance(wanted, str) else wanted
    return kind != UNKNOWN and kind in allowed
