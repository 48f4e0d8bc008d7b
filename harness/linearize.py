"""A P-compositional Wing–Gong–Lowe linearizability checker, generic over a ``Model``.

As Porcupine keeps ``model.go`` apart from ``checker.go``, this module knows histories and
search, never the store: a ``Model`` says what a state is (``init``, ``key``), what an op
does to it and whether the op's recorded answer agrees (``step``), which sub-histories are
independent (``partition``) and how to put an op or a state in words (``describe_*``).  The
store's model is plugged in by ``harness.store_checker``.

A history is split into the model's independent parts and each part searched alone.  The
search is depth-first over "which pending op takes effect next", memoised on (ops done, model
state), and bounded in time: running out of budget answers ``unknown``, never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from .history import Op

LINEARIZABLE = "linearizable"
NOT_LINEARIZABLE = "not linearizable"
UNKNOWN = "unknown"
WHOLE = "*"
"""The key of the one part when a history is checked whole."""
INF = float("inf")
SHOWN = 12
"""Failing ops a summary lists."""

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

    def key(self, state: S) -> Hashable:
        """What of a state any later answer can depend on: states with one key are one state
        to the search (its memo and its step cache), so the key must determine every later
        answer and the keys of the states that follow."""
        ...

    def read_only(self, op: Op) -> bool:
        """Whether ``op``, given its recorded answer, leaves every state it is possible in
        unchanged (a lookup that found nothing, a refusal).  Such an op, once possible, is
        taken at once: moving it earlier changes no other op's state (partial-order
        reduction).  ``False`` is always safe."""
        ...

    # Optional: ``signature(op) -> Hashable``, what of an op and its recorded answer ``step``
    # reads, given the state's ``key`` (its name, flags and result kind, not its payload): ops
    # with one signature step alike from states with one key, so the search steps each
    # (state, signature) once, not each (state, op) — a long history repeats a few signatures.

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
    parts: int = 1
    frontier: list[str] = field(default_factory=list)
    """When not linearizable: the open ops none of which could come next after the longest
    linearizable prefix (Porcupine's "could not linearize" point) …"""
    stuck_after: int = 0
    stuck_state: str | None = None
    """… how many ops that prefix holds, and the state after it."""

    def summary(self) -> str:
        text = f"{self.status} ({self.explored} states, {self.seconds:.2f} s"
        text += f", partitioned by topic into {self.parts} parts)" if self.partitioned else ", whole store)"
        if self.failing_ops:
            text += f"; smallest failing sub-history ({len(self.failing_ops)} ops):"
            for line in self.failing_lines[:SHOWN]:
                text += f"\n  {line}"
            if len(self.failing_lines) > SHOWN:
                text += f"\n  … {len(self.failing_lines) - SHOWN} more"
        if self.frontier:
            text += f"\nstuck after {self.stuck_after} ops in state {self.stuck_state}; none of these can come next:"
            for line in self.frontier[:SHOWN]:
                text += f"\n  {line}"
        return text


class _OutOfBudget(Exception):
    pass


class _Interner(Generic[S]):
    """Model states as small ints: states with one ``Model.key`` share one id (the first such
    state seen stands for them), so the memo and the step cache key on ints."""

    def __init__(self, model: Model[S]) -> None:
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


def _chains(ops: list[Op], indices: list[int]) -> list[list[int]]:
    """The definite ops as chains that any linearization keeps in order: one per process
    whose ops follow one another in real time (each returned before the next was invoked),
    every op of a process that overlaps itself a chain of its own."""
    by_process: dict[str, list[int]] = {}
    for i in sorted(indices, key=lambda i: ops[i].start):
        by_process.setdefault(ops[i].process, []).append(i)
    chains: list[list[int]] = []
    for chain in by_process.values():
        if all((ops[chain[k]].end or 0) < ops[chain[k + 1]].start for k in range(len(chain) - 1)):
            chains.append(chain)
        else:
            chains.extend([i] for i in chain)
    return chains


@dataclass
class _Search(Generic[S]):
    """Depth-first Wing–Gong–Lowe search with Porcupine's cache and Lowe's just-in-time rule.

    - the ops already linearized are a prefix of each process's chain (real time orders a
      process's own ops), so a node is a pointer per chain, plus the ``info`` ops taken;
    - cache: a (linearized set, state key) pair reached twice is explored once — orders of
      commuting ops that end in one state are one branch;
    - just in time: the next op is one invoked before the earliest return among the open
      ops, tried earliest return first; definite (``ok``) ops before indeterminate
      (``info``) ones, which never have to take effect and have no return deadline (as
      Jepsen treats ``info``);
    - a possible read-only op is taken at once, alone (``Model.read_only``);
    - steps are memoised on (state, op): the model is pure and its states repeat.
    """

    ops: list[Op]
    model: Model[S]
    deadline: float
    tick: Callable[[int], None] | None = None  # told of every 1024 states explored (progress)
    explored: int = 0
    deepest: S | None = None  # the state after the longest linearized prefix seen
    depth: int = 0  # ops in that prefix
    _chains: list[list[int]] = field(default_factory=list)
    _maybe: list[int] = field(default_factory=list)
    _deepest_at: tuple[list[int], int] = field(default_factory=lambda: ([], 0))

    def run(self) -> bool:
        ops, model = self.ops, self.model
        definite = [i for i, op in enumerate(ops) if op.type == "ok"]
        maybe = sorted((i for i, op in enumerate(ops) if op.type != "ok"), key=lambda i: ops[i].start)
        need = len(definite)
        chains = self._chains = _chains(ops, definite)
        self._maybe = maybe
        self._deepest_at = ([0] * len(chains), 0)
        starts = [op.start for op in ops]
        ends = [INF if op.end is None else float(op.end) for op in ops]
        inert = [op.type == "ok" and model.read_only(op) for op in ops]
        pointers = [0] * len(chains)
        chain_ids = range(len(chains))
        base = max((len(chain) for chain in chains), default=0) + 1
        weight = [base**c for c in range(len(chains))]  # pointers as one number: sum of pointer × weight
        position = 0
        taken = 0  # bit k: maybe[k] linearized
        interner: _Interner[S] = _Interner(model)
        # (state id, op or its signature) -> next state id, or -1
        signature: Callable[[Op], Hashable] | None = getattr(model, "signature", None)
        sigs: list[Hashable] = [signature(op) for op in ops] if signature is not None else list(range(len(ops)))
        steps: dict[tuple[int, Hashable], int] = {}
        seen: set[tuple[int, int, int]] = set()

        def step(sid: int, i: int) -> int:
            nxt = steps.get((sid, sigs[i]))
            if nxt is None:
                ok, state = model.step(interner.states[sid], ops[i])
                nxt = interner.id(state) if ok else -1
                steps[(sid, sigs[i])] = nxt
            return nxt

        # each chain's next op, its invocation and its return (INF once the chain is done)
        head = [chain[0] for chain in chains]
        head_start = [float(starts[chain[0]]) for chain in chains]
        head_end = [ends[chain[0]] for chain in chains]

        def advance(c: int, by: int) -> None:
            pointers[c] += by
            if pointers[c] < len(chains[c]):
                i = head[c] = chains[c][pointers[c]]
                head_start[c], head_end[c] = float(starts[i]), ends[i]
            else:
                head_start[c] = head_end[c] = INF

        def candidates(sid: int) -> list[tuple[int, int]]:
            """(op, its chain or -1 - its place in ``maybe``) that may take effect next."""
            horizon = min(head_end, default=INF)
            window = sorted((c for c in chain_ids if head_start[c] <= horizon), key=head_end.__getitem__)
            for c in window:
                i = head[c]
                if inert[i] and step(sid, i) == sid:
                    return [(i, c)]  # if any completion exists, one takes this op first
            out = [(head[c], c) for c in window]
            for k, i in enumerate(maybe):
                if starts[i] > horizon:
                    break
                if not taken >> k & 1:
                    out.append((i, -1 - k))
            return out

        root = interner.id(model.init())
        self.deepest, self.depth = interner.states[root], 0
        if need == 0:
            return True
        # a frame: state id, ok ops done, what it added (chain, -1 - maybe index, None), next
        stack: list[tuple[int, int, int | None, Iterator[tuple[int, int]]]] = [
            (root, 0, None, iter(candidates(root)))
        ]
        while stack:
            sid, done_ok, _, it = stack[-1]
            for i, where in it:
                self.explored += 1
                if self.explored & 1023 == 0:
                    if time.monotonic() > self.deadline:
                        raise _OutOfBudget
                    if self.tick is not None:
                        self.tick(1024)
                nxt = step(sid, i)
                if nxt < 0:
                    continue
                if where >= 0:
                    advance(where, 1)
                    position += weight[where]
                else:
                    taken |= 1 << (-1 - where)
                key = (position, taken, nxt)
                if key in seen:
                    if where >= 0:
                        advance(where, -1)
                        position -= weight[where]
                    else:
                        taken &= ~(1 << (-1 - where))
                    continue
                seen.add(key)
                now_ok = done_ok + (where >= 0)
                if now_ok == need:
                    return True
                stack.append((nxt, now_ok, where, iter(candidates(nxt))))
                if len(stack) - 1 > self.depth:
                    self.depth, self.deepest = len(stack) - 1, interner.states[nxt]
                    self._deepest_at = (list(pointers), taken)
                break
            else:
                _, _, added, _ = stack.pop()
                if added is not None and added >= 0:
                    advance(added, -1)
                    position -= weight[added]
                elif added is not None:
                    taken &= ~(1 << (-1 - added))
        return False

    def frontier(self) -> list[Op]:
        """The ops none of which could take effect after the longest linearizable prefix:
        the open ops invoked before the earliest return among them."""
        done = set(self.deepest_ops())
        pointers, _ = self._deepest_at
        heads = [chain[pointers[c]] for c, chain in enumerate(self._chains) if pointers[c] < len(chain)]
        horizon = min((self.ops[i].end or 0 for i in heads), default=0)
        return [self.ops[i] for i in sorted(heads, key=lambda i: self.ops[i].start)
                if i not in done and self.ops[i].start <= horizon]

    def deepest_ops(self) -> list[int]:
        """The ops of the longest linearizable prefix seen (indices into ``ops``)."""
        pointers, taken = self._deepest_at
        done = [i for c, chain in enumerate(self._chains) for i in chain[: pointers[c]]]
        return sorted(done + [i for k, i in enumerate(self._maybe) if taken >> k & 1])


def check(
    ops: list[Op],
    model: Model[S],
    *,
    budget_s: float = 10.0,
    partition: bool = True,
    shrink: bool = True,
    tick: Callable[[int], None] | None = None,
) -> LinearizabilityVerdict:
    """Is the history linearizable against ``model``?  ``fail`` ops had no effect.

    The verdict is decided within ``budget_s``; a failing history is then shrunk for the
    report within as much again (the verdict stands whatever the shrinking reaches).
    ``tick(n)``: ``n`` more states explored (a progress line while a long search runs).
    """
    started = time.monotonic()
    deadline = started + budget_s
    live = [op for op in ops if op.type != "fail"]
    parts = model.partition(live) if partition else None
    verdict = LinearizabilityVerdict(LINEARIZABLE, parts is not None, parts=len(parts or [live]))
    for part in sorted(parts or [Part(WHOLE, live, model)], key=lambda p: p.key):
        search = _Search(part.ops, part.model, deadline, tick)
        try:
            ok = search.run()
        except _OutOfBudget:
            verdict.status = UNKNOWN
            verdict.explored += search.explored
            break
        finally:
            if tick is not None:
                tick(search.explored % 1024)  # the part's states not yet told
        verdict.explored += search.explored
        if not ok:
            verdict.status = NOT_LINEARIZABLE
            verdict.failing_partition = part.key
            verdict.frontier = [f"{o.process} {o.type} {part.model.describe_op(o)}" for o in search.frontier()]
            verdict.stuck_after = search.depth
            verdict.stuck_state = None if search.deepest is None else part.model.describe_state(search.deepest)
            verdict.failing_state = verdict.stuck_state
            failing = part.ops
            if shrink:
                failing, shrunk = _shrink(search, time.monotonic() + budget_s)
                if shrunk:
                    verdict.failing_state = _deepest(failing, part.model, time.monotonic() + budget_s)
            verdict.failing_ops = failing
            verdict.failing_lines = [f"{o.process} {o.type} {part.model.describe_op(o)}" for o in failing]
            break
    verdict.seconds = time.monotonic() - started
    return verdict


def prefix(ops: list[Op], t: int) -> list[Op]:
    """The ops invoked before ``t``, those still running at ``t`` as ``info``.

    If this is not linearizable neither is ``ops``: in any linearization of ``ops`` every op
    that returned before ``t`` precedes every op invoked after it, so cutting there leaves a
    linearization of the prefix in which the running ops may or may not have taken effect.
    """
    out = []
    for op in ops:
        if op.start >= t:
            continue
        if op.type == "ok" and op.end is not None and op.end >= t:
            op = Op(op.id, op.process, op.op, op.args, op.start, None, "info", op.result)
        out.append(op)
    return out


def _shrink(search: _Search[S], deadline: float) -> tuple[list[Op], bool]:
    """A smaller failing sub-history, and whether the shrinking finished in time.

    First the prefix up to just past where the search got stuck (``prefix``, sound), then
    delta debugging: chunks of halving size dropped while the rest stays non-linearizable,
    never the stuck ops themselves (dropping context until any lone op fails explains
    nothing).
    """
    model = search.model
    current = list(search.ops)
    stuck = search.frontier()
    keep = {op.id for op in stuck}

    def still_bad(trial: list[Op]) -> bool:
        return keep <= {op.id for op in trial} and not _Search(trial, model, deadline).run()

    try:
        if stuck:
            cut = max(op.end or op.start for op in stuck) + 1
            trial = prefix(current, cut)
            if len(trial) < len(current) and still_bad(trial):
                current = trial
        chunk = max(1, len(current) // 2)
        while True:
            i = 0
            while i < len(current):
                if time.monotonic() > deadline:
                    return current, False
                trial = current[:i] + current[i + chunk:]
                if still_bad(trial):
                    current = trial
                else:
                    i += chunk
            if chunk == 1:
                return current, True
            chunk = max(1, chunk // 2)
    except _OutOfBudget:
        return current, False


def _deepest(ops: list[Op], model: Model[S], deadline: float) -> str | None:
    """The model state after the longest linearizable prefix of a failing history, in words
    (``None`` when the budget ran out first)."""
    search = _Search(ops, model, deadline)
    try:
        search.run()
    except _OutOfBudget:
        return None
    return None if search.deepest is None else model.describe_state(search.deepest)
