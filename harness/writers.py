"""N real writer processes on one store, started together behind a barrier (issue 4).

Every writer is a driver process (``python -m memconform.reference serve`` or a node driver), so the
reference and the JS peers write the same store through the same protocol.  Each writer runs
an op script; every op is recorded in one ``History``; afterwards the store is checked for
invariants, lost and duplicated updates, and linearizability against the kind model
(``store_checker``).  Lost writes are keyed with the SPEC-written slug (``oracles.grammar``).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .history import History
from .linearize import NOT_LINEARIZABLE, LinearizabilityVerdict
from .oracles import kind_model
from .oracles.findings import HAZARD, VIOLATION, Finding
from .oracles.grammar import to_slug
from .oracles.invariants import ALL_CHECKS, Violation, check_sandbox
from .peers import Driver, DriverError, PeerSpec, start_driver
from .sandbox import Sandbox
from .store_checker import check

Script = list[tuple[str, dict[str, Any]]]
TOPICS = ("Alpha Notes", "Bravo Config", "Charlie Host", "Delta Keys", "Echo Paths", "Foxtrot Env")
# Case variants and slug collisions: name matching, suffixes and lookups all come into play
# (the history is then checked as one store, not per topic).
ADVERSARIAL_TOPICS = ("Alpha Notes", "alpha notes", "Alpha Notes!", "Bravo", "bravo config", "Bravo Config")


def generate_script(rng: random.Random, writer: str, n_ops: int, topics: tuple[str, ...] = TOPICS) -> Script:
    """Writes (mostly appends), removes and pins over overlapping topics.

    Every write carries a unique token so lost and duplicated updates can be counted.
    """
    script: Script = []
    for i in range(n_ops):
        topic = rng.choice(topics)
        roll = rng.random()
        if roll < 0.6:
            args: dict[str, Any] = {"topic": topic, "content": f"tok-{writer}-{i}", "summary": f"{writer} {i}"}
            if rng.random() < 0.1:
                args["mode"] = "replace"
            if rng.random() < 0.05:
                args["pin"] = True
            script.append(("write_memory", args))
        elif roll < 0.8:
            script.append(("remove_memory", {"topic": topic}))
        else:
            script.append(("pin_memory", {"topic": topic, "pin": rng.random() < 0.5}))
    return script


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

    @property
    def total_ops(self) -> int:
        return sum(s.done for s in self.stats)

    @property
    def busy_share(self) -> float:
        return sum(s.busy for s in self.stats) / max(1, self.total_ops)


def _classify(answer_ok: bool, result: Any) -> str:
    if not answer_ok:
        return "info"  # a raised error: the op may have been rolled back or not
    return "fail" if kind_model.result_kind(result) == kind_model.BUSY else "ok"


def prepare_shared(sandbox: Sandbox) -> None:
    """Enable the shared store for every tool's configuration (pi and OpenCode)."""
    sandbox.put("agent/memory.jsonc", '{"shared_dir": true}\n')
    sandbox.put("home/.config/opencode/memory.jsonc", '{"shared_dir": true}\n')


def run_writers(
    peers: list[PeerSpec],
    scripts: list[Script],
    sandbox: Sandbox,
    *,
    timeout: float = 30.0,
    progress: Callable[[list[WriterStats]], None] | None = None,
) -> tuple[History, list[WriterStats], float, list[str]]:
    """Start one driver per script (peers round-robin), release them together, record all."""
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
            barrier.wait()
            for op, args in scripts[i]:
                history.record(st.name, "invoke", op, args)
                try:
                    answer = driver.call(op, args)
                except DriverError as e:
                    history.record(st.name, "info", op, args, str(e))
                    st.info += 1
                    st.done += 1
                    errors.append(f"{st.name} ({st.impl}): {e}")
                    return
                kind = _classify(answer.ok, answer.result if answer.ok else answer.error)
                history.record(st.name, kind, op, args, answer.result if answer.ok else answer.error)
                st.done += 1
                st.ok += kind == "ok"
                st.busy += kind == "fail"
                st.info += kind == "info"

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(scripts))]
        for t in threads:
            t.start()
        barrier.wait()
        started = time.monotonic()
        for t in threads:
            while t.is_alive():
                if progress is not None:
                    progress(stats)
                t.join(0.5)
        seconds = max(ended, default=started) - started  # the last writer's end, not a poll tick
    finally:
        for d in drivers:
            d.close()
    return history, stats, seconds, errors


_TOKEN = re.compile(r"tok-w\d+-\d+")


def lost_and_duplicated(history: History, sandbox: Sandbox, shared: bool) -> tuple[list[str], list[str]]:
    """Acknowledged append tokens missing from their topic file, and tokens present twice.

    A token may legitimately vanish only if a replace-mode write that can reach the same file
    (same slug or same case-folded name) started before the append completed.
    """
    store = sandbox.shared_dir if shared else sandbox.local_dir
    bodies = {p.name: p.read_text("utf-8", "replace") for p in Path(store).glob("*.md") if p.name != "MEMORY.md"}
    everything = "\n".join(bodies.values())
    ops = history.ops()
    lost, dup = [], []
    for op in ops:
        if op.op != "write_memory" or op.type != "ok" or op.args.get("mode") == "replace":
            continue
        token = str(op.args["content"])
        topic = op.args["topic"]
        family = {to_slug(topic), topic.strip().lower()}
        replaced_later = any(
            o.op == "write_memory" and o.args.get("mode") == "replace"
            and family & {to_slug(o.args["topic"]), str(o.args["topic"]).strip().lower()}
            and o.type != "fail" and (o.end is None or o.end > op.start)
            for o in ops
        )
        count = len(re.findall(re.escape(token) + r"(?!\d)", everything))
        if count == 0 and not replaced_later:
            lost.append(f"{op.process}: {topic!r} {token}")
        elif count > 1:
            dup.append(f"{op.process}: {topic!r} {token} ×{count}")
    return lost, dup


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
) -> InteropResult:
    own = sandbox is None
    sb = sandbox or Sandbox.create()
    try:
        if shared:
            prepare_shared(sb)
        rng = random.Random(seed)
        scripts = [generate_script(rng, f"w{i}", ops, topics) for i in range(writers)]
        history, stats, seconds, errors = run_writers(peers, scripts, sb, timeout=timeout, progress=progress)
        violations = check_sandbox(sb.root, ALL_CHECKS)
        lost, dup = lost_and_duplicated(history, sb, shared)
        verdict = check(history.ops(), budget_s=check_budget)
        return InteropResult(history, stats, seconds, violations, lost, dup, verdict, errors)
    finally:
        if own:
            sb.remove()


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
