"""Ctrl-C during a nemesis run (issue 22 item 4): the report holds the history up to the stop,
judged from the disk, marked interrupted, exit 130 (it was an empty report)."""

from __future__ import annotations

from pathlib import Path

from memconform.harness.checker.history import History

from .test_interrupt import LOAD, interrupt_run


def test_ctrl_c_during_a_nemesis_reports_the_partial_history(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    rc, seconds, stderr, data = interrupt_run(
        tmp_path, r"w0:[1-9]\d* w1:[1-9]",
        ["interop", "--impl", "python", "--shared", "--writers", "2", "--nemesis", "stale-lock",
         "--time-limit", "60", "--history", str(history)])
    print(f"Ctrl-C nemesis: exit {seconds:.2f} s after SIGINT, report {data.get('stop_seconds')} s; {data['stats']}")
    assert rc == 130, stderr[-800:]
    assert data["verdict"] == "interrupted" and data["interrupted"] is True
    assert data["stats"]["ops"] > 0 and data["stats"]["checker"], data["stats"]  # what ran, judged
    assert data["stop_seconds"] < 1.0 * LOAD, (data["stop_seconds"], LOAD)
    assert "Traceback" not in stderr, stderr[-800:]
    ops = History.load(history).ops()
    assert sum(o.type == "ok" for o in ops) > 0  # the history up to the stop is saved
