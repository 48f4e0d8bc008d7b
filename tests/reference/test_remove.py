"""``remove_memory`` (S-REMOVE-1..5) and A-1, A-5, B-10, B-11, B-14 as remove sees them.

Expected strings and files were checked against the JS core 0.3.9 on the same inputs.
"""

from __future__ import annotations

import errno
import os
import time

import pytest

from memconform.reference.errors import JsError, JsTypeError, NodeError
from memconform.reference.lock import LOCK_BUSY_MESSAGE
from memconform.reference.text import UNDEFINED
from tests.conftest import StoreEnv
from tests.support import (
    LOCAL,
    SHARED,
    FaultFs,
    RecordingFs,
    ends,
    live_token,
    put_memory,
    store_with,
)

INDEX = (
    "# Memory Index\n\n"
    "- [Redis Commands](redis-commands.md) 2026-08-01 -- r\n"
    "- [Zeta One](zeta-one.md) 2026-08-01 -- z1\n"
    "- [Zeta Two](zeta-two.md) 2026-08-01 -- z2\n"
    "- [Pinned](pinned.md) [pin] 2026-08-01 -- p\n"
    "- [Temp Notes](temp-notes.md) 2026-08-01 -- mentions Zeta and Redis\n"
)
FILES = ("redis-commands.md", "zeta-one.md", "zeta-two.md", "pinned.md", "temp-notes.md")


def seed(env: StoreEnv, base: str = LOCAL, index: str = INDEX) -> None:
    put_memory(env, base, index, {name: f"body of {name}\n" for name in FILES})
    env.store.parse_rules()  # bootstrap memory.jsonc before any snapshot


# --- S-REMOVE-1 prologue ---------------------------------------------------------------


def test_s_remove_1_no_index_creates_empty_directory(env: StoreEnv) -> None:
    assert env.store.execute_remove_memory(topic="x") == "No memory index found."
    assert os.path.isdir(env.local) and os.listdir(env.local) == []


@pytest.mark.parametrize("topic", [UNDEFINED, None, 5, ["a"]])
def test_s_remove_1_no_index_wins_over_bad_topic_type(env: StoreEnv, topic: object) -> None:
    assert env.store.execute_remove_memory(topic=topic) == "No memory index found."


def test_s_remove_1_dangling_index_symlink_counts_as_missing(env: StoreEnv) -> None:
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("nowhere.md"), env.sandbox.path(LOCAL + "MEMORY.md"))
    assert env.store.execute_remove_memory(topic="x") == "No memory index found."


def test_s_remove_1_busy_lock_returns_busy_message(env: StoreEnv) -> None:
    seed(env)
    env.put(LOCAL + ".lock", live_token("live"))
    before = env.snapshot()
    start = time.monotonic()
    assert env.store.execute_remove_memory(topic="Redis Commands") == LOCK_BUSY_MESSAGE
    assert 0.4 <= time.monotonic() - start < 3.0
    assert env.snapshot() == before


# --- S-REMOVE-2 lookup -----------------------------------------------------------------


def test_s_remove_2_not_found_and_ambiguous_change_nothing(env: StoreEnv) -> None:
    seed(env)
    before = env.snapshot()
    s = env.store
    assert s.execute_remove_memory(topic="Does Not Exist") == (
        'No entry found matching "Does Not Exist".'
    )
    assert s.execute_remove_memory(topic="zeta") == (
        'Multiple entries match "zeta", be more specific: Zeta One, Zeta Two'
    )
    assert s.execute_remove_memory(topic="e") == (
        'Multiple entries match "e", be more specific: '
        "Redis Commands, Zeta One, Zeta Two, Pinned, Temp Notes"
    )
    # summaries are never searched
    assert s.execute_remove_memory(topic="mentions") == 'No entry found matching "mentions".'
    assert env.snapshot() == before


def test_s_remove_2_exact_name_or_filename_beats_substring(env: StoreEnv) -> None:
    seed(env)
    s = env.store
    s.execute_write_memory(topic="Zeta", content="c", summary="zz")
    assert s.execute_remove_memory(topic="ZETA") == (
        'Removed "Zeta" from the index. Topic file is preserved on disk.'
    )
    assert s.execute_remove_memory(topic="ZETA-ONE.MD") == (
        'Removed "Zeta One" from the index. Topic file is preserved on disk.'
    )
    assert s.execute_remove_memory(topic="zeta") == (
        'Removed "Zeta Two" from the index. Topic file is preserved on disk.'
    )


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
        (None, "Cannot read properties of null (reading 'toLowerCase')"),
        (5, "search.toLowerCase is not a function"),
        (["a"], "search.toLowerCase is not a function"),
    ],
)
def test_s_remove_2_non_string_topic_raises_type_error_with_index(
    env: StoreEnv, topic: object, message: str
) -> None:
    seed(env)
    before = env.snapshot()
    with pytest.raises(JsTypeError) as info:
        env.store.execute_remove_memory(topic=topic)
    assert (info.value.kind, info.value.message) == ("TypeError", message)
    assert env.snapshot() == before  # lock released


