"""Typed scenarios (issue 11): read, schema-checked and typed once; placeholders bound once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.gate.scenarios import (
    FILE_ACTIONS,
    SCENARIOS_DIR,
    Clock,
    ErrorExpect,
    Scenario,
    ScenarioError,
    discover,
    instant_ms,
    iso_instant,
    load_file,
)
from memconform.reference.clock import parse_instant

CORPUS = discover(SCENARIOS_DIR)


def typed(data: dict[str, Any]) -> Scenario:
    return Scenario.from_data({"id": "x/y", "clauses": ["S-WRITE-1"], **data}, Path("/virtual/x/y.json"))


def test_steps_and_expectations_are_typed() -> None:
    sc = typed(
        {
            "steps": [
                {"op": "read_index", "expect": {"result": None}},
                {"op": "write_memory", "args": {"topic": "t"}, "timeout": 2, "expect": {"error": {"kind": "E", "code": None}}},
                {"op": "put_file", "args": {"path": "a", "content": "x"}},
            ],
            "then": {"invariants": ["index"], "absent": ["b"]},
        }
    )
    first, second, third = sc.steps
    assert first.expect.has_result and first.expect.result is None and first.expect.wants_result
    assert second.args == {"topic": "t"} and second.timeout == 2
    assert second.expect.error == ErrorExpect(kind="E", code=None, has_code=True)
    assert not second.expect.wants_result
    assert third.is_file_action and not first.is_file_action
    assert sc.driver_ops == {"read_index", "write_memory"}
    assert sc.then.invariants == ("index",) and sc.then.absent == ("b",)
    assert sc.clock == Clock() and not sc.needs_fresh_process and sc.faults == ()


def test_bind_fills_placeholders_once_and_leaves_the_others() -> None:
    sc = typed(
        {
            "env": {"PI_CODING_AGENT_DIR": "${ROOT}/x"},
            "given": {"files": {"agent/memory/.lock": "${PID}\t1\tx"}, "symlinks": {"l": "${AGENT}/t"}},
            "steps": [{"op": "memory_dir", "expect": {"result": "${LOCAL}", "stderr_contains": ["${PID}"]}}],
        }
    )
    assert sc.placeholders == {"ROOT", "PID", "AGENT", "LOCAL"}
    bound = sc.bind({"ROOT": "/r", "AGENT": "/r/agent", "LOCAL": "/r/agent/memory"})
    assert bound.env == {"PI_CODING_AGENT_DIR": "/r/x"} and bound.needs_fresh_process
    assert bound.given.symlinks == {"l": "/r/agent/t"}
    assert bound.given.files == {"agent/memory/.lock": "${PID}\t1\tx"}
    assert bound.steps[0].expect.result == "/r/agent/memory"
    assert bound.bind({"PID": "42"}).steps[0].expect.stderr_contains == ("42",)
    assert sc.steps[0].expect.result == "${LOCAL}"  # the loaded scenario is left as it was
    assert bound.bind({"HOME": "/h"}) is bound  # nothing of it used: no new value


def test_a_regression_fault_is_a_typed_field() -> None:
    one = {"path": "agent/memory/.lock", "syscall": "write", "nth": 1, "action": "error", "errno": "EIO"}
    assert typed({"steps": [{"op": "x"}], "regression": {"inject": one}}).faults == (one,)
    assert typed({"steps": [{"op": "x"}], "regression": {"inject": [one, one]}}).faults == (one, one)
    assert typed({"steps": [{"op": "x"}], "regression": {"defect": "d"}}).faults == ()
    faulted = [sc for sc in discover(SCENARIOS_DIR / "regressions") if sc.faults]
    assert faulted and all(f["path"] and f["syscall"] for sc in faulted for f in sc.faults)


def test_file_actions_of_the_corpus_are_known() -> None:
    used = {s.op for sc in CORPUS for s in sc.steps if s.is_file_action}
    assert used <= FILE_ACTIONS and "put_file" in used


@pytest.mark.parametrize(
    "text",
    sorted({sc.clock.now for sc in CORPUS} | {"2026-03-01T02:00:00+05:30", "2026-01-15T12:00:00.999Z", "2026-01-15T12:00:00"}),
)
def test_instants_read_as_the_reference_reads_them(text: str) -> None:
    assert instant_ms(text) == parse_instant(text)
    assert instant_ms(iso_instant(instant_ms(text))) == instant_ms(text)


def test_load_file_types_what_it_validated(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"id": "a/b", "clauses": ["S-WRITE-1"], "clock": {"tz": "Asia/Tokyo"}, "steps": [{"op": "x"}]}))
    sc = load_file(path)
    assert sc.id == "a/b" and sc.clauses == ("S-WRITE-1",) and sc.path == path
    assert sc.clock.tz == "Asia/Tokyo" and sc.clock.now_ms == parse_instant(sc.clock.now)


def _scenario(**fields: Any) -> dict[str, Any]:
    return {"id": "mine/typo", "clauses": ["S-WRITE-1"], "description": "a typo",
            "steps": [{"op": "list_memories", "expect": {"ok": True}}], "then": {"ignore": {}}} | fields


@pytest.mark.parametrize(("edit", "where", "words"), [
    (lambda d: d | {"stepz": d.pop("steps")}, "$", "unknown field 'stepz' (did you mean 'steps'?)"),
    (lambda d: {k: v for k, v in d.items() if k != "steps"}, "$", "needs one of the fields 'steps', 'host'"),
    (lambda d: d | {"steps": [{"op": "list_memories", "expectt": {}}]}, "$.steps[0]", "unknown field 'expectt'"),
])
def test_a_misspelled_field_is_named_not_the_whole_scenario(edit: Any, where: str, words: str, tmp_path: Path) -> None:
    """Issue 31 item 8: ``stepz`` printed the whole scenario dict and "is not valid under any
    of the given schemas" without naming the field."""
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(edit(_scenario())))
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert caught.value.json_path == where and words in caught.value.message, str(caught.value)
    assert "description" not in caught.value.message and len(str(caught.value)) < 300, str(caught.value)
