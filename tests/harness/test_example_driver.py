"""The example driver of docs/IMPLEMENTING.md (examples/one_process_per_op.mjs: Node, one short-lived
reference process per op) passes a slice of the shared-store gate and a cross-tool sequence with
the reference, and keeps to the protocol (every message schema-checked)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from memconform.harness.drivers import ops
from memconform.harness.drivers.peers import PeerSpec, start_driver
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.gate.cross import CROSS_DIR, Pair, run_pair
from memconform.harness.gate.runner import run_all
from memconform.harness.gate.scenarios import SCENARIOS_DIR, discover

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "one_process_per_op.mjs"
SLICE = ["shared-store/pins/pin-by-name", "shared-store/frontmatter/created-kept-on-append"]

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> PeerSpec:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    return PeerSpec("node", str(EXAMPLE))


def test_its_hello_is_valid_and_its_ops_are_in_the_vocabulary(example: PeerSpec) -> None:
    sandbox = Sandbox.create()
    try:
        with start_driver(example, sandbox.env(), cwd=str(sandbox.root), validate=True) as driver:
            assert ops.result_errors("hello", driver.hello) == []
            assert driver.ops <= ops.vocabulary()
            assert {"write_memory", "remove_memory", "pin_memory"} <= driver.ops
            assert driver.hello["profile"] == "shared-store"
            unsupported = driver.call("search", {"query": "x"})
            assert not unsupported.ok and unsupported.error is not None and unsupported.error["kind"] == "unsupported"
    finally:
        sandbox.remove()


def test_it_passes_a_slice_of_the_shared_store_gate(example: PeerSpec) -> None:
    scenarios = discover(SCENARIOS_DIR / "conformance", run=SLICE)
    assert [sc.id for sc in scenarios] == sorted(SLICE)
    outcomes = run_all(example, scenarios, timeout=30, validate=True)
    assert [(o.scenario.id, o.status) for o in outcomes] == [(i, "pass") for i in sorted(SLICE)], \
        [f.render() for o in outcomes for f in o.failures] + [o.reason for o in outcomes]


def test_it_runs_a_cross_tool_sequence_with_the_reference(example: PeerSpec) -> None:
    scenarios = discover(CROSS_DIR, run=["cross/pin-by-b-refuses-removal"])
    outcomes = run_pair(Pair(example, PeerSpec("python")), scenarios, timeout=30, validate=True)
    assert [o.status for o in outcomes] == ["pass"], [f.render() for o in outcomes for f in o.failures]


# ------------------------------------------------------------------ the reworded example (issue 22, 25)

REWORDED = EXAMPLE.parent / "reworded_driver.mjs"
PLANTED = Path(__file__).resolve().parent / "planted_driver.mjs"
SEQUENCE = "shared-store/sequences/write-pin-append-keeps-pin"


def test_the_reworded_example_declares_kinds_and_words_every_result_its_own_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    sandbox = Sandbox.create()
    try:
        with start_driver(PeerSpec("node", str(REWORDED)), sandbox.env(), cwd=str(sandbox.root), validate=True) as driver:
            assert driver.hello["outcome_kinds"] is True and driver.hello["profile"] == "shared-store"
            assert driver.hello["impl"] == "memconform-example-reworded"
            first = driver.call("write_memory", {"topic": "Alpha", "content": "x", "summary": "s"})
            again = driver.call("write_memory", {"topic": "Alpha", "content": "y", "summary": "s"})
            gone = driver.call("remove_memory", {"topic": "nope"})
        assert (first.result, first.outcome) == ('Saved new note "Alpha" as alpha.md.', {"kind": "ok", "detail": "created"})
        assert again.outcome == {"kind": "ok", "detail": "updated"} and "Added to note" in again.result
        assert gone.outcome == {"kind": "not-found"} and gone.result == 'No note matches "nope".'
    finally:
        sandbox.remove()


def _run_planted(plant: str, deviations: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    import json

    from memconform.harness.cli import main

    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    monkeypatch.setenv("MEMCONFORM_PLANT", plant)
    code = main(["conformance", "--impl", f"node:{PLANTED}", "--run", SEQUENCE, "--deviations", str(deviations),
                 "--parallel", "1", "--quiet", "--no-export", "--json", str(out)])
    data: dict[str, object] = json.loads(out.read_text())
    data["code"] = code
    return data


def test_a_second_bug_inside_a_listed_deviation_is_a_violation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25 item 1: the row lists one difference (pin answered refused); the same scenario
    with a second planted bug (the pin never done: the store differs too) is reported as a
    failure naming the unexpected difference, not as the expected deviation."""
    from memconform.harness.gate import deviations

    rows = tmp_path / "MINE.md"
    first, differing = "step 2 (pin_memory) outcome: outcome refused:pinned", "step 2 (pin_memory) outcome"
    rows.write_text(f"{deviations.HEADER}\n|---|---|---|---|---|---|\n"
                    f"| memconform-example-reworded | 0.1.0 | {SEQUENCE} | {first} | {differing} | harmless: planted |\n")
    one = _run_planted("pin-refused", rows, tmp_path / "one.json", monkeypatch)
    [sc] = one["scenarios"]  # type: ignore[misc]
    assert (one["code"], sc["status"]) == (0, "xfail"), sc
    two = _run_planted("pin-refused,pin-lost", rows, tmp_path / "two.json", monkeypatch)
    [sc] = two["scenarios"]  # type: ignore[misc]
    assert (two["code"], sc["status"]) == (1, "fail"), sc
    assert "lists another difference" in sc["reason"] and "also differs: store home/.agents/memory/MEMORY.md" in sc["reason"], sc["reason"]
    assert [f["kind"] for f in two["findings"]] == ["mismatch"]  # type: ignore[index]
    assert two["findings"][0]["severity"] == "violation"  # type: ignore[index]


