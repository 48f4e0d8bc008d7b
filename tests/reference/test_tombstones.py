"""``.ocl-removed`` removal intent (S-TOMB-1..5, S-FMT-14) through the store and the module.

Expected files were checked against the JS core 0.3.9 on the same inputs.
"""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memconform.reference.errors import JsError, NodeError
from memconform.reference.fs import Fs
from memconform.reference.tombstones import (
    add_tombstone,
    clear_tombstone,
    parse_tombstones,
    read_tombstones,
    render_tombstones,
)
from tests.conftest import StoreEnv
from tests.support import LOCAL, SHARED, TS, FaultFs, ends, put_memory, store_with

LIST = SHARED + ".ocl-removed"


def shared_store(env: StoreEnv, index: str, files: dict[str, str]) -> None:
    env.shared_mode()
    put_memory(env, SHARED, index, files)
    env.store.get_memory_dir()  # configuration read, carry-over attempted (nothing local)


def inode(env: StoreEnv, rel: str) -> tuple[int, int]:
    s = os.stat(env.sandbox.path(rel))
    return s.st_ino, s.st_mtime_ns


# --- S-TOMB-1 where and when the list is written ---------------------------------------


def test_s_tomb_1_shared_remove_adds_shared_write_clears(env: StoreEnv) -> None:
    shared_store(env, "# I\n\n- [T](t.md) 2026-08-01 -- t\n", {"t.md": "---\nname: T\n---\n"})
    s = env.store
    assert not env.exists(LIST)
    s.execute_remove_memory(topic="T")
    assert env.read(LIST) == "t.md\n"
    assert stat.S_IMODE(os.stat(env.sandbox.path(LIST)).st_mode) == 0o600
    # the unindexed file names the topic, so the re-write reuses it and clears the intent
    assert s.execute_write_memory(topic="T", content="c", summary="s") == (
        'Updated memory topic "T" (t.md).'
    )
    assert env.read(LIST) == ""
    assert env.read(SHARED + "MEMORY.md") == f"# I\n\n\n- [T](t.md) {TS} -- s"


def test_s_tomb_1_local_mode_never_creates_list(env: StoreEnv) -> None:
    s = env.store
    s.execute_write_memory(topic="T", content="c", summary="s")
    s.execute_pin_memory(topic="T", pin=True)
    s.execute_pin_memory(topic="T", pin=False)
    s.execute_remove_memory(topic="T")
    env.put(LOCAL + "MEMORY.md", "- [R](last-session-recap.md) 2026-08-01 -- r\n")
    env.put(LOCAL + "last-session-recap.md", "r")
    s.retire_recap_entries()
    assert env.read(LOCAL + "MEMORY.md") == ""
    assert not env.exists(LOCAL + ".ocl-removed")
    assert not env.exists(LIST)


def test_s_tomb_1_shared_recap_retirement_adds_intent(env: StoreEnv) -> None:
    shared_store(
        env,
        "- [R](last-session-recap.md) 2026-08-01 -- r\n- [K](keep-me.md) 2026-08-01 -- k\n",
        {"last-session-recap.md": "r", "keep-me.md": "k"},
    )
    env.store.retire_recap_entries()
    assert env.read(LIST) == "last-session-recap.md\n"
    assert env.read(SHARED + "MEMORY.md") == "- [K](keep-me.md) 2026-08-01 -- k\n"


