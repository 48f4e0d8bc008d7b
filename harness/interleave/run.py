"""The nemesis engine: timed racing writers, a schedule of faults among them, then the checks.

Writers (one driver process each, implementations round-robin over the slots) draw seeded op
streams until the schedule's time limit while ``nemesis.Schedule``'s faults fire at their
offsets.  Every op and every fault goes into one ``History`` (faults as ``nemesis-<id>``
processes, the schedule in ``meta``).  After the time limit the faults are lifted, and the
store *settles*: a fresh writer of each implementation writes until it succeeds (how long
that takes is the ``unavailable`` hazard).  Then the store is read, from disk and through each
implementation's own readers, and judged by ``oracles.interop_checks`` (lost, duplicated,
split, doubly-held writes), the S-INV invariants (minus the crash states S-INV-8 allows for
killed writers) and the linearizability checker, with killed ops as Jepsen's ``info``.
"""

from __future__ import annotations

import random
import shutil
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..checker.history import History
from ..checker.linearize import LinearizabilityVerdict
from ..checker.store_model import check
from ..drivers.peers import Driver, DriverError, PeerSpec, start_driver
from ..drivers.procs import dead_pid
from ..drivers.sandbox import Sandbox
from ..faults.strace import strace_unavailable
from ..oracles import interop_checks as checks
from ..oracles import lock_leftover
from ..oracles.findings import HAZARD, VIOLATION, Finding
from ..oracles.grammar import to_slug
from ..oracles.invariants import Violation
from ..writers.engine import TOPICS, WriterStats, disk_view, judge, next_op, prepare_shared
from . import nemesis as nm
from .settle import describe_lock, lock_spans, settled_violations
from .slot import Slot, store_dir

HARDENED_ENV = "MEMCONFORM_REFERENCE_HARDENED"
ENV_EXEC = shutil.which("env") or "/usr/bin/env"
PROBE_TOPIC = "Nemesis Probe"


class NemesisUnavailable(Exception):
    """The schedule needs something this machine lacks (strace for slow/errno)."""


