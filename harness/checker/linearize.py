"""A P-compositional Wing–Gong–Lowe linearizability checker, generic over a ``Model``.

As Porcupine keeps ``model.go`` apart from ``checker.go``, this module knows histories and
search, never the store: a ``Model`` says what a state is (``init``, ``key``), what an op
does to it and whether the op's recorded answer agrees (``step``), which sub-histories are
independent (``partition``) and how to put an op or a state in words (``describe_*``).  The
store's model is plugged in by ``harness.checker.store_model``.

A history is split into the model's independent parts and each part searched alone.  The
search is depth-first over "which pending op takes effect next", memoised on (ops done, model
state), and bounded in time: running out of budget answers ``unknown``, never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from .dive import Dive, Interner, Steps, chains
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
    searched: int = 0
    """Parts whose one-path dive got stuck, so the full search decided them (``_Search``)."""
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


class _Deep(Exception):
    """The shallow search backtracked into a walk's steps that are not nodes."""


KEEP = 256
"""The last ops of each walk that are nodes of the shallow search: on a real 4 x 35,000
interop history no backtrack went deeper than 32 ops (8 was too few in 3 of its 6 parts)."""
_BULK = -(1 << 62)
"""The ``added`` of a frame that stands for a walk's ops before its last ``KEEP``."""


