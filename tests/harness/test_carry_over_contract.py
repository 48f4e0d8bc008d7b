"""Carry-over between tools in the shared-store contract (issue 25 item 2, SS-CARRY-1…5).

The ``shared-store/carry-over/*`` scenarios pass on the reference, and each fails on a
reference broken in the way a maintainer might break carry-over (planted through a driver
shim): no suffixed copy for a colliding file, tombstones ignored, a co-writer's lock ignored,
an unsafe local entry followed out of the local store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .shims import cross_failures, failures, plant

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "scenarios/conformance/shared-store/carry-over"
C = "import memconform.reference.carryover as c\n"
BROKEN = {
    # S-MIGRATE-4: a colliding file gets no suffixed copy (the local topic is lost or merged)
    "no-suffixed-copy": (C + "c.destination = lambda ctx, local, shared, name, on_disk: name\n",
                         ["differing-collision-gets-suffixed-copy", "own-suffix-taken-gets-numbered-copy"]),
    # S-MIGRATE-3 step 4: removal lists not read, so a removed topic comes back
    "tombstones-ignored": (C + "c.read_tombstones = lambda fs, d: []\n",
                           ["tombstoned-topic-not-carried-back-file-kept", "tombstoned-topic-not-carried-back-file-absent",
                            "tombstoned-suffixed-destination-skipped"]),
    # S-MIGRATE-2: the shared lock is taken whatever holds it (a token it never wrote)
    "lock-ignored": (C + "_try = c.try_acquire\n"
                     "c.try_acquire = lambda fs, clock, path: _try(fs, clock, path) or 'never-written'\n",
                     ["deferred-while-co-writer-holds-shared-lock"]),
    # SS-NAME-1: the local line's file name is joined to the local directory unchecked
    "unsafe-followed": (C + "import memconform.reference.index as i\n_p = i.parse_index_line\n"
                        "class _E:\n    def __init__(self, line):\n"
                        "        self.filename = '../up.md'; self.name = 'Up'\n"
                        "def _parse(line):\n    return _E(line) if '](../up.md)' in line else _p(line)\n"
                        "c.parse_index_line = _parse\n",
                        ["parent-entry-never-followed"]),
}


@pytest.mark.parametrize("name", sorted(p.stem for p in CORPUS.glob("*.json")))
def test_ss_carry_scenarios_pass_on_the_reference(name: str) -> None:
    assert failures(CORPUS / f"{name}.json") == []


@pytest.mark.parametrize("defect", sorted(BROKEN))
def test_ss_carry_scenarios_fail_on_a_broken_carry_over(defect: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    code, caught_by = BROKEN[defect]
    plant(tmp_path, monkeypatch, code)
    for name in caught_by:
        assert failures(CORPUS / f"{name}.json"), f"{defect} passes {name}"


CROSS = ROOT / "scenarios/cross"
# Two reference drivers share one local store and sentinel, so the second never carries over:
# the cross sequences on tombstones (removal-by-*-not-carried-back-by-*) bite only on a pair of
# different tools (pi + OpenCode); on the reference pair they are shown through the lock.
CROSS_CAUGHT = {"lock-ignored": "lock-of-a-defers-carry-over-by-b",
                "no-suffixed-copy": "lock-of-b-defers-carry-over-by-a-then-completes"}


@pytest.mark.parametrize("defect", sorted(CROSS_CAUGHT))
def test_ss_carry_cross_sequences_catch_a_broken_carry_over(defect: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = CROSS / f"{CROSS_CAUGHT[defect]}.json"
    assert cross_failures(path) == []
    plant(tmp_path, monkeypatch, BROKEN[defect][0])
    assert cross_failures(path), f"{defect} passes {path.name}"
