"""Startup retirement of ``last-session-recap`` index lines (S-RETIRE-1..5).

Expected index bytes were checked against the JS core 0.3.9 on the same stores.
"""

from __future__ import annotations

import errno
import os
import time

from memconform.reference.lock import LOCK_BUSY_MESSAGE
from tests.conftest import StoreEnv
from tests.support import FaultFs, RecordingFs, live_token, store_with

L = "agent/memory/"
S = "home/.agents/memory/"
RECAP = "- [Last Session Recap](last-session-recap.md) 2026-01-01 -- recap"
KEEP = "- [Keep](keep-me.md) 2026-01-01 -- keep"
DEFERRED = f"[openpi-memory] recap cleanup deferred: {LOCK_BUSY_MESSAGE}"
FAILED = "[openpi-memory] failed to retire last-session-recap index entries: "


def both_indexes(env: StoreEnv, text: str) -> None:
    env.put(L + "MEMORY.md", text)
    env.put(S + "MEMORY.md", text)


def co_tenant_lock(env: StoreEnv, rel_dir: str) -> str:
    return env.put(rel_dir + ".lock", live_token())


# --- S-RETIRE-1 ----------------------------------------------------------------------------


def test_s_retire_1_both_directories_regardless_of_configuration(env: StoreEnv) -> None:
    for config in ('{"shared_dir": false}', '{"shared_dir": true}'):
        env.config(config)
        both_indexes(env, f"# Memory Index\n\n{RECAP}\n{KEEP}\n")
        assert env.store.retire_recap_entries() is None
        assert env.read(L + "MEMORY.md") == f"# Memory Index\n\n{KEEP}\n"
        assert env.read(S + "MEMORY.md") == f"# Memory Index\n\n{KEEP}\n"
    assert env.diagnostics == []


def test_s_retire_1_local_before_shared(env: StoreEnv) -> None:
    both_indexes(env, f"{RECAP}\n")
    fs = RecordingFs()
    store_with(env, fs).retire_recap_entries()
    renames = [p for _, p in fs.paths("rename")]
    assert renames == [
        env.local + "/MEMORY.md",
        env.shared + "/.ocl-removed",
        env.shared + "/MEMORY.md",
    ]


def test_s_retire_1_missing_indexes_skipped(env: StoreEnv) -> None:
    before = env.snapshot()
    env.store.retire_recap_entries()
    assert env.snapshot() == before  # no directory, no lock, no index created
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("home/nowhere.md"), env.sandbox.path(L + "MEMORY.md"))
    env.put(S + "MEMORY.md", f"{RECAP}\n{KEEP}")
    env.store.retire_recap_entries()
    assert env.diagnostics == []  # the dangling symlink counts as missing
    assert env.read(S + "MEMORY.md") == KEEP
    assert os.path.islink(env.sandbox.path(L + "MEMORY.md"))


def test_s_retire_1_shared_only(env: StoreEnv) -> None:
    env.put(S + "MEMORY.md", f"{RECAP}\n")
    env.store.retire_recap_entries()
    assert env.read(S + "MEMORY.md") == ""
    assert not env.exists("agent/memory")


# --- S-RETIRE-2 ----------------------------------------------------------------------------


def test_s_retire_2_busy_shared_lock_defers_after_full_window(env: StoreEnv) -> None:
    text = f"# Memory Index\n\n{RECAP}\n{KEEP}\n"
    both_indexes(env, text)
    co_tenant_lock(env, S)
    shared_before = {k: v for k, v in env.snapshot().items() if k.startswith(S)}
    start = time.monotonic()
    env.store.retire_recap_entries()
    elapsed = time.monotonic() - start
    assert 2.9 <= elapsed < 10
    assert env.diagnostics == [DEFERRED]
    assert {k: v for k, v in env.snapshot().items() if k.startswith(S)} == shared_before
    assert env.read(S + ".lock") == live_token()
    assert env.read(L + "MEMORY.md") == f"# Memory Index\n\n{KEEP}\n"


def test_s_retire_2_busy_local_lock_then_shared_processed(env: StoreEnv) -> None:
    text = f"{RECAP}\n{KEEP}\n"
    both_indexes(env, text)
    co_tenant_lock(env, L)
    start = time.monotonic()
    env.store.retire_recap_entries()
    elapsed = time.monotonic() - start
    assert 0.45 <= elapsed < 2.5
    assert env.diagnostics == [DEFERRED]
    assert env.read(L + "MEMORY.md") == text
    assert env.read(S + "MEMORY.md") == f"{KEEP}\n"
    assert env.read(S + ".ocl-removed") == "last-session-recap.md\n"


