"""Stderr capture is exact at any ``--parallel`` (issue 22 item 5; S-ERR-5 diagnostics).

A scenario that expects a stderr line compared ``''`` in about 4 of 16 runs at
``--parallel 64``: the stderr pump thread had taken the bytes out of the pipe (so the pipe
looked empty) but, starved of the GIL, not yet stored them.  The slow test repeats the
stderr scenarios at ``--parallel 64`` (``MEMCONFORM_STDERR_RUNS``, default 20 when enabled
by ``MEMCONFORM_SLOW=1``) and requires 0 false results; the fast tests pin the mechanism.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import memconform
from memconform.harness.drivers.peers import PeerSpec, start_driver
from memconform.harness.drivers.sandbox import Sandbox

CORPUS = Path(memconform.__file__).parent / "scenarios" / "conformance"


def stderr_scenario_ids() -> list[str]:
    """Every conformance scenario that expects a stderr line (``stderr_contains``)."""
    ids = []
    for path in sorted(CORPUS.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "stderr_contains" in path.read_text(encoding="utf-8"):
            ids.append(str(data["id"]))
    return ids


def test_the_stderr_scenarios_are_many() -> None:
    """The slow test has something to race on."""
    assert len(stderr_scenario_ids()) >= 20


def test_stderr_is_complete_once_the_answer_is_in() -> None:
    """S-ERR-5: a diagnostic the driver wrote before answering is in ``stderr()`` at once,
    with no wait, while 4 threads keep the GIL busy (the starved pump of the old race)."""
    sandbox = Sandbox.create()
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(2000))

    spinners = [threading.Thread(target=spin, daemon=True) for _ in range(4)]
    try:
        sandbox.put("agent/memory.jsonc", "{ /* c */ }")
        with start_driver(PeerSpec("python"), sandbox.env(), cwd=str(sandbox.root)) as driver:
            for t in spinners:
                t.start()
            for _ in range(10):
                assert driver.call("reset").ok  # a diagnostic is said once per process: a fresh one
                driver.take_stderr()
                assert driver.call("parse_rules", {}).ok
                assert "memory.jsonc parse failed" in driver.stderr()
    finally:
        stop.set()
        sandbox.remove()


@pytest.mark.skipif(os.environ.get("MEMCONFORM_SLOW") != "1", reason="slow: set MEMCONFORM_SLOW=1 (20 runs at --parallel 64)")
def test_stderr_scenarios_at_parallel_64_never_falsely_fail(tmp_path: Path) -> None:
    runs = int(os.environ.get("MEMCONFORM_STDERR_RUNS", "20"))
    selection = [a for sid in stderr_scenario_ids() for a in ("--run", sid)]
    bad = []
    for i in range(runs):
        out = tmp_path / f"r{i}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "memconform.harness", "conformance", "--impl", "python", "--parallel", "64",
             "--quiet", "--no-export", "--json", str(out), *selection],
            capture_output=True, text=True, cwd=tmp_path, check=False,
        )
        if proc.returncode != 0:
            failed = [f"{s['id']}: {s['status']} {s.get('reason', '')} "
                      + "; ".join(f"{f['where']}: {f.get('actual', '')!r}"[:160] for f in s.get("failures", []))
                      for s in json.loads(out.read_text())["scenarios"] if s["status"] != "pass"] \
                if out.exists() else [proc.stderr.strip()]
            bad.append((i, failed))
    print(f"stderr scenarios at --parallel 64: {len(bad)} of {runs} runs falsely failed: {bad}")
    assert not bad
