"""The ``hang`` hazard: a driver that stops answering is named with the syscall and file it
waits in, read from /proc before it is killed (issue 12 item 2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import DriverError, PeerSpec, start_driver
from memconform.harness.drivers.procs import blocked_in
from memconform.harness.oracles import hazards

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# A protocol driver whose one op blocks in a synchronous read of the path it is given.
BLOCKING_DRIVER = r"""
import { createInterface } from 'node:readline';
import fs from 'node:fs';
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const req = JSON.parse(line);
  if (req.op === 'hello') {
    process.stdout.write(JSON.stringify({ id: req.id, ok: true,
      result: { impl: 'blocking-driver', version: '1', ops: ['read_handoff'] } }) + '\n');
  } else {
    fs.readFileSync(req.args.path);  // blocks for ever on a FIFO nobody writes
  }
});
"""


def _until_blocked(pid: int, under: str, deadline: float = 10.0) -> str | None:
    """Poll /proc until the process sits in a kernel wait on a file under ``under``."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = blocked_in(pid, under)
        if found is not None:
            return found
        time.sleep(0.01)
    return None


@needs_node
def test_blocked_in_names_the_open_of_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "HANDOFF.md"
    os.mkfifo(fifo)
    proc = subprocess.Popen(["node", "-e", f"require('fs').readFileSync({str(fifo)!r})"])
    try:
        assert _until_blocked(proc.pid, str(tmp_path)) == f"openat({fifo})"
    finally:
        proc.kill()
        proc.wait()


@needs_node
def test_blocked_in_ignores_waits_outside_the_directory(tmp_path: Path) -> None:
    proc = subprocess.Popen(["node", "-e", "setTimeout(() => {}, 60000)"])
    try:
        assert blocked_in(proc.pid, str(tmp_path)) is None  # only the event loop's own wait
    finally:
        proc.kill()
        proc.wait()


def test_blocked_in_of_a_gone_process_is_none() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert blocked_in(child.pid) is None


@needs_node
def test_a_timed_out_call_says_where_the_driver_was_blocked(tmp_path: Path) -> None:
    script = tmp_path / "blocking.mjs"
    script.write_text(BLOCKING_DRIVER, encoding="utf-8")
    sandbox = tmp_path / "sandbox"
    (sandbox / "agent").mkdir(parents=True)
    fifo = sandbox / "agent" / "HANDOFF.md"
    os.mkfifo(fifo)
    driver = start_driver(PeerSpec("node", str(script)), dict(os.environ), cwd=str(sandbox), timeout=10.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(DriverError) as caught:
            driver.call("read_handoff", {"path": str(fifo)})
        seconds = time.monotonic() - t0
    finally:
        driver.close()
    error = caught.value
    # caught by the hang watch (issue 15): blocked 200 ms with no progress, long before the 10 s timeout
    assert seconds < 1.0 and 0.2 <= error.waited < 1.0 and error.stuck == "hang"
    assert error.hung == "read_handoff" and error.blocked == f"openat({fifo})"
    assert f"blocked in openat({fifo})" in str(error)
    found = hazards.hang(error.hung, error.blocked, root=str(sandbox), clause="S-HANDOFF-11",
                         seconds=error.waited)
    assert found.severity == "hazard" and found.syscall == "openat(agent/HANDOFF.md)"
    assert found.evidence == ("the tool never answers: blocked in openat of agent/HANDOFF.md (fifo); "
                              f"the driver was killed after {error.waited:g} s")


def test_hang_without_a_readable_wait_still_names_the_op() -> None:
    found = hazards.hang("search", None, root="/r", clause="S-DISP-4", seconds=10)
    assert (found.kind, found.op, found.syscall) == ("hang", "search", "")
    assert "could not be read" in found.evidence
