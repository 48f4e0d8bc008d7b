"""Traced crash states of the real JS peers (issue 17): every op case of each peer recorded
and followed, all four models built, and recovery run through one warm driver.  Skipped
unless MEMCONFORM_PI_CORE / MEMCONFORM_OPENCODE_PLUGIN name the peers (CI has none)."""

from __future__ import annotations

import os

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.cases import CASES
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.faults.trace_run import run_traced
from memconform.harness.faults.trace_states import TRACE_MODELS

PEERS = {"pi": "MEMCONFORM_PI_CORE", "opencode": "MEMCONFORM_OPENCODE_PLUGIN"}


@pytest.mark.parametrize("kind", sorted(PEERS))
def test_every_op_case_of_a_peer_is_traced_under_all_four_models(kind: str) -> None:
    path = os.environ.get(PEERS[kind])
    if not path:
        pytest.skip(f"{PEERS[kind]} is not set")
    if strace_unavailable():
        pytest.skip(f"needs strace: {strace_unavailable()}")
    cases = [c for c in CASES.values() if kind in c.impls]
    camp = run_traced(PeerSpec(kind, path), cases, TRACE_MODELS, impl=kind, quiet=True)
    assert [t.name for t in camp.failed] == []
    assert {c.name for c in camp.checks} == {c.name for c in cases}
    for c in camp.checks:
        assert all(c.models[m].states for m in ("strict", "torn", "reorder")), c.name
    findings = {(f.op, f.clause) for c in camp.checks for f, _cs in c.findings("")}
    if kind == "pi":  # HANDOFF.md is rewritten in place: truncated after a kill, torn after power loss
        assert ("handoff-write [strict]", "A-3") in findings and ("handoff-write [torn]", "A-3") in findings
    one = run_traced(PeerSpec(kind, path), [CASES["write-create"]], TRACE_MODELS, impl=kind, recover=True, quiet=True)
    assert one.recovered and one.drivers <= 2  # warm drivers, renewed between states