def test_s_retire_2_mutation_under_each_directory_lock(env: StoreEnv) -> None:
    both_indexes(env, f"{RECAP}\n")
    fs = RecordingFs()
    store_with(env, fs).retire_recap_entries()
    for directory in (env.local, env.shared):
        lock = directory + "/.lock"
        events = fs.events()
        take = events.index(("open-excl", lock))
        write = events.index(("rename", directory + "/MEMORY.md"))
        release = events.index(("unlink", lock))
        assert take < write < release
    assert not env.exists(L + ".lock") and not env.exists(S + ".lock")


# --- S-RETIRE-3 ----------------------------------------------------------------------------


def test_s_retire_3_which_lines_are_dropped(env: StoreEnv) -> None:
    lines = [
        "# Memory Index",
        "- [R](last-session-recap.md) [pin]-- kept: pin before the first separator",
        "- [R](last-session-recap.md) x[pin]x -- kept",
        "- [R](last-session-recap.md)[pin]",
        "- [R](last-session-recap.md) [pin] 2026-01-01 -- kept",
        "- [R](last-session-recap.md) -- dropped [pin]",
        "- [R](last-session-recap.md) a -- b [pin] -- dropped",
        "- [R](last-session-recap.md) -- dropped\u2028[pin]",
        "- [R](last-session-recap.md) 2020-01-01 [stale?] -- dropped\r",
        "\t - [R](last-session-recap.md)",
        "- [R](Last-session-recap.md) -- kept: other case",
        "- [R](last-session-recap.MD) -- kept",
        "-[R](last-session-recap.md) -- kept: not an entry",
        "* [R](last-session-recap.md) -- kept: not an entry",
        "- [R](ocl-last-session-recap.md) -- kept",
        KEEP,
        "",
    ]
    env.put(L + "MEMORY.md", "\n".join(lines))
    env.store.retire_recap_entries()
    kept = [ln for ln in lines if "dropped" not in ln and ln != "\t - [R](last-session-recap.md)"]
    assert env.read(L + "MEMORY.md") == "\n".join(kept)
    assert len(kept) == len(lines) - 5


# --- S-RETIRE-4 ----------------------------------------------------------------------------


