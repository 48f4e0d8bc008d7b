"""``pin_memory`` (S-PIN-1..5) and A-1, A-6, B-10, B-14 as pin sees them.

Expected strings and files were checked against the JS core 0.3.9 on the same inputs.
"""

from __future__ import annotations

import os
import time

import pytest

from memconform.reference.errors import JsTypeError
from memconform.reference.lock import LOCK_BUSY_MESSAGE
from memconform.reference.text import UNDEFINED
from tests.conftest import StoreEnv
from tests.support import LOCAL, SHARED, RecordingFs, live_token, put_memory, store_with

INDEX = (
    "# Memory Index\n\n"
    "- [Redis Commands](redis-commands.md) 2026-08-01 -- r\n"
    "- [Zeta One](zeta-one.md) 2026-08-01 -- z1\n"
    "- [Zeta Two](zeta-two.md) 2026-08-01 -- z2\n"
    "- [Flag](flag.md) 2026-08-01 -- use [pin] flag\n"
)
REDIS = "- [Redis Commands](redis-commands.md) 2026-08-01 -- r"
REDIS_PINNED = "- [Redis Commands](redis-commands.md) [pin] 2026-08-01 -- r"


def seed(env: StoreEnv, base: str = LOCAL, index: str = INDEX) -> None:
    names = ("redis-commands.md", "zeta-one.md", "zeta-two.md", "flag.md")
    put_memory(env, base, index, {name: f"body of {name}\n" for name in names})
    env.store.parse_rules()


def pinned_text(verb: str, name: str, before: str, after: str) -> str:
    return f'{verb} "{name}".\nBefore: {before}\n After: {after}'


# --- S-PIN-1 prologue ------------------------------------------------------------------


def test_s_pin_1_no_index_not_found_ambiguous(env: StoreEnv) -> None:
    s = env.store
    assert s.execute_pin_memory(topic="x", pin=True) == "No memory index found."
    assert os.path.isdir(env.local) and os.listdir(env.local) == []
    seed(env)
    before = env.snapshot()
    assert s.execute_pin_memory(topic="Does Not Exist", pin=True) == (
        'No entry found matching "Does Not Exist".'
    )
    assert s.execute_pin_memory(topic="zeta", pin=True) == (
        'Multiple entries match "zeta", be more specific: Zeta One, Zeta Two'
    )
    assert env.snapshot() == before


def test_s_pin_1_busy_lock(env: StoreEnv) -> None:
    seed(env)
    env.put(LOCAL + ".lock", live_token("live"))
    before = env.snapshot()
    start = time.monotonic()
    assert env.store.execute_pin_memory(topic="Redis", pin=True) == LOCK_BUSY_MESSAGE
    assert 0.4 <= time.monotonic() - start < 3.0
    assert env.snapshot() == before


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
        (None, "Cannot read properties of null (reading 'toLowerCase')"),
        (["a"], "search.toLowerCase is not a function"),
    ],
)
def test_s_pin_1_non_string_topic_raises_type_error(
    env: StoreEnv, topic: object, message: str
) -> None:
    seed(env)
    before = env.snapshot()
    with pytest.raises(JsTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        env.store.execute_pin_memory(topic=topic, pin=True)
    assert env.snapshot() == before


def test_s_pin_1_exact_match_resolves_ambiguity(env: StoreEnv) -> None:
    seed(env)
    env.store.execute_write_memory(topic="Zeta", content="c", summary="zz")
    out = env.store.execute_pin_memory(topic="Zeta", pin=True)
    assert out.startswith('Pinned "Zeta".\nBefore: - [Zeta](zeta.md) 2026-08-07T01:02:50+00:00')


# --- S-PIN-2 already in state ----------------------------------------------------------


def test_s_pin_2_already_pinned_and_unpinned(env: StoreEnv) -> None:
    seed(env)
    s = env.store
    s.execute_pin_memory(topic="Redis", pin=True)
    before = env.snapshot()
    assert s.execute_pin_memory(topic="redis commands", pin=True) == (
        '"Redis Commands" is already pinned.'
    )
    assert s.execute_pin_memory(topic="Zeta One", pin=False) == '"Zeta One" is already unpinned.'
    assert env.snapshot() == before


def test_s_pin_2_a1_pin_token_in_summary_counts_as_pinned(env: StoreEnv) -> None:
    seed(env)
    before = env.snapshot()
    assert env.store.execute_pin_memory(topic="Flag", pin=True) == '"Flag" is already pinned.'
    assert env.snapshot() == before


def test_s_pin_2_non_boolean_pin_always_proceeds(env: StoreEnv) -> None:
    seed(env)
    s = env.store
    assert s.execute_pin_memory(topic="Redis", pin="yes") == pinned_text(
        "Pinned", "Redis Commands", REDIS, REDIS_PINNED
    )
    double = "- [Redis Commands](redis-commands.md) [pin] [pin] 2026-08-01 -- r"
    assert s.execute_pin_memory(topic="Redis", pin=1) == pinned_text(
        "Pinned", "Redis Commands", REDIS_PINNED, double
    )
    assert s.execute_pin_memory(topic="Redis", pin=0) == pinned_text(
        "Unpinned", "Redis Commands", double, REDIS_PINNED
    )
    assert s.execute_pin_memory(topic="Redis") == pinned_text(
        "Unpinned", "Redis Commands", REDIS_PINNED, REDIS
    )
    # absent pin on an unpinned line still proceeds and rewrites the index
    assert s.execute_pin_memory(topic="Redis", pin=None) == pinned_text(
        "Unpinned", "Redis Commands", REDIS, REDIS
    )
    assert env.read(LOCAL + "MEMORY.md") == INDEX


# --- S-PIN-3 text operations -----------------------------------------------------------


def test_s_pin_3_pin_after_link_then_unpin(env: StoreEnv) -> None:
    seed(env)
    s = env.store
    assert s.execute_pin_memory(topic="Redis Commands", pin=True) == pinned_text(
        "Pinned", "Redis Commands", REDIS, REDIS_PINNED
    )
    assert env.read(LOCAL + "MEMORY.md") == INDEX.replace(REDIS, REDIS_PINNED)
    assert s.execute_pin_memory(topic="Redis Commands", pin=False) == pinned_text(
        "Unpinned", "Redis Commands", REDIS_PINNED, REDIS
    )
    assert env.read(LOCAL + "MEMORY.md") == INDEX


def test_s_pin_3_inserted_after_first_link_group(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [X](x.md) 2026-08-01 -- see [y](y.md)\n  -\u00a0[Y](y.md)")
    env.put(LOCAL + "x.md", "x")
    env.put(LOCAL + "y.md", "y")
    s = env.store
    assert s.execute_pin_memory(topic="X", pin=True) == pinned_text(
        "Pinned",
        "X",
        "- [X](x.md) 2026-08-01 -- see [y](y.md)",
        "- [X](x.md) [pin] 2026-08-01 -- see [y](y.md)",
    )
    assert s.execute_pin_memory(topic="Y", pin=True) == pinned_text(
        "Pinned", "Y", "  -\u00a0[Y](y.md)", "  -\u00a0[Y](y.md) [pin]"
    )
    assert env.read(LOCAL + "MEMORY.md") == (
        "- [X](x.md) [pin] 2026-08-01 -- see [y](y.md)\n  -\u00a0[Y](y.md) [pin]"
    )


def test_s_pin_3_unpin_removes_first_occurrence_anywhere(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "- [a [pin](x.md) 2026-08-01 -- s\n- [B](b.md)[pin] 2026-08-01 -- s\n",
    )
    env.put(LOCAL + "x.md", "x")
    env.put(LOCAL + "b.md", "b")
    s = env.store
    assert s.execute_pin_memory(topic="a [pin", pin=False) == pinned_text(
        "Unpinned", "a [pin", "- [a [pin](x.md) 2026-08-01 -- s", "- [a(x.md) 2026-08-01 -- s"
    )
    b_line = "- [B](b.md)[pin] 2026-08-01 -- s"
    assert s.execute_pin_memory(topic="B", pin=False) == pinned_text(
        "Unpinned", "B", b_line, b_line
    )
    assert env.read(LOCAL + "MEMORY.md") == f"- [a(x.md) 2026-08-01 -- s\n{b_line}\n"


def test_s_pin_3_a1_unpin_strips_token_from_summary(env: StoreEnv) -> None:
    seed(env)
    assert env.store.execute_pin_memory(topic="Flag", pin=False) == pinned_text(
        "Unpinned",
        "Flag",
        "- [Flag](flag.md) 2026-08-01 -- use [pin] flag",
        "- [Flag](flag.md) 2026-08-01 -- use flag",
    )


# --- S-PIN-4 maintenance and result ----------------------------------------------------


def test_s_pin_4_maintains_and_reports_maintained_line(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n\t- [Old](old.md) 2020-01-01 -- o\n- [Orph](orph.md) 2026-01-01 -- x\n"
        "- [Old v0](old.md) 2019-01-01 -- o0\n",
    )
    env.put(LOCAL + "old.md", "o")
    s = env.store
    assert s.execute_pin_memory(topic="old", pin=True) == pinned_text(
        "Pinned",
        "Old",
        "\t- [Old](old.md) 2020-01-01 -- o",
        "\t- [Old](old.md) [pin] 2020-01-01 -- o",
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n\t- [Old](old.md) [pin] 2020-01-01 -- o\n"
    # unpinned again: the stale flag is stamped by the same maintenance
    assert s.execute_pin_memory(topic="old", pin=False) == pinned_text(
        "Unpinned",
        "Old",
        "\t- [Old](old.md) [pin] 2020-01-01 -- o",
        "\t- [Old](old.md) 2020-01-01 [stale?] -- o",
    )


def test_s_pin_4_a6_orphan_reports_line_at_same_index(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# Memory Index\n\n- [Orph](orph.md) 2026-01-01 -- a\n")
    assert env.store.execute_pin_memory(topic="Orph", pin=True) == (
        'Pinned "Orph".\nBefore: - [Orph](orph.md) 2026-01-01 -- a\n After: '
    )
    assert env.read(LOCAL + "MEMORY.md") == "# Memory Index\n\n"


def test_s_pin_4_a6_orphan_reports_unrelated_line(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# Memory Index\n\n- [Orph](orph.md) 2026-01-01 -- a\n- [K](k.md) 2026-08-01 -- k",
    )
    env.put(LOCAL + "k.md", "k")
    assert env.store.execute_pin_memory(topic="Orph", pin=True) == (
        'Pinned "Orph".\nBefore: - [Orph](orph.md) 2026-01-01 -- a\n After: - [K](k.md) 2026-08-01 -- k'
    )
    assert env.read(LOCAL + "MEMORY.md") == "# Memory Index\n\n- [K](k.md) 2026-08-01 -- k"


def test_s_pin_4_a6_orphan_past_end_renders_undefined(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [Orph](orph.md) 2026-01-01 -- a")
    assert env.store.execute_pin_memory(topic="Orph", pin=True) == (
        'Pinned "Orph".\nBefore: - [Orph](orph.md) 2026-01-01 -- a\n After: undefined'
    )
    assert env.read(LOCAL + "MEMORY.md") == ""


def test_s_pin_4_b14_filename_query_hits_earlier_name(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n- [b.md](a.md) 2026-08-01 -- a\n- [B](b.md) 2026-08-01 -- b\n",
    )
    env.put(LOCAL + "a.md", "a")
    env.put(LOCAL + "b.md", "b")
    assert env.store.execute_pin_memory(topic="b.md", pin=True) == pinned_text(
        "Pinned",
        "b.md",
        "- [b.md](a.md) 2026-08-01 -- a",
        "- [b.md](a.md) [pin] 2026-08-01 -- a",
    )


def test_s_pin_4_b10_empty_topic_selects_single_entry(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [Only](only.md) 2026-08-01 -- o\n")
    env.put(LOCAL + "only.md", "o")
    assert env.store.execute_pin_memory(topic="", pin=True) == pinned_text(
        "Pinned",
        "Only",
        "- [Only](only.md) 2026-08-01 -- o",
        "- [Only](only.md) [pin] 2026-08-01 -- o",
    )


def test_s_pin_4_crlf_entry_rerendered_without_cr(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\r\n\r\n- [A](a.md) 2026-08-01 -- a\r\n")
    env.put(LOCAL + "a.md", "a")
    assert env.store.execute_pin_memory(topic="A", pin=True) == pinned_text(
        "Pinned", "A", "- [A](a.md) 2026-08-01 -- a\r", "- [A](a.md) [pin] 2026-08-01 -- a"
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\r\n\r\n- [A](a.md) [pin] 2026-08-01 -- a\n"


# --- S-PIN-5 footprint -----------------------------------------------------------------


def test_s_pin_5_topic_files_and_removal_list_untouched(env: StoreEnv) -> None:
    env.shared_mode()
    seed(env, SHARED)
    env.put(SHARED + ".ocl-removed", "redis-commands.md\njunk\n")
    env.store.get_memory_dir()
    before = env.snapshot()
    fs = RecordingFs()
    store = store_with(env, fs)
    store.execute_pin_memory(topic="Redis", pin=True)
    store.execute_pin_memory(topic="Redis", pin=False)
    assert not [p for _, p in fs.paths() if ".ocl-removed" in p]
    topics = {f"{env.shared}/{n}" for n in ("redis-commands.md", "zeta-one.md", "flag.md")}
    assert [(op, p) for op, p in fs.paths() if p in topics and op != "lstat"] == []
    after = env.snapshot()
    assert after == before  # pin then unpin restores the index bytes; nothing else changed
