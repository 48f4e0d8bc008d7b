"""Process helpers shared by the runner, the lock matrix and the tests."""

from __future__ import annotations

import subprocess
import sys


def dead_pid() -> int:
    """A pid that belonged to a process that has exited and been reaped (C-5)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


# Syscalls a hung driver is found waiting in, by number (Linux x86_64 and aarch64): the ones
# whose first or second argument names what it waits on.
_SYSCALLS = {
    "x86_64": {0: "read", 1: "write", 2: "open", 17: "pread64", 72: "fcntl", 73: "flock",
               257: "openat", 7: "poll", 232: "epoll_wait", 281: "epoll_pwait", 202: "futex"},
    "aarch64": {63: "read", 64: "write", 67: "pread64", 25: "fcntl", 32: "flock", 56: "openat",
                22: "epoll_pwait", 98: "futex"},
}
_FD_FIRST = frozenset({"read", "write", "pread64", "fcntl", "flock"})
_PATH_SECOND = frozenset({"openat"})
_PATH_FIRST = frozenset({"open"})


def _read_path(pid: int, address: int) -> str | None:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            raw = mem.read(4096)
    except (OSError, ValueError, OverflowError):
        return None
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace") or None


def blocked_in(pid: int, under: str | None = None) -> str | None:
    """What a stuck process waits in, e.g. ``read(/tmp/…/agent/HANDOFF.md)``, or None.

    Reads ``/proc/PID/task/*/syscall`` for every thread (node's synchronous fs calls block
    the main thread; its asynchronous ones a libuv worker) and names the file a blocking
    ``read``/``open``/``flock`` waits on; ``under`` keeps only paths below a directory (the
    sandbox), so the event loop's own waits are not mistaken for the hang.
    """
    import os
    import platform

    table = _SYSCALLS.get(platform.machine(), {})
    try:
        tasks = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall", encoding="ascii") as f:
                fields = f.read().split()
        except OSError:
            continue
        if len(fields) < 3 or not fields[0].isdigit():
            continue  # "running" or not in a syscall
        name = table.get(int(fields[0]))
        args = [int(a, 16) for a in fields[1:7]]
        target: str | None = None
        if name in _FD_FIRST:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{args[0]}")
            except OSError:
                target = None
        elif name in _PATH_SECOND:
            target = _read_path(pid, args[1])
        elif name in _PATH_FIRST:
            target = _read_path(pid, args[0])
        if target is None or (under is not None and not target.startswith(under.rstrip("/") + "/")):
            continue
        return f"{name}({target})"
    return None