def test_s_retire_4_spec_example_and_idempotence(env: StoreEnv) -> None:
    env.put(L + "MEMORY.md", f"# Memory Index\n\n{RECAP}\n{KEEP}\n")
    env.put(S + "MEMORY.md", f"- [Recap](last-session-recap.md) -- x\n{KEEP}")
    for rel in (L, S):
        env.put(rel + "last-session-recap.md", "recap body")
        env.put(rel + "keep-me.md", "keep body")
    env.store.retire_recap_entries()
    assert env.read(L + "MEMORY.md") == f"# Memory Index\n\n{KEEP}\n"
    assert env.read(S + "MEMORY.md") == KEEP
    assert env.read(S + ".ocl-removed") == "last-session-recap.md\n"
    assert not env.exists(L + ".ocl-removed")
    for rel in (L, S):
        assert env.read(rel + "last-session-recap.md") == "recap body"
    snap = env.snapshot()
    stats = {p: os.stat(env.sandbox.path(p)) for p in (L + "MEMORY.md", S + "MEMORY.md")}
    env.new_store().retire_recap_entries()
    assert env.snapshot() == snap
    for p, st in stats.items():
        again = os.stat(env.sandbox.path(p))
        assert (again.st_ino, again.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert env.diagnostics == []


def test_s_retire_4_nothing_dropped_nothing_written(env: StoreEnv) -> None:
    text = f"# Memory Index\n\n- [R](last-session-recap.md) [pin] -- pinned\n{KEEP}\n"
    both_indexes(env, text)
    paths = [env.sandbox.path(L + "MEMORY.md"), env.sandbox.path(S + "MEMORY.md")]
    stats = [os.stat(p) for p in paths]
    fs = RecordingFs()
    store_with(env, fs).retire_recap_entries()
    assert fs.named("rename") == []
    assert [(os.stat(p).st_ino, os.stat(p).st_mtime_ns) for p in paths] == [
        (st.st_ino, st.st_mtime_ns) for st in stats
    ]
    assert not env.exists(S + ".ocl-removed")


def test_s_retire_4_shared_tombstone_before_index(env: StoreEnv) -> None:
    env.put(S + "MEMORY.md", f"{RECAP}\n")
    env.put(S + ".ocl-removed", "x.md\n\nbad\nx.md\n")
    fs = RecordingFs()
    store_with(env, fs).retire_recap_entries()
    renames = [p for _, p in fs.paths("rename")]
    assert renames == [env.shared + "/.ocl-removed", env.shared + "/MEMORY.md"]
    assert env.read(S + ".ocl-removed") == "x.md\nlast-session-recap.md\n"
    assert env.read(S + "MEMORY.md") == ""


def test_s_retire_4_already_tombstoned_list_not_rewritten(env: StoreEnv) -> None:
    env.put(S + "MEMORY.md", f"{RECAP}\n{KEEP}\n")
    tomb = env.put(S + ".ocl-removed", "last-session-recap.md\nother.md\n")
    ino = os.stat(tomb).st_ino
    env.store.retire_recap_entries()
    assert os.stat(tomb).st_ino == ino
    assert env.read(S + ".ocl-removed") == "last-session-recap.md\nother.md\n"
    assert env.read(S + "MEMORY.md") == f"{KEEP}\n"


def test_s_retire_4_no_maintenance(env: StoreEnv) -> None:
    text = (
        "# Memory Index\r\n\n"
        "- [Stale](stale.md) 2020-01-01 -- very old\n"
        "- [Orphan](gone.md) 2026-01-01 -- no file\n"
        f"{RECAP}\n"
        "- [Dup](dup.md) 2025-01-01 -- older\n"
        "- [Dup](dup.md) 2026-01-01 -- newer\n"
        "- [Healed](healed.md) 2026-08-01 [stale?] -- fresh\n"
        "  - [Indented](stale.md) 2019-01-01 -- dup\r\n"
    )
    env.put(L + "MEMORY.md", text)
    for name in ("stale.md", "dup.md", "healed.md"):
        env.put(L + name, name)
    env.store.retire_recap_entries()
    assert env.read(L + "MEMORY.md") == text.replace(f"{RECAP}\n", "")


# --- S-RETIRE-5 ----------------------------------------------------------------------------


def test_s_retire_5_unsafe_local_index_then_shared(env: StoreEnv) -> None:
    os.makedirs(env.sandbox.path(L + "MEMORY.md"))
    env.put(S + "MEMORY.md", f"{RECAP}\n{KEEP}\n")
    assert env.store.retire_recap_entries() is None
    assert env.diagnostics == [f"{FAILED}Unsafe non-regular file: {env.local}/MEMORY.md"]
    assert env.read(S + "MEMORY.md") == f"{KEEP}\n"
    assert not env.exists(L + ".lock")


def test_s_retire_5_symlinked_shared_index(env: StoreEnv) -> None:
    env.put(L + "MEMORY.md", f"{RECAP}\n{KEEP}\n")
    target = env.put("home/elsewhere.md", f"{RECAP}\n")
    os.makedirs(env.shared)
    os.symlink(target, env.sandbox.path(S + "MEMORY.md"))
    env.store.retire_recap_entries()
    assert env.read(L + "MEMORY.md") == f"{KEEP}\n"
    assert env.diagnostics == [
        f"{FAILED}ELOOP: too many symbolic links encountered, open '{env.shared}/MEMORY.md'"
    ]
    assert env.read("home/elsewhere.md") == f"{RECAP}\n"
    assert not env.exists(S + ".ocl-removed") and not env.exists(S + ".lock")


def test_s_retire_5_write_failure_is_a_diagnostic(env: StoreEnv) -> None:
    both_indexes(env, f"{RECAP}\n{KEEP}\n")
    fs = FaultFs()
    fs.fail("rename", match=lambda p: p == env.local + "/MEMORY.md", err=errno.EIO, nth=None)
    assert store_with(env, fs).retire_recap_entries() is None
    assert len(env.diagnostics) == 1
    assert env.diagnostics[0].startswith(f"{FAILED}EIO: i/o error, rename '{env.local}/MEMORY.md")
    assert env.diagnostics[0].endswith(f"' -> '{env.local}/MEMORY.md'")
    assert env.read(L + "MEMORY.md") == f"{RECAP}\n{KEEP}\n"
    assert [n for n in os.listdir(env.local) if n != "MEMORY.md"] == []
    assert env.read(S + "MEMORY.md") == f"{KEEP}\n"
