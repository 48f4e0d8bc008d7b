"""Both crash methods keep each other honest (issue 17 item 5): for the reference, the states
built from one ``strace``d run of ``serve`` equal those the in-process explorer builds through
the ``Fs`` seam, op case by op case, under each model both have (strict, lost-dirent, torn).

Pids, lock tokens and temporaries' random names differ between the two runs by nature, so
both sides are normalised the same way before comparing, and the sandbox's two empty roots
(``agent``, ``home``) are not counted; nothing else is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.drivers.sandbox import SNAPSHOT_DIR
from memconform.harness.faults import MODELS
from memconform.harness.faults.cases import CASES
from memconform.harness.faults.explorer import Explorer
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.faults.trace import record_cases
from memconform.harness.faults.trace_states import crash_states
from memconform.harness.oracles.crash_judge import State, is_lock

pytestmark = pytest.mark.skipif(strace_unavailable() is not None, reason=f"needs strace: {strace_unavailable()}")
_TMP = re.compile(r"\.tmp-\d+-[0-9a-z]+")
_PID = re.compile(rb"\.tmp-\d+-[0-9a-z]+")


def norm(state: Mapping[str, bytes]) -> frozenset[tuple[str, bytes]]:
    out = set()
    for rel, data in state.items():
        if rel in ("agent", "home") and data == SNAPSHOT_DIR:
            continue  # every sandbox has its two roots; the explorer's stores only where used
        if is_lock(rel):
            # a pid and token of another length: a cut-off lock compares as "part of one"
            whole = re.match(rb"^\d+\t(\d+)\t[0-9a-z]+$", data)
            data = b"PID\t" + whole.group(1) + b"\tTOKEN" if whole else (b"<part of a lock>" if data else data)
        out.add((_TMP.sub(".tmp-*", rel), _PID.sub(b".tmp-*", data)))
    return frozenset(out)


class Collecting(Explorer):
    """The explorer, keeping every state it judges per model."""

    def __init__(self) -> None:
        super().__init__(recover=False)
        self.states: dict[str, set[frozenset[tuple[str, bytes]]]] = {m: set() for m in MODELS}

    def _check(self, model: str, state: State, *args: Any, **kw: Any) -> None:
        self.states[model].add(norm(state))


def test_trace_states_equal_the_explorers_for_every_op_case() -> None:
    cases = [c for c in CASES.values() if "python" in c.impls]
    traces, _ = record_cases(PeerSpec("python"), cases)
    for case, trace in zip(cases, traces, strict=True):
        assert not trace.error, f"{case.name}: {trace.error}"
        ex = Collecting()
        ex.explore_case(case)
        built: dict[str, set[frozenset[tuple[str, bytes]]]] = {m: set() for m in MODELS}
        for cs in crash_states(trace, MODELS):
            built[cs.model].add(norm(cs.state))
        for model in MODELS:
            assert ex.states[model], f"{case.name} {model}: the explorer built nothing"
            assert built[model] == ex.states[model], (
                f"{case.name} {model}: only traced {sorted(map(sorted, built[model] - ex.states[model]))[:2]}; "
                f"only explored {sorted(map(sorted, ex.states[model] - built[model]))[:2]}"
            )
