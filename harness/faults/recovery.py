"""The implementation's own recovery on each distinct crash state (issue 17 item 3).

A kill campaign starts a process per crash point; here one warm driver per worker runs every
state: the state is laid into the worker's sandbox (a dead owner's lock aged past its reclaim
age, C-4), the driver renews its process state (``reset``, or ``fresh_instance`` for the
OpenCode driver — a new module instance, as a fresh process loads it) and pins the clock,
then runs what a user's next session does: the op case's own next operation, a fresh write,
a read of the index and topics, and the next session start.  The settled store is judged
again (``check_settled_state`` against the crash state it started from: S-INV-2, S-INV-4,
S-INV-7, no entry lost), and a fresh write refused (busy, or an error) is ``unavailable``.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..drivers.peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox, snapshot
from ..oracles.crash_judge import (
    STORE_DIRS,
    CrashFinding,
    Intent,
    State,
    check_settled_state,
    is_lock,
    lock_age_ms,
)
from ..oracles.grammar import parse
from ..oracles.spec import INDEX_NAME
from . import NOW_MS
from .cases import OpCase
from .outcomes import refused_write, restore
from .strace import stable_python_env
from .trace import CLOCK, FAST_DIR, renew_op
from .trace_states import CrashState

PROBE = {"topic": "Recovery probe", "content": "written after the crash", "summary": "probe"}
PROBE_FILE = "recovery-probe.md"


def recovery_ops(case: OpCase, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """What runs on a crashed store: the case's next op, a fresh write (the case's own when it
    is a write: the user retrying), a read of the index and topics, the next session start
    (OpenCode: its system transform reads both; pi and the reference: ``memory_dir``, which
    completes a carry-over)."""
    op, args = case.recovery()
    first = [(op, dict(args))] if op == "write_memory" else [(op, dict(args)), ("write_memory", dict(PROBE))]
    if op == "memory_dir" and kind != "opencode":
        first = [("write_memory", dict(PROBE))]  # the session start below is this op
    reads: list[tuple[str, dict[str, Any]]] = (
        [("system_transform", {})] if kind == "opencode" else [("read_index", {}), ("memory_dir", {})]
    )
    return [*first, *reads]


def is_fresh_write(op: str, args: dict[str, Any]) -> bool:
    return op == "write_memory"


@dataclass
class Recovered:
    """The outcome of recovery on one crash state."""

    case: str
    state: CrashState
    findings: list[CrashFinding]
    answers: list[str] = field(default_factory=list)


def _indexed(data: bytes | None) -> set[str]:
    if not data:
        return set()
    return {p.filename for line in data.decode("utf-8", "replace").split("\n") if (p := parse(line)) is not None}


def lost_topics(after: State, final: State, intent: Intent, model: str) -> list[CrashFinding]:
    """Topics the completed op leaves indexed with a file that the recovered store neither
    indexes nor holds: the crash plus the next session lost them for good.  A kill must never
    do that (S-INV-8); after power loss SPEC allows a file to vanish, so it is a weakness —
    shown, because the next session makes the loss permanent (it drops the orphaned entry)."""
    out = []
    for d in STORE_DIRS:
        published = _indexed(final.get(f"{d}/{INDEX_NAME}"))
        now = _indexed(after.get(f"{d}/{INDEX_NAME}"))
        for fname in sorted(published):
            rel = f"{d}/{fname}"
            if final.get(rel) is None or intent.may_remove(fname) or fname in now or after.get(rel) is not None:
                continue
            copies = sorted(k for k, v in after.items() if v == final[rel] and k != rel)
            where = f"; a copy survives at {copies[0]}" if copies else "; no copy survives"
            out.append(CrashFinding("S-INV-8", "lost-after-recovery", rel,
                                    f"{fname} is neither indexed nor on disk after the next session{where}",
                                    "violation" if model == "strict" else "weakness"))
    return out


def recovery_clock(driver: Driver) -> dict[str, Any]:
    """Virtual time when the driver has it: the implementation's lock polls and waits cost no
    wall time (OpenCode sleeps 25 ms after reclaiming a stale lock) and a lock that is never
    reclaimed ends in a busy answer at its own deadline, not in the driver's timeout."""
    modes = set(driver.hello.get("clock_modes", []))
    return {**CLOCK, "mode": "virtual"} if "virtual" in modes else dict(CLOCK)


