"""One writer's place in a nemesis or scheduled run: its implementation, its store
directory, its driver and the pids it has had.  Apart from the engine so the settle step and
the scheduler can name it without importing the engine."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..drivers.peers import Driver, PeerSpec, PeerUnavailable
from ..drivers.sandbox import Sandbox
from ..writers.engine import WriterStats


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
    paused_s: float = 0.0  # seconds the nemesis has held this slot's writers stopped, so far
    paused_since: float | None = None  # monotonic start of the pause on now

    def paused_total(self, now: float) -> float:
        """Seconds stopped by pauses up to ``now`` (a pause on now counts up to ``now``)."""
        with self.lock:
            return self.paused_s + (now - self.paused_since if self.paused_since is not None else 0.0)

    @property
    def name(self) -> str:
        return self.stats.name

    @property
    def pid(self) -> int:
        return self.driver.pid if self.driver is not None else 0


def recorded_kind(recorded: str) -> str:
    """A regression's record of a writer's implementation, as its kind (``pi``): older files
    recorded ``pi:/their/machine/path``, which names nothing here."""
    return recorded.partition(":")[0]


def resolve(recorded: list[str], given: list[PeerSpec]) -> list[PeerSpec]:
    """Each recorded writer's implementation on this machine: the ``--impl`` of its kind,
    else the kind alone (``pi`` reads ``$MEMCONFORM_PI_CORE``, ``opencode``
    ``$MEMCONFORM_OPENCODE_PLUGIN``; ``python`` is always here)."""
    by_kind: dict[str, PeerSpec] = {}
    for spec in given:
        by_kind.setdefault(spec.kind, spec)
    out = []
    for kind in map(recorded_kind, recorded):
        if kind in by_kind:
            out.append(by_kind[kind])
        elif kind == "node":
            raise PeerUnavailable("the regression ran a node: driver: say where it is here with --impl node:<driver.mjs>")
        else:
            out.append(PeerSpec.parse(kind))
    return out
