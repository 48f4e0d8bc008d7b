"""The lock-protocol race suite: situations, explored under a strategy, findings shrunk.

Each situation plants a lock state SPEC's protocol must get through (a dead owner's token
older than 10 s, an empty lock older than 60 s, none at all) and gives 2-3 writers one or two
ops.  Schedules are run one after another (``scheduler.run_schedule``) until the budget is
spent; the first finding of each situation is shrunk (fewest context switches, then fewest
steps, that still show the same kind) and kept with its schedule, so it replays k of k.
"""

from __future__ import annotations

import itertools
import time
import zlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..drivers.interrupt import stopping
from ..drivers.peers import PeerSpec
from ..oracles.findings import VIOLATION, Finding
from . import programs
from .scheduler import DriverPool, RunResult, Situation, run_schedule
from .strategies import (
    KILL,
    PCT,
    Diverged,
    Explorer,
    RandomWalk,
    Replay,
    Strategy,
    continue_last,
    switches,
)

STRATEGIES = ("random", "pct", "exhaustive")
CLAUSES = ("S-LOCK-2", "S-LOCK-3", "S-LOCK-4", "S-LOCK-5", "S-INV-9")
"""What every situation exercises: acquisition, liveness, the reclaim recheck, release."""
TARGET_KINDS = ("lock-protocol", "lost-write", "double-holder", "duplicated-write", "split-topic", "not-linearizable")
"""What a race shows, most telling first: a finding is shrunk towards the first kind it has."""


LIVE_AGE_MS = 59_900
"""How far the waiters of ``live-lock-turns-stale`` are ahead of the owner: past the stale age
(10 s) at once, past the hard stale age (60 s) after five 20 ms polls, so both turns a live
lock could wrongly take are on the path; a readable live pid keeps it busy at any age."""


def _append(writer: int, topic: str, n: int = 0) -> tuple[str, dict[str, Any]]:
    return ("write_memory", {"topic": topic, "content": f"tok-w{writer}-{n}", "summary": f"w{writer} {n}"})


SITUATIONS: tuple[Situation, ...] = (
    Situation("stale-dead-owner", "dead", 20.0,
              ((_append(0, "Race 0"),), (_append(1, "Race 1"),)),
              "a dead owner's lock, 20 s old: both writers may reclaim it (S-LOCK-2 step 4, S-LOCK-4)"),
    Situation("empty-lock-aged", "empty", 61.0,
              ((_append(0, "Race 0"),), (_append(1, "Race 1"),)),
              "an empty lock 61 s old: no readable pid, older than the hard stale age (S-LOCK-3)"),
    Situation("stale-three-writers", "dead", 20.0,
              ((_append(0, "Race 0"),), (_append(1, "Race 1"),), (_append(2, "Race 2"),)),
              "a dead owner's lock and three reclaimers: a holder's lock taken over mid-op, whose "
              "release must leave the new owner's lock alone (S-LOCK-5)"),
    Situation("stale-every-op", "dead", 20.0,
              ((_append(0, "Race 0"), ("pin_memory", {"topic": "Race 0", "pin": True})),
               (_append(1, "Race 1"), ("remove_memory", {"topic": "Race 0"}), _append(1, "Race 1", 1))),
              "a dead owner's lock, then appends, a pin and a remove racing through one lock"),
    Situation("owner-dies-mid-write", "none", 0.0,
              ((_append(0, "Race 0"),),
               (("advance_clock", {"ms": 11_000}), _append(1, "Race 1")),
               (("advance_clock", {"ms": 11_000}), _append(2, "Race 2"))),
              "a writer SIGKILLed right after writing its token into the lock, while two others, "
              "11 s later on their clocks, reclaim the dead owner's lock (S-LOCK-3, S-INV-8)",
              kill_after=(0, "write(.lock)")),
    Situation("live-lock-turns-stale", "none", 0.0,
              ((_append(0, "Race 0"),),
               (("advance_clock", {"ms": LIVE_AGE_MS}), _append(1, "Race 1")),
               (("advance_clock", {"ms": LIVE_AGE_MS}), _append(2, "Race 2"))),
              "a live owner holds the lock (its token written) when two writers start, their clocks "
              "59.9 s on: they poll while its age passes 60 s (alive: busy, S-LOCK-3) until the "
              "strategy SIGKILLs the owner; then both may reclaim (S-LOCK-2 step 4, S-LOCK-4)",
              start_after=(0, "write(.lock)"), killable=0),
    Situation("no-lock", "none", 0.0,
              ((_append(0, "Race 0"),), (_append(1, "Race 1"),)),
              "no lock at all: plain contention, where two holders would break S-LOCK-2 outright"),
)