def pipeline(driver: Driver, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[Answer]:
    """Send every request at once, then read the answers in order.

    Both protocol loops (``serve`` and protocol.mjs) handle one line after the other, so a
    state's renewal, clock and recovery ops cost one wake-up of each side instead of six —
    on a loaded machine the scheduler's latency, not the work, is most of a round trip."""
    if driver.proc is None or driver.proc.stdin is None:
        raise DriverError(f"{driver.spec.name}: not started")
    first = driver._next_id
    driver._next_id += len(calls)
    lines = b"".join(
        json.dumps({"id": first + i, "op": op, **({} if args is None else {"args": args})}).encode() + b"\n"
        for i, (op, args) in enumerate(calls)
    )
    try:
        driver.proc.stdin.write(lines)
        driver.proc.stdin.flush()
    except (BrokenPipeError, OSError) as e:
        raise DriverError(f"{driver.spec.name}: driver is gone ({e})") from None
    out = []
    for i, (op, _args) in enumerate(calls):
        try:
            line = driver._lines.get(timeout=driver.timeout)
        except queue.Empty:
            driver.kill()
            raise DriverError(f"{driver.spec.name}: no answer to {op!r} within {driver.timeout:g} s (driver killed)") from None
        if line is None:
            raise DriverError(f"{driver.spec.name}: driver exited during {op!r}")
        try:
            message = json.loads(line)
        except ValueError:
            driver.kill()
            raise DriverError(f"{driver.spec.name}: junk on stdout during {op!r}: {line[:200]!r}") from None
        if not isinstance(message, dict) or message.get("id") != first + i:
            driver.kill()
            raise DriverError(f"{driver.spec.name}: answer to {op!r} out of order")
        outcome = message.get("outcome")
        out.append(Answer(bool(message.get("ok")), message.get("result"), message.get("error"),
                          outcome=outcome if isinstance(outcome, dict) else None,
                          kinds_declared=driver.hello.get("outcome_kinds") is True))
    return out


class Worker:
    """One sandbox and one warm (untraced) driver, renewed between states."""

    def __init__(self, spec: PeerSpec, timeout: float = 15.0) -> None:
        self.spec = spec
        self.timeout = timeout
        self.sandbox = Sandbox.create(FAST_DIR)
        self.env = {**self.sandbox.env(), **stable_python_env()}
        self.driver: Driver | None = None
        self.starts = 0

    def _driver(self) -> tuple[Driver, bool]:
        if self.driver is None:
            self.driver = start_driver(self.spec, self.env, cwd=str(self.sandbox.root), timeout=self.timeout)
            self.starts += 1
            return self.driver, True
        return self.driver, False

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None
        self.sandbox.remove()

    def run(self, case: OpCase, cs: CrashState, final: State | None = None) -> Recovered:
        """Lay the state down, renew the driver, run the recovery ops, judge the store."""
        restore(self.sandbox, cs.state)
        for rel, data in cs.state.items():
            if is_lock(rel):
                t = (NOW_MS - lock_age_ms(data)) / 1000
                os.utime(self.sandbox.root / rel, (t, t), follow_symlinks=False)
        intent = Intent(case.intent.kind, case.intent.writes | {PROBE_FILE}, case.intent.removes)
        out: list[CrashFinding] = []
        said: list[str] = []
        try:
            driver, fresh = self._driver()
            renew = renew_op(driver)
            if not fresh and renew is None:  # no way to renew in process: a fresh driver
                driver.close()
                self.driver = None
                driver, fresh = self._driver()
            offered = driver.hello.get("ops")
            ops = [(op, args) for op, args in recovery_ops(case, self.spec.kind)
                   if not isinstance(offered, list) or op in offered]  # a five-op driver: only what it has
            head: list[tuple[str, dict[str, Any] | None]] = [] if fresh else [(str(renew), None)]
            every = pipeline(driver, [*head, ("set_clock", recovery_clock(driver)), *ops])
            answers = every[len(head) + 1 :]
            for (op, _a), a in zip([*head, ("set_clock", None)], every, strict=False):
                if not a.ok:
                    raise DriverError(f"{op} refused: {a.error}")
            for (op, args), a in zip(ops, answers, strict=True):
                said.append(f"{op}: {'ok' if a.ok else 'error'} {str(a.result if a.ok else a.error)[:80]!r}")
                refused = refused_write(str(driver.hello.get("impl", "")), op, a)
                if refused and is_fresh_write(op, args):
                    out.append(CrashFinding("S-INV-8", "unavailable", ".lock",
                                            f"the store refuses a fresh write after the crash: {said[-1]}", "hazard"))
                elif refused and (a.error or {}).get("kind") != "unsupported":
                    out.append(CrashFinding("S-INV-8", "not-recoverable", op, f"recovery answered {said[-1]}"))
            pid = driver.pid
        except DriverError as e:
            out.append(CrashFinding("S-INV-8", "not-recoverable", "driver", f"the driver failed: {e}"))
            if self.driver is not None:
                self.driver.kill()
                self.driver.close()
            self.driver = None
            return Recovered(case.name, cs, out, said)
        after = snapshot(self.sandbox.root)
        out += [f for f in check_settled_state(after, cs.state, intent, live_pids=(pid,))
                if not (f.kind == "lock-left" and after.get(f.path) == cs.state.get(f.path))]  # the crash's own, untouched
        if final is not None:
            out += lost_topics(after, final, intent, cs.model)
        return Recovered(case.name, cs, out, said)


def recover_all(
    spec: PeerSpec,
    jobs: Sequence[tuple[OpCase, CrashState]],
    finals: Mapping[str, State] | None = None,
    *,
    workers: int = 2,
    timeout: float = 15.0,
    advance: Callable[[int], None] | None = None,
) -> tuple[list[Recovered], float, int]:
    """Recovery on every state, ``workers`` warm drivers at once; results, seconds, drivers started."""
    todo: queue.Queue[tuple[OpCase, CrashState]] = queue.Queue()
    for job in jobs:
        todo.put(job)
    results: list[Recovered] = []
    lock = threading.Lock()
    pool = [Worker(spec, timeout) for _ in range(max(1, min(workers, len(jobs))))]

    def work(w: Worker) -> None:
        while True:
            try:
                case, cs = todo.get_nowait()
            except queue.Empty:
                return
            r = w.run(case, cs, (finals or {}).get(case.name))
            with lock:
                results.append(r)
                if advance is not None:
                    advance(1)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in pool]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for w in pool:
            w.close()
    return results, time.perf_counter() - t0, sum(w.starts for w in pool)

