"""The post-compaction decision and the consolidation prompts (S-COMPACT-1..4, B-12).

Truth values of ``detect_incomplete_task`` were checked against the JS core 0.3.9.
"""

from __future__ import annotations

import re

import pytest

from memconform.reference.compaction import (
    build_compaction_consolidation_prompt,
    build_consolidation_prompt,
    decide_compaction_action,
    detect_incomplete_task,
)
from memconform.reference.config import Rules, render_rules_to_markdown
from memconform.reference.errors import JsTypeError
from memconform.reference.session import SentMessage, Session
from memconform.reference.text import UNDEFINED
from tests.conftest import StoreEnv

# --- S-COMPACT-1 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The next step is to deploy after approval.",
        "need to",
        "We still NEED TO migrate",
        "Need To",
        "waiting for review",
        "WAITING FOR",
        "next step",
        "pending",
        "- pending:",
        "not done.",
        "incomplete",
        "INCOMPLETE",
        "unfinished",
        "Unfinished.",
        "x\npending\ny",
        "épending",
        "pendingé",
        "é pending",
        "need toé",
        "\u212a pending",
        "\u017f pending",
        "ST\u0130LL PENDING",
    ],
)
def test_s_compact_1_keywords_match(text: str) -> None:
    assert detect_incomplete_task(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "Investigated the issue, then ran the tests. They should pass; next, documented the "
        "result. All requested work is complete.",
        "",
        "then",
        "should",
        "next",
        "next steps",
        "nextstep",
        "next-step",
        "next_step",
        "next \u017ftep",
        "need  to",
        "need\nto",
        "need\u00a0to",
        "waiting\tfor",
        "waiting form",
        "the need tomorrow",
        "notdone",
        "pendıng",
        "pend\u0130ng",
        "PEND\u0130NG",
        "\u0130NCOMPLETE",
        "\uff50ending",
        "_pending",
        "pending_",
        "2pending",
        "pending2",
        "pendingly",
        "apending",
        "incompleteness",
        "un-finished",
        "n\u00f3tdone",
        "\u0144eed to",
    ],
)
def test_s_compact_1_non_matches(text: str) -> None:
    assert detect_incomplete_task(text) is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
        (None, "Cannot read properties of null (reading 'toLowerCase')"),
        (5, "handoffText.toLowerCase is not a function"),
        (True, "handoffText.toLowerCase is not a function"),
        ({}, "handoffText.toLowerCase is not a function"),
        ([], "handoffText.toLowerCase is not a function"),
    ],
)
def test_s_compact_1_non_string_raises(value: object, message: str) -> None:
    with pytest.raises(JsTypeError) as info:
        detect_incomplete_task(value)
    assert (info.value.kind, info.value.message) == ("TypeError", message)


# --- S-COMPACT-2 / B-12 --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "handoff", "action"),
    [
        (
            Rules(consolidate_on_compact=True, auto_resume_after_threshold=True),
            "pending",
            "consolidate",
        ),
        (Rules(consolidate_on_compact=True), "", "consolidate"),
        (Rules(consolidate_on_compact=True), 5, "consolidate"),
        (Rules(auto_resume_after_threshold=True), "", "continue"),
        (Rules(auto_resume_after_threshold=True), "All done.", "continue"),
        (Rules(auto_resume_after_threshold=True), {"x": 1}, "continue"),
        (Rules(), "## T (manual)\n\n- still need to deploy", "continue"),
        (Rules(), "## T (manual)\n\n- everything finished", "none"),
        (Rules(), "", "none"),
        (Rules(), None, "none"),
        (Rules(), 0, "none"),
        (Rules(), False, "none"),
        (Rules.from_js({"consolidateOnCompact": 1}), "", "consolidate"),
        (
            Rules.from_js({"consolidateOnCompact": "", "autoResumeAfterThreshold": "y"}),
            "",
            "continue",
        ),
        (
            Rules.from_js({"consolidateOnCompact": 0, "autoResumeAfterThreshold": []}),
            "",
            "continue",
        ),
    ],
)
def test_s_compact_2_decision(rules: Rules, handoff: object, action: str) -> None:
    assert decide_compaction_action(rules, handoff) == {"action": action}


@pytest.mark.parametrize("handoff", [5, True, {}, [], ["pending"]])
def test_s_compact_2_truthy_non_string_handoff_raises(handoff: object) -> None:
    with pytest.raises(JsTypeError, match="^handoffText.toLowerCase is not a function$"):
        decide_compaction_action(Rules(), handoff)


def test_s_compact_2_switches_from_configuration(env: StoreEnv) -> None:
    env.config('{"consolidate_on_compact": true, "auto_resume_after_threshold_compaction": true}')
    assert decide_compaction_action(env.store.parse_rules(), "") == {"action": "consolidate"}
    env.config('{"auto_resume_after_threshold_compaction": true}')
    assert decide_compaction_action(env.store.parse_rules(), "") == {"action": "continue"}
    env.config('{"auto_resume_after_threshold_compaction": 1, "consolidate_on_compact": "yes"}')
    assert decide_compaction_action(env.store.parse_rules(), "") == {"action": "none"}


