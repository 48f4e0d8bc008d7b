"""The store's linearizability model: ``harness.oracles.kind_model`` plugged into ``linearize``.

``linearize`` is the generic checker (Porcupine's ``checker.go``); ``kind_model`` is the
SPEC-written state and transitions (its ``model.go``), an oracle that knows nothing of
histories.  This adapter is the one place that knows both:

- how a recorded answer reads as a result kind, and which kinds leave the store unchanged
  (a lookup that found nothing, a refusal: ``read_only``);
- which ops commute: topics fall into *families* (connected by a name or slug that one
  lookup or one slug choice of the other can see), and families are checked alone
  (P-compositionality, as Porcupine and Knossos partition by key);
- what a family checked alone cannot see: whether ``MEMORY.md`` exists (another family's
  write may have created it), so there "no index" and "not found" are one answer, and the
  index's existence is checked across families from real time instead (``_index_order``);
- which state details no result kind depends on (summaries, the case of names, the order of
  an index without look-alike entries): the search sees one state (``key``) where the store
  has many.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable
from math import inf as INF

from ..oracles import kind_model
from ..oracles.grammar import to_slug
from ..oracles.outcome_kind import NO_ENTRY, NO_INDEX
from . import linearize
from .history import Op
from .linearize import NOT_LINEARIZABLE, LinearizabilityVerdict, Part

State = kind_model.State
READ_ONLY = frozenset({"not-found", "refused", "ok:unchanged"})
"""Outcomes of remove and pin that leave the model state as it was (SPEC §9, §10): nothing
found, a refusal (ambiguous, pinned), already in the requested state."""
READ_ARGS = ("topic", "pin", "mode", "overwrite")
LOOKUPS = ("remove_memory", "pin_memory", "repair_memory")
"""The ops that may leave the store unchanged (``read_only`` when their outcome says so)."""
"""The arguments ``kind_model.apply`` reads besides the content and the summary."""


def recorded_kind(op: Op) -> str:
    """The outcome a history op recorded (issue 30 item 2: never its text)."""
    return kind_model.op_outcome(op)


def _unchanged(outcome: str) -> bool:
    return outcome in READ_ONLY or outcome.split(":", 1)[0] in READ_ONLY


class StoreKindModel:
    """The store as ``kind_model`` sees it, compared by outcome (``linearize.Model``).

    ``within_topic``: the model of one family's sub-history, blind to whether the index
    exists.  ``shared``: the shared store, where a remove leaves a tombstone that repair
    skips (SS-TOMB-4).  Bodies stay out of the states (``bodies=False``): outcomes never
    depend on them.
    """

    def __init__(self, within_topic: bool = False, shared: bool = False) -> None:
        self.within_topic = within_topic
        self.shared = shared

    def kind(self, op: Op) -> str:
        """The outcome an op recorded."""
        return kind_model.op_outcome(op)

    def init(self) -> State:
        return State(shared=self.shared)

    def step(self, state: State, op: Op) -> tuple[bool, State]:
        nxt, kind = kind_model.apply(state, op.op, op.args, bodies=False)
        if op.type != "ok":
            return True, nxt  # no answer to compare: it may have taken effect
        recorded, expected = self.kind(op), kind_model.as_outcome(kind)
        if self.within_topic:
            recorded, expected = _blind(recorded), _blind(expected)
        return kind_model.agrees(recorded, expected), nxt

    def key(self, state: State) -> Hashable:
        """The state without what no result kind reads: summaries, the case of names, and
        the index order when no two entries look alike (``_index_key``)."""
        files = tuple((f, t.name.lower()) for f, t in state.files)
        return (files, _index_key(state.index), state.tombstones, state.shared, state.has_index)

    def signature(self, op: Op) -> Hashable:
        """What ``step`` reads of an op besides the state: not the content (bodies are out of
        the states) nor the summary (out of ``key``), so the search steps each (state,
        signature) once however many tokens were written (issue 22: 4 x 100,000 ops).

        The arguments as given, each with its type (``True`` and ``1`` are equal keys but
        not equal to ``kind_model``), and the answer's kind: the repr of every argument took
        a third of the checker's time on 400,000 ops.  An unhashable argument (a hand-made
        history) is read as its repr."""
        get = op.args.get
        topic, pin, mode, overwrite = get("topic"), get("pin"), get("mode"), get("overwrite")
        answer = self.kind(op) if op.type == "ok" else None
        raw = (op.op, op.type, answer, topic, type(topic), pin, type(pin), mode, type(mode), overwrite, type(overwrite))
        try:
            hash(raw)
        except TypeError:
            return (op.op, op.type, answer, tuple(repr(get(k)) for k in READ_ARGS))
        return raw

    def read_only(self, op: Op) -> bool:
        return op.type == "ok" and op.op in LOOKUPS and _unchanged(self.kind(op))

    def partition(self, ops: list[Op]) -> list[Part[State]] | None:
        """One part per topic family; ``None`` when every topic reaches every other, or when
        a repair ran (it reads every file and the whole index: no family is alone)."""
        if any(op.op == "repair_memory" for op in ops):
            return None
        families = topic_families(sorted({str(op.args.get("topic", "")) for op in ops}))
        if len(set(families.values())) < 2:
            return None
        parts: dict[str, list[Op]] = defaultdict(list)
        for op in ops:
            parts[families[str(op.args.get("topic", ""))]].append(op)
        blind = StoreKindModel(within_topic=True, shared=self.shared)
        return [Part(to_slug(key.strip()), part, blind) for key, part in parts.items()]

    def describe_op(self, op: Op) -> str:
        return f"{op.op} {op.args} -> {op.result}"

    def describe_state(self, state: State) -> str:
        if not state.has_index:
            return "no MEMORY.md yet"
        entries = ", ".join(
            f"[{e.name}]({e.filename}){' [pin]' if e.pinned else ''}" for e in state.index
        )
        text = f"index: {entries or '(empty)'}; files: {', '.join(f for f, _ in state.files) or '(none)'}"
        if state.tombstones:
            text += f"; tombstones: {', '.join(sorted(state.tombstones))}"
        return text


_DIGITS = re.compile(r"\d+")


def reaches(a: str, b: str) -> bool:
    """Whether an op on topic ``a`` can see topic ``b``'s entry or file (conservatively).

    S-IDX-8 matches a query exactly or as a substring of an entry's name or filename, and
    S-WRITE-6/7 pick ``<slug>.md`` or ``<slug>-N.md``: so ``a`` reaches ``b`` when the slugs
    are equal, or ``a``'s name or slug is inside ``b``'s name or one of ``b``'s possible
    filenames.  Filenames ``<slug>-N.md`` are compared with digits removed on both sides, so
    every N is covered (a substring stays a substring when the same digits go).
    """
    a_name, b_name = a.strip().lower(), b.strip().lower()
    a_slug, b_slug = to_slug(a.strip()), to_slug(b.strip())
    if a_slug == b_slug or a_name in b_name or a_slug in b_slug:
        return True
    files = _DIGITS.sub("", f"{b_slug}-.md")
    return any(_DIGITS.sub("", q) in files for q in (a_name, a_slug))


def topic_families(topics: list[str]) -> dict[str, str]:
    """Each topic's family (its smallest member): topics joined whenever one reaches the other."""
    parent = {t: t for t in topics}

    def root(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for i, a in enumerate(topics):
        for b in topics[i + 1:]:
            if reaches(a, b) or reaches(b, a):
                ra, rb = root(a), root(b)
                parent[max(ra, rb)] = min(ra, rb)
    return {t: root(t) for t in topics}


def _index_key(index: tuple[kind_model.Entry, ...]) -> tuple[tuple[str, str, bool], ...]:
    """The index as S-IDX-8 lookups and S-WRITE-6 can tell it: case-folded names, filenames
    and pins, in filename order when no two entries share a case-folded name or filename
    (a lookup then finds at most one exact match, and partial matches are counted, not
    ordered); in index order otherwise."""
    entries = [(e.filename, e.name.lower(), e.pinned) for e in index]
    seen: set[str] = set()
    for filename, name, _ in entries:
        own = {filename.lower(), name}
        if own & seen:
            return tuple(entries)
        seen |= own
    return tuple(sorted(entries))


def _blind(outcome: str) -> str:
    """No index and no entry as one answer (``not-found``)."""
    return "not-found" if outcome.startswith("not-found") else outcome


def _index_order(ops: list[Op]) -> list[Op] | None:
    """Two ops that no order explains as to whether ``MEMORY.md`` exists, or ``None``.

    Only a write creates the index (S-WRITE-1), and nothing deletes it: a lookup that
    answered "no index" after an acknowledged write had returned, or one that answered
    anything else before any write had even started, is not linearizable.  This is what the
    families, each blind to the index, cannot see.  A declared ``not-found`` does not say
    which of the two it was (``outcome_kind.history_outcome``) and is taken as either.
    """
    first_ack: Op | None = None  # the acknowledged write that returned first
    first_start: Op | None = None  # the write invoked first
    lookups: list[Op] = []
    for o in ops:
        if o.op == "write_memory" and o.type != "fail":
            if first_start is None or o.start < first_start.start:
                first_start = o
            if (o.type == "ok" and o.end is not None and (first_ack is None or o.end < (first_ack.end or 0))
                    and recorded_kind(o).startswith("ok")):
                first_ack = o
        elif o.type == "ok" and o.op in ("remove_memory", "pin_memory"):
            lookups.append(o)
    acked = INF if first_ack is None or first_ack.end is None else first_ack.end
    started = INF if first_start is None else first_start.start
    bad = [o for o in lookups
           if (o.start > acked and recorded_kind(o) == NO_INDEX)
           or (o.end is not None and o.end < started and _saw_index(recorded_kind(o)))]
    if not bad:
        return None
    o = min(bad, key=lambda o: o.start)
    if first_ack is not None and recorded_kind(o) == NO_INDEX:
        return [first_ack, o]
    return [o] if first_start is None else [o, first_start]


def _saw_index(outcome: str) -> bool:
    """An answer of remove or pin that only a store with ``MEMORY.md`` gives."""
    return outcome.split(":", 1)[0] in ("ok", "refused") or outcome == NO_ENTRY


def check(
    ops: list[Op], *, budget_s: float = 10.0, partition: bool = True, shrink: bool = True,
    tick: Callable[[int], None] | None = None, fast: bool = True, shared: bool = False,
) -> LinearizabilityVerdict:
    """Is a store history linearizable?  Partitioned by topic family where families exist;
    ``tick`` and ``fast`` as in ``linearize.check``; ``shared``: a shared-store history
    (removes leave tombstones, which repair skips)."""
    verdict = linearize.check(ops, StoreKindModel(shared=shared), budget_s=budget_s, partition=partition, shrink=shrink,
                              tick=tick, fast=fast)
    if verdict.partitioned and verdict.status != NOT_LINEARIZABLE:
        pair = _index_order([op for op in ops if op.type != "fail"])
        if pair is not None:
            model = StoreKindModel()
            verdict.status = NOT_LINEARIZABLE
            verdict.failing_partition = "MEMORY.md"
            verdict.failing_ops = pair
            verdict.failing_lines = [f"{o.process} {o.type} {model.describe_op(o)}" for o in pair]
            verdict.failing_state = None
    return verdict
