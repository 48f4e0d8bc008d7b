"""``interop`` and the nemesis judge a driver that words its results its own way (issue 30
item 2): histories record each op's outcome kind — declared by the example driver, read from
the reference's text by its family's table — and the lost-write, split-topic, double-holder
and linearizability checks read it, never the text.  Few ops: seconds, not minutes."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from memconform.harness.checker.history import History
from memconform.harness.checker.linearize import LINEARIZABLE, NOT_LINEARIZABLE
from memconform.harness.cli import main
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.writers.engine import interop

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "reworded_driver.mjs"
PLANTED = Path(__file__).resolve().parent / "planted_driver.mjs"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(autouse=True)
def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)


def test_the_example_and_the_reference_share_a_store_and_every_op_has_its_kind(tmp_path: Path) -> None:
    example = PeerSpec("node", str(EXAMPLE))
    result = interop([PeerSpec("python"), example], writers=4, ops=12, shared=True, seed=3)
    assert result.total_ops == 48 and not result.errors
    assert result.lost == [] and result.duplicated == [] and result.violations == []
    assert result.verdict is not None and result.verdict.status == LINEARIZABLE, result.verdict.summary()
    saved = tmp_path / "h.jsonl"
    result.history.save(saved)
    ops = History.load(saved).ops()
    mine = [o for o in ops if o.process in ("w1", "w3")]  # the example's writers (round-robin)
    assert mine and all(o.outcome for o in ops), "every completed op records its outcome"
    words = {str(o.result).split(" ", 1)[0] for o in mine if o.op == "write_memory"}
    assert words <= {"Saved", "Added"}, words  # the example's own words: no text table knows them
    assert {o.outcome for o in mine if o.op == "write_memory"} <= {"ok:created", "ok:updated"}


def test_a_kind_that_contradicts_the_store_is_not_linearizable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted driver says ``created`` for every write while its text says "Added to
    note": the checker reads the kind, so a second write of one topic is not linearizable."""
    monkeypatch.setenv("MEMCONFORM_PLANT", "always-created")
    result = interop([PeerSpec("node", str(PLANTED))], writers=1, ops=12, shared=True, seed=1)
    assert result.verdict is not None and result.verdict.status == NOT_LINEARIZABLE, result.verdict.summary()
    assert any("Added to note" in line for line in result.verdict.failing_lines), result.verdict.failing_lines


@pytest.mark.skipif(strace_unavailable() is not None, reason=f"needs strace: {strace_unavailable()}")
def test_a_small_nemesis_run_judges_the_example_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "nemesis.json"
    got = main(["interop", "--impl", "python", "--impl", f"node:{EXAMPLE}", "--shared", "--writers", "2",
                "--nemesis", "kill", "--time-limit", "2", "--settle-limit", "30", "--seed", "2",
                "--history", str(tmp_path / "h.jsonl"), "--json", str(report), "--no-export"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "outcome_kinds" not in out.err, out.err
    data = json.loads(report.read_text())
    assert got == 0, out.out
    assert data["verdict"] == "pass" and data["stats"]["ops"] > 0, out.out
    assert "memconform-example-reworded" in {i["name"] for i in data["impls"]}
    outcomes = {o.outcome for o in History.load(tmp_path / "h.jsonl").ops() if o.type == "ok"}
    assert outcomes and None not in outcomes
