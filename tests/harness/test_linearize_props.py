"""Property tests of the checker's reductions on small random store histories (seeded).

Each history is simulated: ops get random intervals per process, take effect at a random
point inside them, and answer what the SPEC model answers there; some answers are then
corrupted and some ops made ``info``.  Against a brute-force enumeration of every order:
the search checked whole agrees exactly, with and without the read-only reduction; checked
by topic family it never reports a violation the whole store does not have, never misses
one when the index's existence is settled first, and never passes what the whole fails.
The base seed is printed in every failure; ``MEMCONFORM_PROP_SEED`` picks another.
"""

from __future__ import annotations

import os
import random
from typing import Any

from memconform.harness.checker import linearize
from memconform.harness.checker.history import Op
from memconform.harness.checker.linearize import LINEARIZABLE, NOT_LINEARIZABLE
from memconform.harness.checker.store_model import StoreKindModel, check, reaches, topic_families
from memconform.harness.oracles import kind_model

BASE_SEED = int(os.environ.get("MEMCONFORM_PROP_SEED", "1302"))
CASES = int(os.environ.get("MEMCONFORM_PROP_CASES", "250"))
TOPICS = ("Alpha Notes", "alpha notes", "Alpha Notes!", "Bravo", "bravo config", "Charlie", "Delta 2", "delta")
ANSWER = {
    "created": 'Created memory topic "X" (x.md).',
    "updated": 'Updated memory topic "X" (x.md).',
    "removed": 'Removed "X" from the index. Topic file is preserved on disk.',
    "not_found": 'No entry found matching "X".',
    "no_index": "No memory index found.",
    "ambiguous": 'Multiple entries match "X": a, b',
    "pinned_refused": 'Cannot remove "X" — it is pinned.',
    "pinned": 'Pinned "X".',
    "unpinned": 'Unpinned "X".',
    "already_pinned": '"X" is already pinned.',
    "already_unpinned": '"X" is already unpinned.',
}


def _random_op(rng: random.Random, topics: list[str]) -> tuple[str, dict[str, Any]]:
    topic = rng.choice(topics)
    roll = rng.random()
    if roll < 0.5:
        args: dict[str, Any] = {"topic": topic, "content": "c", "summary": "s"}
        if rng.random() < 0.2:
            args["pin"] = True
        return "write_memory", args
    if roll < 0.75:
        return "remove_memory", {"topic": topic}
    return "pin_memory", {"topic": topic, "pin": rng.random() < 0.5}


def simulate(rng: random.Random, *, settle_index: bool = False) -> list[Op]:
    """A small concurrent history, linearizable before ``corrupt``-style edits."""
    topics = rng.sample(TOPICS, rng.randint(2, 4))
    plans: list[tuple[str, str, dict[str, Any], int, int]] = []
    offset = 0
    if settle_index:  # a write everyone sees: the index exists before any other op starts
        plans.append(("p0", "write_memory", {"topic": topics[0], "content": "c", "summary": "s"}, 0, 5))
        offset = 10
    for p in range(1, rng.randint(2, 4) + 1):
        t = offset + rng.randint(0, 5)
        for _ in range(rng.randint(1, 3)):
            name, args = _random_op(rng, topics)
            length = rng.randint(1, 12)
            plans.append((f"p{p}", name, args, t, t + length))
            t += length + rng.randint(1, 4)
    # each op takes effect at a random point of its interval; info ops maybe never
    info = {i for i in range(len(plans)) if rng.random() < 0.12 and not (settle_index and i == 0)}
    points = sorted(range(len(plans)), key=lambda i: rng.uniform(plans[i][3], plans[i][4]))
    state, kinds = kind_model.State(), {}
    for i in points:
        if i in info and rng.random() < 0.5:
            continue
        state, kinds[i] = kind_model.apply(state, plans[i][1], plans[i][2], bodies=False)
    ops = []
    for i, (proc, name, args, start, end) in enumerate(plans):
        if i in info:
            ops.append(Op(i, proc, name, args, start, None, "info", None))
        else:
            ops.append(Op(i, proc, name, args, start, end, "ok", ANSWER[kinds[i]]))
    return ops


