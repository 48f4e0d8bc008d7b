"""The co-writer oracle (harness/oracles/coexist.py): every planted loss is caught, what an op
aims at or maintenance may do is not flagged, and a line rewritten back and forth is a flip-flop."""

from __future__ import annotations

from typing import Any

import pytest

from memconform.harness.oracles.coexist import Mark, check_step, flip_flops

FM = '---\nname: "Alpha"\ndescription: "s"\ntags: [x]\nlast_updated: 2026-08-01T00:00:00+00:00\ncreated: 2026-08-01T00:00:00+00:00\n---\n'
IDX = "# Memory Index\n\n- [Alpha](alpha.md) 2026-08-01T00:00:00+00:00 -- s\n- [Beta](beta.md) [pin] 2026-08-01T00:00:00+00:00 -- sb\n"
BASE = {"MEMORY.md": IDX, "alpha.md": FM + "\nold\n", "beta.md": FM + "\nb\n"}


def mark(before: dict[str, str], after: dict[str, str], op: str = "write_memory", role: str = "B",
         i: int = 1, **args: Any) -> Mark:
    return Mark(i, role, "tool-" + role, op, args, {k: v.encode() for k, v in before.items()},
                {k: v.encode() for k, v in after.items()}, True)


def kinds(m: Mark) -> list[tuple[str, str]]:
    return [(p.kind, p.clause) for p in check_step(m)]


def test_a_write_that_keeps_everything_passes() -> None:
    after = dict(BASE, **{"gamma.md": FM + "\ng\n",
                          "MEMORY.md": IDX + "- [Gamma](gamma.md) 2026-08-07T00:00:00+00:00 -- g\n"})
    assert kinds(mark(BASE, after, topic="Gamma")) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"MEMORY.md": "# Memory Index\n\n- [Beta](beta.md) [pin] 2026-08-01T00:00:00+00:00 -- sb\n"}, ("foreign-loss", "SS-IDX-3")),
    ({"MEMORY.md": IDX.replace(" [pin]", "")}, ("foreign-loss", "SS-IDX-4")),
    ({"MEMORY.md": IDX.replace("(alpha.md) ", "(alpha.md) [pin] ")}, ("foreign-loss", "SS-IDX-3")),
    ({"MEMORY.md": IDX.replace("-- sb", "-- sb changed")}, ("foreign-loss", "SS-IDX-3")),
    ({"MEMORY.md": IDX.replace("[Alpha]", "[Alpha2]")}, ("foreign-loss", "SS-IDX-3")),
    ({"alpha.md": FM + "\nrewritten\n"}, ("foreign-loss", "SS-FMT-3")),
    ({"MEMORY.md": IDX.replace("# Memory Index\n", "")}, ("foreign-loss", "SS-IDX-2")),
])
def test_planted_losses_on_lines_and_files_the_op_did_not_aim_at(change: dict[str, str], expected: tuple[str, str]) -> None:
    assert expected in kinds(mark(BASE, dict(BASE, **change), topic="Gamma"))


def test_text_lines_and_unsafe_entry_like_lines_are_kept() -> None:
    before = dict(BASE, **{"MEMORY.md": IDX + "- [Hidden](.hidden.md) 2026-08-01 -- h\nprose\n"})
    assert ("foreign-loss", "SS-IDX-2") in kinds(mark(before, BASE, topic="Gamma"))
    blank_lines_differ = dict(before, **{"MEMORY.md": before["MEMORY.md"].replace("\n\n", "\n\n\n")})
    assert kinds(mark(before, blank_lines_differ, topic="Gamma")) == []


def test_a_deleted_foreign_topic_file_is_a_loss() -> None:
    after = {k: v for k, v in BASE.items() if k != "alpha.md"}
    assert ("foreign-loss", "SS-FMT-3") in kinds(mark(BASE, after, topic="Gamma"))