def test_s_remove_2_symlinked_index_raises(env: StoreEnv) -> None:
    env.put("idx.md", "# I\n")
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("idx.md"), env.sandbox.path(LOCAL + "MEMORY.md"))
    with pytest.raises(NodeError) as info:
        env.store.execute_remove_memory(topic="T")
    assert info.value.code == "ELOOP"
    assert info.value.message == (
        f"ELOOP: too many symbolic links encountered, open '{env.local}/MEMORY.md'"
    )
    assert not env.exists(LOCAL + ".lock")


def test_s_remove_2_fifo_index_raises_promptly(env: StoreEnv) -> None:
    os.makedirs(env.local)
    os.mkfifo(env.sandbox.path(LOCAL + "MEMORY.md"))
    start = time.monotonic()
    with pytest.raises(JsError, match="^Unsafe non-regular file: .*/MEMORY.md$"):
        env.store.execute_remove_memory(topic="T")
    assert time.monotonic() - start < 2.0


def test_s_remove_2_b10_empty_topic_selects_single_entry(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [Only](only.md) 2026-08-01 -- o\n")
    env.put(LOCAL + "only.md", "o")
    assert env.store.execute_remove_memory(topic="") == (
        'Removed "Only" from the index. Topic file is preserved on disk.'
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n"


def test_s_remove_2_b10_empty_topic_with_several_entries_is_ambiguous(env: StoreEnv) -> None:
    seed(env)
    assert env.store.execute_remove_memory(topic="") == (
        'Multiple entries match "", be more specific: '
        "Redis Commands, Zeta One, Zeta Two, Pinned, Temp Notes"
    )


def test_s_remove_2_b11_exact_name_resolves_to_first_line(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n- [Dup](one.md) 2026-08-01 -- 1\n- [dup](two.md) 2026-08-01 -- 2\n",
    )
    env.put(LOCAL + "one.md", "1")
    env.put(LOCAL + "two.md", "2")
    assert env.store.execute_remove_memory(topic="DUP") == (
        'Removed "Dup" from the index. Topic file is preserved on disk.'
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n- [dup](two.md) 2026-08-01 -- 2\n"


def test_s_remove_2_b14_name_equal_to_filename_wins(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n- [b.md](a.md) 2026-08-01 -- a\n- [B](b.md) 2026-08-01 -- b\n",
    )
    env.put(LOCAL + "a.md", "a")
    env.put(LOCAL + "b.md", "b")
    assert env.store.execute_remove_memory(topic="b.md") == (
        'Removed "b.md" from the index. Topic file is preserved on disk.'
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n- [B](b.md) 2026-08-01 -- b\n"


# --- S-REMOVE-3 pinned -----------------------------------------------------------------


def test_s_remove_3_pinned_entry_refused(env: StoreEnv) -> None:
    seed(env)
    before = env.snapshot()
    assert env.store.execute_remove_memory(topic="pinned") == (
        'Cannot remove "Pinned" — it is pinned. Unpin it first with: /memory unpin pinned'
    )
    assert env.snapshot() == before


def test_s_remove_3_a1_pin_token_in_summary_counts(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Q2", content="c", summary="use [pin] flag")
    before = env.snapshot()
    assert env.store.execute_remove_memory(topic="Q2") == (
        'Cannot remove "Q2" — it is pinned. Unpin it first with: /memory unpin Q2'
    )
    assert env.snapshot() == before


def test_s_remove_3_b10_empty_topic_echoed_in_hint(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [Only](only.md) [pin] 2026-08-01 -- o\n")
    env.put(LOCAL + "only.md", "o")
    assert env.store.execute_remove_memory(topic="") == (
        'Cannot remove "Only" — it is pinned. Unpin it first with: /memory unpin '
    )


# --- S-REMOVE-4 delete, maintain, tombstone, write -------------------------------------


def test_s_remove_4_removes_line_keeps_file(env: StoreEnv) -> None:
    seed(env)
    topic_before = env.sandbox.path(LOCAL + "temp-notes.md").read_bytes()
    assert env.store.execute_remove_memory(topic="Temp Notes") == (
        'Removed "Temp Notes" from the index. Topic file is preserved on disk.'
    )
    assert env.read(LOCAL + "MEMORY.md") == INDEX.replace(
        "- [Temp Notes](temp-notes.md) 2026-08-01 -- mentions Zeta and Redis\n", ""
    )
    assert env.sandbox.path(LOCAL + "temp-notes.md").read_bytes() == topic_before


def test_s_remove_4_maintains_the_rest(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\r\n\r\n- [Gone](gone.md) 2026-08-01 -- g\r\n- [Old](old.md) 2020-01-01 -- o\r\n"
        "- [Orph](orph.md) 2026-08-01 -- x\n- [A](a.md) 2025-01-01 -- 1\n"
        "- [A2](a.md) 2026-01-01 -- 2\ntrailing prose\r\n",
    )
    for name in ("gone.md", "old.md", "a.md"):
        env.put(LOCAL + name, "x")
    env.store.execute_remove_memory(topic="Gone")
    assert env.read(LOCAL + "MEMORY.md") == (
        "# I\r\n\r\n- [Old](old.md) 2020-01-01 [stale?] -- o\n"
        "- [A2](a.md) 2026-01-01 [stale?] -- 2\ntrailing prose\r\n"
    )


def test_s_remove_4_shared_tombstone_recorded_before_index_write(env: StoreEnv) -> None:
    env.shared_mode()
    seed(env, SHARED)
    env.store.get_memory_dir()
    fs = RecordingFs()
    assert store_with(env, fs).execute_remove_memory(topic="Temp Notes") == (
        'Removed "Temp Notes" from the index. Topic file is preserved on disk.'
    )
    renames = [p for _, p in fs.paths("rename")]
    assert renames == [f"{env.shared}/.ocl-removed", f"{env.shared}/MEMORY.md"]
    assert env.read(SHARED + ".ocl-removed") == "temp-notes.md\n"
    assert "temp-notes.md" not in env.read(SHARED + "MEMORY.md")


def test_s_remove_4_failed_index_write_leaves_tombstone_and_old_index(env: StoreEnv) -> None:
    env.shared_mode()
    seed(env, SHARED)
    env.store.get_memory_dir()
    fs = FaultFs()
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EIO, nth=None)
    with pytest.raises(NodeError) as info:
        store_with(env, fs).execute_remove_memory(topic="Temp Notes")
    assert info.value.code == "EIO"
    assert env.read(SHARED + "MEMORY.md") == INDEX
    assert env.read(SHARED + ".ocl-removed") == "temp-notes.md\n"
    assert not env.exists(SHARED + ".lock")
    assert not [p for p in env.snapshot() if ".tmp-" in p]


def test_s_remove_4_shared_tombstone_errors_propagate_before_index_write(
    env: StoreEnv,
) -> None:
    env.shared_mode()
    seed(env, SHARED)
    env.store.get_memory_dir()
    os.mkfifo(env.sandbox.path(SHARED + ".ocl-removed"))
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        env.store.execute_remove_memory(topic="Temp Notes")
    assert info.value.message == f"Unsafe non-regular file: {env.shared}/.ocl-removed"
    assert env.snapshot() == before


# --- S-REMOVE-5 files untouched --------------------------------------------------------


def test_s_remove_5_topic_file_never_opened_or_written(env: StoreEnv) -> None:
    seed(env)
    st = os.stat(env.sandbox.path(LOCAL + "temp-notes.md"))
    fs = RecordingFs()
    store_with(env, fs).execute_remove_memory(topic="Temp Notes")
    topic = f"{env.local}/temp-notes.md"
    assert [op for op, p in fs.paths() if p == topic and op != "lstat"] == []
    st2 = os.stat(env.sandbox.path(LOCAL + "temp-notes.md"))
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


def test_s_remove_5_a5_duplicate_line_survives(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n- [D1](mid.md) 2026-01-01 -- a\n- [D2](mid.md) 2025-01-01 -- b\n",
    )
    env.put(LOCAL + "mid.md", "m")
    assert env.store.execute_remove_memory(topic="D1") == (
        'Removed "D1" from the index. Topic file is preserved on disk.'
    )
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n- [D2](mid.md) 2025-01-01 [stale?] -- b\n"


def test_s_remove_5_a5_shared_tombstoned_while_still_indexed(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(
        SHARED + "MEMORY.md",
        "# I\n\n- [D1](mid.md) 2026-01-01 -- a\n- [D2](mid.md) 2025-01-01 -- b\n",
    )
    env.put(SHARED + "mid.md", "m")
    env.store.execute_remove_memory(topic="D1")
    assert env.read(SHARED + "MEMORY.md") == "# I\n\n- [D2](mid.md) 2025-01-01 [stale?] -- b\n"
    assert env.read(SHARED + ".ocl-removed") == "mid.md\n"


def test_s_remove_5_local_removal_creates_no_list(env: StoreEnv) -> None:
    seed(env)
    env.store.execute_remove_memory(topic="Temp Notes")
    assert not env.exists(LOCAL + ".ocl-removed")
    assert not env.exists(SHARED + ".ocl-removed")


def test_s_remove_5_local_existing_list_neither_read_nor_changed(env: StoreEnv) -> None:
    seed(env)
    os.mkfifo(env.sandbox.path(LOCAL + ".ocl-removed"))
    fs = RecordingFs()
    assert store_with(env, fs).execute_remove_memory(topic="Temp Notes") == (
        'Removed "Temp Notes" from the index. Topic file is preserved on disk.'
    )
    assert not [p for _, p in fs.paths() if ".ocl-removed" in p]