def corrupt(rng: random.Random, ops: list[Op]) -> list[Op]:
    """One definite answer replaced by another kind of answer of the same op."""
    definite = [o for o in ops if o.type == "ok"]
    victim = rng.choice(definite)
    kinds = {"write_memory": ["created", "updated"],
             "remove_memory": ["removed", "not_found", "no_index", "pinned_refused", "ambiguous"],
             "pin_memory": ["pinned", "unpinned", "already_pinned", "already_unpinned", "not_found", "no_index"]}
    kind = rng.choice(kinds[victim.op])
    return [Op(o.id, o.process, o.op, o.args, o.start, o.end, o.type, ANSWER[kind]) if o is victim else o for o in ops]


def brute_force(ops: list[Op]) -> bool:
    """Every order that respects real time, each ``info`` op in it or not (whole store)."""
    model = StoreKindModel()
    live = [o for o in ops if o.type != "fail"]

    def go(state: kind_model.State, left: list[Op]) -> bool:
        if all(o.type != "ok" for o in left):
            return True
        for o in left:
            if any(p is not o and p.end is not None and p.end < o.start for p in left):
                continue  # someone still open returned before o was invoked
            ok, nxt = model.step(state, o)
            rest = [p for p in left if p is not o]
            if ok and go(nxt, rest):
                return True
            if o.type != "ok" and go(state, rest):  # an info op that never took effect
                return True
        return False

    return go(model.init(), live)


class NoReduction(StoreKindModel):
    def read_only(self, op: Op) -> bool:
        return False


def _cases(settle_index: bool = False) -> list[tuple[int, list[Op]]]:
    out = []
    for n in range(CASES):
        seed = BASE_SEED * 100_003 + n
        rng = random.Random(seed)
        ops = simulate(rng, settle_index=settle_index)
        if rng.random() < 0.5:
            ops = corrupt(rng, ops)
        out.append((seed, ops))
    return out


def test_whole_store_search_agrees_with_brute_force() -> None:
    verdicts = set()
    for seed, ops in _cases():
        expected = LINEARIZABLE if brute_force(ops) else NOT_LINEARIZABLE
        got = check(ops, partition=False, shrink=False).status
        assert got == expected, f"seed {seed} (base {BASE_SEED}): search {got}, brute force {expected}: {ops}"
        plain = linearize.check(ops, NoReduction(), partition=False, shrink=False).status
        assert plain == expected, f"seed {seed} (base {BASE_SEED}): without the read-only reduction {plain}"
        verdicts.add(expected)
    assert verdicts == {LINEARIZABLE, NOT_LINEARIZABLE}  # the generator exercises both


def test_families_never_contradict_the_whole_store() -> None:
    split = 0
    for seed, ops in _cases():
        whole = check(ops, partition=False, shrink=False)
        parts = check(ops, shrink=False)
        split += parts.partitioned
        if parts.status == NOT_LINEARIZABLE:
            assert whole.status == NOT_LINEARIZABLE, f"seed {seed} (base {BASE_SEED}): a violation only by family"
        if whole.status == LINEARIZABLE:
            assert parts.status == LINEARIZABLE, f"seed {seed} (base {BASE_SEED})"
    assert split > CASES // 4  # families do split the histories


def test_families_agree_exactly_once_the_index_exists() -> None:
    for seed, ops in _cases(settle_index=True):
        whole = check(ops, partition=False, shrink=False).status
        parts = check(ops, shrink=False).status
        assert parts == whole, f"seed {seed} (base {BASE_SEED}): families {parts}, whole store {whole}: {ops}"


def test_topic_families_join_what_one_lookup_can_see() -> None:
    families = topic_families(sorted(["Alpha Notes", "alpha notes", "Alpha Notes!", "Bravo", "bravo config", "Charlie"]))
    assert len({families[t] for t in ("Alpha Notes", "alpha notes", "Alpha Notes!")}) == 1
    assert families["Bravo"] == families["bravo config"] != families["Alpha Notes"]
    assert families["Charlie"] == "Charlie"
    assert reaches("2", "Delta") and reaches("delta-3", "Delta")  # <slug>-N.md, any N
    assert not reaches("Charlie", "Delta") and not reaches("Delta", "Charlie")
