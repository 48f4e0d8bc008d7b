"""The questions the shared-store contract used to leave open (issue 30 item 5) each have a clause
of docs/SHARED_STORE.md, and each testable one a scenario that accepts what both real tools do
and nothing else.  The one that describes the gate (SS-LOCK-6) is tested here."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memconform.harness.gate.scenarios import DEFAULT_NOW, Scenario, discover, instant_ms
from memconform.reference import LOCK_BUSY_MESSAGE, Store
from memconform.reference.clock import ControlledClock
from tests import shared_store_coverage

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "scenarios" / "conformance" / "shared-store"
ANSWERS = {  # the question of issue 30 -> the clause that answers it
    "which home variable wins": "SS-LAYOUT-2",
    "whose stale_after_days": "SS-IDX-7",
    "the append heading": "SS-FMT-2",
    "which entry of one name a write updates": "SS-WRITE-4",
    "whether [pin] in a summary pins": "SS-IDX-8",
    "what a lock wait does under the frozen clock": "SS-LOCK-6",
    "a pin on a losing duplicate": "SS-IDX-4",
}


def _meets_a_lock(sc: Scenario) -> bool:
    return any(s.op == "plant_lock" or "busy" in s.expect.outcome for s in sc.steps)


def test_every_open_question_has_a_clause_and_every_clause_a_scenario_or_a_test() -> None:
    clauses = shared_store_coverage.doc_clauses(shared_store_coverage.DOC.read_text(encoding="utf-8"))
    cited = shared_store_coverage.scenario_citations()
    for question, cid in ANSWERS.items():
        assert cid in clauses, question
        harness, _ = clauses[cid]
        assert harness or cited.get(cid), f"{cid} ({question}) is cited by no scenario"


def test_ss_lock_6_no_shared_store_scenario_meets_a_held_lock_under_the_frozen_clock() -> None:
    locked = [sc for sc in discover(SHARED) if _meets_a_lock(sc)]
    assert locked, "no shared-store scenario plants a lock"
    frozen = [sc.id for sc in locked if sc.clock.mode == "frozen"]
    assert frozen == []


def test_ss_lock_6_the_references_lock_wait_ends_under_the_frozen_clock(tmp_path: Path) -> None:
    """The reference's deadline is monotonic: a live lock under a frozen wall clock is busy in
    about 500 ms (local policy), where a deadline on the wall clock would wait for ever."""
    memory = tmp_path / "agent" / "memory"
    memory.mkdir(parents=True)
    (memory / ".lock").write_text(f"{os.getpid()}\t{instant_ms(DEFAULT_NOW)}\tlive")
    clock = ControlledClock(instant_ms(DEFAULT_NOW), "frozen")
    store = Store({"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "PI_SHARED_MEMORY_HOME": str(tmp_path / "home"),
                   "HOME": str(tmp_path / "home")}, clock=clock)
    started = time.monotonic()
    answer = store.execute_write_memory("A", "x", "s")
    assert answer.startswith(LOCK_BUSY_MESSAGE.split("(")[0].strip()), answer
    assert time.monotonic() - started < 5.0
    assert clock.now_ms() == instant_ms(DEFAULT_NOW)  # the wall clock never moved


@pytest.mark.parametrize("sid", ["pins/pin-token-in-summary-either-reading", "pins/pinned-older-duplicate-either-kept-or-dropped",
                                 "names/duplicate-name-write-updates-one-of-its-files"])
def test_a_contract_that_accepts_either_tool_still_pins_the_store(sid: str) -> None:
    """A scenario that accepts both tools' readings still judges every store file: by an
    alternation of exact texts, never by ignoring the index."""
    sc = next(s for s in discover(SHARED) if s.id == f"shared-store/{sid}")
    assert any(rel.endswith("/MEMORY.md") for rel in sc.then.matches), sid
    assert not any(i.path.endswith("MEMORY.md") or i.path.endswith("*") for i in sc.then.ignore), sid
