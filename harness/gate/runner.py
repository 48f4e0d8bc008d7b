"""Run scenarios against an implementation through its driver, one worker per thread.

One ``Worker`` owns a sandbox and a persistent driver: between scenarios it wipes the sandbox
and sends ``reset`` (a fresh-process equivalent), so the per-scenario cost is the operations
themselves.  Scenarios that change the environment get a driver of their own.  What the
harness does to the sandbox is ``actions``; judging answers and files is
``oracles.expect``; comparing two implementations is ``differential``.

The strace machinery is imported only for a scenario that carries syscall faults: a plain
conformance run never loads it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..drivers import actions, capabilities, hangwatch
from ..drivers.interrupt import stopping, work_done
from ..drivers.peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox, snapshot
from ..oracles import coexist, hazards, lock_leftover
from ..oracles.expect import (
    Failure,
    check_answer,
    check_then,
    coverage_reason,
    uncovered,
    unexpected_write,
)
from ..oracles.findings import HAZARD, Finding
from .scenarios import Scenario, iso_instant

__all__ = ["Outcome", "Worker", "run_all", "run_until_interrupted"]


@dataclass
class Outcome:
    scenario: Scenario
    impl: str
    status: str  # pass | fail | error | xfail | xpass | skip
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    stderr: str = ""
    reason: str = ""
    answers: list[Answer | None] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    op_seconds: float = 0.0  # time inside the scenario's own operations (the rest is overhead)
    findings: list[Finding] = field(default_factory=list)  # hazards seen beside SPEC's verdict


def _removal_undone(sc: Scenario, before: dict[str, bytes], after: dict[str, bytes], impl: str,
                    reproduce: str) -> list[Finding]:
    """A hazard beside the verdict: a removal SPEC lets leave the topic indexed (SS-REMOVE-1)."""
    return [Finding("removal-undone", HAZARD, clause="SS-REMOVE-1", impl=impl, path=f"{coexist.SHARED_STORE}{f}",
                    reproduce=reproduce,
                    evidence=f"{sc.id}: {f} is listed in .ocl-removed by this run and still indexed: the removal did not take")
            for f in coexist.removal_undone(coexist.store_files(before), coexist.store_files(after))]


def _strace_unavailable() -> str | None:
    from ..faults.strace import strace_unavailable

    return strace_unavailable()


def _strace_wrapper(sc: Scenario, root: str) -> list[str]:
    from ..faults.strace import scenario_wrapper

    return scenario_wrapper(list(sc.faults), root)


class Worker:
    """A sandbox and a driver for one implementation; runs scenarios one after another."""

    def __init__(
        self,
        spec: PeerSpec,
        *,
        timeout: float = 10.0,
        validate: bool = False,
        strict: bool = False,
        tmp_parent: str | None = None,
        real_time: bool = False,
        caps: capabilities.Capabilities | None = None,
    ) -> None:
        self.spec, self.timeout, self.validate, self.strict = spec, timeout, validate, strict
        self.caps = caps  # what the driver declared (read from its first hello when not given)
        self.real_time = real_time  # never virtual time, even where the driver offers it
        self.sandbox = Sandbox.create(tmp_parent)
        self.driver: Driver | None = None
        self.impl = ""
        self.version = ""
        self.clock_ms = 0
        self.clock_mode = "frozen"
        self.clock_started = 0.0

    # --- driver lifecycle --------------------------------------------------------------

    def _start(self, env_overrides: dict[str, str] | None = None, wrapper: list[str] | None = None) -> Driver:
        env = self.sandbox.env()
        if env_overrides:
            env.update(env_overrides)
        driver = start_driver(
            self.spec, env, cwd=str(self.sandbox.root), timeout=self.timeout, validate=self.validate,
            wrapper=wrapper,
        )
        self.impl = str(driver.hello.get("impl", self.spec.kind))
        self.version = str(driver.hello.get("version", ""))
        return driver

    def _driver_for(self, sc: Scenario) -> tuple[Driver, bool]:
        """The persistent driver (reset), or a fresh one for scenarios that need it."""
        if sc.faults:  # a regression's syscall fault: a fresh driver under strace
            return self._start(sc.env, _strace_wrapper(sc, str(self.sandbox.root))), True
        alive = self.driver is not None and self.driver.proc is not None and self.driver.proc.poll() is None
        # a driver that re-imports its implementation on reset can take the environment there
        env_by_reset = alive and bool(sc.env) and not sc.fresh_process and bool(
            self.driver is not None and self.driver.hello.get("reset_env") is True and "reset" in self.driver.ops)
        if sc.needs_fresh_process and not env_by_reset:
            return self._start(sc.env), True
        if self.driver is not None and alive:
            if "reset" in self.driver.ops:
                answer = self.driver.call("reset", {"env": sc.env} if sc.env else None)
                if sc.env and not answer.ok:  # the scenario's environment did not take
                    raise DriverError(f"reset refused: {answer.error}")
                return self.driver, False
            if "fresh_instance" in self.driver.ops:  # the module graph loaded anew (OpenCode)
                answer = self.driver.call("fresh_instance")
                if answer.ok:
                    return self.driver, False
            self.driver.close()
        self.driver = self._start()
        return self.driver, False

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None
        self.sandbox.remove()

    def _capabilities(self) -> capabilities.Capabilities:
        """What the driver declared; its first start tells when the command did not say."""
        if self.caps is None:
            if self.driver is None:
                self.driver = self._start()
            self.caps = capabilities.of(self.driver.hello, self.spec.name, self.spec.kind)
        return self.caps

    # --- clock ---------------------------------------------------------------------------

    def now_ms(self) -> int:
        """The scenario's clock as the driver sees it (virtual: as its last answer said)."""
        if self.clock_mode == "offset":
            return self.clock_ms + int((time.monotonic() - self.clock_started) * 1000)
        return self.clock_ms

    def clock_mode_for(self, driver: Driver, sc: Scenario) -> str:
        """``offset`` runs as ``virtual`` where the driver offers it, unless real time is asked
        for (``--real-time`` or the scenario's ``real_time``)."""
        mode = sc.clock.mode
        if mode == "offset" and not (self.real_time or sc.real_time) and "virtual" in driver.clock_modes:
            return "virtual"
        return mode

    def _set_clock(self, driver: Driver, now_ms: int, tz: str, mode: str) -> None:
        self.clock_ms, self.clock_mode, self.clock_started = now_ms, mode, time.monotonic()
        answer = driver.call("set_clock", {"now": iso_instant(now_ms), "mode": mode, "tz": tz})
        if not answer.ok:
            raise DriverError(f"set_clock refused: {answer.error}")
        self._clock_from(answer)

    def _clock_from(self, answer: Answer) -> float | None:
        """Under a virtual clock: take the driver's time from its answer; the seconds it moved."""
        if self.clock_mode != "virtual" or answer.clock_ms is None:
            return None
        moved = (answer.clock_ms - self.clock_ms) / 1000.0
        self.clock_ms = answer.clock_ms
        return moved

    # --- running --------------------------------------------------------------------------

    def _steps(self, sc: Scenario, driver: Driver, outcome: Outcome) -> dict[str, bytes | None]:
        """Each step in turn: file actions here, ops to the driver, each answer judged.

        Returns what the file actions themselves left at each path they changed (``None``:
        removed), so the coverage check can tell the scenario's changes from the peer's."""
        stderr = partial(_wait_stderr, driver)
        written: dict[str, bytes | None] = {}
        for i, step in enumerate(sc.steps):
            if step.is_file_action:
                if step.op == "advance_clock":
                    later = self.now_ms() + round(float(step.args["seconds"]) * 1000)
                    self._set_clock(driver, later, sc.clock.tz, self.clock_mode)
                else:
                    pre = snapshot(self.sandbox.root)
                    actions.perform(self.sandbox, step, self.now_ms, driver.pid)
                    post = snapshot(self.sandbox.root)
                    written.update({k: post.get(k) for k in set(pre) | set(post) if pre.get(k) != post.get(k)})
                outcome.answers.append(None)
                continue
            locks = lock_leftover.lock_files(self.sandbox.root)
            t0 = time.monotonic()
            answer = driver.call(step.op, step.args, timeout=step.timeout)
            elapsed = time.monotonic() - t0
            if not sc.faults:  # an injected unlink fault may keep a lock: S-LOCK-5 ignores that error
                outcome.failures += [Failure(f"step {i + 1} ({step.op})", "no lock of its own left (S-LOCK-5)", f.path,
                                             f.evidence) for f in lock_leftover.check(
                                                 self.sandbox.root, locks, {driver.pid}, op=step.op)]
            outcome.op_seconds += elapsed
            if (moved := self._clock_from(answer)) is not None:
                elapsed = moved  # timings are judged on the clock the implementation waited on
            outcome.answers.append(answer)
            where = f"step {i + 1} ({step.op})"
            outcome.failures += check_answer(where, answer, step.expect, elapsed, stderr, self.strict,
                                             impl=self.impl, op=step.op)
            if hazards.looks_raw(answer):
                self._raw_error(sc, step.op, answer, outcome)
        return written

    def _raw_error(self, sc: Scenario, op: str, answer: Answer, outcome: Outcome) -> None:
        """The ``raw-error`` hazard beside SPEC's verdict (issue 12 item 2)."""
        root = str(self.sandbox.root)
        mentioned = hazards.mentioned_paths(answer, root)
        found = hazards.raw_error(
            answer, hazards.situation(root, mentioned), root=root, op=op, clause=",".join(sc.clauses),
            mentioned=mentioned,
        )
        if found is not None and all(f.key != found.key for f in outcome.findings):
            outcome.findings.append(replace(
                found, impl=f"{self.impl} {self.version}".strip(),
                reproduce=f"memconform replay {sc.path} --impl {self.spec.name}",
            ))

    def _hang(self, sc: Scenario, error: DriverError, outcome: Outcome) -> None:
        """The ``hang`` hazard, with the syscall and file the driver waited in (issue 12 item 2)."""
        assert error.hung is not None
        if error.stuck == "livelock":
            found = hangwatch.livelock(error.hung, error.blocked, clause=",".join(sc.clauses), seconds=error.waited)
        else:
            found = hazards.hang(error.hung, error.blocked, root=str(self.sandbox.root),
                                 clause=",".join(sc.clauses), seconds=error.waited)
        outcome.findings.append(replace(
            found, impl=f"{self.impl} {self.version}".strip(),
            reproduce=f"memconform replay {sc.path} --impl {self.spec.name}",
        ))

    def run(self, scenario: Scenario) -> Outcome:
        started = time.monotonic()
        outcome = Outcome(scenario, self.spec.name, "pass")
        fresh: Driver | None = None
        try:
            if scenario.faults and (why := _strace_unavailable()):
                outcome.status, outcome.reason = "skip", why
                return outcome
            actions.wipe(self.sandbox)
            caps = self._capabilities()
            if (why := not_applicable(scenario, caps)) is not None:
                outcome.status, outcome.reason = "skip", why
                return outcome
            sc = scenario.bind({**self.sandbox.placeholders(), "CARRY": caps.carry_tag})
            actions.place_given(self.sandbox, sc.given)
            before = snapshot(self.sandbox.root)
            known = self.driver.ops if self.driver is not None else set()
            if known and (lacking := sorted(sc.driver_ops - known)):  # no reset or fresh driver to learn that
                outcome.status, outcome.reason = "skip", f"driver lacks op(s) {', '.join(lacking)}"
                return outcome
            driver, is_fresh = self._driver_for(sc)
            fresh = driver if is_fresh else None
            missing = sorted(sc.driver_ops - driver.ops)
            if missing:
                outcome.status, outcome.reason = "skip", f"driver lacks op(s) {', '.join(missing)}"
                return outcome
            sc = sc.bind({"PID": str(driver.pid)})
            self._set_clock(driver, sc.clock.now_ms, sc.clock.tz, self.clock_mode_for(driver, sc))
            driver.take_stderr()
            written = self._steps(sc, driver, outcome)
            after = snapshot(self.sandbox.root)
            outcome.files = after
            outcome.failures += check_then(sc.then, before, after, self.sandbox.root)
            outcome.findings += _removal_undone(sc, before, after, f"{self.impl} {self.version}".strip(),
                                                f"memconform replay {sc.path} --impl {self.spec.name}")
            if not sc.is_regression and (left_out := uncovered(sc.then, before, after, written)):
                if self.spec.kind != "python":
                    # the reference leaves every changed file pinned (the corpus runs on it): a
                    # file only this implementation changed is its own unexpected write
                    outcome.failures.append(unexpected_write(left_out))
                elif outcome.failures:
                    # a gap in the scenario; the reference's failure says more, and the unpinned
                    # files are one more line of it
                    outcome.failures.append(Failure("then", "every changed file pinned or ignored", ", ".join(left_out),
                                                    coverage_reason(left_out)))
                else:
                    outcome.status, outcome.reason = "error", coverage_reason(left_out)
        except DriverError as e:
            outcome.status = "error"
            outcome.reason = str(e)
            outcome.stderr = e.stderr
            if e.hung is not None:
                self._hang(sc, e, outcome)
            if self.driver is not None and (self.driver.proc is None or self.driver.proc.poll() is not None):
                self.driver = None
        except Exception as e:  # a harness bug must not end the run: report it on this scenario
            outcome.status = "error"
            outcome.reason = f"harness error: {type(e).__name__}: {e}"
        finally:
            if fresh is not None:
                fresh.close()
            outcome.seconds = time.monotonic() - started
        if outcome.status == "skip":
            return outcome
        if self.driver is not None:
            outcome.stderr += self.driver.take_stderr()
        if outcome.status == "pass" and outcome.failures:
            outcome.status = "fail"
        outcome.seconds = time.monotonic() - started
        return outcome


