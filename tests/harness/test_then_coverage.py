"""Every file a scenario's steps change is pinned by ``then`` or ignored with a reason
(issue 12 item 8): the runner makes a changed, unpinned file an error of the scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.drivers.sandbox import SNAPSHOT_DIR
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import SCENARIOS_DIR, Scenario, Then
from memconform.harness.oracles.expect import coverage_reason, uncovered

WRITE = {"op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"}}


def then(data: dict[str, Any]) -> Then:
    return Scenario.from_data({"id": "x", "clauses": ["S-WRITE-1"], "steps": [{"op": "o"}], "then": data}, Path("x")).then


def test_a_changed_file_needs_a_pin_or_a_reasoned_ignore() -> None:
    before = {"agent/memory": SNAPSHOT_DIR, "agent/memory/MEMORY.md": b"old", "agent/memory/gone.md": b"g"}
    after = {
        "agent/memory": SNAPSHOT_DIR, "agent/memory/MEMORY.md": b"new", "agent/memory/a.md": b"a",
        "agent/memory/.lock": b"1\t2\tx", "agent/memory/a.md.tmp-1-2-abc": b"", "agent/new": SNAPSHOT_DIR,
    }
    # created, modified and deleted all count; directories, locks and temporaries do not
    assert uncovered(then({}), before, after, {}) == [
        "agent/memory/MEMORY.md", "agent/memory/a.md", "agent/memory/gone.md",
    ]
    pinned = then({"files": {"agent/memory/MEMORY.md": "new"}, "matches": {"agent/memory/a.md": "a"},
                   "absent": ["agent/memory/gone.md"]})
    assert uncovered(pinned, before, after, {}) == []
    ignored = then({"ignore": [{"path": "agent/memory/*.md", "reason": "volatile in this scenario"}]})
    assert uncovered(ignored, before, after, {}) == []
    assert uncovered(then({"unchanged": ["*"]}), before, after, {}) == []
    assert "agent/memory/a.md changed but `then` neither pins nor ignores it" in coverage_reason(["agent/memory/a.md"])


def test_what_the_scenario_itself_wrote_is_not_the_implementations_change() -> None:
    before: dict[str, bytes] = {}
    after = {"home/marker": b"m", "agent/x.md": b"peer"}
    assert uncovered(then({}), before, after, {"home/marker": b"m", "agent/x.md": b"mine"}) == ["agent/x.md"]


def test_the_schema_requires_a_reason_for_each_ignore() -> None:
    schema = json.loads((SCENARIOS_DIR / "scenario.schema.json").read_text())
    base = {"id": "x", "clauses": ["S-WRITE-1"], "steps": [{"op": "read_index"}]}
    jsonschema.validate({**base, "then": {"ignore": [{"path": "a", "reason": "why"}]}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**base, "then": {"ignore": [{"path": "a"}]}}, schema)


def _scenario(then_data: dict[str, Any]) -> Scenario:
    data = {
        "id": "coverage/probe", "clauses": ["S-WRITE-1"], "given": {"files": {"agent/memory.jsonc": "{}"}},
        "steps": [WRITE, {"op": "put_file", "args": {"path": "home/marker", "content": "m"}}],
        "then": then_data,
    }
    return Scenario.from_data(data, Path("probe.json"))


def test_the_runner_makes_an_unpinned_change_a_scenario_error() -> None:
    worker = Worker(PeerSpec.parse("python"))
    try:
        left_out = worker.run(_scenario({}))
        assert left_out.status == "error"
        assert left_out.reason.startswith("scenario error: agent/memory/MEMORY.md, agent/memory/a.md changed")
        ignored = worker.run(_scenario({"ignore": [{"path": "agent/memory/*", "reason": "probe"}]}))
        assert ignored.status == "pass", ignored.reason
    finally:
        worker.close()


def test_the_corpus_pins_what_it_touches_on_the_reference() -> None:
    """The shipped corpus passes its own coverage check: spot-check the scenario of issue 12."""
    from memconform.harness.gate.scenarios import load_file

    sc = load_file(SCENARIOS_DIR / "conformance/invariants/removal-intent-shared-vs-local.json")
    assert "home/.agents/memory/MEMORY.md" in sc.then.files
    worker = Worker(PeerSpec.parse("python"))
    try:
        outcome = worker.run(sc)
    finally:
        worker.close()
    assert outcome.status == "pass", outcome.reason + "".join(f.render() for f in outcome.failures)


def test_a_failed_scenario_keeps_its_failure_and_names_the_unpinned_files() -> None:
    sc = _scenario({})
    data = {**sc.data, "steps": [{**WRITE, "expect": {"result": "not what it says"}}]}
    worker = Worker(PeerSpec.parse("python"))
    try:
        outcome = worker.run(Scenario.from_data(data, Path("probe.json")))
    finally:
        worker.close()
    assert outcome.status == "fail"
    assert outcome.failures[0].where == "step 1 (write_memory) result"
    assert outcome.failures[-1].where == "then" and "agent/memory/a.md" in outcome.failures[-1].actual
