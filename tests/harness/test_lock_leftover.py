"""No lock left behind (issue 25 item 3): S-LOCK-5, S-LOCK-9 — an op releases the lock it
created whatever it answered.  The oracle (``oracles.lock_leftover``) is pure over lock bytes;
the lock matrix, the fresh writers of ``availability.measure`` and the scenario runner call it
after every answer.  A reference whose release is a no-op (planted through a driver shim:
``sitecustomize`` in the driver's ``PYTHONPATH``) must be caught by each; the reference passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memconform.harness.oracles.findings import VIOLATION
from memconform.harness.oracles.lock_leftover import KIND, findings, leftovers, lock_files, lock_pid
from memconform.harness.writers.locks import Cell, run_cell

from .shims import PYTHON, cross_failures, failures, plant

ROOT = Path(__file__).resolve().parents[2]
NO_RELEASE = (
    "import memconform.reference.lock as lock, memconform.reference.carryover as carry\n"
    "def _keep(fs, path, token):\n    return None\n"
    "lock.release = _keep\ncarry.release = _keep\n"
)


@pytest.fixture
def leaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reference driver started from here on never releases its lock."""
    plant(tmp_path, monkeypatch, NO_RELEASE)


def test_s_lock_5_only_a_new_lock_naming_the_implementation_is_its_own() -> None:
    planted = {"m/.lock": b"42\t1\tplanted"}
    assert lock_pid(b" 42\t1\tx") == 42 and lock_pid(b"garbage") is None
    assert leftovers(planted, planted, {42}) == []  # planted before the op and left alone
    assert leftovers({}, {"m/.lock": b"42\t2\tmine"}, {42}) == ["m/.lock"]
    assert leftovers(planted, {"m/.lock": b"42\t2\tmine"}, {42}) == ["m/.lock"]  # replaced by the op
    assert leftovers({}, {"m/.lock": b"7\t2\tco-tenant"}, {42}) == []  # another process's lock
    assert leftovers({}, {"m/.lock": b"\t\t"}, {42}) == []
    [f] = findings({}, {"m/.lock": b"42\t2\tmine"}, {42}, op="pin_memory", answer="'busy'")
    assert f.kind == KIND and f.severity == VIOLATION and f.path == "m/.lock" and f.op == "pin_memory"
    assert "pin_memory after answering 'busy' left its own lock m/.lock" in f.evidence


def test_lock_files_reads_regular_locks_only(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".lock").write_bytes(b"1\t2\t3")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".lock").symlink_to(tmp_path / "a" / ".lock")
    (tmp_path / "c" / ".lock").mkdir(parents=True)
    assert lock_files(tmp_path) == {"a/.lock": b"1\t2\t3"}


@pytest.mark.parametrize("cell", [Cell("absent", "-", 0, "shared"), Cell("valid", "dead", 20, "local")],
                         ids=lambda c: c.name)
def test_s_lock_5_the_matrix_names_a_lock_left_after_acquire_or_reclaim(cell: Cell, leaky: None) -> None:
    r = run_cell(PYTHON, cell)
    assert r.verdict == r.expected, r.detail
    assert [f.kind for f in r.leftovers] == [KIND], r.leftovers
    assert "write_memory" in r.leftovers[0].op and r.leftovers[0].path.endswith("/.lock")


def test_s_lock_9_the_fresh_writer_that_succeeds_after_a_wait_is_judged_too(leaky: None) -> None:
    """A busy cell (a dead owner's young lock): the first answer takes no lock; the fresh
    writer that gets through once the lock ages leaves its own — named by the matrix."""
    r = run_cell(PYTHON, Cell("valid", "dead", 0, "shared"))
    assert r.verdict == "busy"
    assert r.leftovers and all("fresh writer" in f.op for f in r.leftovers), r.leftovers


@pytest.mark.parametrize("cell", [Cell("absent", "-", 0, "shared"), Cell("valid", "dead", 0, "local")],
                         ids=lambda c: c.name)
def test_s_lock_5_the_reference_leaves_no_lock_in_the_matrix(cell: Cell) -> None:
    assert run_cell(PYTHON, cell).leftovers == []


SCENARIO = ROOT / "scenarios/conformance/shared-store/locks/pin-releases-its-lock.json"


def test_s_lock_5_the_runner_fails_a_scenario_whose_op_keeps_its_lock(leaky: None) -> None:
    found = failures(SCENARIO)
    assert any("no lock of its own left (S-LOCK-5)" in f and "pin_memory" in f for f in found), found


def test_s_lock_5_the_runner_passes_the_reference() -> None:
    assert failures(SCENARIO) == []


def test_s_lock_5_the_cross_runner_names_the_role_that_kept_its_lock(leaky: None) -> None:
    found = cross_failures(ROOT / "scenarios/cross/read-back-by-b.json")
    assert any("no lock of its own left (S-LOCK-5)" in f for f in found), found
