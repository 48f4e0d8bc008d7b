"""A P-compositional Wing–Gong–Lowe linearizability checker, generic over a ``Model``.

As Porcupine keeps ``model.go`` apart from ``checker.go``, this module knows histories and
search, never the store: a ``Model`` says what a state is (``init``, ``equal``), what an op
does to it and whether the op's recorded answer agrees (``step``), which sub-histories are
independent (``partition``) and how to put an op or a state in words (``describe_*``).  The
store's model is plugged in by ``harness.store_checker``.

A history is split into the model's independent parts and each part searched alone.  The
search is depth-first over "which pending op takes effect next", memoised on (ops done, model
state), and bounded in time: running out of budget answers ``unknown``, never a pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from .history import Op

LINEARIZABLE = "linearizable"
NOT_LINEARIZABLE = "not linearizable"
UNKNOWN = "unknown"
WHOLE = "*"
"""The key of the one part when a history is checked whole."""
INF = float("inf")

S = TypeVar("S")


class Model(Protocol[S]):
    """A sequential specification: the checker asks it everything about ops and states."""

    def init(self) -> S:
        """The state before the first op."""
        ...

    def step(self, state: S, op: Op) -> tuple[bool, S]:
        """Apply ``op``: whether its recorded answer is what the model answers, and the next
        state.  An op with no recorded answer (``info``) is always accepted."""
        ...

    def equal(self, a: S, b: S) -> bool:
        """Whether two states are the same (the search never revisits a state)."""
        ...

    def partition(self, ops: list[Op]) -> list[Part[S]] | None:
        """Independent sub-histories, each with the model that judges it alone; ``None``
        when the ops do not split (the history is then checked whole)."""
        ...

    def describe_op(self, op: Op) -> str:
        """An op and its recorded answer, in words."""
        ...

    def describe_state(self, state: S) -> str:
        """A state, in words."""
        ...


@dataclass
class Part(Generic[S]):
    """One independent sub-history and the model that judges it alone (possibly coarser
    than the whole history's model: it cannot see what the other parts did)."""

    key: str
    ops: list[Op]
    model: Model[S]


@dataclass
class LinearizabilityVerdict:
    """The answer of ``check``: ``status`` and, when not linearizable, the smallest failing
    sub-history found (``failing_ops``, in words in ``failing_lines``) and the state of the
    longest linearizable prefix of it (``failing_state``)."""

    status: str
    partitioned: bool = False
    failing_partition: str | None = None
    failing_ops: list[Op] = field(default_factory=list)
    failing_lines: list[str] = field(default_factory=list)
    failing_state: str | None = None
    explored: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        text = f"{self.status} ({self.explored} states, {self.seconds:.2f} s"
        text += ", partitioned by topic)" if self.partitioned else ", whole store)"
        if self.failing_ops:
            text += f"; smallest failing sub-history ({len(self.failing_ops)} ops):"
            for line in self.failing_lines:
                text += f"\n  {line}"
        return text


class _OutOfBudget(Exception):
    pass


@dataclass
class _Search(Generic[S]):
    ops: list[Op]
    model: Model[S]
    deadline: float
    explored: int = 0
    deepest: S | None = None  # the state after the longest linearized prefix seen

    def run(self) -> bool:
        ops, model = self.ops, self.model
        n = len(ops)
        starts = [op.start for op in ops]
        ends = [INF if op.end is None else op.end for op in ops]
        required = sum(1 << i for i, op in enumerate(ops) if op.type == "ok")
        order = sorted(range(n), key=lambda i: starts[i])

        def first_open(mask: int, lo: int) -> int:
            while lo < n and mask >> order[lo] & 1:
                lo += 1
            return lo

        def candidates(mask: int, lo: int) -> list[int]:
            """Ops that may take effect next: invoked before every open op has returned.

            Scanning in start order from the first open op, the horizon (earliest open end)
            can only come from ops that start before it, so the scan stops there.
            """
            horizon, window = INF, []
            for pos in range(lo, n):
                i = order[pos]
                if starts[i] >= horizon:
                    break
                if mask >> i & 1:
                    continue
                window.append(i)
                horizon = min(horizon, ends[i])
            return [i for i in window if starts[i] < horizon]

        init = model.init()
        depth, self.deepest = 1, init
        seen: dict[int, list[S]] = {}  # ops done -> the states reached with them
        stack = [(0, init, iter(candidates(0, 0)), 0)]
        while stack:
            mask, state, it, lo = stack[-1]
            if mask & required == required:
                return True
            advanced = False
            for i in it:
                self.explored += 1
                if self.explored % 2048 == 0 and time.monotonic() > self.deadline:
                    raise _OutOfBudget
                ok, nxt = model.step(state, ops[i])
                if not ok:
                    continue
                done = mask | 1 << i
                reached = seen.setdefault(done, [])
                if any(model.equal(nxt, s) for s in reached):
                    continue
                reached.append(nxt)
                nlo = first_open(done, lo)
                stack.append((done, nxt, iter(candidates(done, nlo)), nlo))
                if len(stack) > depth:
                    depth, self.deepest = len(stack), nxt
                advanced = True
                break
            if not advanced:
                stack.pop()
        return False


def check(
    ops: list[Op],
    model: Model[S],
    *,
    budget_s: float = 10.0,
    partition: bool = True,
    shrink: bool = True,
) -> LinearizabilityVerdict:
    """Is the history linearizable against ``model``?  ``fail`` ops had no effect."""
    started = time.monotonic()
    deadline = started + budget_s
    live = [op for op in ops if op.type != "fail"]
    parts = model.partition(live) if partition else None
    verdict = LinearizabilityVerdict(LINEARIZABLE, parts is not None)
    for part in sorted(parts or [Part(WHOLE, live, model)], key=lambda p: p.key):
        search = _Search(part.ops, part.model, deadline)
        try:
            ok = search.run()
        except _OutOfBudget:
            verdict.status = UNKNOWN
            verdict.explored += search.explored
            break
        verdict.explored += search.explored
        if not ok:
            verdict.status = NOT_LINEARIZABLE
            verdict.failing_partition = part.key
            failing = _shrink(part.ops, part.model, deadline) if shrink else part.ops
            verdict.failing_ops = failing
            verdict.failing_lines = [f"{o.process} {o.type} {part.model.describe_op(o)}" for o in failing]
            verdict.failing_state = _deepest(failing, part.model, deadline)
            break
    verdict.seconds = time.monotonic() - started
    return verdict


def _shrink(ops: list[Op], model: Model[S], deadline: float) -> list[Op]:
    """Drop ops one at a time while the rest stays non-linearizable (greedy, time-bounded)."""
    current = list(ops)
    i = 0
    while i < len(current) and time.monotonic() < deadline:
        trial = current[:i] + current[i + 1 :]
        try:
            still_bad = not _Search(trial, model, deadline).run()
        except _OutOfBudget:
            break
        if still_bad:
            current = trial
        else:
            i += 1
    return current


def _deepest(ops: list[Op], model: Model[S], deadline: float) -> str | None:
    """The model state after the longest linearizable prefix of a failing history, in words
    (``None`` when the budget ran out first)."""
    search = _Search(ops, model, deadline)
    try:
        search.run()
    except _OutOfBudget:
        return None
    return None if search.deepest is None else model.describe_state(search.deepest)
