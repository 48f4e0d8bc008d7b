"""Generated race programs (issue 29 item 1): besides the named situations, ``races`` draws
whole workloads whose writers contend for the same topics, not only for a stale lock.

A program is a ``Situation`` like the named ones (so the scheduler, the strategies, the
shrinker, the export and ``replay`` take it as it is): 2-3 writers, each with 1-3 ops drawn
from the op vocabulary (append, replace, a write that pins, remove, pin and unpin, and repair
where every writer's driver declares ``repair_memory``) over two topics every writer shares, so same-topic appends and replaces, remove against write and pin
against write all occur; the starting lock state is one of the named situations' (none, a dead
owner's 20 s old, an empty one 61 s old).  Three families:

- ``program-shared``: the shared store, where every tool writes;
- ``program-local``: the first writer's own local store (its co-writers are the same tool, or
  one sharing that store: the reference and openpi);
- ``program-carry``: the shared store with both tools' local stores seeded, so every fresh
  writer's first op carries its tool's local store over while the others write (S-MIGRATE-2).

A program is a function of (family, seed, the ops every writer declares): the seed reproduces
it, and one drawn without repair is the same program it was before repair joined the
vocabulary (recorded seeds keep their programs).  Repair is drawn in ``program-shared`` only:
the store model starts from an empty store and keeps tombstones for the shared store only, so
in the local store, or beside a carry-over (files the model never saw), what repair re-indexes
is outside what it follows.  A finding is shrunk to the fewest ops first (``shrink_ops``),
then ``races.shrink_run`` cuts switches.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..drivers.peers import PeerSpec
from .scheduler import RunResult, Situation

TOPICS = ("Shared Alpha", "Shared Bravo")
LOCKS = (("none", 0.0), ("dead", 20.0), ("empty", 61.0))
FAMILIES: tuple[Situation, ...] = (
    Situation("program-shared", "none", 0.0, ((), ()), "generated programs over topics the writers share, "
              "in the shared store"),
    Situation("program-local", "none", 0.0, ((), ()), "generated programs in the first writer's local store",
              store="local"),
    Situation("program-carry", "none", 0.0, ((), ()), "generated programs in the shared store while each "
              "fresh writer carries its tool's seeded local store over", carry=True),
)
NAMES = tuple(f.name for f in FAMILIES)
REPAIR = "repair_memory"
REPAIR_SHARE = 0.12  # of the ops drawn, when every writer offers repair (the rest keep their proportions)


def is_family(sit: Situation) -> bool:
    return sit.name in NAMES


def _op(rng: random.Random, w: int, n: int, repair: bool = False) -> tuple[str, dict[str, Any]]:
    """One op of the vocabulary; every write carries a unique token (lost writes are counted).
    With ``repair`` the same draws map a share of the roll to a repair, so without it the
    draws and the program are those of before."""
    topic = rng.choice(TOPICS)
    roll = rng.random()
    if repair:
        if roll < REPAIR_SHARE:
            return (REPAIR, {})
        roll = (roll - REPAIR_SHARE) / (1 - REPAIR_SHARE)
    write: dict[str, Any] = {"topic": topic, "content": f"tok-w{w}-{n}", "summary": f"w{w} {n}"}
    if roll < 0.45:
        return ("write_memory", write)
    if roll < 0.55:
        return ("write_memory", write | {"mode": "replace"})
    if roll < 0.62:
        return ("write_memory", write | {"pin": True})
    if roll < 0.8:
        return ("remove_memory", {"topic": topic})
    return ("pin_memory", {"topic": topic, "pin": rng.random() < 0.6})


def local_shared_by(specs: Sequence[PeerSpec]) -> bool:
    """Whether the writers round-robin over ``specs`` share one local store (PEER-1: OpenCode's
    is its own, the reference's and openpi's are one)."""
    return len({s.kind == "opencode" for s in specs}) == 1


def draws_repair(family: Situation, offered: Collection[str]) -> bool:
    """Whether ``family``'s programs draw repair, given the ops every writer declares."""
    return REPAIR in offered and family.store == "shared" and not family.carry


def generate(family: Situation, seed: int, peers: Sequence[PeerSpec], offered: Collection[str] = ()) -> Situation:
    """The program of ``family`` for ``seed``; ``offered``: the ops every writer's driver
    declares in ``hello`` (the optional ones among them join the vocabulary)."""
    rng = random.Random(f"{family.name}-{seed}")
    repair = draws_repair(family, offered)
    writers = rng.choice((2, 3))
    ops = []
    for w in range(writers):
        n_ops = rng.choice((1, 2, 2, 3))
        script = [_op(rng, w, n, repair) for n in range(n_ops)]
        if family.carry or n_ops == 1:  # a fresh writer's first op writes: it carries over, or it races
            script[0] = ("write_memory", {"topic": rng.choice(TOPICS), "content": f"tok-w{w}-0", "summary": f"w{w} 0"})
        ops.append(tuple(script))
    lock, age = rng.choice(LOCKS)
    store = family.store
    if store == "local" and not local_shared_by([peers[i % len(peers)] for i in range(writers)]):
        store = "shared"  # writers of two local stores contend for nothing
    return Situation(f"{family.name}-{seed}", lock, age, tuple(ops),
                     f"{family.why}; lock {lock}{f' {age:g} s old' if lock != 'none' else ''}",
                     store=store, carry=family.carry)


def describe(sit: Situation) -> str:
    """A program's ops, writer by writer (``w0: append 'Shared Alpha', remove 'Shared Bravo'``)."""
    return "; ".join(f"w{w}: " + ", ".join(_show(o, a) for o, a in script) for w, script in enumerate(sit.ops))


def _show(op: str, args: dict[str, Any]) -> str:
    if op == "write_memory":
        how = "replace" if args.get("mode") == "replace" else "append+pin" if args.get("pin") else "append"
        return f"{how} {args['topic']!r}"
    if op == "pin_memory":
        return f"{'pin' if args.get('pin') else 'unpin'} {args['topic']!r}"
    if op == REPAIR:
        return "repair"
    return f"remove {args['topic']!r}"


def without(sit: Situation, writer: int, k: int) -> Situation:
    """``sit`` with writer ``writer``'s op ``k`` dropped (the writer too when it had one op)."""
    ops = [list(s) for s in sit.ops]
    del ops[writer][k]
    kept = tuple(tuple(s) for s in ops if s)
    return Situation(sit.name, sit.lock, sit.age_s, kept, sit.why, store=sit.store, carry=sit.carry)


def op_count(sit: Situation) -> int:
    return sum(len(s) for s in sit.ops)


def shrink_ops(run: Callable[[Situation], RunResult | None], result: RunResult, kind: str, *,
               budget_s: float, severity: str | None = None) -> tuple[RunResult, int]:
    """Greedy: drop any one op (or a writer left with none) while the run still shows ``kind``;
    stop at a fixed point or when the budget is spent.  ``run`` runs a program once."""
    best, tries = result, 0
    t0 = time.monotonic()
    improved = True
    while improved and time.monotonic() - t0 < budget_s:
        improved = False
        sit = best.situation
        for w, script in enumerate(sit.ops):
            for k in range(len(script)):
                if time.monotonic() - t0 >= budget_s or op_count(sit) <= 1:
                    break
                cand = without(sit, w, k)
                if not cand.ops:
                    continue
                tries += 1
                got = run(cand)
                if got is not None and not got.void and any(f.kind == kind and severity in (None, f.severity)
                                                            for f in got.findings):
                    best, improved = got, True
                    break
            if improved:
                break
    return best, tries