def situation(name: str) -> Situation:
    for s in SITUATIONS:
        if s.name == name:
            return s
    raise KeyError(name)


def pickers(sit: Situation) -> list[str]:
    """What a strategy may pick in ``sit``: its writers, and the kill of its killable one."""
    return [f"w{i}" for i in range(sit.writers)] + ([KILL] if sit.killable is not None else [])


@dataclass
class Found:
    """A situation's first finding, with the run that showed it and that run shrunk."""

    finding: Finding
    original: RunResult
    shrunk: RunResult
    seed: int
    strategy: str
    shrink_runs: int = 0


@dataclass
class SuiteResult:
    runs: int = 0
    void: list[str] = field(default_factory=list)  # why runs judged nothing (out of turn, a stall)
    held: int = 0
    steps: int = 0
    seconds: float = 0.0
    first_found_s: float | None = None
    first_violation_s: float | None = None  # the first finding that is no weakness SPEC accepts
    per_situation: dict[str, int] = field(default_factory=dict)
    found: list[Found] = field(default_factory=list)
    other: list[Finding] = field(default_factory=list)  # hangs, driver errors
    exhausted: list[str] = field(default_factory=list)  # situations the explorer finished
    records: list[dict[str, Any]] = field(default_factory=list)  # one per run: the report's "scenarios"
    interrupted: bool = False  # Ctrl-C: what was found so far is kept, unshrunk


SHRINK_SHARE = 0.4
"""Under a deadline, the share of the budget kept for shrinking once something was found."""


def target(findings: Sequence[Finding]) -> Finding | None:
    """The run's most telling finding: a violation before a weakness, then by ``TARGET_KINDS``."""
    for violations in (True, False):
        for kind in TARGET_KINDS:
            for f in findings:
                if f.kind == kind and (f.severity == VIOLATION) == violations:
                    return f
    return None


def in_shard(index: int, shard: tuple[int, int]) -> bool:
    k, n = shard
    return index % n == k - 1


def _prefix_shard(prefix: tuple[str, ...], shard: tuple[int, int]) -> bool:
    k, n = shard
    return n == 1 or zlib.crc32(",".join(prefix).encode()) % n == k - 1


def explore(
    peers: Sequence[PeerSpec],
    *,
    strategy: str = "random",
    seed: int = 0,
    budget_s: float = 60.0,
    hardened: bool = False,
    labels: dict[str, str] | None = None,
    situations: Sequence[Situation] = SITUATIONS + programs.FAMILIES,
    shard: tuple[int, int] = (1, 1),
    shrink: bool = True,
    shrink_budget_s: float = 20.0,
    timeout: float = 30.0,
    on_run: Callable[[RunResult], None] | None = None,
    deadline: float | None = None,
    offered: Collection[str] = (),
) -> SuiteResult:
    """Schedules of every situation, round robin, until ``budget_s``; each situation stops at
    its first finding, or when the exhaustive explorer has visited it all.  Then each finding
    is shrunk (``shrink_budget_s`` each, on top of the budget).  ``offered``: the ops every
    writer's driver declares (generated programs draw repair only when it is among them).

    With a ``deadline`` (``time.monotonic()``) exploration and shrinking both end by it: once
    something is found, exploration gives up the last ``SHRINK_SHARE`` of the time to
    shrinking (issue 31 item 3: ``--budget 30`` took 97 s).  Ctrl-C keeps what was found so far
    (``interrupted``, unshrunk; issue 31 item 4)."""
    pool = DriverPool()
    try:
        return _explore(peers, strategy, seed, budget_s, hardened, labels, situations, shard, shrink,
                        shrink_budget_s, timeout, on_run, pool, deadline, frozenset(offered))
    finally:
        pool.close()


def _explore(
    peers: Sequence[PeerSpec], strategy: str, seed: int, budget_s: float, hardened: bool,
    labels: dict[str, str] | None, situations: Sequence[Situation], shard: tuple[int, int], shrink: bool,
    shrink_budget_s: float, timeout: float, on_run: Callable[[RunResult], None] | None, pool: DriverPool,
    deadline: float | None, offered: frozenset[str],
) -> SuiteResult:
    out = SuiteResult()
    hits: dict[str, tuple[Finding, RunResult, int]] = {}  # per situation or family: its finding
    t0 = time.monotonic()
    span = budget_s if deadline is None else max(0.0, deadline - t0)

    def exploring() -> bool:
        kept = SHRINK_SHARE * span if hits and shrink and deadline is not None else 0.0
        return not stopping() and time.monotonic() - t0 < span - kept

    try:
        _explore_loop(peers, strategy, seed, hardened, labels, situations, shard, timeout, on_run, pool, out, hits,
                      t0, exploring, offered)
    except KeyboardInterrupt:
        out.interrupted = True
    out.interrupted = out.interrupted or stopping()
    out.seconds = time.monotonic() - t0
    for n, (hit, first, run_seed) in enumerate(list(hits.values())):
        budget = shrink_budget_s
        if deadline is not None:
            budget = min(budget, (deadline - time.monotonic()) / (len(hits) - n))
        if not shrink or out.interrupted or budget <= 0:
            out.found.append(Found(hit, first, first, run_seed, strategy, 0))
            continue
        try:
            small, tries = _shrink(peers, strategy, hit, first, run_seed, hardened=hardened, labels=labels,
                                   timeout=timeout, budget_s=budget, pool=pool)
        except KeyboardInterrupt:
            out.interrupted, small, tries = True, first, 0
        same = next((f for f in small.findings if f.kind == hit.kind and f.severity == hit.severity), None)
        out.found.append(Found(same or target(small.findings) or hit, first, small, run_seed, strategy, tries))
    return out


def _shrink(
    peers: Sequence[PeerSpec], strategy: str, hit: Finding, first: RunResult, run_seed: int, *, hardened: bool,
    labels: dict[str, str] | None, timeout: float, budget_s: float, pool: DriverPool,
) -> tuple[RunResult, int]:
    """A generated program to its fewest ops (half the budget), then any run to its fewest
    switches and steps, keeping the finding's kind and severity; ``budget_s`` bounds both."""
    t0 = time.monotonic()
    result, tries = first, 0
    if result.situation.name.startswith(programs.NAMES):
        def again(cand: Situation) -> RunResult | None:
            strat = PCT(run_seed, pickers(cand)) if strategy == "pct" else RandomWalk(run_seed)
            return run_schedule(peers, cand, strat, hardened=hardened, labels=labels, timeout=timeout, pool=pool)
        result, tries = programs.shrink_ops(again, result, hit.kind, budget_s=budget_s / 2, severity=hit.severity)
    left = max(0.0, budget_s - (time.monotonic() - t0))
    small, more = shrink_run(peers, result, hit.kind, hardened=hardened, labels=labels, timeout=timeout,
                             budget_s=left, pool=pool, severity=hit.severity)
    return small, tries + more


def _explore_loop(
    peers: Sequence[PeerSpec], strategy: str, seed: int, hardened: bool, labels: dict[str, str] | None,
    situations: Sequence[Situation], shard: tuple[int, int], timeout: float,
    on_run: Callable[[RunResult], None] | None, pool: DriverPool, out: SuiteResult,
    hits: dict[str, tuple[Finding, RunResult, int]], t0: float, exploring: Callable[[], bool],
    offered: frozenset[str],
) -> None:
    """Run schedules round robin while ``exploring()``; results go into ``out`` and ``hits`` as
    they come, so an interrupted loop loses nothing that finished.  A named situation stops at
    its first finding; a generated family runs on past a weakness SPEC accepts, for a broken
    step (its first finding is kept meanwhile)."""
    explorers = {s.name: Explorer() for s in situations}
    open_ = [s for s in situations]
    index = 0
    while open_ and exploring():
        for sit in list(open_):
            if not exploring():
                break
            run_seed = seed + out.per_situation.get(sit.name, 0)
            family = sit
            if programs.is_family(sit):  # a fresh program per run (the explorer's: one per seed)
                sit = programs.generate(family, seed if strategy == "exhaustive" else run_seed, peers, offered)
            strat: Strategy
            if strategy == "exhaustive":
                prefix = explorers[family.name].next_prefix()
                while prefix is not None and not _prefix_shard(prefix, shard):
                    prefix = explorers[family.name].next_prefix()
                if prefix is None:
                    out.exhausted.append(family.name)
                    open_.remove(family)
                    continue
                strat = Replay(prefix, strict=False)
            else:
                index += 1
                if not in_shard(index - 1, shard):
                    out.per_situation[family.name] = out.per_situation.get(family.name, 0) + 1
                    continue
                strat = PCT(run_seed, pickers(sit)) if strategy == "pct" else RandomWalk(run_seed)
            result = run_schedule(peers, sit, strat, hardened=hardened, labels=labels, timeout=timeout, pool=pool)
            out.per_situation[family.name] = out.per_situation.get(family.name, 0) + 1
            out.runs += 1
            if result.void:
                out.void.append(f"{sit.name}: {result.void}")
            out.records.append(_record(sit, strat, run_seed, result))
            out.held += result.held
            out.steps += len(result.steps)
            if strategy == "exhaustive":
                explorers[family.name].learn(result.steps)
            out.other += [f for f in result.findings if f.kind not in TARGET_KINDS]
            hit = target(result.findings)
            if hit is not None:  # kept before ``on_run`` says so: a Ctrl-C after the line keeps it
                if out.first_found_s is None:
                    out.first_found_s = time.monotonic() - t0
                if hit.severity == VIOLATION and out.first_violation_s is None:
                    out.first_violation_s = time.monotonic() - t0
                if programs.is_family(family) and hit.severity != VIOLATION:
                    hits.setdefault(family.name, (hit, result, run_seed))
                else:
                    open_.remove(family)
                    hits[family.name] = (hit, result, run_seed)
            if on_run is not None:
                on_run(result)


def _record(sit: Situation, strat: Strategy, seed: int, result: RunResult) -> dict[str, Any]:
    """One run as a report row; its id names the schedule, so shards never share one."""
    if isinstance(strat, Replay):
        sid = f"races/{sit.name}/exhaustive/{zlib.crc32(','.join(strat.picks).encode()):08x}"
    else:
        sid = f"races/{sit.name}/{strat.name}/seed-{seed}"
    kinds = sorted({f.kind for f in result.findings})
    status = "skip" if result.void else "fail" if any(f.severity == "violation" for f in result.findings) else "pass"
    return {"id": sid, "clauses": list(CLAUSES), "path": "", "status": status, "seconds": round(result.seconds, 3),
            "reason": result.void or f"{len(result.steps)} steps, {switches(result.picks)} switches: "
                                     f"{', '.join(kinds) or 'clean'}"}


def same_seeds(
    peers: Sequence[PeerSpec], sit: Situation, strategy: str, seeds: Sequence[int], *, hardened: bool,
    labels: dict[str, str] | None = None, timeout: float = 30.0, deadline: float | None = None,
) -> list[RunResult]:
    """The runs of ``sit`` for these seeds (random walk or PCT), in order, as many as end by
    ``deadline``: how the hardened reference fares on the schedules that found a race in the
    plain one."""
    pool = DriverPool()
    runs: list[RunResult] = []
    try:
        for s in seeds:
            if stopping() or (deadline is not None and time.monotonic() >= deadline):
                break
            runs.append(run_schedule(peers, sit, PCT(s, pickers(sit)) if strategy == "pct" else RandomWalk(s),
                                     hardened=hardened, labels=labels, timeout=timeout, pool=pool))
        return runs
    finally:
        pool.close()


def rerun(peers: Sequence[PeerSpec], sit: Situation, picks: Sequence[str], *, strict: bool = True,
          hardened: bool = False, labels: dict[str, str] | None = None, timeout: float = 30.0,
          pool: DriverPool | None = None) -> RunResult | None:
    """The situation again under recorded picks; None when the run left them (strict)."""
    try:
        return run_schedule(peers, sit, Replay(picks, strict=strict), hardened=hardened, labels=labels,
                            timeout=timeout, pool=pool)
    except Diverged:
        return None


def shows(run: RunResult, kind: str, severity: str | None = None) -> bool:
    """Whether ``run`` still shows the finding being shrunk: its kind, and its severity when
    given (a violation must not shrink into the same kind's S-INV-9 weakness)."""
    return any(f.kind == kind and severity in (None, f.severity) for f in run.findings)


def _candidates(picks: list[str]) -> list[list[str]]:
    """Smaller schedules to try: cut the tail (the rest runs without preemption), then drop
    each run of one writer's steps (they happen later, when it next runs)."""
    out: list[list[str]] = []
    n = len(picks)
    for cut in sorted({n // 2, (3 * n) // 4, n - 1}):
        if 0 < cut < n:
            out.append(picks[:cut])
    bounds = [0] + [i for i in range(1, n) if picks[i] != picks[i - 1]] + [n]
    for a, b in itertools.pairwise(bounds):
        if a > 0:
            out.append(picks[:a] + picks[b:])
    return out


def _complete(picks: Sequence[str], steps: Sequence[Any]) -> list[str]:
    """The picks a lenient replay actually made (its tail runs on without preemption)."""
    return [s.writer for s in steps] if steps else list(picks)


def shrink_run(
    peers: Sequence[PeerSpec], result: RunResult, kind: str, *, hardened: bool, labels: dict[str, str] | None,
    timeout: float, budget_s: float, pool: DriverPool | None = None, severity: str | None = None,
) -> tuple[RunResult, int]:
    """Hypothesis-style greedy shrinking of a failing schedule: keep any smaller schedule
    (fewer context switches, then fewer steps) whose run still shows ``kind``; stop at a fixed
    point or when the budget is spent.  The result's picks replay strictly."""
    best = result
    tries = 0
    t0 = time.monotonic()
    improved = True
    while improved and time.monotonic() - t0 < budget_s:
        improved = False
        picks = best.picks
        for cand in _candidates(picks):
            if time.monotonic() - t0 >= budget_s:
                break
            tries += 1
            got = rerun(peers, best.situation, cand, strict=False, hardened=hardened, labels=labels, timeout=timeout,
                        pool=pool)
            if got is None or not shows(got, kind, severity):
                continue
            size = (switches(got.picks), len(got.steps))
            if size < (switches(best.picks), len(best.steps)):
                best, improved = got, True
                break
    return best, tries


__all__ = ["SITUATIONS", "STRATEGIES", "Found", "SuiteResult", "continue_last", "explore", "rerun", "same_seeds",
           "shrink_run", "situation", "target"]
