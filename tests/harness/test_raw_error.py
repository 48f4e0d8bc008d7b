"""The ``raw-error`` hazard (issue 12 item 2): OS error text reaching the tool user where the
store has a plain explanation is reported beside SPEC's verdict, which it does not change."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import SCENARIOS_DIR, load_file
from memconform.harness.oracles.findings import HAZARD
from memconform.harness.oracles.hazards import explain, os_text, raw_error, situation


@dataclass
class Reply:
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None


ROOT = "/tmp/sb"


def test_os_text_is_found_in_node_and_python_forms() -> None:
    assert os_text("ENOTDIR: not a directory, scandir '/x'") == "ENOTDIR"
    assert os_text("[Errno 21] Is a directory: '/x'") == "[Errno 21]"
    assert os_text("IsADirectoryError: x") == "IsADirectoryError"
    assert os_text("Unsafe non-regular file: /x") is None
    assert os_text("Error: memory store is busy") is None


def test_a_store_directory_that_is_a_file_is_a_hazard_with_the_plain_words() -> None:
    answer = Reply(False, error={"kind": "Error", "code": "ENOTDIR", "message": f"ENOTDIR: not a directory, scandir '{ROOT}/agent/memory'"})
    where = {"agent": "dir", "agent/memory": "file"}
    found = raw_error(answer, where, root=ROOT, op="search", clause="S-DISP-5", mentioned=("agent/memory",))
    assert found is not None and found.kind == "raw-error" and found.severity == HAZARD
    assert found.clause == "S-DISP-5" and found.op == "search" and found.syscall == "scandir"
    assert found.evidence == (
        "the tool user sees `ENOTDIR: not a directory, scandir 'agent/memory'` where "
        "'the memory directory agent/memory is a file, where a directory should be' would say what is wrong"
    )


def test_no_hazard_without_os_text_or_without_a_plain_explanation() -> None:
    plain = Reply(False, error={"kind": "Error", "message": f"Unsafe non-regular file: {ROOT}/agent/HANDOFF.md"})
    assert raw_error(plain, {"agent/HANDOFF.md": "dir"}, root=ROOT, op="read_handoff", clause="c") is None
    full = Reply(False, error={"kind": "Error", "code": "ENOSPC", "message": "ENOSPC: no space left on device, write"})
    healthy = {"agent": "dir", "agent/memory": "dir", "agent/memory/MEMORY.md": "file"}
    assert raw_error(full, healthy, root=ROOT, op="write_memory", clause="c") is None
    assert raw_error(Reply(True, result="Created memory topic"), healthy, root=ROOT, op="w", clause="c") is None


def test_explanations_for_the_usual_situations() -> None:
    assert explain({"agent": "file"}) == "the agent directory agent is a file, where a directory should be"
    assert explain({"agent/memory/MEMORY.md": "symlink-loop"}) == "the index agent/memory/MEMORY.md is a symlink that loops"
    assert explain({"agent/HANDOFF.md": "dir"}) == "the handoff file agent/HANDOFF.md is a directory where a file should be"


def test_situation_reads_the_disk(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/memory").write_text("x")
    os.symlink("loop2", tmp_path / "loop")
    os.symlink("loop", tmp_path / "loop2")
    os.symlink("nowhere", tmp_path / "dangling")
    got = situation(tmp_path, ("loop", "dangling"))
    assert got["agent/memory"] == "file" and got["agent/memory/MEMORY.md"] == "missing"
    assert got["loop"] == "symlink-loop" and got["dangling"] == "dangling"


def _store_dir_is_a_file(spec: str) -> list[Any]:
    sc = load_file(SCENARIOS_DIR / "conformance/errors/store-dir-is-a-file.json")
    worker = Worker(PeerSpec.parse(spec))
    try:
        outcome = worker.run(sc)
    finally:
        worker.close()
    assert outcome.status == "pass", outcome.reason  # SPEC's verdict stands
    return outcome.findings


def test_the_runner_reports_it_beside_a_passing_scenario_on_the_reference() -> None:
    found = _store_dir_is_a_file("python")
    by_op = {f.op: f for f in found}
    assert set(by_op) == {"write_memory", "remove_memory", "pin_memory", "search"}
    assert "ENOTDIR: not a directory, scandir 'agent/memory'" in by_op["search"].evidence
    assert by_op["search"].impl.startswith("memconform-reference")
    assert by_op["search"].reproduce.startswith("memconform replay ")
    json.dumps([f.__dict__ for f in found])  # plain data, for --json


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_CORE"), reason="MEMCONFORM_PI_CORE not set")
def test_the_real_pi_core_shows_the_raw_error_too() -> None:
    found = _store_dir_is_a_file("pi:" + os.environ["MEMCONFORM_PI_CORE"])
    assert "search" in {f.op for f in found}
