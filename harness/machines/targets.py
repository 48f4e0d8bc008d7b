"""The store a machine drives: the reference in process, or any implementation's driver.

A machine that only needs protocol ops (``write_memory``, ``search`` …) talks to a ``Target``
and does not care whether the answers come from the reference ``Server`` called in this
process (fast: no pipe, no JSON round trip) or from a driver process speaking the peer
protocol (``python -m memconform.reference serve``, ``pi_core.mjs`` …).  Both answer with JSON values
(``to_js_json``), so one comparison serves both.

Driver targets are pooled per implementation: a node start per Hypothesis example would
dominate the run.  Between examples the sandbox is emptied and the driver ``reset`` (a fresh
module instance for the JS cores, a renewed store for the reference — what a fresh process
sees); a driver without ``reset``, or one that died, is restarted.
"""

from __future__ import annotations

import atexit
import shutil
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from memconform.reference.clock import ControlledClock
from memconform.reference.errors import describe
from memconform.reference.jsjson import to_js_json
from memconform.reference.serve import Server
from memconform.reference.store import Store

from ..drivers.peers import Answer, Driver, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox


class Target(Protocol):
    """One store under test, in a sandbox of its own."""

    name: str
    sandbox: Sandbox

    def call(self, op: str, args: dict[str, Any]) -> Answer: ...

    def set_clock(self, now_ms: int) -> None: ...

    def diagnostics(self) -> list[str]: ...

    def done(self) -> None: ...


def iso(now_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_ms // 1000)) + f".{now_ms % 1000:03d}Z"


class InProcess:
    """The reference ``Server`` over a fresh sandbox, called directly (one per example)."""

    name = "memconform-reference (in process)"

    def __init__(self, now_ms: int, store_class: type[Store] = Store) -> None:
        self.sandbox = Sandbox.create()
        self._diagnostics: list[str] = []
        store = store_class(self.sandbox.env(), clock=ControlledClock(now_ms), diagnostics=self._diagnostics.append)
        self.server = Server(store, new_clock=lambda: ControlledClock(now_ms))

    def call(self, op: str, args: dict[str, Any]) -> Answer:
        try:
            return Answer(True, to_js_json(self.server.ops[op](args)))
        except Exception as e:
            return Answer(False, error={str(k): v for k, v in describe(e).items()})

    def set_clock(self, now_ms: int) -> None:
        self.server.set_clock({"now": iso(now_ms), "mode": "frozen"})

    def diagnostics(self) -> list[str]:
        return self._diagnostics

    def done(self) -> None:
        shutil.rmtree(self.sandbox.root, ignore_errors=True)


class Driven:
    """A driver process of ``spec`` over a sandbox, both kept across examples (``_POOL``)."""

    def __init__(self, spec: PeerSpec, timeout: float) -> None:
        self.spec, self.timeout = spec, timeout
        self.name = spec.name
        self.sandbox = Sandbox.create()
        self.driver: Driver = self._start()

    def _start(self) -> Driver:
        return start_driver(self.spec, self.sandbox.env(), cwd=str(self.sandbox.root), timeout=self.timeout)

    def fresh(self, now_ms: int) -> None:
        """An empty sandbox and fresh-process module state for a new example."""
        for sub in ("agent", "home"):
            shutil.rmtree(self.sandbox.root / sub, ignore_errors=True)
            (self.sandbox.root / sub).mkdir()
        if self.driver.proc is None or self.driver.proc.poll() is not None:
            self.driver = self._start()
        elif "reset" in self.driver.ops:
            answer = self.driver.call("reset")
            assert answer.ok, f"{self.name}: reset refused: {answer.error}"
        elif "fresh_instance" in self.driver.ops:  # OpenCode: the module graph loaded anew
            answer = self.driver.call("fresh_instance")
            assert answer.ok, f"{self.name}: fresh_instance refused: {answer.error}"
        else:
            self.driver.close()
            self.driver = self._start()
        self.driver.take_stderr()
        self.set_clock(now_ms)

    def call(self, op: str, args: dict[str, Any]) -> Answer:
        return self.driver.call(op, args)

    def set_clock(self, now_ms: int) -> None:
        answer = self.driver.call("set_clock", {"now": iso(now_ms), "mode": "frozen", "tz": "UTC"})
        assert answer.ok, f"{self.name}: set_clock refused: {answer.error}"

    def diagnostics(self) -> list[str]:
        # a driver's stderr is the implementation's console, not SPEC's diagnostic channel
        return []

    def done(self) -> None:
        """Kept for the next example (the pool closes it at exit)."""

    def close(self) -> None:
        self.driver.close()
        self.sandbox.remove()


class Pool:
    """One ``Driven`` per implementation for the whole process."""

    targets: ClassVar[dict[str, Driven]] = {}

    @classmethod
    def get(cls, spec: PeerSpec, timeout: float) -> Driven:
        if spec.name not in cls.targets:
            cls.targets[spec.name] = Driven(spec, timeout)
        return cls.targets[spec.name]

    @classmethod
    def close(cls) -> None:
        for target in cls.targets.values():
            target.close()
        cls.targets.clear()


atexit.register(Pool.close)


def opener(spec: PeerSpec | None, *, timeout: float = 15.0, store_class: type[Store] = Store) -> Callable[[int], Target]:
    """How a machine gets its target for an example: ``None`` is the reference in process."""
    if spec is None:
        return lambda now_ms: InProcess(now_ms, store_class)

    def open_driven(now_ms: int) -> Target:
        target = Pool.get(spec, timeout)
        target.fresh(now_ms)
        return target

    return open_driven
