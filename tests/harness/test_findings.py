"""The Finding type, the run verdict and the JSON report top (docs/ARCHITECTURE.md §6, issue 12)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from memconform.harness.oracles import findings as F
from memconform.harness.oracles.findings import Finding
from memconform.harness.reports import envelope

SCHEMA = json.loads(envelope.SCHEMA_PATH.read_text(encoding="utf-8"))


def _f(severity: str, kind: str = "lost-write", **kw: str) -> Finding:
    return Finding(kind=kind, severity=severity, **kw)


def test_unknown_severity_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown severity"):
        _f("fine")


def test_nothing_executed_is_an_error_never_a_pass() -> None:
    assert F.verdict([], executed=0) == F.ERROR
    assert F.exit_code(F.ERROR) == F.EXIT_USAGE


@pytest.mark.parametrize(
    ("severities", "unknown", "fail_on_hazard", "want", "code"),
    [
        ((), False, False, F.PASS, 0),
        ((F.WEAKNESS, F.DEVIATION), False, False, F.PASS, 0),
        ((F.HAZARD,), False, False, F.HAZARDOUS, 0),
        ((F.HAZARD,), False, True, F.FAIL, 1),
        ((F.HAZARD, F.VIOLATION), False, False, F.FAIL, 1),
        ((), True, False, F.UNKNOWN, 3),
        ((F.VIOLATION,), True, False, F.FAIL, 1),
    ],
)
def test_verdict_and_exit_code(
    severities: tuple[str, ...], unknown: bool, fail_on_hazard: bool, want: str, code: int
) -> None:
    got = F.verdict([_f(s) for s in severities], executed=1, unknown=unknown, fail_on_hazard=fail_on_hazard)
    assert got == want
    assert F.exit_code(got, fail_on_hazard=fail_on_hazard) == code


def test_hazards_are_counted_and_named_in_the_summary_line() -> None:
    found = [_f(F.HAZARD, "unavailable"), _f(F.HAZARD, "raw-error"), _f(F.WEAKNESS, "torn")]
    assert F.summary_line(found) == "0 violations, 2 hazards, 1 weakness"
    s = F.summary(found)
    assert s["by_severity"] == {"violation": 0, "hazard": 2, "weakness": 1, "deviation": 0}
    assert s["by_kind"] == {"raw-error": 1, "torn": 1, "unavailable": 1}


def test_line_says_where_and_what() -> None:
    f = _f(F.HAZARD, "unavailable", clause="S-LOCK-5", impl="openpi-memory 0.3.9", op="write_memory",
           evidence="a directory at .lock: every write busy, for ever")
    assert f.line() == ("[hazard] unavailable S-LOCK-5 openpi-memory 0.3.9 write_memory: "
                        "a directory at .lock: every write busy, for ever")


def test_dedupe_by_regression_key() -> None:
    a = _f(F.VIOLATION, op="write_memory", syscall="rename", evidence="first")
    b = _f(F.VIOLATION, op="write_memory", syscall="rename", evidence="second")
    c = _f(F.VIOLATION, op="write_memory", syscall="fsync")
    assert F.dedupe([a, b, c]) == [a, c]


def test_json_round_trip_and_schema() -> None:
    found = [_f(F.VIOLATION, clause="S-INV-8", impl="python 0.1.0", op="remove_memory"),
             _f(F.HAZARD, "hang", syscall="openat", path="agent/memory/MEMORY.md")]
    assert [Finding.from_json(f.to_json()) for f in found] == found
    report = envelope.RunReport(command=["memconform", "crash"], impls=[envelope.ImplInfo("python")])
    report.findings = found
    report.stats = {"states": 3}
    data = report.finish(F.verdict(found, executed=3)).to_json()
    jsonschema.validate(data, SCHEMA)
    assert data["verdict"] == "fail"
    assert data["summary"]["by_severity"]["hazard"] == 1


def test_schema_rejects_a_finding_without_severity() -> None:
    report = envelope.RunReport(command=["memconform"]).finish(F.PASS).to_json()
    report["findings"] = [{"kind": "x"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, SCHEMA)
