"""The JS facade over the reference (issue 18): openpi's memory-core.mjs API, answered by serve.

A small probe of our own (``facade_probe.mjs``) imports the facade under a temp store and
calls exports of each kind; its answers must be the reference's own. The facade's extra ops
(``constants``, ``upsert_index_line``, ``maintain_index``) are checked in-process too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peer_suites import FACADE
from memconform.reference import INITIAL_MEMORY, MAX_BYTES, Store, parse_index_line, to_slug
from memconform.reference.clock import ControlledClock, parse_instant
from memconform.reference.serve import Server

PROBE = Path(__file__).with_name("facade_probe.mjs")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# SPEC §0 Operations: the JS core's exports, plus INITIAL_RULES_JSONC (S-CFG-2's default text).
EXPORTS = sorted(
    [
        "getMemoryDir", "getMemoryIndex", "parseRules", "renderRulesToMarkdown", "readMemoryIndex",
        "retireRecapEntries", "parseIndexLine", "toSlug", "upsertIndexLine", "maintainIndex",
        "executeWriteMemory", "executeRemoveMemory", "executePinMemory", "writeHandoff",
        "replaceLatestHandoffWithCompactionSummary", "readHandoff", "readIndexEntries",
        "readTopicContent", "searchMemory", "detectIncompleteTask", "decideCompactionAction",
        "buildConsolidationPrompt", "buildCompactionConsolidationPrompt", "_resetCarryOver",
        "MEMORY_RULES", "HANDOFF_FILE", "MAX_LINES", "MAX_BYTES", "DEFAULT_STALE_DAYS",
        "DEFAULT_INJECT_INTERVAL", "DEFAULT_HANDOFF_KEEP", "DEFAULT_AUTO_RESUME_AFTER_THRESHOLD",
        "DEFAULT_CONSOLIDATE_ON_COMPACT", "DEFAULT_SHARED_DIR", "MAX_SUMMARY_LENGTH",
        "RESERVED_TOPIC_SLUG", "MAX_HANDOFF_SUMMARY_BYTES", "INITIAL_MEMORY", "INITIAL_RULES_JSONC",
        "MEMCONFORM_IMPLEMENTATION",  # ours: who answers, for the driver's hello (issue 22)
    ]
)


def store_env(root: Path) -> dict[str, str]:
    return {
        "PI_CODING_AGENT_DIR": str(root / "pi"),
        "PI_SHARED_MEMORY_HOME": str(root),
        "HOME": str(root),
        "TZ": "UTC",
    }


def probe(root: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **store_env(root), "MEMCONFORM_PYTHON": python}
    return subprocess.run(
        ["node", str(PROBE), str(FACADE)], env=env, capture_output=True, text=True, timeout=60
    )


def test_facade_path_prints_the_shipped_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["facade-path"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == FACADE and printed.is_file() and printed.name == "reference-core.mjs"
    assert main(["facade-path", "--python"]) == 0
    assert capsys.readouterr().out.strip() == sys.executable


@needs_node
def test_probe_answers_are_the_references(tmp_path: Path) -> None:
    """S-PATH-1/3 paths captured at import, pure functions, a write, reads, errors, in-place upsert."""
    done = probe(tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    ref = Store(store_env(tmp_path))
    assert out["exports"] == EXPORTS
    assert out["MEMORY_RULES"] == ref.paths.memory_rules == str(tmp_path / "pi" / "memory.jsonc")
    assert out["HANDOFF_FILE"] == ref.paths.handoff_file
    assert (out["MAX_BYTES"], out["INITIAL_MEMORY"]) == (MAX_BYTES, INITIAL_MEMORY)
    assert out["toSlug"] == {"value": to_slug("Hello, World!")}
    line = parse_index_line("\t- [A](a b.md)x")
    assert line is not None and out["parseIndexLine"]["value"]["filename"] == line.filename == "a b.md"
    assert out["notALine"] == {"value": None}
    assert out["write"] == {"value": 'Created memory topic "Probe Topic" (probe-topic.md).'}
    assert out["entries"]["value"][0]["pinned"] is True  # as written, before the final unpin
    assert out["search"]["value"] == [h.to_js() for h in ref.search_memory("body")]
    assert out["remove"]["value"].startswith("No entry found")
    assert out["noArgs"]["error"] == "TypeError"  # destructuring, as the JS signature does
    assert out["upsertInPlace"] is True and out["upserted"][1].startswith("- [Topic](t.md) [pin] ")
    assert out["maintain"]["value"] == ["- [Probe Topic](probe-topic.md) 2020-01-01 [stale?] -- s"]
    assert out["promise"] == {"value": True}
    assert out["patchedFs"] == {"value": "still-works"}  # the channel kept its own fs calls
    pins = {e.filename: e.pinned for e in ref.read_index_entries()}
    assert pins == {"probe-topic.md": False, "x.md": False}  # the probe's unpin landed


@needs_node
def test_a_python_without_memconform_fails_the_import_with_the_fix(tmp_path: Path) -> None:
    done = probe(tmp_path, python=str(tmp_path / "no-such-python"))
    assert done.returncode != 0
    assert "MEMCONFORM_PYTHON" in done.stderr and "facade-path --python" in done.stderr


def server(tmp_path: Path) -> Server:
    clock = ControlledClock(parse_instant("2026-03-04T05:06:07Z"), "frozen")
    return Server(Store(store_env(tmp_path), clock=clock))


def ask(srv: Server, op: str, args: dict[str, object]) -> object:
    answer, _ = srv.answer(json.dumps({"id": 1, "op": op, "args": args}))
    assert answer["ok"], answer
    return answer["result"]


def test_constants_op_gives_the_load_time_paths(tmp_path: Path) -> None:
    srv = server(tmp_path)
    got = ask(srv, "constants", {})
    assert isinstance(got, dict)
    assert got["MEMORY_RULES"] == str(tmp_path / "pi" / "memory.jsonc")
    assert got["MAX_LINES"] == 300 and got["RESERVED_TOPIC_SLUG"] == "last-session-recap"
    assert got["INITIAL_RULES_JSONC"].startswith("{") and '"shared_dir": false' in got["INITIAL_RULES_JSONC"]


def test_upsert_op_keeps_a_pin_and_stamps_the_store_clock(tmp_path: Path) -> None:
    """S-IDX-3: the replacement keeps [pin]; the stamp is the store's clock (TZ=UTC env)."""
    srv = server(tmp_path)
    lines = ["# Memory Index", "- [Topic](t.md) [pin] 2025-01-01 -- summary"]
    got = ask(srv, "upsert_index_line", {"lines": lines, "filename": "t.md", "name": "T", "summary": "n"})
    assert isinstance(got, list) and got[0] == "# Memory Index"
    assert got[1].startswith("- [T](t.md) [pin] 2026-03-04T") and got[1].endswith(" -- n")


