"""One writer's place in a nemesis or scheduled run: its implementation, its store
directory, its driver and the pids it has had.  Apart from the engine so the settle step and
the scheduler can name it without importing the engine."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..peers import Driver, PeerSpec
from ..sandbox import Sandbox
from ..writers import WriterStats


def store_dir(spec: PeerSpec, sandbox: Sandbox, shared: bool) -> Path:
    """The directory a writer of ``spec`` writes (PEER-1: OpenCode's local store is its own)."""
    if shared:
        return sandbox.shared_dir
    if spec.kind == "opencode":
        return sandbox.home / ".config" / "opencode" / "memory"
    return sandbox.local_dir


@dataclass
class Slot:
    index: int
    spec: PeerSpec
    directory: Path
    stats: WriterStats
    driver: Driver | None = None
    killed_by: int | None = None
    fault: int | None = None  # the fault that holds this slot now
    clock_ms: int | None = None  # a clock skew waiting to be applied between ops
    pids: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.stats.name

    @property
    def pid(self) -> int:
        return self.driver.pid if self.driver is not None else 0
