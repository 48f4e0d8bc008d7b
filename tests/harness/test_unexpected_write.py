"""Who is at fault for a changed file ``then`` does not pin (issue 30 item 8): the reference
defines what a scenario must pin (the corpus runs on it), so a file the reference changes and
``then`` leaves out is the scenario's error; a file another implementation changes that no step
may change is that implementation's ``unexpected-write``, a violation naming the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import load_file
from memconform.harness.reports.scenarios import scenario_findings

ROOT = Path(__file__).resolve().parents[2]
REWORDED = ROOT / "examples" / "reworded_driver.mjs"
BASE = ROOT / "scenarios/conformance/shared-store/names/slug-postgresql-setup.json"


def _forgets_the_topic_file(tmp_path: Path) -> Path:
    """A first write whose `then` pins the index but not the topic file the write creates."""
    data = json.loads(BASE.read_text(encoding="utf-8"))
    data["id"] = "mine/forgets-the-topic-file"
    store = data["then"]["store"]
    del store[next(k for k in store if k.endswith("postgresql-setup.md"))]
    del data["then"]["no_other_files"]
    path = tmp_path / "forgets.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _run(spec: PeerSpec, path: Path) -> tuple[str, str, list[str], list[tuple[str, str]]]:
    worker = Worker(spec)
    try:
        o = worker.run(load_file(path))
    finally:
        worker.close()
    return o.status, o.reason, [f.detail for f in o.failures], [(f.kind, f.severity) for f in scenario_findings(o, "x", spec.name)]


def test_the_reference_leaving_a_file_unpinned_is_the_scenarios_error(tmp_path: Path) -> None:
    status, reason, _, found = _run(PeerSpec("python"), _forgets_the_topic_file(tmp_path))
    assert status == "error"
    assert reason.startswith("scenario error: home/.agents/memory/postgresql-setup.md changed but `then` neither pins")
    assert found == [("scenario-error", "violation")]


def test_another_tool_writing_a_file_no_step_may_change_is_its_unexpected_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    status, _, details, found = _run(PeerSpec("node", str(REWORDED)), _forgets_the_topic_file(tmp_path))
    assert status == "fail"
    assert details == ["unexpected-write: the implementation changed home/.agents/memory/postgresql-setup.md"]
    assert found == [("unexpected-write", "violation")]


@pytest.mark.parametrize("severity", ["violation", "hazard", "weakness", "deviation"])
def test_a_finding_kind_never_reuses_a_severity_name(severity: str) -> None:
    """`[violation] deviation SS-…` read as two severities; a kind says what was seen."""
    from memconform.harness.oracles.findings import Finding

    with pytest.raises(ValueError, match="is a severity name"):
        Finding(severity, "violation")
    assert Finding("mismatch", severity).line().startswith(f"[{severity}] mismatch")