def test_example_driver_command_prints_the_shipped_paths(capsys: pytest.CaptureFixture[str]) -> None:
    from memconform.harness.cli import main

    assert main(["example-driver"]) == 0
    assert Path(capsys.readouterr().out.strip()) == REWORDED.resolve()
    assert main(["example-driver", "--deviations"]) == 0
    assert Path(capsys.readouterr().out.strip()).name == "KNOWN_DEVIATIONS.example.md"
    assert main(["example-driver", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {Path(p).name for p in listed} >= {"reworded_driver.mjs", "one_process_per_op.mjs", "KNOWN_DEVIATIONS.example.md"}


def test_a_driver_declaring_kinds_that_omits_one_is_a_scenario_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 1: declared, then left out: a clear scenario error, never a pass by its text."""
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    monkeypatch.setenv("MEMCONFORM_PLANT", "no-outcome")
    outcomes = run_all(PeerSpec("node", str(PLANTED)), discover(SCENARIOS_DIR / "conformance", run=[SEQUENCE]), timeout=30)
    assert [o.status for o in outcomes] == ["error"]
    assert "protocol violation: its hello declares outcome_kinds, but the answer to 'write_memory' carries no outcome" \
        in outcomes[0].reason


def test_the_examples_own_deviations_file_lists_nothing_and_its_cross_runs_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example's --deviations file is a rows table with no rows: the sequence it once listed
    (the reference dropping a losing duplicate's pin, S-IDX-4) passes now that SS-IDX-4 allows it,
    reported as a ``pin-dropped`` hazard."""
    import json

    from memconform.harness.cli import main
    from memconform.harness.gate import deviations

    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    own = REWORDED.parent / "KNOWN_DEVIATIONS.example.md"
    assert deviations.load_all([own]) == deviations.load()
    base = ["conformance", "--impl", f"node:{REWORDED}", "--with", "python", "--run", "cross/flip-flop/duplicate-pins-union",
            "--quiet", "--no-export", "--json", str(tmp_path / "r.json")]
    assert main([*base, "--deviations", str(own)]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert [s["status"] for s in report["scenarios"]] == ["pass"]
    assert [(f["kind"], f["severity"]) for f in report["findings"]] == [("pin-dropped", "hazard")]


def test_a_node_driver_gets_the_python_running_memconform(tmp_path: Path) -> None:
    """With MEMCONFORM_PYTHON unset and a ``python3`` first on PATH that cannot import memconform
    (a venv not activated), the example driver still starts the reference: memconform gives
    every node driver it starts its own python (it failed 'hello' with ModuleNotFoundError)."""
    import os
    import subprocess

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 'No module named memconform' >&2\nexit 1\n", encoding="utf-8")
    (fake / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MEMCONFORM_PYTHON"}
    env["PATH"] = f"{fake}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-m", "memconform.harness", "conformance", "--impl", f"node:{REWORDED}",
         "--run", "shared-store/pins/pin-by-name", "--quiet", "--no-export"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert "1 passed, 0 failed" in done.stdout, done.stdout[-800:]
