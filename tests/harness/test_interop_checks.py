"""The issue-13 oracles on planted histories and stores: a lost write in an unindexed file, a
split topic, overlapping holders, the unavailable hazard, and the history's fault records."""

from __future__ import annotations

from pathlib import Path

from memconform.harness.checker.history import History, Op
from memconform.harness.oracles.findings import HAZARD, VIOLATION, WEAKNESS
from memconform.harness.oracles.interop_checks import (
    LockSpan,
    StoreView,
    created_topic,
    double_holders,
    lost_writes,
    split_topics,
    unavailable,
)

INDEX = "# Memory Index\n\n- [Alpha](alpha.md) 2026-01-01T00:00:00+00:00 -- a\n"


def _op(i: int, process: str, op: str, args: dict[str, object], start: int, end: int | None,
        type_: str = "ok", result: object = "Updated memory topic") -> Op:
    return Op(i, process, op, dict(args), start, end, type_, result)


def _append(i: int, process: str, topic: str, token: str, start: int = 0, end: int = 10) -> Op:
    return _op(i, process, "write_memory", {"topic": topic, "content": token, "summary": "s"}, start, end)


def _fault(family: str, start: int, end: int | None, id_: int = 0) -> Op:
    return _op(100 + id_, f"nemesis-{id_}", "nemesis", {"family": family, "id": id_}, start, end, "ok", {})


def test_a_token_only_in_an_unindexed_file_is_lost() -> None:
    disk = StoreView("disk", INDEX, {"alpha.md": "tok-w0-1\n", "alpha-2.md": "tok-w1-2\n"})
    found = lost_writes([_append(0, "w0", "Alpha", "tok-w0-1"), _append(1, "w1", "Alpha", "tok-w1-2")], [disk],
                        impl_of={"w1": "pi"})
    assert [(f.kind, f.severity, f.clause, f.impl) for f in found] == [("lost-write", VIOLATION, "S-INV-3", "pi")]
    assert "tok-w1-2" in found[0].evidence and "in unindexed alpha-2.md" in found[0].evidence


def test_token_prefixes_do_not_count_as_kept() -> None:
    disk = StoreView("disk", INDEX, {"alpha.md": "tok-w0-10\n"})
    found = lost_writes([_append(0, "w0", "Alpha", "tok-w0-1")], [disk])
    assert [f.kind for f in found] == ["lost-write"] and "in no file" in found[0].evidence


def test_a_reader_that_does_not_reach_the_token_loses_it_for_itself() -> None:
    disk = StoreView("disk", INDEX, {"alpha.md": "tok-w0-1\n"})
    pi = StoreView("pi 1.0", INDEX, {"alpha.md": "something else\n"})
    found = lost_writes([_append(0, "w0", "Alpha", "tok-w0-1")], [disk, pi])
    assert [(f.kind, f.impl) for f in found] == [("lost-write", "pi 1.0")]
    assert "as pi 1.0 reads it" in found[0].evidence


def test_a_remove_that_may_select_the_entry_excuses_the_loss_a_busy_one_does_not() -> None:
    disk = StoreView("disk", "# Memory Index\n\n", {"alpha-notes.md": "tok-w0-1\n"})  # unindexed
    append = _append(0, "w0", "Alpha Notes", "tok-w0-1", 0, 10)
    removed = _op(1, "w1", "remove_memory", {"topic": "alpha"}, 5, 20, result='Removed "Alpha Notes" from the index. Topic file is preserved on disk.')
    busy = _op(1, "w1", "remove_memory", {"topic": "alpha"}, 5, 20, type_="fail", result="Error: memory store is busy")
    before = _op(1, "w1", "remove_memory", {"topic": "Alpha Notes"}, -20, -5, result='Removed "Alpha Notes" from the index. Topic file is preserved on disk.')
    killed = _op(1, "w1", "remove_memory", {"topic": "Alpha Notes"}, 5, None, type_="info", result="killed")
    assert lost_writes([append, removed], [disk]) == []
    assert lost_writes([append, killed], [disk]) == []
    assert [f.kind for f in lost_writes([append, busy], [disk])] == ["lost-write"]
    assert [f.kind for f in lost_writes([append, before], [disk])] == ["lost-write"]


