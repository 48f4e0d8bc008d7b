"""``make bench`` plumbing: the floors do what they claim, the tables say what they measured.

Timings are never asserted (speed is measured by ``make bench``, not by tests); what can
fail here is the work a floor does and the arithmetic of the shares.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memconform.harness.bench import workloads as bench
from memconform.harness.commands.bench import _floors, _render


@pytest.mark.parametrize("op", [bench.floor_op, bench.spec_floor_op])
def test_a_floor_op_publishes_topic_and_index_and_leaves_no_lock(op: bench.FloorOp) -> None:
    d = bench.floor_dir(5)
    index = bench.index_bytes(5)
    (d / "MEMORY.md").write_bytes(b"old")
    op(str(d), "topic-00003.md", b"new topic", index, 7)
    assert (d / "topic-00003.md").read_bytes() == b"new topic"
    assert (d / "MEMORY.md").read_bytes() == index
    assert sorted(os.listdir(d)) == sorted([f"topic-{i:05d}.md" for i in range(5)] + ["MEMORY.md", "memory.jsonc"])
    shutil.rmtree(d)


def test_the_floor_directory_holds_as_many_topic_files_as_the_store() -> None:
    d = bench.floor_dir(12)
    assert len([n for n in os.listdir(d) if n.startswith("topic-")]) == 12
    shutil.rmtree(d)
    assert bench.floor_round(3, 4) > 0


def test_shares_divide_ops_per_second_by_the_same_size_floors() -> None:
    rows = [
        {"name": "floor@10", "seconds": [1.0, 1.0, 1.0], "per": 100},
        {"name": "spec floor@10", "seconds": [2.0], "per": 100},
        {"name": "reference:write@10", "seconds": [4.0], "per": 100},
    ]
    assert _floors(rows) == {"floor": {"10": 100.0}, "spec floor": {"10": 50.0}}
    table = "\n".join(_render("w1_curve", rows))
    assert "| reference:write@10 | 4.0000 | 4.0000 | 4.0000 | 25.0 | 25% | 50% |" in table
    assert "| spec floor@10 | 2.0000 | 2.0000 | 2.0000 | 50.0 | 50% | 100% |" in table


def test_the_reference_without_the_watch_is_a_listed_contender() -> None:
    assert "reference-listing" in bench.impls()


def test_every_w1_phase_has_a_script_for_the_syscall_counts() -> None:
    names = ["A", "B", "C"]
    for phase, script in bench.PHASES.items():
        ops = script(names, 3)
        assert len(ops) == 3 and {op for op, _ in ops} == {f"{phase}_memory"}


def test_the_in_process_contenders_run_the_seams_they_name(tmp_path: Path) -> None:
    """W1 reports the plain engine beside the fast paths (issue 11)."""
    from memconform.reference.dirwatch import WatchingFs
    from memconform.reference.fs import Fs
    from memconform.reference.index_engine import PlainEngine
    from memconform.reference.index_view import ViewEngine

    assert list(bench.IN_PROCESS) == ["reference", "reference-listing", "reference-plain"]
    assert set(bench.IN_PROCESS) <= set(bench.impls())
    env = {"HOME": str(tmp_path)}
    seams = {impl: bench.in_process_store(impl, env) for impl in bench.IN_PROCESS}
    assert (type(seams["reference"].fs), type(seams["reference"].index_engine)) == (
        Fs if os.environ.get("MEMCONFORM_DIRWATCH") == "0" else WatchingFs, ViewEngine,
    )
    assert (type(seams["reference-listing"].fs), type(seams["reference-listing"].index_engine)) == (Fs, ViewEngine)
    assert (type(seams["reference-plain"].fs), type(seams["reference-plain"].index_engine)) == (Fs, PlainEngine)


def test_w1_ratios_name_every_contender_that_ran() -> None:
    rows = [
        {"name": f"{impl}:{phase}", "seconds": [1.0], "per": per}
        for phase in ("write", "pin", "remove")
        for impl, per in (("reference", 400), ("reference-plain", 200), ("serve", 300), ("pi:core", 100))
    ]
    text = "\n".join(_render("w1", rows))
    assert "write: reference / JS core = 4.00 (ops/s ratio); serve / JS core = 3.00; reference-plain / JS core = 2.00" in text
    assert "`reference-plain` the plain code" in text
