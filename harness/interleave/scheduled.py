"""The nemesis under the syscall scheduler (issue 24 item 4): its writers held at every store
call, its faults fired at store-call counts instead of wall-clock offsets, so a run is a
function of the strategy's picks and a finding replays k of k.

A timed nemesis run (``run.run_nemesis``) lets the writers race freely for ``time_limit``
seconds while faults fire at offsets: the same schedule never gives the same interleaving
twice, and its findings replay "k of n" by chance.  Here the same writers (one driver each,
implementations round-robin over the slots, the same seeded op streams) run under
``tracer.Traced``: one store call at a time, picked by a strategy (``strategies.RandomWalk``,
``PCT``, or a recorded schedule's ``Replay``).  Time is counted in store calls:
``STEPS_PER_S`` calls stand for one second of the schedule, so a fault planned at 1.46 s
fires before step 146 and one of 1.0 s lasts 100 steps; every writer runs on a virtual clock
(its sleeps move it; lock ages do not depend on how long the scheduler takes).

What each family is when nobody runs but the writer the strategy picks:

- ``kill``: SIGKILL the target (held after a store call, or idle); its op is ``info``; a fresh
  writer of the same implementation takes the slot (new driver, the virtual clock of the run).
  A lock the killed writer held keeps a virtual-time mtime (restamped: the kernel stamps real
  time, which no replay would repeat).
- ``pause``: the target is not picked for the fault's duration in steps (or until nobody else
  can run): the others see a holder that does not move, as under SIGSTOP.
- ``stale-lock`` / ``foreign-lock``: planted (only when no lock exists) with a virtual-time
  mtime, at the first step of the fault's window where there is no lock; a foreign plant is
  removed at the window's end as the timed nemesis removes it.
- ``clock``: the target's virtual clock moves by the skew between two of its ops, and back at
  the window's end.
- ``errno``: the target's next op runs alone (every other writer is held or idle) under a
  one-shot ``strace -P`` that fails the planned call on the planned file: one step.
- ``slow``: not applied.  A delay only changes timing, and under the scheduler the strategy,
  not timing, decides the order of every store call; the fault is reported as skipped.

The run is then judged by the timed nemesis's own checks (``NemesisResult.findings``) on a
history whose clock counts store calls (``STEP_NS`` a step).  The settle probes (the
``unavailable`` hazard, seconds of wall time) do not run: they measure time, which a
scheduled run does not have.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..checker.history import Event, History
from ..checker.linearize import LinearizabilityVerdict
from ..checker.store_model import check
from ..drivers.peers import DriverError, PeerSpec
from ..drivers.sandbox import Sandbox
from ..oracles import interop_checks as checks
from ..oracles import lock_leftover
from ..oracles.grammar import to_slug
from ..writers.engine import TOPICS, WriterStats, disk_view, judge, next_op, prepare_shared
from . import nemesis as nm
from .run import NemesisResult, _Engine
from .scheduler import DEAD_PID, KILLED, RaceOp, _advance, _call, _iso, _start, _Writer, spans
from .settle import describe_lock, settled_violations
from .slot import Slot
from .strategies import DONE, Diverged, Step, Strategy
from .tracer import Traced

STEPS_PER_S = 1000
"""Store calls that stand for one second of a nemesis schedule (a writer's call is ~1 ms of
its life on this machine when it races freely)."""
STEP_NS = 1_000_000_000 // STEPS_PER_S
OP_WALL_S = 24 * 3600.0
HALF_MS = 500_000
"""Stamps fall half a millisecond after a clock's millisecond, so an age (integer now minus
mtime) is never exactly a protocol threshold (10 000 or 60 000 ms): a tie is decided by
sub-millisecond rounding, and replays diverged at one (an age check at exactly 10 s)."""
NEMESIS = "nemesis"  # the writer of the steps in which a fault acted


class ScheduledUnavailable(Exception):
    """A scheduled nemesis cannot run here (no strace)."""


@dataclass
class ScheduledRun:
    """A scheduled nemesis run: the timed engine's result (judged the same way) and the steps."""

    result: NemesisResult
    steps: list[Step]
    strategy: str
    seed: int
    held: int
    void: str = ""  # why the run says nothing: a writer moved out of turn, a replay left its picks

    def meta(self) -> dict[str, Any]:
        """What a regression keeps to enforce this run again (``export`` puts it in the meta)."""
        return {"strategy": self.strategy, "seed": self.seed, "steps_per_s": STEPS_PER_S,
                "steps": [[s.writer, s.call] for s in self.steps]}


