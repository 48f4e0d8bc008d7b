"""Syscall-level faults for any implementation, through ``strace`` (docs/ARCHITECTURE.md §5).

The driver of an implementation (``python -m memconform.reference serve`` or a node driver) runs under
``strace -f -y``; only the store-touching syscalls are traced (``open``/``openat``, the
``write`` family, ``fsync``, ``rename``, ``link``, ``unlink``, ``mkdir`` and their ``*at``
forms).  ``strace -P`` cannot select them: it matches exact paths only, never "anything under
the sandbox", and temporaries get random names.  So a fault is placed in two passes:

1. *enumerate*: run the operation once, traced, and keep the calls whose path (or, for
   descriptor-based calls, the descriptor's path that ``-y`` prints) lies inside the
   sandbox, between the answer to ``set_clock`` and the answer to the operation;
2. *inject*: run it again with ``-e inject=<syscall>:…:when=<n>``, where ``n`` is that call's
   invocation number among all calls of the same syscall in the same thread (strace counts
   per syscall and per tracee), so the interpreter's own I/O is never touched.

The second run is traced too, and the fault is verified to have hit the intended call (same
syscall, same path with temporary names normalised); a miss is reported, never counted.
Kills (``signal=SIGKILL``) stop the call before it runs; errors replace it (ENOSPC, EIO,
EACCES, EINTR); delays hold it.  ``harness.faults.campaigns`` applies one fault per
enumerated call and judges the store with ``harness.oracles.crash_judge``.  Scenario files
name their faults too (``regression.inject``): ``scenario_wrapper`` turns them into a prefix.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..oracles.spec import TEMP_SUFFIX

STRACE = shutil.which("strace") or "/usr/bin/strace"
STORE_SYSCALLS = (
    "open", "openat", "creat",
    "write", "pwrite64", "writev", "pwritev", "pwritev2",
    "fsync", "fdatasync",
    "rename", "renameat", "renameat2",
    "link", "linkat",
    "unlink", "unlinkat",
    "mkdir", "mkdirat",
)
PATH_ARGS = {"open": 1, "creat": 1, "openat": 1, "rename": 2, "renameat": 2, "renameat2": 2,
             "link": 2, "linkat": 2, "unlink": 1, "unlinkat": 1, "mkdir": 1, "mkdirat": 1}
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"(AT_FDCWD|-?\d+)<([^>]*)>")
_ANSWER = re.compile(r'^\d+\s+write\(1<pipe:\[\d+\]>, "\{\\"id\\": ?(\d+)')


@cache
def strace_unavailable() -> str | None:
    """Why syscall injection cannot run here (no strace, or ptrace not permitted), else None."""
    if not Path(STRACE).exists():
        return "strace is not installed (apt-get install strace)"
    try:
        probe = subprocess.run(
            [STRACE, "-f", "-qq", "-e", "trace=chdir", "-e", "inject=chdir:error=ENOENT", "true"],
            capture_output=True, timeout=20, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"strace cannot run: {e}"
    if probe.returncode != 0:
        why = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"strace cannot trace here (ptrace not permitted?): {why[-1] if why else probe.returncode}"
    return None


@cache
def stable_python_env() -> dict[str, str]:
    """Environment that keeps the reference's start-up I/O identical between runs.

    Strace numbers calls from process start, so an import that reads a stale ``.pyc`` once
    and a fresh one the next time would shift every ``openat``.  The byte code goes to a
    private cache, compiled once here, and is never rewritten during runs.
    """
    prefix = Path(tempfile.gettempdir()) / f"memconform-pycache-{os.getuid()}"
    env = {"PYTHONPYCACHEPREFIX": str(prefix)}
    root = str(Path(__file__).resolve().parents[2])  # the repository
    subprocess.run(
        [sys.executable, "-c", "import memconform.reference.serve"],
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **env, "PYTHONPATH": root},
        capture_output=True, check=False, timeout=60,
    )
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


# --- faults in scenario files (regressions) ---------------------------------------------------

POKE_ARG = {"open": 1, "creat": 1, "openat": 2, "unlink": 1, "unlinkat": 2, "mkdir": 1, "mkdirat": 2,
            "newfstatat": 2, "statx": 2, "lstat": 1, "stat": 1}


def scenario_fault(data: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The faults of a scenario's ``regression.inject`` (one object or a list), if any."""
    regression = data.get("regression")
    fault = regression.get("inject") if isinstance(regression, Mapping) else None
    if isinstance(fault, Mapping):
        return [fault]
    if isinstance(fault, list) and fault and all(isinstance(f, Mapping) for f in fault):
        return list(fault)
    return None


