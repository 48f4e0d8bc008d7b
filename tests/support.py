"""Helpers shared by the reference tests: a recording ``Fs``, a fault-injecting ``Fs``, a store
factory, lock and process helpers, and the constants many test files compare against.

The ``Fs`` seam (reference/fs.py) is how the tests look inside the store: every file and
process call passes through it, so one recorder and one injector serve every test file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reference.clock import Clock
from reference.errors import NodeError
from reference.fs import Fs
from reference.store import Store
from tests.conftest import NOW_MS, StoreEnv

REPO = Path(__file__).resolve().parents[1]

TS = "2026-08-07T01:02:50+00:00"  # NOW as the store writes it (UTC)
LOCAL = "agent/memory/"
SHARED = "home/.agents/memory/"
IDX = LOCAL + "MEMORY.md"
# Spelled out rather than imported from reference.lock, so a changed message fails the tests.
BUSY = (
    "Error: memory store is busy (another tool or process holds the lock) — "
    "please retry in a moment."
)
CONFIG_DIAG = "[openpi-memory] memory.jsonc parse failed, using defaults: "
FALLBACK_RULES: dict[str, object] = {
    "alwaysPersist": [],
    "neverPersist": [],
    "alwaysAsk": [],
    "maxLines": 300,
    "staleAfterDays": 180,
    "injectEveryNTurns": 5,
    "handoffKeep": 3,
    "autoResumeAfterThreshold": False,
    "consolidateOnCompact": False,
    "sharedDir": False,
}

T = TypeVar("T")
PathMatch = Callable[[str], bool]
Nth = int | Collection[int] | None

# Calls that take a descriptor: recorded with the descriptor, matched by the path it was opened on.
FD_CALLS = frozenset({"read", "pread", "write", "fsync", "close", "fstat"})
# Calls that take (src, dst): matched by, and named after, the destination.
TWO_PATH_CALLS = frozenset({"rename", "link"})
_SYSCALL = {"pread": "read", "regular_names": "scandir"}  # as reference.fs names its failures


# --- recording -------------------------------------------------------------------------------


class Call(tuple[Any, ...]):
    """One recorded call, ``(name, *args)``, compared as a plain tuple.

    ``path`` is the file the call acted on: the destination of a rename or link, the path a
    descriptor was opened on (known only at the time of the call, as descriptors are reused),
    ``None`` for ``kill``.
    """

    path: str | None

    def __new__(cls, name: str, args: tuple[Any, ...], path: str | None) -> Call:
        call = super().__new__(cls, (name, *args))
        call.path = path
        return call


class RecordingFs(Fs):
    """Records every filesystem and process call as ``(name, *args)`` in ``calls``, in order.

    ``getpid`` and ``random_token`` are not recorded: they touch no file and cannot fail, and
    would only interleave every temporary-file sequence.
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.fd_paths: dict[int, str] = {}

    # -- views --

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]

    def named(self, *names: str) -> list[Call]:
        return [call for call in self.calls if call[0] in names]

    def paths(self, *names: str) -> list[tuple[str, str]]:
        """``(name, path)`` of the calls that act on a file (of ``names`` only, if given)."""
        return [
            (call[0], call.path)
            for call in self.calls
            if call.path is not None and (not names or call[0] in names)
        ]

    def resolved(self) -> list[tuple[Any, ...]]:
        """The calls with each descriptor replaced by the path it was opened on."""
        return [
            (call[0], call.path, *call[2:]) if call[0] in FD_CALLS else tuple(call)
            for call in self.calls
        ]

    def events(self) -> list[tuple[str, str]]:
        """``paths()`` with exclusive creations (lock taking, temporaries) as ``open-excl``."""
        return [
            ("open-excl" if call[0] == "open" and call[2] & os.O_EXCL else call[0], call.path)
            for call in self.calls
            if call.path is not None
        ]

    def mutated_paths(self) -> list[str]:
        """Every path created, renamed (either side), linked, unlinked or made a directory."""
        out: list[str] = []
        for call in self.calls:
            name = call[0]
            if name == "open" and call[2] & os.O_CREAT:
                out.append(call[1])
            elif name in TWO_PATH_CALLS:
                out.extend(call[1:3])
            elif name in ("unlink", "mkdir"):
                out.append(call[1])
        return out

    # -- the seam --

    def _target(self, name: str, args: tuple[Any, ...]) -> str | None:
        if name in FD_CALLS:
            return self.fd_paths.get(args[0])
        if name in TWO_PATH_CALLS:
            return str(args[1])
        if name == "kill":
            return None
        return str(args[0])

    def _before(self, call: Call) -> None:
        """Runs after recording, before the real call (FaultFs fails or hooks here)."""

    def _after(self, call: Call, result: object) -> None:
        if call[0] == "open":
            assert isinstance(result, int)
            self.fd_paths[result] = call[1]

    def _call(self, name: str, real: Callable[..., T], *args: Any) -> T:
        call = Call(name, args, self._target(name, args))
        self.calls.append(call)
        self._before(call)
        result = real(*args)
        self._after(call, result)
        return result

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        return self._call("open", super().open, path, flags, mode)

    def read(self, fd: int, size: int) -> bytes:
        return self._call("read", super().read, fd, size)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return self._call("pread", super().pread, fd, size, offset)

    def write(self, fd: int, data: bytes) -> int:
        return self._call("write", super().write, fd, data)

    def fsync(self, fd: int) -> None:
        self._call("fsync", super().fsync, fd)

    def close(self, fd: int) -> None:
        self._call("close", super().close, fd)

    def fstat(self, fd: int) -> os.stat_result:
        return self._call("fstat", super().fstat, fd)

    def lstat(self, path: str) -> os.stat_result:
        return self._call("lstat", super().lstat, path)

    def stat(self, path: str) -> os.stat_result:
        return self._call("stat", super().stat, path)

    def rename(self, src: str, dst: str) -> None:
        self._call("rename", super().rename, src, dst)

    def link(self, src: str, dst: str) -> None:
        self._call("link", super().link, src, dst)

    def unlink(self, path: str) -> None:
        self._call("unlink", super().unlink, path)

    def mkdir(self, path: str) -> None:
        self._call("mkdir", super().mkdir, path)

    def scandir(self, path: str) -> list[str]:
        return self._call("scandir", super().scandir, path)

    def regular_names(self, path: str) -> set[str]:
        return self._call("regular_names", super().regular_names, path)

    def kill(self, pid: int, sig: int) -> None:
        self._call("kill", super().kill, pid, sig)


