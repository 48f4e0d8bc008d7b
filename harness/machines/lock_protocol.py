"""The lock protocol on real writer processes of any implementation, Hypothesis choosing the
schedule (issue 24): the ``lock_protocol`` machine.

Each example is one scheduled run of a race situation (``harness.interleave.races``): two or
three driver processes of the implementation ``--impl`` names, held after every store call by
the syscall scheduler (``harness.interleave.scheduler``).  At every step the next of the
example's drawn choices says who runs (``strategies.Choices``): 0 lets the writer that ran
last go on, k > 0 switches to another enabled writer (or to the situation's ``kill`` pick);
past the drawn list nobody is preempted.  So Hypothesis shrinks a failing schedule towards
fewer switches (choices towards 0), replays it from its example database (the campaign's
``MEMCONFORM_HYPOTHESIS_DB``; a seeded ``fuzz`` run has none: ``--seed`` reruns it), and the
final, shrunk run is exported as a ``*.race.jsonl`` that ``memconform replay`` enforces k of k.
Shrinking runs real processes, so it gets ``SHRINK_S`` (Hypothesis's own cap is 5 minutes).

Judged by the nemesis checks (``scheduler.judge``: lost, duplicated and split writes through
the index, two holders of one lock, and a lock an op left behind).  Any finding fails the
example as a ``RaceFound`` that carries it, so ``fuzz`` reports it with the checks' severity:
the reclaim race under a stale lock is the weakness SPEC accepts (S-INV-9 a), not a violation.

One run per example: the run is the example's ``initialize`` step; the state machine's later
steps (``idle``) do nothing and are not counted, because a run leaves nothing behind that a
next one could build on (each starts in a fresh sandbox).
"""

from __future__ import annotations

import atexit
import os
import time
from pathlib import Path
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from ..drivers import capabilities
from ..drivers.peers import DriverError, PeerSpec, PeerUnavailable, preflight
from ..faults.strace import strace_unavailable
from ..interleave import race_files
from ..interleave.races import CLAUSES, SITUATIONS, situation, target
from ..interleave.run import HARDENED_ENV
from ..interleave.scheduler import DriverPool, RunResult, Situation, run_schedule
from ..interleave.strategies import Choices, switches
from ..oracles.findings import VIOLATION, WEAKNESS, Finding
from .base import CONFIG, Machine, _is_final_run, export_dir, guarded

NEEDED_OPS = frozenset({"write_memory", "remove_memory", "pin_memory", "set_clock"})
NAMES = tuple(s.name for s in SITUATIONS)  # the first (stale-dead-owner) is where shrinking goes
DRAWN = 200
"""Choices an example draws, one per step, a fixed number: a list Hypothesis may size freely
averages a handful of elements, which preempts nobody after the first few steps and never
reaches a reclaim; fixed, shrinking turns choices into zeros (fewer switches) instead.  Past
them (the longest situations run ~330 steps) nobody is preempted."""
WIDEST = 3  # the most other picks a step can have (three writers and a kill)
SHRINK_S = 90.0
"""How long Hypothesis may shrink a failure with real runs (its own cap is 300 s): after this,
candidates are not run and only the final replay of the smallest failure found runs."""


class RaceFound(AssertionError):
    """A scheduled run the nemesis checks flagged: the finding, and the run that showed it."""

    def __init__(self, finding: Finding, run: RunResult) -> None:
        super().__init__(f"{finding.kind} ({finding.severity}, {finding.clause}) in {run.situation.name}: "
                         f"{finding.evidence}; {len(run.steps)} steps, {switches(run.picks)} switches")
        self.finding, self.run = finding, run


class _Writers:
    """The implementation the machine drives, its drivers (kept across examples) and its name."""

    spec: ClassVar[PeerSpec] = PeerSpec("python")
    label: ClassVar[str] = "memconform-reference"
    kind: ClassVar[dict[str, str]] = {"kind": "python", "name": "memconform-reference", "version": "unknown"}
    timeout: ClassVar[float] = 30.0
    pool: ClassVar[DriverPool | None] = None
    caps: ClassVar[capabilities.Capabilities | None] = None  # what the bound driver declared (None: the reference)
    first: ClassVar[dict[str, RunResult]] = {}  # per situation: the first failing run, before shrinking
    found_after: ClassVar[int | None] = None  # the examples run when the first one failed
    failed_at: ClassVar[float | None] = None  # when the failure being shrunk was first seen

    @classmethod
    def drivers(cls) -> DriverPool:
        if cls.pool is None:
            cls.pool = DriverPool()
        return cls.pool

    @classmethod
    def close(cls) -> None:
        if cls.pool is not None:
            cls.pool.close()
            cls.pool = None
        cls.first.clear()
        cls.found_after = cls.failed_at = None


