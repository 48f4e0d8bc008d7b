"""Shared fixtures: a sandboxed store with a pinned clock and time zone (SPEC Appendix C)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from memconform.harness.drivers.sandbox import Sandbox
from memconform.reference.clock import ControlledClock, parse_instant
from memconform.reference.store import Store

NOW = "2026-08-07T01:02:50Z"
NOW_MS = parse_instant(NOW)


def set_tz(tz: str) -> None:
    os.environ["TZ"] = tz
    time.tzset()


@pytest.fixture(autouse=True)
def _utc_and_umask() -> Iterator[None]:
    """Every test starts in UTC with umask 022 (C-2, C-7) and restores both."""
    old_tz = os.environ.get("TZ")
    old_mask = os.umask(0o022)
    set_tz("UTC")
    yield
    os.umask(old_mask)
    if old_tz is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old_tz
    time.tzset()


@dataclass
class StoreEnv:
    """A sandbox plus a store on it, its frozen clock and its captured diagnostics."""

    sandbox: Sandbox
    clock: ControlledClock
    diagnostics: list[str] = field(default_factory=list)
    store: Store = field(init=False)

    def __post_init__(self) -> None:
        self.store = self.new_store()

    def new_store(self, **env_overrides: str) -> Store:
        """A fresh store, as a fresh process would load it (S-INV-10)."""
        env = self.sandbox.env()
        env.update(env_overrides)
        return Store(env, clock=self.clock, diagnostics=self.diagnostics.append)

    @property
    def agent(self) -> str:
        return str(self.sandbox.agent_dir)

    @property
    def local(self) -> str:
        return str(self.sandbox.local_dir)

    @property
    def shared(self) -> str:
        return str(self.sandbox.shared_dir)

    def put(self, rel: str, content: str | bytes) -> str:
        return str(self.sandbox.put(rel, content))

    def read(self, rel: str) -> str:
        return self.sandbox.path(rel).read_bytes().decode("utf-8", "replace")

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.sandbox.path(rel))

    def snapshot(self) -> dict[str, bytes]:
        return self.sandbox.snapshot()

    def config(self, text: str) -> None:
        self.put("agent/memory.jsonc", text)

    def shared_mode(self) -> None:
        self.config('{"shared_dir": true}')


@pytest.fixture
def env(tmp_path: os.PathLike[str]) -> Iterator[StoreEnv]:
    sandbox = Sandbox.create(tmp_path)
    yield StoreEnv(sandbox, ControlledClock(NOW_MS))


@pytest.fixture
def make_env(tmp_path: os.PathLike[str]) -> Callable[[], StoreEnv]:
    def make() -> StoreEnv:
        return StoreEnv(Sandbox.create(tmp_path), ControlledClock(NOW_MS))

    return make
