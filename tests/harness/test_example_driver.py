"""The example driver of docs/IMPLEMENTING.md (examples/one_process_per_op.mjs: Node, one short-lived
reference process per op) passes a slice of the shared-store gate and a cross-tool sequence with
the reference, and keeps to the protocol (every message schema-checked)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from memconform.harness import ops
from memconform.harness.cross import CROSS_DIR, Pair, run_pair
from memconform.harness.peers import PeerSpec, start_driver
from memconform.harness.runner import run_all
from memconform.harness.sandbox import Sandbox
from memconform.harness.scenarios import SCENARIOS_DIR, discover

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "one_process_per_op.mjs"
SLICE = ["shared-store/pins/pin-by-name", "shared-store/frontmatter/created-kept-on-append"]

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> PeerSpec:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    return PeerSpec("node", str(EXAMPLE))


def test_its_hello_is_valid_and_its_ops_are_in_the_vocabulary(example: PeerSpec) -> None:
    sandbox = Sandbox.create()
    try:
        with start_driver(example, sandbox.env(), cwd=str(sandbox.root), validate=True) as driver:
            assert ops.result_errors("hello", driver.hello) == []
            assert driver.ops <= ops.vocabulary()
            assert {"write_memory", "remove_memory", "pin_memory"} <= driver.ops
            assert driver.hello["profile"] == "shared-store"
            unsupported = driver.call("search", {"query": "x"})
            assert not unsupported.ok and unsupported.error is not None and unsupported.error["kind"] == "unsupported"
    finally:
        sandbox.remove()


def test_it_passes_a_slice_of_the_shared_store_gate(example: PeerSpec) -> None:
    scenarios = discover(SCENARIOS_DIR / "conformance", run=SLICE)
    assert [sc.id for sc in scenarios] == sorted(SLICE)
    outcomes = run_all(example, scenarios, timeout=30, validate=True)
    assert [(o.scenario.id, o.status) for o in outcomes] == [(i, "pass") for i in sorted(SLICE)], \
        [f.render() for o in outcomes for f in o.failures] + [o.reason for o in outcomes]


def test_it_runs_a_cross_tool_sequence_with_the_reference(example: PeerSpec) -> None:
    scenarios = discover(CROSS_DIR, run=["cross/pin-by-b-refuses-removal"])
    outcomes = run_pair(Pair(example, PeerSpec("python")), scenarios, timeout=30, validate=True)
    assert [o.status for o in outcomes] == ["pass"], [f.render() for o in outcomes for f in o.failures]
