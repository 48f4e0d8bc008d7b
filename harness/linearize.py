"""A P-compositional Wing–Gong–Lowe linearizability checker over ``harness.oracles.kind_model``.

Ops on independent topics commute (``model.independent_topics``), so a history is split by
topic and each part searched alone; otherwise the whole store is one part.  The search is
depth-first over "which pending op takes effect next", memoised on (ops done, model state),
and bounded in time: running out of budget answers ``unknown``, never a pass.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from .history import Op
from .oracles import kind_model as model

LINEARIZABLE = "linearizable"
NOT_LINEARIZABLE = "not linearizable"
UNKNOWN = "unknown"
INF = float("inf")


@dataclass
class Verdict:
    status: str
    partitioned: bool = False
    failing_partition: str | None = None
    failing_ops: list[Op] = field(default_factory=list)
    explored: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        text = f"{self.status} ({self.explored} states, {self.seconds:.2f} s"
        text += ", partitioned by topic)" if self.partitioned else ", whole store)"
        if self.failing_ops:
            text += f"; smallest failing sub-history ({len(self.failing_ops)} ops):"
            for op in self.failing_ops:
                text += f"\n  {op.process} {op.type} {op.op} {op.args} -> {op.result}"
        return text


class _OutOfBudget(Exception):
    pass


def _expected(op: Op, partitioned: bool) -> str | None:
    if op.type != "ok":
        return None
    kind = model.result_kind(op.result)
    if partitioned and kind == "no_index":
        return "not_found"  # whether MEMORY.md exists depends on other topics' writes
    return kind


@dataclass
class _Search:
    ops: list[Op]
    partitioned: bool
    deadline: float
    explored: int = 0

    def run(self, init: model.State) -> bool:
        ops = self.ops
        n = len(ops)
        starts = [op.start for op in ops]
        ends = [INF if op.end is None else op.end for op in ops]
        expected = [_expected(op, self.partitioned) for op in ops]
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

        seen: set[tuple[int, model.State]] = set()
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
                nxt, kind = model.apply(state, ops[i].op, ops[i].args, bodies=False)
                if self.partitioned and kind == "no_index":
                    kind = "not_found"
                if expected[i] is not None and kind != expected[i]:
                    continue
                key = (mask | 1 << i, nxt)
                if key in seen:
                    continue
                seen.add(key)
                nlo = first_open(key[0], lo)
                stack.append((key[0], nxt, iter(candidates(key[0], nlo)), nlo))
                advanced = True
                break
            if not advanced:
                stack.pop()
        return False


def _partition(ops: list[Op]) -> tuple[dict[str, list[Op]], bool]:
    topics = sorted({str(op.args.get("topic", "")) for op in ops})
    if not model.independent_topics(topics):
        return {"*": ops}, False
    parts: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        parts[model.keys_of(op.op, op.args)].append(op)
    return dict(parts), True


def check(
    ops: list[Op],
    *,
    budget_s: float = 10.0,
    init: model.State | None = None,
    partition: bool = True,
    shrink: bool = True,
) -> Verdict:
    """Is the history linearizable against the model?  ``fail`` ops had no effect."""
    started = time.monotonic()
    deadline = started + budget_s
    live = [op for op in ops if op.type != "fail"]
    parts, partitioned = _partition(live) if partition else ({"*": live}, False)
    verdict = Verdict(LINEARIZABLE, partitioned)
    base = init if init is not None else model.State()
    for key, part in sorted(parts.items()):
        search = _Search(part, partitioned, deadline)
        try:
            ok = search.run(base)
        except _OutOfBudget:
            verdict.status = UNKNOWN
            verdict.explored += search.explored
            break
        verdict.explored += search.explored
        if not ok:
            verdict.status = NOT_LINEARIZABLE
            verdict.failing_partition = key
            verdict.failing_ops = _shrink(part, partitioned, base, deadline) if shrink else part
            break
    verdict.seconds = time.monotonic() - started
    return verdict


def _shrink(ops: list[Op], partitioned: bool, init: model.State, deadline: float) -> list[Op]:
    """Drop ops one at a time while the rest stays non-linearizable (greedy, time-bounded)."""
    current = list(ops)
    i = 0
    while i < len(current) and time.monotonic() < deadline:
        trial = current[:i] + current[i + 1 :]
        try:
            still_bad = not _Search(trial, partitioned, deadline).run(init)
        except _OutOfBudget:
            break
        if still_bad:
            current = trial
        else:
            i += 1
    return current
