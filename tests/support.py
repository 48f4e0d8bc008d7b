"""Helpers shared by the reference tests: the recording and fault-injecting ``Fs`` (re-exported
from ``harness.faults.doubles``, which the machines use too), a store factory, lock and process
helpers, and the constants many test files compare against.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.faults.doubles import FaultFs, PathMatch, RecordingFs  # noqa: F401  (re-exported)
from memconform.harness.oracles.spec import TEMP_SUFFIX
from memconform.reference.clock import Clock
from memconform.reference.fs import Fs
from memconform.reference.store import Store
from tests.conftest import NOW_MS, StoreEnv

REPO = Path(__file__).resolve().parents[1]

TS = "2026-08-07T01:02:50+00:00"  # NOW as the store writes it (UTC)
LOCAL = "agent/memory/"
SHARED = "home/.agents/memory/"
IDX = LOCAL + "MEMORY.md"
# Spelled out rather than imported from memconform.reference.lock, so a changed message fails the tests.
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

# --- the Fs doubles (RecordingFs, FaultFs) live in harness/faults/doubles.py ------------------


def examples(full: int) -> int:
    """Hypothesis examples for a heavy property: half in the default suite, which must run in
    10 minutes on 2 cores, and all of them with ``MEMCONFORM_SLOW=1`` (the deep run)."""
    return full if os.environ.get("MEMCONFORM_SLOW") == "1" else max(full // 2, 1)


def ends(suffix: str) -> PathMatch:
    return lambda path: path.endswith(suffix)



def is_tmp_of(suffix: str) -> PathMatch:
    """Matches the temporary an atomic write of a path ending in ``suffix`` uses."""

    def match(path: str) -> bool:
        m = TEMP_SUFFIX.search(path)
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
from memconform.reference.clock import ControlledClock
from memconform.reference.errors import describe
from memconform.reference.store import Store
diags = []
store = Store(json.loads(sys.argv[1]), clock=ControlledClock({NOW_MS}), diagnostics=diags.append)
"""


def run_on_fresh_store(env: StoreEnv, body: str, timeout: float = 20) -> Any:
    """Run ``body`` on ``store`` (and ``diags``, ``describe``) in a fresh process; its JSON output.

    A fresh process starts without process-wide state, and an operation that blocks (a FIFO)
    or loops fails by ``timeout`` instead of hanging the test run.
    """
    return run_python(_FRESH_STORE + body, json.dumps(env.sandbox.env()), timeout=timeout)
