"""Hazards shown by default (issue 12): a store unavailable for 60 s or for ever after a planted
lock state or an injected fault, an op that failed yet left the store changed — each with the
time or the state the user suffers, counted in the verdict, exported as a replayable regression.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peers import PeerSpec, configured_peers
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.gate.regressions import export
from memconform.harness.oracles.findings import HAZARD, Finding
from memconform.harness.reports.envelope import SCHEMA_PATH
from memconform.harness.writers.availability import LockState, hazard_for
from memconform.harness.writers.locks import Cell, lock_state, run_cell, scenario_for

PYTHON = PeerSpec("python")
REWORDED = Path(__file__).resolve().parents[2] / "examples" / "reworded_driver.mjs"
needs_strace = pytest.mark.skipif(strace_unavailable() is not None, reason=str(strace_unavailable()))
PEERS = configured_peers()
IMPLS = [PYTHON, *PEERS]
IDS = [p.kind for p in IMPLS]


# --- the decision, without I/O -------------------------------------------------------------------


def test_hazard_for_names_the_state_and_the_time() -> None:
    directory = LockState("x", "a directory at .lock", "S-LOCK-2", "step 3 never reclaims a non-regular lock")
    never = hazard_for(directory, None, impl="impl 1")
    assert never is not None and never.severity == HAZARD and never.kind == "unavailable"
    assert "a directory at .lock: every write busy, for ever" in never.evidence and "S-LOCK-2" in never.evidence
    empty = LockState("x", "an empty .lock left by a failed token write", "A-13")
    minute = hazard_for(empty, 61.0)
    assert minute is not None and "every write refused, for 61 s" in minute.evidence
    assert hazard_for(empty, 59.0) is None  # under a minute: no hazard
    assert hazard_for(empty, 11.0) is None
    live = LockState("x", "a live owner's .lock", "S-LOCK-3", live_owner=True)
    assert hazard_for(live, None) is None  # the owner's own critical section


# --- measured through real driver processes --------------------------------------------------------


@pytest.mark.parametrize("spec", IMPLS, ids=IDS)
def test_a_directory_at_lock_makes_the_store_unavailable_for_ever(spec: PeerSpec) -> None:
    cell = Cell("directory", "-", 0, "local")
    r = run_cell(spec, cell)
    assert r.verdict == "busy", r.detail
    assert r.unavailable is None  # never within the hour cap
    f = hazard_for(lock_state(cell), r.unavailable, impl=spec.kind)
    assert f is not None and "for ever" in f.evidence and f.clause == "S-LOCK-2"


@pytest.mark.parametrize("spec", IMPLS, ids=IDS)
def test_an_empty_lock_refuses_every_write_for_a_minute(spec: PeerSpec) -> None:
    cell = Cell("empty", "-", 0, "local")
    r = run_cell(spec, cell)
    assert r.verdict == "busy", r.detail
    assert r.unavailable is not None and 60 <= r.unavailable <= 62
    f = hazard_for(lock_state(cell), r.unavailable)
    assert f is not None and f"for {r.unavailable:g} s" in f.evidence


def test_a_dead_owners_lock_is_no_hazard() -> None:
    r = run_cell(PYTHON, Cell("valid", "dead", 0, "local"))
    assert r.verdict == "busy" and r.unavailable is not None and 11 <= r.unavailable < 12
    assert hazard_for(lock_state(r.cell), r.unavailable) is None


def test_the_exported_lock_regression_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cell = Cell("directory", "-", 0, "local")
    f = hazard_for(lock_state(cell), None, impl="memconform-reference 0.1.0")
    assert f is not None
    exported = export(f, scenario_for(cell, "agent/memory"), tmp_path)
    path = Path(exported.regression)
    assert path.parent == tmp_path and path.is_file()
    data = json.loads(path.read_text())
    assert [s["op"] for s in data["steps"]] == ["mkdir", "write_memory"]
    assert data["steps"][1]["expect"]["outcome"] == "busy"  # by kind: no tool's sentence (issue 30)
    assert main(["replay", str(path), "--impl", "python"]) == 0
    assert "PASS" in capsys.readouterr().out
    if shutil.which("node") is not None:  # a driver answering busy in its own words (outcome_kinds)
        assert main(["replay", str(path), "--impl", f"node:{REWORDED}"]) == 0
        assert "PASS" in capsys.readouterr().out


def test_an_exported_reclaim_expects_the_topic_created_by_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where SPEC reclaims (a dead owner's lock, 20 s old) the write must create the topic:
    ``ok:created`` by kind, which the reference's sentence and a reworded driver's both meet."""
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    cell = Cell("valid", "dead", 20, "local")
    data = scenario_for(cell, "agent/memory", verdict="created")
    assert data["steps"][-1]["expect"] == {"outcome": "ok:created"}  # type: ignore[index]
    f = Finding("lock-verdict", HAZARD, "S-LOCK-2", "memconform-reference 0.1.0", evidence="reclaimed")
    path = Path(export(f, data, tmp_path).regression)
    for impl in ["python"] + ([f"node:{REWORDED}"] if shutil.which("node") is not None else []):
        assert main(["replay", str(path), "--impl", impl]) == 0, impl
        assert "PASS" in capsys.readouterr().out