# --- fault injection -------------------------------------------------------------------------


@dataclass
class Fault:
    """One rule of a ``FaultFs``: the calls it watches and what it does to the chosen ones.

    ``nth`` picks among the watched calls made since the rule was added (1 is the first; a
    collection picks several; ``None`` picks all).  A chosen call fails with ``err`` worded as
    the real ``Fs`` words it, or runs ``run(path)`` instead (after the real call if ``after``).
    """

    methods: frozenset[str]
    match: PathMatch | None = None
    nth: Nth = 1
    err: int = errno.EIO
    run: Callable[[str], object] | None = None
    after: bool = False
    seen: int = 0
    fired: int = 0

    def chooses(self, call: Call) -> bool:
        if call[0] not in self.methods:
            return False
        if self.match is not None and not self.match(call.path or ""):
            return False
        self.seen += 1
        nth = self.nth
        chosen = nth is None or (self.seen == nth if isinstance(nth, int) else self.seen in nth)
        self.fired += chosen
        return chosen


def node_error(call: Call, err: int) -> NodeError:
    """The error the real ``Fs`` raises for ``call`` (descriptor calls name no path)."""
    name = call[0]
    syscall = _SYSCALL.get(name, name)
    if name in TWO_PATH_CALLS:
        return NodeError(err, syscall, call[1], call[2])
    if name in FD_CALLS or name == "kill":
        return NodeError(err, syscall)
    return NodeError(err, syscall, call[1])


