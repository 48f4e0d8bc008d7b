"""N real writer processes on one store, started together behind a barrier (issue 4).

Every writer is a driver process (``python -m memconform.reference serve`` or a node driver), so the
reference and the JS peers write the same store through the same protocol.  Each writer runs
an op script; every op is recorded in one ``History``; afterwards the store is checked for
invariants, lost and duplicated updates, and linearizability against the kind model
(``checker.store_model``).  A write counts as kept only when its token is reachable through the
index (``oracles.interop_checks``, issue 13): a token in an unindexed file is lost.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..checker.history import History, Op
from ..checker.linearize import NOT_LINEARIZABLE, LinearizabilityVerdict
from ..checker.store_model import check
from ..drivers.interrupt import stopping, work_done
from ..drivers.peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox
from ..oracles import interop_checks
from ..oracles.findings import HAZARD, VIOLATION, Finding
from ..oracles.invariants import ALL_CHECKS, Violation, check_sandbox
from ..oracles.outcome_kind import history_outcome
from ..oracles.settled import settled_violations
from ..oracles.spec import INDEX_NAME
from . import carry_race

Script = list[tuple[str, dict[str, Any]]]
TOPICS = ("Alpha Notes", "Bravo Config", "Charlie Host", "Delta Keys", "Echo Paths", "Foxtrot Env")
# Case variants and slug collisions: name matching, suffixes and lookups all come into play
# (the history is then checked as one store, not per topic).
ADVERSARIAL_TOPICS = ("Alpha Notes", "alpha notes", "Alpha Notes!", "Bravo", "bravo config", "Bravo Config")


def generate_script(rng: random.Random, writer: str, n_ops: int, topics: tuple[str, ...] = TOPICS) -> Script:
    """Writes (mostly appends), removes and pins over overlapping topics.

    Every write carries a unique token so lost and duplicated updates can be counted.
    """
    return [next_op(rng, writer, i, topics) for i in range(n_ops)]


def next_op(rng: random.Random, writer: str, i: int, topics: tuple[str, ...] = TOPICS) -> tuple[str, dict[str, Any]]:
    """The ``i``-th op of a writer's stream (timed runs draw ops until their time is up)."""
    topic = rng.choice(topics)
    roll = rng.random()
    if roll < 0.6:
        args: dict[str, Any] = {"topic": topic, "content": f"tok-{writer}-{i}", "summary": f"{writer} {i}"}
        if rng.random() < 0.1:
            args["mode"] = "replace"
        if rng.random() < 0.05:
            args["pin"] = True
        return ("write_memory", args)
    if roll < 0.8:
        return ("remove_memory", {"topic": topic})
    return ("pin_memory", {"topic": topic, "pin": rng.random() < 0.5})


@dataclass
class WriterStats:
    name: str
    impl: str
    done: int = 0
    ok: int = 0
    busy: int = 0
    info: int = 0


@dataclass
class InteropResult:
    history: History
    stats: list[WriterStats]
    seconds: float
    violations: list[Violation]
    lost: list[str]
    duplicated: list[str]
    verdict: LinearizabilityVerdict | None = None
    errors: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds each check after the writers took (``PHASES``), in order."""
    carried: list[Finding] = field(default_factory=list)  # carry-over racing the writers (carry_race)
    interrupted: bool = False
    """Ctrl-C stopped the writers: the checks judged what they finished."""

    @property
    def total_ops(self) -> int:
        return sum(s.done for s in self.stats)

    @property
    def busy_share(self) -> float:
        return sum(s.busy for s in self.stats) / max(1, self.total_ops)


def judge(driver: Driver, op: str, answer: Answer) -> tuple[str, str, Any]:
    """An answer as its history records it: the event type, the outcome and the result.

    The outcome (``ok:created``, ``busy`` …) is what a driver declaring outcome kinds said,
    else what a JS peer's text says through its family's table (``oracles.outcome_kind``,
    the family from its ``hello``); the checkers read it, never the text (issue 30 item 2).
    ``fail`` is a busy answer (definitely no effect), ``info`` an error (it may have been
    rolled back or not), every other outcome ``ok``."""
    outcome = history_outcome(str(driver.hello.get("impl", "")), op, answer)
    kind = outcome.split(":", 1)[0]
    type_ = "fail" if kind == "busy" else "info" if kind == "error" else "ok"
    return type_, outcome, answer.result if answer.ok else answer.error


def prepare_shared(sandbox: Sandbox) -> None:
    """Enable the shared store for every tool's configuration (pi and OpenCode)."""
    sandbox.put("agent/memory.jsonc", '{"shared_dir": true}\n')
    sandbox.put("home/.config/opencode/memory.jsonc", '{"shared_dir": true}\n')


