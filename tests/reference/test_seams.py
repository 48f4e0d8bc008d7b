"""The seams of the reference hold: what a module may import, what a ``Store`` keeps.

DESIGN.md §5: speed lives behind seams chosen at the edge, and the modules a ``Store``
delegates to take only what they use, so nothing imports back into ``store``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import reference
from reference.clock import ControlledClock
from reference.context import StoreContext
from reference.store import Store
from tests.conftest import NOW_MS, StoreEnv

PACKAGE = Path(reference.__file__).parent


def imports_of(module: str) -> set[str]:
    """The reference modules ``module`` imports (relative imports, by module name)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.add(node.module)
    return out


def test_carryover_and_handoff_take_a_context_not_the_store() -> None:
    """No import cycle: ``store`` imports them, they import neither ``store`` nor its type."""
    for module in ("carryover", "handoff", "context"):
        assert "store" not in imports_of(module), module


def test_the_context_carries_the_clock_of_the_moment(env: StoreEnv) -> None:
    """``set_clock`` swaps ``store.clock``; a context asked for afterwards sees the new one."""
    diags: list[str] = []
    store = Store(env.sandbox.env(), clock=ControlledClock(NOW_MS), diagnostics=diags.append)
    before = store.context
    store.clock = ControlledClock(NOW_MS + 86_400_000)
    after = store.context
    assert isinstance(after, StoreContext) and after.fs is store.fs and after.paths == store.paths
    assert before.now_iso() != after.now_iso()
    assert after.now_iso() == store.now_iso()
    after.diag("somewhere", "it failed")
    assert diags == ["[openpi-memory] somewhere: it failed"]