def test_a_remove_never_excuses_a_token_gone_from_every_file() -> None:
    """S-REMOVE-5: the topic file is never touched, so only a replace (or two holders) can
    take a token out of it."""
    disk = StoreView("disk", "# Memory Index\n\n", {"alpha-notes.md": "tok-w1-2\n"})
    append = _append(0, "w0", "Alpha Notes", "tok-w0-1", 0, 10)
    removed = _op(1, "w1", "remove_memory", {"topic": "alpha"}, 5, 20, result='Removed "Alpha Notes" from the index. Topic file is preserved on disk.')
    replaced = _op(2, "w2", "write_memory", {"topic": "alpha notes", "content": "x", "mode": "replace"}, 5, 20)
    [lost] = lost_writes([append, removed], [disk])
    assert "in no file" in lost.evidence
    assert lost_writes([append, removed, replaced], [disk]) == []


def test_duplicated_tokens_are_counted_through_the_index() -> None:
    disk = StoreView("disk", INDEX, {"alpha.md": "tok-w0-1\ntok-w0-1\n"})
    found = lost_writes([_append(0, "w0", "Alpha", "tok-w0-1")], [disk])
    assert [f.kind for f in found] == ["duplicated-write"] and "×2" in found[0].evidence


def test_a_lock_fault_during_the_op_makes_the_loss_the_accepted_weakness() -> None:
    disk = StoreView("disk", INDEX, {"alpha.md": ""})
    op = _append(0, "w0", "Alpha", "tok-w0-1", 100, 200)
    assert lost_writes([op], [disk], faults=[_fault("pause", 150, 400)])[0].severity == WEAKNESS
    assert lost_writes([op], [disk], faults=[_fault("errno", 150, 160)])[0].severity == VIOLATION
    assert lost_writes([op], [disk], faults=[_fault("pause", 300, 400)])[0].severity == VIOLATION
    killed_earlier = _fault("kill", 100 - 15_000_000_000, 100 - 15_000_000_000)  # its lock is reclaimed now
    assert lost_writes([op], [disk], faults=[killed_earlier])[0].severity == WEAKNESS
    skewed_until_its_next_op = _fault("clock", 0, 50)
    assert lost_writes([op], [disk], faults=[skewed_until_its_next_op])[0].severity == WEAKNESS
    assert lost_writes([op], [disk], faults=[_fault("pause", 0, 50)])[0].severity == VIOLATION


def test_split_topic_from_two_index_lines_and_from_frontmatter() -> None:
    index = ("# Memory Index\n\n- [Alpha](alpha.md) 2026-01-01 -- a\n- [alpha](alpha-2.md) 2026-01-01 -- b\n"
             "- [Bravo](bravo.md) 2026-01-01 -- c\n- [Bravo Two](bravo-2.md) 2026-01-01 -- d\n")
    files = {"alpha.md": "---\nname: \"Alpha\"\n---\n", "alpha-2.md": "---\nname: \"alpha\"\n---\n",
             "bravo.md": "---\nname: \"Bravo\"\n---\n", "bravo-2.md": "---\nname: 'bravo'\n---\n"}
    found = split_topics(StoreView("disk", index, files), path="D/MEMORY.md")
    evidence = sorted(f.evidence for f in found)
    assert all(f.kind == "split-topic" and f.clause == "S-WRITE-6" and f.path == "D/MEMORY.md" for f in found)
    assert len(found) == 3, evidence  # alpha twice (lines, frontmatter), bravo once (frontmatter)
    assert any("'bravo'" in e and "frontmatter" in e for e in evidence)


def test_one_name_one_file_is_not_split() -> None:
    index = "# Memory Index\n\n- [Alpha](alpha.md) 2026-01-01 -- a\n- [ALPHA](alpha.md) 2026-01-02 -- a\n"
    assert split_topics(StoreView("disk", index, {"alpha.md": "---\nname: \"Alpha\"\n---\n"})) == []


