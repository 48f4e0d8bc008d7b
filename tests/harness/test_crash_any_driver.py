"""``memconform crash`` on any driver (issue 30 item 1): op cases over the shared store alone,
applied to every implementation whose ``hello`` offers the op, a ``node:`` driver included;
a combination it cannot run is one line (exit 2); defects planted in a copy of the example
driver (planted_crash_driver.mjs: files written in place, a tombstone published after the
index) are found by real kills and by the trace models.

The real-kill runs here aim at a few calls each (``only``): a whole campaign of every case
takes minutes on a loaded machine, and runs with MEMCONFORM_SLOW=1 (the §6 checklist of
docs/IMPLEMENTING.md, as written)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.cases import CASES, CONFIGS
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.oracles.crash_judge import SHARED_REL

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "reworded_driver.mjs"
PLANTED = Path(__file__).resolve().parent / "planted_crash_driver.mjs"
FIVE_OPS = frozenset({"hello", "set_clock", "write_memory", "remove_memory", "pin_memory", "exit"})
needs_tools = pytest.mark.skipif(
    shutil.which("node") is None or strace_unavailable() is not None,
    reason=f"needs node and strace ({strace_unavailable() or 'node missing'})",
)
slow = pytest.mark.skipif(os.environ.get("MEMCONFORM_SLOW") != "1", reason="a whole crash campaign: MEMCONFORM_SLOW=1")


@pytest.fixture(autouse=True)
def _python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)


def test_shared_cases_run_on_a_five_op_driver_and_private_ones_do_not() -> None:
    runs = {c.name for c in CASES.values() if c.applies("node", FIVE_OPS)}
    assert {"write-shared", "write-shared-append", "write-shared-replace", "write-shared-tombstoned",
            "remove-shared", "pin-shared", "unpin-shared"} <= runs
    assert all(CASES[n].shared for n in runs)
    assert not {"write-create", "remove", "retire", "carry-over", "config-create", "handoff-write", "repair-shared"} & runs
    assert CASES["repair-shared"].applies("node", FIVE_OPS | {"repair_memory"})
    assert not CASES["repair-shared"].applies("python")  # the reference offers no repair
    files = CASES["remove-shared"].files("node")
    assert {rel for rel in files if not rel.startswith(SHARED_REL)} == set(CONFIGS)  # both JS tools' places
    with pytest.raises(ValueError, match="private stores"):
        CASES["write-create"].files("node")


@needs_tools
@pytest.mark.parametrize(("op", "says"), [
    ("handoff", "no op case of 'handoff' applies"),
    ("retire", "laid out over the JS tools' private stores"),
    ("write-create", "laid out over the JS tools' private stores"),
    ("repair-shared", "needs repair_memory"),
])
def test_a_case_a_node_driver_cannot_run_is_one_line(capsys: pytest.CaptureFixture[str], op: str, says: str) -> None:
    got = main(["crash", "--impl", f"node:{EXAMPLE}", "--op", op, "--no-export"])
    err = capsys.readouterr().err
    assert got == 2, err
    assert "Traceback" not in err and "KeyError" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memconform crash: ") and says in lines[0], err


def _crash(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object], str]:
    report = tmp_path / "crash.json"
    got = main(["crash", *argv, "--no-export", "--json", str(report)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return got, json.loads(report.read_text()), out.out


@needs_tools
def test_trace_models_judge_every_shared_case_of_the_example_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got, report, out = _crash(["--impl", f"node:{EXAMPLE}", "--op", "all", "--trace", "--models", "strict,torn"],
                              tmp_path, capsys)
    stats = report["stats"]
    assert isinstance(stats, dict)
    assert stats["cases"] >= 7 and stats["untraced"] == [], out  # every shared case recorded and judged
    assert stats["distinct_checked"] > 0
    assert got == 0, out


@needs_tools
def test_trace_finds_both_planted_crash_defects(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PLANT", "in-place,tombstone-after-index")
    got, report, out = _crash(["--impl", f"node:{PLANTED}", "--op", "write-shared", "--op", "remove-shared",
                               "--trace", "--models", "strict"], tmp_path, capsys)
    found = {(f["kind"], f["clause"]) for f in report["findings"]}  # type: ignore[union-attr]
    assert ("torn", "S-INV-1") in found, out  # in place: the index truncated, then written
    assert ("removal-unrecorded", "S-INV-7") in found, out  # the index published before the tombstone
    assert got == 1


def _points(spec: PeerSpec, case: str, call: str, path: str) -> object:
    from memconform.harness.faults.campaigns import crash_runs

    return crash_runs(spec, CASES[case], only=lambda _i, c: c.syscall == call and any(p.endswith(path) for p in c.paths),
                      with_recovery=False)


@needs_tools
def test_kills_land_in_the_backing_process_and_find_an_in_place_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's node process writes to its pipes too: strace counts ``write`` per
    tracee, so a kill is aimed at the backing process alone (attached to its hello pid)."""
    monkeypatch.setenv("MEMCONFORM_PLANT", "in-place")
    report = _points(PeerSpec("node", str(PLANTED)), "write-shared", "write", f"{SHARED_REL}/MEMORY.md")
    points = report.points  # type: ignore[attr-defined]
    assert points and all(p.missed is None for p in points), report.render(True)  # type: ignore[attr-defined]
    kinds = {f.kind for p in points for f in p.violations}
    assert "torn" in kinds, report.render(True)  # type: ignore[attr-defined]


@needs_tools
def test_a_kill_between_index_and_tombstone_is_an_unrecorded_removal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_PLANT", "tombstone-after-index")
    report = _points(PeerSpec("node", str(PLANTED)), "remove-shared", "rename", ".ocl-removed")
    points = report.points  # type: ignore[attr-defined]
    assert points and all(p.missed is None for p in points), report.render(True)  # type: ignore[attr-defined]
    assert {f.kind for p in points for f in p.violations} == {"removal-unrecorded"}


@needs_tools
def test_the_unplanted_example_driver_passes_the_same_kills() -> None:
    report = _points(PeerSpec("node", str(EXAMPLE)), "remove-shared", "rename", "MEMORY.md")
    points = report.points  # type: ignore[attr-defined]
    assert points and all(p.missed is None and not p.violations for p in points), report.render(True)  # type: ignore[attr-defined]


@needs_tools
@slow
@pytest.mark.parametrize("extra", [[], ["--errors", "--points", "publishing"]], ids=["kills", "errors"])
def test_implementing_checklist_crash_runs_as_written_on_the_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    got, report, out = _crash(["--impl", f"node:{EXAMPLE}", "--op", "all", *extra], tmp_path, capsys)
    stats = report["stats"]
    assert isinstance(stats, dict) and stats["runs"] > 0 and stats["missed"] == 0, out
    assert got == 0, out
