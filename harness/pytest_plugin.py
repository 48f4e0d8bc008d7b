"""pytest plugin (entry point ``pytest11``): the scenario corpus as parametrised tests.

``pytest --memconform-impl=pi:/path/to/memory-core.mjs`` adds one test per scenario to the
user's own session; without the option the plugin does nothing.  Known deviations become
xfail, and a listed deviation that passes fails (the list must stay true).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# The harness (and through it the reference) is imported lazily: this module is loaded by
# every pytest session of an environment where memconform is installed, before coverage starts.
if TYPE_CHECKING:
    from .drivers.peers import PeerSpec
    from .gate.runner import Worker
    from .gate.scenarios import Scenario

SCENARIOS_DIR = Path(str(resources.files("memconform") / "scenarios"))  # as scenarios.py says
_WORKER = pytest.StashKey[dict[str, "Worker"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memconform", "memory-store conformance corpus")
    group.addoption("--memconform-impl", default=None, help="python | pi:<path> | opencode:<path>")
    group.addoption("--memconform-scenarios", default=str(SCENARIOS_DIR / "conformance"))
    group.addoption("--memconform-run", action="append", default=[], help="scenario id glob")
    group.addoption("--memconform-strict", action="store_true", help="compare error messages")
    group.addoption("--memconform-timeout", type=float, default=10.0)


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Scenario, spec: PeerSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario, self.spec = scenario, spec
        for clause in scenario.clauses:
            self.add_marker(pytest.mark.memconform_clause(clause))

    def runtest(self) -> None:
        from .gate.deviations import apply, expected_failure, load
        from .gate.runner import Worker

        workers = self.config.stash.setdefault(_WORKER, {})
        worker = workers.get(self.spec.name)
        if worker is None:
            worker = workers[self.spec.name] = Worker(
                self.spec,
                timeout=self.config.getoption("--memconform-timeout"),
                strict=self.config.getoption("--memconform-strict"),
            )
        outcome = worker.run(self.scenario)
        if outcome.status == "skip":
            pytest.skip(outcome.reason)
        known = expected_failure(devs := load(), worker.impl, worker.version, self.scenario.id)
        apply([outcome], worker.impl, worker.version, devs)  # listed, and failing exactly as the row says
        if outcome.status == "xfail":
            pytest.xfail(f"known deviation: {outcome.reason}")
        if outcome.status == "xpass" and known is not None:
            raise ScenarioFailure(f"listed in KNOWN_DEVIATIONS.md but passes: {known.reason}")
        failed = outcome.status in ("fail", "error")
        if failed:
            detail = "\n".join(f.render() for f in outcome.failures) or outcome.reason
            raise ScenarioFailure(f"{', '.join(self.scenario.clauses)}\n{detail}\n{outcome.stderr}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailure):
            return f"scenario {self.scenario.id} on {self.spec.name}:\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.scenario.path, 0, f"scenario {self.scenario.id}"


class ScenarioFailure(Exception):
    pass


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "memconform_clause(id): the SPEC clause a scenario cites")


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    impl = config.getoption("--memconform-impl")
    if not impl:
        return
    from .drivers.peers import PeerSpec, PeerUnavailable, preflight
    from .gate.scenarios import discover

    try:  # a peer that cannot start is one usage error, not a failure per scenario
        spec = PeerSpec.parse(impl)
        preflight([spec], timeout=config.getoption("--memconform-timeout"))
    except PeerUnavailable as e:
        raise pytest.UsageError(str(e)) from None
    root = Path(config.getoption("--memconform-scenarios"))
    for sc in discover(root, config.getoption("--memconform-run") or None):
        items.append(ScenarioItem.from_parent(session, name=f"memconform[{sc.id}]", scenario=sc, spec=spec))


def pytest_unconfigure(config: pytest.Config) -> None:
    for worker in config.stash.get(_WORKER, {}).values():
        worker.close()
