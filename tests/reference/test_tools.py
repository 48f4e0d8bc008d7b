"""S-TOOLS-1..14 (+ B-14, B-16): the three tools and the ``/memory`` command.

The command runs against a scripted fake UI that records every notify/confirm/send call and
answers browse/detail/confirm from a script (an exhausted script fails the test).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from memconform.reference.compaction import build_consolidation_prompt
from memconform.reference.config import render_rules_to_markdown
from memconform.reference.errors import JsError
from memconform.reference.tools import (
    COMMAND_DESCRIPTION,
    COMMAND_NAME,
    TOOLS,
    dispatch,
    execute_tool,
    run_command,
    search,
    validate_params,
)
from tests.conftest import StoreEnv
from tests.support import IDX, TS

STORE_PREFIX = (
    "Store the following as a memory entry. Decide the topic name, summary, and whether to pin "
    "it, then call write_memory:\n\n"
)
REMOVE_HINT = "The index entry is removed. The topic file is preserved on disk."


@dataclass
class FakeUi:
    """A headless host UI: records calls, answers from a script."""

    idle: bool = True
    confirms: list[bool] = field(default_factory=list)
    browses: list[tuple[str, int] | None] = field(default_factory=list)
    details: list[str | None] = field(default_factory=list)
    log: list[tuple[Any, ...]] = field(default_factory=list)
    before_answer: Callable[[], None] | None = None

    def _hook(self) -> None:
        if self.before_answer is not None:
            hook, self.before_answer = self.before_answer, None
            hook()

    def notify(self, text: str, level: str) -> None:
        self.log.append(("notify", text, level))

    def confirm(self, title: str, hint: str, choices: tuple[str, str]) -> bool:
        self.log.append(("confirm", title, hint, choices))
        return self.confirms.pop(0)

    def send_user_message(self, text: str, follow_up: bool) -> None:
        self.log.append(("send", text, follow_up))

    def is_idle(self) -> bool:
        return self.idle

    def browse(self, title: str, items: list[tuple[str, str]]) -> tuple[str, int] | None:
        self.log.append(("browse", title, items))
        self._hook()
        return self.browses.pop(0)

    def detail(self, title: str, body: str, metadata: str, actions: list[str]) -> str | None:
        self.log.append(("detail", title, body, metadata, actions))
        self._hook()
        return self.details.pop(0)

    def calls(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.log if c[0] == kind]


def index(env: StoreEnv, *lines: str) -> None:
    """An index with the given entry lines; every named topic file exists."""
    env.config("{}")
    for line in lines:
        name = line.split("](", 1)[1].split(")", 1)[0]
        if not env.exists(f"agent/memory/{name}"):
            env.put(f"agent/memory/{name}", f"---\nname: x\n---\nbody of {name}\n")
    env.put(IDX, "# Memory Index\n\n" + "\n".join(lines) + "\n")


# --- S-TOOLS-1..5 ---------------------------------------------------------------------------


def test_s_tools_1_registered_names_and_labels() -> None:
    assert sorted(TOOLS) == ["pin_memory", "remove_memory", "write_memory"]
    assert {k: v["label"] for k, v in TOOLS.items()} == {
        "write_memory": "Write Memory",
        "remove_memory": "Remove Memory",
        "pin_memory": "Pin Memory",
    }
    assert COMMAND_NAME == "memory"
    assert validate_params("read_memory", {}) != []


def test_s_tools_2_write_schema_and_description() -> None:
    tool = TOOLS["write_memory"]
    params = tool["parameters"]
    assert params["required"] == ["topic", "content", "summary"]
    assert params["properties"] == {
        "topic": {"type": "string"},
        "content": {"type": "string"},
        "summary": {"type": "string"},
        "pin": {"type": "boolean"},
        "mode": {"type": "string", "enum": ["append", "replace"]},
    }
    desc = tool["description"].lower()
    for element in ("create", "append", "memory.md", "automatically", "write/edit"):
        assert element in desc
    snippet = tool["promptSnippet"].lower()
    for element in ("persist", "preferences", "configs", "fixes", "discoveries", "long-term"):
        assert element in snippet
    guidelines = tool["promptGuidelines"]
    assert len(guidelines) == 3
    assert all(w in guidelines[0].lower() for w in ("bug", "preference", "config", "command"))
    assert "## Memory Rules" in guidelines[1] and "when in doubt, persist" in guidelines[1]
    assert 'mode: "replace"' in guidelines[2] and "append" in guidelines[2]


@pytest.mark.parametrize(
    ("params", "valid"),
    [
        ({"topic": "T", "content": "c", "summary": "s"}, True),
        ({"topic": "T", "content": "c", "summary": "s", "pin": True, "mode": "replace"}, True),
        ({"topic": "T", "content": "c"}, False),
        ({"topic": "T", "summary": "s"}, False),
        ({"content": "c", "summary": "s"}, False),
        ({"topic": 5, "content": "c", "summary": "s"}, False),
        ({"topic": "T", "content": "c", "summary": "s", "pin": "yes"}, False),
        ({"topic": "T", "content": "c", "summary": "s", "mode": "overwrite"}, False),
        ("not an object", False),
    ],
)
def test_s_tools_2_write_validation(env: StoreEnv, params: Any, valid: bool) -> None:
    env.config("{}")
    assert (validate_params("write_memory", params) == []) is valid
    if not valid:
        before = env.snapshot()
        with pytest.raises(ValueError):
            execute_tool(env.store, "write_memory", params)
        assert env.snapshot() == before


def test_s_tools_2_write_executes_with_defaults(env: StoreEnv) -> None:
    env.config("{}")
    result = execute_tool(
        env.store, "write_memory", {"topic": "PostgreSQL Setup", "content": "line1", "summary": "s"}
    )
    assert result == {
        "content": [
            {
                "type": "text",
                "text": 'Created memory topic "PostgreSQL Setup" (postgresql-setup.md).',
            }
        ],
        "details": {},
    }
    assert (
        env.read(IDX) == f"# Memory Index\n\n\n- [PostgreSQL Setup](postgresql-setup.md) {TS} -- s"
    )
    execute_tool(
        env.store, "write_memory", {"topic": "PostgreSQL Setup", "content": "line2", "summary": "s"}
    )
    body = env.read("agent/memory/postgresql-setup.md").split("\n---\n", 1)[1]
    assert body == "\nline1\n\n## 2026-08-07\n\nline2\n"  # default mode appends, no pin
    execute_tool(
        env.store,
        "write_memory",
        {
            "topic": "PostgreSQL Setup",
            "content": "line3",
            "summary": "s2",
            "mode": "replace",
            "pin": True,
        },
    )
    assert env.read("agent/memory/postgresql-setup.md").split("\n---\n", 1)[1] == "\nline3\n"
    assert "[pin]" in env.read(IDX)


def test_s_tools_3_remove_schema_and_execution(env: StoreEnv) -> None:
    tool = TOOLS["remove_memory"]
    assert tool["parameters"]["required"] == ["topic"]
    assert tool["parameters"]["properties"] == {"topic": {"type": "string"}}
    desc = tool["description"].lower()
    assert all(w in desc for w in ("remove", "partial", "pinned", "kept"))
    assert validate_params("remove_memory", {}) != []
    assert validate_params("remove_memory", {"topic": 3}) != []
    index(env, "- [Temp Notes](temp-notes.md) 2026-07-01 -- t")
    result = execute_tool(env.store, "remove_memory", {"topic": "temp"})
    assert result["content"][0]["text"] == (
        'Removed "Temp Notes" from the index. Topic file is preserved on disk.'
    )
    assert env.read(IDX) == "# Memory Index\n\n"
    assert env.exists("agent/memory/temp-notes.md")


def test_s_tools_4_pin_schema_and_execution(env: StoreEnv) -> None:
    tool = TOOLS["pin_memory"]
    assert tool["parameters"]["required"] == ["topic", "pin"]
    assert tool["parameters"]["properties"] == {
        "topic": {"type": "string"},
        "pin": {"type": "boolean"},
    }
    desc = tool["description"].lower()
    assert all(w in desc for w in ("pin", "unpin", "cleanup", "stale"))
    assert validate_params("pin_memory", {"topic": "x"}) != []
    assert validate_params("pin_memory", {"topic": "x", "pin": 1}) != []
    index(env, "- [Redis Commands](redis-commands.md) 2026-07-01 -- r")
    result = execute_tool(env.store, "pin_memory", {"topic": "Redis Commands", "pin": True})
    assert result == {
        "content": [
            {
                "type": "text",
                "text": 'Pinned "Redis Commands".\n'
                "Before: - [Redis Commands](redis-commands.md) 2026-07-01 -- r\n"
                " After: - [Redis Commands](redis-commands.md) [pin] 2026-07-01 -- r",
            }
        ],
        "details": {},
    }


def test_s_tools_5_result_shape_and_raised_errors_propagate(env: StoreEnv) -> None:
    env.config("{}")
    os.makedirs(env.local)
    os.mkfifo(os.path.join(env.local, "MEMORY.md"))
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        execute_tool(env.store, "write_memory", {"topic": "T", "content": "c", "summary": "s"})
    assert info.value.message == f"Unsafe non-regular file: {env.local}/MEMORY.md"
    assert env.snapshot() == before
    os.unlink(os.path.join(env.local, "MEMORY.md"))
    result = execute_tool(env.store, "remove_memory", {"topic": "x"})
    assert result == {
        "content": [{"type": "text", "text": "No memory index found."}],
        "details": {},
    }


# --- S-TOOLS-6 dispatch ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "verb", "arg"),
    [
        ("", "browse", ""),
        ("  \t ", "browse", ""),
        ("remove foo", "remove", "foo"),
        ("  REMOVE  Foo Bar  ", "remove", "Foo Bar"),
        ("Pin X", "pin", "X"),
        ("pin  x ", "pin", "x"),
        ("unpin Y", "unpin", "Y"),
        ("UnPin y", "unpin", "y"),
        ("search Needle", "search", "Needle"),
        ("remove pin x", "remove", "pin x"),
        ("consolidate", "consolidate", ""),
        ("  consolidate  ", "consolidate", ""),
        ("remove", "store", "remove"),
        ("search", "store", "search"),
        ("removefoo", "store", "removefoo"),
        ("pinned stuff", "store", "pinned stuff"),
        ("consolidate now", "store", "consolidate now"),
        ("remove\tfoo", "store", "remove\tfoo"),
        ("  Remember THIS  ", "store", "Remember THIS"),
    ],
)
def test_s_tools_6_dispatch(args: str, verb: str, arg: str) -> None:
    d = dispatch(args)
    assert (d.verb, d.arg) == (verb, arg)


def test_s_tools_6_remove_without_argument_is_stored_as_text(env: StoreEnv) -> None:
    index(env, "- [Remove](remove.md) 2026-07-01 -- r")
    before = env.snapshot()
    ui = FakeUi()
    run_command(env.store, ui, "  remove ")
    assert ui.log == [("send", STORE_PREFIX + "remove", False)]
    assert env.snapshot() == before


# --- S-TOOLS-7 browser entry -----------------------------------------------------------------


def test_s_tools_7_empty_index_notifies(env: StoreEnv) -> None:
    env.config("{}")
    ui = FakeUi()
    run_command(env.store, ui, "")
    assert ui.log == [
        ("notify", "Memory index is empty. Use /memory <text> to store something.", "info")
    ]
    assert not env.exists(IDX)


def test_s_tools_7_browser_items(env: StoreEnv) -> None:
    index(
        env,
        "- [Alpha](alpha.md) [pin] 2026-07-01 [stale?] -- a",
        "- [Beta](beta.md) -- no date",
        "- [Gamma](gamma.md) 2025-02-03T04:05:06+01:00 -- g",
    )
    ui = FakeUi(browses=[None])
    run_command(env.store, ui, "")
    assert ui.log == [
        (
            "browse",
            "Memory",
            [
                ("Alpha", "2026-07-01 · pinned · stale"),
                ("Beta", "—"),
                ("Gamma", "2025-02-03T04:05:06+01:00"),
            ],
        )
    ]


# --- S-TOOLS-8 remove ------------------------------------------------------------------------


def test_s_tools_8_remove_confirmed(env: StoreEnv) -> None:
    index(env, "- [Temp Notes](temp-notes.md) 2026-07-01 -- t")
    ui = FakeUi(confirms=[True])
    run_command(env.store, ui, "remove Temp Notes")
    assert ui.log == [
        ("confirm", 'Remove "Temp Notes"?', REMOVE_HINT, ("Cancel", "Yes, remove")),
        ("notify", 'Removed "Temp Notes" from the index. Topic file is preserved on disk.', "info"),
    ]
    assert "temp-notes.md" not in env.read(IDX)
    assert env.exists("agent/memory/temp-notes.md")


def test_s_tools_8_cancel_or_dismiss_changes_nothing(env: StoreEnv) -> None:
    index(env, "- [Temp Notes](temp-notes.md) 2026-07-01 -- t")
    before = env.snapshot()
    ui = FakeUi(confirms=[False])
    run_command(env.store, ui, "remove temp")
    assert ui.log == [("confirm", 'Remove "temp"?', REMOVE_HINT, ("Cancel", "Yes, remove"))]
    assert env.snapshot() == before


def test_s_tools_8_severity_warning_iff_result_mentions_pinned(env: StoreEnv) -> None:
    index(
        env,
        "- [Keep](keep.md) [pin] 2026-07-01 -- k",
        "- [Unpinned Stuff](unpinned-stuff.md) 2026-07-01 -- u",
    )
    ui = FakeUi(confirms=[True, True, True])
    run_command(env.store, ui, "remove keep")
    run_command(env.store, ui, "remove nothing-like-this")
    run_command(env.store, ui, "remove Unpinned Stuff")
    assert ui.calls("notify") == [
        (
            "notify",
            'Cannot remove "Keep" — it is pinned. Unpin it first with: /memory unpin keep',
            "warning",
        ),
        ("notify", 'No entry found matching "nothing-like-this".', "info"),
        # the literal rule: the lowercased result contains "pinned" (inside the name)
        (
            "notify",
            'Removed "Unpinned Stuff" from the index. Topic file is preserved on disk.',
            "warning",
        ),
    ]


# --- S-TOOLS-9 pin / unpin -------------------------------------------------------------------


def test_s_tools_9_pin_and_unpin_notify_info(env: StoreEnv) -> None:
    index(env, "- [Redis Commands](redis-commands.md) 2026-07-01 -- r")
    ui = FakeUi()
    run_command(env.store, ui, "pin redis")
    run_command(env.store, ui, "PIN redis")
    run_command(env.store, ui, "unpin Redis Commands")
    line = "- [Redis Commands](redis-commands.md) 2026-07-01 -- r"
    pinned = "- [Redis Commands](redis-commands.md) [pin] 2026-07-01 -- r"
    assert ui.log == [
        ("notify", f'Pinned "Redis Commands".\nBefore: {line}\n After: {pinned}', "info"),
        ("notify", '"Redis Commands" is already pinned.', "info"),
        ("notify", f'Unpinned "Redis Commands".\nBefore: {pinned}\n After: {line}', "info"),
    ]
    assert env.read(IDX) == f"# Memory Index\n\n{line}\n"


# --- S-TOOLS-10 search (+ B-16) ----------------------------------------------------------------


def test_s_tools_10_usage_and_no_matches(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a")
    ui = FakeUi()
    search(env.store, ui, "")
    run_command(env.store, ui, "search Zzz Nothing")
    assert ui.log == [
        ("notify", "Usage: /memory search <query>", "info"),
        ("notify", 'No matches for "Zzz Nothing"', "info"),
    ]


def test_s_tools_10_titles_singular_and_plural(env: StoreEnv) -> None:
    index(
        env,
        "- [Alpha One](alpha-one.md) 2026-07-01 -- first",
        "- [Alpha Two](alpha-two.md) 2026-07-02 -- second",
        "- [Beta](beta.md) 2026-07-03 -- b",
    )
    ui = FakeUi(browses=[None, None])
    run_command(env.store, ui, "search ALPHA")
    run_command(env.store, ui, "search beta")
    assert ui.calls("browse") == [
        (
            "browse",
            "Search: ALPHA  (2 matches)",
            [("Alpha One", "2026-07-01"), ("Alpha Two", "2026-07-02")],
        ),
        ("browse", "Search: beta  (1 match)", [("Beta", "2026-07-03")]),
    ]


def test_s_tools_10_b16_unindexed_body_matches_not_displayed(env: StoreEnv) -> None:
    index(env, "- [Indexed](indexed.md) 2026-07-01 -- i")
    env.put("agent/memory/indexed.md", "body has NEEDLE\n")
    env.put("agent/memory/orphan.md", "orphan has NEEDLE\n")
    found = [(h.filename, h.match_type) for h in env.store.search_memory("needle")]
    assert found == [("indexed.md", "body"), ("orphan.md", "body")]
    ui = FakeUi(browses=[None])
    run_command(env.store, ui, "search needle")
    assert ui.log == [("browse", "Search: needle  (1 match)", [("Indexed", "2026-07-01")])]
    # only unindexed hits: nothing to display
    ui = FakeUi()
    run_command(env.store, ui, "search orphan has")
    assert ui.log == [("notify", "No entries to display.", "info")]


# --- S-TOOLS-11 / S-TOOLS-12 messages -------------------------------------------------------


@pytest.mark.parametrize("idle", [True, False])
def test_s_tools_11_consolidate(env: StoreEnv, idle: bool) -> None:
    env.config('{"always_persist": ["CustomRule"], "never_persist": [], "always_ask": []}')
    ui = FakeUi(idle=idle)
    before = env.snapshot()
    run_command(env.store, ui, "consolidate")
    prompt = build_consolidation_prompt("## Always persist\n- CustomRule")
    assert prompt == build_consolidation_prompt(render_rules_to_markdown(env.store.parse_rules()))
    assert "## Always persist\n- CustomRule" in prompt and "last-session-recap" in prompt
    if idle:
        assert ui.log == [("send", prompt, False)]
    else:
        assert ui.log == [
            ("notify", "Agent is busy — consolidation queued as follow-up.", "info"),
            ("send", prompt, True),
        ]
    assert env.snapshot() == before


@pytest.mark.parametrize("idle", [True, False])
def test_s_tools_12_store_text(env: StoreEnv, idle: bool) -> None:
    env.config("{}")
    ui = FakeUi(idle=idle)
    before = env.snapshot()
    run_command(env.store, ui, "  Remember THIS: port 5432  ")
    message = STORE_PREFIX + "Remember THIS: port 5432"
    if idle:
        assert ui.log == [("send", message, False)]
    else:
        assert ui.log == [
            ("notify", "Agent is busy — queued as follow-up.", "info"),
            ("send", message, True),
        ]
    assert env.snapshot() == before


# --- S-TOOLS-13 browser loop (+ B-14) --------------------------------------------------------


def test_s_tools_13_pin_toggle_by_filename_and_reread(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a", "- [Beta](beta.md) 2026-07-02 -- b")
    ui = FakeUi(browses=[("p", 1), ("p", 1), None])
    run_command(env.store, ui, "")
    beta = "- [Beta](beta.md) 2026-07-02 -- b"
    beta_pinned = "- [Beta](beta.md) [pin] 2026-07-02 -- b"
    assert ui.log == [
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02")]),
        ("notify", f'Pinned "Beta".\nBefore: {beta}\n After: {beta_pinned}', "info"),
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02 · pinned")]),
        ("notify", f'Unpinned "Beta".\nBefore: {beta_pinned}\n After: {beta}', "info"),
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02")]),
    ]


def test_s_tools_13_remove_key_confirms_with_name_and_removes_by_filename(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a", "- [Beta](beta.md) 2026-07-02 -- b")
    ui = FakeUi(browses=[("r", 0), ("r", 0), None], confirms=[False, True])
    run_command(env.store, ui, "")
    assert ui.log == [
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02")]),
        ("confirm", 'Remove "Alpha"?', REMOVE_HINT, ("Cancel", "Yes, remove")),
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02")]),
        ("confirm", 'Remove "Alpha"?', REMOVE_HINT, ("Cancel", "Yes, remove")),
        ("notify", 'Removed "Alpha" from the index. Topic file is preserved on disk.', "info"),
        ("browse", "Memory", [("Beta", "2026-07-02")]),
    ]


def test_s_tools_13_detail_view(env: StoreEnv) -> None:
    index(
        env,
        "- [one two three four five six seven](long.md) [pin] 2026-07-01 [stale?] -- sum",
        "- [Six words are exactly right here](short.md) -- s",
    )
    env.put("agent/memory/long.md", "---\na: 1\n---\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8")
    env.put("agent/memory/short.md", "l1\nl2\nl3\nl4\nl5\nl6")
    ui = FakeUi(browses=[("enter", 0), ("enter", 1), None], details=[None, None])
    run_command(env.store, ui, "")
    assert ui.calls("detail") == [
        (
            "detail",
            "one two three four five six…",
            "l1\nl2\nl3\nl4\nl5\nl6\n\n*… 2 more lines (long.md)*",
            "sum · 2026-07-01 · pinned · stale",
            ["unpin", "remove", "Back"],
        ),
        (
            "detail",
            "Six words are exactly right here",
            "l1\nl2\nl3\nl4\nl5\nl6",
            "s · —",
            ["pin", "remove", "Back"],
        ),
    ]
    assert len(ui.calls("browse")) == 3  # Back returns to the list


def test_s_tools_13_detail_actions(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a")
    ui = FakeUi(browses=[("enter", 0), ("enter", 0), None], details=["p", "r"], confirms=[True])
    run_command(env.store, ui, "")
    notes = [c[1].split("\n")[0] for c in ui.calls("notify")]
    assert notes == [
        'Pinned "Alpha".',
        'Cannot remove "Alpha" — it is pinned. Unpin it first with: /memory unpin alpha.md',
    ]
    assert [c[2] for c in ui.calls("notify")] == ["info", "warning"]
    assert "[pin]" in env.read(IDX)


def test_s_tools_13_vanished_entries_and_pending_actions_dropped(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a", "- [Beta](beta.md) 2026-07-02 -- b")
    gone_alpha = "# Memory Index\n\n- [Beta](beta.md) 2026-07-02 -- b\n"

    def drop_alpha() -> None:
        env.put(IDX, gone_alpha)

    ui = FakeUi(browses=[("p", 0), None], before_answer=drop_alpha)
    run_command(env.store, ui, "")
    assert ui.log == [
        ("browse", "Memory", [("Alpha", "2026-07-01"), ("Beta", "2026-07-02")]),
        ("browse", "Memory", [("Beta", "2026-07-02")]),
    ]
    assert env.read(IDX) == gone_alpha  # the pin was never applied

    def drop_all() -> None:
        env.put(IDX, "# Memory Index\n\n")

    ui = FakeUi(browses=[("r", 0)], before_answer=drop_all)
    run_command(env.store, ui, "")
    assert ui.log == [
        ("browse", "Memory", [("Beta", "2026-07-02")]),
        ("notify", "No entries to display.", "info"),
    ]


def test_s_tools_13_new_entries_not_added_to_open_browser(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a")
    ui = FakeUi(browses=[("p", 0), None])

    def write_gamma() -> None:
        env.store.execute_write_memory("Gamma", "g", "g")

    ui.before_answer = write_gamma
    run_command(env.store, ui, "")
    assert [c[2] for c in ui.calls("browse")] == [
        [("Alpha", "2026-07-01")],
        [("Alpha", "2026-07-01 · pinned")],
    ]


def test_s_tools_13_b14_filename_target_hits_earlier_name_match(env: StoreEnv) -> None:
    index(env, "- [b.md](a.md) 2026-07-01 -- named like a file", "- [B](b.md) 2026-07-02 -- b")
    ui = FakeUi(browses=[("p", 1), None])
    run_command(env.store, ui, "")
    assert ui.calls("notify")[0][1].startswith('Pinned "b.md".\nBefore: - [b.md](a.md)')
    assert env.read(IDX) == (
        "# Memory Index\n\n- [b.md](a.md) [pin] 2026-07-01 -- named like a file\n"
        "- [B](b.md) 2026-07-02 -- b\n"
    )


def test_s_tools_13_escape_exits_without_changes(env: StoreEnv) -> None:
    index(env, "- [Alpha](alpha.md) 2026-07-01 -- a")
    before = env.snapshot()
    ui = FakeUi(browses=[None])
    run_command(env.store, ui, "")
    assert len(ui.log) == 1
    assert env.snapshot() == before


# --- S-TOOLS-14 ------------------------------------------------------------------------------


def test_s_tools_14_command_description_lists_verbs() -> None:
    desc = COMMAND_DESCRIPTION.lower()
    for verb in ("index", "store", "consolidate", "pin", "unpin", "remove", "search"):
        assert verb in desc
