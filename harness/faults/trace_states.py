"""Crash states from a recorded trace under four persistence models (issue 17 item 2).

A trace (``harness.faults.trace``) is a list of effects on an in-memory ``Tree``.  The states
a crash may leave are built from it without running anything again:

- ``strict``: every prefix (a process kill: the kernel keeps every completed call);
- ``lost-dirent``: at each prefix, one directory entry changed by a create, rename, link,
  unlink or mkdir that no later fsync of its directory made durable reverts to an earlier
  binding (SPEC S-INV-8 last paragraph: nobody fsyncs a directory);
- ``torn``: at each prefix, a file's data written since its last fsync cut short — at the
  synced length, half-way, and at each unsynced write's boundary and middle (``byte``), or at
  every 4 KiB block boundary (``block``);
- ``reorder`` (ALICE's application-level model): between two fsync barriers, operations on
  different files persist in any order — each file's (or directory's) own operations keep
  theirs — so a rename may persist before the data written into its source.

States are deduplicated by content per model and each distinct one is judged by
``oracles.crash_judge`` (S-INV rules; versions acknowledged before the op must not come
back).  The same judging as the in-process explorer, so the two methods agree (a test).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..oracles.crash_judge import CrashFinding, Intent, State, check_crash_state, is_lock, is_temp
from ..oracles.findings import Finding
from .memfs import Effect, Tree, torn_variants
from .trace import Trace

TRACE_MODELS = ("strict", "lost-dirent", "torn", "reorder")
POWER_LOSS = frozenset({"lost-dirent", "reorder"})  # cross-file findings are S-INV-8 weaknesses there
DIRENT = frozenset({"create", "rename", "link", "unlink", "mkdir", "rmdir"})
DATA = frozenset({"write", "truncate"})
BLOCK = 4096
REORDER_CAP = 512  # full product of per-file prefixes up to this many per epoch, else one file cut at a time


@dataclass(frozen=True)
class CrashState:
    """One state a crash may leave: the model, where in the trace, and what was lost or torn."""

    model: str
    state: State
    position: int  # effects persisted in order (the strict prefix this state departs from)
    what: str
    syscalls: tuple[str, ...] = ()  # the calls lost, torn or persisted out of order

    def key(self) -> int:
        return hash(frozenset(self.state.items()))


def _touched(tree: Tree, e: Effect) -> list[str]:
    op = e[0]
    if op in DATA:
        return [p for p, ino in tree.names.items() if ino == e[1]]
    if op in ("rename", "link"):
        return [e[1], e[2]]
    if op in ("fsync", "close"):
        return []
    return [e[1]]


def _parent(e: Effect) -> str:
    return os.path.dirname(str(e[2] if e[0] in ("rename", "link") else e[1]))


# --- the models ----------------------------------------------------------------------------


def strict_states(trace: Trace) -> Iterator[tuple[int, Tree]]:
    """The tree after each prefix of the trace (0 … n effects)."""
    tree = trace.start.copy()
    yield 0, tree.copy()
    for k, e in enumerate(trace.effects, 1):
        tree.apply(e)
        yield k, tree.copy()


def _unsynced_writes(trace: Trace, k: int) -> dict[int, list[tuple[int, int, str]]]:
    """Per inode, the (offset, length, call) of data written since its last fsync, up to ``k``."""
    out: dict[int, list[tuple[int, int, str]]] = {}
    for op in trace.ops[:k]:
        e = op.effect
        if e[0] == "write":
            out.setdefault(e[1], []).append((e[2], len(e[3]), op.call))
        elif e[0] == "fsync":
            out.pop(e[1], None)
    return out


def torn_states(trace: Trace, k: int, snap: Tree, granularity: str = "byte") -> Iterator[CrashState]:
    """Each file's unsynced data cut short (its synced part and earlier writes kept)."""
    root = trace.root
    writes = _unsynced_writes(trace, k)
    seen: set[tuple[int, int]] = set()
    base = {(path, ino) for path, ino in snap.names.items()}
    for state, what in torn_variants(snap, root):  # synced length and half-way: as the explorer
        rel, _, at = what.partition(" torn at ")
        ino = snap.names[f"{root}/{rel}"]
        seen.add((ino, int(at.split("/")[0])))
        yield CrashState("torn", state, k, what, tuple(c for _o, _n, c in writes.get(ino, [])))
    for path, ino in sorted(base):
        if snap.kinds.get(ino) != "file" or ino not in writes:
            continue
        data, synced = snap.data[ino], snap.synced.get(ino, 0)
        cuts: set[int] = set()
        for off, n, _call in writes[ino]:
            cuts |= {off, off + n // 2} if granularity == "byte" else set()
        if granularity == "block":
            cuts |= set(range((synced // BLOCK + 1) * BLOCK, len(data), BLOCK))
        for cut in sorted(c for c in cuts if synced <= c < len(data)):
            if (ino, cut) in seen:
                continue
            seen.add((ino, cut))
            t = snap.copy()
            t.data[ino] = data[:cut]
            calls = tuple(c for off, n, c in writes[ino] if off + n > cut)
            yield CrashState("torn", t.state(root), k, f"{path[len(root) + 1:]} torn at {cut}/{len(data)} bytes", calls)


def dirent_states(trace: Trace) -> Iterator[CrashState]:
    """At each prefix, one entry not yet made durable by a directory fsync reverts."""
    root = trace.root
    tree = trace.start.copy()
    hist: dict[str, list[tuple[int | None, str]]] = {}  # path -> bindings since durable, with the call
    for k in range(len(trace.ops) + 1):
        if k:
            op = trace.ops[k - 1]
            e = op.effect
            if e[0] in DIRENT:
                paths = [e[1], e[2]] if e[0] in ("rename", "link") else [e[1]]
                for p in paths:
                    hist.setdefault(p, [(tree.names.get(p), "")])
                tree.apply(e)
                for p in paths:
                    hist[p].append((tree.names.get(p), op.call))
            else:
                tree.apply(e)
                if e[0] == "fsync" and tree.kinds.get(e[1]) == "dir":
                    d = next((p for p, i in tree.names.items() if i == e[1]), None)
                    for p in [p for p in hist if os.path.dirname(p) == d]:
                        hist[p] = [(tree.names.get(p), "")]
        for path, seen in hist.items():
            rel = path[len(root) + 1 :]
            if is_temp(rel) or is_lock(rel):
                continue
            current = tree.names.get(path)
            if current is not None and tree.kinds.get(current) == "dir":
                continue
            for i, (old, _c) in enumerate(seen):
                if old == current or (old is not None and tree.kinds.get(old) != "file"):
                    continue
                if any(o == old for o, _ in seen[:i]):
                    continue
                lost = tuple(c for _o, c in seen[i + 1 :] if c)
                t = tree.copy()
                if old is None:
                    del t.names[path]
                    what = f"{rel} entry lost"
                else:
                    t.names[path] = old
                    what = f"{rel} reverted"
                yield CrashState("lost-dirent", t.state(root), k, what, lost)


def _group(e: Effect) -> tuple[str, object]:
    """What keeps its own order under reorder: one inode's data, one directory's entries."""
    return ("dir", _parent(e)) if e[0] in DIRENT else ("ino", e[1])


def reorder_states(trace: Trace, cap: int = REORDER_CAP) -> Iterator[CrashState]:
    """Between fsync barriers, any per-group prefix of the epoch's operations persisted."""
    root, effects, ops = trace.root, trace.effects, trace.ops
    bounds = [0] + [i + 1 for i, e in enumerate(effects) if e[0] == "fsync"]
    if bounds[-1] != len(effects):
        bounds.append(len(effects))
    base = trace.start.copy()
    for lo, hi in itertools.pairwise(bounds):
        groups: dict[tuple[str, object], list[int]] = {}
        for i in range(lo, hi):
            groups.setdefault(_group(effects[i]), []).append(i)
        members = list(groups.values())
        total = 1
        for m in members:
            total *= len(m) + 1
        if total <= cap:
            choices: Iterator[tuple[int, ...]] = itertools.product(*[range(len(m) + 1) for m in members])
        else:
            choices = _one_cut(members, lo, hi)
        for choice in choices:
            kept = sorted(i for m, n in zip(members, choice, strict=True) for i in m[:n])
            t = base.copy()
            for i in kept:
                t.apply(effects[i])
            last = kept[-1] + 1 if kept else lo
            dropped = [i for i in range(lo, last) if i not in set(kept)]
            what = (f"persisted out of order: {ops[last - 1].call} before {ops[dropped[0]].call}"
                    if dropped else "in order")
            yield CrashState("reorder", t.state(root), last, what, tuple(ops[i].call for i in dropped))
        for i in range(lo, hi):
            base.apply(effects[i])


def _one_cut(members: Sequence[list[int]], lo: int, hi: int) -> Iterator[tuple[int, ...]]:
    """Too many combinations: every strict prefix, and each prefix with one group cut shorter."""
    for k in range(lo, hi + 1):
        full = tuple(sum(1 for i in m if i < k) for m in members)
        yield full
        for g, n in enumerate(full):
            for shorter in range(n):
                yield (*full[:g], shorter, *full[g + 1 :])


def crash_states(trace: Trace, models: Sequence[str], granularity: str = "byte") -> Iterator[CrashState]:
    """Every crash state of the trace under each model (duplicates included)."""
    root = trace.root
    if "strict" in models or "torn" in models:
        for k, snap in strict_states(trace):
            where = "before its first call" if k == 0 else f"after {trace.ops[k - 1].call}"
            if "strict" in models:
                yield CrashState("strict", snap.state(root), k, f"crash {where}")
            if "torn" in models:
                yield from torn_states(trace, k, snap, granularity)
    if "lost-dirent" in models:
        yield from dirent_states(trace)
    if "reorder" in models:
        yield from reorder_states(trace)


# --- judging ---------------------------------------------------------------------------------


def judge_context(trace: Trace) -> tuple[dict[str, frozenset[bytes | None]], dict[str, frozenset[bytes | None]]]:
    """The versions the op publishes (complete and synced when seen, and the final ones) and
    those acknowledged before it — computed as the explorer computes them."""
    root = trace.root
    tree = trace.start.copy()
    history: dict[str, set[bytes | None]] = {}
    for p, ino in tree.names.items():
        if tree.kinds[ino] == "file":
            history[p[len(root) + 1 :]] = {tree.data[ino]}
    published: dict[str, set[bytes | None]] = {}
    for e in trace.effects:
        tree.apply(e)
        if e[0] == "truncate":  # an emptied file is no version anyone published
            continue
        for p in _touched(tree, e):
            rel = p[len(root) + 1 :]
            history.setdefault(rel, {None})
            bound = tree.names.get(p)
            seen = published.setdefault(rel, set())
            if bound is None:
                seen.add(None)
            elif tree.kinds[bound] == "file" and tree.synced.get(bound, 0) == len(tree.data[bound]):
                seen.add(tree.data[bound])
    final = tree.state(root)
    for rel in set(trace.before) | set(final):
        if trace.before.get(rel) != final.get(rel):
            published.setdefault(rel, set()).add(final.get(rel))
    return ({k: frozenset(v) for k, v in published.items()}, {k: frozenset(v) for k, v in history.items()})


@dataclass
class ModelTally:
    """One model's counts for one op, and its findings keyed by (clause, kind, path)."""

    states: int = 0
    distinct: int = 0
    violating: int = 0
    allowed: Counter[str] = field(default_factory=Counter)
    found: dict[tuple[str, str, str], Seen] = field(default_factory=dict)


@dataclass
class Seen:
    """One finding of a model: an example state (one no kill can leave, when there is one),
    how many distinct states showed it, and how many of those no kill can leave."""

    finding: CrashFinding
    example: CrashState
    states: int = 1
    beyond_kill: int = 0


@dataclass
class TraceCheck:
    """Every model's states of one traced op, judged; the distinct states kept for recovery."""

    name: str
    impl: str
    trace: Trace
    models: dict[str, ModelTally]
    distinct: dict[int, CrashState] = field(default_factory=dict)  # content hash -> first state seen
    seconds: float = 0.0

    @property
    def checked(self) -> int:
        return sum(m.distinct for m in self.models.values())

    def findings(self, reproduce: str) -> list[tuple[Finding, CrashState]]:
        out: list[tuple[Finding, CrashState]] = []
        for model, m in self.models.items():
            for (clause, kind, path), seen in m.found.items():
                cf, cs, n = seen.finding, seen.example, seen.states
                n_total = len(self.trace.ops)
                reach = ("" if model == "strict" else
                         f", {seen.beyond_kill} of them no kill can leave" if seen.beyond_kill else
                         ", each one a kill leaves too")
                evidence = (f"{cf.detail}; {cs.what} (trace position {cs.position}/{n_total}); "
                            f"{n} of {m.distinct} distinct {model} states{reach}")
                syscall = ", ".join(cs.syscalls[:3]) if cs.syscalls else (
                    self.trace.ops[cs.position - 1].call if cs.position else "before the first call")
                out.append((Finding(kind, cf.severity, clause, self.impl, f"{self.name} [{model}]", syscall,
                                    evidence, reproduce, path=path), cs))
        return out


def check_trace(trace: Trace, intent: Intent, models: Sequence[str], impl: str, *,
                granularity: str = "byte") -> TraceCheck:
    """Build, deduplicate and judge every crash state of one traced op."""
    t0 = time.perf_counter()
    published, history = judge_context(trace)
    result = TraceCheck(trace.name, impl, trace, {m: ModelTally() for m in models})
    seen: dict[str, set[int]] = {m: set() for m in models}
    killed = {hash(frozenset(t.state(trace.root).items())) for _k, t in strict_states(trace)}
    for cs in crash_states(trace, models, granularity):
        tally = result.models[cs.model]
        tally.states += 1
        key = cs.key()
        if key in seen[cs.model]:
            continue
        seen[cs.model].add(key)
        result.distinct.setdefault(key, cs)
        tally.distinct += 1
        verdict = check_crash_state(cs.state, trace.before, published, intent, history=history,
                                    power_loss=cs.model in POWER_LOSS)
        tally.allowed.update(verdict.allowed)
        tally.violating += bool(verdict.violations)
        beyond = key not in killed
        for f in verdict.findings:
            k = (f.clause, f.kind, f.path)
            got = tally.found.get(k)
            if got is None:
                tally.found[k] = Seen(f, cs, 1, int(beyond))
                continue
            got.states += 1
            got.beyond_kill += beyond
            if beyond and got.beyond_kill == 1:  # the first example no kill can leave replaces a kill's
                got.finding, got.example = f, cs
    result.seconds = time.perf_counter() - t0
    return result


