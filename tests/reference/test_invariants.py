"""S-INV-1..10: invariants after every operation, crash states, documented weaknesses.

Crashes are real: a forked child runs the operation through an ``Fs`` that calls ``os._exit``
before its k-th call (for every k until the operation completes), and a real
``python -m memconform.reference serve`` process is SIGKILLed by strace's syscall injection at a chosen
syscall.  After each crash the files must be in one of the states S-INV-8 allows.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import pytest

from memconform.reference.clock import ControlledClock
from memconform.reference.config import DEFAULT_CONFIG_TEXT
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs
from memconform.reference.index import parse_index_line
from memconform.reference.lock import release, try_acquire
from memconform.reference.session import Session
from memconform.reference.store import Store
from tests.conftest import NOW, NOW_MS, StoreEnv
from tests.support import BUSY, IDX, FaultFs, dead_pid, ends, store_with

ROOT = Path(__file__).resolve().parents[2]
SIDX = "home/.agents/memory/MEMORY.md"
STOMB = "home/.agents/memory/.ocl-removed"
TMP = re.compile(r"^(?P<target>.+)\.tmp-(?P<pid>\d+)-[0-9a-z]+$")
CRASHED = 86
MakeEnv = Callable[[], StoreEnv]
Snapshot = dict[str, bytes]


# --- invariant checks ----------------------------------------------------------------------


def index_entries(text: str) -> list[str]:
    return [p.filename for line in text.split("\n") if (p := parse_index_line(line)) is not None]


def non_entry_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if parse_index_line(line) is None]


def created_count(text: str) -> int:
    fm = text.split("\n---\n", 1)[0]
    return sum(1 for line in fm.split("\n") if line.startswith("created:"))


def check_invariants(directory: str, foreign_lock: str | None = None) -> None:
    """S-INV-2 on the files of one memory directory."""
    if not os.path.isdir(directory):
        return
    names = os.listdir(directory)
    assert not [n for n in names if TMP.match(n)], names
    if foreign_lock is None:
        assert ".lock" not in names
    else:
        assert Path(directory, ".lock").read_text() == foreign_lock
    index = Path(directory, "MEMORY.md")
    if not index.exists():
        return
    files = index_entries(index.read_text(encoding="utf-8", errors="replace"))
    assert len(files) == len(set(files)), files
    for name in files:
        assert stat.S_ISREG(os.lstat(os.path.join(directory, name)).st_mode), name


def check_topic(path: str, created_before: int) -> None:
    text = Path(path).read_text(encoding="utf-8")
    fm = text.split("\n---\n", 1)[0]
    assert text.startswith("---\n")
    for key in ("name:", "description:", "last_updated:"):
        assert any(line.startswith(key) for line in fm.split("\n")), key
    assert created_count(text) == max(1, created_before)


# --- fault and crash seams -------------------------------------------------------------------

SEAM_METHODS = (
    "open",
    "read",
    "pread",
    "write",
    "fsync",
    "close",
    "fstat",
    "lstat",
    "stat",
    "rename",
    "link",
    "unlink",
    "mkdir",
    "scandir",
    "kill",
)


class CrashFs(Fs):
    """Exits the process (no cleanup, like a kill) right before its ``crash_at``-th call."""

    def __init__(self, crash_at: int = 0) -> None:
        self.crash_at = crash_at
        self.count = 0

    def tick(self) -> None:
        self.count += 1
        if self.count == self.crash_at:
            os._exit(CRASHED)


def _ticking(name: str) -> Callable[..., Any]:
    base = getattr(Fs, name)

    def method(self: CrashFs, *args: Any) -> Any:
        self.tick()
        return base(self, *args)

    method.__name__ = name
    return method


for _name in SEAM_METHODS:
    setattr(CrashFs, _name, _ticking(_name))


class FailingCrashFs(CrashFs):
    """Also fails the first rename onto a chosen target (to reach the rollback)."""

    def __init__(self, crash_at: int, fail_rename_to: str) -> None:
        super().__init__(crash_at)
        self.fail_rename_to: str | None = fail_rename_to

    def rename(self, src: str, dst: str) -> None:
        self.tick()
        if dst == self.fail_rename_to:
            self.fail_rename_to = None
            raise NodeError(5, "rename", src, dst)
        Fs.rename(self, src, dst)


def make_fs(crash_at: int, fail_rename_to: str | None) -> CrashFs:
    if fail_rename_to is None:
        return CrashFs(crash_at)
    return FailingCrashFs(crash_at, fail_rename_to)


Op = Callable[[Store], object]


def run_in_child(env: StoreEnv, op: Op, crash_at: int, fail: str | None) -> tuple[int, int]:
    """Run ``op`` in a forked child that dies before call ``crash_at``; (exit code, pid)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            target = None if fail is None else str(env.sandbox.path(fail))
            store = Store(
                env.sandbox.env(),
                fs=make_fs(crash_at, target),
                clock=env.clock,
                diagnostics=lambda _line: None,
            )
            op(store)
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), pid


