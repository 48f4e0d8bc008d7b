"""The driver plumbing (issue 3): misbehaving drivers give clear errors and runs go on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import DriverError, PeerSpec, PeerUnavailable, start_driver
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import Scenario

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
    # hello gets the default timeout (a loaded machine starts node slowly); the hang gets 0.3 s
    d = start_driver(fake, {"PATH": __import__("os").environ["PATH"]})
    with pytest.raises(DriverError, match="no answer to 'hang' within 0.3 s"):
        d.call("hang", timeout=0.3)
    assert d.proc is not None and d.proc.poll() is not None
    d.close()


@node_missing
def test_runner_reports_error_and_goes_on(fake: PeerSpec) -> None:
    worker = Worker(fake, timeout=2.0)  # hello must beat it on a loaded machine; the hang costs it once
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
    from memconform.harness.gate.scenarios import ScenarioError, load_file

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
export function executePinMemory() { return 'Pinned.'; }
export function toSlug(topic) { return topic.toLowerCase(); }
"""

FAKE_PLUGIN = """
export default async function () {
  return {
    tool: {
      write_memory: { execute: async args => `wrote ${args.topic} at ${Date.now()}` },
      remove_memory: { execute: async () => 'removed' },
      pin_memory: { execute: async () => 'pinned' },
    },
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
        # no package.json names it and it exports no version: the driver does not guess
        assert (d.hello["impl"], d.hello["version"]) == ("openpi-memory?", "unknown")
        assert d.hello["module"] == str(core) and d.hello["package_json"] is None
        assert {"write_memory", "remove_memory", "to_slug", "set_clock", "reset"} <= d.ops
        assert "search" not in d.ops  # the core lacks searchMemory
        assert "searchMemory" in d.hello["missing"] and "executeWriteMemory" not in d.hello["missing"]
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
        assert (d.hello["impl"], d.hello["version"]) == ("openclaude-memory?", "unknown")
        assert "reset" not in d.ops
        # no repair tool and no session hooks in the stand-in: named, and their ops left out
        assert d.hello["missing"] == sorted([
            "tool.repair_memory.execute", "experimental.chat.system.transform",
            "experimental.session.compacting"])
        assert {"repair_memory", "system_transform"}.isdisjoint(d.ops) and "memory_dir" in d.ops
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
    """docs/ARCHITECTURE.md §5: strace and the explorer are imported only for a faulted scenario."""
    code = (
        "import sys\n"
        "from memconform.harness.commands import conformance\n"
        "from memconform.harness.drivers.peers import PeerSpec\n"
        "from memconform.harness.gate.runner import run_all\n"
        "from memconform.harness.gate.scenarios import discover\n"
        "outcomes = run_all(PeerSpec('python'), discover(run=['write/*'])[:3])\n"
        "assert [o.status for o in outcomes] == ['pass'] * 3, outcomes\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness.faults')))\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# --- who a peer is: from the implementation, never from the driver (issue 12 item 4) -------

HELLO_SCHEMA = json.loads((Path(__file__).parents[2] / "harness" / "drivers" / "protocol.schema.json").read_text())


def assert_valid_hello(result: object) -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    validator = Draft202012Validator({"$defs": HELLO_SCHEMA["$defs"], "$ref": "#/$defs/hello"})
    errors = [e.message for e in validator.iter_errors(result)]
    assert not errors, errors


def stand_in(tmp_path: Path, kind: str, extra: str = "") -> Path:
    """A stand-in core (pi) or plugin (opencode) in ``tmp_path/pkg/sub/``, for package.json tests."""
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    if kind == "pi":
        module = sub / "memory-core.mjs"
        module.write_text(FAKE_CORE + extra)
    else:
        module = sub / "ocl-memory.mjs"
        module.write_text(FAKE_PLUGIN + extra)
        (sub / "ocl-memory-shared.mjs").write_text(FAKE_SHARED)
    return module


def hello_of(spec: PeerSpec) -> dict[str, object]:
    with start_driver(spec, {"PATH": __import__("os").environ["PATH"]}, validate=True) as d:
        assert_valid_hello(d.hello)
        return d.hello


@node_missing
@pytest.mark.parametrize(("kind", "package"), [("pi", "@acme/openpi-memory"), ("opencode", "openclaude-memory")])
def test_name_and_version_come_from_the_implementations_package_json(
    tmp_path: Path, kind: str, package: str
) -> None:
    module = stand_in(tmp_path, kind)
    (tmp_path / "pkg" / "package.json").write_text(json.dumps({"name": package, "version": "9.8.7"}))
    # nearer package.json files that are not the implementation's are passed over
    (module.parent / "package.json").write_text(json.dumps({"type": "module"}))
    hello = hello_of(PeerSpec(kind, str(module)))
    family = "openpi-memory" if kind == "pi" else "openclaude-memory"
    assert (hello["impl"], hello["version"]) == (family, "9.8.7")
    assert hello["package"] == package and hello["version_from"] == "package.json"
    assert hello["package_json"] == str(tmp_path / "pkg" / "package.json")


@node_missing
def test_another_packages_package_json_is_not_the_implementations(tmp_path: Path) -> None:
    module = stand_in(tmp_path, "pi")
    (tmp_path / "pkg" / "package.json").write_text(json.dumps({"name": "my-app", "version": "5.0.0"}))
    hello = hello_of(PeerSpec("pi", str(module)))
    assert (hello["impl"], hello["version"], hello["package_json"]) == ("openpi-memory?", "unknown", None)


@node_missing
@pytest.mark.parametrize("kind", ["pi", "opencode"])
def test_an_exported_version_is_used_when_no_package_json_says(tmp_path: Path, kind: str) -> None:
    module = stand_in(tmp_path, kind, "export const VERSION = '1.2.3';\n")
    hello = hello_of(PeerSpec(kind, str(module)))
    assert (hello["version"], hello["version_from"]) == ("1.2.3", "export VERSION")
    assert str(hello["impl"]).endswith("?")  # a version constant does not confirm the name


def test_the_reference_names_itself(tmp_path: Path) -> None:
    from memconform.harness.drivers.peers import preflight

    [info] = preflight([PeerSpec("python")])
    assert (info.spec, info.name, info.version) == ("python", "memconform-reference", "0.1.0")


EMPTY = "export const x = 1;\n"


def one_line_refusal(spec: PeerSpec, timeout: float = 10.0) -> str:
    from memconform.harness.drivers.peers import preflight

    with pytest.raises(PeerUnavailable) as info:
        preflight([spec], timeout=timeout)
    message = str(info.value)
    assert "\n" not in message and message.startswith(spec.name + ": "), message
    return message


@node_missing
def test_empty_module_as_pi_is_refused_naming_the_missing_exports(tmp_path: Path) -> None:
    module = tmp_path / "empty.mjs"
    module.write_text(EMPTY)
    message = one_line_refusal(PeerSpec("pi", str(module)))
    assert "is not an openpi-memory core" in message
    for name in ("executeWriteMemory()", "executeRemoveMemory()", "executePinMemory()"):
        assert name in message
    assert "0.3.9" not in message


@node_missing
def test_empty_module_as_opencode_is_refused_naming_the_missing_default_export(tmp_path: Path) -> None:
    module = tmp_path / "empty.mjs"
    module.write_text(EMPTY)
    message = one_line_refusal(PeerSpec("opencode", str(module)))
    assert "is not an openclaude-memory plugin: missing export default" in message


@node_missing
def test_plugin_whose_hooks_lack_the_tools_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "ocl-memory.mjs"
    module.write_text("export default async () => ({ tool: { write_memory: { execute: async () => 'ok' } } });\n")
    message = one_line_refusal(PeerSpec("opencode", str(module)))
    assert "tool.remove_memory.execute, tool.pin_memory.execute" in message
    assert "tool.write_memory" not in message


@node_missing
def test_the_refused_driver_still_runs_nothing(tmp_path: Path) -> None:
    """Every op, not only hello, answers the refusal: no worker can drive an empty module."""
    from memconform.harness.drivers.peers import Driver

    module = tmp_path / "empty.mjs"
    module.write_text(EMPTY)
    d = Driver(PeerSpec("pi", str(module)), {"PATH": __import__("os").environ["PATH"]})
    with pytest.raises(DriverError, match="hello failed: .*missing exports executeWriteMemory"):
        d.start()
    assert d.proc is not None and d.proc.poll() is not None  # not left running


@node_missing
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("throw new Error('boom at import\\nsecond line');\n", "cannot import {m}: Error: boom at import (at file://"),
        ("export const a = 1;\nfunction (\n",
         "cannot import {m}: SyntaxError: Function statements require a function name (at {m}:2)"),
        ("import './no-such-helper.mjs';\n", "cannot import {m}: Error [ERR_MODULE_NOT_FOUND]: Cannot find module"),
    ],
    ids=["throws", "syntax-error", "missing-import"],
)
@pytest.mark.parametrize("kind", ["pi", "opencode"])
def test_module_that_fails_to_import_is_one_line(tmp_path: Path, kind: str, source: str, expected: str) -> None:
    module = tmp_path / "broken.mjs"
    module.write_text(source)
    message = one_line_refusal(PeerSpec(kind, str(module)))
    assert expected.format(m=module) in message
    assert "second line" not in message.split(" (stderr:")[0]  # the first line of the JS error only


@node_missing
def test_plugin_function_that_throws_is_one_line(tmp_path: Path) -> None:
    module = tmp_path / "ocl-memory.mjs"
    module.write_text("export default async () => { throw new TypeError('no client'); };\n")
    message = one_line_refusal(PeerSpec("opencode", str(module)))
    assert "the plugin function threw: TypeError: no client" in message


@node_missing
def test_driver_that_dies_at_hello_shows_its_stderr(tmp_path: Path) -> None:
    script = tmp_path / "dies.mjs"
    script.write_text(
        "process.stderr.write('first complaint\\nlast words before dying\\n');\n"
        "process.stdin.once('data', () => process.exit(4));\n"
    )
    message = one_line_refusal(PeerSpec("node", str(script)))
    assert "driver exited (status 4) during 'hello'" in message
    assert message.endswith("(stderr: first complaint | last words before dying)")


@node_missing
def test_driver_that_hangs_at_hello_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "hangs.mjs"
    script.write_text("process.stdin.resume();\n")
    message = one_line_refusal(PeerSpec("node", str(script)), timeout=0.5)
    assert "no answer to 'hello' within 0.5 s" in message


@node_missing
def test_junk_at_hello_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "junk.mjs"
    script.write_text("process.stdin.once('data', () => process.stdout.write('Welcome!\\n'));\n")
    assert "junk on stdout during 'hello'" in one_line_refusal(PeerSpec("node", str(script)))


@pytest.mark.parametrize("kind", ["pi", "opencode"])
def test_missing_or_directory_module_is_one_line(tmp_path: Path, kind: str) -> None:
    spec = PeerSpec.parse(f"{kind}:/nonexistent/memory-core.mjs")  # parsing names, it does not look
    assert one_line_refusal(spec) == f"{kind}:/nonexistent/memory-core.mjs: no such file"
    assert one_line_refusal(PeerSpec.parse(f"{kind}:{tmp_path}")).endswith("is a directory, not a module file")


def test_stderr_tail_drops_frames_banners_and_repeats() -> None:
    from memconform.harness.drivers.peers import stderr_tail

    text = (
        "file:///x.mjs:2\nfunction (\n         ^\n\nSyntaxError: bad\n    at compile (node:internal)\n"
        "memconform driver: cannot import /x.mjs: SyntaxError: bad\n\nNode.js v20.20.2\n"
    )
    # "SyntaxError: bad" is in the message already: the tail adds where node saw it
    assert stderr_tail(text, besides="pi:/x.mjs: hello failed: cannot import /x.mjs: SyntaxError: bad") == (
        "file:///x.mjs:2 | function ("
    )
    assert stderr_tail(text, 1) == "memconform driver: cannot import /x.mjs: SyntaxError: bad"


# --- the real peers (skipped without MEMCONFORM_PI_CORE / MEMCONFORM_OPENCODE_PLUGIN) ----------

REAL_PI = __import__("os").environ.get("MEMCONFORM_PI_CORE", "")
REAL_OPENCODE = __import__("os").environ.get("MEMCONFORM_OPENCODE_PLUGIN", "")


@node_missing
@pytest.mark.skipif(not Path(REAL_OPENCODE or "/nonexistent").is_file(), reason="MEMCONFORM_OPENCODE_PLUGIN not set")
def test_real_opencode_plugin_names_itself_from_its_package_json() -> None:
    from memconform.harness.drivers.peers import preflight

    [info] = preflight([PeerSpec.parse("opencode")])
    assert (info.name, info.version) == ("openclaude-memory", "0.6.6")
    hello = hello_of(PeerSpec.parse("opencode"))
    assert hello["package"] == "@openlines/openclaude-memory" and hello["missing"] == []


@node_missing
@pytest.mark.skipif(not Path(REAL_PI or "/nonexistent").is_file(), reason="MEMCONFORM_PI_CORE not set")
def test_real_pi_core_states_no_version_so_none_is_reported() -> None:
    """The core has no package.json (a stale one was renamed away) and exports no version."""
    from memconform.harness.drivers.peers import preflight

    [info] = preflight([PeerSpec.parse("pi")])
    assert (info.name, info.version) == ("openpi-memory?", "unknown")
    hello = hello_of(PeerSpec.parse("pi"))
    assert hello["missing"] == [] and hello["module"] == str(Path(REAL_PI).resolve())


def test_a_call_on_a_driver_whose_stdin_was_closed_is_a_driver_error(tmp_path: Path) -> None:
    """Ctrl-C closes every driver while writer threads may still be calling one: the write to
    its closed stdin raised ValueError, a traceback in the nemesis's interrupted run; it is a
    ``DriverError`` (the driver is gone) like a broken pipe."""
    from memconform.harness.drivers.sandbox import Sandbox

    sb = Sandbox.create()
    try:
        with start_driver(PeerSpec("python"), sb.env(), cwd=str(sb.root)) as d:
            assert d.proc is not None and d.proc.stdin is not None
            d.proc.stdin.close()
            with pytest.raises(DriverError, match="driver is gone"):
                d.call("read_index")
    finally:
        sb.remove()
