"""Repair in the generated race programs (issue 29 item 1, "repair where offered").

``races`` draws repair into ``program-shared`` only when every writer's driver declares
``repair_memory`` in ``hello`` (OpenCode does; the reference and openpi do not), so an
OpenCode-only run also races repair against writes.  A program stays a function of
(family, seed, declared ops), and one drawn without repair is the program it always was.
The store model follows repair (PEER-16, SS-TOMB-4) so its answers are judged too."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memconform.harness.checker.history import Op
from memconform.harness.checker.store_model import check
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.interleave import programs
from memconform.harness.interleave.scheduler import Situation, run_schedule
from memconform.harness.interleave.strategies import RandomWalk
from memconform.harness.oracles.findings import VIOLATION

SHARED, LOCAL, CARRY = programs.FAMILIES
PY = [PeerSpec.parse("python")]
CO_WRITER = frozenset({"hello", "write_memory", "remove_memory", "pin_memory"})
WITH_REPAIR = CO_WRITER | {"repair_memory"}
SEEDS = range(60)


def _repairs(sit: Situation) -> int:
    return sum(op == "repair_memory" for script in sit.ops for op, _ in script)


def test_repair_is_drawn_only_when_every_writer_declares_it() -> None:
    assert sum(_repairs(programs.generate(SHARED, s, PY, WITH_REPAIR)) for s in SEEDS) > 5
    assert "repair" in " ".join(programs.describe(programs.generate(SHARED, s, PY, WITH_REPAIR)) for s in SEEDS)
    for offered in ((), CO_WRITER):  # a writer without repair: none drawn, and the programs of before
        assert all(_repairs(programs.generate(SHARED, s, PY, offered)) == 0 for s in SEEDS)
        assert all(programs.generate(SHARED, s, PY, offered) == programs.generate(SHARED, s, PY) for s in SEEDS)
    for family in (LOCAL, CARRY):  # outside what the store model follows (programs.py)
        assert all(_repairs(programs.generate(family, s, PY, WITH_REPAIR)) == 0 for s in SEEDS)


def test_a_seed_and_the_declared_ops_reproduce_a_program() -> None:
    for s in SEEDS:
        assert programs.generate(SHARED, s, PY, WITH_REPAIR) == programs.generate(SHARED, s, PY, set(WITH_REPAIR))
    assert any(programs.generate(SHARED, s, PY, WITH_REPAIR) != programs.generate(SHARED, s, PY) for s in SEEDS)
    # the rest of the vocabulary is still drawn beside repair
    shown = " ".join(programs.describe(programs.generate(SHARED, s, PY, WITH_REPAIR)) for s in SEEDS)
    for how in ("append", "replace", "append+pin", "remove", "pin", "unpin"):
        assert f"{how} '" in shown


def _op(i: int, process: str, op: str, args: dict[str, object], start: int, end: int, outcome: str) -> Op:
    return Op(i, process, op, args, start, end, "ok", "", outcome)


def _history(repair_says: str) -> list[Op]:
    """w0 writes and removes A; then w1 repairs, saying ``repair_says``."""
    return [
        _op(0, "w0", "write_memory", {"topic": "A", "content": "t", "summary": "s"}, 0, 1, "ok:created"),
        _op(1, "w0", "remove_memory", {"topic": "A"}, 2, 3, "ok:removed"),
        _op(2, "w1", "repair_memory", {}, 4, 5, repair_says),
        _op(3, "w1", "pin_memory", {"topic": "A", "pin": True}, 6, 7,
            "not-found" if repair_says == "ok:unchanged" else "ok:pinned"),
    ]


def test_the_store_model_follows_repair_and_tombstones() -> None:
    # shared store: the removed file is tombstoned, repair skips it (SS-TOMB-4)
    assert check(_history("ok:unchanged"), shared=True).status == "linearizable"
    assert check(_history("ok:repaired"), shared=True).status == "not linearizable"
    # a local store keeps no tombstones: the removed topic's file is an orphan repair re-indexes
    assert check(_history("ok:repaired"), shared=False).status == "linearizable"
    assert check(_history("ok:unchanged"), shared=False).status == "not linearizable"
    # an empty store: nothing to repair
    empty = [_op(0, "w0", "repair_memory", {}, 0, 1, "ok:unchanged")]
    assert check(empty, shared=True).status == "linearizable"


PLUGIN = os.environ.get("MEMCONFORM_OPENCODE_PLUGIN", "")


@pytest.mark.skipif(not PLUGIN or not Path(PLUGIN).is_file(), reason="MEMCONFORM_OPENCODE_PLUGIN names no openclaude plugin")
@pytest.mark.skipif(shutil.which("node") is None or strace_unavailable() is not None, reason="needs node and strace")
def test_opencode_races_repair_against_writes_without_a_violation() -> None:
    peers = [PeerSpec.parse(f"opencode:{PLUGIN}")]
    seed = next(s for s in SEEDS if _repairs(sit := programs.generate(SHARED, s, peers, WITH_REPAIR))
                and sit.lock == "none" and sit.writers >= 2)
    sit = programs.generate(SHARED, seed, peers, WITH_REPAIR)
    result = run_schedule(peers, sit, RandomWalk(seed), timeout=30.0)
    assert not result.void, result.void
    assert any(o.op == "repair_memory" and o.type == "ok" for o in result.ops), [(o.op, o.type) for o in result.ops]
    assert [f for f in result.findings if f.severity == VIOLATION] == [], [f.line() for f in result.findings]