# --- crash --errors: failed part way --------------------------------------------------------------


@needs_strace
def test_failed_shared_remove_is_a_hazard_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["crash", "--impl", "python", "--op", "remove-shared", "--errors", "--errno", "EIO",
            "--points", "publishing", "--export", str(tmp_path / "regs"), "--json", str(tmp_path / "c.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("[hazard] failed-part-way S-INV-8")]
    assert lines, out
    assert "reported failure, yet" in lines[0] and "indexed and tombstoned" in lines[0]
    assert "verdict hazard" in out
    report = json.loads((tmp_path / "c.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    assert report["verdict"] == "hazard" and report["summary"]["by_severity"]["hazard"] >= 1
    found = [Finding.from_json(f) for f in report["findings"]]
    part_way = [f for f in found if f.kind == "failed-part-way"]
    assert part_way and all(Path(f.regression).parent == tmp_path / "regs" for f in part_way)
    for f in part_way:
        assert main(["replay", f.regression, "--impl", "python"]) == 0, f.regression
    capsys.readouterr()
    assert main([*args, "--fail-on", "hazard"]) == 1


@needs_strace
def test_readme_errno_example_ends_with_a_verdict_that_says_what_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["crash", "--impl", "python", "--op", "write-create", "--errors", "--errno", "ENOSPC",
                 "--export", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[hazard] failed-part-way S-IO-4" in out  # the late unlink error after the index rename
    assert out.rstrip().splitlines()[-1].startswith("0 violations, 1 hazard")
    assert "verdict hazard: hazards SPEC allows" in out


@needs_strace
@pytest.mark.skipif("pi" not in {p.kind for p in PEERS}, reason="set MEMCONFORM_PI_CORE to run the pi peer")
def test_a13_empty_lock_left_by_pi_is_a_measured_minute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pi = next(p for p in PEERS if p.kind == "pi")
    from memconform.harness.faults.campaigns import error_runs
    from memconform.harness.faults.cases import CASES

    report = error_runs(pi, CASES["write-create"], errnos=("ENOSPC",),
                        only=lambda i, c: c.syscall.startswith("write") and c.paths[0].endswith("/.lock"))
    found = [f for f, _p in report.findings("pi", "test")]
    outage = [f for f in found if f.kind == "unavailable"]
    assert outage and outage[0].severity == HAZARD and "for 61" in outage[0].evidence
    assert "failed token write" in outage[0].evidence and outage[0].clause == "A-13"


# --- bad inputs: one line, exit 2 ----------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["crash", "--op", "missing-file.json"], "no such scenario file"),
    (["crash", "--points", "x"], "integers"),
    (["crash", "--op", "bogus"], "unknown op case"),
    (["crash", "--errno", "BOGUS"], "BOGUS"),
    (["locks", "--parallel", "0"], "at least 1"),
])
def test_bad_inputs_give_one_line_and_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--export", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "Traceback" not in err[0], err


@needs_strace
def test_a_kill_before_the_token_write_is_a_measured_minute_then_recovery(tmp_path: Path) -> None:
    """Recovery no longer backdates the lock silently: the outage is measured first (the
    empty lock a kill at the token write leaves: 61 s of lock age), reported, then let pass."""
    from memconform.harness.faults.campaigns import crash_runs
    from memconform.harness.faults.cases import CASES
    from memconform.harness.faults.outcomes import scenario_for as fault_scenario

    case = CASES["write-create"]
    report = crash_runs(PYTHON, case, only=lambda i, c: c.syscall.startswith("write") and c.paths[0].endswith("/.lock"))
    assert len(report.points) == 1
    point = report.points[0]
    assert point.outage is not None and point.outage.seconds is not None and 61 <= point.outage.seconds < 62
    assert not point.recovery, point.recovery  # recovered once the minute had passed
    found = [f for f, _p in report.findings("ref", "test")]
    assert [(f.severity, f.kind) for f in found] == [(HAZARD, "unavailable")]
    assert "an empty agent/memory/.lock left by a kill" in found[0].evidence and "for 61" in found[0].evidence
    assert "(1 of 1 runs)" in found[0].evidence
    fault = {"syscall": point.name, "index": point.index, "action": "kill"}
    exported = export(found[0], fault_scenario(found[0], case, "python", before=case.files("python"),
                                               left=point.left, inject=None, fault=fault), tmp_path)
    assert main(["replay", exported.regression, "--impl", "python"]) == 0