def test_maintain_op_drops_orphans_and_a_config_without_days_stamps_nothing(tmp_path: Path) -> None:
    """S-IDX-4..6 against memoryDir; JS `undefined > 0` is false, so no [stale?] is added or healed."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("x")
    srv = server(tmp_path)
    lines = ["- [A](a.md) 2020-01-01 -- s", "- [B](b.md) -- orphan", "- [A](a.md) 2020-01-01 [stale?] -- s"]
    kept = ask(srv, "maintain_index", {"lines": lines[:2], "config": {"staleAfterDays": 180}, "memoryDir": str(tmp_path / "d")})
    assert kept == ["- [A](a.md) 2020-01-01 [stale?] -- s"]
    untouched = ask(srv, "maintain_index", {"lines": lines[2:], "config": {}, "memoryDir": str(tmp_path / "d")})
    assert untouched == lines[2:]


def test_maintain_op_without_memory_dir_uses_the_active_directory(tmp_path: Path) -> None:
    """The JS default parameter ``memoryDir = getMemoryDir()`` (S-PATH-4), resolved at the call."""
    srv = server(tmp_path)
    local = tmp_path / "pi" / "memory"
    local.mkdir(parents=True)
    (local / "here.md").write_text("x")
    lines = ["- [H](here.md) -- h", "- [G](gone.md) -- g"]
    assert ask(srv, "maintain_index", {"lines": lines, "config": 7}) == lines[:1]


def servers_for(root: Path) -> list[int]:
    """Live processes whose environment names this store (the facade's serve inherits it)."""
    marker = f"PI_CODING_AGENT_DIR={root / 'pi'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_node
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_no_server_outlives_its_js_process(tmp_path: Path) -> None:
    """The server reads end-of-file when the JS process's FIFO end closes, and exits."""
    done = probe(tmp_path)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while servers_for(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers_for(tmp_path) == []
