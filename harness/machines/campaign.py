"""Long fuzzing campaigns on existing engines: every machine as a collected Hypothesis test.

``memconform fuzz`` runs the machines in its own budgeted loop on one machine.  For a campaign
of hours across processes and hosts this module exposes the same machines as pytest-collected
``RuleBasedStateMachine.TestCase`` classes, so HypoFuzz (``hypothesis fuzz``: adaptive,
multi-process, a dashboard) or plain pytest can run them::

    MEMCONFORM_IMPL=pi:/path/memory-core.mjs hypothesis fuzz -n 2 -- --pyargs memconform.harness.machines.campaign

``MEMCONFORM_IMPL`` names the implementation (as ``--impl``; default ``python``); machines
that cannot drive it are skipped with ``bind``'s one-line reason.  ``MEMCONFORM_HYPOTHESIS_DB``
names the example database every job shares: a directory (on shared storage) or a
``redis://host:port/db`` URL (the wheel's ``campaign`` extra, docs/ci.md), so a failure found by
any job replays in every job and in ``pytest`` runs of this module.  Failures are exported as
regression scenarios under ``MEMCONFORM_EXPORT_DIR`` (default: a temp dir), as ``fuzz`` does.
Importing this module loads a Hypothesis profile and pins TZ/umask for the process: collect
it in a campaign's own process, never from a test suite's conftest.
"""

from __future__ import annotations

import os
import time
import unittest
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from ..drivers.peers import PeerSpec, preflight, start_driver
from ..drivers.sandbox import Sandbox
from . import MACHINES, bind, load, profiles
from .base import CONFIG

IMPL_ENV = "MEMCONFORM_IMPL"
DB_ENV = "MEMCONFORM_HYPOTHESIS_DB"
EXAMPLES_ENV = "MEMCONFORM_CAMPAIGN_EXAMPLES"  # a quick look: examples per machine under pytest
PROFILE_NAME = "memconform-campaign"


def database(where: str | None) -> ExampleDatabase:
    """The shared example database: ``redis://…`` or a directory (default ``.hypothesis/examples``)."""
    if where and where.startswith(("redis://", "rediss://", "unix://")):
        import redis  # type: ignore[import-not-found, unused-ignore]
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(where))
    return DirectoryBasedExampleDatabase(where or os.path.join(".hypothesis", "examples"))


def _ops(spec: PeerSpec) -> frozenset[str]:
    sandbox = Sandbox.create()
    try:
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root)) as driver:
            return frozenset(driver.ops)
    finally:
        sandbox.remove()


def _pin_environment() -> None:
    """UTC and umask 022 (SPEC C-2, C-7) for the whole campaign process: HypoFuzz runs the
    machines itself, so ``run_machine``'s per-run pinning does not apply."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.umask(0o022)


def _skipped(name: str, reason: str) -> Any:
    @pytest.mark.skip(reason=f"{name}: {reason}")
    def test_refused() -> None:  # pragma: no cover - never runs
        raise AssertionError(reason)

    test_refused.__name__ = f"test_{name}_refused"
    return test_refused


def configure(found_in: str) -> None:
    """The run settings of a campaign: findings blamed on ``found_in``, and weaknesses SPEC
    accepts counted, not failed: every command exits 0 on one, so no campaign job may fail on
    one either (docs/ci.md's replay step raised ``RaceFound: double-holder (weakness,
    S-INV-9)`` on the plain reference: issue 31 item 5)."""
    CONFIG.found_in = found_in
    CONFIG.accept_weaknesses = True


def collect() -> dict[str, Any]:
    """One collected test per machine: its ``TestCase``, or a skip naming why it cannot run."""
    settings.register_profile(PROFILE_NAME, settings(database=database(os.environ.get(DB_ENV))))
    settings.load_profile(PROFILE_NAME)
    _pin_environment()
    spec = PeerSpec.parse(os.environ.get(IMPL_ENV, "python"))
    info = preflight([spec])[0]
    configure(f"{info.name} {info.version}")
    ops = _ops(spec)
    tests: dict[str, Any] = {}
    for name in MACHINES:
        if name == "differential" and spec.kind == "python":
            tests[f"test_{name}_refused"] = _skipped(name, "compares the reference with a peer; set MEMCONFORM_IMPL")
            continue
        reason = bind(name, spec, ops)
        if reason:
            tests[f"test_{name}_refused"] = _skipped(name, reason)
            continue
        case: type[unittest.TestCase] = load(name).TestCase
        # the campaign's database: HypoFuzz refuses a test whose database differs from the
        # loaded profile's; every other setting from the machine profile ($HYPOTHESIS_PROFILE)
        quick: dict[str, object] = {"max_examples": int(os.environ[EXAMPLES_ENV])} if os.environ.get(EXAMPLES_ENV) else {}
        chosen = profiles.profile(None, **quick)
        case.settings = settings(chosen, database=settings().database)  # type: ignore[attr-defined]
        tests[f"Test_{name}"] = case
    return tests


globals().update(collect())