@dataclass
class WritersRun:
    """What ``run_writers`` recorded."""

    history: History
    stats: list[WriterStats]
    seconds: float
    errors: list[str]
    interrupted: bool = False
    """Ctrl-C stopped the writers: the history holds what they finished, an op in flight
    as ``info`` (its driver was killed: it may or may not have taken effect)."""
    pids: set[int] = field(default_factory=set)
    """The writers' driver processes: a killed one's leftovers are S-INV-8's to excuse."""


def run_writers(
    peers: list[PeerSpec],
    scripts: list[Script],
    sandbox: Sandbox,
    *,
    timeout: float = 30.0,
    progress: Callable[[list[WriterStats]], None] | None = None,
) -> WritersRun:
    """Start one driver per script (peers round-robin), release them together, record all.

    Ctrl-C (``harness.drivers.interrupt`` kills the drivers) stops the writers; what they finished
    is returned, marked ``interrupted``, for the checks to judge (issue 22 item 4).  A
    driver killed by the stop is no finding."""
    history = History()
    drivers: list[Driver] = []
    errors: list[str] = []
    stats = [WriterStats(f"w{i}", peers[i % len(peers)].name) for i in range(len(scripts))]
    try:
        for i in range(len(scripts)):
            drivers.append(start_driver(peers[i % len(peers)], sandbox.env(), cwd=str(sandbox.root), timeout=timeout))
        barrier = threading.Barrier(len(scripts) + 1)
        ended: list[float] = []

        def work(i: int) -> None:
            try:
                run_script(i)
            finally:
                ended.append(time.monotonic())

        def run_script(i: int) -> None:
            st, driver = stats[i], drivers[i]
            try:
                barrier.wait()
            except threading.BrokenBarrierError:  # interrupted before the start
                return
            for op, args in scripts[i]:
                if stopping():
                    return
                history.record(st.name, "invoke", op, args)
                try:
                    answer = driver.call(op, args)
                except DriverError as e:
                    history.record(st.name, "info", op, args, str(e))
                    st.info += 1
                    st.done += 1
                    if not stopping():  # not the stop's own kill
                        errors.append(f"{st.name} ({st.impl}): {e}")
                    return
                kind, outcome, result = judge(driver, op, answer)
                history.record(st.name, kind, op, args, result, outcome)
                st.done += 1
                st.ok += kind == "ok"
                st.busy += kind == "fail"
                st.info += kind == "info"

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(scripts))]
        for t in threads:
            t.start()
        started = time.monotonic()
        interrupted = False
        try:
            barrier.wait()
            started = time.monotonic()
            for t in threads:
                while t.is_alive():
                    if progress is not None:
                        progress(stats)
                    t.join(0.5)
        except KeyboardInterrupt:
            # the drivers are dead (``interrupt.stop``): each writer's op in flight fails at
            # once and its loop takes no more; a Ctrl-C from now on only marks the report
            interrupted = True
            work_done()
            barrier.abort()
            for t in threads:
                t.join()
        if progress is not None:
            progress(stats)  # the final counts, not the last poll's
        seconds = max(ended, default=started) - started  # the last writer's end, not a poll tick
    finally:
        for d in drivers:
            d.close()
    pids = {d.proc.pid for d in drivers if d.proc is not None}
    return WritersRun(history, stats, seconds, errors, interrupted, pids)


