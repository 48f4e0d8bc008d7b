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


# ------------------------------------------------------------------ declared kinds (issue 22 item 1)


@dataclass
class D:
    """An answer from a driver whose hello declares ``outcome_kinds`` (``harness.drivers.peers.Answer``)."""

    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    kinds_declared: bool = True


def test_ss_out_1_a_declared_kind_is_judged_and_the_text_never_read() -> None:
    reworded = D(True, "Saved new note 'Alpha'", outcome={"kind": "ok", "detail": "created"})
    assert ok_.outcome_of("my-tool", "write_memory", reworded) == "ok:created"
    assert ok_.classify("my-tool", "write_memory", reworded) == "ok"
    # the declared kind wins even over a text a table knows
    assert ok_.classify(REF, "write_memory", D(True, OPENPI_TEXTS[0][1], outcome={"kind": "busy"})) == "busy"
    refused = D(False, error={"kind": "Error", "message": "nope"}, outcome={"kind": "refused", "detail": "invalid-topic"})
    assert ok_.outcome_of("my-tool", "write_memory", refused) == "refused:invalid-topic"
    # an error answer without an outcome is an error, as for any driver
    assert ok_.classify("my-tool", "write_memory", D(False, error={"kind": "Error", "message": "x"})) == "error"


def test_ss_out_1_a_declaring_driver_that_omits_its_kind_matches_nothing() -> None:
    missing = D(True, "Created memory topic \"A\" (a.md).")  # a text a table knows: not consulted
    assert ok_.outcome_of(REF, "write_memory", missing) == ok_.MISSING
    assert not ok_.matches(ok_.MISSING, ok_.KINDS)
    # a reader op carries no kind, and a non-declaring driver's text is still classified
    assert ok_.outcome_of("my-tool", "index_entries", D(True, [])) == ok_.UNKNOWN
    assert ok_.classify(REF, "write_memory", A(True, OPENPI_TEXTS[0][1])) == "ok"


def test_ss_out_1_a_declared_kind_outside_the_vocabulary_is_unknown() -> None:
    for bad in ({"kind": "fine"}, {"kind": "ok", "detail": "saved"}, {"kind": "busy", "detail": "pinned"}, {"detail": "x"}):
        assert ok_.outcome_of("my-tool", "write_memory", D(True, "x", outcome=bad)) == ok_.UNKNOWN, bad


def test_ss_out_1_details_match_a_plain_kind_and_only_their_own_detail() -> None:
    assert ok_.matches("ok:created", "ok")
    assert ok_.matches("ok:created", ("busy", "ok:created"))
    assert not ok_.matches("ok:updated", "ok:created")
    assert not ok_.matches("ok", "ok:created")  # a plain ok does not say it created
    assert ok_.matches("ok:updated", "ok:appended")  # an append is an update (S-WRITE-3)
    assert ok_.outcome_of("t", "write_memory", D(True, "x", outcome={"kind": "ok", "detail": "appended"})) == "ok:updated"


@pytest.mark.parametrize(("op", "text", "full"), [
    ("write_memory", OPENPI_TEXTS[0][1], "ok:created"), ("write_memory", OPENPI_TEXTS[1][1], "ok:updated"),
    ("pin_memory", OPENPI_TEXTS[9][1], "ok:pinned"), ("pin_memory", OPENPI_TEXTS[11][1], "ok:unchanged"),
    ("remove_memory", OPENPI_TEXTS[6][1], "refused:pinned"),
])
def test_ss_out_1_the_text_tables_give_the_same_details(op: str, text: str, full: str) -> None:
    assert ok_.outcome_of(REF, op, A(True, text)) == full


def test_ss_out_1_the_schemas_carry_the_same_vocabulary() -> None:
    import json

    from memconform.harness.drivers.ops import PROTOCOL_SCHEMA, schema
    from memconform.harness.gate.scenarios import SCENARIOS_DIR

    outcome = json.loads(PROTOCOL_SCHEMA.read_text())["$defs"]["outcome"]
    assert tuple(outcome["properties"]["kind"]["enum"]) == ok_.KINDS
    by_kind = {c["if"]["properties"]["kind"].get("const"): tuple(c["then"]["properties"]["detail"]["enum"])
               for c in outcome["allOf"] if "properties" in c["then"]}
    assert by_kind == dict(ok_.DETAILS)
    ops = schema()["$defs"]["ops"]
    assert {op for op, d in ops.items() if "outcome" in d} == ok_.KIND_OPS
    scenario_kinds = json.loads((SCENARIOS_DIR / "scenario.schema.json").read_text())["$defs"]["kind"]["enum"]
    assert set(scenario_kinds) == set(ok_.KINDS) | {f"{k}:{d}" for k, ds in ok_.DETAILS.items() for d in ds}


def test_the_lock_matrix_reads_a_declared_kind_not_the_text() -> None:
    """``locks``/availability judge busy by kind_model.answer_kind: a reworded busy answer of a
    declaring driver is busy (without it, the lock matrix called the example driver's busy an
    error: a false lock-verdict violation), and a plain driver's text still decides."""
    from memconform.harness.oracles import kind_model

    assert kind_model.answer_kind(D(True, "Notes are in use; try again.", outcome={"kind": "busy"})) == kind_model.BUSY
    assert kind_model.answer_kind(D(True, "Saved.", outcome={"kind": "ok", "detail": "created"})) == "created"
    assert kind_model.answer_kind(D(True, "Gone.", outcome={"kind": "not-found"})) == "not_found"
    assert kind_model.answer_kind(A(True, BUSY)) == kind_model.BUSY
    assert kind_model.answer_kind(A(True, OPENPI_TEXTS[0][1])) == "created"