def test_s_tomb_1_shared_mode_is_the_acquired_directory(env: StoreEnv) -> None:
    shared_store(env, "# I\n", {"t.md": "t"})
    env.put(LIST, "t.md\nx.md\n")
    env.put(SHARED + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- t\n")

    def switch_off(_dst: str) -> None:
        env.config('{"shared_dir": false}')

    fs = FaultFs()
    fs.hook("rename", run=switch_off, match=ends("/t.md"), nth=None)
    store = store_with(env, fs)
    assert store.execute_write_memory(topic="T", content="c", summary="s") == (
        'Updated memory topic "T" (t.md).'
    )
    assert env.read(LIST) == "x.md\n"
    assert not env.exists(LOCAL + "t.md")


def test_s_tomb_1_carry_over_honours_both_lists(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "- [A](a.md) 2026-08-01 -- a\n- [B](b.md) 2026-08-01 -- b\n- [C](c.md) 2026-08-01 -- c\n",
    )
    for name in ("a.md", "b.md", "c.md"):
        env.put(LOCAL + name, name)
    env.put(LOCAL + ".ocl-removed", "a.md\n")
    env.put(LIST, "b.md\n")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(SHARED + "MEMORY.md") == "# Memory Index\n- [C](c.md) 2026-08-01 -- c\n"
    assert sorted(os.listdir(env.shared)) == [".ocl-removed", "MEMORY.md", "c.md"]
    assert env.read(LIST) == "b.md\n" and env.read(LOCAL + ".ocl-removed") == "a.md\n"


# --- S-TOMB-2 reading ------------------------------------------------------------------


def test_s_tomb_2_pieces_filtered_without_trimming() -> None:
    assert parse_tombstones("a.md\r\nb.md\n") == ["b.md"]
    text = "a.md\r\nb.md\n\n.hidden.md\nb.md\nMEMORY.md\nx/y.md\n ok.md\nA.MD\nn..md\nno-ext\nc.md"
    assert parse_tombstones(text) == ["b.md", " ok.md", "A.MD", "c.md"]
    assert parse_tombstones("") == []


def test_s_tomb_2_missing_is_empty_other_errors_propagate(env: StoreEnv) -> None:
    fs = Fs()
    os.makedirs(env.shared)
    assert read_tombstones(fs, env.shared) == []
    os.makedirs(env.sandbox.path(LIST))
    with pytest.raises(JsError) as info:
        read_tombstones(fs, env.shared)
    assert info.value.message == f"Unsafe non-regular file: {env.shared}/.ocl-removed"
    os.rmdir(env.sandbox.path(LIST))
    env.put("list.txt", "t.md\n")
    os.symlink(env.sandbox.path("list.txt"), env.sandbox.path(LIST))
    with pytest.raises(NodeError) as eloop:
        read_tombstones(fs, env.shared)
    assert eloop.value.code == "ELOOP"
    os.unlink(env.sandbox.path(LIST))
    os.mkfifo(env.sandbox.path(LIST))
    with pytest.raises(JsError, match="^Unsafe non-regular file: "):
        read_tombstones(fs, env.shared)


def test_s_tomb_2_cr_suffixed_name_is_not_listed(env: StoreEnv) -> None:
    shared_store(env, "# I\n", {})
    env.put(LIST, "a.md\r\nb.md\n")
    ino = inode(env, LIST)
    env.store.execute_write_memory(topic="A", content="c", summary="s")
    assert inode(env, LIST) == ino  # a.md was not listed: no rewrite
    env.store.execute_write_memory(topic="B", content="c", summary="s")
    assert env.read(LIST) == ""  # the unsafe `a.md\r` piece is dropped by the rewrite


def test_s_tomb_2_symlinked_list_fails_shared_remove(env: StoreEnv) -> None:
    shared_store(env, "# I\n\n- [T](t.md) 2026-08-01 -- old\n", {"t.md": "t"})
    env.put("list.txt", "t.md\n")
    os.symlink(env.sandbox.path("list.txt"), env.sandbox.path(LIST))
    before = env.snapshot()
    with pytest.raises(NodeError) as info:
        env.store.execute_remove_memory(topic="T")
    assert info.value.message == (
        f"ELOOP: too many symbolic links encountered, open '{env.shared}/.ocl-removed'"
    )
    assert env.snapshot() == before


# --- S-TOMB-3 adding -------------------------------------------------------------------


def test_s_tomb_3_already_listed_means_no_write(env: StoreEnv) -> None:
    shared_store(env, "# I\n\n- [T](t.md) 2026-08-01 -- old\n", {"t.md": "t"})
    env.put(LIST, "junk\nt.md\n")
    ino = inode(env, LIST)
    env.store.execute_remove_memory(topic="T")
    assert env.read(LIST) == "junk\nt.md\n"
    assert inode(env, LIST) == ino
    assert env.read(SHARED + "MEMORY.md") == "# I\n\n"


def test_s_tomb_3_rewrite_drops_junk_and_duplicates(env: StoreEnv) -> None:
    shared_store(
        env,
        "# I\n\n- [T](t.md) 2026-08-01 -- old\n- [U](u.md) 2026-08-01 -- u\n",
        {"t.md": "t", "u.md": "u"},
    )
    env.put(
        LIST, "a.md\r\nb.md\n\n.hidden.md\nb.md\nMEMORY.md\nx/y.md\n ok.md\nA.MD\nn..md\nno-ext\n"
    )
    s = env.store
    s.execute_remove_memory(topic="T")
    assert env.read(LIST) == "b.md\n ok.md\nA.MD\nt.md\n"
    s.execute_write_memory(topic="B", content="c", summary="s")
    assert env.read(LIST) == " ok.md\nA.MD\nt.md\n"
    s.execute_remove_memory(topic="U")
    assert env.read(LIST) == " ok.md\nA.MD\nt.md\nu.md\n"
    assert stat.S_IMODE(os.stat(env.sandbox.path(LIST)).st_mode) == 0o600


def test_s_tomb_3_module_add(env: StoreEnv) -> None:
    fs = Fs()
    os.makedirs(env.shared)
    add_tombstone(fs, env.shared, "x.md")
    assert env.read(LIST) == "x.md\n"
    ino = inode(env, LIST)
    add_tombstone(fs, env.shared, "x.md")
    assert inode(env, LIST) == ino
    add_tombstone(fs, env.shared, "y.md")
    assert env.read(LIST) == "x.md\ny.md\n"
    assert not [n for n in os.listdir(env.shared) if ".tmp-" in n]


# --- S-TOMB-4 removing -----------------------------------------------------------------


def test_s_tomb_4_absent_means_no_write_last_leaves_empty_file(env: StoreEnv) -> None:
    fs = Fs()
    os.makedirs(env.shared)
    clear_tombstone(fs, env.shared, "x.md")
    assert not env.exists(LIST)  # missing list: nothing to remove, nothing created
    env.put(LIST, "x.md\ny.md\n")
    ino = inode(env, LIST)
    clear_tombstone(fs, env.shared, "z.md")
    assert inode(env, LIST) == ino
    clear_tombstone(fs, env.shared, "x.md")
    assert env.read(LIST) == "y.md\n"
    clear_tombstone(fs, env.shared, "y.md")
    assert env.exists(LIST) and env.read(LIST) == ""
    assert stat.S_IMODE(os.stat(env.sandbox.path(LIST)).st_mode) == 0o600


def test_s_tomb_4_shared_write_of_unlisted_topic_leaves_list(env: StoreEnv) -> None:
    shared_store(env, "# I\n", {})
    env.put(LIST, "other.md\n")
    ino = inode(env, LIST)
    env.store.execute_write_memory(topic="New", content="c", summary="s")
    assert inode(env, LIST) == ino and env.read(LIST) == "other.md\n"


# --- S-TOMB-5 semantics ----------------------------------------------------------------


def test_s_tomb_5_store_never_reindexes_removed_files(env: StoreEnv) -> None:
    shared_store(
        env,
        "# I\n\n- [X](x.md) 2026-08-01 -- x\n- [Y](y.md) 2026-08-01 -- y\n",
        {"x.md": "x", "y.md": "y"},
    )
    s = env.store
    s.execute_remove_memory(topic="X")
    s.execute_write_memory(topic="Y", content="c", summary="s")
    s.execute_pin_memory(topic="Y", pin=True)
    s.execute_write_memory(topic="Z", content="c", summary="s")
    s.retire_recap_entries()
    assert "x.md" not in env.read(SHARED + "MEMORY.md")
    assert env.read(LIST) == "x.md\n"
    assert env.read(SHARED + "x.md") == "x"


# --- S-FMT-14 rendering (property) ------------------------------------------------------

names = st.lists(st.sampled_from([*"ab.-_ /\r[]()Mm", "md", ".md", "\u00e9"]), max_size=8).map(
    "".join
)


@given(st.lists(names, max_size=8))
def test_s_tomb_3_render_parse_roundtrip(pieces: list[str]) -> None:
    parsed = parse_tombstones("\n".join(pieces))
    assert len(parsed) == len(set(parsed))
    assert parse_tombstones(render_tombstones(parsed)) == parsed
    expected = "".join(f"{name}\n" for name in parsed)
    assert render_tombstones(parsed) == expected
