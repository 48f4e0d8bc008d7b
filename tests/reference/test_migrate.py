"""Shared-dir carry-over, legacy configuration and legacy handoff (S-MIGRATE-1..9, A-12, B-6, B-17).

Expected shared-index bytes were taken from the JS core 0.3.9 run on the same stores.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping

import pytest

from memconform.reference.errors import JsError
from tests.conftest import NOW_MS, StoreEnv
from tests.support import (
    FaultFs,
    RecordingFs,
    dead_pid,
    live_token,
    put_memory,
    run_on_fresh_store,
    store_with,
)

L = "agent/memory/"
S = "home/.agents/memory/"
SENTINEL = L + ".shared-dir-migrated"


def local_store(env: StoreEnv, index: str, files: Mapping[str, str | bytes]) -> None:
    put_memory(env, L, index, files)


def under(snap: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    return {k: v for k, v in snap.items() if k.startswith(prefix)}


ABC = "# Memory Index\n\n- [A](a.md) 2026-01-01 -- a\n- [B](b.md) 2026-01-02 -- b\n"


# --- S-MIGRATE-1 ---------------------------------------------------------------------------


def test_s_migrate_1_no_recopy_after_completed_carry_over(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    shared_index = env.read(S + "MEMORY.md")
    env.config('{"shared_dir": false}')
    assert env.store.execute_write_memory(topic="Later", content="c", summary="s").startswith(
        "Created"
    )
    assert env.exists(L + "later.md")
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    assert env.new_store().get_memory_dir() == env.shared
    assert env.read(S + "MEMORY.md") == shared_index
    assert not env.exists(S + "later.md")


def test_s_migrate_1_missing_local_index_is_rechecked(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(L + "a.md", "A")
    before = env.snapshot()
    store = env.store
    assert store.get_memory_dir() == env.shared
    assert env.snapshot() == before  # no sentinel, not even the shared directory
    env.put(L + "MEMORY.md", "- [A](a.md) -- a\n")
    assert store.get_memory_dir() == env.shared
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [A](a.md) -- a\n"
    assert env.read(S + "a.md") == "A"
    assert env.exists(SENTINEL)


def test_s_migrate_1_sentinel_sets_the_done_flag(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.put(SENTINEL, "")
    env.shared_mode()
    store = env.store
    assert store.get_memory_dir() == env.shared
    assert not env.exists("home/.agents")
    os.unlink(env.sandbox.path(SENTINEL))
    assert store.get_memory_dir() == env.shared  # the flag, not the file, answers now
    assert not env.exists("home/.agents")
    assert env.new_store().get_memory_dir() == env.shared  # a fresh process runs it
    assert env.read(S + "MEMORY.md") == (
        "# Memory Index\n- [A](a.md) 2026-01-01 -- a\n- [B](b.md) 2026-01-02 -- b\n"
    )


def test_s_migrate_1_only_when_shared_dir_is_true(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.config('{"shared_dir": "true"}')
    before = env.snapshot()
    assert env.store.get_memory_dir() == env.local
    assert env.store.read_memory_index() == ABC
    assert env.snapshot() == before


# --- S-MIGRATE-2 ---------------------------------------------------------------------------


def test_s_migrate_2_live_shared_lock_no_sentinel(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    env.put(S + ".lock", live_token())
    fs = RecordingFs()
    store = store_with(env, fs)
    before = env.snapshot()
    assert store.get_memory_dir() == env.shared
    assert env.snapshot() == before
    # One single attempt on each lock: no polling.
    creates = [p for kind, p in fs.events() if kind == "open-excl"]
    assert creates == [env.local + "/.lock", env.shared + "/.lock"]
    assert env.diagnostics == []
    # The flag stayed unset: once the co-tenant is gone, the next resolution merges.
    os.unlink(env.sandbox.path(S + ".lock"))
    assert store.get_memory_dir() == env.shared
    assert env.exists(SENTINEL)
    assert env.read(S + "a.md") == "A"
    assert not env.exists(S + ".lock") and not env.exists(L + ".lock")


def test_s_migrate_2_live_local_lock_before_shared_dir_exists(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    env.put(L + ".lock", live_token())
    before = env.snapshot()
    assert env.store.get_memory_dir() == env.shared
    assert env.snapshot() == before
    assert not env.exists("home/.agents")


def test_s_migrate_2_stale_dead_lock_reclaimed_by_the_single_attempt(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    lock = env.put(S + ".lock", f"{dead_pid()}\t{NOW_MS - 60_000}\tdead")
    os.utime(lock, ((NOW_MS - 60_000) / 1000, (NOW_MS - 60_000) / 1000))
    assert env.store.get_memory_dir() == env.shared
    assert env.exists(SENTINEL)
    assert not env.exists(S + ".lock")


def test_s_migrate_2_order_of_locks_sentinel_and_release(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    fs = RecordingFs()
    assert store_with(env, fs).get_memory_dir() == env.shared
    local_lock, shared_lock = env.local + "/.lock", env.shared + "/.lock"
    sentinel = env.local + "/.shared-dir-migrated"
    steps = [
        ("open-excl", local_lock),
        ("mkdir", env.shared),
        ("open-excl", shared_lock),
        ("rename", env.shared + "/a.md"),
        ("rename", env.shared + "/b.md"),
        ("rename", env.shared + "/MEMORY.md"),
        ("rename", sentinel),
        ("unlink", shared_lock),
        ("unlink", local_lock),
    ]
    events = fs.events()
    positions = [events.index(step) for step in steps]
    assert positions == sorted(positions)
    assert env.read(SENTINEL) == ""


def test_s_migrate_2_error_gives_diagnostic_and_retries(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    os.makedirs(env.sandbox.path(S + "MEMORY.md"))
    before = env.snapshot()
    store = env.store
    assert store.get_memory_dir() == env.shared
    message = (
        "[openpi-memory] shared_dir carry-over failed: "
        f"Unsafe non-regular file: {env.shared}/MEMORY.md"
    )
    assert env.diagnostics == [message]
    assert env.snapshot() == before  # no sentinel, no copy, both locks released
    assert store.get_memory_dir() == env.shared  # flag unset: tried again
    assert env.diagnostics == [message, message]


def test_s_migrate_2_failed_sentinel_write_then_completion(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    fs = FaultFs()
    sentinel_write = fs.fail(
        "rename", match=lambda p: p == env.local + "/.shared-dir-migrated", err=errno.EIO, nth=None
    )
    store = store_with(env, fs)
    assert store.get_memory_dir() == env.shared
    assert len(env.diagnostics) == 1
    assert env.diagnostics[0].startswith(
        "[openpi-memory] shared_dir carry-over failed: EIO: i/o error, rename '"
    )
    assert env.diagnostics[0].endswith(f"' -> '{env.local}/.shared-dir-migrated'")
    assert not env.exists(SENTINEL)
    assert not env.exists(S + ".lock") and not env.exists(L + ".lock")
    merged = "# Memory Index\n- [A](a.md) 2026-01-01 -- a\n- [B](b.md) 2026-01-02 -- b\n"
    assert env.read(S + "MEMORY.md") == merged
    fs.faults.remove(sentinel_write)
    assert store.get_memory_dir() == env.shared
    assert env.exists(SENTINEL)
    assert env.read(S + "MEMORY.md") == merged  # the rerun recognises its own copies
    assert sorted(os.listdir(env.shared)) == ["MEMORY.md", "a.md", "b.md"]


# --- S-MIGRATE-3 ---------------------------------------------------------------------------


def test_s_migrate_3_exact_shared_index_text(env: StoreEnv) -> None:
    local_store(
        env,
        "- [A](a.md) -- a\n- [B](b.md) -- b\n- [C](c.md) -- c",
        {"a.md": "A", "b.md": "B", "c.md": "C"},
    )
    env.put(S + "MEMORY.md", "# Shared\n\n- [X](x.md) -- x\n\n\n")
    env.put(S + "x.md", "X")
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    assert env.read(S + "MEMORY.md") == (
        "# Shared\n\n- [X](x.md) -- x\n- [A](a.md) -- a\n- [B](b.md) -- b\n- [C](c.md) -- c\n"
    )


def test_s_migrate_3_trailing_whitespace_is_the_fmt_2_set(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a", {"a.md": "A"})
    env.put(S + "MEMORY.md", "# Shared\n\n- [X](x.md) -- x \t\u00a0\u3000\r\n\ufeff")
    env.put(S + "x.md", "X")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Shared\n\n- [X](x.md) -- x\n- [A](a.md) -- a\n"


def test_s_migrate_3_nel_is_not_trailing_whitespace(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a", {"a.md": "A"})
    env.put(S + "MEMORY.md", "# Shared\u0085\u001c\n\n")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Shared\u0085\u001c\n- [A](a.md) -- a\n"


def test_s_migrate_3_lines_copied_verbatim_onto_initial_memory(env: StoreEnv) -> None:
    index = (
        "# Memory Index\n\nprose\n- [A](a.md) 2026-01-01T00:00:00+00:00 -- a\n"
        "- [B](b.md) [pin] 2020-01-01 [stale?] -- b\n  - [C](c.md) 2026-02-02 -- c\r\n"
        "\t- [D](d.md)\n"
    )
    local_store(env, index, {"a.md": "A", "b.md": "B", "c.md": "C", "d.md": "D"})
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == (
        "# Memory Index\n- [A](a.md) 2026-01-01T00:00:00+00:00 -- a\n"
        "- [B](b.md) [pin] 2020-01-01 [stale?] -- b\n  - [C](c.md) 2026-02-02 -- c\r\n"
        "\t- [D](d.md)\n"
    )
    for name in "abcd":
        assert env.read(S + f"{name}.md") == name.upper()


def test_s_migrate_3_no_entries_writes_initial_memory(env: StoreEnv) -> None:
    local_store(env, "# Memory Index\n\nprose\n- [Orphan](gone.md) -- o\n", {})
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n\n"
    assert env.exists(SENTINEL)


def test_s_migrate_3_no_entries_leaves_existing_shared_index(env: StoreEnv) -> None:
    local_store(env, "# Memory Index\n\nprose\n", {})
    index = env.put(S + "MEMORY.md", "keep   \n\n")
    ino = os.stat(index).st_ino
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "keep   \n\n"
    assert os.stat(index).st_ino == ino
    assert env.exists(SENTINEL)


def test_s_migrate_3_removal_lists_of_both_directories(env: StoreEnv) -> None:
    local_store(
        env,
        "- [A](a.md) -- a\n- [B](b.md) -- b\n- [N](n.md) -- n\n- [K](k.md) -- k\n",
        {"a.md": "A", "b.md": "B", "n.md": "n", "k.md": "K", ".ocl-removed": "k.md\na.md\r\n"},
    )
    env.put(S + "n.md", "other")
    env.put(S + ".ocl-removed", "b.md\nn-opim.md\n")
    env.shared_mode()
    env.store.get_memory_dir()
    # k.md: local list; b.md: shared list; n.md → n-opim.md: destination listed;
    # a.md is listed only with a CR, which is not a safe filename (S-TOMB-2).
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [A](a.md) -- a\n"
    assert sorted(os.listdir(env.shared)) == [".ocl-removed", "MEMORY.md", "a.md", "n.md"]
    assert env.read(S + ".ocl-removed") == "b.md\nn-opim.md\n"


def test_s_migrate_3_skips_orphans_and_non_regular_sources(env: StoreEnv) -> None:
    local_store(
        env,
        "- [A](a.md) -- a\n- [O](orphan.md) -- o\n- [L](link.md) -- l\n"
        "- [D](dir.md) -- d\n- [F](fifo.md) -- f\n- [A again](a.md) -- a2\n",
        {"a.md": "A", "target.txt": "T"},
    )
    os.symlink(env.sandbox.path(L + "target.txt"), env.sandbox.path(L + "link.md"))
    os.mkdir(env.sandbox.path(L + "dir.md"))
    os.mkfifo(env.sandbox.path(L + "fifo.md"))
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [A](a.md) -- a\n"
    assert sorted(os.listdir(env.shared)) == ["MEMORY.md", "a.md"]


def test_s_migrate_3_invalid_utf8_reencoded(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a\n", {"a.md": b"x\xffy\xe2\x82"})
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.sandbox.path(S + "a.md").read_bytes() == b"x\xef\xbf\xbdy\xef\xbf\xbd"
    assert env.sandbox.path(L + "a.md").read_bytes() == b"x\xffy\xe2\x82"


def test_s_migrate_3_destination_already_indexed_gets_no_line(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a\n", {"a.md": "A"})
    shared_index = "# S\n- [A](a.md) -- shared\n- [A2](a-opim.md) -- x\n"
    env.put(S + "MEMORY.md", shared_index)
    env.put(S + "a.md", "Z")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == shared_index
    assert env.read(S + "a-opim.md") == "A"
    assert env.read(S + "a.md") == "Z"


def test_s_migrate_3_b17_replacement_patterns(env: StoreEnv) -> None:
    index = (
        "- [D](a$&b.md) 2026-01-01 -- d\n- [E](c$$d.md) -- e\n- [F](e$`f.md) -- f\n"
        "- [G](g$'h.md) tail -- g\n- [H](h$1$.md) -- h\n"
    )
    files = {"a$&b.md": "D", "c$$d.md": "E", "e$`f.md": "F", "g$'h.md": "G", "h$1$.md": "H"}
    local_store(env, index, files)
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == (
        "# Memory Index\n- [D](a](a$&b.md)b.md) 2026-01-01 -- d\n- [E](c$d.md) -- e\n"
        "- [F](e- [Ff.md) -- f\n- [G](g tail -- gh.md) tail -- g\n- [H](h$1$.md) -- h\n"
    )
    for name, content in files.items():
        assert env.read(S + name) == content


def test_s_migrate_3_b17_patterns_in_opim_destination(env: StoreEnv) -> None:
    local_store(env, "- [E](c$$d.md) -- e\n", {"c$$d.md": "local"})
    env.put(S + "c$$d.md", "foreign")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [E](c$d-opim.md) -- e\n"
    assert env.read(S + "c$$d-opim.md") == "local"


# --- S-MIGRATE-4 / B-6 / A-12 --------------------------------------------------------------


def test_s_migrate_4_differing_collision_gets_opim(env: StoreEnv) -> None:
    local_store(
        env,
        "- [Docker](docker-setup.md) -- local\n- [Same](same.md) -- s\n",
        {"docker-setup.md": "local\n", "same.md": "same\n"},
    )
    foreign = env.put(S + "docker-setup.md", "foreign\n")
    same = env.put(S + "same.md", "same\n")
    inodes = (os.stat(foreign).st_ino, os.stat(same).st_ino)
    env.shared_mode()
    store = env.store
    store.get_memory_dir()
    expected = "# Memory Index\n- [Docker](docker-setup-opim.md) -- local\n- [Same](same.md) -- s\n"
    assert env.read(S + "MEMORY.md") == expected
    assert env.read(S + "docker-setup-opim.md") == "local\n"
    assert env.read(S + "docker-setup.md") == "foreign\n"
    assert (os.stat(foreign).st_ino, os.stat(same).st_ino) == inodes
    snap = env.snapshot()
    store.reset_carry_over()
    store.get_memory_dir()
    assert env.snapshot() == snap  # second run: nothing added


def test_s_migrate_4_identical_unindexed_copy_indexed_once(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a\n", {"a.md": "A"})
    env.put(S + "MEMORY.md", "# S\n")
    env.put(S + "a.md", "A")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# S\n- [A](a.md) -- a\n"
    assert sorted(os.listdir(env.shared)) == ["MEMORY.md", "a.md"]


def test_s_migrate_4_identical_opim_reused(env: StoreEnv) -> None:
    local_store(env, "- [N](n.md) -- local\n", {"n.md": "local\n"})
    env.put(S + "n.md", "f1\n")
    env.put(S + "n-opim.md", "local\n")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [N](n-opim.md) -- local\n"
    assert sorted(os.listdir(env.shared)) == ["MEMORY.md", "n-opim.md", "n.md"]


def test_s_migrate_4_b6_opim_n_without_identity_check(env: StoreEnv) -> None:
    local_store(env, "- [N](n.md) -- local\n", {"n.md": "local\n"})
    env.put(S + "MEMORY.md", "# S\n")
    env.put(S + "n.md", "f1\n")
    env.put(S + "n-opim.md", "f2\n")
    env.shared_mode()
    store = env.store
    store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# S\n- [N](n-opim-2.md) -- local\n"
    for _ in range(2):
        store.reset_carry_over()
        store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == (
        "# S\n- [N](n-opim-2.md) -- local\n- [N](n-opim-3.md) -- local\n"
        "- [N](n-opim-4.md) -- local\n"
    )
    for n in (2, 3, 4):
        assert env.read(S + f"n-opim-{n}.md") == "local\n"


def test_s_migrate_4_b6_first_free_number_even_if_identical_exists(env: StoreEnv) -> None:
    local_store(env, "- [N](n.md) -- local\n", {"n.md": "local\n"})
    env.put(S + "n.md", "f1\n")
    env.put(S + "n-opim.md", "f2\n")
    env.put(S + "n-opim-2.md", "local\n")
    env.put(S + "n-opim-4.md", "x")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [N](n-opim-3.md) -- local\n"
    assert env.read(S + "n-opim-3.md") == "local\n"


def test_s_migrate_4_only_the_final_md_is_replaced(env: StoreEnv) -> None:
    local_store(env, "- [U](a.md.md) -- u\n", {"a.md.md": "l\n"})
    env.put(S + "a.md.md", "f\n")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [U](a.md-opim.md) -- u\n"
    assert env.read(S + "a.md-opim.md") == "l\n"


def test_s_migrate_4_non_regular_shared_name_collides(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a\n", {"a.md": "A"})
    os.makedirs(env.sandbox.path(S + "a.md"))
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [A](a-opim.md) -- a\n"
    assert env.read(S + "a-opim.md") == "A"


def test_s_migrate_4_uppercase_extension_identical_is_fine(env: StoreEnv) -> None:
    local_store(env, "- [U](Up.MD) 2026-01-01 -- u\n", {"Up.MD": "same\n"})
    env.put(S + "Up.MD", "same\n")
    env.shared_mode()
    env.store.get_memory_dir()
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [U](Up.MD) 2026-01-01 -- u\n"
    assert env.exists(SENTINEL)


# Run by run_on_fresh_store in a fresh process, where `store`, `diags` and `describe` exist.
GET_MEMORY_DIR_CHILD = (
    "first = store.get_memory_dir()\n"
    "second = store.get_memory_dir()\n"
    "print(json.dumps({'dirs': [first, second], 'diags': diags}))\n"
)


def test_s_migrate_4_a12_uppercase_extension_collision_terminates(env: StoreEnv) -> None:
    local_store(
        env,
        "- [A](a.md) -- a\n- [U](Up.MD) 2026-01-01 -- u\n- [B](b.md) -- b\n",
        {"a.md": "A", "b.md": "B", "Up.MD": "local\n"},
    )
    env.put(S + "Up.MD", "foreign\n")
    env.shared_mode()
    result = run_on_fresh_store(env, GET_MEMORY_DIR_CHILD, timeout=8)
    assert result["dirs"] == [env.shared, env.shared]
    prefix = "[openpi-memory] shared_dir carry-over failed: "
    assert len(result["diags"]) == 2  # the error recurs on every resolution
    assert all(d.startswith(prefix) and len(d) > len(prefix) for d in result["diags"])
    assert not env.exists(SENTINEL)
    assert not env.exists(S + ".lock") and not env.exists(L + ".lock")
    assert env.read(S + "Up.MD") == "foreign\n"
    assert env.read(S + "a.md") == "A"  # copied earlier in the run, kept
    assert not env.exists(S + "b.md")
    assert not env.exists(S + "MEMORY.md")


# --- S-MIGRATE-5 ---------------------------------------------------------------------------


def test_s_migrate_5_local_untouched_and_extras_not_copied(env: StoreEnv) -> None:
    local_store(
        env,
        ABC + "- [Recap](last-session-recap.md) -- r\n",
        {
            "a.md": "A",
            "b.md": "B",
            "last-session-recap.md": "recap",
            "HANDOFF.md": "## legacy handoff\n",
            ".ocl-removed": "zz.md\n",
            "unindexed.md": "U",
            "RULES.jsonc": "{}",
        },
    )
    for name in ("a.md", "b.md"):
        os.chmod(env.sandbox.path(L + name), 0o640)
    env.shared_mode()
    before = under(env.snapshot(), L)
    modes = {n: os.stat(env.sandbox.path(L + n)).st_mode for n in os.listdir(env.local)}
    env.store.get_memory_dir()
    after = under(env.snapshot(), L)
    assert after.pop(SENTINEL) == b""
    assert after == before
    assert {n: os.stat(env.sandbox.path(L + n)).st_mode for n in modes} == modes
    assert sorted(os.listdir(env.shared)) == [
        "MEMORY.md",
        "a.md",
        "b.md",
        "last-session-recap.md",
    ]
    assert not env.exists(S + "HANDOFF.md")


def test_s_migrate_5_existing_shared_files_never_overwritten(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "local B"})
    shared = {"a.md": "A", "b.md": "shared B", "x.md": "X", "MEMORY.md": "# S\n"}
    inodes = {n: os.stat(env.put(S + n, c)).st_ino for n, c in shared.items()}
    env.shared_mode()
    env.store.get_memory_dir()
    for name in ("a.md", "b.md", "x.md"):
        assert env.read(S + name) == shared[name]
        assert os.stat(env.sandbox.path(S + name)).st_ino == inodes[name]
    assert env.read(S + "b-opim.md") == "local B"


# --- S-MIGRATE-6 ---------------------------------------------------------------------------


def test_s_migrate_6_sentinel_empty_0600_and_suppresses_everywhere(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    env.store.get_memory_dir()
    st = os.stat(env.sandbox.path(SENTINEL))
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 0
    shared_before = under(env.snapshot(), S)
    # New local content, shared_dir toggled off and on, fresh processes: nothing moves.
    env.config('{"shared_dir": false}')
    fresh = env.new_store()
    assert fresh.execute_write_memory(topic="New", content="n", summary="n").startswith("Created")
    env.shared_mode()
    assert env.new_store().get_memory_dir() == env.shared
    assert fresh.get_memory_dir() == env.shared
    assert under(env.snapshot(), S) == shared_before


def test_s_migrate_6_no_sentinel_after_failed_merge(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    fs = FaultFs()
    fs.fail("rename", match=lambda p: p == env.shared + "/b.md", err=errno.EIO, nth=None)
    store_with(env, fs).get_memory_dir()
    assert not env.exists(SENTINEL)
    assert env.read(S + "a.md") == "A"
    assert not env.exists(S + "MEMORY.md")
    assert env.diagnostics[0].startswith("[openpi-memory] shared_dir carry-over failed: EIO: ")


def test_s_migrate_6_no_reverse_migration(env: StoreEnv) -> None:
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    env.store.execute_write_memory(topic="Shared Only", content="s", summary="s")
    assert env.exists(S + "shared-only.md")
    local_before = under(env.snapshot(), L)
    env.config('{"shared_dir": false}')
    assert env.store.get_memory_dir() == env.local
    assert env.new_store().get_memory_dir() == env.local
    assert under(env.snapshot(), L) == local_before


# --- S-MIGRATE-7 ---------------------------------------------------------------------------

LEGACY_RULES = '{ "max_lines": 123, "shared_dir": false }'


def test_s_migrate_7_legacy_rules_backed_up_and_copied(env: StoreEnv) -> None:
    legacy = env.put(L + "RULES.jsonc", LEGACY_RULES)
    os.chmod(legacy, 0o644)
    ino = os.stat(legacy).st_ino
    rules = env.store.parse_rules()
    assert rules.max_lines == 123
    assert env.read("agent/memory.jsonc") == LEGACY_RULES
    assert env.read(L + "RULES.jsonc.bak") == LEGACY_RULES
    assert env.read(L + "RULES.jsonc") == LEGACY_RULES
    st = os.stat(legacy)
    assert st.st_ino == ino and stat.S_IMODE(st.st_mode) == 0o644
    for rel in ("agent/memory.jsonc", L + "RULES.jsonc.bak"):
        assert stat.S_IMODE(os.stat(env.sandbox.path(rel)).st_mode) == 0o600


def test_s_migrate_7_existing_backup_and_config_kept(env: StoreEnv) -> None:
    env.put(L + "RULES.jsonc", LEGACY_RULES)
    env.put(L + "RULES.jsonc.bak", "older backup")
    assert env.store.parse_rules().max_lines == 123
    assert env.read(L + "RULES.jsonc.bak") == "older backup"
    env.put(L + "RULES.jsonc", '{ "max_lines": 456 }')
    assert env.new_store().parse_rules().max_lines == 123  # memory.jsonc exists: no migration
    assert env.read("agent/memory.jsonc") == LEGACY_RULES


def test_s_migrate_7_legacy_shared_dir_enables_carry_over(env: StoreEnv) -> None:
    local_store(env, "- [A](a.md) -- a\n", {"a.md": "A", "RULES.jsonc": '{ "shared_dir": true }'})
    assert env.store.get_memory_dir() == env.shared
    assert env.read(S + "MEMORY.md") == "# Memory Index\n- [A](a.md) -- a\n"
    assert not env.exists(S + "RULES.jsonc")


# --- S-MIGRATE-8 ---------------------------------------------------------------------------

T = "2026-08-07T01:02:50+00:00"


def test_s_migrate_8_read_copies_legacy_forward(env: StoreEnv) -> None:
    legacy = env.put(L + "HANDOFF.md", "## legacy\n\nbody\n")
    ino = os.stat(legacy).st_ino
    assert env.store.read_handoff() == "## legacy\n\nbody"
    assert env.read("agent/HANDOFF.md") == "## legacy\n\nbody\n"
    assert env.read(L + "HANDOFF.md") == "## legacy\n\nbody\n"
    assert os.stat(legacy).st_ino == ino
    assert stat.S_IMODE(os.stat(env.sandbox.path("agent/HANDOFF.md")).st_mode) == 0o600


def test_s_migrate_8_write_and_replace_migrate_first(env: StoreEnv) -> None:
    env.put(L + "HANDOFF.md", "## legacy\n\nbody")
    msg = [{"role": "assistant", "content": [{"type": "text", "text": "a"}]}]
    assert env.store.write_handoff(msg, "m") == "written"
    assert env.read("agent/HANDOFF.md") == f"## legacy\n\nbody\n\n\n## {T} (m)\n\n- a\n\n"
    assert env.read(L + "HANDOFF.md") == "## legacy\n\nbody"
    other = env.new_store()
    os.unlink(env.sandbox.path("agent/HANDOFF.md"))
    assert other.replace_latest_handoff_with_compaction_summary("S", "m") == "written"
    assert env.read("agent/HANDOFF.md") == f"## {T} Consolidation (m)\n\nS\n\n"
    assert env.read(L + "HANDOFF.md") == "## legacy\n\nbody"


def test_s_migrate_8_current_file_wins(env: StoreEnv) -> None:
    env.put(L + "HANDOFF.md", "## legacy\n")
    env.put("agent/HANDOFF.md", "## current\n")
    before = env.snapshot()
    assert env.store.read_handoff() == "## current"
    assert env.snapshot() == before


def test_s_migrate_8_not_reached_when_empty_or_disabled(env: StoreEnv) -> None:
    env.put(L + "HANDOFF.md", "## legacy\n")
    before = env.snapshot()
    fence = [{"role": "assistant", "content": [{"type": "text", "text": "```"}]}]
    assert env.store.write_handoff(fence, "m") == "empty"
    assert env.store.write_handoff(fence, "m", 0) == "disabled"
    assert env.store.replace_latest_handoff_with_compaction_summary("S", "m", 0) == "disabled"
    assert env.snapshot() == before


def test_s_migrate_8_a3_symlinked_legacy_not_followed(env: StoreEnv) -> None:
    outside = env.put("home/outside.md", "## outside\n")
    os.makedirs(env.local)
    os.symlink(outside, env.sandbox.path(L + "HANDOFF.md"))
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        env.store.read_handoff()
    assert info.value.kind == "Error"
    assert env.snapshot() == before


# --- S-MIGRATE-9 ---------------------------------------------------------------------------


def test_s_migrate_9_reset_hook(env: StoreEnv) -> None:
    store = env.store
    store.reset_carry_over()  # a missing sentinel is fine
    local_store(env, ABC, {"a.md": "A", "b.md": "B"})
    env.shared_mode()
    store.get_memory_dir()
    assert env.exists(SENTINEL)
    os.unlink(env.sandbox.path(S + "a.md"))
    store.get_memory_dir()
    assert not env.exists(S + "a.md")  # done flag: nothing re-runs
    store.reset_carry_over()
    assert not env.exists(SENTINEL)
    store.get_memory_dir()
    assert env.read(S + "a.md") == "A"  # the merge ran again and restored the copy
    assert env.exists(SENTINEL)
    assert env.read(S + "MEMORY.md").count("(a.md)") == 1
