"""One op vocabulary (harness/drivers/ops.schema.json): everything that speaks or uses the peer
protocol stays within it.

When one of these fails because you added an op (or a clock mode), the message says exactly
what to add to the schema file; nothing else needs to change for the vocabulary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memconform.harness.drivers import ops
from memconform.harness.drivers.peers import PEERS_DIR, configured_peers, start_driver
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.gate.scenarios import FILE_ACTIONS, SCENARIOS_DIR

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "harness/drivers/ops.schema.json"


def how_to_add(op: str, where: str) -> str:
    return (f"op {op!r} ({where}) is not in {SCHEMA}: add \"$defs\".\"ops\".\"{op}\" = "
            "{\"group\": …, \"description\": what it does and the SPEC clause, \"args\": JSON Schema of its args, "
            "\"result\": JSON Schema of its ok result}, and add it to \"properties\".\"op\".\"enum\" and to the "
            "\"allOf\" list (one if/then per op); then document it in docs/IMPLEMENTING.md's op table")


def missing(names: set[str], where: str) -> list[str]:
    return [how_to_add(op, where) for op in sorted(names - ops.vocabulary())]


def test_the_schema_is_a_valid_schema_and_every_entry_is_complete() -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    data = ops.schema()
    Draft202012Validator.check_schema(data)
    listed = set(data["properties"]["op"]["enum"])
    branched = {b["if"]["properties"]["op"]["const"] for b in data["allOf"]}
    assert listed == set(ops.vocabulary()) == branched
    for op in ops.vocabulary():
        e = ops.entry(op)
        assert {"group", "description", "args", "result"} <= set(e), op
        Draft202012Validator.check_schema(e["args"])
        Draft202012Validator.check_schema(e["result"])


def test_requests_and_results_are_checked_against_it() -> None:
    assert ops.request_errors({"op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"}}) == []
    assert ops.request_errors({"op": "write_memory", "args": {"topic": "A", "colour": "red"}})
    assert ops.request_errors({"op": "no_such_op"})
    assert ops.result_errors("hello", {"impl": "x", "version": "1", "pid": 1, "ops": ["hello"]}) == []
    assert ops.result_errors("hello", {"impl": "x"})
    assert ops.result_errors("index_entries", [{"name": "A", "filename": "a.md", "summary": "s", "pinned": "yes"}])


def _serve_hello() -> dict[str, object]:
    sandbox = Sandbox.create()
    try:
        env = sandbox.env()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, "-m", "memconform.reference", "serve"], input='{"id": 0, "op": "hello"}\n',
                             capture_output=True, text=True, env=env, cwd=sandbox.root, timeout=60, check=False)
        answer: dict[str, object] = json.loads(out.stdout.splitlines()[0])
        return answer
    finally:
        sandbox.remove()


def test_the_reference_serves_only_ops_of_the_vocabulary() -> None:
    answer = _serve_hello()
    assert answer["ok"], answer
    result = answer["result"]
    assert isinstance(result, dict)
    assert missing(set(result["ops"]), "served by python -m memconform.reference serve (reference/serve.py op table)") == []
    assert ops.result_errors("hello", result) == []


def _driver_table(path: Path) -> set[str]:
    """The keys of a node driver's ``const OPS = { … };`` table, read from its source."""
    text = path.read_text(encoding="utf-8")
    start = text.index("const OPS = {")
    end = text.index("\n};", start)
    # ``  name: …`` entries, and ``  ...(cond ? { name: … } : {}),`` conditional ones
    return set(re.findall(r"^  (?:\.\.\..*?\{ )?([a-z_]+):", text[start:end], re.M))


@pytest.mark.parametrize("driver", ["pi_core.mjs", "opencode_plugin.mjs"])
def test_each_node_driver_offers_only_ops_of_the_vocabulary(driver: str) -> None:
    table = _driver_table(PEERS_DIR / driver)
    assert {"hello", "write_memory", "exit"} <= table  # the table was found, not an empty match
    assert missing(table, f"in harness/drivers/node/{driver}'s OPS table") == []


def test_the_js_facade_calls_only_ops_of_the_vocabulary() -> None:
    facade = PEERS_DIR / "reference-core.mjs"
    if not facade.exists():
        pytest.skip("no JS facade (issue 18) in this tree")
    called = set(re.findall(r"\bcall\('([a-z_]+)'", facade.read_text(encoding="utf-8")))
    assert called, "no call('op') found in the facade"
    assert missing(called, "called by harness/drivers/node/reference-core.mjs") == []


def test_every_op_a_scenario_sends_is_in_the_vocabulary() -> None:
    used: dict[str, str] = {}
    for path in sorted(SCENARIOS_DIR.rglob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        for step in json.loads(path.read_text(encoding="utf-8")).get("steps", []):
            if step["op"] not in FILE_ACTIONS:
                used.setdefault(step["op"], str(path.relative_to(SCENARIOS_DIR)))
    assert len(used) > 20
    assert [how_to_add(op, f"sent by scenarios/{where}") for op, where in sorted(used.items())
            if op not in ops.vocabulary()] == []


def _mode_lists() -> dict[str, set[str]]:
    """Every place that names clock modes: the reference, the node clock, the scenario schema."""
    from memconform.reference import clock

    found = {"reference/clock.py CLOCK_MODES": set(getattr(clock, "CLOCK_MODES", ("frozen", "offset")))}
    node_clock = PEERS_DIR / "clock.mjs"
    if node_clock.exists():
        m = re.search(r"CLOCK_MODES\s*=\s*\[([^\]]*)\]", node_clock.read_text(encoding="utf-8"))
        if m:
            found["harness/drivers/node/clock.mjs CLOCK_MODES"] = set(re.findall(r"'([a-z]+)'", m.group(1)))
    schema = json.loads((SCENARIOS_DIR / "scenario.schema.json").read_text(encoding="utf-8"))
    found["scenarios/scenario.schema.json clock.mode"] = set(schema["properties"]["clock"]["properties"]["mode"]["enum"])
    return found


def test_every_clock_mode_in_use_is_in_the_vocabulary() -> None:
    known = set(ops.clock_modes())
    problems = [
        f"clock mode {mode!r} ({where}) is not in {SCHEMA}: add it to "
        "\"$defs\".\"ops\".\"set_clock\".\"args\".\"properties\".\"mode\".\"enum\" and say what it does in that "
        "entry's description and in docs/IMPLEMENTING.md (set_clock)"
        for where, modes in _mode_lists().items() for mode in sorted(modes - known)
    ]
    assert problems == []


@pytest.mark.parametrize("spec", configured_peers(), ids=lambda s: s.kind)
def test_a_real_peers_hello_lists_only_ops_of_the_vocabulary(spec: object) -> None:
    from memconform.harness.drivers.peers import PeerSpec

    assert isinstance(spec, PeerSpec)
    sandbox = Sandbox.create()
    try:
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=30) as driver:
            assert missing(driver.ops, f"listed in hello by {spec.kind}") == []
            assert ops.result_errors("hello", driver.hello) == []
    finally:
        sandbox.remove()


def test_the_guide_documents_every_op() -> None:
    guide = ROOT / "docs" / "IMPLEMENTING.md"
    if not guide.exists():
        pytest.skip("no docs/ (installed wheel)")
    text = guide.read_text(encoding="utf-8")
    assert [f"op {op!r} is in {SCHEMA} but not in docs/IMPLEMENTING.md's op table: add a row | `{op}` | … |"
            for op in sorted(ops.vocabulary()) if f"| `{op}` |" not in text] == []
