"""A crash regression exported from any implementation replays on every driver (issue 30).

The ``unavailable`` hazard a kill at the lock's token write leaves (an empty ``.lock``: every
write busy for 60 s) exports as "the next write is refused busy".  It used to expect the busy
*text*, which a driver that declares ``outcome_kinds`` (examples/reworded_driver.mjs) does not
print, so its own regression failed on it.  The expectation is now the outcome kind, which a
driver that does not declare kinds meets only with the exact busy text (oracles.outcome_kind):
one file, both kinds of driver.

The default test kills the example at its ``.lock`` write alone and takes the outage as the
60 s SPEC gives an empty lock (measuring it costs a busy probe per lock age, half a minute
under load); with MEMCONFORM_SLOW=1 the whole ``crash --points publishing`` run of the case
finds and exports it, outage measured, through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.campaigns import crash_runs
from memconform.harness.faults.cases import CASES
from memconform.harness.faults.outcomes import lock_state, scenario_for
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.gate.regressions import export
from memconform.harness.oracles.crash_judge import SHARED_REL
from memconform.harness.oracles.findings import HAZARD
from memconform.harness.writers.availability import hazard_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "reworded_driver.mjs"
REPLAY_ON = (f"node:{EXAMPLE}", "python")  # a driver declaring outcome_kinds, and the reference
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or strace_unavailable() is not None,
    reason=f"needs node and strace ({strace_unavailable() or 'node missing'})",
)


@pytest.fixture(autouse=True)
def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)


def _replays_everywhere(regression: Path, tmp_path: Path) -> None:
    """The file expects busy by kind, and passes on the declaring driver and the reference."""
    data = json.loads(regression.read_text())
    assert [s.get("expect") for s in data["steps"]] == [{"outcome": "busy"}], data["steps"]  # no tool's sentence
    for impl in REPLAY_ON:
        out = tmp_path / f"replay-{impl.split(':')[0]}.json"
        assert main(["replay", str(regression), "--impl", impl, "--json", str(out)]) == 0, impl
        stats = json.loads(out.read_text())["stats"]
        assert stats["passed"] == 1 and stats["failed"] == 0, (impl, stats)


def test_an_unavailable_hazard_found_on_a_declaring_driver_replays_on_it_and_on_the_reference(tmp_path: Path) -> None:
    case = CASES["write-shared"]
    spec = PeerSpec("node", str(EXAMPLE))
    report = crash_runs(spec, case, only=lambda _i, c: c.syscall.startswith("write") and c.paths[0].endswith("/.lock"),
                        with_recovery=False)
    assert len(report.points) == 1 and report.points[0].missed is None, report.render(True)
    point = report.points[0]
    lock = f"{SHARED_REL}/.lock"
    assert point.left.get(lock) == b"", report.render(True)  # killed before its token landed
    found = hazard_for(lock_state(((lock, "empty"),), f"left by a kill at {point.name}"), 60.0,
                       impl="memconform-example-reworded 0.1.0", op=case.op)
    assert found is not None and found.severity == HAZARD
    fault = {"syscall": point.name, "index": point.index, "action": "kill"}
    exported = export(found, scenario_for(found, case, spec.kind, before=case.files(spec.kind), left=point.left,
                                          inject=None, fault=fault), tmp_path)
    assert exported.regression is not None
    _replays_everywhere(Path(exported.regression), tmp_path)


@pytest.mark.skipif(os.environ.get("MEMCONFORM_SLOW") != "1", reason="a crash campaign with outages measured: MEMCONFORM_SLOW=1")
def test_crash_exports_through_the_cli_replay_on_both(tmp_path: Path) -> None:
    exported = tmp_path / "regressions"
    assert main(["crash", "--impl", f"node:{EXAMPLE}", "--op", "write-shared", "--points", "publishing",
                 "--export", str(exported), "--json", str(tmp_path / "crash.json")]) == 0
    files = sorted(exported.glob("unavailable-*.json"))
    assert files, sorted(p.name for p in exported.iterdir())
    for f in files:
        _replays_everywhere(f, tmp_path)
