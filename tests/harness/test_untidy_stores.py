"""The contract judged from the states co-writers leave behind (issue 30 item 9): every write,
remove, pin and repair clause has a scenario that starts from an untidy store, the shared-store
machine starts from generated ones, and a removal that leaves its topic indexed is a
``removal-undone`` hazard beside the verdict (SPEC S-REMOVE-4 allows it; the user suffers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from memconform.harness.gate.scenarios import discover
from memconform.harness.machines.shared_store import starting_stores
from memconform.harness.oracles import coexist, grammar
from memconform.harness.oracles.spec import INDEX_NAME, TOMBSTONES

from .shims import PYTHON, failures

ROOT = Path(__file__).resolve().parents[2]
UNTIDY = ROOT / "scenarios/conformance/shared-store/untidy"
IDX = b"# Memory Index\n\n- [Dup](dup.md) 2026-07-01 -- a\n- [Dup](dup.md) 2026-08-01 -- b\n"


def test_every_write_remove_pin_and_repair_clause_starts_from_an_untidy_store() -> None:
    scenarios = discover(UNTIDY)
    cited = {c for sc in scenarios for c in sc.clauses}
    assert {"SS-WRITE-1", "SS-REMOVE-1", "SS-PIN-1", "SS-TOMB-1", "SS-TOMB-2", "SS-TOMB-4", "SS-IDX-5"} <= cited
    ops = {s.op for sc in scenarios for s in sc.steps}
    assert {"write_memory", "remove_memory", "pin_memory", "repair_memory"} <= ops


def test_a_removal_that_leaves_its_topic_indexed_is_seen_from_bytes() -> None:
    before = {INDEX_NAME: IDX, "dup.md": b"d\n"}
    left = {INDEX_NAME: b"# Memory Index\n\n- [Dup](dup.md) 2026-08-01 -- b\n", "dup.md": b"d\n", TOMBSTONES: b"dup.md\n"}
    gone = {INDEX_NAME: b"# Memory Index\n", "dup.md": b"d\n", TOMBSTONES: b"dup.md\n"}
    assert coexist.removal_undone(before, left) == ["dup.md"]
    assert coexist.removal_undone(before, gone) == []
    assert coexist.removal_undone(left, left) == []  # listed before the run: not this run's removal


def test_the_reference_passes_the_duplicate_removal_with_a_removal_undone_hazard() -> None:
    from memconform.harness.gate.runner import Worker
    from memconform.harness.gate.scenarios import load_file

    path = UNTIDY / "duplicate-lines-remove-drops-the-found-entry.json"
    assert failures(path) == []
    worker = Worker(PYTHON)
    try:
        outcome = worker.run(load_file(path))
    finally:
        worker.close()
    assert [(f.kind, f.severity, f.clause) for f in outcome.findings] == [("removal-undone", "hazard", "SS-REMOVE-1")]


@settings(max_examples=60, deadline=None)
@given(starting_stores())
def test_generated_starting_stores_hold_only_safe_entries_and_untidy_states(store: dict[str, bytes]) -> None:
    if not store:
        return
    lines = [grammar.parse(ln) for ln in store[INDEX_NAME].decode().split("\n")]
    files = [ln.filename for ln in lines if ln is not None]
    assert all(f.endswith(".md") for f in files)
    listed = store.get(TOMBSTONES, b"").decode().split()
    assert not set(listed) & set(files)  # a removed file is never indexed at the start


def test_the_machine_catches_a_write_that_takes_over_an_unindexed_file_of_another_topic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a generated starting store holds an unindexed file of another topic (a removed one,
    or one another tool wrote) that a new topic slugs to; a write that takes it over is caught."""
    from hypothesis import Phase

    from memconform.harness.drivers.peers import PeerSpec
    from memconform.harness.machines import shared_store, targets
    from memconform.harness.machines.base import run_machine

    from .shims import plant

    plant(tmp_path, monkeypatch, "import memconform.reference.store as s\n"
          "_c = s._Write._choose_filename\n"
          "s._Write._choose_filename = lambda self, d, i: i.file_named(self.topic) or self.slug + '.md'\n")
    targets.Pool.close()
    try:
        with pytest.raises(AssertionError) as info:
            run_machine(shared_store.SharedStoreMachine, seed_value=20261206, max_examples=40, export=False,
                        phases=[Phase.generate], stateful_step_count=20)
    finally:
        targets.Pool.close()
        shared_store.SharedStoreMachine.target_spec = PeerSpec("python")
    assert "SS-FMT-3" in str(info.value) or "SS-NAME-2" in str(info.value), str(info.value)
