"""The checker's fast path: one likely linearization walked at a memo lookup an op (issue 22).

``linearize``'s depth-first search almost never backtracks on a recorded history, yet building
each node's candidate list and memo entry cost it about 25 µs an op: 12.7 s for a history of
4 x 100,000 ops, more than its 10 s budget.  The ``Dive`` walks the path that search would
likely take — the definite ops in the order they returned, each taken when its answer fits
the state — and when an op does not fit, takes first another open op invoked before it
returned, or an ``info`` op, that does.  Stuck, it hands the ops it took to the search, which
backtracks from the deepest of them and hands every new node back to the dive: the search's
completeness, the dive's speed wherever no choice is needed.

Every op the dive takes is invoked before the earliest return among the open definite ops
(the just-in-time rule of the search), so a walk that takes every definite op is a
linearization.  The step memo (``Steps``) and the state interning are shared with the search.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from .history import Op

INF = float("inf")
S = TypeVar("S")


class Stepping(Protocol[S]):
    """What of a ``linearize.Model`` the walk uses."""

    def step(self, state: S, op: Op) -> tuple[bool, S]: ...

    def key(self, state: S) -> Hashable: ...


class Interner(Generic[S]):
    """Model states as small ints: states with one ``Model.key`` share one id (the first such
    state seen stands for them), so the memo and the step cache key on ints."""

    def __init__(self, model: Stepping[S]) -> None:
        self.model = model
        self.states: list[S] = []
        self._ids: dict[Hashable, int] = {}

    def id(self, state: S) -> int:
        key = self.model.key(state)
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self.states)
            self.states.append(state)
        return sid


class Steps(Generic[S]):
    """``step(state id, op index)``: the next state's id, or -1 when the op's recorded answer
    is not the model's.  Memoised on (state, op signature) when the model offers
    ``signature`` and ``by_signature`` (on (state, op) otherwise), keyed by one int: a long
    history asks a handful of distinct steps hundreds of thousands of times."""

    def __init__(self, ops: list[Op], model: Stepping[S], interner: Interner[S], by_signature: bool) -> None:
        signature: Callable[[Op], Hashable] | None = getattr(model, "signature", None) if by_signature else None
        if signature is None:
            self.group = list(range(len(ops)))
        else:
            ids: dict[Hashable, int] = {}
            self.group = [ids.setdefault(signature(op), len(ids)) for op in ops]
        self.width = max(self.group, default=0) + 1
        self.memo: dict[int, int] = {}
        self.ops, self.model, self.interner = ops, model, interner

    def step(self, sid: int, i: int) -> int:
        key = sid * self.width + self.group[i]
        nxt = self.memo.get(key)
        if nxt is None:
            ok, state = self.model.step(self.interner.states[sid], self.ops[i])
            nxt = self.memo[key] = self.interner.id(state) if ok else -1
        return nxt


def chains(ops: list[Op], indices: list[int]) -> list[list[int]]:
    """The definite ops as chains that any linearization keeps in order: one per process
    whose ops follow one another in real time (each returned before the next was invoked),
    every op of a process that overlaps itself a chain of its own."""
    by_process: dict[str, list[int]] = {}
    starts = [op.start for op in ops]
    for i in sorted(indices, key=starts.__getitem__):
        by_process.setdefault(ops[i].process, []).append(i)
    out: list[list[int]] = []
    for chain in by_process.values():
        ends = [ops[i].end or 0 for i in chain]
        if all(e < starts[i] for e, i in zip(ends, chain[1:], strict=False)):
            out.append(chain)
        else:
            out.extend([i] for i in chain)
    return out


class Dive:
    """One walk at a time from a node of the search (``resume``) or from the start.

    A node is which ops are taken: each chain's prefix (``pointers``) and the ``info`` ops
    taken (``used``); the walk reads it as ``pos``, the first definite op in return order not
    yet taken, and ``early``, the ones after it taken before their turn.
    """

    def __init__(self, ops: list[Op], definite: list[int], steps: Steps[Any]) -> None:
        self.ops, self.definite, self.steps = ops, definite, steps
        self.ends = [INF if op.end is None else float(op.end) for op in ops]
        self.order = sorted(definite, key=self.ends.__getitem__)
        self.maybe = sorted((i for i, op in enumerate(ops) if op.type != "ok"), key=lambda i: ops[i].start)
        self.pos = 0
        self.early: set[int] = set()
        self.used: set[int] = set()
        self._chains: list[list[int]] | None = None
        self._pointers: list[int] | None = None
        self._rank: list[int] | None = None

    def chains(self) -> list[list[int]]:
        """``chains`` of the definite ops, made at the first need (the search's too)."""
        if self._chains is None:
            self._chains = chains(self.ops, self.definite)
        return self._chains

    def _ranks(self) -> list[int]:
        if self._rank is None:
            self._rank = [0] * len(self.ops)
            for k, i in enumerate(self.order):
                self._rank[i] = k
        return self._rank

    def resume(self, pointers: list[int], used: set[int]) -> None:
        """Walk next from the search's node: each chain's first ``pointers`` ops and the
        ``info`` ops ``used`` taken."""
        rank, chains_ = self._ranks(), self.chains()
        heads = [rank[chain[p]] for chain, p in zip(chains_, pointers, strict=True) if p < len(chain)]
        self.pos = min(heads, default=len(self.order))
        self.early = set()
        for chain, p in zip(chains_, pointers, strict=True):
            p -= 1
            while p >= 0 and rank[chain[p]] > self.pos:
                self.early.add(chain[p])
                p -= 1
        self.used = set(used)
        self._pointers = list(pointers)

    def walk(
        self, sid: int, trail: list[int], states: list[int], n: int, count: Callable[[], None]
    ) -> tuple[bool, int]:
        """From state ``sid``, take ops while one fits, each appended to ``trail`` and the
        state after it to ``states``; whether every definite op is taken, and ``n`` plus the
        ops taken (``count()`` at every multiple of 1024: the search's budget and progress)."""
        order, early = self.order, self.early
        memo, group, width, step = self.steps.memo, self.steps.group, self.steps.width, self.steps.step
        pos, end = self.pos, len(order)
        while pos < end:
            i = order[pos]
            if i in early:
                pos += 1
                continue
            nxt = memo.get(sid * width + group[i])
            if nxt is None:
                nxt = step(sid, i)
            took = i
            if nxt < 0:  # another op first, if one fits
                nxt, took = self._other(sid, i, pos)
                if nxt < 0:
                    self.pos = pos
                    return False, n
            trail.append(took)
            states.append(nxt)
            sid = nxt
            n += 1
            if not n & 1023:
                count()
            if took == i:
                pos += 1
        self.pos = pos
        return True, n

    def _other(self, sid: int, i: int, pos: int) -> tuple[int, int]:
        """With ``i`` (turn ``pos``) the open definite op with the earliest return and not
        fitting ``sid``: another op invoked before ``i`` returned that fits — an open
        definite one (each chain's next: earliest return first), else an ``info`` one
        (earliest invoked first) — taken; (next state, op), or (-1, -1) if none."""
        ops, rank, chains_, early, step = self.ops, self._ranks(), self.chains(), self.early, self.steps.step
        if self._pointers is None:
            self._pointers = [0] * len(chains_)
        pointers, horizon = self._pointers, self.ends[i]
        heads = []
        for c, chain in enumerate(chains_):
            p = pointers[c]
            while p < len(chain) and (rank[chain[p]] < pos or chain[p] in early):
                p += 1
            pointers[c] = p
            if p < len(chain) and chain[p] != i and ops[chain[p]].start <= horizon:
                heads.append(chain[p])
        for j in sorted(heads, key=rank.__getitem__):
            nxt = step(sid, j)
            if nxt >= 0:
                early.add(j)
                return nxt, j
        for j in self.maybe:
            if ops[j].start > horizon:
                break
            if j not in self.used:
                nxt = step(sid, j)
                if nxt >= 0:
                    self.used.add(j)
                    return nxt, j
        return -1, -1