def test_duplicates_may_collapse_and_a_losing_lines_pin_is_a_hazard_not_a_failure() -> None:
    """SS-IDX-4: openpi and the reference drop a losing duplicate's pin (S-IDX-4), OpenCode moves
    it onto the survivor; both are allowed, the drop is reported (``pin-dropped``) but fails nothing."""
    dup = IDX + "- [Alpha old](alpha.md) [pin] 2026-07-01T00:00:00+00:00 -- older\n"
    collapsed = IDX  # the unpinned line survived, the pinned duplicate went
    problems = check_step(mark(dict(BASE, **{"MEMORY.md": dup}), dict(BASE, **{"MEMORY.md": collapsed}), topic="Gamma"))
    assert [(p.kind, p.clause, p.fails) for p in problems] == [("pin-dropped", "SS-IDX-4", False)]
    kept_pin = IDX.replace("(alpha.md) ", "(alpha.md) [pin] ")
    assert kinds(mark(dict(BASE, **{"MEMORY.md": dup}), dict(BASE, **{"MEMORY.md": kept_pin}), topic="Gamma")) == []


def test_the_surviving_duplicate_keeps_its_own_pin() -> None:
    """The line maintenance keeps never loses its own pin (SS-IDX-4): that is a foreign loss."""
    dup = IDX.replace("(alpha.md) ", "(alpha.md) [pin] ") + "- [Alpha old](alpha.md) 2026-07-01T00:00:00+00:00 -- older\n"
    problems = check_step(mark(dict(BASE, **{"MEMORY.md": dup}), dict(BASE, **{"MEMORY.md": IDX}), topic="Gamma"))
    assert [(p.kind, p.clause, p.fails) for p in problems] == [("foreign-loss", "SS-IDX-4", True)]


def test_stale_flags_and_spacing_are_maintenance_not_loss() -> None:
    after = dict(BASE, **{"MEMORY.md": IDX.replace("+00:00 -- s\n", "+00:00 [stale?] -- s\n")})
    assert kinds(mark(BASE, after, topic="Gamma")) == []


def test_the_aimed_line_and_file_may_change() -> None:
    after = dict(BASE, **{"MEMORY.md": IDX.replace("-- s\n", "-- new\n"), "alpha.md": FM + "\nold\n\n## 2026-08-07\n\nnew\n"})
    assert kinds(mark(BASE, after, topic="alpha")) == []


def test_an_append_into_a_foreign_topic_keeps_frontmatter_and_body() -> None:
    lost_field = FM.replace("tags: [x]\n", "").replace("created: 2026-08-01", "created: 2026-08-07")
    after = dict(BASE, **{"alpha.md": lost_field + "\nold\n\n## 2026-08-07\n\nnew\n"})
    assert ("foreign-loss", "SS-FMT-1") in kinds(mark(BASE, after, topic="Alpha"))
    after = dict(BASE, **{"alpha.md": FM + "\nnew only\n"})
    assert ("foreign-loss", "SS-FMT-2") in kinds(mark(BASE, after, topic="Alpha"))
    assert ("foreign-loss", "SS-FMT-2") not in kinds(mark(BASE, after, topic="Alpha", mode="replace"))


def test_removal_intent_is_kept_and_honoured() -> None:
    before = dict(BASE, **{".ocl-removed": "gamma.md\n", "gamma.md": FM + "\ng\n"})
    dropped = dict(before, **{".ocl-removed": ""})
    assert ("foreign-loss", "SS-TOMB-2") in kinds(mark(before, dropped, op="pin_memory", topic="Alpha", pin=True))
    reindexed = dict(before, MEMORY_md="")
    reindexed["MEMORY.md"] = IDX + "- [Gamma](gamma.md) 2026-08-07T00:00:00+00:00 [stale?] -- g\n"
    assert ("removal-ignored", "SS-TOMB-4") in kinds(mark(before, reindexed, op="repair_memory"))
    # a write of that very file clears the tombstone: allowed (S-INV-7)
    rewritten = dict(before, **{".ocl-removed": "", "gamma.md": FM + "\ng\n\n## 2026-08-07\n\nh\n",
                                "MEMORY.md": IDX + "- [Gamma](gamma.md) 2026-08-07T00:00:00+00:00 -- g\n"})
    assert kinds(mark(before, rewritten, topic="Gamma")) == []


def _line(flag: str) -> dict[str, str]:
    return dict(BASE, **{"MEMORY.md": IDX.replace("(alpha.md) 2026-08-01T00:00:00+00:00", f"(alpha.md) 2026-08-01T00:00:00+00:00{flag}")})


