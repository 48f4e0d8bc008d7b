"""The lock matrix says what happened in true words (issue 30 item 8): a write that goes through
while the planted lock stays byte for byte never took the lock, so it is ``ignored``, never a
``reclaim`` that "left a lock behind"."""

from __future__ import annotations

from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.writers.locks import Cell, run_matrix

from .shims import plant

NO_LOCK = (
    "import memconform.reference.store as s\n"
    "s.with_lock = lambda fs, clock, directory, shared, fn: (fs.mkdir(directory), fn(directory))[1]\n"
)


def test_a_tool_that_never_takes_the_lock_is_said_to_ignore_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cell = Cell("valid", "alive", 2, "local")  # a live owner's young lock: SPEC says busy
    plant(tmp_path, monkeypatch, NO_LOCK)
    (r,) = run_matrix(PeerSpec("python"), [cell], parallel=1)
    assert (r.expected, r.verdict) == ("busy", "ignored")
    assert r.detail == "wrote past the planted lock without taking it; the planted lock is still there"
    assert "left behind" not in r.detail and not r.ok


def test_the_reference_reclaiming_a_dead_owners_lock_leaves_nothing_to_say() -> None:
    (r,) = run_matrix(PeerSpec("python"), [Cell("valid", "dead", 20, "local")], parallel=1)
    assert (r.expected, r.verdict, r.detail) == ("reclaim", "reclaim", "")
