"""The driver plumbing (issue 3): misbehaving drivers give clear errors and runs go on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.peers import DriverError, PeerSpec, PeerUnavailable, start_driver
from harness.runner import Worker
from harness.scenarios import Scenario

FAKE = Path(__file__).with_name("fake_driver.mjs")
node_missing = pytest.mark.skipif(
    __import__("shutil").which("node") is None, reason="node is not installed"
)


def scenario(sid: str, steps: list[dict[str, object]]) -> Scenario:
    data = {"id": sid, "clauses": ["S-WRITE-1"], "steps": steps}
    return Scenario.from_data(data, Path(f"/virtual/{sid}.json"))


@pytest.fixture
def fake(tmp_path: Path) -> PeerSpec:
    return PeerSpec("node", str(FAKE))


def test_peer_names_parse() -> None:
    assert PeerSpec.parse("python").kind == "python"
    assert PeerSpec.parse("pi:/x/memory-core.mjs") == PeerSpec("pi", "/x/memory-core.mjs")
    with pytest.raises(PeerUnavailable, match="unknown peer"):
        PeerSpec.parse("bogus:1")


def test_pi_without_path_or_env_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMCONFORM_PI_CORE", raising=False)
    with pytest.raises(PeerUnavailable, match="MEMCONFORM_PI_CORE"):
        PeerSpec.parse("pi")


def test_python_driver_answers_hello_and_ops(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "a"), "PI_SHARED_MEMORY_HOME": str(tmp_path)}
    env["PATH"] = __import__("os").environ["PATH"]
    with start_driver(PeerSpec("python"), env, cwd=str(tmp_path), validate=True) as d:
        assert d.hello["impl"] == "memconform-reference"
        assert {"write_memory", "set_clock", "reset"} <= d.ops
        answer = d.call("to_slug", {"topic": "Node.js & npm!"})
        assert answer.ok and answer.result == "nodejs-npm"
        bad = d.call("no_such_op")
        assert not bad.ok and bad.error is not None and bad.error["kind"] == "unsupported"


@node_missing
@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("crash", "driver exited (status 3)"),
        ("junk", "junk on stdout"),
        ("wrong_id", "has id"),
    ],
)
def test_misbehaving_driver_gives_clear_error(fake: PeerSpec, tmp_path: Path, op: str, message: str) -> None:
    d = start_driver(fake, {"PATH": __import__("os").environ["PATH"]}, validate=True)
    try:
        with pytest.raises(DriverError, match=re.escape(message)) as info:
            d.call(op)
        if op == "crash":
            assert "crashing on purpose" in info.value.stderr
    finally:
        d.kill()
        d.close()


@node_missing
def test_hanging_driver_is_killed_after_timeout(fake: PeerSpec) -> None:
    d = start_driver(fake, {"PATH": __import__("os").environ["PATH"]}, timeout=0.3)
    with pytest.raises(DriverError, match="no answer to 'hang' within 0.3 s"):
        d.call("hang")
    assert d.proc is not None and d.proc.poll() is not None
    d.close()


@node_missing
def test_runner_reports_error_and_goes_on(fake: PeerSpec) -> None:
    worker = Worker(fake, timeout=0.5)
    try:
        crashed = worker.run(scenario("x/crash", [{"op": "crash"}]))
        hung = worker.run(scenario("x/hang", [{"op": "hang"}]))
        ok = worker.run(
            scenario("x/echo", [{"op": "echo", "args": {"value": 7}, "expect": {"result": 7}}])
        )
        mismatch = worker.run(
            scenario("x/mismatch", [{"op": "echo", "args": {"value": "a\nb"}, "expect": {"result": "a\nc"}}])
        )
    finally:
        worker.close()
    assert crashed.status == "error" and "exited" in crashed.reason
    assert "crashing on purpose" in crashed.stderr
    assert hung.status == "error" and "no answer" in hung.reason
    assert ok.status == "pass"
    assert mismatch.status == "fail"
    assert "line 2" in mismatch.failures[0].detail


@node_missing
def test_protocol_validation_rejects_bad_answers(tmp_path: Path) -> None:
    script = tmp_path / "bad.mjs"
    script.write_text(
        "import readline from 'node:readline';\n"
        "for await (const l of readline.createInterface({input: process.stdin})) {\n"
        "  const {id} = JSON.parse(l);\n"
        "  process.stdout.write(JSON.stringify({id, ok: false}) + '\\n');\n}\n"
    )
    with pytest.raises(DriverError, match="protocol violation"):
        start_driver(PeerSpec("node", str(script)), {"PATH": __import__("os").environ["PATH"]}, validate=True)


def test_schema_error_names_file_and_json_path(tmp_path: Path) -> None:
    from harness.scenarios import ScenarioError, load_file

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"id": "x/y", "clauses": ["S-WRITE-1"], "steps": [{"op": 3}]}))
    with pytest.raises(ScenarioError) as info:
        load_file(bad)
    assert info.value.path == str(bad)
    assert info.value.json_path == "$.steps[0].op"


# --- the node drivers over stand-in modules (the shared protocol.mjs, without the real peers) --

FAKE_CORE = """
let writes = 0;
export function executeWriteMemory(args) {
  writes += 1;
  console.log('a core that logs must not corrupt the protocol');
  return `${args.topic} #${writes} at ${new Date().toISOString()} (${Date.now()})`;
}
export function executeRemoveMemory() {
  const err = new Error('disk full');
  err.code = 'ENOSPC';
  throw err;
}
export function toSlug(topic) { return topic.toLowerCase(); }
"""

FAKE_PLUGIN = """
export default async function () {
  return {
    tool: { write_memory: { execute: async args => `wrote ${args.topic} at ${Date.now()}` } },
    'tool.execute.after': async () => { console.log('after'); },
  };
}
"""

FAKE_SHARED = """
export const readMemoryRules = () => '{}';
export const parseRules = () => ({ mode: 'local' });
export const maybeCarryOverToSharedDir = async () => {};
export const getMemoryDir = () => '/stand-in/memory';
"""

NOW = "2026-08-07T01:02:50.000Z"
NOW_MS = 1786064570000


@node_missing
def test_pi_driver_over_a_stand_in_core(tmp_path: Path) -> None:
    core = tmp_path / "memory-core.mjs"
    core.write_text(FAKE_CORE)
    env = {"PATH": __import__("os").environ["PATH"]}
    with start_driver(PeerSpec("pi", str(core)), env, validate=True) as d:
        assert d.hello["impl"] == "openpi-memory"
        assert {"write_memory", "remove_memory", "to_slug", "set_clock", "reset"} <= d.ops
        assert "search" not in d.ops  # the core lacks searchMemory
        assert d.call("set_clock", {"now": NOW, "mode": "frozen", "tz": "UTC"}).ok
        first = d.call("write_memory", {"topic": "t"})
        assert first.ok and first.result == f"t #1 at {NOW} ({NOW_MS})"
        failed = d.call("remove_memory", {"topic": "t"})
        assert failed.error == {"kind": "Error", "message": "disk full", "code": "ENOSPC"}
        unsupported = d.call("search", {"query": "x"})
        assert unsupported.error is not None and unsupported.error["kind"] == "unsupported"
        assert "searchMemory" in unsupported.error["message"]
        unknown = d.call("no_such_op")
        assert unknown.error == {"kind": "unsupported", "message": 'unsupported op: "no_such_op"'}
        bad_clock = d.call("set_clock", {"now": "yesterday", "mode": "frozen"})
        assert bad_clock.error is not None and bad_clock.error["kind"] == "TypeError"
        assert d.call("reset").ok  # a fresh module instance: its state starts anew
        assert d.call("set_clock", {"now": NOW, "mode": "offset"}).ok
        again = d.call("write_memory", {"topic": "t"})
        assert isinstance(again.result, str) and again.result.startswith("t #1 at 2026-08-07T01:02:5")
        assert "must not corrupt" in d.stderr()


@node_missing
def test_opencode_driver_over_a_stand_in_plugin(tmp_path: Path) -> None:
    plugin = tmp_path / "ocl-memory.mjs"
    plugin.write_text(FAKE_PLUGIN)
    (tmp_path / "ocl-memory-shared.mjs").write_text(FAKE_SHARED)
    env = {"PATH": __import__("os").environ["PATH"]}
    with start_driver(PeerSpec("opencode", str(plugin)), env, validate=True) as d:
        assert d.hello["impl"] == "openclaude-memory" and "reset" not in d.ops
        assert d.call("set_clock", {"now": NOW, "mode": "frozen", "tz": "UTC"}).ok
        assert d.call("write_memory", {"topic": "t"}).result == f"wrote t at {NOW_MS}"
        assert d.call("memory_dir").result == "/stand-in/memory"
        retire = d.call("retire_recaps")
        assert retire.error == {
            "kind": "unsupported",
            "message": 'unsupported op "retire_recaps": the plugin has no recap retirement',
        }
        assert "after" in d.stderr()


def test_a_plain_conformance_run_loads_no_fault_machinery() -> None:
    """DESIGN.md §5: strace and the explorer are imported only for a faulted scenario."""
    code = (
        "import sys\n"
        "from harness.commands import conformance\n"
        "from harness.peers import PeerSpec\n"
        "from harness.runner import run_all\n"
        "from harness.scenarios import discover\n"
        "outcomes = run_all(PeerSpec('python'), discover(run=['write/*'])[:3])\n"
        "assert [o.status for o in outcomes] == ['pass'] * 3, outcomes\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness.faults')))\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