def completed(
    make_env: MakeEnv, setup: Callable[[StoreEnv], None], op: Op, fail: str | None = None
) -> tuple[Snapshot, int]:
    """The uninterrupted outcome and the number of ``Fs`` calls it makes."""
    env = make_env()
    setup(env)
    fs = make_fs(0, None if fail is None else str(env.sandbox.path(fail)))
    store = Store(env.sandbox.env(), fs=fs, clock=env.clock, diagnostics=lambda _line: None)
    try:
        op(store)
    except Exception:
        assert fail is not None
    return env.snapshot(), fs.count


def split_debris(snap: Snapshot, pid: int) -> tuple[Snapshot, list[str]]:
    """Drop leftover temporaries and locks of the crashed child (S-INV-8 items 5 and 6)."""
    kept: Snapshot = {}
    debris: list[str] = []
    for rel, data in snap.items():
        m = TMP.match(rel)
        if m is not None:
            assert int(m.group("pid")) == pid, rel
            debris.append(rel)
        elif rel.endswith("/.lock"):
            text = data.decode()
            assert text == "" or text.startswith(f"{pid}\t"), text
            debris.append(rel)
        else:
            kept[rel] = data
    return kept, debris


def crash_sweep(
    make_env: MakeEnv,
    setup: Callable[[StoreEnv], None],
    op: Op,
    tracked: list[str],
    allowed: AbstractSet[tuple[str, ...]],
    fail: str | None = None,
) -> list[tuple[str, ...]]:
    """Crash before every ``Fs`` call of ``op``; check each leftover state. Returns the states."""
    base_env = make_env()
    setup(base_env)
    old = base_env.snapshot()
    new, _ = completed(make_env, setup, op)  # the new version of every file
    _, calls = completed(make_env, setup, op, fail)
    assert calls > 5
    seen: list[tuple[str, ...]] = []
    for k in range(1, calls + 2):
        env = make_env()
        setup(env)
        code, pid = run_in_child(env, op, k, fail)
        after, debris = split_debris(env.snapshot(), pid)
        if k <= calls:
            assert code == CRASHED, (k, code)
        else:
            assert code in (0, 3) and not debris
        for rel in set(after) | set(old) | set(new):
            if rel.endswith("/.lock") or TMP.match(rel):
                continue
            assert after.get(rel) in (old.get(rel), new.get(rel)), (k, rel)  # S-INV-1
        state = tuple("old" if after.get(rel) == old.get(rel) else "new" for rel in tracked)
        assert state in allowed, (k, state)
        for rel in debris:
            m = TMP.match(rel)
            assert m is None or m.group("target") in tracked, rel  # beside a target
        seen.append(state)
    return seen


def lock_mtime_ms(path: str) -> float:
    return os.lstat(path).st_mtime_ns / 1e6


def store_at(env: StoreEnv, now_ms: float) -> Store:
    return store_with(env, clock=ControlledClock(int(now_ms)))


# --- setups ------------------------------------------------------------------------------------


