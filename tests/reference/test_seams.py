"""The seams of the reference hold: what a module may import, what a ``Store`` keeps.

DESIGN.md §5: speed lives behind seams chosen at the edge, and the modules a ``Store``
delegates to take only what they use, so nothing imports back into ``store``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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


def test_the_index_engine_is_plain_unless_an_entry_point_chooses_the_views(env: StoreEnv) -> None:
    """A ``Store`` runs the S-IDX scans; serve/the CLI/the bench inject a ``ViewEngine``."""
    from reference.edge import edge_index_engine, edge_store
    from reference.index_engine import PlainEngine
    from reference.index_view import ViewEngine

    assert type(Store(env.sandbox.env()).index_engine) is PlainEngine
    assert type(edge_index_engine({})) is ViewEngine
    assert type(edge_index_engine({"MEMCONFORM_INDEX": "plain"})) is PlainEngine
    assert type(edge_store(env.sandbox.env()).index_engine) is ViewEngine
    engine = ViewEngine()
    assert Store(env.sandbox.env(), index_engine=engine).index_engine is engine


def test_serve_and_the_cli_build_their_store_at_the_edge(env: StoreEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m reference`` reads the environment when it builds the store, not at import."""
    import io

    from reference import __main__ as cli
    from reference import serve as serve_module
    from reference.index_engine import PlainEngine

    built: list[Store] = []
    real = serve_module.edge_store

    def recording(*args: object, **kwargs: object) -> Store:
        store = real(*args, **kwargs)  # type: ignore[arg-type]
        built.append(store)
        return store

    for key, value in env.sandbox.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MEMCONFORM_INDEX", "plain")
    monkeypatch.setattr(serve_module, "edge_store", recording)
    monkeypatch.setattr(cli, "edge_store", recording)
    assert serve_module.serve(io.StringIO('{"id": 1, "op": "exit"}\n'), io.StringIO()) == 0
    assert cli.main(["--agent-dir", env.agent, "list"]) == 0
    assert [type(s.index_engine) for s in built] == [PlainEngine, PlainEngine]
    assert built[1].paths.agent_dir == env.agent