def test_s_compact_2_b12_old_handoff_triggers_continue_with_keep_zero(env: StoreEnv) -> None:
    env.config('{"handoff_keep": 0}')
    env.put("agent/HANDOFF.md", "## 2026-08-01T00:00:00+00:00 (manual)\n\n- need to deploy\n")
    before = env.snapshot()
    session = Session(env.store)
    session.session_compact({"reason": "threshold", "compactionEntry": {"summary": "sum"}})
    assert session.sent == [SentMessage("Continue.")]
    assert env.snapshot() == before


def test_s_compact_2_b12_no_continue_without_unfinished_text(env: StoreEnv) -> None:
    env.config('{"handoff_keep": 0}')
    env.put("agent/HANDOFF.md", "## 2026-08-01T00:00:00+00:00 (manual)\n\n- all finished\n")
    session = Session(env.store)
    session.session_compact({"reason": "threshold", "compactionEntry": {"summary": "sum"}})
    assert session.sent == []


# --- S-COMPACT-3 / S-COMPACT-4 -------------------------------------------------------------

FORBIDDEN = ("3-5 sentence", 'call write_memory with topic "last-session-recap"')


def _check_common(prompt: str) -> None:
    assert "last-session-recap" in prompt
    assert "HANDOFF.md" in prompt
    assert "do not write a session recap" in prompt.lower()
    assert "write_memory" in prompt
    for word in ("topic", "content", "summary", "mode"):
        assert word in prompt
    assert "## Global Memory" in prompt
    assert "ephemeral" in prompt
    assert "session-specific" in prompt
    assert "code block" in prompt
    assert "file path" in prompt
    assert re.search(r"[Cc]ombine closely related", prompt)
    assert "Memory Rules" in prompt
    lowered = prompt.lower()
    for text in FORBIDDEN:
        assert text.lower() not in lowered


def _rules_markdown(env: StoreEnv, token: str) -> str:
    env.config(
        '{"always_persist": ["' + token + '"], "never_persist": ["secrets"], "always_ask": []}'
    )
    rules_md = render_rules_to_markdown(env.store.parse_rules())
    assert token in rules_md
    return rules_md


def test_s_compact_3_manual_prompt_required_and_forbidden_texts(env: StoreEnv) -> None:
    rules_md = _rules_markdown(env, "UNIQUE-TOKEN-7781")
    prompt = build_consolidation_prompt(rules_md)
    _check_common(prompt)
    assert "conversation history" in prompt
    assert "\n\n" + rules_md in prompt
    assert "UNIQUE-TOKEN-7781" in prompt


def test_s_compact_3_empty_rules_have_no_rules_block() -> None:
    prompt = build_consolidation_prompt("")
    _check_common(prompt)
    assert "\n\n\n" not in prompt
    assert "## Always persist" not in prompt


def test_s_compact_3_default_rules_rendered_verbatim(env: StoreEnv) -> None:
    rules_md = render_rules_to_markdown(env.store.parse_rules())
    assert "Any issue solved or fixed" in rules_md
    prompt = build_consolidation_prompt(rules_md)
    assert "\n\n" + rules_md in prompt
    _check_common(prompt)


def test_s_compact_4_compaction_prompt_contains_summary_and_rules(env: StoreEnv) -> None:
    rules_md = _rules_markdown(env, "RULE-TOKEN-5521")
    summary = "## Goal\nShip the release.\n\nSUMMARY-TOKEN-9034 $& $1 \\n {x}"
    prompt = build_compaction_consolidation_prompt(summary, rules_md)
    _check_common(prompt)
    assert summary in prompt
    assert "\n\n" + rules_md in prompt
    assert "RULE-TOKEN-5521" in prompt
    assert "summary" in prompt and "compaction" in prompt
    assert prompt.index(summary) < prompt.index(rules_md)


def test_s_compact_4_empty_rules(env: StoreEnv) -> None:
    prompt = build_compaction_consolidation_prompt("S-TOKEN", "")
    _check_common(prompt)
    assert "S-TOKEN" in prompt
    assert "## Always persist" not in prompt


def test_s_compact_4_prompts_reflect_current_rules(env: StoreEnv) -> None:
    first = _rules_markdown(env, "FIRST-RULE")
    second = _rules_markdown(env, "SECOND-RULE")
    assert "FIRST-RULE" in build_compaction_consolidation_prompt("s", first)
    prompt = build_compaction_consolidation_prompt("s", second)
    assert "SECOND-RULE" in prompt and "FIRST-RULE" not in prompt
    assert "SECOND-RULE" in build_consolidation_prompt(second)
