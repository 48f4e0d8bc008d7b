"""Removals that survive a crash (issue 25 item 4): at every crash point of every model, a
topic a shared-store removal dropped from the index is tombstoned (S-INV-7, S-INV-8 3: the
tombstone is written first).  A file neither indexed nor tombstoned is not a harmless orphan
in the shared store: repair or another tool's carry-over resurrects it (S-TOMB-5, S-MIGRATE-3).
"""

from __future__ import annotations

from typing import Any

import pytest

from memconform.harness.faults.cases import CASES
from memconform.harness.faults.explorer import Explorer
from memconform.harness.oracles.crash_judge import (
    Intent,
    check_crash_state,
    check_settled_state,
    published_versions,
)
from memconform.reference import store as store_module

S = "home/.agents/memory"
REMOVE = Intent("remove", removes=frozenset({"a.md"}))


def _states(index_after: bytes, tombstones: bytes | None) -> tuple[dict[str, bytes], dict[str, bytes]]:
    from memconform.harness.drivers.sandbox import SNAPSHOT_DIR

    base = {S: SNAPSHOT_DIR, f"{S}/a.md": b"a\n", f"{S}/b.md": b"b\n"}
    before = {**base, f"{S}/MEMORY.md": b"# Memory Index\n\n- [A](a.md) 2026-08-01 -- a\n- [B](b.md) 2026-08-01 -- b"}
    after = {**base, f"{S}/MEMORY.md": index_after}
    if tombstones is not None:
        after[f"{S}/.ocl-removed"] = tombstones
    return before, after


def test_s_inv_7_an_untombstoned_removal_is_named_at_a_crash_and_when_settled() -> None:
    before, after = _states(b"# Memory Index\n\n- [B](b.md) 2026-08-01 -- b", None)
    crash = check_crash_state(after, before, {f"{S}/MEMORY.md": frozenset({after[f"{S}/MEMORY.md"]})}, REMOVE)
    assert [f.kind for f in crash.violations] == ["removal-unrecorded"], crash.findings
    assert "a.md left the index without a tombstone" in crash.violations[0].detail
    assert [f.kind for f in check_settled_state(after, before, REMOVE)] == ["removal-unrecorded"]
    power = check_crash_state(after, before, {}, REMOVE, power_loss=True)
    assert [f.severity for f in power.findings if f.kind == "removal-unrecorded"] == ["weakness"]


def test_s_inv_7_a_tombstoned_or_still_indexed_removal_is_allowed() -> None:
    before, after = _states(b"# Memory Index\n\n- [B](b.md) 2026-08-01 -- b", b"a.md\n")
    assert not check_crash_state(after, before, published_versions(before, after), REMOVE).findings
    before, after = _states(before[f"{S}/MEMORY.md"], b"a.md\n")  # 8.3: tombstone first, index not yet
    assert not check_crash_state(after, before, published_versions(before, after), REMOVE).violations


def test_s_inv_7_the_reference_never_leaves_an_unrecorded_removal_at_any_crash_point() -> None:
    result = Explorer(recover=False).explore_case(CASES["remove-shared"])
    keys = [k for m in result.models.values() for k in m.by_clause]
    assert result.violations == 0, result.render()
    assert not [k for k in keys if "removal-unrecorded" in k]


def test_s_inv_7_an_index_first_removal_is_caught_by_the_crash_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference whose shared removal publishes the index before the tombstone (the order
    PEER-6 reports of OpenCode's TUI): a crash between the two is an unrecorded removal."""
    pending: list[tuple[Any, str, str]] = []
    real_add, real_publish = store_module.add_tombstone, store_module.Store._publish_index

    def later(fs: Any, directory: str, filename: str) -> None:
        pending.append((fs, directory, filename))

    def publish_then_tombstone(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_publish(self, *args, **kwargs)
        while pending:
            real_add(*pending.pop(0))
        return out

    monkeypatch.setattr(store_module, "add_tombstone", later)
    monkeypatch.setattr(store_module.Store, "_publish_index", publish_then_tombstone)
    result = Explorer(recover=False).explore_case(CASES["remove-shared"])
    keys = [k for m in result.models.values() for k in m.by_clause]
    assert any("removal-unrecorded" in k for k in keys), result.render()
