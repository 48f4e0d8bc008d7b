"""Parallel real-process writers on one store (issue 4): the reference alone in CI, mixed
with the real JS peers when they are given."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memconform.harness.checker.history import History
from memconform.harness.checker.linearize import LINEARIZABLE
from memconform.harness.drivers.peers import PeerSpec, configured_peers
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.writers.engine import (
    ADVERSARIAL_TOPICS,
    generate_script,
    interop,
    lost_and_duplicated,
)


@pytest.mark.parametrize("shared", [False, True], ids=["local", "shared"])
def test_s_lock_10_eight_reference_writers_lose_nothing(shared: bool) -> None:
    result = interop([PeerSpec("python")], writers=8, ops=25, shared=shared, seed=7)
    assert result.total_ops == 200
    assert not result.errors
    assert result.lost == [] and result.duplicated == []
    assert result.violations == []
    assert result.verdict is not None
    assert result.verdict.status == LINEARIZABLE, result.verdict.summary()


def test_s_write_6_adversarial_topics_stay_linearizable_on_reference() -> None:
    result = interop([PeerSpec("python")], writers=8, ops=25, seed=5, topics=ADVERSARIAL_TOPICS)
    assert result.lost == [] and result.violations == []
    assert result.verdict is not None  # partitioned by slug family since issue 13, never per topic name
    assert result.verdict.status == LINEARIZABLE, result.verdict.summary()


def test_scripts_are_reproducible_from_the_seed() -> None:
    a = generate_script(random.Random(3), "w0", 50)
    b = generate_script(random.Random(3), "w0", 50)
    assert a == b
    assert {op for op, _ in a} == {"write_memory", "remove_memory", "pin_memory"}


@pytest.mark.skipif(not configured_peers(), reason="no real JS peer given (MEMCONFORM_PI_CORE / MEMCONFORM_OPENCODE_PLUGIN)")
def test_mixed_implementations_on_the_shared_store() -> None:
    peers = [PeerSpec("python"), *configured_peers()]
    result = interop(peers, writers=8, ops=25, shared=True, seed=11)
    assert result.lost == [] and result.violations == []
    assert result.verdict is not None and result.verdict.status == LINEARIZABLE


def _append(h: History, proc: str, topic: str, token: str, mode: str | None = None) -> None:
    args = {"topic": topic, "content": token, "summary": "s", **({"mode": mode} if mode else {})}
    h.record(proc, "invoke", "write_memory", args)
    h.record(proc, "ok", "write_memory", args, f'Updated memory topic "{topic}" (x.md).')


def test_lost_writes_are_excused_only_by_a_replace_reaching_the_same_file(tmp_path: Path) -> None:
    """A token may vanish under a replace-mode write to the same slug or case-folded name
    (S-FMT-8 slugs: ``Alpha Notes!`` and ``alpha notes`` share ``alpha-notes``), never else;
    a token kept only in an unindexed file is lost (issue 13: reachable through the index)."""
    sb = Sandbox.create(tmp_path)
    sb.local_dir.mkdir(parents=True)
    (sb.local_dir / "MEMORY.md").write_text(
        "# Memory Index\n\n- [alpha notes](alpha-notes.md) 2026-01-01 -- s\n- [Bravo](bravo.md) 2026-01-01 -- s\n")
    (sb.local_dir / "alpha-notes.md").write_text("tok-w1-1\n")
    (sb.local_dir / "bravo.md").write_text("tok-w0-2\ntok-w0-2\n")
    (sb.local_dir / "delta.md").write_text("tok-w3-4\n")  # on disk, but no index line names it
    h = History()
    _append(h, "w0", "Alpha Notes!", "tok-w0-0")  # replaced afterwards through the same slug
    _append(h, "w1", "alpha notes", "tok-w1-1", mode="replace")
    _append(h, "w0", "Bravo", "tok-w0-2")  # written twice
    _append(h, "w2", "Charlie", "tok-w2-3")  # nothing can excuse its loss
    _append(h, "w3", "Delta", "tok-w3-4")  # in an unindexed file: lost all the same
    lost, dup = lost_and_duplicated(h, sb, shared=False)
    assert lost == ["w2: 'Charlie' tok-w2-3", "w3: 'Delta' tok-w3-4"]
    assert dup == ["w0: 'Bravo' tok-w0-2 ×2"]
