"""A ``Store`` on the fast paths answers and writes what a ``Store`` on the plain code does.

Two stores in two sandboxes take the same random operations: one with the defaults (the
plain S-IDX scans of ``PlainEngine`` over the plain ``Fs``), one as ``serve`` runs
(``ViewEngine`` over a ``WatchingFs``).  Between operations the index is rewritten by hand
(repeated names and filenames, orphans, recap entries, pins, stale marks, invalid dates),
topic files appear, vanish or become FIFOs and directories, the configuration and the
clock change.  After every step both stores must have returned the same value (or raised
the same error) and both trees must hold the same bytes (SPEC S-IDX-3..8, S-WRITE-6,
S-REMOVE, S-PIN, S-RETIRE, S-DISP).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.harness.drivers.sandbox import Sandbox
from memconform.reference.clock import ControlledClock
from memconform.reference.dirwatch import DirWatcher, WatchingFs
from memconform.reference.index import DAY_MS
from memconform.reference.index_view import ViewEngine
from memconform.reference.store import Store
from memconform.reference.text import UNDEFINED
from tests.conftest import NOW_MS
from tests.support import examples

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watch is inotify")

TOPICS = ["Alpha", "alpha", "Beta", "Gamma ray", "ΣΑΣ", "b.md", "Last Session Recap x"]
FILES = ["alpha.md", "beta.md", "b.md", "B.md", "gamma-ray.md", "last-session-recap.md", "alpha-2.md"]
SEARCHES = [*TOPICS, "a", ".md", "zzz", "GAMMA RAY", "last-session-recap.md", 5]
DATES = ["2026-08-07T01:02:50+00:00", "2026-08-01", "2025-01-01T00:00:00+00:00", "2020-02-30", ""]
CONFIGS = [
    '{"stale_after_days": 0}',
    '{"stale_after_days": 30}',
    '{"stale_after_days": 1}',
    "{}",
    '{"shared_dir": true}',
    '{"shared_dir": true, "stale_after_days": 0}',
    "{ not json",
]


@st.composite
def index_line(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 6)) == 0:
        return draw(st.sampled_from(["# Memory Index", "", "not an entry", "- [x](../up.md) 2026-01-01"]))
    name, fname, date = draw(st.sampled_from(TOPICS)), draw(st.sampled_from(FILES)), draw(st.sampled_from(DATES))
    pin = draw(st.sampled_from(["", " [pin]"]))
    stale = draw(st.sampled_from(["", " [stale?]"]))
    tail = draw(st.sampled_from(["", "", "\r trailing"]))
    return f"- [{name}]({fname}){pin} {date}{stale} -- summary{tail}"


pins = st.sampled_from([True, False, "yes", 0, UNDEFINED])
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"), st.sampled_from(TOPICS), st.sampled_from(["c", "more"]),
            st.sampled_from(["s", "a summary"]), pins, st.sampled_from(["append", "replace"]),
        ),
        st.tuples(st.just("remove"), st.sampled_from(SEARCHES)),
        st.tuples(st.just("pin"), st.sampled_from(SEARCHES), pins),
        st.tuples(st.just("retire")),
        st.tuples(st.just("entries")),
        st.tuples(st.just("read_index"), st.sampled_from([UNDEFINED, 2, 200])),
        st.tuples(st.just("search"), st.sampled_from(["alpha", "summary", "c", "zzz"])),
        st.tuples(st.just("index"), st.sampled_from(["agent/memory", "home/.agents/memory"]), st.lists(index_line(), max_size=10)),
        st.tuples(st.just("file"), st.sampled_from(FILES), st.sampled_from(["topic", "fifo", "dir", "gone"])),
        st.tuples(st.just("config"), st.sampled_from(CONFIGS)),
        st.tuples(st.just("clock"), st.sampled_from([1, 40, 400])),
    ),
    min_size=3,
    max_size=14,
)


@dataclass
class Side:
    """One sandbox and the store on it."""

    sandbox: Sandbox
    store: Store
    clock: ControlledClock

    def normalised(self, value: Any) -> Any:
        root = str(self.sandbox.root)
        if isinstance(value, str):
            return value.replace(root, "${ROOT}")
        if isinstance(value, list):
            return [self.normalised(v) for v in value]
        if isinstance(value, dict):
            return {k: self.normalised(v) for k, v in value.items()}
        return value


def run(side: Side, step: tuple[Any, ...]) -> object:
    """One step; a raised error is part of the answer."""
    store, root = side.store, side.sandbox.root
    kind = step[0]
    calls: dict[str, Callable[[], object]] = {
        "write": lambda: store.execute_write_memory(step[1], step[2], step[3], step[4], step[5]),
        "remove": lambda: store.execute_remove_memory(step[1]),
        "pin": lambda: store.execute_pin_memory(step[1], step[2]),
        "retire": store.retire_recap_entries,
        "entries": lambda: [asdict(e) for e in store.read_index_entries()],
        "read_index": lambda: store.read_memory_index(step[1]),
        "search": lambda: [h.to_js() for h in store.search_memory(step[1])],
    }
    if kind in calls:
        try:
            return side.normalised(calls[kind]())
        except Exception as e:  # the same error on both sides is the same answer
            return ("raised", type(e).__name__, side.normalised(str(e)))
    if kind == "index":
        directory = root / step[1]
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "MEMORY.md").write_text("\n".join(["# Memory Index", "", *step[2]]))
    elif kind == "file":
        path = root / "agent" / "memory" / step[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        if step[2] == "topic":
            path.write_text(f'---\nname: "{step[1]}"\n---\n\nbody\n')
        elif step[2] == "fifo":
            os.mkfifo(path)
        elif step[2] == "dir":
            path.mkdir()
    elif kind == "config":
        (root / "agent" / "memory.jsonc").write_text(step[1])
    else:
        side.clock.advance(step[1] * DAY_MS)
    return None


def side(make: Callable[[ControlledClock, dict[str, str]], Store]) -> Side:
    sandbox = Sandbox.create()
    clock = ControlledClock(NOW_MS)
    return Side(sandbox, make(clock, sandbox.env()), clock)


def seeded(lines: list[str], files: set[str], steps: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The steps after a first index and topic files, so most operations find entries."""
    first: list[tuple[Any, ...]] = [("index", "agent/memory", lines)]
    return first + [("file", name, "topic") for name in sorted(files)] + steps


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(index_line(), min_size=2, max_size=10), st.sets(st.sampled_from(FILES)), operations)
def test_a_store_on_the_fast_paths_equals_the_plain_store(
    lines: list[str], files: set[str], steps: list[tuple[Any, ...]]
) -> None:
    """Every answer and every byte, after every step, with both engines."""
    steps = seeded(lines, files, steps)
    watcher = DirWatcher()
    plain = side(lambda clock, env: Store(env, clock=clock, diagnostics=lambda _line: None))
    fast = side(
        lambda clock, env: Store(
            env, fs=WatchingFs(watcher), clock=clock, diagnostics=lambda _line: None, index_engine=ViewEngine()
        )
    )
    try:
        for i, step in enumerate(steps):
            assert run(plain, step) == run(fast, step), (i, step)
            assert plain.sandbox.snapshot() == fast.sandbox.snapshot(), (i, step)
    finally:
        watcher.close()
        plain.sandbox.remove()
        fast.sandbox.remove()


def test_the_fast_side_really_runs_the_fast_paths(tmp_path: os.PathLike[str]) -> None:
    """The comparison above is not vacuous: the view engine and the watch answered."""
    watcher = DirWatcher()
    engine = ViewEngine()
    sandbox = Sandbox.create(tmp_path)
    store = Store(sandbox.env(), fs=WatchingFs(watcher), clock=ControlledClock(NOW_MS), index_engine=engine)
    try:
        assert store.execute_write_memory("Alpha", "c", "s").startswith("Created")
        assert store.execute_write_memory("Beta", "c", "s").startswith("Created")
        assert watcher._by_path  # maintenance asked the watch
        text = (sandbox.local_dir / "MEMORY.md").read_text()
        assert engine.read(text) is engine.read(text)  # the published view, kept
    finally:
        watcher.close()
