"""HANDOFF.md: scraping, pruning, compaction-summary replacement, reading (S-HANDOFF-1..11).

Expected bytes were taken from the JS core 0.3.9 run on the same inputs with a frozen Date;
A-3 tests assert the reference's design behaviour (safe reads, atomic rename) instead.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import pytest

from memconform.reference.errors import JsError, JsTypeError, NodeError
from memconform.reference.text import UNDEFINED
from tests.conftest import NOW_MS, StoreEnv, set_tz
from tests.support import FaultFs, RecordingFs, run_on_fresh_store, store_with, temps_in

T = "2026-08-07T01:02:50+00:00"
HANDOFF = "agent/HANDOFF.md"
LEGACY = "agent/memory/HANDOFF.md"


def say(text: object) -> dict[str, Any]:
    """One assistant message with a single text block."""
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def handoff_bytes(env: StoreEnv) -> bytes:
    return env.sandbox.path(HANDOFF).read_bytes()


# --- S-HANDOFF-1 ---------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 0.0, -0.0])
def test_s_handoff_1_keep_zero_disabled_without_fs_access(env: StoreEnv, keep: object) -> None:
    env.put(LEGACY, "## legacy\n")
    fs = RecordingFs()
    store = store_with(env, fs)
    before = env.snapshot()
    assert store.write_handoff([say("work")], "manual", keep) == "disabled"
    # Malformed messages are not even looked at.
    assert store.write_handoff(None, "manual", keep) == "disabled"
    assert fs.calls == []
    assert env.snapshot() == before


@pytest.mark.parametrize("keep", ["0", False, None, [0]])
def test_s_handoff_1_only_number_zero_disables(env: StoreEnv, keep: object) -> None:
    assert env.store.write_handoff([say("work")], "manual", keep) == "written"
    assert handoff_bytes(env) == f"## {T} (manual)\n\n- work\n\n".encode()


# --- S-HANDOFF-2 (and S-ERR-8 for writeHandoff) -------------------------------------------


def test_s_handoff_2_only_assistant_text_blocks(env: StoreEnv) -> None:
    messages = [
        {"role": "user", "content": "please do the work"},
        {"role": "assistant", "content": [{"type": "toolCall", "name": "bash"}]},
        {"role": "toolResult", "content": [{"type": "text", "text": "tool output"}]},
        say("actual work done"),
    ]
    assert env.store.write_handoff(messages, "manual") == "written"
    assert handoff_bytes(env) == f"## {T} (manual)\n\n- actual work done\n\n".encode()


def test_s_handoff_2_block_concatenation_and_tostring(env: StoreEnv) -> None:
    content = [
        {"type": "text", "text": "  a"},
        {"type": "thinking", "thinking": "hidden"},
        "a string block",
        5,
        {"type": "text"},
        {"type": "text", "text": None},
        {"type": "text", "text": 5},
        {"type": "text", "text": {"a": 1}},
        {"type": "text", "text": [1, 2]},
        {"type": "text", "text": True},
        {"type": "Text", "text": "wrong case"},
        {"type": "text", "text": " b  "},
    ]
    messages = [{"role": "assistant", "content": content}]
    assert env.store.write_handoff(messages, "m") == "written"
    assert handoff_bytes(env) == f"## {T} (m)\n\n- a5[object Object]1,2true b\n\n".encode()


def test_s_handoff_2_role_must_be_exactly_assistant(env: StoreEnv) -> None:
    messages = [
        1,
        "x",
        True,
        [say("nested")],
        {"role": "Assistant", "content": 5},
        {"role": "user", "content": None},
        say("ok"),
    ]
    assert env.store.write_handoff(messages, "m") == "written"
    assert handoff_bytes(env) == f"## {T} (m)\n\n- ok\n\n".encode()


@pytest.mark.parametrize(
    "messages",
    [
        [],
        "assistant",
        [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
        [say("   \n\t "), {"role": "assistant", "content": []}],
    ],
)
def test_s_handoff_2_no_texts_is_empty(env: StoreEnv, messages: object) -> None:
    env.put(LEGACY, "## legacy\n")
    before = env.snapshot()
    assert env.store.write_handoff(messages, "manual") == "empty"
    assert env.snapshot() == before


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (UNDEFINED, "messages is not iterable"),
        (None, "messages is not iterable"),
        (5, "messages is not iterable"),
        (True, "messages is not iterable"),
        ({"role": "assistant"}, "messages is not iterable"),
        ([None], "Cannot read properties of null (reading 'role')"),
        ([say("ok"), None], "Cannot read properties of null (reading 'role')"),
        ([{"role": "assistant"}], "Cannot read properties of undefined (reading 'filter')"),
        (
            [{"role": "assistant", "content": None}],
            "Cannot read properties of null (reading 'filter')",
        ),
        (
            [{"role": "assistant", "content": "plain string"}],
            "msg.content.filter is not a function",
        ),
        (
            [{"role": "assistant", "content": {"type": "text"}}],
            "msg.content.filter is not a function",
        ),
        ([{"role": "assistant", "content": 7}], "msg.content.filter is not a function"),
        (
            [{"role": "assistant", "content": [{"type": "text", "text": "a"}, None]}],
            "Cannot read properties of null (reading 'type')",
        ),
    ],
)
def test_s_handoff_2_s_err_8_type_errors(env: StoreEnv, messages: object, message: str) -> None:
    env.put(HANDOFF, "## old\n\n- kept\n")
    before = env.snapshot()
    with pytest.raises(JsTypeError) as info:
        env.store.write_handoff(messages, "threshold")
    assert info.value.kind == "TypeError"
    assert info.value.message == message
    assert env.snapshot() == before


def test_s_handoff_2_string_content_creates_no_file(env: StoreEnv) -> None:
    """Golden handoff/string-content-throws."""
    with pytest.raises(JsTypeError, match="^msg.content.filter is not a function$"):
        env.store.write_handoff([{"role": "assistant", "content": "plain string"}], "manual")
    assert not env.exists(HANDOFF)


# --- S-HANDOFF-3 ---------------------------------------------------------------------------


def test_s_handoff_3_spec_example(env: StoreEnv) -> None:
    text = "- **bold** item\n* star *it*\n```\n```\n# H1\n2 * 3 * 4"
    assert env.store.write_handoff([say(text)], "m") == "written"
    assert handoff_bytes(env) == f"## {T} (m)\n\n- bold item\n- star it\n- 2  3  4\n\n".encode()


def test_s_handoff_3_bullet_edge_cases(env: StoreEnv) -> None:
    lines = [
        "```",
        "code inside a fence is kept",
        "``` trailing fence",
        "####### seven",
        "#nospace",
        "##\tTab heading",
        "###### six",
        "1. numbered",
        "+ plus",
        "-x",
        "**bold**",
        "-   spaced",
        "*\u00a0nbsp",
        "-\u3000ideo",
        "***a***",
        "**a*b**",
        "*a**b*c*",
        "  - nested",
        "- - double",
        "-",
        "*",
        "x * y",
    ]
    assert env.store.write_handoff([say("\n".join(lines))], "m") == "written"
    bullets = [
        "- code inside a fence is kept",
        "- ####### seven",
        "- #nospace",
        "- 1. numbered",
        "- + plus",
        "- -x",
        "- bold",
        "- spaced",
        "- nbsp",
        "- ideo",
        "- *a*",
        "- ab**",
        "- abc",
        "- nested",
        "- - double",
    ]
    assert handoff_bytes(env).decode() == f"## {T} (m)\n\n" + "\n".join(bullets) + "\n\n"


def test_s_handoff_3_lone_markers_and_inner_asterisks(env: StoreEnv) -> None:
    text = "**a*b**\n*a**b*c*\n-\n*\nx * y\n-\t\u00a0 z"
    assert env.store.write_handoff([say(text)], "m") == "written"
    expected = "- ab**\n- abc\n- -\n- *\n- x * y\n- z"
    assert handoff_bytes(env).decode() == f"## {T} (m)\n\n{expected}\n\n"


def test_s_handoff_3_fifteen_bullets_from_last_three_texts(env: StoreEnv) -> None:
    messages = [
        say("dropped: fourth from last"),
        say("\n".join(f"l{i}" for i in range(10))),
        say("\n".join(f"m{i}" for i in range(10))),
        say("n1"),
    ]
    assert env.store.write_handoff(messages, "m") == "written"
    expected = [f"- l{i}" for i in range(10)] + [f"- m{i}" for i in range(5)]
    assert handoff_bytes(env).decode() == f"## {T} (m)\n\n" + "\n".join(expected) + "\n\n"


def test_s_handoff_3_last_three_texts_oldest_first(env: StoreEnv) -> None:
    messages = [say("t1"), say("t2"), {"role": "user", "content": "u"}, say("t3"), say("t4")]
    assert env.store.write_handoff(messages, "m") == "written"
    assert handoff_bytes(env) == f"## {T} (m)\n\n- t2\n- t3\n- t4\n\n".encode()


def test_s_handoff_3_only_fence_and_heading_is_empty(env: StoreEnv) -> None:
    assert env.store.write_handoff([say("```\n# Heading\n```")], "m") == "empty"
    assert not env.exists(HANDOFF)


def test_s_handoff_3_empty_texts_do_not_count_towards_last_three(env: StoreEnv) -> None:
    """Blank texts are dropped before the last three are chosen (S-HANDOFF-2 order)."""
    messages = [say("a"), say("b"), say("```"), say("  ")]
    assert env.store.write_handoff(messages, "m") == "written"
    assert handoff_bytes(env) == f"## {T} (m)\n\n- a\n- b\n\n".encode()


# --- S-HANDOFF-4 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "shown"),
    [
        (UNDEFINED, "undefined"),
        (None, "null"),
        (5, "5"),
        ({"x": 1}, "[object Object]"),
        ([1, [2, 3], None], "1,2,3,"),
        ("thres)hold (x", "thres)hold (x"),
    ],
)
def test_s_handoff_4_reason_verbatim_tostring(env: StoreEnv, reason: object, shown: str) -> None:
    assert env.store.write_handoff([say("a")], reason) == "written"
    assert handoff_bytes(env) == f"## {T} ({shown})\n\n- a\n\n".encode()


def test_s_handoff_4_local_timestamp_with_offset(env: StoreEnv) -> None:
    set_tz("Asia/Kolkata")
    store = env.new_store()
    assert store.write_handoff([say("a")], "manual") == "written"
    assert handoff_bytes(env) == b"## 2026-08-07T06:32:50+05:30 (manual)\n\n- a\n\n"


@pytest.mark.parametrize("op", ["write", "replace"])
def test_s_handoff_4_timestamp_read_before_legacy_migration(env: StoreEnv, op: str) -> None:
    env.put(LEGACY, "## legacy\n\nbody\n")
    fs = FaultFs()
    fs.hook("link", run=lambda _: env.clock.advance(3_600_000), nth=None)
    store = store_with(env, fs)
    if op == "write":
        assert store.write_handoff([say("a")], "m") == "written"
        expected = f"## legacy\n\nbody\n\n\n## {T} (m)\n\n- a\n\n"
    else:
        assert store.replace_latest_handoff_with_compaction_summary("S", "m") == "written"
        expected = f"## {T} Consolidation (m)\n\nS\n\n"
    assert ("link", env.agent + "/HANDOFF.md") in fs.paths()
    assert handoff_bytes(env).decode() == expected


# --- S-HANDOFF-5 / B-1 ---------------------------------------------------------------------


def test_s_handoff_5_spec_sequence_keep_3_b1_blank_lines_grow(env: StoreEnv) -> None:
    store = env.store
    assert store.write_handoff([say("a")], "manual", 3) == "written"
    assert handoff_bytes(env).decode() == f"## {T} (manual)\n\n- a\n\n"
    assert store.write_handoff([say("b")], "threshold", 3) == "written"
    assert handoff_bytes(env).decode() == (
        f"## {T} (manual)\n\n- a\n\n\n\n## {T} (threshold)\n\n- b\n\n"
    )
    assert store.write_handoff([say("c")], "x", 3) == "written"
    assert handoff_bytes(env).decode() == (
        f"## {T} (manual)\n\n- a\n\n\n\n\n## {T} (threshold)\n\n- b\n\n\n\n## {T} (x)\n\n- c\n\n"
    )
    assert store.write_handoff([say("d")], "y", 3) == "written"
    assert handoff_bytes(env).decode() == (
        f"## {T} (threshold)\n\n- b\n\n\n\n\n## {T} (x)\n\n- c\n\n\n\n## {T} (y)\n\n- d\n\n"
    )
    assert store.read_handoff() == f"## {T} (y)\n\n- d"


def test_s_handoff_5_keep_2_four_writes_leave_two(env: StoreEnv) -> None:
    for letter in "abcd":
        assert env.store.write_handoff([say(letter)], "manual", 2) == "written"
    assert handoff_bytes(env).decode() == (
        f"## {T} (manual)\n\n- c\n\n\n\n## {T} (manual)\n\n- d\n\n"
    )


ALL3 = f"## {T} (a)\n\n- a\n\n\n\n\n## {T} (b)\n\n- b\n\n\n\n## {T} (c)\n\n- c\n\n"
LAST2 = f"## {T} (b)\n\n- b\n\n\n\n## {T} (c)\n\n- c\n\n"
LAST1 = f"## {T} (c)\n\n- c\n\n"


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (3, ALL3),
        (UNDEFINED, ALL3),
        (100, ALL3),
        (0.5, ALL3),
        (None, ALL3),
        (False, ALL3),
        ("0", ALL3),
        ("abc", ALL3),
        (float("nan"), ALL3),
        (float("inf"), ALL3),
        ("1", LAST1),
        (True, LAST1),
        (1.9, LAST1),
        ("  2 ", LAST2),
        ("0x2", LAST2),
        ([2], LAST2),
        (2.5, LAST2),
        (-1, LAST2),
        (-1.5, LAST2),
        (-3, "\n"),
        (-5, "\n"),
        (float("-inf"), "\n"),
    ],
)
def test_s_handoff_5_keep_conversions(env: StoreEnv, keep: object, expected: str) -> None:
    store = env.store
    assert store.write_handoff([say("a")], "a", 3) == "written"
    assert store.write_handoff([say("b")], "b", 3) == "written"
    assert store.write_handoff([say("c")], "c", keep) == "written"
    assert handoff_bytes(env).decode() == expected


def test_s_handoff_5_existing_without_final_lf_gets_separator(env: StoreEnv) -> None:
    env.put(HANDOFF, "prelude text")
    assert env.store.write_handoff([say("a")], "m") == "written"
    assert handoff_bytes(env).decode() == f"prelude text\n\n\n## {T} (m)\n\n- a\n\n"


def test_s_handoff_5_existing_crlf_kept(env: StoreEnv) -> None:
    env.put(HANDOFF, "## old\r\n\r\n- x\r\n")
    assert env.store.write_handoff([say("a")], "m") == "written"
    assert handoff_bytes(env).decode() == f"## old\r\n\r\n- x\r\n\n\n## {T} (m)\n\n- a\n\n"


@pytest.mark.parametrize("existing", ["", "   \n\n", "\u00a0\ufeff\n"])
def test_s_handoff_5_blank_existing_dropped(env: StoreEnv, existing: str) -> None:
    env.put(HANDOFF, existing)
    assert env.store.write_handoff([say("a")], "m") == "written"
    assert handoff_bytes(env).decode() == f"## {T} (m)\n\n- a\n\n"


def test_s_handoff_5_invalid_utf8_and_bom(env: StoreEnv) -> None:
    env.put(HANDOFF, b"\xef\xbb\xbf## a\n\xff\xfe x\n")
    assert env.store.read_handoff() == "## a\n\ufffd\ufffd x"
    assert env.store.write_handoff([say("b")], "m") == "written"
    assert handoff_bytes(env) == (
        b"## a\n\xef\xbf\xbd\xef\xbf\xbd x\n\n\n## " + T.encode() + b" (m)\n\n- b\n\n"
    )


# --- S-HANDOFF-6 ---------------------------------------------------------------------------


def test_s_handoff_6_status_values(env: StoreEnv) -> None:
    store = env.store
    assert store.write_handoff([say("```")], "m") == "empty"
    assert store.write_handoff([say("x")], "m", 0) == "disabled"
    assert store.write_handoff([say("x")], "m") == "written"
    assert store.replace_latest_handoff_with_compaction_summary("s", "m", 0) == "disabled"
    assert store.replace_latest_handoff_with_compaction_summary("s", "m") == "written"
    assert store.replace_latest_handoff_with_compaction_summary("", "m") == "written"


# --- S-HANDOFF-7 ---------------------------------------------------------------------------


def test_s_handoff_7_demotes_embedded_headings(env: StoreEnv) -> None:
    store = env.store
    assert store.write_handoff([say("raw bullet")], "threshold") == "written"
    summary = "## Goal\ndo the thing\n## Done\nfinished part"
    assert store.replace_latest_handoff_with_compaction_summary(summary, "threshold") == "written"
    text = handoff_bytes(env).decode()
    assert text == (
        f"## {T} Consolidation (threshold)\n\n### Goal\ndo the thing\n### Done\nfinished part\n\n"
    )
    assert [ln for ln in text.split("\n") if ln.startswith("## ")] == [
        f"## {T} Consolidation (threshold)"
    ]


def test_s_handoff_7_demotion_at_every_line_start_only(env: StoreEnv) -> None:
    summary = "  ## a\r## b\u2028## c\u2029## d\n ## e\n##f\n## ## g\n##\u00a0h\n\u0085## i  "
    assert env.store.replace_latest_handoff_with_compaction_summary(summary, "r") == "written"
    body = "## a\r### b\u2028### c\u2029### d\n ## e\n##f\n### ## g\n##\u00a0h\n\u0085## i"
    assert handoff_bytes(env).decode() == f"## {T} Consolidation (r)\n\n{body}\n\n"


@pytest.mark.parametrize(
    ("summary", "body"),
    [
        (None, "null"),
        (UNDEFINED, "undefined"),
        (5, "5"),
        ([1, 2], "1,2"),
        ({"a": 1}, "[object Object]"),
        (True, "true"),
    ],
)
def test_s_handoff_7_summary_tostring(env: StoreEnv, summary: object, body: str) -> None:
    assert env.store.replace_latest_handoff_with_compaction_summary(summary, "r") == "written"
    assert handoff_bytes(env).decode() == f"## {T} Consolidation (r)\n\n{body}\n\n"


MARK = "\n\n<!-- summary truncated: compaction summary exceeds size limit -->"
HEAD = f"## {T} Consolidation (r)\n\n"


def test_s_handoff_7_oversized_summary_capped(env: StoreEnv) -> None:
    assert env.store.replace_latest_handoff_with_compaction_summary("x" * 20000, "r") == "written"
    data = handoff_bytes(env)
    assert len(data) < 14000
    assert data == (HEAD + "x" * 12288 + MARK + "\n\n").encode()


@pytest.mark.parametrize(
    ("summary", "body"),
    [
        ("  " + "a" * 12288 + "\n ", "a" * 12288),
        ("a" * 12289, "a" * 12288 + MARK),
        ("a" * 12287 + "\u00e9tail", "a" * 12287 + "\ufffd" + MARK),
        ("a" * 12286 + "\u20actail", "a" * 12286 + "\ufffd" + MARK),
        ("a" * 12287 + "\u20actail", "a" * 12287 + "\ufffd" + MARK),
        ("a" * 12286 + "\U0001f600tail", "a" * 12286 + "\ufffd" + MARK),
        ("a" * 12285 + "\U0001f600tail", "a" * 12285 + "\ufffd" + MARK),
        ("a" * 12284 + "\U0001f600tail", "a" * 12284 + "\U0001f600" + MARK),
        ("a" * 12286 + "\ud83d" + "b", "a" * 12286 + "\ufffd" + MARK),
        ("a" * 12285 + "\ud83d", "a" * 12285 + "\ufffd"),
    ],
)
def test_s_handoff_7_cap_is_12288_utf8_bytes(env: StoreEnv, summary: str, body: str) -> None:
    assert env.store.replace_latest_handoff_with_compaction_summary(summary, "r") == "written"
    assert handoff_bytes(env) == (HEAD + body + "\n\n").encode("utf-8", "surrogatepass")


def test_s_handoff_7_keep_zero_disabled_without_fs_access(env: StoreEnv) -> None:
    env.put(HANDOFF, "## a\n")
    fs = RecordingFs()
    store = store_with(env, fs)
    before = env.snapshot()
    assert store.replace_latest_handoff_with_compaction_summary("S", "r", 0) == "disabled"
    assert fs.calls == []
    assert env.snapshot() == before


# --- S-HANDOFF-8 / A-9 ---------------------------------------------------------------------


def test_s_handoff_8_raw_entry_replaced_by_one_summary(env: StoreEnv) -> None:
    store = env.store
    assert store.write_handoff([say("older")], "manual") == "written"
    assert store.write_handoff([say("raw bullet")], "threshold") == "written"
    assert store.replace_latest_handoff_with_compaction_summary("S", "threshold") == "written"
    assert handoff_bytes(env).decode() == (
        f"## {T} (manual)\n\n- older\n\n\n\n\n## {T} Consolidation (threshold)\n\nS\n\n"
    )
    assert "raw bullet" not in handoff_bytes(env).decode()


def test_s_handoff_8_cycles_with_keep_2_keep_two_newest(env: StoreEnv) -> None:
    store = env.store
    for i in range(4):
        assert store.write_handoff([say(f"raw{i}")], "threshold", 2) == "written"
        summary = f"sum{i}"
        assert store.replace_latest_handoff_with_compaction_summary(summary, "threshold", 2) == (
            "written"
        )
    assert handoff_bytes(env).decode() == (
        f"## {T} Consolidation (threshold)\n\nsum2\n\n\n\n\n"
        f"## {T} Consolidation (threshold)\n\nsum3\n\n"
    )


def test_s_handoff_8_a9_replaces_previous_handoff_without_raw_entry(env: StoreEnv) -> None:
    store = env.store
    assert store.write_handoff([say("A")], "manual", 3) == "written"
    # This compaction produced no raw entry; the summary still replaces entry A.
    assert store.write_handoff([say("```")], "threshold", 3) == "empty"
    assert store.replace_latest_handoff_with_compaction_summary("S", "threshold", 3) == "written"
    assert handoff_bytes(env).decode() == f"## {T} Consolidation (threshold)\n\nS\n\n"


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, f"{HEAD}S\n\n"),
        ("", f"{HEAD}S\n\n"),
        ("prelude", f"{HEAD}S\n\n"),
        ("prelude\n\n## a\nx", f"prelude\n\n\n{HEAD}S\n\n"),
        ("## a\r\n\r\n## b\r\n", f"## a\r\n\r\n\n{HEAD}S\n\n"),
    ],
)
def test_s_handoff_8_existing_text_not_normalised(
    env: StoreEnv, existing: str | None, expected: str
) -> None:
    if existing is not None:
        env.put(HANDOFF, existing)
    assert env.store.replace_latest_handoff_with_compaction_summary("S", "r") == "written"
    assert handoff_bytes(env).decode() == expected


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (-1, f"## b\n\n\n{HEAD}S\n\n"),
        ("2", f"## b\n\n\n{HEAD}S\n\n"),
        (1, f"{HEAD}S\n\n"),
        (None, f"## a\n\n\n## b\n\n\n{HEAD}S\n\n"),
        (-3, "\n"),
    ],
)
def test_s_handoff_8_keep_conversions(env: StoreEnv, keep: object, expected: str) -> None:
    env.put(HANDOFF, "## a\n\n## b\n\n## c\n")
    assert env.store.replace_latest_handoff_with_compaction_summary("S", "r", keep) == "written"
    assert handoff_bytes(env).decode() == expected


# --- S-HANDOFF-9 ---------------------------------------------------------------------------


def test_s_handoff_9_missing_file_reads_empty_and_creates_nothing(env: StoreEnv) -> None:
    before = env.snapshot()
    assert env.store.read_handoff() == ""
    assert env.snapshot() == before


def test_s_handoff_9_newest_section_only(env: StoreEnv) -> None:
    store = env.store
    store.write_handoff([say("first")], "manual")
    store.write_handoff([say("second")], "threshold")
    before = env.snapshot()
    result = store.read_handoff()
    assert result == f"## {T} (threshold)\n\n- second"
    assert "manual" not in result
    assert env.snapshot() == before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("  \n\n\u3000", ""),
        ("just prose\n", "just prose"),
        ("\n\n## a\n\nbody  \n\n", "## a\n\nbody"),
    ],
)
def test_s_handoff_9_trimmed_last_section(env: StoreEnv, text: str, expected: str) -> None:
    env.put(HANDOFF, text)
    assert env.store.read_handoff() == expected


# --- S-HANDOFF-10 --------------------------------------------------------------------------


def test_s_handoff_10_sections_start_after_cr_and_u2028(env: StoreEnv) -> None:
    env.put(HANDOFF, "pre\r## one\r- x\u2028## two\u2029## three\n")
    assert env.store.read_handoff() == "## three"
    assert env.store.write_handoff([say("a")], "m", 10) == "written"
    assert handoff_bytes(env).decode() == (
        f"pre\r\n## one\r- x\u2028\n## two\u2029\n## three\n\n\n## {T} (m)\n\n- a\n\n"
    )


def test_s_handoff_10_non_line_starts_do_not_cut(env: StoreEnv) -> None:
    env.put(HANDOFF, "### not a section\n##no\n ## indented\n## yes\nbody")
    assert env.store.read_handoff() == "## yes\nbody"
    env.put(HANDOFF, "## a\n##\u00a0b\n\f## c\n\u0085## d\n")
    assert env.store.read_handoff() == "## a\n##\u00a0b\n\f## c\n\u0085## d"


def test_s_handoff_10_blank_pieces_dropped_others_kept(env: StoreEnv) -> None:
    env.put(HANDOFF, "\u0085\n## a\n")  # U+0085 is not whitespace: the prelude survives
    assert env.store.write_handoff([say("b")], "m") == "written"
    assert handoff_bytes(env).decode() == f"\u0085\n\n## a\n\n\n## {T} (m)\n\n- b\n\n"


# --- S-HANDOFF-11 / A-3 --------------------------------------------------------------------


def test_s_handoff_11_pi_local_in_shared_mode(env: StoreEnv) -> None:
    env.shared_mode()
    assert env.store.write_handoff([say("a")], "m") == "written"
    assert env.store.replace_latest_handoff_with_compaction_summary("S", "m") == "written"
    assert env.exists(HANDOFF)
    assert not env.exists("home/.agents/memory/HANDOFF.md")
    assert not env.exists("home/.agents")


def test_s_handoff_11_unlocked(env: StoreEnv) -> None:
    token = f"{os.getpid()}\t{NOW_MS}\tco-tenant"
    env.put("agent/memory/.lock", token)
    env.put("home/.agents/memory/.lock", token)
    fs = RecordingFs()
    store = store_with(env, fs)
    assert store.write_handoff([say("a")], "m") == "written"
    assert store.replace_latest_handoff_with_compaction_summary("S", "m") == "written"
    assert store.read_handoff() == f"## {T} Consolidation (m)\n\nS"
    assert not any(path.endswith(".lock") for _, path in fs.paths())
    assert env.read("agent/memory/.lock") == token


def test_s_handoff_11_not_created_when_empty_or_disabled(env: StoreEnv) -> None:
    before = env.snapshot()
    assert env.store.write_handoff([say("# only a heading")], "m") == "empty"
    assert env.store.write_handoff([say("text")], "m", 0) == "disabled"
    assert env.store.replace_latest_handoff_with_compaction_summary("S", "m", 0) == "disabled"
    assert env.snapshot() == before


def test_s_handoff_11_a3_write_publishes_by_rename(env: StoreEnv) -> None:
    env.put(HANDOFF, "## old\n\n- kept\n")
    os.chmod(env.sandbox.path(HANDOFF), 0o644)
    old_link = env.sandbox.path("agent/old-link")
    os.link(env.sandbox.path(HANDOFF), old_link)
    old_ino = os.stat(old_link).st_ino
    assert env.store.write_handoff([say("new")], "m") == "written"
    st = os.lstat(env.sandbox.path(HANDOFF))
    assert st.st_ino != old_ino
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert old_link.read_bytes() == b"## old\n\n- kept\n"
    assert handoff_bytes(env).decode() == f"## old\n\n- kept\n\n\n## {T} (m)\n\n- new\n\n"
    assert temps_in(env.agent) == []


@pytest.mark.parametrize("op", ["write", "replace"])
def test_s_handoff_11_a3_failed_rename_keeps_old_file(env: StoreEnv, op: str) -> None:
    env.put(HANDOFF, "## old\n\n- kept\n")
    fs = FaultFs()
    fs.fail("rename", match=lambda p: p == env.agent + "/HANDOFF.md", err=errno.EIO, nth=None)
    store = store_with(env, fs)
    before = env.snapshot()
    with pytest.raises(NodeError) as info:
        if op == "write":
            store.write_handoff([say("new")], "m")
        else:
            store.replace_latest_handoff_with_compaction_summary("S", "m")
    assert info.value.code == "EIO"
    assert env.snapshot() == before


@pytest.mark.parametrize("op", ["read", "write", "replace"])
def test_s_handoff_11_a3_symlink_refused(env: StoreEnv, op: str) -> None:
    outside = env.put("home/outside.md", "## outside\n\nsecret\n")
    os.symlink(outside, env.sandbox.path(HANDOFF))
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        if op == "read":
            env.store.read_handoff()
        elif op == "write":
            env.store.write_handoff([say("new")], "m")
        else:
            env.store.replace_latest_handoff_with_compaction_summary("S", "m")
    assert info.value.kind == "Error"
    assert env.snapshot() == before


def test_s_handoff_11_a3_dangling_symlink_not_followed(env: StoreEnv) -> None:
    target = env.sandbox.path("home/created-through-link.md")
    os.symlink(target, env.sandbox.path(HANDOFF))
    before = env.snapshot()
    with pytest.raises(JsError, match="^Unsafe non-regular file: .*/agent/HANDOFF.md$"):
        env.store.write_handoff([say("new")], "m")
    assert not target.exists()
    assert env.snapshot() == before


def test_s_handoff_11_a3_directory_refused(env: StoreEnv) -> None:
    os.mkdir(env.sandbox.path(HANDOFF))
    with pytest.raises(JsError) as info:
        env.store.read_handoff()
    assert info.value.message == f"Unsafe non-regular file: {env.agent}/HANDOFF.md"


# Run by run_on_fresh_store in a fresh process, where `store`, `diags` and `describe` exist.
READ_HANDOFF_CHILD = (
    "try:\n"
    "    print(json.dumps({'ok': store.read_handoff()}))\n"
    "except Exception as e:\n"
    "    print(json.dumps({'err': describe(e)}))\n"
)


def test_s_handoff_11_a3_fifo_refused_without_blocking(env: StoreEnv) -> None:
    os.mkfifo(env.sandbox.path(HANDOFF))
    result = run_on_fresh_store(env, READ_HANDOFF_CHILD, timeout=10)
    assert result == {
        "err": {"kind": "Error", "message": f"Unsafe non-regular file: {env.agent}/HANDOFF.md"}
    }
    with pytest.raises(JsError):
        env.store.write_handoff([say("x")], "m")
    assert env.snapshot()[HANDOFF] == b"<fifo>"