def local_store(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/t.md", '---\nname: "T"\ncreated: x\n---\n\nold body\n')
    env.put("agent/memory/other.md", "other")
    env.put(
        IDX,
        "# Memory Index\n\nprose\n- [T](t.md) 2026-08-01 -- old\n"
        "- [Other](other.md) 2026-08-01 -- o\n",
    )


def shared_store(env: StoreEnv) -> None:
    env.shared_mode()
    env.put("agent/memory/.shared-dir-migrated", "")
    env.put("home/.agents/memory/t.md", '---\nname: "T"\n---\n\nold body\n')
    env.put("home/.agents/memory/x.md", '---\nname: "X"\n---\nx\n')
    env.put(SIDX, "# Memory Index\n\n- [T](t.md) 2026-08-01 -- old\n- [X](x.md) 2026-08-01 -- x\n")
    env.put(STOMB, "t.md\nother.md\n")


def carry_over_store(env: StoreEnv) -> None:
    env.config('{"shared_dir": true}')
    for name in ("a", "b", "c"):
        env.put(f"agent/memory/{name}.md", f"local {name}\n")
    env.put("home/.agents/memory/b.md", "foreign b\n")
    env.put(
        IDX,
        "# Memory Index\n\n- [A](a.md) 2026-08-01 -- a\n- [B](b.md) 2026-08-01 -- b\n"
        "- [C](c.md) 2026-08-01 -- c\n",
    )
    env.put(SIDX, "# Shared\n")


def write_t(store: Store) -> object:
    return store.execute_write_memory("T", "new body", "new summary")


# --- S-INV-1 / S-INV-8 crash states ------------------------------------------------------------

WRITE_STATES = {("old", "old"), ("new", "old"), ("new", "new")}


def test_s_inv_1_crash_at_every_call_of_a_write(make_env: MakeEnv) -> None:
    seen = crash_sweep(make_env, local_store, write_t, ["agent/memory/t.md", IDX], WRITE_STATES)
    assert set(seen) == WRITE_STATES  # each allowed state is actually reached


def test_s_inv_8_new_topic_unindexed_after_crash(make_env: MakeEnv) -> None:
    seen = crash_sweep(
        make_env,
        local_store,
        lambda s: s.execute_write_memory("Fresh", "f", "f"),
        ["agent/memory/fresh.md", IDX],
        WRITE_STATES,
    )
    assert ("new", "old") in seen  # item 1: a new topic without an entry


def test_s_inv_8_shared_write_indexed_and_tombstoned(make_env: MakeEnv) -> None:
    allowed = {
        ("old", "old", "old"),
        ("new", "old", "old"),
        ("new", "new", "old"),
        ("new", "new", "new"),
    }
    seen = crash_sweep(
        make_env, shared_store, write_t, ["home/.agents/memory/t.md", SIDX, STOMB], allowed
    )
    assert ("new", "new", "old") in seen  # item 2


def test_s_inv_8_shared_remove_tombstone_first(make_env: MakeEnv) -> None:
    allowed = {("old", "old"), ("old", "new"), ("new", "new")}
    seen = crash_sweep(
        make_env, shared_store, lambda s: s.execute_remove_memory("X"), [SIDX, STOMB], allowed
    )
    assert ("old", "new") in seen  # item 3


def test_s_inv_8_shared_recap_retirement_tombstone_first(make_env: MakeEnv) -> None:
    def setup(env: StoreEnv) -> None:
        shared_store(env)
        env.put("home/.agents/memory/last-session-recap.md", "r")
        env.put(SIDX, "# Memory Index\n\n- [R](last-session-recap.md) 2026-08-01 -- r\n")

    allowed = {("old", "old"), ("old", "new"), ("new", "new")}
    seen = crash_sweep(make_env, setup, lambda s: s.retire_recap_entries(), [SIDX, STOMB], allowed)
    assert ("old", "new") in seen


def test_s_inv_8_carry_over_partial_then_completed(make_env: MakeEnv) -> None:
    shared = [
        "home/.agents/memory/a.md",
        "home/.agents/memory/b-opim.md",
        "home/.agents/memory/c.md",
        SIDX,
        "agent/memory/.shared-dir-migrated",
    ]
    allowed = {
        tuple(s)
        for s in (
            [a, b, c, i, "old"]
            for a in ("old", "new")
            for b in ("old", "new")
            for c in ("old", "new")
            for i in ("old", "new")
        )
    } | {("new", "new", "new", "new", "new")}
    seen = crash_sweep(make_env, carry_over_store, lambda s: s.get_memory_dir(), shared, allowed)
    assert ("new", "new", "old", "old", "old") in seen  # item 4: some files copied
    new, calls = completed(make_env, carry_over_store, lambda s: s.get_memory_dir())
    # every interrupted run is completed by a later one (after the dead owner's lock ages)
    for k in (calls // 5, calls // 2, calls - 2):
        env = make_env()
        carry_over_store(env)
        local_before = {r: d for r, d in env.snapshot().items() if r.startswith("agent/memory/")}
        code, pid = run_in_child(env, lambda s: s.get_memory_dir(), k, None)
        assert code == CRASHED
        later = store_at(env, time.time() * 1000 + 10_500)
        assert later.get_memory_dir() == env.shared
        after, _debris = split_debris(env.snapshot(), pid)
        assert {r: d for r, d in after.items() if not r.endswith(".lock")} == {
            r: d for r, d in new.items() if not r.endswith(".lock")
        }
        for rel, data in local_before.items():
            assert after[rel] == data  # the local store is never modified (S-INV-5)


def test_s_inv_8_interrupted_rollback_any_mix_of_complete_files(make_env: MakeEnv) -> None:
    def setup(env: StoreEnv) -> None:
        shared_store(env)

    # the tombstone clear fails after the index was written; the rollback is then crashed
    everything = {(a, b, c) for a in ("old", "new") for b in ("old", "new") for c in ("old",)}
    seen = crash_sweep(
        make_env, setup, write_t, ["home/.agents/memory/t.md", SIDX, STOMB], everything, fail=STOMB
    )
    assert ("new", "new", "old") in seen and ("new", "old", "old") in seen


def test_s_inv_8_handoff_old_or_new(make_env: MakeEnv) -> None:
    def setup(env: StoreEnv) -> None:
        env.config("{}")
        env.put("agent/HANDOFF.md", "## old (manual)\n\n- a\n\n")

    messages = [{"role": "assistant", "content": [{"type": "text", "text": "b"}]}]
    seen = crash_sweep(
        make_env,
        setup,
        lambda s: s.write_handoff(messages, "threshold", 3),
        ["agent/HANDOFF.md"],
        {("old",), ("new",)},
    )
    assert set(seen) == {("old",), ("new",)}


def test_s_inv_8_config_and_backup_absent_or_complete(make_env: MakeEnv) -> None:
    legacy = '{ "max_lines": 123, "shared_dir": false }'

    def setup(env: StoreEnv) -> None:
        env.put("agent/memory/RULES.jsonc", legacy)

    seen = crash_sweep(
        make_env,
        setup,
        lambda s: s.parse_rules(),
        ["agent/memory.jsonc", "agent/memory/RULES.jsonc.bak"],
        {("old", "old"), ("old", "new"), ("new", "new")},
    )
    assert ("old", "new") in seen
    env = make_env()
    env.store.parse_rules()
    assert env.read("agent/memory.jsonc") == DEFAULT_CONFIG_TEXT


def test_s_inv_8_leftover_lock_reclaim_ages(make_env: MakeEnv) -> None:
    # crash inside the critical section: a complete token of a dead pid
    env = make_env()
    local_store(env)
    _new, calls = completed(make_env, local_store, write_t)
    code, pid = run_in_child(env, write_t, calls // 2, None)
    assert code == CRASHED
    lock = os.path.join(env.local, ".lock")
    assert Path(lock).read_text().startswith(f"{pid}\t")
    born = lock_mtime_ms(lock)
    assert store_at(env, born + 9_000).execute_write_memory("Other", "o", "o") == BUSY
    assert (
        store_at(env, born + 10_500)
        .execute_write_memory("Other", "o", "o")
        .startswith("Updated memory topic")
    )
    assert not os.path.exists(lock)

    # crash between creating the lock and writing its token: an empty lock lives for 60 s
    class Finder(CrashFs):
        lock_open_at = 0

        def open(self, path: str, flags: int, mode: int = 0o666) -> int:
            self.tick()
            if path.endswith("/.lock") and not self.lock_open_at:
                self.lock_open_at = self.count
            return Fs.open(self, path, flags, mode)

    probe_env = make_env()
    local_store(probe_env)
    finder = Finder()
    write_t(
        Store(
            probe_env.sandbox.env(),
            fs=finder,
            clock=probe_env.clock,
            diagnostics=lambda _line: None,
        )
    )
    assert finder.lock_open_at > 0
    env = make_env()
    local_store(env)
    code, _pid = run_in_child(env, write_t, finder.lock_open_at + 1, None)
    assert code == CRASHED
    lock = os.path.join(env.local, ".lock")
    assert Path(lock).read_text() == ""
    born = lock_mtime_ms(lock)
    assert store_at(env, born + 30_000).execute_remove_memory("Other") == BUSY
    assert store_at(env, born + 61_000).execute_remove_memory("Other").startswith("Removed")


# --- S-INV-8 with a real killed process ---------------------------------------------------------


def strace_usable() -> bool:
    if shutil.which("strace") is None:
        return False
    probe = subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True)
    return probe.returncode == 0


needs_strace = pytest.mark.skipif(not strace_usable(), reason="strace (ptrace) not available")


def serve_killed_at(env: StoreEnv, inject: str, requests: list[dict[str, Any]]) -> list[Any]:
    """Run ``python -m memconform.reference serve`` under strace, which SIGKILLs it at ``inject``."""
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run(
        [
            "strace",
            "-o",
            "/dev/null",
            "-e",
            f"inject={inject}:signal=KILL",
            sys.executable,
            "-m",
            "memconform.reference",
            "serve",
        ],
        input=lines,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env.sandbox.env(),
        timeout=60,
    )
    assert proc.returncode in (-9, 137), (proc.returncode, proc.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines()]


@needs_strace
def test_s_inv_8_serve_killed_between_topic_and_index_rename(make_env: MakeEnv) -> None:
    new, _ = completed(make_env, local_store, write_t)
    env = make_env()
    local_store(env)
    old = env.snapshot()
    answers = serve_killed_at(
        env,
        "?rename:when=2",
        [
            {"id": 1, "op": "set_clock", "args": {"now": NOW}},
            {
                "id": 2,
                "op": "write_memory",
                "args": {"topic": "T", "content": "new body", "summary": "new summary"},
            },
        ],
    )
    assert [a["id"] for a in answers] == [1]  # killed before answering the write
    after = env.snapshot()
    assert after["agent/memory/t.md"] == new["agent/memory/t.md"]  # new body …
    assert after[IDX] == old[IDX]  # … with stale index metadata (item 1)
    leftovers = sorted(r for r in after if TMP.match(r))
    assert len(leftovers) == 1 and leftovers[0].startswith(IDX + ".tmp-")  # item 5
    pid = int(TMP.match(leftovers[0]).group("pid"))  # type: ignore[union-attr]
    lock = os.path.join(env.local, ".lock")
    assert Path(lock).read_text().startswith(f"{pid}\t")  # item 6
    born = lock_mtime_ms(lock)
    assert (
        store_at(env, born + 10_500)
        .execute_write_memory("T", "again", "again")
        .startswith("Updated")
    )
    check_index = Path(env.local, "MEMORY.md").read_text()
    assert index_entries(check_index) == ["t.md", "other.md"]
    assert not os.path.exists(lock)


@needs_strace
def test_s_inv_8_serve_killed_while_waiting_on_a_held_lock(make_env: MakeEnv) -> None:
    env = make_env()
    local_store(env)
    lock = os.path.join(env.local, ".lock")
    held = f"{os.getpid()}\t{NOW_MS}\tholder"
    Path(lock).write_text(held)
    before = env.snapshot()
    answers = serve_killed_at(
        env,
        "?clock_nanosleep,?nanosleep:when=1",
        [
            {"id": 1, "op": "set_clock", "args": {"now": NOW}},
            {"id": 2, "op": "write_memory", "args": {"topic": "T", "content": "x", "summary": "x"}},
        ],
    )
    assert [a["id"] for a in answers] == [1]
    assert env.snapshot() == before  # nothing written, the holder's lock intact


# --- S-INV-2 invariants after a batch of operations -------------------------------------------


def batch_store(env: StoreEnv) -> tuple[Store, FaultFs]:
    fs = FaultFs()
    return store_with(env, fs), fs


def fail_next_rename(fs: FaultFs, suffix: str) -> None:
    """The next rename onto a path ending in ``suffix`` fails (ENOSPC), to reach a rollback."""
    fs.fail("rename", match=ends(suffix), err=errno.ENOSPC)


def unlinked_topics(fs: FaultFs) -> list[str]:
    return [p for _, p in fs.paths("unlink") if not (p.endswith("/.lock") or TMP.match(p))]


def test_s_inv_2_invariants_after_each_operation(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/hand.md", "---\ncreated: a\ncreated: b\n---\nbody\n")
    env.put("agent/memory/dup.md", "dup")
    env.put(
        IDX,
        "# Memory Index\n\nprose stays\n- [Hand](hand.md) 2026-08-01 -- h\n"
        "- [Dup v1](dup.md) 2026-08-01 -- a\n<!-- comment -->\n- [Dup v2](dup.md) 2026-08-02 -- b\n"
        "- [Gone](gone.md) 2026-08-01 -- orphan\n- [Bad](.bad.md) x\n",
    )
    store, fs = batch_store(env)
    d = env.local

    def step(action: Callable[[], object], topic: str | None = None, fails: bool = False) -> None:
        before = env.snapshot()
        idx_before = before.get(IDX, b"# Memory Index\n\n").decode()
        created = 0
        if topic is not None and f"agent/memory/{topic}" in before:
            created = created_count(before[f"agent/memory/{topic}"].decode())
        if fails:
            with pytest.raises(NodeError):
                action()
            assert env.snapshot() == before  # rolled back
        else:
            action()
        check_invariants(d)
        assert non_entry_lines(env.read(IDX)) == non_entry_lines(idx_before)
        if topic is not None and not fails:
            check_topic(os.path.join(d, topic), created)

    step(lambda: store.execute_write_memory("Alpha", "a", "a"), "alpha.md")
    step(lambda: store.execute_write_memory("alpha", "a2", "a2"), "alpha.md")
    step(lambda: store.execute_write_memory("Hand", "more", "h2"), "hand.md")
    step(lambda: store.execute_write_memory("Alpha", "r", "r", mode="replace"), "alpha.md")
    step(lambda: store.execute_pin_memory("alpha", True))
    step(lambda: store.execute_remove_memory("alpha"))  # refused: pinned
    step(lambda: store.execute_pin_memory("alpha", False))
    step(lambda: store.execute_remove_memory("Dup v2"))
    step(lambda: store.execute_write_memory("Slug!", "s", "s"), "slug.md")
    step(lambda: store.execute_write_memory("Slug?", "s", "s"), "slug-2.md")
    fail_next_rename(fs, "/MEMORY.md")
    step(lambda: store.execute_write_memory("Beta", "b", "b"), fails=True)
    fail_next_rename(fs, "/alpha.md")
    step(lambda: store.execute_write_memory("Alpha", "x", "x"), fails=True)
    step(lambda: store.execute_write_memory("Beta", "b", "b"), "beta.md")
    assert index_entries(env.read(IDX)) == [
        "hand.md",
        "alpha.md",
        "slug.md",
        "slug-2.md",
        "beta.md",
    ]
    # the only topic file ever deleted is the one the failed "Beta" write created (S-INV-4)
    topics = unlinked_topics(fs)
    assert topics == [os.path.join(d, "beta.md")]


def test_s_inv_2_lock_replaced_by_another_process_is_left(env: StoreEnv) -> None:
    env.config("{}")
    store, fs = batch_store(env)
    foreign = f"{os.getpid()}\t{NOW_MS}\tforeign-holder"

    def replace_lock(_dst: str) -> None:
        Path(env.local, ".lock").write_text(foreign)

    fs.hook("rename", run=replace_lock)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    check_invariants(env.local, foreign_lock=foreign)


def test_s_inv_2_shared_operations(env: StoreEnv) -> None:
    shared_store(env)
    store, _fs = batch_store(env)
    actions: list[Callable[[], object]] = [
        lambda: store.execute_write_memory("New", "n", "n"),
        lambda: store.execute_remove_memory("X"),
        lambda: store.execute_pin_memory("new", True),
        lambda: store.execute_write_memory("X", "back", "back"),
    ]
    for action in actions:
        action()
        check_invariants(env.shared)
        check_invariants(env.local)


# --- S-INV-3 no unlocked mutation --------------------------------------------------------------


class LockAuditFs(Fs):
    """Asserts that every mutation inside a memory directory happens under our own lock."""

    def __init__(self, local: str, shared: str, sentinel: str) -> None:
        self.dirs = (local, shared)
        self.sentinel = sentinel
        self.audited = 0
        self.unlocked: list[str] = []

    def _held(self, directory: str) -> bool:
        try:
            return Path(directory, ".lock").read_text().startswith(f"{os.getpid()}\t")
        except OSError:
            return False

    def audit(self, path: str) -> None:
        directory, name = os.path.split(path)
        if name == ".lock":
            return
        if directory in self.dirs:
            self.audited += 1
            if not self._held(directory):
                self.unlocked.append(path)
        if path == self.sentinel and not all(self._held(d) for d in self.dirs):
            self.unlocked.append(path)  # carry-over holds both locks

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        if flags & os.O_CREAT:
            self.audit(path)
        return super().open(path, flags, mode)

    def rename(self, src: str, dst: str) -> None:
        self.audit(dst)
        super().rename(src, dst)

    def link(self, src: str, dst: str) -> None:
        self.audit(dst)
        super().link(src, dst)

    def unlink(self, path: str) -> None:
        self.audit(path)
        super().unlink(path)


def test_s_inv_3_every_mutation_under_own_lock(env: StoreEnv) -> None:
    carry_over_store(env)
    env.put(IDX, env.read(IDX) + "- [R](last-session-recap.md) 2026-08-01 -- r\n")
    env.put("agent/memory/last-session-recap.md", "r")
    env.put(SIDX, "# Shared\n- [R](last-session-recap.md) 2026-08-01 -- r\n")
    env.put("home/.agents/memory/last-session-recap.md", "r")
    fs = LockAuditFs(env.local, env.shared, os.path.join(env.local, ".shared-dir-migrated"))
    store = store_with(env, fs)
    session = Session(store)
    session.session_start({})  # retirement (both dirs) and carry-over
    store.execute_write_memory("New", "n", "n")
    store.execute_remove_memory("A")
    store.execute_pin_memory("new", True)
    with pytest.raises(NodeError):
        bad = store_with(env, fs)
        orig = fs.rename

        def failing(src: str, dst: str) -> None:
            if dst.endswith("/MEMORY.md"):
                fs.rename = orig  # type: ignore[method-assign]
                raise NodeError(5, "rename", src, dst)
            orig(src, dst)

        fs.rename = failing  # type: ignore[method-assign]
        bad.execute_write_memory("Rolled", "r", "r")
    session.session_before_compact(
        {
            "reason": "manual",
            "preparation": {
                "messagesToSummarize": [
                    {"role": "assistant", "content": [{"type": "text", "text": "x"}]}
                ]
            },
        }
    )
    assert fs.unlocked == []
    assert fs.audited > 20


# --- S-INV-4 topic files never deleted ------------------------------------------------------


def test_s_inv_4_topics_survive_removal_and_only_a_failed_new_write_unlinks(
    env: StoreEnv,
) -> None:
    local_store(env)
    store, fs = batch_store(env)
    assert store.execute_remove_memory("T").startswith("Removed")
    assert store.execute_remove_memory("Other").startswith("Removed")
    assert env.read("agent/memory/t.md").endswith("old body\n")
    assert env.exists("agent/memory/other.md")
    fail_next_rename(fs, "/MEMORY.md")
    with pytest.raises(NodeError):
        store.execute_write_memory("Brand New", "b", "b")
    fail_next_rename(fs, "/MEMORY.md")
    with pytest.raises(NodeError):
        store.execute_write_memory("T", "b", "b")  # existing file: restored, not unlinked
    topics = unlinked_topics(fs)
    assert topics == [os.path.join(env.local, "brand-new.md")]
    assert env.read("agent/memory/t.md").endswith("old body\n")


# --- S-INV-5 preservation -------------------------------------------------------------------


def test_s_inv_5_config_legacy_files_and_local_store_preserved(env: StoreEnv) -> None:
    legacy = '{ "max_lines": 123 }'
    env.put("agent/memory/RULES.jsonc", legacy)
    env.put("agent/memory/HANDOFF.md", "## L (manual)\n\n- legacy\n")
    env.store.parse_rules()
    rules_path = os.path.join(env.agent, "memory.jsonc")
    st = os.stat(rules_path)
    frozen = {
        r: d
        for r, d in env.snapshot().items()
        if r
        in (
            "agent/memory.jsonc",
            "agent/memory/RULES.jsonc",
            "agent/memory/RULES.jsonc.bak",
            "agent/memory/HANDOFF.md",
        )
    }
    assert frozen["agent/memory/RULES.jsonc.bak"] == legacy.encode()
    s = env.store
    s.execute_write_memory("T", "c", "s")
    s.read_handoff()
    s.write_handoff([{"role": "assistant", "content": [{"type": "text", "text": "x"}]}], "m", 3)
    s.execute_pin_memory("T", True)
    s.retire_recap_entries()
    env.new_store().parse_rules()
    after = env.snapshot()
    for rel, data in frozen.items():
        assert after[rel] == data
    st2 = os.stat(rules_path)
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


def test_s_inv_5_carry_over_never_touches_local_or_overwrites_shared(env: StoreEnv) -> None:
    carry_over_store(env)
    before = env.snapshot()
    assert env.store.get_memory_dir() == env.shared
    after = env.snapshot()
    for rel, data in before.items():
        if rel.startswith("agent/memory/") or rel == "home/.agents/memory/b.md":
            assert after[rel] == data, rel
    assert after["home/.agents/memory/b-opim.md"] == b"local b\n"
    assert "home/.agents/memory/HANDOFF.md" not in after


# --- S-INV-6 reads never create an index ----------------------------------------------------


def test_s_inv_6_read_paths_and_session_start_create_no_index(env: StoreEnv) -> None:
    env.config('{"shared_dir": true}')
    session = Session(env.store)
    session.session_start({})
    session.before_agent_start({"systemPrompt": "P"})
    env.store.read_memory_index(300)
    env.store.read_index_entries()
    env.store.search_memory("x")
    env.store.read_topic_content("a.md")
    env.store.read_handoff()
    env.store.get_memory_index()
    env.config("{}")
    session.session_start({})
    session.before_agent_start({"systemPrompt": "P"})
    env.store.search_memory("")
    assert env.store.execute_remove_memory("x") == "No memory index found."
    assert env.store.execute_pin_memory("x", True) == "No memory index found."
    names = [r for r in env.snapshot() if r.endswith("MEMORY.md")]
    assert names == []
    env.store.execute_write_memory("T", "c", "s")  # a locked mutation creates it
    assert env.exists(IDX)


# --- S-INV-7 removal intent -----------------------------------------------------------------


def test_s_inv_7_removal_intent(env: StoreEnv) -> None:
    shared_store(env)
    env.put(STOMB, "")
    s = env.store
    s.execute_remove_memory("X")
    assert env.read(STOMB) == "x.md\n"
    s.execute_write_memory("X", "x again", "x")
    assert env.read(STOMB) == ""
    s.execute_remove_memory("X")
    assert "x.md" in env.read(STOMB).split("\n")
    env.config("{}")
    env.put("agent/memory/l.md", "l")
    env.put(IDX, "- [L](l.md) 2026-08-01 -- l\n")
    s.execute_remove_memory("L")
    s.execute_write_memory("L", "l2", "l2")
    assert not env.exists("agent/memory/.ocl-removed")
    assert env.read(STOMB).split("\n") == ["x.md", ""]


# --- S-INV-9 documented weaknesses ------------------------------------------------------------


def spec_text() -> str | None:
    path = ROOT / "docs" / "SPEC.md"
    return path.read_text(encoding="utf-8") if path.exists() else None


def test_s_inv_9_a_forced_reclaim_race_gives_two_holders(env: StoreEnv) -> None:
    os.makedirs(env.local)
    lock = os.path.join(env.local, ".lock")
    Path(lock).write_text(f"{dead_pid()}\t1\tdead-owner")
    clock = ControlledClock(int(lock_mtime_ms(lock)) + 20_000)
    tokens: dict[str, str | None] = {}

    class RacingFs(Fs):
        """B's reclaim: between its recheck and its unlink, C reclaims the same stale lock."""

        armed = True

        def unlink(self, path: str) -> None:
            if path == lock and self.armed:
                self.armed = False
                tokens["C"] = try_acquire(Fs(), clock, lock)
            super().unlink(path)

    tokens["B"] = try_acquire(RacingFs(), clock, lock)
    assert tokens["B"] is not None and tokens["C"] is not None and tokens["B"] != tokens["C"]
    assert Path(lock).read_text() == tokens["B"]  # C believes it holds a lock B deleted
    release(Fs(), lock, tokens["C"])  # C's release sees a foreign token and leaves it
    assert Path(lock).read_text() == tokens["B"]
    text = spec_text()
    if text is not None:  # the accepted weakness is what the specification documents
        assert "no atomic compare-and-unlink" in text
        assert "two holders possible" in text


def test_s_inv_9_b_directories_are_never_fsynced(env: StoreEnv) -> None:
    carry_over_store(env)
    store, fs = batch_store(env)
    store.get_memory_dir()
    store.execute_write_memory("T", "c", "s")
    store.execute_remove_memory("A")
    store.write_handoff([{"role": "assistant", "content": [{"type": "text", "text": "x"}]}], "m", 3)
    fsynced = [p for _, p in fs.paths("fsync")]
    assert fsynced
    assert all(TMP.match(p) for p in fsynced), fsynced
    text = spec_text()
    if text is not None:
        assert "directories are not fsynced" in text


def test_s_inv_9_c_live_unrelated_pid_looks_alive(env: StoreEnv) -> None:
    env.config("{}")
    os.makedirs(env.local)
    lock = os.path.join(env.local, ".lock")
    Path(lock).write_text("1\t1\treused-pid")  # pid 1 always exists
    store = store_at(env, lock_mtime_ms(lock) + 120_000)
    assert store.execute_write_memory("T", "c", "s") == BUSY
    assert Path(lock).read_text() == "1\t1\treused-pid"


def test_s_inv_9_d_a_writer_ignoring_the_lock_is_clobbered(env: StoreEnv) -> None:
    env.config("{}")
    env.store.execute_write_memory("T", "c", "s")
    store, fs = batch_store(env)
    index = os.path.join(env.local, "MEMORY.md")

    def rogue(dst: str) -> None:
        Path(index).write_text("# rogue edit made without the lock\n")

    fs.hook("rename", run=rogue)
    store.execute_write_memory("U", "u", "u")
    assert "rogue" not in env.read(IDX)


# --- S-INV-10 process-global state ------------------------------------------------------------


def test_s_inv_10_state_is_per_process(env: StoreEnv) -> None:
    env.config("{")
    a, b = env.new_store(), env.new_store()
    a.parse_rules()
    a.parse_rules()
    b.parse_rules()
    assert len(env.diagnostics) == 2  # deduplicated per store, not across
    carry_over_store(env)
    a.get_memory_dir()
    assert env.exists("agent/memory/.shared-dir-migrated")
    env.put("agent/memory/d.md", "d")
    env.put(IDX, env.read(IDX) + "- [D](d.md) 2026-08-01 -- d\n")
    os.unlink(os.path.join(env.local, ".shared-dir-migrated"))
    a.get_memory_dir()  # this "process" is done: nothing more is copied
    assert not env.exists("home/.agents/memory/d.md")
    b.get_memory_dir()  # a fresh one runs carry-over again
    assert env.read("home/.agents/memory/d.md") == "d"
    os.unlink(os.path.join(env.local, ".shared-dir-migrated"))
    env.put("agent/memory/e.md", "e")
    env.put(IDX, env.read(IDX) + "- [E](e.md) 2026-08-01 -- e\n")
    a.reset_carry_over()  # the reset hook simulates a fresh process
    a.get_memory_dir()
    assert env.read("home/.agents/memory/e.md") == "e"
    s1, s2 = Session(a), Session(a)
    s1.before_agent_start({"systemPrompt": "P"})
    assert (s1.turn, s2.turn) == (1, 0)


def serve_once(env: StoreEnv, requests: list[dict[str, Any]]) -> tuple[list[Any], str]:
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run(
        [sys.executable, "-m", "memconform.reference", "serve"],
        input=lines,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env.sandbox.env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_s_inv_10_fresh_serve_process_starts_clean(env: StoreEnv) -> None:
    env.config("null")
    requests = [{"id": i, "op": "parse_rules"} for i in range(3)]
    requests.append(
        {
            "id": 9,
            "op": "hook",
            "args": {"name": "before_agent_start", "event": {"systemPrompt": "P"}},
        }
    )
    for _ in range(2):
        answers, stderr = serve_once(env, requests)
        assert [a["ok"] for a in answers] == [True] * 4
        assert stderr.splitlines() == [
            "[openpi-memory] memory.jsonc parse failed, using defaults: Cannot read properties "
            "of null (reading 'always_persist')"
        ]
        assert answers[3]["result"]["result"] is not None  # turn 1 of a fresh process injects
