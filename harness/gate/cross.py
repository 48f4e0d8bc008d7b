"""Cross-tool sequences: two implementations, two drivers, one sandbox (issue 14 item 4).

``memconform conformance --impl X --with Y`` runs the scenarios of ``scenarios/cross/`` with
role ``A`` = X and ``B`` = Y: each step names who runs it (``"by": "A"`` / ``"B"``; none: A),
both drivers see the same agent dir, home and shared store (the same environment), and the
same clock (set on both, moved on both).  A step is judged by its outcome kind
(``expect.outcome``, classified per driver by ``oracles.outcome_kind``), ``then`` by the
normalised store (``then.store``, ``oracles.store_norm``) and the usual ``then`` checks; and
after every mutating op ``oracles.coexist`` checks that the op kept what it did not aim at,
and over the sequence that no line flip-flops between the tools' renderings.

Drivers are started fresh for every scenario (OpenCode's has no ``reset``; a cross sequence
is short).  Files outside the shared store (each tool's configuration, local store and
carry-over sentinel) are each tool's own business: left unpinned on purpose.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..drivers import actions, capabilities
from ..drivers.peers import Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox, snapshot
from ..oracles import coexist, lock_leftover
from ..oracles.expect import (
    Failure,
    check_answer,
    check_then,
    coverage_reason,
    uncovered,
    unexpected_write,
)
from ..oracles.findings import HAZARD, Finding
from ..oracles.shared_checks import carry_placeholders
from .runner import Outcome, not_applicable
from .scenarios import SCENARIOS_DIR, Ignore, Scenario, discover, iso_instant

CROSS_DIR = SCENARIOS_DIR / "cross"
ROLES = ("A", "B")
# Not the shared store: each tool's own configuration, local store and sentinel (PEER-1).
OWN_FILES = (
    Ignore("agent/*", "each tool's own agent dir (configuration, local store, sentinel): not shared"),
    Ignore("home/.config/*", "OpenCode's own configuration and local store (PEER-1): not shared"),
)


def is_cross(sc: Scenario) -> bool:
    """A cross-tool sequence: some step names the implementation that runs it."""
    return any(step.by is not None for step in sc.steps)


def discover_cross(extra: list[Path], only: bool, run: list[str], skip: list[str]) -> list[Scenario]:
    """The cross sequences under ``scenarios/cross`` (unless ``only``) and ``extra``, by id."""
    roots = [*([] if only else [CROSS_DIR]), *extra]
    found: dict[str, Scenario] = {}
    for root in roots:
        for sc in discover(root, run, skip):
            if is_cross(sc):
                found.setdefault(sc.id, sc)
    return [found[i] for i in sorted(found)]


@dataclass
class Pair:
    """The two implementations of a run, as they named themselves."""

    a: PeerSpec
    b: PeerSpec
    caps: tuple[capabilities.Capabilities | None, capabilities.Capabilities | None] = (None, None)  # as declared

    def spec(self, role: str) -> PeerSpec:
        return self.a if role == "A" else self.b

    def carry(self) -> dict[str, str]:
        """``${CARRY_A}``/``${CARRY_B}``: each tool's declared carry-over tag, else its kind's."""
        out = carry_placeholders(CARRY_A=self.a.kind, CARRY_B=self.b.kind)
        for role, caps in zip(("CARRY_A", "CARRY_B"), self.caps, strict=True):
            if caps is not None:
                out[role] = caps.carry_tag
        return out

    def not_applicable(self, sc: Scenario) -> str | None:
        """Why ``sc`` does not apply to this pair (a tool without a local store: no carry-over)."""
        return next((why for caps in self.caps if caps is not None and (why := not_applicable(sc, caps))), None)


class CrossWorker:
    """Runs cross sequences for one pair, a fresh sandbox and two fresh drivers each."""

    def __init__(self, pair: Pair, *, timeout: float = 10.0, validate: bool = False, strict: bool = False) -> None:
        self.pair, self.timeout, self.validate, self.strict = pair, timeout, validate, strict
        self.clock_ms, self.clock_mode, self.clock_started = 0, "frozen", 0.0

    def _start(self, spec: PeerSpec, env: dict[str, str], cwd: str, tries: int = 3) -> Driver:
        """A driver, started again when the hang watch took a slow start on a loaded machine
        for a spin (runnable, little CPU, before ``hello``): a real spin recurs every time."""
        for attempt in range(tries):
            try:
                return start_driver(spec, env, cwd=cwd, timeout=self.timeout, validate=self.validate)
            except DriverError as e:
                if getattr(e, "stuck", None) != "livelock" or attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")

    def _now(self) -> int:
        if self.clock_mode == "offset":
            return self.clock_ms + int((time.monotonic() - self.clock_started) * 1000)
        return self.clock_ms

    def _set_clock(self, drivers: dict[str, Driver], now_ms: int, tz: str, mode: str) -> None:
        self.clock_ms, self.clock_mode, self.clock_started = now_ms, mode, time.monotonic()
        for role, d in drivers.items():
            answer = d.call("set_clock", {"now": iso_instant(now_ms), "mode": mode, "tz": tz})
            if not answer.ok:
                raise DriverError(f"{role} ({d.spec.name}): set_clock refused: {answer.error}")

    def run(self, scenario: Scenario) -> Outcome:
        started = time.monotonic()
        outcome = Outcome(scenario, f"{self.pair.a.name}+{self.pair.b.name}", "pass")
        sandbox = Sandbox.create()
        drivers: dict[str, Driver] = {}
        try:
            if (why := self.pair.not_applicable(scenario)) is not None:
                outcome.status, outcome.reason = "skip", why
                return outcome
            sc = scenario.bind({**sandbox.placeholders(), **self.pair.carry()})
            actions.place_given(sandbox, sc.given)
            before = snapshot(sandbox.root)
            env = sandbox.env(sc.clock.tz)
            env.update(sc.env)
            for role in ROLES:
                drivers[role] = self._start(self.pair.spec(role), env, str(sandbox.root))
            lacking = _lacking(sc, drivers)
            if lacking:
                outcome.status, outcome.reason = "skip", lacking
                return outcome
            self._set_clock(drivers, sc.clock.now_ms, sc.clock.tz, sc.clock.mode)
            marks, written = self._steps(sc, sandbox, drivers, outcome)
            after = snapshot(sandbox.root)
            outcome.files = after
            self._judge(sc, marks, outcome)
            then = replace(sc.then, ignore=(*sc.then.ignore, *OWN_FILES))
            outcome.failures += check_then(then, before, after, sandbox.root)
            left_out = uncovered(then, before, after, written)
            if left_out and {self.pair.a.kind, self.pair.b.kind} != {"python"}:
                outcome.failures.append(unexpected_write(left_out))  # a tool of the pair wrote it, not the reference
            elif left_out:
                outcome.failures.append(Failure("then", "every changed file pinned or ignored", ", ".join(left_out),
                                                coverage_reason(left_out)))
        except DriverError as e:
            outcome.status, outcome.reason, outcome.stderr = "error", str(e), e.stderr
        except Exception as e:  # a harness bug must not end the run: report it on this scenario
            outcome.status, outcome.reason = "error", f"harness error: {type(e).__name__}: {e}"
        finally:
            for d in drivers.values():
                outcome.stderr += d.take_stderr() if d.proc is not None else ""
                d.close()
            sandbox.remove()
            outcome.seconds = time.monotonic() - started
        if outcome.status == "pass" and outcome.failures:
            outcome.status = "fail"
        return outcome

    def _steps(
        self, sc: Scenario, sandbox: Sandbox, drivers: dict[str, Driver], outcome: Outcome
    ) -> tuple[list[coexist.Mark], dict[str, bytes | None]]:
        marks: list[coexist.Mark] = []
        written: dict[str, bytes | None] = {}
        for i, step in enumerate(sc.steps, 1):
            role = step.by or "A"
            driver = drivers[role]
            if step.is_file_action:
                if step.op == "advance_clock":
                    later = self._now() + round(float(step.args["seconds"]) * 1000)
                    self._set_clock(drivers, later, sc.clock.tz, self.clock_mode)
                else:
                    pre = snapshot(sandbox.root)
                    actions.perform(sandbox, step, self._now, driver.pid)
                    post = snapshot(sandbox.root)
                    written.update({k: post.get(k) for k in set(pre) | set(post) if pre.get(k) != post.get(k)})
                outcome.answers.append(None)
                continue
            pre_store = coexist.store_files(snapshot(sandbox.root))
            locks = lock_leftover.lock_files(sandbox.root)
            t0 = time.monotonic()
            answer = driver.call(step.op, step.args, timeout=step.timeout)
            elapsed = time.monotonic() - t0
            outcome.failures += [Failure(f"step {i} ({step.op} by {role})", "no lock of its own left (S-LOCK-5)", f.path,
                                         f.evidence) for f in lock_leftover.check(sandbox.root, locks, {driver.pid}, op=step.op)]
            outcome.op_seconds += elapsed
            outcome.answers.append(answer)
            impl = str(driver.hello.get("impl", driver.spec.kind))
            where = f"step {i} ({step.op} by {role})"
            outcome.failures += check_answer(where, answer, step.expect, elapsed, _no_stderr(driver), self.strict,
                                             impl=impl, op=step.op)
            marks.append(coexist.Mark(i, role, _label(driver), step.op, step.args, pre_store,
                                      coexist.store_files(snapshot(sandbox.root)), answer.ok))
        return marks, written

    def _judge(self, sc: Scenario, marks: list[coexist.Mark], outcome: Outcome) -> None:
        """Each mutating op kept what it did not aim at; no line flip-flops, no topic splits
        between the tools (``coexist``)."""
        problems = [p for m in marks for p in coexist.check_step(m)] + coexist.flip_flops(marks) \
            + coexist.split_topics(marks)
        for p in problems:
            if p.fails:
                outcome.failures.append(Failure(f"{p.kind} {p.where}", p.expected, p.actual, f"{p.kind} ({p.clause})"))
            key = (p.kind, p.where)
            if any((f.kind, f.op) == key for f in outcome.findings):
                continue
            outcome.findings.append(Finding(
                p.kind, HAZARD, clause=p.clause, impl=outcome.impl, op=p.where,
                evidence=f"{sc.id}: {p.where}: expected {p.expected}; got {p.actual}"[:400],
                reproduce=f"memconform conformance --impl {self.pair.a.name} --with {self.pair.b.name} --run {sc.id}",
            ))


def _label(driver: Driver) -> str:
    return f"{driver.hello.get('impl', driver.spec.kind)} {driver.hello.get('version', '')}".strip()


def _no_stderr(driver: Driver) -> Callable[[tuple[str, ...]], str]:
    return lambda needles: driver.stderr()


def _lacking(sc: Scenario, drivers: dict[str, Driver]) -> str:
    """Why the pair cannot run ``sc`` ('' if it can): a role's driver lacks a step's op."""
    missing: dict[str, set[str]] = {}
    for step in sc.steps:
        role = step.by or "A"
        if not step.is_file_action and step.op not in drivers[role].ops:
            missing.setdefault(role, set()).add(step.op)
    return "; ".join(
        f"{role} ({drivers[role].spec.kind}) lacks op(s) {', '.join(sorted(ops))}" for role, ops in sorted(missing.items())
    )


def run_pair(
    pair: Pair,
    scenarios: list[Scenario],
    *,
    timeout: float = 10.0,
    validate: bool = False,
    strict: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every sequence on the pair, one after another (two drivers on one store each)."""
    worker = CrossWorker(pair, timeout=timeout, validate=validate, strict=strict)
    out = []
    for sc in scenarios:
        o = worker.run(sc)
        out.append(o)
        if on_outcome is not None:
            on_outcome(o)
    return out


__all__ = ["CROSS_DIR", "CrossWorker", "Pair", "discover_cross", "is_cross", "run_pair"]
