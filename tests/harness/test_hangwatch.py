"""The hang watch (issue 15 item 3): a process blocked in a kernel wait on a sandbox file is a
``hang`` within 200 ms of no progress, one spinning with nothing changing a ``livelock`` within
about a second, and a process that merely sleeps or works is neither."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memconform.harness.drivers.hangwatch import Stuck, Watch, livelock, wait_line


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def _judge(proc: subprocess.Popen[bytes], under: str, timeout: float) -> tuple[Stuck | str | None, float]:
    lines: queue.Queue[bytes | None] = queue.Queue()
    t0 = time.monotonic()
    try:
        line, stuck = wait_line(lines, proc.pid, under, timeout)
    except queue.Empty:
        return "timeout", time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
    assert line is None
    return stuck, time.monotonic() - t0


def test_a_blocking_fifo_open_is_a_hang_within_a_second(tmp_path: Path) -> None:
    fifo = tmp_path / "HANDOFF.md"
    os.mkfifo(fifo)
    stuck, seconds = _judge(_child(f"open({str(fifo)!r})"), str(tmp_path), 10.0)
    assert seconds < 1.0, seconds
    assert isinstance(stuck, Stuck)
    assert stuck.kind == "hang" and stuck.where == f"openat({fifo})"


def test_a_blocking_fifo_read_names_the_fd_s_path(tmp_path: Path) -> None:
    fifo = tmp_path / ".lock"
    os.mkfifo(fifo)
    writer_end = os.open(fifo, os.O_RDWR)  # keeps the FIFO open so the reader's open returns
    try:
        stuck, seconds = _judge(_child(f"import os; os.read(os.open({str(fifo)!r}, os.O_RDONLY), 1)"),
                                str(tmp_path), 10.0)
    finally:
        os.close(writer_end)
    assert seconds < 1.0, seconds
    assert isinstance(stuck, Stuck)
    assert stuck.kind == "hang" and stuck.where == f"read({fifo})"


def test_a_spin_is_a_livelock_within_about_a_second(tmp_path: Path) -> None:
    stuck, seconds = _judge(_child("while True: pass"), str(tmp_path), 10.0)
    assert isinstance(stuck, Stuck)
    assert stuck.kind == "livelock"
    assert seconds < 3.0, seconds  # 1 s of spinning, and 0.2 s of CPU even on a loaded machine
    found = livelock("memory_dir", stuck.where, clause="A-12", seconds=round(seconds, 2))
    assert found.kind == "livelock" and found.severity == "hazard" and "spins" in found.evidence


@pytest.mark.parametrize("code", ["import time; time.sleep(30)", "import sys; sys.stdin.read()"])
def test_waiting_on_time_or_on_nothing_in_the_sandbox_is_neither(tmp_path: Path, code: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    stuck, seconds = _judge(proc, str(tmp_path), 1.2)  # past the livelock window
    assert stuck == "timeout" and seconds >= 1.2  # the step timeout is still the last resort


def test_working_with_io_is_not_a_livelock(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    code = f"import os\nwhile True:\n    with open({str(target)!r}, 'w') as f: f.write('x' * 4096)"
    stuck, _ = _judge(_child(code), str(tmp_path), 1.5)
    assert stuck == "timeout"


def test_a_gone_process_is_never_stuck() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert Watch(child.pid, None).check() is None


def test_only_waits_that_can_last_for_ever_are_judged_at_200_ms(tmp_path: Path) -> None:
    from memconform.harness.drivers.hangwatch import _patience

    fifo, plain = tmp_path / "HANDOFF.md", tmp_path / ".lock"
    os.mkfifo(fifo)
    plain.write_text("1\t2\tx")
    assert _patience(f"openat({fifo})", 0.2) == 0.2
    assert _patience(f"flock({plain})", 0.2) == 0.2
    # a dozen writers creating and unlinking .lock on a starved machine wait in openat too
    assert _patience(f"openat({plain})", 0.2) == 2.0
    assert _patience(f"openat({tmp_path / 'gone'})", 0.2) == 2.0
