"""The store's linearizability model: ``harness.oracles.kind_model`` plugged into ``linearize``.

``linearize`` is the generic checker (Porcupine's ``checker.go``); ``kind_model`` is the
SPEC-written state and transitions (its ``model.go``), an oracle that knows nothing of
histories.  This adapter is the one place that knows both: how a recorded answer reads as a
result kind, which ops commute (different topics whose names and slugs do not overlap), and
that a topic checked alone cannot see whether ``MEMORY.md`` exists (another topic's write
may have created it), so there "no index" and "not found" are one answer.
"""

from __future__ import annotations

import functools
from collections import defaultdict

from . import linearize
from .history import Op
from .linearize import LinearizabilityVerdict, Part
from .oracles import kind_model

State = kind_model.State


@functools.lru_cache(maxsize=4096)
def _kind_of_text(text: str) -> str:
    return kind_model.result_kind(text)


def recorded_kind(result: object) -> str:
    """The result kind of a recorded answer (cached: the search asks once per step)."""
    return _kind_of_text(result) if isinstance(result, str) else kind_model.result_kind(result)


class StoreKindModel:
    """The store as ``kind_model`` sees it, compared by result kind (``linearize.Model``).

    ``within_topic``: the model of one topic's sub-history, blind to whether the index
    exists.  Bodies stay out of the states (``bodies=False``): kinds never depend on them.
    """

    def __init__(self, within_topic: bool = False) -> None:
        self.within_topic = within_topic

    def init(self) -> State:
        return State()

    def step(self, state: State, op: Op) -> tuple[bool, State]:
        nxt, kind = kind_model.apply(state, op.op, op.args, bodies=False)
        if op.type != "ok":
            return True, nxt  # no answer to compare: it may have taken effect
        expected = recorded_kind(op.result)
        if self.within_topic:
            kind = _blind(kind)
            expected = _blind(expected)
        return kind == expected, nxt

    def equal(self, a: State, b: State) -> bool:
        return a == b

    def partition(self, ops: list[Op]) -> list[Part[State]] | None:
        """One part per topic slug, when no topic's name or slug reaches another's."""
        topics = sorted({str(op.args.get("topic", "")) for op in ops})
        if not kind_model.independent_topics(topics):
            return None
        parts: dict[str, list[Op]] = defaultdict(list)
        for op in ops:
            parts[kind_model.keys_of(op.op, op.args)].append(op)
        blind = StoreKindModel(within_topic=True)
        return [Part(key, part, blind) for key, part in parts.items()]

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


def _blind(kind: str) -> str:
    return "not_found" if kind == "no_index" else kind


def check(
    ops: list[Op], *, budget_s: float = 10.0, partition: bool = True, shrink: bool = True
) -> LinearizabilityVerdict:
    """Is a store history linearizable?  Partitioned by topic where topics are independent."""
    return linearize.check(ops, StoreKindModel(), budget_s=budget_s, partition=partition, shrink=shrink)