def _tamper(fault: Mapping[str, Any], root: str) -> str:
    syscall, action = str(fault["syscall"]), str(fault["action"])
    if action == "error":
        what = f"error={fault['errno']}"
    elif action == "delay":
        what = f"delay_enter={int(fault['delay_ms']) * 1000}"
    elif action == "redirect":
        path = os.path.join(root, str(fault["path"])).encode()
        to = os.path.join(root, str(fault["to"])).encode()
        if len(to) != len(path) or syscall not in POKE_ARG:
            raise ValueError(f"redirect needs a path argument and a same-length target: {dict(fault)}")
        what = f"poke_enter=@arg{POKE_ARG[syscall]}={to.hex()}"
    else:
        raise ValueError(f"unknown scenario fault action {action!r} (error, delay, redirect)")
    return f"inject={syscall}:{what}:when={fault.get('nth', 1)}"


def scenario_wrapper(faults: list[Mapping[str, Any]], root: str) -> list[str]:
    """The strace prefix for a scenario's faults, deterministic in a single run.

    A scenario names stable store paths (``agent/memory/.lock``), so ``-P`` selects the calls
    and strace numbers only those: ``nth`` (a number or a range ``"1..2"``) counts the calls
    of ``syscall`` on the fault paths in the driver's life.  Actions: ``error`` (``errno``),
    ``delay`` (``delay_ms``) and ``redirect`` (``to``: a same-length sandbox path the call is
    made to use instead — a FIFO, another lock — written into its path argument at entry).
    """
    paths = sorted({os.path.join(root, str(f["path"])) for f in faults})
    syscalls = sorted({str(f["syscall"]) for f in faults})
    cmd = [STRACE, "-f", "-qq", "-e", "signal=none", "-e", "trace=" + ",".join(syscalls), "-o", os.devnull]
    for p in paths:
        cmd += ["-P", p]
    for f in faults:
        cmd += ["-e", _tamper(f, root)]
    return cmd


# --- faults and traces ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One tampering: kill at, fail, or delay the ``when``-th ``syscall`` of a thread."""

    syscall: str
    when: int
    action: str = "kill"  # kill | error | delay
    errno: str = "EIO"
    delay_us: int = 0

    def expression(self) -> str:
        if self.action == "kill":
            what = "signal=SIGKILL"
        elif self.action == "error":
            what = f"error={self.errno}"
        elif self.action == "delay":
            what = f"delay_enter={self.delay_us}us"
        else:
            raise ValueError(f"unknown fault action {self.action!r}")
        return f"inject={self.syscall}:{what}:when={self.when}"


def strace_command(trace_file: str, fault: Fault | None = None) -> list[str]:
    """The wrapper for a driver: follow threads, print descriptor paths, store calls only."""
    cmd = [STRACE, "-f", "-y", "-qq", "-e", "signal=none",
           "-e", "trace=" + ",".join(STORE_SYSCALLS), "-o", trace_file]
    if fault is not None:
        cmd += ["-e", fault.expression()]
    return cmd