def test_two_overlapping_creators_of_one_file_are_double_holders() -> None:
    a = _op(0, "w0", "write_memory", {"topic": "X"}, 0, 100, result='Created memory topic "X" (x.md).')
    b = _op(1, "w1", "write_memory", {"topic": "x"}, 50, 150,
            result="Memory created: /s/x.md\nIndex updated: /s/MEMORY.md\nEntry: - [x](x.md) 2026 -- s")
    later = _op(2, "w2", "write_memory", {"topic": "X"}, 200, 300, result='Created memory topic "X" (x.md).')
    found = double_holders([a, b, later], impl_of={"w0": "ref", "w1": "opencode"})
    assert [(f.kind, f.severity, f.impl) for f in found] == [("double-holder", VIOLATION, "ref, opencode")]
    assert "w0 and w1" in found[0].evidence and "topic 'x'" in found[0].evidence
    assert double_holders([a, later]) == []
    faulted = double_holders([a, b], faults=[_fault("stale-lock", 10, 20)])
    assert [(f.severity, f.clause) for f in faulted] == [(WEAKNESS, "S-INV-9")]


def test_created_topic_reads_the_outcome_never_the_text() -> None:
    """Issue 30 item 2: the recorded outcome decides, whatever the words; a history without
    outcomes is read through the text tables (both JS wordings)."""
    def write(result: str, outcome: str | None = None) -> Op:
        op = _op(0, "w0", "write_memory", {"topic": " Alpha "}, 0, 1, result=result)
        op.outcome = outcome
        return op

    assert created_topic(write("Saved new note.", "ok:created")) == "alpha"
    assert created_topic(write('Created memory topic "A" (a.md).', "ok:updated")) is None
    assert created_topic(write('Created memory topic "A" (a.md).')) == "alpha"
    assert created_topic(write("Memory created: /x/y/a.md\nIndex updated: /x/y/MEMORY.md\nEntry: - [A](a.md) t -- s")) == "alpha"
    assert created_topic(write('Updated memory topic "A" (a.md).')) is None


def test_own_words_with_outcomes_are_judged_like_the_js_texts() -> None:
    a = _op(0, "w0", "write_memory", {"topic": "X"}, 0, 100, result="Saved new note X.")
    b = _op(1, "w1", "write_memory", {"topic": "X"}, 50, 150, result="Saved new note X.")
    a.outcome = b.outcome = "ok:created"
    assert [f.kind for f in double_holders([a, b])] == ["double-holder"]
    b.outcome = "ok:updated"
    assert double_holders([a, b]) == []


def test_overlapping_lock_spans_are_double_holders() -> None:
    spans = [LockSpan("w0", "D/.lock", 0, 100), LockSpan("w1", "D/.lock", 50, 120), LockSpan("w2", "D/.lock", 130, None)]
    found = double_holders([], spans=spans)
    assert [(f.kind, f.path) for f in found] == [("double-holder", "D/.lock")]
    assert "w0 held D/.lock" in found[0].evidence and "w1" in found[0].evidence


def test_unavailable_is_a_hazard_past_every_lock_window() -> None:
    assert unavailable("ref", 11.0, 9, limit_s=75) == []
    [late] = unavailable("ref", 61.2, 40, limit_s=75, left="memory/.lock was empty, 2.0 s old")
    assert (late.kind, late.severity, late.clause) == ("unavailable", HAZARD, "S-LOCK-3")
    assert "61.2 s" in late.evidence and "was empty" in late.evidence
    [never] = unavailable("ref", None, 300, limit_s=75)
    assert "did not succeed within 75 s" in never.evidence


def test_history_keeps_faults_apart_and_saves_the_schedule(tmp_path: Path) -> None:
    h = History(meta={"schedule": {"seed": 3}})
    h.record("w0", "invoke", "write_memory", {"topic": "A"})
    h.record("nemesis-0", "invoke", "nemesis", {"family": "kill", "id": 0})
    h.record("w0", "info", "write_memory", {"topic": "A"}, "killed by nemesis (fault 0)")
    h.record("nemesis-0", "ok", "nemesis", {"family": "kill", "id": 0}, {"killed": 1})
    path = tmp_path / "h.jsonl"
    h.save(path)
    loaded = History.load(path)
    assert loaded.meta == {"schedule": {"seed": 3}}
    assert [(o.process, o.type) for o in loaded.ops()] == [("w0", "info")]
    assert [(o.process, o.args["family"]) for o in loaded.faults()] == [("nemesis-0", "kill")]
    path.write_text(path.read_text().split("\n", 1)[1])  # an old history, without the meta line
    assert History.load(path).meta == {} and len(History.load(path).ops()) == 1