def lost_and_duplicated(
    history: History, sandbox: Sandbox, shared: bool, ops: list[Op] | None = None
) -> tuple[list[str], list[str]]:
    """Acknowledged appends not reachable *through the index* (a token in an unindexed file
    is lost: no reader finds it), and tokens reachable twice — ``oracles.interop_checks``,
    read from disk.  A token may vanish only under a replace of the same file or a remove
    that could select its entry (not definitely failed, not over before the append began).
    """
    directory = Path(sandbox.shared_dir if shared else sandbox.local_dir)
    found = interop_checks.lost_writes(history.ops() if ops is None else ops, [disk_view(directory)])
    lost = [f.evidence.removeprefix("acknowledged append ").split(" is not reachable", 1)[0]
            for f in found if f.kind == "lost-write"]
    dup = [f.evidence.removeprefix("acknowledged append ").removesuffix(" in indexed files")
           for f in found if f.kind == "duplicated-write"]
    return lost, dup


def disk_view(directory: Path) -> interop_checks.StoreView:
    """A memory directory as the oracles read it: its index and every regular file's text."""
    files: dict[str, str] = {}
    index: str | None = None
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        path = directory / name
        try:
            if path.is_symlink() or not path.is_file():
                continue
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if name == INDEX_NAME:
            index = text
        else:
            files[name] = text
    return interop_checks.StoreView("disk", index, files)


def interop(
    peers: list[PeerSpec],
    *,
    writers: int,
    ops: int,
    shared: bool = False,
    seed: int = 0,
    timeout: float = 30.0,
    check_budget: float = 10.0,
    progress: Callable[[list[WriterStats]], None] | None = None,
    sandbox: Sandbox | None = None,
    topics: tuple[str, ...] = TOPICS,
    phase: PhaseStart | None = None,
    carry_over: bool = False,
) -> InteropResult:
    """Run the writers, then the checks (``PHASES``), each announced through ``phase``."""
    own = sandbox is None
    sb = sandbox or Sandbox.create()
    took: dict[str, float] = {}
    try:
        if shared:
            prepare_shared(sb)
        tokens = carry_race.seed_locals(sb) if carry_over and shared else {}
        rng = random.Random(seed)
        scripts = [generate_script(rng, f"w{i}", ops, topics) for i in range(writers)]
        run = run_writers(peers, scripts, sb, timeout=timeout, progress=progress)
        history = run.history
        with timed(PAIRING, len(history.events), phase, took, "events") as tick:
            paired = history.ops()
            tick(len(history.events))
        with timed(STORE, len(paired), phase, took, "ops") as tick:
            violations = _violations(sb, run)
            lost, dup = lost_and_duplicated(history, sb, shared, paired)
            carried = carry_race.findings(disk_view(Path(sb.shared_dir)), tokens) if tokens else []
            tick(len(paired))
        with timed(CHECKER, None, phase, took, "states") as tick:
            verdict = check(paired, budget_s=check_budget, tick=tick)
        return InteropResult(history, run.stats, run.seconds, violations, lost, dup, verdict, run.errors, took,
                             carried, run.interrupted)
    finally:
        if own:
            sb.remove()


def _violations(sandbox: Sandbox, run: WritersRun) -> list[Violation]:
    """The store's invariants after the writers; after a Ctrl-C, minus what S-INV-8 allows
    once writers were killed mid-op (their temporaries, a leftover lock, an entry indexed
    and tombstoned), as after the nemesis's kills."""
    if not run.interrupted:
        return check_sandbox(sandbox.root, ALL_CHECKS)
    return settled_violations(Path(sandbox.root), run.pids, {"kill"})