def traced_by(pid: int) -> int:
    """The pid of the tracer attached to ``pid`` (0: none), as the kernel shows it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def attach_tracer(pid: int, trace_file: str, fault: Fault | None = None, *, wait_s: float = 10.0) -> subprocess.Popen[bytes] | None:
    """``strace_command``'s tracing and tampering, attached to a running ``pid`` (all its
    threads) instead of wrapping a driver: for a driver whose store work runs in a backing
    process (its ``hello`` pid), so that a fault counted per tracee lands in that process
    only, never in the driver's own I/O (issue 30: the example driver's node process makes
    ``write`` calls of its own).  Waits (bounded) until the kernel shows the tracer; None if
    it never does."""
    cmd = [STRACE, "-f", "-y", "-qq", "-p", str(pid), "-e", "signal=none",
           "-e", "trace=" + ",".join(STORE_SYSCALLS), "-o", trace_file]
    if fault is not None:
        cmd += ["-e", fault.expression()]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:  # a kernel state to poll: nothing signals the attach
        if proc.poll() is not None:
            return None
        if traced_by(pid) == proc.pid:
            return proc
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    return None


def detach_tracer(proc: subprocess.Popen[bytes]) -> None:
    """Stop an attached strace (its tracee runs on, or is gone already) and wait for its log."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Traced:
    """One traced call: thread, syscall, the paths it touches, its per-thread number."""

    tid: int
    syscall: str
    paths: tuple[str, ...]
    creates: bool
    nth: int
    line: str

    @property
    def injected(self) -> bool:
        return "(INJECTED)" in self.line

    @property
    def unfinished(self) -> bool:
        return self.line.rstrip().endswith(("= ?", "<unfinished ...>"))

    def key(self, root: str) -> tuple[str, tuple[str, ...]]:
        """Comparable across runs: syscall and sandbox-relative paths, temporaries normalised."""
        return self.syscall, tuple(TEMP_SUFFIX.sub(".tmp-*", rel(p, root)) for p in self.paths)


def rel(path: str, root: str) -> str:
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def _paths(syscall: str, args: str) -> tuple[tuple[str, ...], bool]:
    """The absolute paths a traced call names (its descriptor's for fd-based calls)."""
    fds = _FD.findall(args)
    if syscall not in PATH_ARGS:
        return ((fds[0][1],) if fds else ()), False
    quoted = [_unescape(q) for q in _QUOTED.findall(args)][: PATH_ARGS[syscall]]
    dirs = [d for f, d in fds]
    out = []
    for i, p in enumerate(quoted):
        if p.startswith("/"):
            out.append(os.path.normpath(p))
        else:
            base = dirs[i] if syscall.endswith("at") or syscall == "renameat2" else (dirs[0] if dirs else os.sep)
            out.append(os.path.normpath(os.path.join(base or os.sep, p)))
    return tuple(out), "O_CREAT" in args


def parse_trace(text: str) -> tuple[list[Traced], list[tuple[int, int]]]:
    """Every entry line of an ``strace -f -y`` log, numbered per (thread, syscall), and the
    positions (index into the list, request id) of the driver's answers on stdout."""
    calls: list[Traced] = []
    answers: list[tuple[int, int]] = []
    counts: dict[tuple[int, str], int] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        tid, name, args = int(m.group(1)), m.group(2), m.group(3)
        n = counts[(tid, name)] = counts.get((tid, name), 0) + 1
        a = _ANSWER.match(line)
        if a is not None:
            answers.append((len(calls), int(a.group(1))))
        paths, creates = _paths(name, args)
        calls.append(Traced(tid, name, paths, creates, n, line))
    return calls, answers


def store_calls(calls: list[Traced], answers: list[tuple[int, int]], root: str, after_id: int | None) -> list[Traced]:
    """The calls touching the sandbox after the answer to request ``after_id`` (None: all of
    them, for a trace attached just before the op)."""
    start = -1 if after_id is None else next((i for i, rid in answers if rid == after_id), None)
    if start is None:
        return []
    return [c for c in calls[start + 1 :] if any(p == root or p.startswith(root + "/") for p in c.paths)]
