"""Virtual time changes how long the gate takes, never what it says (issue 15 item 2): the
scenarios that wait (a moving clock, or a timing bound) run both ways on the reference and
every verdict matches."""

from __future__ import annotations

import os

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.runner import Outcome, run_all
from memconform.harness.gate.scenarios import SCENARIOS_DIR, Scenario, discover


def _timed(sc: Scenario) -> bool:
    return sc.clock.mode == "offset" or any(
        s.expect.min_seconds is not None or s.expect.max_seconds is not None for s in sc.steps
    )


TIMED = [sc for sc in discover(SCENARIOS_DIR / "conformance", [], []) if _timed(sc) and not sc.faults]


def _verdicts(outcomes: list[Outcome]) -> dict[str, tuple[str, str]]:
    return {o.scenario.id: (o.status, "; ".join(f"{f.where}: {f.expected}" for f in o.failures)) for o in outcomes}


def _both_ways(spec: PeerSpec, scenarios: list[Scenario]) -> None:
    virtual = run_all(spec, scenarios, parallel=2)
    # real time mostly sleeps through lock windows: many workers, not many cores
    real = run_all(spec, scenarios, parallel=12, real_time=True)
    assert _verdicts(virtual) == _verdicts(real)
    waited = [o for o in real if o.scenario.clock.mode == "offset"]
    assert sum(o.seconds for o in waited) > 10  # the real run did wait its windows out
    assert sum(o.seconds for o in virtual if o.scenario.clock.mode == "offset") < sum(o.seconds for o in waited) / 4


def test_lock_and_timing_areas_give_the_same_verdicts_in_virtual_and_real_time() -> None:
    assert len([sc for sc in TIMED if sc.clock.mode == "offset"]) >= 30
    _both_ways(PeerSpec("python"), TIMED)


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_CORE"), reason="set MEMCONFORM_PI_CORE to run against openpi")
def test_pi_same_verdicts_in_virtual_and_real_time() -> None:
    _both_ways(PeerSpec.parse("pi"), TIMED)
