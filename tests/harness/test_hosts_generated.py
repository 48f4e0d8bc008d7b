"""Generated host scripts through the real pi (issue 23 item 7), judged against the reference's
session model prompt by prompt (S-INJECT-4, S-INJECT-9, S-INJECT-10, S-TOOLS-5).

A host step takes seconds, so this runs only under the ``host`` Hypothesis profile
(``HYPOTHESIS_PROFILE=host``); the extension is ``MEMCONFORM_PI_EXTENSION`` when set, else our
example.  The seed is printed on every run; a failing script is written as a host scenario
file (its path is in the failure) that ``memconform host --scenarios FILE`` replays.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, seed

from memconform.harness.hosts.cache import DEFAULT_PI, HOSTS, HostMissing, node_bin_dir, pi_cli
from memconform.harness.hosts.generate import host_scripts, scenario_data
from memconform.harness.hosts.run import HostSpec, run_scenario
from memconform.harness.machines.profiles import profile, profile_name
from memconform.harness.scenarios import Scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "harness" / "hosts" / "example" / "index.ts"
SEED = int(os.environ.get("MEMCONFORM_SEED") or random.SystemRandom().randrange(2**32))
pytestmark = pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "host",
                                reason="generated host scripts run under HYPOTHESIS_PROFILE=host (seconds a step)")


def _extension() -> Path:
    ext = Path(os.environ.get("MEMCONFORM_PI_EXTENSION") or EXAMPLE)
    return ext / "index.ts" if ext.is_dir() else ext


@seed(SEED)
@profile("host" if os.environ.get("HYPOTHESIS_PROFILE") == "host" else None)
@given(block=host_scripts())
def test_generated_script_in_pi_matches_the_session_model(block: dict[str, object], tmp_path_factory: pytest.TempPathFactory) -> None:
    print(f"host machine seed {SEED} (MEMCONFORM_SEED={SEED} replays it), profile {profile_name()}")
    try:
        node_bin_dir(HOSTS[DEFAULT_PI])
        pi_cli(HOSTS[DEFAULT_PI])
    except HostMissing as e:
        pytest.skip(str(e))
    data = scenario_data(block)
    folder = tmp_path_factory.mktemp("generated")
    path = folder / "generated.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    outcome = run_scenario(HostSpec("pi-host", _extension(), DEFAULT_PI), Scenario.from_data(data, path))
    assert outcome.status == "pass", (f"seed {SEED}; replay: memconform host --impl pi-host:{_extension().parent} "
                                      f"--scenarios {path}\n" + outcome.reason + "\n"
                                      + "\n".join(f.line() for f in outcome.findings))
