"""The seams of the reference hold: what a module may import, what a ``Store`` keeps.

docs/ARCHITECTURE.md §5: speed lives behind seams chosen at the edge, and the modules a ``Store``
delegates to take only what they use, so nothing imports back into ``store``.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from memconform import reference
from memconform.reference.clock import ControlledClock
from memconform.reference.context import StoreContext
from memconform.reference.fs import Fs
from memconform.reference.store import Store
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
    from memconform.reference.edge import edge_index_engine, edge_store
    from memconform.reference.index_engine import PlainEngine
    from memconform.reference.index_view import ViewEngine

    assert type(Store(env.sandbox.env()).index_engine) is PlainEngine
    assert type(edge_index_engine({})) is ViewEngine
    assert type(edge_index_engine({"MEMCONFORM_INDEX": "plain"})) is PlainEngine
    assert type(edge_store(env.sandbox.env()).index_engine) is ViewEngine
    engine = ViewEngine()
    assert Store(env.sandbox.env(), index_engine=engine).index_engine is engine


def test_serve_and_the_cli_build_their_store_at_the_edge(env: StoreEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m memconform.reference`` reads the environment when it builds the store, not at import."""
    import io

    from memconform.reference import __main__ as cli
    from memconform.reference import serve as serve_module
    from memconform.reference.index_engine import PlainEngine

    built: list[Store] = []
    from memconform.reference.edge import edge_store as real

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
    assert cli.main(["--agent-dir", env.agent, "list"]) == 3  # no index yet: README's "nothing found"
    assert [type(s.index_engine) for s in built] == [PlainEngine, PlainEngine]
    assert built[1].paths.agent_dir == env.agent


class _RecordingFs(Fs):
    """The real disk, with the name of every call kept."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def lstat(self, path: str) -> os.stat_result:
        self.calls.append("lstat")
        return super().lstat(path)

    def stat(self, path: str) -> os.stat_result:
        self.calls.append("stat")
        return super().stat(path)

    def rename(self, src: str, dst: str) -> None:
        self.calls.append("rename")
        super().rename(src, dst)


def test_s_inv_10_reset_keeps_the_fs_env_diagnostics_and_engine_it_was_built_over(env: StoreEnv) -> None:
    """S-INV-10: ``reset`` forgets process state, not the seams: an in-process server over a
    non-default ``Fs`` must not switch to the real disk (or the process's environment)."""
    from memconform.reference.clock import SystemClock
    from memconform.reference.index_view import ViewEngine
    from memconform.reference.serve import Server

    fs, engine = _RecordingFs(), ViewEngine()
    diags: list[str] = []
    variables = {**env.sandbox.env(), "PI_CODING_AGENT_DIR": env.agent + "-elsewhere"}
    server = Server(Store(variables, fs=fs, clock=ControlledClock(NOW_MS), diagnostics=diags.append, index_engine=engine))
    before = server.store
    assert server.answer('{"id": 1, "op": "reset"}')[0]["ok"]
    assert server.store is not before and isinstance(server.store.clock, SystemClock)
    assert (server.store.fs, server.store.index_engine) == (fs, engine)
    assert server.store.paths == before.paths and server.store.paths.agent_dir == env.agent + "-elsewhere"
    fs.calls.clear()
    answer, _ = server.answer('{"id": 2, "op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"}}')
    assert answer["ok"] and answer["result"] == 'Created memory topic "A" (a.md).'
    assert "rename" in fs.calls  # published through the injected Fs
    assert (Path(env.agent + "-elsewhere") / "memory" / "a.md").is_file()
    assert server.session.store is server.store  # the session and the ops follow the new store
    assert server.answer('{"id": 3, "op": "memory_dir"}')[0]["result"] == env.agent + "-elsewhere/memory"
    (Path(env.agent + "-elsewhere") / "memory.jsonc").write_text("{ not json")
    assert server.answer('{"id": 4, "op": "parse_rules"}')[0]["ok"]
    assert len(diags) == 1 and "memory.jsonc parse failed" in diags[0]  # the injected channel


def test_reset_makes_its_clock_with_the_servers_clock_factory(env: StoreEnv) -> None:
    from memconform.reference.serve import Server

    made: list[ControlledClock] = []

    def new_clock() -> ControlledClock:
        made.append(ControlledClock(NOW_MS + len(made)))
        return made[-1]

    server = Server(env.new_store(), new_clock=new_clock)
    assert server.answer('{"id": 1, "op": "reset"}')[0]["ok"]
    assert server.store.clock is made[0]
    assert server.answer('{"id": 2, "op": "advance_clock", "args": {"seconds": 1}}')[0]["ok"]
