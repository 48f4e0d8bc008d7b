"""The reports of conformance, replay, interop and check-history (issue 12 items 1 and 4): the
common JSON top validated against the shipped schema, findings for failed and expected-failed
scenarios, hazards shown and gating only under ``--fail-on hazard``, JUnit carrying the
findings, and no green on nothing."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from memconform.harness import cli
from memconform.harness.checker.history import History
from memconform.harness.checker.linearize import NOT_LINEARIZABLE, UNKNOWN, LinearizabilityVerdict
from memconform.harness.commands import check_history, common, conformance
from memconform.harness.gate.deviations import Deviation
from memconform.harness.gate.runner import Outcome
from memconform.harness.gate.scenarios import Scenario
from memconform.harness.oracles.findings import HAZARD, Finding
from memconform.harness.oracles.invariants import Violation
from memconform.harness.reports import scenarios as report
from memconform.harness.reports.envelope import SCHEMA_PATH, RunReport
from memconform.harness.writers.engine import (
    InteropResult,
    WriterStats,
    findings,
    fresh_history_path,
)

SCHEMA = json.loads(SCHEMA_PATH.read_text("utf-8"))
FAKE_DRIVER = Path(__file__).resolve().parent / "fake_driver.mjs"
# Pure ops: the scenarios change no file, so they need no ``then``.
WRONG = (
    '{"id": "x/wrong", "clauses": ["S-FMT-8"], "steps": [{"op": "to_slug", '
    '"args": {"topic": "A B"}, "expect": {"result": "nope"}}]}'
)
RIGHT = (
    '{"id": "x/right", "clauses": ["S-FMT-9"], "steps": [{"op": "to_slug", '
    '"args": {"topic": "A B"}, "expect": {"result": "a-b"}}]}'
)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    jsonschema.validate(data, SCHEMA)
    return data


def corpus(tmp_path: Path, *texts: str) -> Path:
    root = tmp_path / "corpus" / "x"
    root.mkdir(parents=True)
    for i, text in enumerate(texts):
        (root / f"s{i}.json").write_text(text)
    return root.parent


def test_conformance_json_has_the_common_top(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert cli.main(["conformance", "--run", "write/create-*", "--quiet", "--json", str(out)]) == 0
    data = load(out)
    assert data["verdict"] == "pass"
    assert data["command"][:2] == ["memconform", "conformance"]
    assert data["impls"] == [{"spec": "python", "name": "memconform-reference", "version": data["impls"][0]["version"]}]
    stats = data["stats"]
    assert stats["scenarios"] == stats["executed"] == stats["passed"] == len(data["scenarios"]) > 0
    assert stats["failed"] == stats["xfail"] == stats["xpass"] == stats["errors"] == stats["skipped"] == 0
    assert data["findings"] == [] and sum(data["summary"]["by_severity"].values()) == 0
    assert {"id", "clauses", "status", "failures"} <= set(data["scenarios"][0])
    assert "0 violations, 0 hazards, 0 weaknesses" in capsys.readouterr().out


def test_a_failed_scenario_is_a_violation_finding_in_json_and_junit(tmp_path: Path) -> None:
    root = corpus(tmp_path, WRONG, RIGHT)
    out, xml = tmp_path / "c.json", tmp_path / "c.xml"
    argv = ["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--json", str(out), "--junit", str(xml)]
    assert cli.main(argv) == 1
    data = load(out)
    assert data["verdict"] == "fail"
    assert data["stats"]["failed"] == 1 and data["stats"]["passed"] == 1
    [f] = data["findings"]
    assert (f["kind"], f["severity"], f["clause"], f["op"]) == ("mismatch", "violation", "S-FMT-8", "to_slug")
    assert f["impl"].startswith("memconform-reference ")
    assert f["evidence"].startswith("x/wrong: step 1 (to_slug)")
    assert f["reproduce"].startswith("memconform replay ") and f["reproduce"].endswith("--impl python")
    assert f["regression"].endswith("s0.json")
    assert data["summary"]["by_kind"] == {"mismatch": 1}
    cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase")}
    failure = cases["x/wrong"].find("failure")
    assert failure is not None and failure.get("message") == Finding.from_json(f).line()
    assert cases["x/right"].find("failure") is None


def test_an_expected_failure_is_a_deviation_and_a_stale_one_a_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus(tmp_path, WRONG, RIGHT)
    listed = [Deviation("memconform-reference", "*", "x/wrong", "known to differ")]
    monkeypatch.setattr("memconform.harness.gate.deviations.load", lambda: listed)
    out = tmp_path / "c.json"
    assert cli.main(["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--json", str(out)]) == 0
    data = load(out)
    assert data["verdict"] == "pass" and data["stats"]["xfail"] == 1
    assert [(f["kind"], f["severity"]) for f in data["findings"]] == [("mismatch", "deviation")]
    assert data["summary"]["by_severity"]["deviation"] == 1

    listed[:] = [Deviation("memconform-reference", "*", "x/right", "stale")]
    assert cli.main(["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--json", str(out), "--run", "x/right"]) == 1
    data = load(out)
    assert [(f["kind"], f["severity"]) for f in data["findings"]] == [("stale-deviation", "violation")]


def test_runner_hazards_are_shown_and_gate_only_under_fail_on_hazard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = corpus(tmp_path, RIGHT)
    real = conformance.__dict__["run_until_interrupted"]
    hazard = Finding("raw-error", HAZARD, clause="S-IO-2", op="search", evidence="ENOTDIR reached the user")

    def with_hazard(*a: Any, **k: Any) -> tuple[list[Outcome], bool]:
        outcomes, interrupted = real(*a, **k)
        vars(outcomes[0])["findings"] = [hazard]  # Outcome.findings: the runner's hazards
        return outcomes, interrupted

    monkeypatch.setattr("memconform.harness.commands.conformance.run_until_interrupted", with_hazard)
    out = tmp_path / "c.json"
    assert cli.main(["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert hazard.line() in text and "0 violations, 1 hazard, 0 weaknesses" in text
    data = load(out)
    assert data["verdict"] == "hazard" and data["summary"]["by_severity"]["hazard"] == 1
    argv = ["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--fail-on", "hazard", "--junit", str(tmp_path / "j.xml")]
    assert cli.main(argv) == 1
    failure = ET.parse(tmp_path / "j.xml").getroot().find("testcase/failure")
    assert failure is not None and failure.get("message") == hazard.line()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_run_with_nothing_executed_exits_2_with_an_error_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    argv = ["conformance", "--impl", f"node:{FAKE_DRIVER}", "--run", "pin/*", "--quiet", "--json", str(out)]
    assert cli.main(argv) == 2
    data = load(out)
    assert data["verdict"] == "error"
    assert data["stats"]["executed"] == 0 and data["stats"]["skipped"] == data["stats"]["scenarios"] > 0
    assert data["impls"][0]["name"] == "fake"
    assert "scenarios ran" in capsys.readouterr().err


def test_the_clause_table_says_none_ran_for_a_clause_nothing_executed() -> None:
    sc = Scenario.from_data(json.loads(RIGHT), Path("x/right.json"))
    table = report.clause_table([Outcome(sc, "python", "skip", reason="driver lacks op(s) to_slug")])
    row = table.splitlines()[-1]
    assert row.startswith("S-FMT-9") and row.endswith("none ran")
    assert report.clause_table([Outcome(sc, "python", "pass")]).splitlines()[-1].endswith(" ok")


def test_conclude_turns_findings_into_the_documented_exit_codes(tmp_path: Path) -> None:
    hazard = Finding("unavailable", HAZARD, evidence="busy for ever")

    def code(found: list[Finding], fail_on: str = "violation", **k: Any) -> int:
        args = argparse.Namespace(json=tmp_path / "r.json", fail_on=fail_on, command="x")
        got = common.conclude(args, RunReport(command=["memconform", "x"]), found, **k)
        load(tmp_path / "r.json")
        return got

    assert code([], executed=1) == 0
    assert code([hazard], executed=1) == 0
    assert code([hazard], "hazard", executed=1) == 1
    assert code([], executed=1, unknown=True) == 3
    assert code([], executed=0) == 2


def test_replay_json_has_the_common_top(tmp_path: Path) -> None:
    root = corpus(tmp_path, WRONG, RIGHT)
    out = tmp_path / "r.json"
    assert cli.main(["replay", str(root / "x" / "s1.json"), "--json", str(out)]) == 0
    assert load(out)["verdict"] == "pass"
    assert cli.main(["replay", *map(str, sorted((root / "x").glob("*.json"))), "--json", str(out)]) == 1
    data = load(out)
    assert data["verdict"] == "fail" and data["command"][:2] == ["memconform", "replay"]
    assert [f["kind"] for f in data["findings"]] == ["mismatch"]


def test_interop_writes_a_fresh_history_per_run_and_the_common_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "i.json"
    for _ in range(2):
        assert cli.main(["interop", "--writers", "2", "--ops", "5", "--json", str(out)]) == 0
    histories = {str(p.relative_to(tmp_path)) for p in (tmp_path / "reports").glob("interop-history-*.jsonl")}
    assert len(histories) == 2
    saved = re.findall(r"history saved to (\S+)", capsys.readouterr().out)
    assert len(saved) == 2 and set(saved) == histories  # two runs, two files, each named
    data = load(out)
    assert data["verdict"] == "pass" and data["stats"]["ops"] == 10
    assert data["stats"]["history"] == saved[-1]
    named = tmp_path / "mine.jsonl"
    assert cli.main(["interop", "--writers", "1", "--ops", "3", "--history", str(named)]) == 0
    assert len(History.load(named).ops()) == 3

    assert cli.main(["check-history", str(named), "--json", str(out)]) == 0
    data = load(out)
    assert data["verdict"] == "pass" and data["stats"]["ops"] == 3


def test_check_history_out_of_budget_is_unknown_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = tmp_path / "h.jsonl"
    assert cli.main(["interop", "--writers", "1", "--ops", "2", "--history", str(h)]) == 0
    monkeypatch.setattr(check_history, "check", lambda ops, **k: LinearizabilityVerdict(UNKNOWN))
    out = tmp_path / "c.json"
    assert cli.main(["check-history", str(h), "--json", str(out)]) == 3
    assert load(out)["verdict"] == "unknown"
    monkeypatch.setattr(check_history, "check", lambda ops, **k: LinearizabilityVerdict(NOT_LINEARIZABLE))
    assert cli.main(["check-history", str(h), "--json", str(out)]) == 1
    assert [f["kind"] for f in load(out)["findings"]] == ["not-linearizable"]


def test_interop_findings_name_the_writer_implementation() -> None:
    result = InteropResult(
        History(), [WriterStats("w0", "python"), WriterStats("w1", "pi:/x.mjs")], 1.0,
        violations=[Violation("S-INV-2", "MEMORY.md", "a.md listed twice")],
        lost=["w1: 'Alpha' tok-w1-3"], duplicated=["w0: 'Bravo' tok-w0-2 ×2"],
        verdict=LinearizabilityVerdict(NOT_LINEARIZABLE, failing_lines=["w0 write A -> ok"]),
        errors=["w1 (pi:/x.mjs): pi:/x.mjs: no answer to 'write_memory' within 10 s (driver killed)"],
    )
    labels = {"python": "memconform-reference 0.1.0", "pi:/x.mjs": "openpi-memory 0.3.9"}
    got = {(f.kind, f.severity, f.impl) for f in findings(result, labels, "memconform interop …")}
    everyone = "memconform-reference 0.1.0, openpi-memory 0.3.9"
    assert got == {
        ("lost-write", "violation", "openpi-memory 0.3.9"),
        ("duplicated-write", "violation", "memconform-reference 0.1.0"),
        ("invariant", "violation", everyone),
        ("not-linearizable", "violation", everyone),
        ("hang", "hazard", "openpi-memory 0.3.9"),
    }


def test_fresh_history_paths_never_collide(tmp_path: Path) -> None:
    first = fresh_history_path(tmp_path)
    first.write_text("")
    assert fresh_history_path(tmp_path) != first


def test_differential_json_has_the_common_top(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    assert cli.main(["conformance", "--against", "python", "--run", "pin/*", "--quiet", "--json", str(out)]) == 0
    data = load(out)
    assert data["verdict"] == "pass" and len(data["impls"]) == 2
    assert data["stats"]["comparable"] == data["stats"]["identical"] == data["stats"]["scenarios"] > 0


def test_a_broken_scenario_is_a_scenario_error_not_the_implementations_deviation() -> None:
    sc = Scenario.from_data(json.loads(RIGHT), Path("x/right.json"))
    broken = Outcome(sc, "python", "error", reason="scenario error: a.md changed but `then` neither pins nor ignores it")
    [f] = report.scenario_findings(broken, "memconform-reference 0.1.0", "python")
    assert (f.kind, f.severity) == ("scenario-error", "violation")
    [g] = report.scenario_findings(Outcome(sc, "python", "error", reason="driver exited"), "r", "python")
    assert g.kind == "mismatch"