def not_applicable(sc: Scenario, caps: capabilities.Capabilities) -> str | None:
    """Why ``sc`` does not apply to a tool with ``caps`` (a skip, never a finding), or None:
    carry-over (a scenario citing SS-CARRY or S-MIGRATE) for a tool that declares no local store."""
    if any(c.startswith(("SS-CARRY-", "S-MIGRATE-")) for c in sc.clauses):
        return capabilities.carry_applies(caps)
    return None


SKIPPED_FOR = ("driver lacks op", "A (", "B (", "not applicable")
"""Skip reasons that mean a missing op or capability (a cross pair's names the side), not a
``--skip`` or a missing strace."""


def coverage(outcomes: list[Outcome], caps: capabilities.Capabilities, profile: str) -> dict[str, Any]:
    """A report's ``capabilities`` section from a run's outcomes: the scenarios skipped for a
    missing op or capability, and the clauses (of ``profile``) no executed scenario judged."""
    ran = [o.scenario.clauses for o in outcomes if o.status not in ("skip", "error")]
    not_run = [capabilities.NotRun(o.scenario.id, o.reason, tuple(o.scenario.clauses)) for o in outcomes
               if o.status == "skip" and o.reason.startswith(SKIPPED_FOR)]
    return capabilities.coverage_section(caps, not_run, profile, ran)