@dataclass
class _NWriter(_Writer):
    """A nemesis slot's writer under the scheduler (the race suite's writer, plus its slot)."""

    slot: Slot | None = None
    rng: random.Random = field(default_factory=random.Random)
    drawn: int = 0  # ops drawn from its stream
    thread: threading.Thread | None = None
    paused_by: int | None = None
    own_lock: tuple[str, int] = ("", 0)  # the lock file it created last: path, inode


@dataclass
class _Fault:
    plan: nm.FaultPlan
    at: int  # the step it fires at
    end: int  # the step its window ends at
    state: str = "pending"  # pending | active | done
    target: _NWriter | None = None
    planted: nm.Planted | None = None
    applied: bool = False  # clock: the skew is in; errno: the op ran
    outcome: dict[str, Any] = field(default_factory=dict)


class _Run:
    """One scheduled nemesis run; ``loop`` is the scheduler, the ``_f_*`` methods the faults."""

    def __init__(self, peers: Sequence[PeerSpec], schedule: nm.Schedule, strategy: Strategy, sb: Sandbox, *,
                 timeout: float, hardened: bool, topics: tuple[str, ...]) -> None:
        self.schedule, self.strategy, self.sb = schedule, strategy, sb
        self.timeout, self.hardened, self.topics = timeout, hardened, topics
        self.eng = _Engine(list(peers), schedule, sb, timeout=timeout, hardened=hardened, topics=topics)
        self.roots = tuple(dict.fromkeys(str(s.directory) for s in self.eng.slots))
        self.writers: list[_NWriter] = []
        self.steps: list[Step] = []
        self.events: list[Event] = []
        self.errors: list[str] = []
        self.void = ""
        self.killed: set[int] = set()
        self.leftovers: list[tuple[str, Any]] = []
        self.held = 0
        self.limit = round(schedule.time_limit * STEPS_PER_S)
        self.faults = [_Fault(p, round(p.at * STEPS_PER_S),
                              round(p.at * STEPS_PER_S) + max(1, round(float(p.params.get("duration", 1.0)) * STEPS_PER_S)))
                       for p in schedule.faults]
        self._t = -1

    # --- the history, on a clock of store calls -------------------------------------------

    def record(self, process: str, type_: str, op: str, args: dict[str, Any], result: Any = None,
               outcome: str | None = None) -> int:
        self._t = max(self._t + 1, len(self.steps) * STEP_NS)
        self.events.append(Event(process, type_, op, args, self._t, result, outcome))
        return self._t

    def vnow(self) -> int:
        """The run's virtual now: the latest clock any writer reported."""
        return max(w.clock_ms for w in self.writers)

    # --- writers ----------------------------------------------------------------------------

    def boot(self, slot: Slot, now_ms: int) -> _NWriter:
        d = _start(slot.spec, self.sb, self.hardened, self.timeout)
        slot.driver = d
        slot.pids.append(d.pid)
        old = next((w for w in self.writers if w.slot is slot), None)
        w = _NWriter(slot.name, slot.spec, d, Traced(d.pid, self.roots), [], slot=slot,
                     rng=old.rng if old else random.Random(f"{self.schedule.seed}-{slot.name}"),
                     drawn=old.drawn if old else 0)
        w.clock_ms = now_ms
        if "virtual" in d.clock_modes:
            answer = d.call("set_clock", {"now": _iso(now_ms), "mode": "virtual", "tz": "UTC"})
            if not answer.ok:
                raise DriverError(f"{slot.name} ({slot.spec.name}): set_clock refused: {answer.error}")
        w.traced.attach()
        w.traced.arm()
        return w

    def can_start(self, w: _NWriter) -> bool:
        return w.state == "idle" and w.paused_by is None and len(self.steps) < self.limit

    def begin(self, w: _NWriter) -> None:
        """Draw the writer's next op and send it (its answer arrives as an event)."""
        assert w.slot is not None
        op, args = next_op(w.rng, w.name, w.drawn, self.topics)
        w.drawn += 1
        w.op = RaceOp(w.name, op, args, self.record(w.name, "invoke", op, args))
        w.locks_before = lock_leftover.lock_files(self.sb.root)
        # no wall-clock bound on the op: a writer may be held for minutes while others run (a
        # pause of 5000 steps took 20 s here, and the driver's timeout killed the paused
        # writer); a hang is judged per step (``hung``: running, no call, no answer)
        w.thread = threading.Thread(target=_call, args=(w, OP_WALL_S), daemon=True)
        w.thread.start()

    def answered(self, w: _NWriter, faulted: bool) -> None:
        assert w.op is not None and w.slot is not None
        op = w.op
        self.record(w.name, op.type, op.op, op.args, op.result, op.outcome)
        st = w.slot.stats
        st.done += 1
        st.ok += op.type == "ok"
        st.busy += op.type == "fail"
        st.info += op.type == "info"
        if not faulted:
            for f in lock_leftover.check(self.sb.root, w.locks_before, [w.driver.pid], op=op.op, answer=op.type):
                self.leftovers.append((w.spec.name, replace(f, evidence=f"{w.name}: {f.evidence}")))
        w.op, w.state = None, "idle"

    # --- the scheduler ----------------------------------------------------------------------

    def loop(self, progress: Callable[[list[WriterStats]], None] | None) -> None:
        max_steps = self.limit * 4 + 20_000
        while len(self.steps) < max_steps:
            for f in self.faults:
                self.tick(f)
            enabled = [w.name for w in self.writers
                       if w.paused_by is None and (w.state == "held" or self.can_start(w))]
            if not enabled:
                paused = [f for f in self.faults if f.state == "active" and f.plan.family == "pause"]
                if paused and any(w.state == "held" or (w.state == "idle" and len(self.steps) < self.limit)
                                  for w in self.writers):
                    self.unpause(paused[0], "nobody else could run")
                    continue
                break
            if progress is not None and len(self.steps) % 100 == 0:
                progress([w.slot.stats for w in self.writers if w.slot is not None])
            pick = self.strategy.choose(enabled, self.steps)
            w = next(x for x in self.writers if x.name == pick)
            stray = next((x for x in self.writers if x.state != "gone" and not x.traced.events.empty()), None)
            if stray is not None:
                self.void = (f"{stray.name} ({stray.spec.kind}) ran out of turn before step {len(self.steps)}: "
                             f"{stray.traced.state()}")
                return
            errno = next((f for f in self.faults if f.state == "active" and f.plan.family == "errno"
                          and f.target is w and w.state == "idle"), None)
            if errno is not None:
                self.errno_op(errno, w, enabled)
                continue
            if w.state == "idle":
                self.begin(w)
            else:
                w.traced.resume()
            w.state = "running"
            try:
                ev = w.traced.events.get(timeout=self.timeout)
            except Exception:  # queue.Empty: the writer neither made a store call nor answered
                self.hung(w)
                continue
            if ev.kind == "held" and ev.call is not None:
                self.steps.append(Step(w.name, ev.call.short(self.roots), tuple(enabled)))
                w.state = "held"
                self.held += 1
                self.stamp_new_lock(w, ev.call.name, ev.call.paths, self.steps[-1].call)
            elif ev.kind == "done":
                self.steps.append(Step(w.name, DONE, tuple(enabled)))
                if ev.note.isdigit():
                    w.clock_ms = int(ev.note)
                self.answered(w, faulted=any(f.state == "active" and f.target is w for f in self.faults))
            else:
                self.errors.append(f"{w.name} ({w.spec.name}): {ev.note or 'exited'} during step {len(self.steps)}")
                self.replace(w, "exited")
        else:
            self.void = f"more than {max_steps} steps: the schedule did not let the writers finish"
        self.finish()

    def finish(self) -> None:
        """The writers are done: every fault still open ends (a plant is judged or removed)."""
        for f in self.faults:
            if f.state == "pending":
                self.close(f, skipped="the writers' run ended first")
            elif f.state == "active":
                self.lift(f)
                if f.state != "done":
                    self.close(f, skipped="" if f.applied else "its target ran no op in its window")

    def hung(self, w: _NWriter) -> None:
        """No store call and no answer within the op timeout while nothing else ran: a hang
        (a FIFO planted as the lock, a peer waiting on real time); the writer is replaced."""
        op = w.op.op if w.op is not None else "?"
        self.errors.append(f"{w.name} ({w.spec.name}): {w.spec.kind} no answer to {op!r} within "
                           f"{self.timeout:g} s under the scheduler (step {len(self.steps)}): {w.traced.state()}")
        self.replace(w, f"no answer within {self.timeout:g} s")

    def replace(self, w: _NWriter, why: str, fault: _Fault | None = None) -> None:
        """End a writer (killed, exited, hung); its op is ``info``; a fresh one takes its slot."""
        assert w.slot is not None
        pid = w.driver.pid
        w.driver.kill()
        if w.thread is not None:
            w.thread.join(10.0)
        w.traced.detach()
        self.killed.add(pid)
        if fault is not None:
            self.restamp(pid, w)
        if w.op is not None:
            w.op.type = "info"
            w.op.result = f"killed by nemesis (fault {fault.plan.id})" if fault is not None else why
            self.answered(w, faulted=True)
        self.steps.append(Step(w.name, KILLED, (NEMESIS,)))
        try:
            fresh = self.boot(w.slot, self.vnow())
        except (DriverError, OSError, RuntimeError) as e:
            self.errors.append(f"{w.name} ({w.spec.name}): could not restart: {e}")
            w.state = "gone"
            return
        self.writers[self.writers.index(w)] = fresh
        for f in self.faults:
            if f.target is w:
                f.target = fresh

    def stamp_new_lock(self, w: _NWriter, name: str, paths: tuple[str, ...], call: str) -> None:
        """A lock a writer is making has the kernel's real-time mtime until the writer stamps
        it with its virtual clock (at close, after its token write): held in between, others
        would judge its age against wall time, which no replay repeats (seen: replays diverging
        at a reference writer's age check, under load).  So the harness stamps it at once with
        the writer's last reported clock, and again after its token write, while it is still
        the file that writer created."""
        lock = paths[-1] if paths else ""
        if Path(lock).name != nm.LOCK or "= -" in call:
            return
        try:
            st = os.lstat(lock)
        except OSError:
            return
        if call.startswith(f"create({nm.LOCK})") or name in ("link", "linkat"):
            w.own_lock = (lock, st.st_ino)
        elif not (name in ("write", "fsync", "fdatasync") and w.own_lock == (lock, st.st_ino)):
            return
        ns = w.clock_ms * 1_000_000 + HALF_MS
        os.utime(lock, ns=(ns, ns), follow_symlinks=False)

    def restamp(self, pid: int, w: _NWriter) -> None:
        """A killed writer's lock keeps a virtual-time mtime: its token names it, or it is
        empty and the writer's last store call was on it (killed between create and write)."""
        for d in self.roots:
            lock = Path(d) / nm.LOCK
            holder = nm.lock_holder_pid(Path(d))
            last = next((s.call for s in reversed(self.steps) if s.writer == w.name), "")
            try:
                empty = lock.is_file() and lock.stat().st_size == 0
            except OSError:
                continue
            if holder == pid or (empty and nm.LOCK in last and KILLED not in last):
                ns = self.vnow() * 1_000_000 + HALF_MS
                os.utime(lock, ns=(ns, ns))

    # --- faults -----------------------------------------------------------------------------

    def tick(self, f: _Fault) -> None:
        n = len(self.steps)
        if f.state == "done" or n < f.at:
            return
        if f.state == "pending":
            if n >= self.limit:
                return self.close(f, skipped="the writers' run ended first")
            self.fire(f)
        elif n >= f.end or n >= self.limit:
            self.lift(f)
        elif f.plan.family == "clock" and not f.applied:
            self.skew(f, int(f.plan.params.get("skew_ms", 0)))
        elif f.plan.family in ("stale-lock", "foreign-lock") and f.planted is None:
            self.plant(f)

    def target(self, f: _Fault) -> _NWriter | None:
        """As the timed nemesis aims: the holder (when the plan says so), else the first slot
        from the planned one that no other fault holds."""
        busy = {g.target.name for g in self.faults if g.state == "active" and g.target is not None}
        n = len(self.writers)
        free = [self.writers[(f.plan.slot + k) % n] for k in range(n)]
        free = [w for w in free if w.name not in busy and w.state != "gone"]
        if f.plan.holder:
            for d in self.roots:
                pid = nm.lock_holder_pid(Path(d))
                holder = next((w for w in self.writers if pid and w.driver.pid == pid), None)
                if holder is not None:
                    return holder if holder.name not in busy else None
        return free[0] if free else None

    def fire(self, f: _Fault) -> None:
        fam = f.plan.family
        f.outcome = {"id": f.plan.id, "family": fam}
        if fam == "slow":
            return self.close(f, skipped="a delay changes no order under the scheduler (the strategy orders every call)")
        if fam in ("stale-lock", "foreign-lock"):
            f.state = "active"
            self.record(f"nemesis-{f.plan.id}", "invoke", "nemesis", {**f.plan.to_json(), "dir": self.roots[0]})
            return self.plant(f)
        w = self.target(f)
        if w is None:
            return self.close(f, skipped="target writer busy with another fault or restarting")
        f.target, f.state = w, "active"
        self.record(f"nemesis-{f.plan.id}", "invoke", "nemesis", {**f.plan.to_json(), "writer": w.name})
        self.steps.append(Step(NEMESIS, f"{fam} {w.name} (#{f.plan.id})", (NEMESIS,)))
        if fam == "kill":
            f.outcome.update(effective=True, killed=w.driver.pid)
            self.replace(w, "killed", fault=f)
            self.close(f)
        elif fam == "pause":
            w.paused_by = f.plan.id
            f.outcome.update(effective=True, paused=w.name)
        elif fam == "clock":
            self.skew(f, int(f.plan.params.get("skew_ms", 0)))

    def plant(self, f: _Fault) -> None:
        """Plant the lock if none exists now (the next steps try again until the window ends)."""
        d = Path(self.roots[f.plan.slot % len(self.roots)])
        kind = str(f.plan.params.get("kind"))
        p = nm.plant_lock(d, kind, dead_pid=DEAD_PID if kind == "dead-pid" else 0, attempts=1)
        if p is None:
            return
        ns = (self.vnow() - round(float(f.plan.params.get("age_s", 0.0)) * 1000)) * 1_000_000 + HALF_MS
        os.utime(p.path, ns=(ns, ns), follow_symlinks=False)
        st = os.lstat(p.path)
        p.ctime_ns = st.st_ctime_ns  # the stamp is part of the plant: remove only this file
        f.planted = p
        f.outcome.update(kind=kind, effective=True)
        self.steps.append(Step(NEMESIS, f"plant({nm.LOCK} {kind}) (#{f.plan.id})", (NEMESIS,)))

    def lift(self, f: _Fault) -> None:
        fam = f.plan.family
        if fam in ("stale-lock", "foreign-lock"):
            if f.planted is None:
                f.outcome.update(effective=False, skipped="a lock was held throughout")
            elif fam == "stale-lock":
                f.outcome["removed"] = "still there" if nm.still_planted(f.planted) else "reclaimed"
            else:
                f.outcome["removed"] = nm.remove_planted(f.planted)
                self.steps.append(Step(NEMESIS, f"remove({nm.LOCK}) {f.outcome['removed']} (#{f.plan.id})", (NEMESIS,)))
            return self.close(f)
        if fam == "pause":
            return self.unpause(f, "")
        if fam == "clock":
            if f.target is not None and f.applied and f.target.state != "idle":
                return  # put back between its ops, as the timed engine does
            if f.applied and f.target is not None:
                self.skew(f, -int(f.plan.params.get("skew_ms", 0)))
            return self.close(f)
        if fam == "errno" and not f.applied:
            return  # applies at the target's next op, within the run
        self.close(f)

    def unpause(self, f: _Fault, why: str) -> None:
        if f.target is not None:
            f.target.paused_by = None
            self.steps.append(Step(NEMESIS, f"resume {f.target.name} (#{f.plan.id})", (NEMESIS,)))
        f.outcome["steps"] = len(self.steps) - f.at
        if why:
            f.outcome["ended"] = why
        self.close(f)

    def skew(self, f: _Fault, ms: int) -> None:
        """Move the target's virtual clock between its ops (later, when it is mid-op now)."""
        w = f.target
        if w is None or w.state != "idle":
            return
        self.steps.append(Step(w.name, _advance(w, ms), (NEMESIS,)))
        if not f.applied:
            f.applied = True
            f.outcome.update(effective=True, skew_ms=ms)

    def errno_op(self, f: _Fault, w: _NWriter, enabled: list[str]) -> None:
        """The target's next op, alone, under a one-shot ``strace -P`` failing the planned call."""
        assert w.slot is not None
        p = f.plan.params
        name = str(p["path"])
        if name == "topic":
            topic = self.topics[int(float(p.get("topic_pick", 0)) * len(self.topics)) % len(self.topics)]
            name = f"{to_slug(topic)}.md"
        w.traced.detach()
        log = self.sb.root / f"nemesis-{f.plan.id}.strace"
        attached = nm.attach(w.driver.pid, str(p["syscall"]), w.slot.directory / name,
                             f"error={p['errno']}:when=1", log)
        # the strategy picked this writer: the step is its (a replay picks it here again)
        self.steps.append(Step(w.name, f"errno {p['syscall']}({name}) {p['errno']} (#{f.plan.id})", tuple(enabled)))
        op, args = next_op(w.rng, w.name, w.drawn, self.topics)
        w.drawn += 1
        w.op = RaceOp(w.name, op, args, self.record(w.name, "invoke", op, args))
        try:
            answer = w.driver.call(op, args)
            w.op.type, w.op.outcome, w.op.result = judge(w.driver, op, answer)
            if answer.clock_ms is not None:
                w.clock_ms = answer.clock_ms
        except DriverError as e:
            w.op.type, w.op.result = "info", str(e)
        hits = 0
        if attached is not None:
            attached.detach()
            hits = attached.hits()
        self.steps.append(Step(w.name, DONE, tuple(enabled)))
        self.answered(w, faulted=True)
        f.applied = True
        f.outcome.update(syscall=p["syscall"], path=name, errno=p["errno"], effective=hits > 0, hits=hits)
        if attached is None:
            f.outcome["skipped"] = "strace could not attach"
        w.traced = Traced(w.driver.pid, self.roots)
        w.traced.attach()
        w.traced.arm()
        self.close(f)

    def close(self, f: _Fault, skipped: str = "") -> None:
        if skipped:
            f.outcome.update(effective=False, skipped=skipped)
        if f.state == "pending":
            self.record(f"nemesis-{f.plan.id}", "invoke", "nemesis", f.plan.to_json())
        f.state = "done"
        self.record(f"nemesis-{f.plan.id}", "ok", "nemesis", f.plan.to_json(), f.outcome)


