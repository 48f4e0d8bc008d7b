"""Expectation comparison (harness.oracles.expect): answers against ``expect``, sandboxes
against ``then``, and the normalisation of differential mode."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memconform.harness.drivers.sandbox import snapshot
from memconform.harness.gate.scenarios import Expect, Scenario, Then
from memconform.harness.oracles.expect import (
    check_answer,
    check_then,
    first_difference,
    normalise_answer,
    normalise_files,
)


@dataclass
class Reply:
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None


def expect(data: dict[str, Any]) -> Expect:
    sc = Scenario.from_data({"id": "x", "clauses": ["S-WRITE-1"], "steps": [{"op": "o", "expect": data}]}, Path("x"))
    return sc.steps[0].expect


def then(data: dict[str, Any]) -> Then:
    return Scenario.from_data({"id": "x", "clauses": ["S-WRITE-1"], "steps": [{"op": "o"}], "then": data}, Path("x")).then


def no_stderr(needles: tuple[str, ...]) -> str:
    return ""


def test_results_errors_and_times() -> None:
    def where(reply: Reply, e: dict[str, Any], elapsed: float = 0.0, strict: bool = False) -> list[str]:
        return [f.where for f in check_answer("step 1 (o)", reply, expect(e), elapsed, no_stderr, strict)]

    assert where(Reply(True, None), {"result": None}) == []
    assert where(Reply(True, 0), {"result": None}) == ["step 1 (o) result"]
    assert where(Reply(False, error={"kind": "E"}), {"result_contains": ["a"]}) == ["step 1 (o)"]
    assert where(Reply(True, {"a": ["xay"]}), {"result_contains": ["a"], "result_excludes": ["z"]}) == []
    assert where(Reply(True, 1), {"error": {"kind": "E"}}, elapsed=9, strict=True) == ["step 1 (o)"]
    err = Reply(False, error={"kind": "E", "code": "EIO", "message": "m"})
    assert where(err, {"error": {"kind": "E", "code": None}}) == ["step 1 (o) error code"]
    assert where(err, {"error": {"kind": "E", "message": "other"}}) == []
    assert where(err, {"error": {"kind": "E", "message": "other"}}, strict=True) == ["step 1 (o) error message"]
    assert where(err, {"error": {"message_matches": "^m$"}, "max_seconds": 1}, elapsed=2) == ["step 1 (o) time"]
    failures = check_answer("s", Reply(True, 1), expect({"error": {"kind": "E"}}), 0, no_stderr, False)
    assert failures[0].expected == "error {'kind': 'E'}"


def test_stderr_needles_are_awaited_through_the_callback() -> None:
    asked: list[tuple[str, ...]] = []

    def stderr(needles: tuple[str, ...]) -> str:
        asked.append(needles)
        return "memory: one\n"

    failures = check_answer("s", Reply(True), expect({"stderr_contains": ["one", "two"]}), 0, stderr, False)
    assert asked == [("one", "two")] and [f.expected for f in failures] == ["contains 'two'"]


def test_then_files_modes_and_listing(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "a.md").write_text("x\ny\n")
    (tmp_path / "agent" / "b.md").write_text("")
    os.chmod(tmp_path / "agent" / "b.md", 0o600)
    after = snapshot(tmp_path)
    ok = then({"files": {"agent/a.md": "x\ny\n"}, "present": ["agent/b.md"], "modes": {"agent/b.md": "0600"},
               "no_other_files": ["agent"], "absent": ["agent/c.md"], "unchanged": ["*"]})
    assert check_then(ok, after, after, tmp_path) == []
    bad = then({"files": {"agent/a.md": "x\nz\n"}, "modes": {"agent/b.md": "0644"}, "no_other_files": ["agent"]})
    failures = check_then(bad, {}, after, tmp_path)
    assert [f.where for f in failures] == ["file agent/a.md", "mode agent/b.md", "directory agent"]
    assert "line 2" in failures[0].detail


def test_first_difference_names_line_and_byte() -> None:
    assert first_difference(b"a\nb\n", b"a\nc\n") == "first difference at byte 2, line 2: expected b'b' / actual b'c'"
    assert first_difference(b"ab", b"a") == "first difference at byte 1, line 1: expected b'ab' / actual b'a'"


def test_normalisation_for_differential_mode() -> None:
    names = {"AGENT": "/r1/agent", "ROOT": "/r1", "PID": "7"}  # the runner's order: deeper first
    files = {
        "agent/memory.jsonc": b'{\n  // a comment\n  "mode": "/r1/agent",\n}\n',
        "agent/memory/MEMORY.md.tmp-123-abc9": b"7",
        "agent/memory/.lock": b"7\t1\tx",
    }
    assert normalise_files(files, names) == {
        "agent/memory.jsonc": b'{"mode": "${AGENT}"}',
        "agent/memory/MEMORY.md.tmp-*": b"7",
        "agent/memory/.lock": b"<lock>",
    }
    other = {"agent/memory.jsonc": b'{"mode": "/r2/agent"} // other words\n'}
    assert normalise_files(other, {"AGENT": "/r2/agent"})["agent/memory.jsonc"] == b'{"mode": "${AGENT}"}'
    assert normalise_files({"agent/memory.jsonc": b"{bad"}, {})["agent/memory.jsonc"] == b"{bad"
    assert normalise_answer(Reply(False, error={"kind": "E", "code": "EIO", "message": "/r1 x"}), names) == (
        "{'ok': False, 'kind': 'E', 'code': 'EIO'}"
    )
    assert normalise_answer(Reply(True, "/r1/agent/memory"), names) == "{'ok': True, 'result': '${AGENT}/memory'}"
    assert normalise_answer(None, names) is None
