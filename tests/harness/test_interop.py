"""Parallel real-process writers on one store (issue 4): the reference alone in CI, mixed
with the real JS peers when they are given."""

from __future__ import annotations

import random

import pytest

from harness.linearize import LINEARIZABLE
from harness.peers import PeerSpec, configured_peers
from harness.writers import ADVERSARIAL_TOPICS, generate_script, interop


@pytest.mark.parametrize("shared", [False, True], ids=["local", "shared"])
def test_s_lock_10_eight_reference_writers_lose_nothing(shared: bool) -> None:
    result = interop([PeerSpec("python")], writers=8, ops=25, shared=shared, seed=7)
    assert result.total_ops == 200
    assert not result.errors
    assert result.lost == [] and result.duplicated == []
    assert result.violations == []
    assert result.verdict is not None and result.verdict.status == LINEARIZABLE, result.verdict.summary()


def test_s_write_6_adversarial_topics_stay_linearizable_on_reference() -> None:
    result = interop([PeerSpec("python")], writers=8, ops=25, seed=5, topics=ADVERSARIAL_TOPICS)
    assert result.lost == [] and result.violations == []
    assert result.verdict is not None and not result.verdict.partitioned
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