atexit.register(_Writers.close)


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """Drive ``spec``'s real processes (the reference's too); or why it cannot."""
    missing = sorted(NEEDED_OPS - ops)
    if missing:
        return f"the driver lacks the ops {', '.join(missing)}"
    why = strace_unavailable()
    if why is not None:
        return f"the syscall scheduler needs strace: {why}"
    try:
        info = preflight([spec], timeout=timeout)[0]
    except (PeerUnavailable, DriverError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    _Writers.close()
    _Writers.spec, _Writers.timeout = spec, max(timeout, 30.0)
    _Writers.label = f"{info.name} {info.version}"
    _Writers.kind = {"kind": spec.kind, "name": info.name, "version": info.version}
    _Writers.caps = capabilities.of_impl(info)
    if all(not_runnable(s) for s in SITUATIONS):
        return f"no race situation can run on it ({not_runnable(SITUATIONS[0])})"
    return None


def not_runnable(sit: Situation) -> str | None:
    """Why the bound driver cannot run ``sit`` as it declared itself (skipped, never a finding)."""
    caps = _Writers.caps
    return None if caps is None else capabilities.script_needs(caps, [op for script in sit.ops for op, _ in script])


def unbind() -> None:
    _Writers.close()
    _Writers.spec = PeerSpec("python")
    _Writers.caps = None


def hardened() -> bool:
    """The reference with its hardened lock, as ``MEMCONFORM_REFERENCE_HARDENED=1`` asks."""
    return _Writers.spec.kind == "python" and os.environ.get(HARDENED_ENV) == "1"


def worst(findings: list[Finding]) -> Finding | None:
    """What fails the example: the race a target kind shows, else a violation, else anything."""
    return target(findings) or next((f for f in findings if f.severity == VIOLATION), None) or \
        (findings[0] if findings else None)


class LockProtocolMachine(Machine):
    """One scheduled run of real writers per example; any finding of the nemesis checks fails it."""

    NAME = "lock_protocol"
    CLAUSES = CLAUSES
    EXAMPLES_SCALE = 0.25  # a run of real processes per example (0.3-2 s)
    EXPORT_UNDER = "races"  # beside the shipped race regressions (scenarios/regressions/races/)

    def __init__(self) -> None:
        super().__init__()
        self.run: RunResult | None = None

    @initialize(name=st.sampled_from(NAMES), choices=st.lists(st.integers(0, WIDEST), min_size=DRAWN, max_size=DRAWN))
    @guarded
    def schedule(self, name: str, choices: list[int]) -> None:
        if _is_final_run():
            _Writers.failed_at = None
        elif _Writers.failed_at is not None and time.monotonic() - _Writers.failed_at > SHRINK_S:
            # Shrinking has had its time: the candidate is not run (it counts as no failure, so
            # the shrinker stops here).  Not ``reject()``: an example rejected by the clock would
            # draw differently from the same choices later, which Hypothesis calls flaky.
            self.executed("schedule", f"{name}: not run (shrinking budget spent)", ran=False)
            return
        if (why := not_runnable(situation(name))) is not None:  # same answer every time: not flaky
            self.executed("schedule", f"{name}: not run ({why})", ran=False)
            return
        self.run = run = run_schedule([_Writers.spec], situation(name), Choices(choices), hardened=hardened(),
                                      labels={_Writers.spec.name: _Writers.label}, timeout=_Writers.timeout,
                                      pool=_Writers.drivers())
        if run.void:  # the scheduler lost control (a stall, a writer resumed from outside): nothing judged
            self.executed("schedule", f"{name}: void", ran=False)
            return
        bad = worst(run.findings)
        if bad is not None and CONFIG.accept_weaknesses and all(f.severity == WEAKNESS for f in run.findings):
            # every finding a weakness SPEC accepts (S-INV-9 a): counted, never a failing campaign test;
            # all of them, not ``bad`` alone: the target kind it prefers may hide a violation
            self.executed("schedule", f"{name}: {bad.kind} (weakness SPEC accepts, {bad.clause})")
            return
        self.executed("schedule", f"{name}: {bad.kind if bad else 'clean'}")
        if bad is not None:
            _Writers.first.setdefault(name, run)
            if _Writers.failed_at is None and not _is_final_run():
                _Writers.failed_at = time.monotonic()
            if _Writers.found_after is None:
                _Writers.found_after = type(self).stats.examples
            raise RaceFound(bad, run)

    @rule()
    def idle(self) -> None:
        """The steps after the run: nothing to do (see the module's docstring)."""

    def export_failure(self, error: BaseException) -> Path | None:
        """The final (shrunk) failing run as a race regression, replayable k of k."""
        if not isinstance(error, RaceFound):
            return super().export_failure(error)
        run = error.run
        before = _Writers.first.get(run.situation.name, run)
        return race_files.export(error.finding, run, before, [_Writers.kind] * run.situation.writers, hardened(),
                                 export_dir() / self.EXPORT_UNDER)
