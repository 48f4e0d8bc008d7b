"""Every finding a regression: exported once per key, valid, and replayable (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

from memconform.harness.cli import main
from memconform.harness.gate import regressions
from memconform.harness.gate.scenarios import load_file
from memconform.harness.oracles.findings import Finding

FINDING = Finding(kind="failed-part-way", severity="hazard", clause="S-INV-8", impl="python 0.1.0",
                  op="remove_memory", syscall="rename", evidence="told it failed, yet tombstoned",
                  reproduce="memconform crash --impl python --op remove-shared --errors")
SCENARIO = {
    "clauses": ["S-REMOVE-4"],
    "given": {"files": {"agent/memory.jsonc": "{\"shared_dir\": false}\n"}},
    "steps": [{"op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"},
               "expect": {"result": "Created memory topic \"A\" (a.md)."}}],
    "then": {"invariants": "all"},
}


def test_export_writes_one_valid_file_per_key(tmp_path: Path) -> None:
    first = regressions.export(FINDING, SCENARIO, tmp_path)
    again = regressions.export(Finding(**{**FINDING.to_json(), "evidence": "other words"}), SCENARIO, tmp_path)
    assert first.regression == again.regression
    files = list(tmp_path.iterdir())
    assert [p.name for p in files] == [Path(first.regression).name]
    data = json.loads(files[0].read_text(encoding="utf-8"))
    assert data["regression"]["kind"] == "failed-part-way"
    assert data["regression"]["command"].startswith("memconform crash")
    assert "finding:failed-part-way" in data["tags"]
    assert load_file(files[0]).id == data["id"]


def test_a_different_key_is_a_different_file(tmp_path: Path) -> None:
    regressions.export(FINDING, SCENARIO, tmp_path)
    regressions.export(Finding(**{**FINDING.to_json(), "syscall": "fsync"}), SCENARIO, tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_an_exported_regression_replays(tmp_path: Path) -> None:
    path = regressions.export(FINDING, SCENARIO, tmp_path).regression
    assert main(["replay", path, "--impl", "python"]) == 0
