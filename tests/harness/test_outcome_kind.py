"""The outcome classifier (SS-OUT-1): each tool's texts map to one kind, and nothing unknown passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from memconform.harness.oracles import outcome_kind as ok_

BUSY = "Error: memory store is busy (another tool or process holds the lock) — please retry in a moment."
REF, PI, OC = "memconform-reference", "openpi-memory?", "openclaude-memory"


@dataclass
class A:
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None


OPENPI_TEXTS = [
    ("write_memory", 'Created memory topic "Alpha Beta" (alpha-beta.md).', "ok"),
    ("write_memory", 'Updated memory topic "X" (x-2.md).', "ok"),
    ("write_memory", "Invalid topic: topic must not be blank.", "refused"),
    ("write_memory", 'Invalid topic: "dir.md" is not a regular file.', "refused"),
    ("write_memory", 'Reserved topic: "last-session-recap" has been retired. Persist durable facts as their own topics; '
                     "automatic session orientation is managed in HANDOFF.md.", "refused"),
    ("remove_memory", 'Removed "Gone" from the index. Topic file is preserved on disk.', "ok"),
    ("remove_memory", 'Cannot remove "P" — it is pinned. Unpin it first with: /memory unpin P', "refused"),
    ("remove_memory", 'No entry found matching "nope".', "not-found"),
    ("remove_memory", 'Multiple entries match "Zeta", be more specific: Zeta One, Zeta Two', "refused"),
    ("pin_memory", 'Pinned "A".\nBefore: - [A](a.md) 2026 -- a\n After: - [A](a.md) [pin] 2026 -- a', "ok"),
    ("pin_memory", 'Unpinned "A".\nBefore: x\n After: undefined', "ok"),
    ("pin_memory", '"A" is already pinned.', "ok"),
    ("pin_memory", '"A" is already unpinned.', "ok"),
    ("pin_memory", "No memory index found.", "not-found"),
    ("write_memory", BUSY, "busy"),
]
OPENCODE_TEXTS = [
    ("write_memory", "Memory created: /s/a.md\nIndex updated: /s/MEMORY.md\nEntry: [A](a.md) 2026 -- a", "ok"),
    ("write_memory", "Memory updated: /s/a.md\nIndex updated: /s/MEMORY.md\nEntry: [A](a.md) 2026 -- a", "ok"),
    ("write_memory", "Error: topic is required and must be a non-empty string.", "refused"),
    ("write_memory", "Error: topic must contain at least one letter or digit to form a valid filename.", "refused"),
    ("remove_memory", "Index entry removed: - [A](a.md) 2026 -- a\nTopic file a.md still exists on disk.", "ok"),
    ("remove_memory", "Entry is pinned and cannot be removed. Use pin_memory with pin: false to unpin it first.", "refused"),
    ("remove_memory", 'No matching entry found for "nope".', "not-found"),
    ("pin_memory", 'Multiple entries match "Zeta" — be more specific (exact names win over partial matches). '
                   "Candidates: Zeta One, Zeta Two. Nothing was modified.", "refused"),
    ("pin_memory", "Pinned.\nBefore: - [A](a.md) 2026 -- a\nAfter:  - [A](a.md) [pin] 2026 -- a", "ok"),
    ("pin_memory", "Already pinned: - [A](a.md) [pin] 2026 -- a", "ok"),
    ("pin_memory", "Already unpinned: - [A](a.md) 2026 -- a", "ok"),
    ("repair_memory", "Re-indexed 1 orphaned topic file(s) as [stale?]. Index now lists 5 entries.", "ok"),
    ("repair_memory", "Index already consistent — 1 topic(s) indexed, no orphaned topic files found.", "ok"),
    ("remove_memory", "No memory index found.", "not-found"),
    ("pin_memory", BUSY, "busy"),
]


@pytest.mark.parametrize(("op", "text", "kind"), OPENPI_TEXTS)
def test_ss_out_1_openpi_texts(op: str, text: str, kind: str) -> None:
    assert ok_.classify(REF, op, A(True, text)) == kind
    assert ok_.classify(PI, op, A(True, text)) == kind


@pytest.mark.parametrize(("op", "text", "kind"), OPENCODE_TEXTS)
def test_ss_out_1_opencode_texts(op: str, text: str, kind: str) -> None:
    assert ok_.classify(OC, op, A(True, text)) == kind


def test_ss_out_1_one_tools_text_is_unknown_to_the_other() -> None:
    """A classifier per driver: OpenCode's success text from an openpi driver is not ``ok``."""
    assert ok_.classify(REF, "write_memory", A(True, OPENCODE_TEXTS[0][1])) == ok_.UNKNOWN
    assert ok_.classify(OC, "write_memory", A(True, OPENPI_TEXTS[0][1])) == ok_.UNKNOWN
    # an openpi refusal text under OpenCode's name is not a refusal either
    assert ok_.classify(OC, "remove_memory", A(True, OPENPI_TEXTS[6][1])) == ok_.UNKNOWN


def test_ss_out_1_unknown_matches_no_expectation() -> None:
    kind = ok_.classify(REF, "write_memory", A(True, "Sure, saved it!"))
    assert kind == ok_.UNKNOWN
    assert not any(ok_.matches(kind, k) for k in ok_.KINDS)
    assert not ok_.matches(kind, ok_.KINDS)


def test_ss_out_1_raised_is_error_and_non_text_unknown() -> None:
    assert ok_.classify(OC, "write_memory", A(False, error={"kind": "Error", "code": "ELOOP"})) == "error"
    assert ok_.classify(REF, "write_memory", A(True, None)) == ok_.UNKNOWN
    assert ok_.classify(REF, "write_memory", A(True, {"text": "Created"})) == ok_.UNKNOWN


def test_ss_out_1_op_scoped_texts() -> None:
    """A write's success text answering a remove is not a removal."""
    assert ok_.classify(REF, "remove_memory", A(True, OPENPI_TEXTS[0][1])) == ok_.UNKNOWN
    assert ok_.classify(OC, "pin_memory", A(True, OPENCODE_TEXTS[4][1])) == ok_.UNKNOWN


def test_ss_out_1_unknown_family_uses_tables_that_agree() -> None:
    assert ok_.classify("third-tool", "write_memory", A(True, OPENPI_TEXTS[0][1])) == "ok"
    assert ok_.classify("third-tool", "pin_memory", A(True, BUSY)) == "busy"
    assert ok_.classify("third-tool", "pin_memory", A(True, "ok!")) == ok_.UNKNOWN


def test_ss_out_1_busy_text_is_exact() -> None:
    assert ok_.classify(OC, "write_memory", A(True, BUSY.rstrip("."))) == "refused"  # an `Error:` text, not busy
    assert ok_.classify(REF, "write_memory", A(True, BUSY + " ")) == ok_.UNKNOWN