def _wait_stderr(driver: Driver, needles: tuple[str, ...], seconds: float = 2.0) -> str:
    """Stderr arrives on its own pipe; wait (bounded) for the lines we expect.

    A driver writes its stderr before the answer (node's pipes are synchronous, Python's
    stderr is line-buffered), so once the pipe is empty and nothing new came for 30 ms the
    lines are not coming: stop waiting then instead of at the bound."""
    deadline = time.monotonic() + seconds
    text = driver.stderr()
    quiet = 0
    while not all(n in text for n in needles) and time.monotonic() < deadline:
        threading.Event().wait(0.01)
        before, text = text, driver.stderr()
        quiet = quiet + 1 if text == before and driver.stderr_drained() else 0
        if quiet >= 3:
            break
    return text


# --- many scenarios, in parallel ------------------------------------------------------------


def run_all(
    spec: PeerSpec,
    scenarios: list[Scenario],
    *,
    parallel: int = 1,
    timeout: float = 10.0,
    validate: bool = False,
    strict: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
    real_time: bool = False,
    caps: capabilities.Capabilities | None = None,
) -> list[Outcome]:
    """Run every scenario; one persistent driver per worker thread.

    Scenarios marked ``real_time`` run afterwards, one at a time (the serial tail): their
    timings need the real clock and a machine the other workers do not load."""
    lock = threading.Lock()
    pending = list(reversed([sc for sc in scenarios if not sc.real_time]))
    tail = [sc for sc in scenarios if sc.real_time]
    results: dict[str, Outcome] = {}

    def work() -> None:
        worker = Worker(spec, timeout=timeout, validate=validate, strict=strict, real_time=real_time, caps=caps)
        try:
            while True:
                with lock:
                    if not pending or stopping():
                        return
                    sc = pending.pop()
                outcome = worker.run(sc)
                if stopping() and outcome.status == "error":
                    return  # cut by Ctrl-C (its driver was killed): not a result
                with lock:
                    results[sc.id] = outcome
                    if on_outcome is not None:
                        on_outcome(outcome)
        finally:
            worker.close()

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for f in [pool.submit(work) for _ in range(max(1, min(parallel, len(pending))))]:
            f.result()
    if tail:
        pending = list(reversed(tail))
        work()
    return [results[sc.id] for sc in scenarios if sc.id in results]  # all, unless Ctrl-C cut the run


def run_until_interrupted(
    spec: PeerSpec, scenarios: list[Scenario], *, on_outcome: Callable[[Outcome], None] | None = None,
    **options: Any,
) -> tuple[list[Outcome], bool]:
    """``run_all``, and on Ctrl-C the outcomes of the scenarios that finished (in corpus
    order) with ``True``: an interrupted run still reports what ran (issue 22 item 4)."""
    done: list[Outcome] = []

    def seen(o: Outcome) -> None:
        done.append(o)
        if on_outcome is not None:
            on_outcome(o)

    try:
        outcomes = run_all(spec, scenarios, on_outcome=seen, **options)
        work_done()
        return outcomes, stopping()  # a Ctrl-C whose KeyboardInterrupt was swallowed still counts
    except KeyboardInterrupt:
        work_done()
        order = {sc.id: i for i, sc in enumerate(scenarios)}
        return sorted(done, key=lambda o: order.get(o.scenario.id, len(order))), True