@dataclass
class NemesisResult:
    schedule: nm.Schedule
    history: History
    stats: list[WriterStats]
    seconds: float
    impl_of: dict[str, str]  # writer or probe process -> peer spec name
    views: dict[str, list[checks.StoreView]]  # store dir -> disk view first, then readers
    violations: list[Violation]
    verdicts: dict[str, LinearizabilityVerdict]
    unavailable: dict[str, tuple[float | None, int]]  # spec name -> (seconds to first ok, busy)
    settle_limit: float
    errors: list[str] = field(default_factory=list)
    killed_pids: set[int] = field(default_factory=set)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    spec_dirs: dict[str, set[str]] = field(default_factory=dict)  # spec name -> store dirs
    locks_left: dict[str, str] = field(default_factory=dict)  # store dir -> its .lock when the faults ended
    spans: list[checks.LockSpan] = field(default_factory=list)  # ok ops' lock holds, from the traces
    traced_locks: bool = False
    leftovers: list[tuple[str, Finding]] = field(default_factory=list)  # (spec name, lock left by a settle probe)
    step_ns: int = 0  # a scheduled run's clock: nanoseconds a store call (0: a timed run's wall clock)
    interrupted: bool = False  # Ctrl-C: the history up to the stop, judged from the disk

    @property
    def total_ops(self) -> int:
        return sum(s.done for s in self.stats)

    def fault_counts(self) -> dict[str, dict[str, int]]:
        """Per family: planned, effective (hit a writer or the store), skipped."""
        out: dict[str, dict[str, int]] = {f: {"planned": 0, "effective": 0, "skipped": 0} for f in self.schedule.families}
        for o in self.outcomes:
            c = out.setdefault(o["family"], {"planned": 0, "effective": 0, "skipped": 0})
            c["planned"] += 1
            c["effective" if o.get("effective") else "skipped"] += 1
        return out

    def findings(self, labels: Mapping[str, str], reproduce: str = "") -> list[Finding]:
        """Everything the run saw, as findings (``labels``: spec name -> impl as it named itself)."""
        impl_of = {p: labels.get(s, s) for p, s in self.impl_of.items()}
        everyone = ", ".join(dict.fromkeys(impl_of.values()))
        ops = self.history.ops()
        faults = self.history.faults()
        found: list[Finding] = []
        for directory, views in sorted(self.views.items()):
            here = {p for p, s in self.impl_of.items() if directory in self._dirs_of(s)}
            mine = [o for o in ops if o.process in here]
            readers = [checks.StoreView(labels.get(v.reader, v.reader), v.index, v.files) for v in views]
            found += checks.lost_writes(mine, readers, impl_of=impl_of, faults=faults, reproduce=reproduce)
            found += checks.split_topics(views[0], path=str(Path(directory) / nm.INDEX), reproduce=reproduce)
            spans = [sp for sp in self.spans if sp.lock == str(Path(directory) / nm.LOCK)]
            found += checks.double_holders(mine, spans=spans, impl_of=impl_of, faults=faults, reproduce=reproduce,
                                           apart=self._apart)
        for v in self.violations:
            found.append(Finding("invariant", VIOLATION, clause=v.clause, impl=everyone, path=v.path,
                                 evidence=v.message, reproduce=reproduce))
        for e in self.errors:
            kind = "hang" if "no answer to" in e else "driver-error"
            found.append(Finding(kind, HAZARD, impl=everyone, evidence=e, reproduce=reproduce))
        for spec, f in self.leftovers:  # issue 25 item 3: a settle probe's own lock, left after its answer
            found.append(replace(f, impl=labels.get(spec, spec), reproduce=reproduce))
        left = "; ".join(f"{Path(d).name}/.lock {what}" for d, what in sorted(self.locks_left.items()) if what)
        for spec, (seconds, busy) in sorted(self.unavailable.items()):
            found += checks.unavailable(labels.get(spec, spec), seconds, busy, limit_s=self.settle_limit,
                                        left=left, reproduce=reproduce)
        for key, verdict in sorted(self.verdicts.items()):
            if verdict.status == "not linearizable":
                lines = "; ".join(verdict.failing_lines[:6])
                found.append(Finding("not-linearizable", VIOLATION, impl=everyone, path=key,
                                     evidence=f"no order of the {len(verdict.failing_ops)} ops explains their "
                                              f"results: {lines}", reproduce=reproduce))
        return found

    def _apart(self, ns: int) -> str:
        """A distance on the history's clock, in the unit that clock counts."""
        return f"{ns // self.step_ns} store calls" if self.step_ns else f"{ns / 1e6:.1f} ms"

    def _dirs_of(self, spec: str) -> set[str]:
        return self.spec_dirs.get(spec, set())


