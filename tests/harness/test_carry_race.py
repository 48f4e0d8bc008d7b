"""Carry-over as a racing op in ``interop`` (issue 25 item 2): seeded local stores, fresh
writers whose first op carries over while the others write; judged by lost-write (a carried
topic unreachable through the shared index, S-MIGRATE-3) and split-topic (S-WRITE-6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memconform.harness.oracles.findings import VIOLATION
from memconform.harness.oracles.interop_checks import StoreView
from memconform.harness.writers import carry_race
from memconform.harness.writers.engine import findings, interop

from .shims import PYTHON, plant

TOKENS = {"Kilo Local": "carried-kilo"}


def test_s_migrate_3_a_carried_topic_must_stay_reachable_and_whole() -> None:
    kept = StoreView("disk", "# Memory Index\n- [Kilo Local](kilo-local.md) 2026-08-01 -- c\n", {"kilo-local.md": "carried-kilo"})
    assert carry_race.findings(kept, TOKENS) == []
    unindexed = StoreView("disk", "# Memory Index\n", {"kilo-local.md": "carried-kilo"})
    [lost] = carry_race.findings(unindexed, TOKENS)
    assert lost.kind == "lost-write" and lost.severity == VIOLATION and "Kilo Local" in lost.evidence
    split = StoreView("disk", "# Memory Index\n- [Kilo Local](kilo-local.md) 2026-08-01 -- c\n"
                              "- [kilo local](kilo-local-opim.md) 2026-08-01 -- c\n",
                      {"kilo-local.md": "carried-kilo", "kilo-local-opim.md": "x"})
    assert [f.kind for f in carry_race.findings(split, TOKENS)] == ["split-topic"]


def _race() -> list[str]:
    result = interop([PYTHON], writers=2, ops=3, shared=True, carry_over=True, seed=7)
    return [f.kind for f in findings(result, {})]


def test_s_migrate_3_the_reference_carries_over_while_others_write() -> None:
    assert _race() == []


def test_s_migrate_3_a_carry_over_that_indexes_nothing_is_a_lost_write(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plant(tmp_path, monkeypatch, "import memconform.reference.carryover as c\nc.merge = lambda ctx, local, shared: None\n")
    assert _race().count("lost-write") == len(carry_race.LOCAL_TOPICS)