@dataclass
class _Walked:
    """The ops a walk took, in order, and the state (id) after each."""

    ops: list[int] = field(default_factory=list)
    states: list[int] = field(default_factory=list)


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
    - steps are memoised on (state, op signature): the model is pure and its states repeat;
    - ``fast``: first one likely path walked alone (``dive.Dive``), the search only if the
      walk gets stuck, from where it got stuck (``_search``); without it (the plain search,
      which the property tests compare it with) no walk, and steps memoised per op, not per
      signature.
    """

    ops: list[Op]
    model: Model[S]
    deadline: float
    tick: Callable[[int], None] | None = None  # told of every 1024 states explored (progress)
    fast: bool = True
    explored: int = 0
    deepest: S | None = None  # the state after the longest linearized prefix seen
    depth: int = 0  # ops in that prefix
    dived: int = 0  # ops the dive linearized before it finished or got stuck
    searched: bool = False  # the full search ran
    deep: bool = False  # the shallow search backtracked too deep: every op a node
    _chains: list[list[int]] = field(default_factory=list)
    _maybe: list[int] = field(default_factory=list)
    _deepest_at: tuple[list[int], int] = field(default_factory=lambda: ([], 0))

    def run(self) -> bool:
        ops = self.ops
        definite = [i for i, op in enumerate(ops) if op.type == "ok"]
        interner: Interner[S] = Interner(self.model)
        steps = Steps(ops, self.model, interner, by_signature=self.fast)
        root = interner.id(self.model.init())
        self.deepest, self.depth = interner.states[root], 0
        if not definite:
            return True
        dive = Dive(ops, definite, steps) if self.fast else None
        walked = _Walked()  # the ops the dive took, in order, and the state after each
        if dive is not None:
            done, self.explored = dive.walk(root, walked.ops, walked.states, self.explored, self._count)
            self.dived = len(walked.ops)
            if done:
                return True
        self.searched = True
        self._maybe = sorted((i for i, op in enumerate(ops) if op.type != "ok"), key=lambda i: ops[i].start)
        self._chains = dive.chains() if dive is not None else chains(ops, definite)
        self._deepest_at = ([0] * len(self._chains), 0)
        if dive is not None:
            try:
                return self._search(root, steps.step, interner, len(definite), walked, dive, shallow=True)
            except _Deep:
                self.deep = True
        return self._search(root, steps.step, interner, len(definite), walked, dive, shallow=False)

    def _count(self) -> None:
        """1024 more states explored: the budget, then the progress."""
        if time.monotonic() > self.deadline:
            raise _OutOfBudget
        if self.tick is not None:
            self.tick(1024)

    def _search(
        self, root: int, step: Callable[[int, int], int], interner: Interner[S], need: int, trail: _Walked,
        dive: Dive | None, *, shallow: bool,
    ) -> bool:
        """The search proper.  Its first path is the dive's ``trail``; a node's candidates
        are computed only when the search backtracks to it, the deepest first, so a wrong
        turn shortly before the walk got stuck is undone there, not by descending again from
        the root.  A node deeper than any reached so far (past where the walks got stuck) is
        handed to the ``dive`` to walk on from; shallower ones are searched node by node, so
        the memo prunes orders that meet again (a walk, which keeps no memo, would repeat
        each of them up to the stuck op: 5.7 million states to refute a real 140,000-op
        history with one answer changed, where the plain search took 29,006).

        ``shallow``: of each walk only the last ``KEEP`` ops are nodes, those before it one
        step of the search (most of its cost was nodes never backtracked to); backtracking
        into such a step raises ``_Deep``, and the search starts again with every op a node.
        So ``True`` is always a linearization, and ``False`` comes only from a search whose
        every op was a node."""
        ops, model, chains_, maybe = self.ops, self.model, self._chains, self._maybe
        starts = [op.start for op in ops]
        ends = dive.ends if dive is not None else [INF if op.end is None else float(op.end) for op in ops]
        inert: dict[int, bool] = {}  # op -> ``read_only``, asked of the window's heads only
        pointers = [0] * len(chains_)
        chain_ids = range(len(chains_))
        base = max((len(chain) for chain in chains_), default=0) + 1
        weight = [base**c for c in range(len(chains_))]  # pointers as one number: sum of pointer × weight
        position = 0
        taken = 0  # bit k: maybe[k] linearized
        seen: set[tuple[int, int, int]] = set()
        chain_of = {i: c for c, chain in enumerate(chains_) for i in chain} if dive is not None else {}
        maybe_at = {i: k for k, i in enumerate(maybe)}

        # each chain's next op, its invocation and its return (INF once the chain is done)
        head = [chain[0] for chain in chains_]
        head_start = [float(starts[chain[0]]) for chain in chains_]
        head_end = [ends[chain[0]] for chain in chains_]

        def advance(c: int, by: int) -> None:
            pointers[c] += by
            if pointers[c] < len(chains_[c]):
                i = head[c] = chains_[c][pointers[c]]
                head_start[c], head_end[c] = float(starts[i]), ends[i]
            else:
                head_start[c] = head_end[c] = INF

        def move(where: int, by: int) -> None:
            """Take (``by`` > 0) or give back (< 0) ``where``: that many of a chain's ops, or
            the ``info`` op ``maybe[-1 - where]``."""
            nonlocal position, taken
            if where >= 0:
                advance(where, by)
                position += by * weight[where]
            elif by > 0:
                taken |= 1 << (-1 - where)
            else:
                taken &= ~(1 << (-1 - where))

        def candidates(sid: int) -> list[tuple[int, int]]:
            """(op, its chain or -1 - its place in ``maybe``) that may take effect next."""
            horizon = min(head_end, default=INF)
            window = sorted((c for c in chain_ids if head_start[c] <= horizon), key=head_end.__getitem__)
            for c in window:
                i = head[c]
                read_only = inert.get(i)
                if read_only is None:
                    read_only = inert[i] = ops[i].type == "ok" and model.read_only(ops[i])
                if read_only and step(sid, i) == sid:
                    return [(i, c)]  # if any completion exists, one takes this op first
            out = [(head[c], c) for c in window]
            for k, i in enumerate(maybe):
                if starts[i] > horizon:
                    break
                if not taken >> k & 1:
                    out.append((i, -1 - k))
            return out

        # a frame: state id, ok ops done, what it added (chain, -1 - maybe index, None), the
        # candidates left (None: not computed yet), the op a walk took from it (-1: none)
        Frame = tuple[int, int, int | None, Iterator[tuple[int, int]] | None, int]
        stack: list[Frame] = [(root, 0, None, None, -1)]

        def push(walked: _Walked) -> None:
            """A walk's ops as nodes, each with its candidates not computed yet; it stops
            at a node already explored (the walk would only repeat it).  ``shallow``: all
            but the last ``KEEP`` ops as one step (``_BULK``)."""
            cut = len(walked.ops) - KEEP if shallow else 0
            if cut > 0:
                sid, done_ok, added, _, _ = stack[-1]
                moved = [0] * len(chains_)
                for i in walked.ops[:cut]:
                    c = chain_of.get(i)
                    if c is None:
                        move(-1 - maybe_at[i], 1)
                    else:
                        moved[c] += 1
                        done_ok += 1
                for c, by in enumerate(moved):
                    if by:
                        move(c, by)
                stack[-1] = (sid, stack[-1][1], added, None, walked.ops[0])
                stack.append((walked.states[cut - 1], done_ok, _BULK, None, -1))
            for i in walked.ops[max(cut, 0):]:
                sid, done_ok, added, _, _ = stack[-1]
                where = chain_of[i] if i in chain_of else -1 - maybe_at[i]
                if where >= 0 and head[where] != i:
                    break  # never: a walk takes each chain's next op (a guard)
                nxt = step(sid, i)
                move(where, 1)
                if (position, taken, nxt) in seen:
                    move(where, -1)
                    break
                seen.add((position, taken, nxt))
                stack[-1] = (sid, done_ok, added, None, i)
                stack.append((nxt, done_ok + (where >= 0), where, None, -1))
            if len(stack) - 1 > self.depth:
                self.depth, self.deepest = len(stack) - 1, interner.states[stack[-1][0]]
                self._deepest_at = (list(pointers), taken)

        def walk_on(sid: int) -> bool:
            """The dive from this node: whether it took every op (a linearization)."""
            assert dive is not None
            dive.resume(pointers, {i for k, i in enumerate(maybe) if taken >> k & 1})
            walked = _Walked()
            done, self.explored = dive.walk(sid, walked.ops, walked.states, self.explored, self._count)
            if not done:
                push(walked)
            return done

        push(trail)
        while stack:
            sid, done_ok, added, it, took = stack[-1]
            if it is None:
                it = iter([c for c in candidates(sid) if c[0] != took])
                stack[-1] = (sid, done_ok, added, it, took)
            for i, where in it:
                self.explored += 1
                if not self.explored & 1023:
                    self._count()
                nxt = step(sid, i)
                if nxt < 0:
                    continue
                move(where, 1)
                key = (position, taken, nxt)
                if key in seen:
                    move(where, -1)
                    continue
                seen.add(key)
                now_ok = done_ok + (where >= 0)
                if now_ok == need:
                    return True
                stack.append((nxt, now_ok, where, None, -1))
                if len(stack) - 1 > self.depth:  # past where every walk so far got stuck
                    self.depth, self.deepest = len(stack) - 1, interner.states[nxt]
                    self._deepest_at = (list(pointers), taken)
                    if dive is not None and walk_on(nxt):
                        return True
                break
            else:
                if added == _BULK:
                    raise _Deep
                stack.pop()
                if added is not None:
                    move(added, -1)
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
    fast: bool = True,
) -> LinearizabilityVerdict:
    """Is the history linearizable against ``model``?  ``fail`` ops had no effect.

    The verdict is decided within ``budget_s``; a failing history is then shrunk for the
    report within as much again (the verdict stands whatever the shrinking reaches).
    ``tick(n)``: ``n`` more states explored (a progress line while a long search runs).
    ``fast=False``: the plain search (no dive, steps memoised per op), the reference the
    fast one is property-tested against; both answer alike.
    """
    started = time.monotonic()
    deadline = started + budget_s
    live = [op for op in ops if op.type != "fail"]
    parts = model.partition(live) if partition else None
    verdict = LinearizabilityVerdict(LINEARIZABLE, parts is not None, parts=len(parts or [live]))
    for part in sorted(parts or [Part(WHOLE, live, model)], key=lambda p: p.key):
        search = _Search(part.ops, part.model, deadline, tick, fast)
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
        verdict.searched += search.fast and search.searched
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
                    verdict.failing_state = _deepest(failing, part.model, time.monotonic() + budget_s, fast)
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
        return keep <= {op.id for op in trial} and not _Search(trial, model, deadline, fast=search.fast).run()

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


def _deepest(ops: list[Op], model: Model[S], deadline: float, fast: bool = True) -> str | None:
    """The model state after the longest linearizable prefix of a failing history, in words
    (``None`` when the budget ran out first)."""
    search = _Search(ops, model, deadline, fast=fast)
    try:
        search.run()
    except _OutOfBudget:
        return None
    return None if search.deepest is None else model.describe_state(search.deepest)
