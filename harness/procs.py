"""Process helpers shared by the runner, the lock matrix and the tests."""

from __future__ import annotations

import subprocess
import sys


def dead_pid() -> int:
    """A pid that belonged to a process that has exited and been reaped (C-5)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid
