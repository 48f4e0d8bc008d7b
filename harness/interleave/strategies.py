"""Who runs next: the scheduler's decisions, as pure functions of what it has seen.

At each step the scheduler knows which writers are *enabled* (stopped after a store call, or
idle with an op still to start) and asks a strategy to pick one; the picked writer makes
exactly one more store call (or answers).  A schedule is the list of picks, so it is data: it
replays by picking the same writers again (``Replay``), and it shrinks by dropping picks.

- ``RandomWalk``: a seeded uniform pick at every step.
- ``PCT`` (Burckhardt et al., ASPLOS 2010), tuned to the lock protocol: writers get random
  distinct priorities and the highest enabled one runs; at ``depth - 1`` change points, drawn
  among the first ``length`` lock calls of a run (on ``.lock`` or a pid probe), the writer that
  made the call drops below every other, each later change lower still, so a preempted writer
  comes back (the A-B-A of a reclaim race; in the paper a later change ranks above an earlier
  one).  With k lock calls, a bug of depth d shows with probability >= 1 / (n * k^(d-1)) per
  run, k being ~20 instead of the ~100 store calls of a run.
- ``Explorer``: exhaustive enumeration with dynamic partial-order reduction (Flanagan and
  Godefroid, POPL 2005): after each run, for every call that conflicts with an earlier call of
  another writer (same store path) the other order is queued at that earlier step; calls on
  different paths commute and are never swapped.  Without a budget it visits every
  inequivalent interleaving of small workloads.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

DONE = "answer"  # the call of a step in which the writer answered its op instead
KILL = "kill"
"""The pick that SIGKILLs a situation's ``killable`` writer (``scheduler``): a decision of the
strategy like any other, so the kill lands wherever the schedule puts it and replays there."""


@dataclass(frozen=True)
class Step:
    """One decision and what it did: ``writer`` ran ``call`` (``openat(.lock) = 3``), while
    ``enabled`` could have run instead."""

    writer: str
    call: str
    enabled: tuple[str, ...]

    def path(self) -> str:
        """The store path(s) the call touched ("" for a pid probe or an answer)."""
        if "(" not in self.call:
            return ""
        inner = self.call.split("(", 1)[1].rsplit(")", 1)[0]
        return "" if inner in ("pid,0", "") else inner


class Strategy(Protocol):
    name: str

    def choose(self, enabled: Sequence[str], steps: Sequence[Step]) -> str: ...


@dataclass
class RandomWalk:
    seed: int
    name: str = "random"
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"random-{self.seed}")

    def choose(self, enabled: Sequence[str], steps: Sequence[Step]) -> str:
        return self.rng.choice(sorted(enabled))


def on_lock(step: Step) -> bool:
    """A call of the lock protocol: on ``.lock`` itself or the owner's pid probe."""
    return step.call.startswith("kill(") or ".lock" in step.path().split(",")


@dataclass
class PCT:
    """PCT whose change points fall on lock calls: the ``length`` candidate points are the
    first lock-protocol calls of a run (``on_lock``), not every store call, so a point lands
    where the lock races are decided (a reclaim's recheck, a create) instead of in a topic
    file's write, which no interleaving can make racy while the lock holds."""

    seed: int
    writers: Sequence[str]
    depth: int = 3
    length: int = 20  # the lock calls a change point may fall on: the first of a run (a reclaim is ~10)
    name: str = "pct"
    priority: dict[str, int] = field(init=False)
    changes: list[int] = field(init=False)
    seen: int = field(init=False, default=0)  # lock calls so far
    read: int = field(init=False, default=0)  # steps looked at so far

    def __post_init__(self) -> None:
        rng = random.Random(f"pct-{self.seed}")
        order = list(self.writers)
        rng.shuffle(order)
        self.priority = {w: self.depth + i for i, w in enumerate(order)}  # above every change
        self.changes = sorted(rng.sample(range(1, max(self.length, self.depth) + 1), self.depth - 1))

    def choose(self, enabled: Sequence[str], steps: Sequence[Step]) -> str:
        for step in steps[self.read:]:
            if on_lock(step):
                self.seen += 1
                if self.seen in self.changes:
                    self.priority[step.writer] = -1 - self.changes.index(self.seen)  # below every other
        self.read = len(steps)
        return max(enabled, key=lambda w: self.priority.get(w, -1))


class Diverged(Exception):
    """A replayed schedule asked for a writer that is not enabled: the run went elsewhere."""


@dataclass
class Replay:
    """Follow recorded picks; past their end, keep the last writer running (fewest switches)."""

    picks: Sequence[str]
    name: str = "replay"
    strict: bool = True

    def choose(self, enabled: Sequence[str], steps: Sequence[Step]) -> str:
        n = len(steps)
        if n < len(self.picks):
            want = self.picks[n]
            if want in enabled:
                return want
            if self.strict:
                raise Diverged(f"step {n}: {want} is not enabled (enabled: {', '.join(enabled)})")
        return continue_last(enabled, steps)


@dataclass
class Choices:
    """Drawn numbers as a schedule (the ``lock_protocol`` machine's Hypothesis draws): at step
    n, choice 0 lets the writer that ran last go on, k > 0 switches to the k-th other enabled
    pick (cyclically); past the list nobody is preempted.  Shrinking the list towards zeros and
    a shorter length is shrinking the schedule towards fewer context switches."""

    choices: Sequence[int]
    name: str = "hypothesis"

    def choose(self, enabled: Sequence[str], steps: Sequence[Step]) -> str:
        n = len(steps)
        c = self.choices[n] if n < len(self.choices) else 0
        first = continue_last(enabled, steps)
        others = sorted((w for w in enabled if w != first), key=_kill_last)
        return others[(c - 1) % len(others)] if c and others else first


def choices_of(steps: Sequence[Step]) -> list[int]:
    """The ``Choices`` that make a recorded run's picks again (each step knows what was
    enabled): how a schedule found by another strategy becomes a Hypothesis example."""
    out = []
    for n, s in enumerate(steps):
        first = continue_last(s.enabled, steps[:n])
        others = sorted((w for w in s.enabled if w != first), key=_kill_last)
        out.append(0 if s.writer == first or s.writer not in others else 1 + others.index(s.writer))
    return out


def continue_last(enabled: Sequence[str], steps: Sequence[Step]) -> str:
    """No preemption: the writer that ran last runs on, else the first enabled one (a kill
    only when nobody else can run: it is a decision, never a default)."""
    if steps and steps[-1].writer in enabled:
        return steps[-1].writer
    return sorted(enabled, key=_kill_last)[0]


def _kill_last(pick: str) -> tuple[bool, str]:
    return pick == KILL, pick


def conflict(a: Step, b: Step) -> bool:
    """Two calls that do not commute: different writers on one store path."""
    pa, pb = a.path(), b.path()
    if a.writer == b.writer or not pa or not pb:
        return False
    return bool(set(pa.split(",")) & set(pb.split(",")))


@dataclass
class Explorer:
    """Exhaustive DPOR: hand out prefixes to run; learn backtrack points from each run."""

    name: str = "exhaustive"
    todo: list[tuple[str, ...]] = field(default_factory=lambda: [()])
    seen: set[tuple[str, ...]] = field(default_factory=set)
    runs: int = 0

    def next_prefix(self) -> tuple[str, ...] | None:
        """The queued prefix with the fewest context switches, then the shortest: every one is
        visited in the end; races of few preemptions (most real ones) come first."""
        while self.todo:
            best = min(range(len(self.todo)), key=lambda i: (switches(self.todo[i]), len(self.todo[i])))
            prefix = self.todo.pop(best)
            if prefix not in self.seen:
                self.seen.add(prefix)
                return prefix
        return None

    def learn(self, steps: Sequence[Step]) -> None:
        """Queue, for each call, the other order of its latest conflict with another writer."""
        self.runs += 1
        picks = tuple(s.writer for s in steps)
        for j, b in enumerate(steps):
            for i in range(j - 1, -1, -1):
                a = steps[i]
                if conflict(a, b):
                    alt = [b.writer] if b.writer in a.enabled else [w for w in a.enabled if w != a.writer]
                    for w in alt:
                        prefix = (*picks[:i], w)
                        if prefix not in self.seen:
                            self.todo.append(prefix)
                    break

    @property
    def exhausted(self) -> bool:
        return not self.todo


def switches(picks: Sequence[str]) -> int:
    """Context switches of a schedule: how often the running writer changes."""
    return sum(1 for a, b in itertools.pairwise(picks) if a != b)