def paused_out(paused_s: float) -> bool:
    """Whether an op that ran out of time was stopped by the nemesis meanwhile: then it had
    less than its timeout to answer, and the timeout is the nemesis's doing, not a hang.
    (Campaign row 7941f5c1eb: under back-to-back pauses a writer's op spent 13.6 s of 17.6 s
    stopped; one more pause and its 20 s timeout fell on a writer that had run 6 s.)"""
    return paused_s > 0.0


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Engine:
    def __init__(self, peers: list[PeerSpec], schedule: nm.Schedule, sandbox: Sandbox, *, timeout: float,
                 hardened: bool, topics: tuple[str, ...], trace_locks: bool = False) -> None:
        self.schedule, self.sandbox, self.timeout, self.hardened, self.topics = schedule, sandbox, timeout, hardened, topics
        self.trace_locks = trace_locks
        self.traces: list[Path] = []
        self.history = History()
        self.errors: list[str] = []
        self.outcomes: list[dict[str, Any]] = []
        self.killed: set[int] = set()
        self.leftovers: list[tuple[str, Finding]] = []
        self.stop = threading.Event()
        self.slots = [
            Slot(i, peers[i % len(peers)], store_dir(peers[i % len(peers)], sandbox, schedule.shared),
                 WriterStats(f"w{i}", peers[i % len(peers)].name))
            for i in range(schedule.writers)
        ]

    def env(self, spec: PeerSpec) -> dict[str, str]:
        env = self.sandbox.env()
        if self.hardened and spec.kind == "python":
            env[HARDENED_ENV] = "1"
        return env

    def start(self, spec: PeerSpec, slot: Slot | None = None) -> Driver:
        """A driver; a writer's runs under a lock tracer when the run traces locks."""
        # A writer under the nemesis is paused, delayed and traced on purpose: the driver's /proc
        # hang watch (issue 15) would take that for a hang and kill it.  A wrapper turns the watch
        # off (only the per-op timeout judges); ``env`` execs the driver in place, same pid.
        wrapper: list[str] = [ENV_EXEC] if slot is not None else []
        if slot is not None and self.trace_locks:
            log = self.sandbox.root / f"locks-{slot.name}-{len(self.traces)}.strace"
            self.traces.append(log)
            wrapper = nm.lock_trace_wrapper(slot.directory / nm.LOCK, log)
        return start_driver(spec, self.env(spec), cwd=str(self.sandbox.root), timeout=self.timeout, wrapper=wrapper)

    # --- writers ------------------------------------------------------------------------

    def work(self, slot: Slot, barrier: threading.Barrier, deadline: float) -> None:
        rng = random.Random(f"{self.schedule.seed}-{slot.name}")
        barrier.wait()
        i = 0
        while time.monotonic() < deadline and slot.driver is not None:
            self._apply_clock(slot)
            op, args = next_op(rng, slot.name, i, self.topics)
            i += 1
            self.history.record(slot.name, "invoke", op, args)
            st = slot.stats
            faulted = slot.fault is not None
            before = lock_leftover.lock_files(self.sandbox.root)
            began = time.monotonic()
            stopped = slot.paused_total(began)
            try:
                answer = slot.driver.call(op, args)
            except DriverError as e:
                with slot.lock:
                    by, slot.killed_by = slot.killed_by, None
                now = time.monotonic()
                paused = slot.paused_total(now) - stopped
                note = f"killed by nemesis (fault {by})" if by is not None else str(e)
                if by is None and paused_out(paused):
                    note = f"{e}; not a hang: the nemesis held it stopped {paused:.1f} s of its {now - began:.1f} s"
                self.history.record(slot.name, "info", op, args, note)
                st.info += 1
                st.done += 1
                if by is None and not paused_out(paused):
                    self.errors.append(f"{slot.name} ({slot.spec.name}): {e}")
                self._restart(slot)
                continue
            with slot.lock:
                by, slot.killed_by = slot.killed_by, None
            if by is not None and not answer.ok:
                # the kill hit the process the driver names in hello, its backing process (the
                # example driver's reference), and the driver lived to answer the error: the
                # op was killed all the same, and whatever that process left (its lock) is
                # the kill's, not a leftover of an answered op (issue 30)
                self.history.record(slot.name, "info", op, args, f"killed by nemesis (fault {by}): {answer.error}")
                st.info += 1
                st.done += 1
                self._restart(slot)
                continue
            kind, outcome, result = judge(slot.driver, op, answer)
            self.history.record(slot.name, kind, op, args, result, outcome)
            if not (faulted or slot.fault is not None or by is not None):  # an injected errno may keep a lock legitimately
                self._leftover(slot.spec, before, slot.driver.pid, op, kind, slot.name)
            st.done += 1
            st.ok += kind == "ok"
            st.busy += kind == "fail"
            st.info += kind == "info"
            if by is not None:  # killed just after its answer: the process is gone all the same
                self._restart(slot)

    def _restart(self, slot: Slot) -> None:
        """A fresh writer of the same implementation in the slot (the killed one is gone)."""
        old = slot.driver
        if old is not None:
            _end(old)
        try:
            new = self.start(slot.spec, slot)
        except (DriverError, OSError) as e:
            self.errors.append(f"{slot.name} ({slot.spec.name}): could not restart: {e}")
            new = None
        with slot.lock:
            slot.driver = new
            if new is not None:
                slot.pids.append(new.pid)

    def _apply_clock(self, slot: Slot) -> None:
        with slot.lock:
            skew, slot.clock_ms = slot.clock_ms, None
        if skew is not None and slot.driver is not None and "offset" in slot.driver.clock_modes:  # as declared
            try:
                slot.driver.call("set_clock", {"now": _iso(time.time_ns() // 1_000_000 + skew), "mode": "offset"})
            except DriverError as e:
                self.errors.append(f"{slot.name} ({slot.spec.name}): set_clock failed: {e}")

    # --- faults -------------------------------------------------------------------------

    def _target(self, plan: nm.FaultPlan) -> Slot | None:
        n = len(self.slots)
        free = [self.slots[(plan.slot + k) % n] for k in range(n)]
        free = [s for s in free if s.fault is None and s.driver is not None and s.killed_by is None]
        slot = free[0] if free else self.slots[plan.slot % n]
        if plan.holder:
            for d in dict.fromkeys(s.directory for s in self.slots):
                pid = nm.lock_holder_pid(d)
                holder = next((s for s in self.slots if pid and s.pid == pid), None)
                if holder is not None:
                    slot = holder
                    break
        with slot.lock:
            if slot.fault is not None or slot.driver is None or slot.killed_by is not None:
                return None
            slot.fault = plan.id
        return slot

    def fire(self, plan: nm.FaultPlan, t0: float) -> None:
        if self.stop.wait(max(0.0, t0 + plan.at - time.monotonic())):
            return
        outcome: dict[str, Any] = {"id": plan.id, "family": plan.family}
        store_fault = plan.family in ("stale-lock", "foreign-lock")
        slot = self.slots[plan.slot % len(self.slots)] if store_fault else self._target(plan)
        process = f"nemesis-{plan.id}"
        if slot is None:
            outcome["skipped"] = "target writer busy with another fault or restarting"
            self.history.record(process, "invoke", "nemesis", {**plan.to_json()})
            self.history.record(process, "ok", "nemesis", {**plan.to_json()}, outcome)
            self.outcomes.append(outcome)
            return
        args = {**plan.to_json(), "writer": slot.name, "pid": slot.pid, "dir": str(slot.directory)}
        outcome["writer"] = slot.name  # the planned slot's writer, or the next free one (``_target``)
        self.history.record(process, "invoke", "nemesis", args)
        try:
            getattr(self, "_" + plan.family.replace("-", "_"))(plan, slot, outcome)
        except OSError as e:
            outcome["error"] = str(e)
        finally:
            if not store_fault:
                with slot.lock:
                    slot.fault = None
        self.history.record(process, "ok", "nemesis", args, outcome)
        self.outcomes.append(outcome)

    def _kill(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        with slot.lock:
            pid = slot.pid
            slot.killed_by = plan.id
        out["effective"] = nm.signal_pid(pid, signal.SIGKILL)
        out["killed"] = pid
        self.killed.add(pid)

    def _pause(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        pid = slot.pid
        began = time.monotonic()
        out["effective"] = nm.signal_pid(pid, signal.SIGSTOP)
        with slot.lock:
            slot.paused_since = began
        self.stop.wait(float(plan.params.get("duration", 1.0)))
        nm.signal_pid(pid, signal.SIGCONT)
        ended = time.monotonic()
        with slot.lock:
            slot.paused_s += ended - began
            slot.paused_since = None
        out["paused"], out["seconds"] = pid, round(ended - began, 3)

    def _plant(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        kind = str(plan.params.get("kind"))
        planted = nm.plant_lock(slot.directory, kind, age_s=float(plan.params.get("age_s", 0.0)),
                                dead_pid=dead_pid() if kind == "dead-pid" else 0)
        out["kind"], out["effective"] = kind, planted is not None
        if planted is None:
            out["skipped"] = "a lock was held throughout"
            return
        self.stop.wait(float(plan.params.get("duration", 1.0)))
        if plan.family == "stale-lock":
            # a crashed writer's lock has no owner to remove it: the writers must reclaim it
            out["removed"] = "still there" if nm.still_planted(planted) else "reclaimed"
        else:
            out["removed"] = nm.remove_planted(planted)

    _stale_lock = _plant
    _foreign_lock = _plant

    def _strace(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any], inject: str) -> None:
        p = plan.params
        name = str(p["path"])
        if name == "topic":
            topic = self.topics[int(float(p.get("topic_pick", 0)) * len(self.topics)) % len(self.topics)]
            name = f"{to_slug(topic)}.md"
        log = self.sandbox.root / f"nemesis-{plan.id}.strace"
        attached = nm.attach(slot.pid, str(p["syscall"]), slot.directory / name, inject, log)
        out["syscall"], out["path"] = p["syscall"], name
        if attached is None:
            out["effective"], out["skipped"] = False, "strace could not attach"
            return
        self.stop.wait(float(p.get("duration", 1.0)))
        out["effective"] = attached.detach()
        out["hits"] = attached.hits()

    def _slow(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        out["delay_ms"] = plan.params["delay_ms"]
        self._strace(plan, slot, out, f"delay_enter={int(plan.params['delay_ms']) * 1000}")

    def _errno(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        out["errno"] = plan.params["errno"]
        self._strace(plan, slot, out, f"error={plan.params['errno']}:when=1")

    def _clock(self, plan: nm.FaultPlan, slot: Slot, out: dict[str, Any]) -> None:
        skew = int(plan.params.get("skew_ms", 0))
        with slot.lock:
            slot.clock_ms = skew
        self.stop.wait(float(plan.params.get("duration", 1.0)))
        with slot.lock:
            slot.clock_ms = 0
        out["effective"], out["skew_ms"] = True, skew

    # --- after the faults -----------------------------------------------------------------

    def probe(self, spec: PeerSpec, k: int, limit: float) -> tuple[float | None, int]:
        """A fresh writer of ``spec`` writes until it succeeds: seconds to the first ok."""
        began = time.monotonic()
        process, busy, n = f"probe{k}", 0, 0
        try:
            driver = self.start(spec)
        except (DriverError, OSError) as e:
            self.errors.append(f"{process} ({spec.name}): {e}")
            return None, 0
        try:
            while time.monotonic() - began < limit:
                args = {"topic": PROBE_TOPIC, "content": f"tok-{process}-{n}", "summary": f"{process} {n}"}
                n += 1
                self.history.record(process, "invoke", "write_memory", args)
                before = lock_leftover.lock_files(self.sandbox.root)
                try:
                    answer = driver.call("write_memory", args)
                except DriverError as e:
                    self.history.record(process, "info", "write_memory", args, str(e))
                    self.errors.append(f"{process} ({spec.name}): {e}")
                    return None, busy
                kind, outcome, result = judge(driver, "write_memory", answer)
                self.history.record(process, kind, "write_memory", args, result, outcome)
                self._leftover(spec, before, driver.pid, "write_memory", kind, process)
                if kind == "ok":
                    return time.monotonic() - began, busy
                busy += 1
                time.sleep(0.2)
        finally:
            driver.close()
        return None, busy

    def _leftover(self, spec: PeerSpec, before: dict[str, bytes], pid: int, op: str, kind: str, who: str) -> None:
        """Issue 25 item 3: an op's own lock left after its answer (S-LOCK-5, S-LOCK-9)."""
        for f in lock_leftover.check(self.sandbox.root, before, [pid], op=op, answer=kind):
            self.leftovers.append((spec.name, replace(f, evidence=f"{who}: {f.evidence}")))

    def read_views(self, directory: Path, specs: list[PeerSpec]) -> list[checks.StoreView]:
        """The disk's view, then each implementation's through its own readers."""
        views = [disk_view(directory)]
        for spec in specs:
            try:
                with self.start(spec) as d:
                    if not {"read_index", "topic_content"} <= d.ops:
                        continue
                    index = d.call("read_index", {"maxLines": 1_000_000})
                    text = index.result if index.ok and isinstance(index.result, str) else None
                    view = checks.StoreView(spec.name, text)
                    files: dict[str, str] = {}
                    for _, filename in view.entries():
                        body = d.call("topic_content", {"filename": filename})
                        if body.ok and isinstance(body.result, str) and body.result != "_(file not found)_":
                            files[filename] = body.result
                    views.append(checks.StoreView(spec.name, text, files))
            except (DriverError, OSError) as e:
                self.errors.append(f"final read through {spec.name}: {e}")
        return views


def _interrupted(eng: _Engine, seconds: float, settle_limit: float, wall_minus_mono: int) -> NemesisResult:
    """Ctrl-C: the history up to the stop, judged from the disk alone (no driver may start
    now, so no settling and no reader), without the invariants (every writer was killed
    mid-op: the store is in a crash state S-INV-8 allows) and with a short checker budget (the
    stop must take under a second); ops cut by the stop are ``info``."""
    eng.stop.set()
    errors = list(eng.errors)  # later ones are the stop's own (drivers killed, none restarted)
    with eng.history._lock:
        history = History(list(eng.history.events), meta=dict(eng.history.meta))
    impl_of = {s.name: s.spec.name for s in eng.slots}
    spec_dirs: dict[str, set[str]] = defaultdict(set)
    for s in eng.slots:
        spec_dirs[s.spec.name].add(str(s.directory))
    directories = sorted({str(s.directory) for s in eng.slots})
    ops = history.ops()
    verdicts = {d: check([o for o in ops if o.process in {p for p, sp in impl_of.items() if d in spec_dirs[sp]}],
                         budget_s=0.3) for d in directories}
    return NemesisResult(eng.schedule, history, [s.stats for s in eng.slots], seconds, impl_of,
                         {d: [disk_view(Path(d))] for d in directories}, [], verdicts, {}, settle_limit, errors,
                         eng.killed, sorted(eng.outcomes, key=lambda o: int(o["id"])), dict(spec_dirs), {},
                         lock_spans(eng.slots, eng.traces, ops, wall_minus_mono), eng.trace_locks, eng.leftovers,
                         interrupted=True)


def _close(driver: Driver) -> None:
    """Ask a driver to exit; a killed one's pipes may already be broken."""
    try:
        driver.close()
    except OSError:
        pass


def _end(driver: Driver) -> None:
    driver.kill()
    _close(driver)


def run_nemesis(
    peers: list[PeerSpec],
    schedule: nm.Schedule,
    *,
    timeout: float = 30.0,
    check_budget: float = 10.0,
    sandbox: Sandbox | None = None,
    hardened: bool = False,
    settle_limit: float = 75.0,
    topics: tuple[str, ...] = TOPICS,
    progress: Callable[[list[WriterStats]], None] | None = None,
    trace_locks: bool | None = None,
) -> NemesisResult:
    """Run ``schedule`` against writers of ``peers`` (round-robin over the slots), settle, check.

    ``trace_locks``: run every writer under an ``strace`` of its lock's creates and unlinks,
    for the double-holder timeline; by default on where strace runs and the schedule has no
    slow/errno fault (those attach their own strace, and a process has one tracer).
    """
    reason = nm.strace_reason(schedule.families)
    if reason is not None:
        raise NemesisUnavailable(f"the slow and errno families need strace: {reason}")
    if trace_locks is None:
        trace_locks = not (nm.STRACE_FAMILIES & set(schedule.families)) and strace_unavailable() is None
    own = sandbox is None
    sb = sandbox or Sandbox.create()
    eng = _Engine(peers, schedule, sb, timeout=timeout, hardened=hardened, topics=topics, trace_locks=trace_locks)
    eng.history.meta = {"schedule": schedule.to_json(), "hardened": hardened, "topics": list(topics),
                        "impls": {s.name: s.spec.kind for s in eng.slots}}  # no machine path (issue 22)
    wall_minus_mono = time.time_ns() - time.monotonic_ns()
    t0 = time.monotonic()
    try:
        if schedule.shared:
            prepare_shared(sb)
        for slot in eng.slots:
            slot.driver = eng.start(slot.spec, slot)
            slot.pids.append(slot.driver.pid)
        barrier = threading.Barrier(len(eng.slots) + 1)
        t0 = time.monotonic()
        deadline = t0 + schedule.time_limit
        workers = [threading.Thread(target=eng.work, args=(s, barrier, deadline), daemon=True) for s in eng.slots]
        for w in workers:
            w.start()
        barrier.wait()
        t0 = time.monotonic()
        firing = [threading.Thread(target=eng.fire, args=(p, t0), daemon=True) for p in schedule.faults]
        for f in firing:
            f.start()
        while time.monotonic() < deadline:
            if progress is not None:
                progress([s.stats for s in eng.slots])
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        eng.stop.set()
        for f in firing:
            f.join()
        for w in workers:
            w.join(timeout + 5.0)
        seconds = time.monotonic() - t0
        for slot in eng.slots:
            if slot.driver is not None:
                _close(slot.driver)
        specs = list(dict.fromkeys(s.spec for s in eng.slots))
        unavailable: dict[str, tuple[float | None, int]] = {}
        impl_of = {s.name: s.spec.name for s in eng.slots}
        spec_dirs: dict[str, set[str]] = defaultdict(set)
        for s in eng.slots:
            spec_dirs[s.spec.name].add(str(s.directory))
        left = {d: describe_lock(Path(d), eng.slots) for d in sorted({str(s.directory) for s in eng.slots})}
        probing = []
        for k, spec in enumerate(specs):  # at once: each measured from the nemesis' end
            impl_of[f"probe{k}"] = spec.name

            def probe(spec: PeerSpec = spec, k: int = k) -> None:
                unavailable[spec.name] = eng.probe(spec, k, settle_limit)

            probing.append(threading.Thread(target=probe, daemon=True))
        for t in probing:
            t.start()
        for t in probing:
            t.join()
        directories = sorted({str(s.directory) for s in eng.slots})
        views = {d: eng.read_views(Path(d), [s for s in specs if d in spec_dirs[s.name]]) for d in directories}
        families = {o["family"] for o in eng.outcomes if o.get("effective")}
        violations = settled_violations(sb.root, eng.killed, families)
        verdicts: dict[str, LinearizabilityVerdict] = {}
        ops = eng.history.ops()
        for d in directories:
            writers_here = {p for p, s in impl_of.items() if d in spec_dirs[s]}
            verdicts[d] = check([o for o in ops if o.process in writers_here], budget_s=check_budget)
        spans = lock_spans(eng.slots, eng.traces, ops, wall_minus_mono)
        result = NemesisResult(schedule, eng.history, [s.stats for s in eng.slots], seconds, impl_of, views,
                               violations, verdicts, unavailable, settle_limit, eng.errors, eng.killed,
                               sorted(eng.outcomes, key=lambda o: int(o["id"])), dict(spec_dirs), left,
                               spans, eng.trace_locks, eng.leftovers)
        return result
    except KeyboardInterrupt:  # Ctrl-C (harness.drivers.interrupt has killed every driver): what ran, judged
        return _interrupted(eng, time.monotonic() - t0, settle_limit, wall_minus_mono)
    finally:
        eng.stop.set()
        for slot in eng.slots:
            if slot.driver is not None:
                _end(slot.driver)
        if own:
            sb.remove()
