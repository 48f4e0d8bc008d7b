"""One schedule, run: real writer processes, each held after every store call, released one
at a time as a strategy picks them; the store they leave, judged.

A situation (``races.Situation``) sets the store up (a planted lock) and gives each writer its
ops.  The drivers start, get a virtual clock at one instant (their sleeps cost nothing and
their lock ages do not depend on how long the scheduler takes), and are attached to strace
(``tracer.Traced``).  Then, step by step, the strategy picks one enabled writer: an idle one
gets its next op, a held one is let go; the scheduler waits until that writer is held again
(after its next store call) or answers.  Nothing else runs meanwhile, so the run is a function
of the picks, and the picks replay it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..drivers import capabilities
from ..drivers.peers import Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox
from ..oracles import interop_checks as checks
from ..oracles import lock_leftover
from ..oracles.findings import HAZARD, Finding
from ..writers import engine
from ..writers.engine import disk_view
from . import protocol, stores
from .run import ENV_EXEC, HARDENED_ENV
from .strategies import DONE, KILL, Step, Strategy
from .tracer import Call, Event, Traced

LOCK = ".lock"
DEAD_PID = 4194305
"""A pid no process can have (above Linux's largest pid_max, below 2^31): kill(pid, 0) gives
ESRCH (S-LOCK-3), on every run, unlike a reaped pid that a later process may reuse."""
STEP_TIMEOUT = 60.0
ADVANCE = "advance_clock"  # a situation's pseudo-op: the writer's virtual clock moves on by args["ms"]
KILLED = "killed"  # the step in which a writer was SIGKILLed (the situation's kill_after)


@dataclass(frozen=True)
class Situation:
    """A lock-protocol situation: the lock planted before the writers start, and their ops."""

    name: str
    lock: str  # "none" | "dead" (a token of a dead pid) | "empty"
    age_s: float
    ops: tuple[tuple[tuple[str, dict[str, Any]], ...], ...]  # per writer
    why: str = ""
    kill_after: tuple[int, str] | None = None  # (writer, call prefix): SIGKILL it when held after that call
    start_after: tuple[int, str] | None = None  # (writer, call prefix): the others start their ops only after it
    killable: int | None = None  # the writer a KILL pick may SIGKILL, while held after the others started
    store: str = "shared"  # "shared" | "local": the first writer's own local store (issue 29)
    carry: bool = False  # both tools' local stores seeded: each fresh writer's first op carries them over

    @property
    def writers(self) -> int:
        return len(self.ops)


@dataclass
class RaceOp:
    """An op of one writer, its interval in steps (what ``interop_checks`` reads)."""

    process: str
    op: str
    args: dict[str, Any]
    start: int
    end: int | None = None
    type: str = "info"
    result: Any = None
    outcome: str | None = None  # what the answer said it did (``writers.engine.judge``)


@dataclass
class RunResult:
    situation: Situation
    impls: list[str]  # per writer: the spec name
    labels: dict[str, str]  # spec name -> the implementation as it named itself
    steps: list[Step]
    ops: list[RaceOp]
    findings: list[Finding]
    held: int
    passed: int
    seconds: float
    errors: list[str] = field(default_factory=list)
    void: str = ""  # why the run says nothing (a writer moved out of turn): no findings
    trace: list[tuple[int, str, Call]] = field(default_factory=list)  # (step, writer, call): the protocol oracle's input

    @property
    def picks(self) -> list[str]:
        return [s.writer for s in self.steps]


@dataclass
class _Writer:
    name: str
    spec: PeerSpec
    driver: Driver
    traced: Traced
    todo: list[tuple[str, dict[str, Any]]]
    state: str = "idle"  # idle | held | running | gone
    op: RaceOp | None = None
    clock_ms: int = 0  # the writer's virtual now, as its last answer said
    locks_before: dict[str, bytes] = field(default_factory=dict)  # the store's locks when its op began


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plant(directory: Path, lock: str, age_s: float, now_ms: int) -> None:
    """``D/.lock`` as the situation wants it, its mtime ``age_s`` before the writers' now."""
    import os

    directory.mkdir(parents=True, exist_ok=True)
    if lock == "none":
        return
    path = directory / LOCK
    created = now_ms - round(age_s * 1000)
    path.write_text(f"{DEAD_PID}\t{created}\tplanted" if lock == "dead" else "")
    ns = created * 1_000_000
    os.utime(path, ns=(ns, ns))


_SANDBOX_VARS = ("PI_CODING_AGENT_DIR", "PI_SHARED_MEMORY_HOME", "HOME", "XDG_CONFIG_HOME", "OCL_SHARED_MEMORY_HOME", "TZ")


def _env(sb: Sandbox, hardened: bool) -> dict[str, str]:
    env = sb.env()
    return {k: env[k] for k in _SANDBOX_VARS} | {HARDENED_ENV: "1" if hardened else "0"}


FIXED_HASHES = {"PYTHONHASHSEED": "0"}
"""A Python writer iterates sets of names (the reference's directory watch probes the names
that changed): with per-process hash seeds the order of its stat calls differed from run to
run (seen: a replay diverging at step 332 of 347, 10 of 10 times), so the order of a
schedule's calls would not be a function of its picks."""


NODE_ONE_WORKER = {"MALLOC_ARENA_MAX": "1", "UV_THREADPOOL_SIZE": "1"}
"""A node writer's other threads make no traced call: with an arena each, glibc reads
/proc/sys/vm/overcommit_memory (``openat``, ``read``) when a thread's heap shrinks, and such a
call, stopping in the same group stop as the main thread's store call, is let go with SIGCONT,
which can let the held main thread run out of turn or its stop be cancelled (seen in 6-writer
nemesis schedules with pi, thousands of steps in; with one arena none of 80 ops' calls came
from another thread)."""


def _start(spec: PeerSpec, sb: Sandbox, hardened: bool, timeout: float) -> Driver:
    env = sb.env() | FIXED_HASHES | (_env(sb, hardened) if spec.kind == "python" else NODE_ONE_WORKER)
    # ``env`` as a wrapper turns the driver's /proc hang watch off: a held writer is stopped on
    # purpose; the scheduler's own step timeout judges hangs.
    return start_driver(spec, env, cwd=str(sb.root), timeout=timeout, wrapper=[ENV_EXEC])


class DriverPool:
    """Drivers kept between schedules: each run ``reset``s them into its own fresh sandbox
    (a fresh module instance in node, a renewed store in the reference, the environment
    re-read: as a fresh process would be), which saves the start of every writer per run."""

    def __init__(self) -> None:
        self.slots: list[Driver] = []

    def take(self, specs: Sequence[PeerSpec], sb: Sandbox, hardened: bool, timeout: float) -> list[Driver]:
        out: list[Driver] = []
        for i, spec in enumerate(specs):
            d = self.slots[i] if i < len(self.slots) else None
            # a reset into the new sandbox only where hello declares reset_env (issue 32); else a fresh writer
            if d is not None and (d.spec != spec or d.proc is None or d.proc.poll() is not None
                                  or not capabilities.of(d.hello).fresh_by_reset(with_env=True)
                                  or not d.call("reset", {"env": _env(sb, hardened)}).ok):
                _end(d)
                d = None
            if d is None:
                d = _start(spec, sb, hardened, timeout)
            if i < len(self.slots):
                self.slots[i] = d
            else:
                self.slots.append(d)
            out.append(d)
        return out

    def drop(self, driver: Driver) -> None:
        """End a writer that went wrong; the next run starts a fresh one in its place."""
        _end(driver)

    def close(self) -> None:
        for d in self.slots:
            _end(d)
        self.slots = []


def _end(driver: Driver) -> None:
    try:
        driver.kill()
    finally:
        driver.close()


def spans(steps: Sequence[Step], ops: Sequence[RaceOp], lock: str) -> list[checks.LockSpan]:
    """Each writer's holds of the lock, in steps: from its exclusive create (or its link onto
    ``.lock``) to its own next unlink of it, cut at the answer of the op that took it (or at
    its death: a killed writer holds nothing, its lock is a dead owner's)."""
    out: list[checks.LockSpan] = []
    for i, s in enumerate(steps):
        acquired = (s.call.startswith(f"create({LOCK})") or (s.call.startswith("link(") and s.call.split(")")[0].endswith(f",{LOCK}"))) \
            and "= -" not in s.call
        if not acquired:
            continue
        end = next((j for j in range(i + 1, len(steps)) if (steps[j].writer == s.writer
                    and (steps[j].call.startswith(f"unlink({LOCK})") or steps[j].call in (DONE, KILLED)))
                    or (steps[j].writer == KILL and steps[j].call == f"SIGKILL {s.writer}")), None)
        out.append(checks.LockSpan(s.writer, lock, i, end))
    return out


def judge(situation: Situation, steps: Sequence[Step], ops: Sequence[RaceOp], directory: Path,
          impl_of: dict[str, str]) -> list[Finding]:
    """The nemesis checks on a scheduled run: lost and duplicated writes through the index,
    split topics, two holders of one lock (S-INV-9 a weakness when a planted lock made the
    writers reclaim, else a violation)."""
    faults: list[RaceOp] = []
    if situation.lock != "none":
        faults.append(RaceOp("nemesis-0", "fault", {"family": "stale-lock", "id": 0}, 0, len(steps), "ok"))
    if situation.kill_after is not None:
        faults.append(RaceOp("nemesis-1", "fault", {"family": "kill", "id": 1}, 0, len(steps), "ok"))
    killed = next((i for i, s in enumerate(steps) if s.writer == KILL), None)
    if killed is not None:  # from the step after it: a hold that began before the kill took a live lock
        faults.append(RaceOp("nemesis-1", "fault", {"family": "kill", "id": 1}, killed + 1, len(steps), "ok"))
    view = disk_view(directory)
    found = checks.lost_writes(ops, [view], impl_of=impl_of, faults=faults)
    found += checks.split_topics(view, path=str(directory / "MEMORY.md"))
    found += checks.double_holders(ops, spans=spans(steps, ops, str(directory / LOCK)), impl_of=impl_of, faults=faults,
                                   apart=lambda n: f"{n} store calls")
    return found


def run_schedule(
    peers: Sequence[PeerSpec],
    situation: Situation,
    strategy: Strategy,
    *,
    hardened: bool = False,
    labels: dict[str, str] | None = None,
    timeout: float = STEP_TIMEOUT,
    max_steps: int = 2000,
    pool: DriverPool | None = None,
) -> RunResult:
    """Run ``situation`` once with ``peers`` round-robin over its writers, ``strategy`` picking."""
    t0 = time.monotonic()
    sb = Sandbox.create()
    writers: list[_Writer] = []
    steps: list[Step] = []
    ops: list[RaceOp] = []
    errors: list[str] = []
    leftovers: list[tuple[_Writer, Finding]] = []  # S-LOCK-5: an op's own lock, left after its answer
    trace: list[tuple[int, str, Call]] = []
    void = ""
    try:
        specs = [peers[i % len(peers)] for i in range(situation.writers)]
        directory, roots, carried = stores.prepare(sb, situation, specs)
        if pool is not None:
            for d in pool.take(specs, sb, hardened, timeout):
                writers.append(_Writer(f"w{len(writers)}", d.spec, d, Traced(d.pid, roots), []))
        else:
            drivers: list[Driver | BaseException] = [RuntimeError("not started")] * len(specs)

            def boot(i: int) -> None:
                try:
                    drivers[i] = _start(specs[i], sb, hardened, timeout)
                except BaseException as e:
                    drivers[i] = e

            threads = [threading.Thread(target=boot, args=(i,)) for i in range(len(specs))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for booted in drivers:
                if isinstance(booted, Driver):
                    writers.append(_Writer(f"w{len(writers)}", booted.spec, booted,
                                           Traced(booted.pid, roots), []))
            failed = [d for d in drivers if not isinstance(d, Driver)]
            if failed:
                raise DriverError(f"a writer did not start: {failed[0]}")
        now_ms = int(time.time() * 1000)
        plant(directory, situation.lock, situation.age_s, now_ms)
        for w, script in zip(writers, situation.ops, strict=True):
            w.todo = list(script)
            w.clock_ms = now_ms
            if "virtual" in w.driver.clock_modes:
                answer = w.driver.call("set_clock", {"now": _iso(now_ms), "mode": "virtual", "tz": "UTC"})
                if not answer.ok:
                    raise DriverError(f"{w.name} ({w.spec.name}): set_clock refused: {answer.error}")
            w.traced.attach()
            w.traced.arm()
        while len(steps) < max_steps:
            gate = situation.start_after
            started = gate is None or any(s.writer == f"w{gate[0]}" and s.call.startswith(gate[1]) for s in steps)
            enabled = [w.name for i, w in enumerate(writers) if w.state == "held"
                       or (w.state == "idle" and w.todo and (started or gate is None or i == gate[0]))]
            if not enabled:
                break
            victim = None if situation.killable is None else writers[situation.killable]
            if victim is not None and started and victim.state == "held":
                enabled.append(KILL)
            pick = strategy.choose(enabled, steps)
            stray = next((x for x in writers if x.state != "gone" and not x.traced.events.empty()), None)
            if stray is not None:  # a writer moved while nobody let it: someone else's SIGCONT
                void = (f"{stray.name} ({stray.spec.kind}) ran out of turn before step {len(steps)} "
                        f"(resumed from outside the scheduler)")
                break
            if pick == KILL and victim is not None:  # dies holding what it holds
                victim.driver.kill()
                steps.append(Step(KILL, f"SIGKILL {victim.name}", tuple(enabled)))
                victim.state = "gone"
                continue
            w = next(x for x in writers if x.name == pick)
            if w.state == "idle" and w.todo[0][0] == ADVANCE:
                steps.append(Step(w.name, _advance(w, int(w.todo.pop(0)[1]["ms"])), tuple(enabled)))
                continue
            if w.state == "idle":
                op, args = w.todo.pop(0)
                w.op = RaceOp(w.name, op, args, len(steps))
                w.locks_before = lock_leftover.lock_files(directory)
                ops.append(w.op)
                threading.Thread(target=_call, args=(w,), daemon=True).start()
            else:
                w.traced.resume()
            w.state = "running"
            try:
                ev = w.traced.events.get(timeout=max(timeout, STEP_TIMEOUT))
            except Exception:  # queue.Empty
                # Not a finding: the situations hold no FIFO and no live lock for ever, and a
                # stall here was a loaded machine (seen: 10 s in D state, __flush_work, under
                # a bench on 2 cores), so the run is void, with what the writer was doing.
                void = (f"{w.name} ({w.spec.kind}) made no store call and no answer within "
                        f"{max(timeout, STEP_TIMEOUT):g} s after step {len(steps)}: {w.traced.state()}")
                w.state = "gone"
                break
            if ev.kind == "held" and ev.call is not None:
                steps.append(Step(w.name, ev.call.short(roots), tuple(enabled)))
                trace.append((len(steps) - 1, w.name, ev.call))
                w.state = "held"
                kill = situation.kill_after
                if kill is not None and writers.index(w) == kill[0] and steps[-1].call.startswith(kill[1]):
                    w.driver.kill()  # dies holding what it holds: the owner dies mid-write
                    steps.append(Step(w.name, KILLED, (w.name,)))
                    w.state = "gone"
            elif ev.kind == "done":
                steps.append(Step(w.name, DONE, tuple(enabled)))
                assert w.op is not None
                w.op.end = len(steps) - 1
                w.state = "idle"
                if ev.note.isdigit():
                    w.clock_ms = int(ev.note)
                leftovers += [(w, f) for f in lock_leftover.check(directory, w.locks_before, [w.driver.pid],
                                                                     op=w.op.op, answer=w.op.type)]
            else:
                errors.append(f"{w.name} ({w.spec.name}): {ev.note or 'exited'} during step {len(steps)}")
                w.state = "gone"
        else:
            void = f"more than {max_steps} steps: the schedule did not let the writers finish"
        for w in writers:
            w.traced.detach()
        impl_of = {w.name: (labels or {}).get(w.spec.name, w.spec.name) for w in writers}
        found = [] if void else judge(situation, steps, ops, directory, impl_of)
        if not void:  # the lock protocol, read from each writer's own calls; the store model (issue 29)
            everyone = ", ".join(dict.fromkeys(impl_of.values()))
            excused = situation.lock != "none" or situation.kill_after is not None or situation.killable is not None
            found += stores.carried(directory, roots, carried, everyone, excused=excused)
            found += stores.linearizable(ops, excused=excused, impl=everyone, shared=situation.store != "local")
            found = protocol.judge(ops, trace, {w.name: w.driver.pid for w in writers}, impl_of, roots, found)
        found += [] if void else [replace(f, impl=impl_of[w.name], evidence=f"{w.name}: {f.evidence}") for w, f in leftovers]
        for e in errors:
            found.append(Finding("driver-error", HAZARD,
                                 impl=", ".join(dict.fromkeys(impl_of.values())), evidence=e))
        return RunResult(situation, [w.spec.name for w in writers], dict(labels or {}), steps, ops, found,
                         sum(w.traced.held_calls for w in writers), sum(w.traced.passed_calls for w in writers),
                         time.monotonic() - t0, errors, void, trace)
    finally:
        for w in writers:
            w.traced.detach()
            if pool is None or w.state == "gone" or errors or void:
                if pool is not None:
                    pool.drop(w.driver)
                else:
                    _end(w.driver)
        sb.remove()


def _call(w: _Writer, timeout: float | None = None) -> None:
    """Send the writer its op; its answer (or its end) arrives as an event in its queue.
    ``timeout``: the wall-clock bound of the whole op (default the driver's); a writer held
    for long between its calls (a long schedule, a paused writer) needs more than that."""
    assert w.op is not None
    op = w.op
    try:
        answer = w.driver.call(op.op, op.args, timeout=timeout)
    except DriverError as e:
        op.type, op.result = "info", str(e)
        w.traced.events.put(Event("exit", note=str(e)))
        return
    op.type, op.outcome, op.result = engine.judge(w.driver, op.op, answer)
    w.traced.events.put(Event("done", note="" if answer.clock_ms is None else str(answer.clock_ms)))


def _advance(w: _Writer, ms: int) -> str:
    """Move an idle writer's virtual clock on (time passing between its ops: a lock it left
    ages); its calls during ``set_clock`` (the reference re-stamps its own locks) are let go."""
    w.clock_ms += ms
    w.traced.disarm()
    try:
        answer = w.driver.call("set_clock", {"now": _iso(w.clock_ms), "mode": "virtual", "tz": "UTC"})
    finally:
        w.traced.arm()
    if not answer.ok:
        raise DriverError(f"{w.name} ({w.spec.name}): set_clock refused: {answer.error}")
    return f"clock(+{ms} ms)"