class FaultFs(RecordingFs):
    """A recording ``Fs`` that fails, or runs a callback at, chosen calls."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: list[Fault] = []

    def fail(
        self, *methods: str, err: int = errno.EIO, nth: Nth = 1, match: PathMatch | None = None
    ) -> Fault:
        """Fail the ``nth`` call of ``methods`` (on a path ``match`` accepts) with ``err``."""
        fault = Fault(frozenset(methods), match, nth, err)
        self.faults.append(fault)
        return fault

    def hook(
        self,
        *methods: str,
        run: Callable[[str], object],
        nth: Nth = 1,
        match: PathMatch | None = None,
        after: bool = False,
    ) -> Fault:
        """Run ``run(path)`` at the ``nth`` call of ``methods``: before it, or ``after`` it."""
        fault = Fault(frozenset(methods), match, nth, run=run, after=after)
        self.faults.append(fault)
        return fault

    def _before(self, call: Call) -> None:
        for fault in self.faults:
            if fault.after or not fault.chooses(call):
                continue
            if fault.run is None:
                raise node_error(call, fault.err)
            fault.run(call.path or "")

    def _after(self, call: Call, result: object) -> None:
        super()._after(call, result)
        for fault in self.faults:
            if fault.after and fault.run is not None and fault.chooses(call):
                fault.run(call.path or "")


def ends(suffix: str) -> PathMatch:
    return lambda path: path.endswith(suffix)


_TMP = re.compile(r"\.tmp-\d+-[0-9a-z]+$")


def is_tmp_of(suffix: str) -> PathMatch:
    """Matches the temporary an atomic write of a path ending in ``suffix`` uses."""

    def match(path: str) -> bool:
        m = _TMP.search(path)
        return m is not None and path[: m.start()].endswith(suffix)

    return match


# --- stores, locks, processes ----------------------------------------------------------------


def store_with(env: StoreEnv, fs: Fs | None = None, clock: Clock | None = None) -> Store:
    """``env``'s store, as ``env.new_store`` builds it, on a chosen ``Fs`` and clock."""
    return Store(
        env.sandbox.env(),
        fs=fs,
        clock=clock if clock is not None else env.clock,
        diagnostics=env.diagnostics.append,
    )


def put_memory(env: StoreEnv, base: str, index: str, files: Mapping[str, str | bytes]) -> None:
    """A memory directory (``base`` ends in ``/``): its ``MEMORY.md``, then its topic files."""
    env.put(base + "MEMORY.md", index)
    for name, content in files.items():
        env.put(base + name, content)


def temps_in(directory: str | os.PathLike[str]) -> list[str]:
    """Names of the atomic-write temporaries left in ``directory``."""
    return [n for n in os.listdir(directory) if ".tmp-" in n]


def live_token(label: str = "co-tenant") -> str:
    """A lock token of this (live) process, fresh against the frozen clock."""
    return f"{os.getpid()}\t{NOW_MS}\t{label}"


def hold_lock(directory: str, content: str | None = None) -> str:
    """A live lock in ``directory`` (our pid, mtime = the frozen now); its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ".lock")
    with open(path, "w") as f:
        f.write(content or live_token())
    os.utime(path, (NOW_MS / 1000, NOW_MS / 1000))
    return path


def dead_pid() -> int:
    """C-5: the pid of a child that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def run_promptly(fn: Callable[[], object], fifo: str, timeout: float = 5.0) -> dict[str, Any]:
    """Run ``fn`` in a thread; if it blocks on ``fifo``, unblock it and fail the test.

    Returns ``{"result": ...}`` or ``{"error": exception}``.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except Exception as e:
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail(f"operation blocked on FIFO {fifo}")
    return box


def run_python(
    code: str,
    *argv: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 20,
) -> Any:
    """Run ``code`` in a fresh interpreter (a fresh process: a fresh store); its JSON output.

    ``env`` defaults to this process's environment; the repository is put on PYTHONPATH.
    """
    variables = {**(os.environ if env is None else env), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        env=variables,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(proc.stdout)


# Prelude of a child script: ``store`` on the variables in argv[1], at the frozen now, its
# diagnostics collected in ``diags``.
_FRESH_STORE = f"""\
import json, sys
from reference.clock import ControlledClock
from reference.errors import describe
from reference.store import Store
diags = []
store = Store(json.loads(sys.argv[1]), clock=ControlledClock({NOW_MS}), diagnostics=diags.append)
"""


def run_on_fresh_store(env: StoreEnv, body: str, timeout: float = 20) -> Any:
    """Run ``body`` on ``store`` (and ``diags``, ``describe``) in a fresh process; its JSON output.

    A fresh process starts without process-wide state, and an operation that blocks (a FIFO)
    or loops fails by ``timeout`` instead of hanging the test run.
    """
    return run_python(_FRESH_STORE + body, json.dumps(env.sandbox.env()), timeout=timeout)