class Tally(Protocol):
    """What a phase reports its advance to (``harness.reports.progress.Progress`` is one)."""

    def advance(self, n: int = 1, *, note: str = "") -> None: ...

    def close(self) -> None: ...


PhaseStart = Callable[[str, "int | None"], Tally]
"""Starts showing one phase: its name and how many items it has (None: unknown)."""
PAIRING, STORE, CHECKER, SAVING = "pairing", "store checks", "linearizability", "history"
PHASES = (PAIRING, STORE, CHECKER, SAVING)
"""What runs after the writers, in order: pairing the events into ops, the invariants and
lost or duplicated writes, the checker, saving the history (``SAVING`` is the command's)."""


@contextmanager
def timed(
    name: str, total: int | None, phase: PhaseStart | None, took: dict[str, float], unit: str = ""
) -> Iterator[Callable[[int], None]]:
    """One phase: shown through ``phase`` while it runs (its ``tick(n)``: ``n`` more
    ``unit`` done), its seconds put in ``took``: every phase after the writers says it is
    running (issue 22: a 165 s silence after the last write)."""
    tally = phase(name, total) if phase is not None else None
    started = time.monotonic()
    try:
        yield (lambda n: tally.advance(n, note=unit)) if tally is not None else (lambda n: None)
    finally:
        took[name] = time.monotonic() - started
        if tally is not None:
            tally.close()


def fresh_history_path(directory: Path = Path("reports")) -> Path:
    """``reports/interop-history-<UTC time>-<pid>.jsonl``: one file per run, never an older
    run's history overwritten."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = directory / f"interop-history-{stamp}-{os.getpid()}.jsonl"
    n = 1
    while path.exists():  # two runs in one second of one process (tests, a loop)
        n += 1
        path = directory / f"interop-history-{stamp}-{os.getpid()}-{n}.jsonl"
    return path


def findings(result: InteropResult, labels: Mapping[str, str], reproduce: str = "") -> list[Finding]:
    """What an interop run saw, as findings.

    ``labels`` maps a peer's spec name to its implementation as it named itself.  A lost or
    duplicated acknowledged write (S-INV-3: every mutation under the lock), a broken invariant and a non-linearizable
    history are violations; a writer whose driver stopped answering is a ``hang`` hazard (an
    other exit a ``driver-error`` hazard).  An ``unknown`` checker answer is not a finding:
    it makes the run's verdict unknown.
    """
    writer_impl = {s.name: labels.get(s.impl, s.impl) for s in result.stats}
    everyone = ", ".join(dict.fromkeys(writer_impl.values()))
    found: list[Finding] = []

    def impl_of(item: str) -> str:
        return writer_impl.get(item.split(":", 1)[0].split(" ", 1)[0], everyone)

    for kind, items in (("lost-write", result.lost), ("duplicated-write", result.duplicated)):
        for item in items:
            found.append(Finding(kind, VIOLATION, clause="S-INV-3", impl=impl_of(item), op="write_memory",
                                 evidence=f"acknowledged append {item}", reproduce=reproduce))
    found += [replace(f, impl=f.impl or everyone, reproduce=reproduce) for f in result.carried]
    for v in result.violations:
        found.append(Finding("invariant", VIOLATION, clause=v.clause, impl=everyone, path=v.path,
                             evidence=v.message, reproduce=reproduce))
    for e in result.errors:
        kind = "hang" if "no answer to" in e else "driver-error"
        found.append(Finding(kind, HAZARD, impl=impl_of(e), evidence=e, reproduce=reproduce))
    verdict = result.verdict
    if verdict is not None and verdict.status == NOT_LINEARIZABLE:
        where = f" in partition {verdict.failing_partition}" if verdict.failing_partition else ""
        lines = "; ".join(verdict.failing_lines[:6])
        found.append(Finding("not-linearizable", VIOLATION, impl=everyone,
                             evidence=f"no order of the {len(verdict.failing_ops)} ops{where} explains "
                                      f"their results: {lines}", reproduce=reproduce))
    return found
