"""The linearizability checker on hand-built histories: both verdicts, info ops, budget;
the checker generic over its ``Model`` (a register), the store model plugged in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memconform.harness.checker import linearize
from memconform.harness.checker.history import Event, History, HistoryError, Op, pair
from memconform.harness.checker.linearize import LINEARIZABLE, NOT_LINEARIZABLE, UNKNOWN, Part
from memconform.harness.checker.store_model import StoreKindModel, check


def op(i: int, proc: str, name: str, args: dict[str, object], start: int, end: int | None, result: object, type_: str = "ok") -> Op:
    return Op(i, proc, name, args, start, end, type_, result)


def w(topic: str, content: str = "c") -> dict[str, object]:
    return {"topic": topic, "content": content, "summary": "s"}


CREATED = 'Created memory topic "A" (a.md).'
UPDATED = 'Updated memory topic "A" (a.md).'
REMOVED = 'Removed "A" from the index. Topic file is preserved on disk.'
NOT_FOUND = 'No entry found matching "A".'


def test_sequential_history_is_linearizable() -> None:
    ops = [
        op(0, "p1", "write_memory", w("A"), 0, 10, CREATED),
        op(1, "p2", "write_memory", w("A"), 20, 30, UPDATED),
        op(2, "p1", "remove_memory", {"topic": "A"}, 40, 50, REMOVED),
    ]
    assert check(ops).status == LINEARIZABLE


def test_concurrent_writes_both_orders_accepted() -> None:
    ops = [
        op(0, "p1", "write_memory", w("A"), 0, 100, UPDATED),
        op(1, "p2", "write_memory", w("A"), 10, 90, CREATED),
    ]
    assert check(ops).status == LINEARIZABLE


def test_two_creations_of_one_topic_are_not_linearizable() -> None:
    ops = [
        op(0, "p1", "write_memory", w("A"), 0, 10, CREATED),
        op(1, "p2", "write_memory", w("A"), 20, 30, CREATED),
    ]
    v = check(ops)
    assert v.status == NOT_LINEARIZABLE
    assert [o.id for o in v.failing_ops] == [0, 1]
    assert v.summary().endswith(
        "; smallest failing sub-history (2 ops):\n"
        f"  p1 ok write_memory {w('A')} -> {CREATED}\n"
        f"  p2 ok write_memory {w('A')} -> {CREATED}\n"
        "stuck after 1 ops in state index: [A](a.md); files: a.md; none of these can come next:\n"
        f"  p2 ok write_memory {w('A')} -> {CREATED}"
    )
    assert v.failing_state == "index: [A](a.md); files: a.md"  # after the first creation


def test_remove_seeing_nothing_after_acknowledged_write_is_a_lost_update() -> None:
    ops = [
        op(0, "p1", "write_memory", w("A"), 0, 10, CREATED),
        op(1, "p2", "write_memory", w("B"), 0, 10, 'Created memory topic "B" (b.md).'),
        op(2, "p2", "remove_memory", {"topic": "A"}, 20, 30, NOT_FOUND),
    ]
    v = check(ops)
    assert v.status == NOT_LINEARIZABLE and v.partitioned
    assert v.failing_partition == "a"
    assert {o.id for o in v.failing_ops} == {0, 2}  # the unrelated topic is shrunk away


def test_info_op_may_or_may_not_have_happened() -> None:
    maybe = op(0, "p1", "write_memory", w("A"), 0, None, None, "info")
    took_effect = [maybe, op(1, "p2", "remove_memory", {"topic": "A"}, 50, 60, REMOVED)]
    never = [maybe, op(1, "p2", "remove_memory", {"topic": "A"}, 50, 60, 'No memory index found.')]
    assert check(took_effect).status == LINEARIZABLE
    assert check(never).status == LINEARIZABLE


def test_busy_answers_have_no_effect() -> None:
    ops = [
        op(0, "p1", "write_memory", w("A"), 0, 10, None, "fail"),
        op(1, "p2", "remove_memory", {"topic": "A"}, 20, 30, "No memory index found."),
    ]
    assert check(ops).status == LINEARIZABLE


def test_dependent_topics_are_checked_as_one_store() -> None:
    ops = [
        op(0, "p1", "write_memory", {"topic": "Zeta", "content": "c", "summary": "s"}, 0, 10, 'Created memory topic "Zeta" (zeta.md).'),
        op(1, "p2", "write_memory", {"topic": "Zeta Two", "content": "c", "summary": "s"}, 0, 10, 'Created memory topic "Zeta Two" (zeta-two.md).'),
        op(2, "p1", "remove_memory", {"topic": "Zeta"}, 20, 30, 'Removed "Zeta" from the index. Topic file is preserved on disk.'),
    ]
    v = check(ops)
    assert v.status == LINEARIZABLE and not v.partitioned


def test_budget_exhaustion_is_unknown_never_a_pass() -> None:
    ops = [op(i, f"p{i}", "write_memory", w("A", str(i)), 0, 1000, UPDATED) for i in range(40)]
    ops.append(op(40, "q", "write_memory", w("A"), 0, 1000, CREATED))
    ops.append(op(41, "q2", "write_memory", w("A"), 0, 1000, CREATED))
    assert check(ops, budget_s=0.05).status in (UNKNOWN, NOT_LINEARIZABLE)
    assert check(ops, budget_s=0.0).status == UNKNOWN


def test_history_round_trip_and_pairing(tmp_path: Path) -> None:
    h = History()
    h.record("p1", "invoke", "write_memory", w("A"))
    h.record("p1", "ok", "write_memory", w("A"), CREATED)
    h.record("p2", "invoke", "remove_memory", {"topic": "A"})
    path = tmp_path / "h.jsonl"
    h.save(path)
    ops = History.load(path).ops()
    assert [(o.type, o.result) for o in ops] == [("ok", CREATED), ("info", None)]


def test_malformed_history_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"process": "p", "type": "invoke", "op": "x", "time": 1}\nnot json\n')
    with pytest.raises(HistoryError, match=r"h.jsonl:2: malformed"):
        History.load(path)


def test_completion_without_invocation_is_rejected() -> None:
    with pytest.raises(HistoryError, match="without an invocation"):
        pair([Event("p", "ok", "write_memory", {}, 1)])


# --- the checker is generic: a register model (Porcupine's first example) ----------------


class Register:
    """A single integer register: ``put`` answers nothing, ``get`` answers the value."""

    def init(self) -> int:
        return 0

    def step(self, state: int, op: Op) -> tuple[bool, int]:
        if op.op == "put":
            return True, int(str(op.args["value"]))
        return op.type != "ok" or op.result == state, state

    def key(self, state: int) -> int:
        return state

    def read_only(self, op: Op) -> bool:
        return op.op == "get"

    def partition(self, ops: list[Op]) -> list[Part[int]] | None:
        return None

    def describe_op(self, op: Op) -> str:
        return f"{op.op}({op.args.get('value', '')}) -> {op.result}"

    def describe_state(self, state: int) -> str:
        return f"register = {state}"


class Registers(Register):
    """Independent registers by name: each part is one register."""

    def partition(self, ops: list[Op]) -> list[Part[int]] | None:
        names = sorted({str(o.args["name"]) for o in ops})
        return [Part(n, [o for o in ops if o.args["name"] == n], Register()) for n in names]


def test_register_model_linearizable_and_not() -> None:
    good = [
        op(0, "p1", "put", {"value": 1}, 0, 10, None),
        op(1, "p2", "get", {}, 5, 15, 0),  # overlaps the put: may miss it
        op(2, "p3", "get", {}, 5, 15, 1),  # or see it
    ]
    bad = [*good[:2], op(3, "p3", "get", {}, 40, 50, 0)]  # a stale read after the put returned
    assert linearize.check(good, Register()).status == LINEARIZABLE
    v = linearize.check(bad, Register())
    assert v.status == NOT_LINEARIZABLE and not v.partitioned and v.failing_partition == "*"
    assert [o.id for o in v.failing_ops] == [0, 3]
    assert v.failing_lines == ["p1 ok put(1) -> None", "p3 ok get() -> 0"]
    assert v.failing_state == "register = 1"


def test_register_parts_are_checked_alone() -> None:
    ops = [
        op(0, "p1", "put", {"name": "x", "value": 1}, 0, 10, None),
        op(1, "p2", "put", {"name": "y", "value": 2}, 0, 10, None),
        op(2, "p1", "get", {"name": "y"}, 20, 30, 2),
        op(3, "p2", "get", {"name": "x"}, 20, 30, 2),  # x never held 2
    ]
    v = linearize.check(ops, Registers())
    assert v.status == NOT_LINEARIZABLE and v.partitioned and v.failing_partition == "x"
    assert linearize.check(ops[:3], Registers()).status == LINEARIZABLE


def test_the_store_model_blurs_the_index_only_within_a_topic() -> None:
    remove = op(0, "p", "remove_memory", {"topic": "A"}, 0, 10, NOT_FOUND)
    state = StoreKindModel().init()
    assert StoreKindModel().step(state, remove)[0] is False  # no MEMORY.md: "no index" expected
    assert StoreKindModel(within_topic=True).step(state, remove)[0] is True


@pytest.mark.parametrize("module", ["linearize", "dive"])
def test_the_checker_imports_no_model(module: str) -> None:
    """Porcupine's split: ``linearize`` and its fast path know histories, never the store or
    its oracles."""
    tree = ast.parse((Path(linearize.__file__).parent / f"{module}.py").read_text("utf-8"))
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert imported <= {"__future__", "time", "dataclasses", "typing", "collections.abc", "history", "dive"}, imported