def run_scheduled(
    peers: Sequence[PeerSpec],
    schedule: nm.Schedule,
    strategy: Strategy,
    *,
    seed: int,
    timeout: float = 30.0,
    check_budget: float = 10.0,
    hardened: bool = False,
    topics: tuple[str, ...] = TOPICS,
    progress: Callable[[list[WriterStats]], None] | None = None,
) -> ScheduledRun:
    """Run ``schedule`` with its writers held at every store call, ``strategy`` picking; judge
    the store as the timed nemesis does."""
    from ..faults.strace import strace_unavailable

    reason = strace_unavailable()
    if reason is not None:
        raise ScheduledUnavailable(f"the scheduler holds writers with strace: {reason}")
    sb = Sandbox.create()
    t0 = time.monotonic()
    run = _Run(peers, schedule, strategy, sb, timeout=timeout, hardened=hardened, topics=topics)
    eng = run.eng
    try:
        if schedule.shared:
            prepare_shared(sb)
        for d in run.roots:
            Path(d).mkdir(parents=True, exist_ok=True)
        now_ms = int(time.time() * 1000)
        for slot in eng.slots:
            run.writers.append(run.boot(slot, now_ms))
        interrupted = False
        try:
            run.loop(progress)
        except Diverged as e:
            run.void = f"the replay left its schedule: {e}"
        except KeyboardInterrupt:  # Ctrl-C killed every driver: judge the steps so far from the disk
            interrupted = True
        for w in run.writers:
            w.traced.detach()
        for s in eng.slots:
            if s.driver is not None:
                s.driver.close()
                s.driver = None
        history = History(sorted(run.events, key=lambda e: e.time),
                          meta={"schedule": schedule.to_json(), "hardened": hardened, "topics": list(topics),
                                "impls": {s.name: s.spec.kind for s in eng.slots}})
        impl_of = {s.name: s.spec.name for s in eng.slots}
        spec_dirs: dict[str, set[str]] = defaultdict(set)
        for s in eng.slots:
            spec_dirs[s.spec.name].add(str(s.directory))
        specs = list(dict.fromkeys(s.spec for s in eng.slots))
        left = {d: describe_lock(Path(d), eng.slots) for d in run.roots}
        views = {d: [disk_view(Path(d))] if interrupted else eng.read_views(Path(d), [s for s in specs if d in spec_dirs[s.name]])
                 for d in sorted(run.roots)}
        outcomes = sorted((f.outcome for f in run.faults if f.outcome), key=lambda o: int(o["id"]))
        families = {o["family"] for o in outcomes if o.get("effective")}
        ops = history.ops()
        verdicts: dict[str, LinearizabilityVerdict] = {}
        for d in sorted(run.roots):
            here = {p for p, s in impl_of.items() if d in spec_dirs[s]}
            verdicts[d] = check([o for o in ops if o.process in here], budget_s=0.3 if interrupted else check_budget)
        # one store directory: its lock's holds from the steps (relative names say no more)
        held = [checks.LockSpan(s.writer, str(Path(run.roots[0]) / nm.LOCK), s.start * STEP_NS,
                                None if s.end is None else s.end * STEP_NS)
                for s in spans(run.steps, [], nm.LOCK)] if len(run.roots) == 1 else []
        result = NemesisResult(schedule, history, [s.stats for s in eng.slots], time.monotonic() - t0, impl_of,
                               views, [] if run.void or interrupted else settled_violations(sb.root, run.killed, families),
                               verdicts if not run.void else {}, {}, 0.0, run.errors + eng.errors, run.killed,
                               outcomes, dict(spec_dirs), left, held, True, run.leftovers, step_ns=STEP_NS,
                               interrupted=interrupted)
        if run.void:
            result.views = {}
        out = ScheduledRun(result, run.steps, strategy.name, seed, run.held, run.void)
        history.meta["scheduled"] = out.meta()
        return out
    finally:
        for w in run.writers:
            w.traced.detach()
            try:
                w.driver.kill()
            finally:
                w.driver.close()
        sb.remove()