def test_a_line_rewritten_on_every_alternating_write_is_a_flip_flop() -> None:
    on, off = _line(" [stale?]"), _line("")
    marks = [mark(off, on, role="A", i=1, topic="Gamma"), mark(on, off, role="B", i=2, topic="Delta"),
             mark(off, on, role="A", i=3, topic="Gamma")]
    found = flip_flops(marks)
    assert [(p.kind, p.clause) for p in found] == [("flip-flop", "SS-IDX-3")]
    assert "alpha.md" in found[0].where


def test_a_line_that_settles_or_is_aimed_at_is_no_flip_flop() -> None:
    on, off = _line(" [stale?]"), _line("")
    settles = [mark(off, on, role="A", i=1, topic="Gamma"), mark(on, on, role="B", i=2, topic="Delta"),
               mark(on, on, role="A", i=3, topic="Gamma")]
    assert flip_flops(settles) == []
    aimed = [mark(off, on, role="A", i=1, topic="Alpha"), mark(on, off, role="B", i=2, topic="Alpha"),
             mark(off, on, role="A", i=3, topic="Alpha")]
    assert flip_flops(aimed) == []
    one_tool = [mark(off, on, role="A", i=1, topic="Gamma"), mark(on, off, role="A", i=2, topic="Delta"),
                mark(off, on, role="A", i=3, topic="Gamma")]
    assert flip_flops(one_tool) == []


def test_one_topic_written_into_two_files_by_the_two_tools_is_a_split() -> None:
    from memconform.harness.oracles.coexist import split_topics

    dup = {"MEMORY.md": "# Memory Index\n\n- [Dup](dup.md) 2026-08-01T00:00:00+00:00 -- a\n- [Dup](dup-2.md) 2026-08-02T00:00:00+00:00 -- b\n",
           "dup.md": FM + "\na\n", "dup-2.md": FM + "\nb\n"}
    by_a = dict(dup, **{"dup-2.md": FM + "\nb\n\n## x\n\nfrom a\n"})
    by_b = dict(by_a, **{"dup.md": FM + "\na\n\n## x\n\nfrom b\n"})
    found = split_topics([mark(dup, by_a, role="A", i=1, topic="Dup"), mark(by_a, by_b, role="B", i=2, topic="dup")])
    assert [(p.kind, p.clause) for p in found] == [("split-topic", "SS-WRITE-1")]
    same = dict(by_a, **{"dup-2.md": FM + "\nb\n\n## x\n\nfrom a\n\n## y\n\nfrom b\n"})
    assert split_topics([mark(dup, by_a, role="A", i=1, topic="Dup"), mark(by_a, same, role="B", i=2, topic="Dup")]) == []


def test_a_split_names_the_step_that_made_it() -> None:
    """A split verdict names the step whose write made the second file, and says when that
    file was not the write's target (a carry-over beside it), not only the pair (issue 30 item 4)."""
    from memconform.harness.oracles.coexist import split_topics

    empty = {"MEMORY.md": "# Memory Index\n"}
    by_b = {"MEMORY.md": "# Memory Index\n\n- [Alpha](alpha.md) 2026-08-01T00:00:00+00:00 -- b\n", "alpha.md": FM + "\nb\n"}
    carried = dict(by_b, **{"alpha-opim.md": FM + "\nlocal\n", "beta.md": FM + "\nbeta\n",
                            "MEMORY.md": by_b["MEMORY.md"] + "- [Alpha](alpha-opim.md) 2026-08-01T00:00:00+00:00 -- l\n"
                                                         "- [Beta](beta.md) 2026-08-01T00:00:00+00:00 -- beta\n"})
    found = split_topics([mark(empty, by_b, role="B", i=1, topic="Alpha"),
                          mark(by_b, carried, role="A", i=2, topic="Alpha", content="x")])
    assert len(found) == 1
    assert found[0].actual.startswith("A: alpha-opim.md; B: alpha.md")  # beta.md, another topic, is no part of it
    assert found[0].actual.endswith("split made by step 2 (write_memory by A, tool-A), which wrote alpha-opim.md "
                                    "while the index already named the topic in alpha.md")
