"""Cross-tool sequences (harness/gate/cross.py): two drivers on one store, steps dispatched by role,
judged by outcome kind, the store and the co-writer oracle; ``conformance --with`` runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.cross import CROSS_DIR, CrossWorker, Pair, discover_cross, is_cross
from memconform.harness.gate.scenarios import Scenario

CFG = {"agent/memory.jsonc": '{"shared_dir": true}\n', "home/.config/opencode/memory.jsonc": '{"shared_dir": true}\n'}
S = "home/.agents/memory/"
PY = PeerSpec("python")


def scenario(steps: list[dict[str, Any]], then: dict[str, Any] | None = None, **extra: Any) -> Scenario:
    data = {"id": "cross/test", "clauses": ["PEER-18"], "given": {"files": CFG}, "steps": steps,
            "then": then or {"ignore": [{"path": S + "*", "reason": "not pinned here"}]}, **extra}
    return Scenario.from_data(data, Path("cross-test.json"))


def write(by: str, topic: str, outcome: str = "ok", **args: Any) -> dict[str, Any]:
    return {"op": "write_memory", "by": by, "args": {"topic": topic, "content": "x", "summary": "s", **args},
            "expect": {"outcome": outcome}}


def test_the_corpus_is_cross_and_schema_valid() -> None:
    found = discover_cross([], False, [], [])
    assert len(found) >= 50
    assert all(is_cross(sc) and sc.id.startswith("cross/") for sc in found)
    assert all(sc.path.is_relative_to(CROSS_DIR) for sc in found)
    assert {"A", "B"} <= {s.by for sc in found for s in sc.steps}


def test_both_roles_write_one_store_and_plant_locks_with_their_own_pid() -> None:
    sc = scenario([
        write("A", "Alpha"), {"op": "pin_memory", "by": "B", "args": {"topic": "Alpha", "pin": True}, "expect": {"outcome": "ok"}},
        {"op": "plant_lock", "by": "B", "args": {"dir": S.rstrip("/"), "pid": "self"}},
    ], {"matches": {S + "MEMORY.md": r"# Memory Index\n+- \[Alpha\]\(alpha\.md\) \[pin\] \S+ -- s\n?"},
        "ignore": [{"path": S + "alpha.md", "reason": "written by step 1"}]})
    o = CrossWorker(Pair(PY, PY)).run(sc)
    assert o.status == "pass", [f.render() for f in o.failures] or o.reason
    pid, _, tail = o.files[S + ".lock"].decode().partition("\t")
    assert int(pid) > 0 and tail.endswith("\tplanted")  # a driver's pid ("self" of role B)
    assert o.impl == "python+python"


def test_a_wrong_outcome_and_a_wrong_store_fail_the_sequence() -> None:
    sc = scenario([write("A", "Alpha"), {"op": "remove_memory", "by": "B", "args": {"topic": "Alpha"},
                                         "expect": {"outcome": "refused"}}],
                  {"matches": {S + "MEMORY.md": r"# Memory Index\n\n- \[Alpha\].*\n"},
                   "ignore": [{"path": S + "*", "reason": "others"}]})
    o = CrossWorker(Pair(PY, PY)).run(sc)
    assert o.status == "fail"
    wheres = [f.where for f in o.failures]
    assert "step 2 (remove_memory by B) outcome" in wheres and f"file {S}MEMORY.md" in wheres


def test_a_sequence_a_role_cannot_run_is_skipped_naming_the_role() -> None:
    sc = scenario([write("A", "Alpha"), {"op": "repair_memory", "by": "B", "args": {}}])
    o = CrossWorker(Pair(PY, PY)).run(sc)
    assert (o.status, o.reason) == ("skip", "B (python) lacks op(s) repair_memory")


def test_files_outside_the_shared_store_are_the_tools_own() -> None:
    sc = scenario([write("A", "Alpha"), write("B", "Beta")],
                  {"matches": {S + "MEMORY.md": r"(?s).*alpha\.md.*beta\.md.*"},
                   "ignore": [{"path": S + "*.md", "reason": "topics"}]})
    o = CrossWorker(Pair(PY, PY)).run(sc)
    assert o.status == "pass", [f.render() for f in o.failures] or o.reason


def _cli(*args: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, Any]]:
    """``memconform conformance --impl python …`` in this process (the drivers are processes)."""
    from memconform.harness.cli import main

    out = tmp / "r.json"
    code = main(["conformance", "--impl", "python", *args, "--no-export", "--quiet", "--json", str(out)])
    seen = capsys.readouterr()
    return code, seen.out + seen.err, json.loads(out.read_text()) if out.exists() else {}


def test_conformance_with_runs_a_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text, report = _cli("--with", "python", "--run", "cross/removal-by-b-honoured-on-other-writes",
                              tmp=tmp_path, capsys=capsys)
    assert code == 0, text
    assert "pair: A=memconform-reference" in text and "1 passed" in text
    assert report["pair"] == {"A": "python", "B": "python"}


@pytest.mark.parametrize(("extra", "says"), [
    (["--against", "python"], "--with and --against"),
    (["--run", "cross/no-such-*"], "no cross-tool sequence selected"),
])
def test_bad_pair_runs_are_one_line_usage_errors(extra: list[str], says: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = _cli("--with", "python", *extra, tmp=tmp_path, capsys=capsys)
    assert code == 2 and says in text and "Traceback" not in text
