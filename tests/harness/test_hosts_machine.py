"""The ``session`` machine on a real host (issue 23 item 7): generated sessions through pi and
an extension, judged against the reference's session model after every step (S-INJECT-2,
S-INJECT-4, S-INJECT-9, S-INJECT-10, S-INJECT-11, S-TOOLS-5).

A few steps with our example extension run whenever pi 1.6.0 is cached (``make hosts``); a
broken extension is caught at its first prompt and the exported script replays as a failing
host scenario.  The full Hypothesis path (shrink, export, ``memconform host`` replay) runs
under ``MEMCONFORM_SLOW=1``; the real openpi extension when ``MEMCONFORM_PI_EXTENSION`` names it.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memconform.harness import cli
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.regressions import write
from memconform.harness.gate.scenarios import load_file
from memconform.harness.hosts.cache import DEFAULT_PI
from memconform.harness.hosts.machine import HostSessionMachine
from memconform.harness.hosts.run import HostSpec
from memconform.harness.hosts.script import HostScript
from memconform.harness.machines import bind, load, unbind
from memconform.harness.machines.base import run_machine

from .test_hosts import EXAMPLE, mutant_extension, opencode_or_skip, pi_or_skip

SEED = int(os.environ.get("MEMCONFORM_SEED") or random.SystemRandom().randrange(2**32))


@pytest.fixture
def unbound() -> Iterator[None]:
    yield
    unbind()


def test_a_host_binds_only_the_session_machine(unbound: None) -> None:
    """A host runs host actions: the store machines refuse it, and a core driver is refused by
    the session machine with the way to reach its hooks (the extension in its host)."""
    spec = HostSpec("pi-host", EXAMPLE, DEFAULT_PI)
    assert "only the session machine" in (bind("store_model", spec, frozenset()) or "")
    assert "only the session machine" in (bind("differential", spec, frozenset()) or "")
    assert "pi-host:EXTDIR" in (bind("session", PeerSpec("pi", "/x/memory-core.mjs"), frozenset()) or "")
    assert bind("session", spec, frozenset(), timeout=5) is None
    assert load("session") is HostSessionMachine and HostSessionMachine.timeout >= 60
    unbind()
    assert load("session") is not HostSessionMachine


def test_on_opencode_the_recap_topic_is_an_ordinary_one(unbound: None) -> None:
    """PEER-12: the plugin does not reserve ``last-session-recap``; SPEC's refusal (S-WRITE-2)
    would differ by design on every such call, so OpenCode gets another topic."""
    recap = {"name": "remove_memory", "arguments": {"topic": "Last Session Recap"}}
    for kind, topic in (("opencode-host", "Editor"), ("pi-host", "Last Session Recap")):
        bind("session", HostSpec(kind, EXAMPLE, DEFAULT_PI), frozenset())
        machine = HostSessionMachine()
        try:
            assert machine._calls([recap, WRITE]) == [{**recap, "arguments": {"topic": topic}}, WRITE]
        finally:
            machine.teardown()


WRITE = {"name": "write_memory", "arguments": {"topic": "Build", "content": "uses make", "summary": "about build"}}


def _walk(spec: HostSpec, first: dict[str, object], then: dict[str, object]) -> list[dict[str, Any]]:
    """Every rule once, judged after each step; the script it played."""
    bind("session", spec, frozenset(), timeout=120)
    machine = HostSessionMachine()
    try:
        machine.start(first)
        machine.tool_prompt([WRITE], "need to deploy the fix")
        machine.ask("all work is complete")
        machine.compact()
        machine.threshold_prompt([], "- waiting for review")
        machine.new_session(True)
        machine.reconfigure(then)
        machine.new_session(False)
        machine.tool_prompt([{"name": "pin_memory", "arguments": {"topic": "Build", "pin": True}}], "pinned")
        machine.threshold_prompt([], "all work is complete")
        machine.ask("first line\nnext step is the tests")
        return list(machine.script)
    finally:
        machine.teardown()


def test_every_host_action_of_the_machine_matches_the_session_model_on_pi(unbound: None) -> None:
    """Each rule through pi 1.6.0 and our extension, judged after every step: tool calls,
    manual and threshold compaction (with the follow-ups the model predicts: ``Continue.``,
    then a consolidation), ``/new`` in the same process, a configuration edit, a restart."""
    pi_or_skip()
    script = _walk(HostSpec("pi-host", EXAMPLE, DEFAULT_PI), {"auto_resume_after_threshold_compaction": True},
                   {"consolidate_on_compact": True})
    assert [a["do"] for a in script] == ["session", "prompt", "prompt", "compact", "prompt", "new_session", "put_file",
                                         "session", "prompt", "prompt", "prompt"]
    thresholds = [a["model"] for a in script if a["do"] == "prompt" and "prompt_tokens" in str(a["model"])]
    assert [len(m) for m in thresholds] == [2, 2]  # the run's reply and one follow-up run each


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_OPENCODE_PLUGIN"), reason="MEMCONFORM_OPENCODE_PLUGIN names no openclaude plugin")
def test_every_host_action_of_the_machine_on_opencode_serve(unbound: None) -> None:
    """The same walk through ``opencode serve`` and the openclaude plugin: manual compaction,
    a threshold compaction followed by OpenCode's own continue run, then one whose continue the
    plugin's consolidation replaces (no run), a new session in the same server."""
    opencode_or_skip()
    plugin = Path(os.environ["MEMCONFORM_OPENCODE_PLUGIN"])
    script = _walk(HostSpec("opencode-host", plugin, "opencode-1.18.33"), {}, {"consolidate_on_compact": True})
    thresholds = [a["model"] for a in script if a["do"] == "prompt" and "prompt_tokens" in str(a["model"])]
    assert [len(m) for m in thresholds] == [2, 1]


def test_session_machine_runs_under_hypothesis_on_pi(unbound: None, tmp_path: Path) -> None:
    """``run_machine`` with the machine bound to pi: seeded, every step reached the host."""
    pi_or_skip()
    print(f"session machine on pi: seed {SEED} (MEMCONFORM_SEED={SEED} replays it)")
    assert bind("session", HostSpec("pi-host", EXAMPLE, DEFAULT_PI), frozenset()) is None
    machine = load("session")
    machine.stats.reset()
    stats = run_machine(machine, profile="host", seed_value=SEED, export_to=tmp_path, max_examples=1,
                        stateful_step_count=3)
    assert stats.examples >= 1 and stats.steps >= 2 and stats.executed == stats.steps
    assert any(k.startswith("start:") for k in stats.outcomes), stats.outcomes
    assert not list(tmp_path.rglob("*.json")), "a passing run exported a regression"


def test_a_broken_extension_fails_at_its_first_prompt_and_exports_a_host_scenario(unbound: None, tmp_path: Path) -> None:
    """S-INJECT-5: the step is judged as it runs; the steps so far are a host scenario (the
    schema's), the one ``memconform host --scenarios`` replays (MEMCONFORM_SLOW replays it)."""
    pi_or_skip()
    mutant = mutant_extension(tmp_path)
    bind("session", HostSpec("pi-host", mutant, DEFAULT_PI), frozenset())
    machine = HostSessionMachine()
    try:
        machine.start({})
        with pytest.raises(AssertionError, match=r"host-system-prompt \[S-INJECT-5\]") as caught:
            machine.ask("all work is complete")
        data = machine.scenario_for(caught.value)
    finally:
        machine.teardown()
    assert data is not None and data["host"]["script"][-1] == {"do": "end"}
    scenario = load_file(write(data, tmp_path / "hosts"))
    assert [a.do for a in HostScript.of(scenario).actions] == ["session", "prompt", "end"]


@pytest.mark.skipif(os.environ.get("MEMCONFORM_SLOW") != "1", reason="shrinking on a real host takes minutes (MEMCONFORM_SLOW=1)")
def test_fuzz_session_on_a_broken_extension_shrinks_exports_and_replays(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``memconform fuzz --machine session --impl pi-host:…``: the failure is a finding whose
    shrunk script is a host scenario under ``<export>/hosts/`` that replays as a failure."""
    pi_or_skip()
    mutant = mutant_extension(tmp_path)
    out = tmp_path / "export"
    code = cli.main(["fuzz", "--machine", "session", "--impl", f"pi-host:{mutant.parent}", "--minutes", "0.1",
                     "--seed", str(SEED), "--export-dir", str(out), "--json", str(tmp_path / "f.json"), "--quiet"])
    assert code == 1, capsys.readouterr()
    findings = json.loads((tmp_path / "f.json").read_text())["findings"]
    saved = [Path(f["regression"]) for f in findings if f.get("regression")]
    assert saved and all(p.parent == out / "hosts" for p in saved), findings
    script = json.loads(saved[0].read_text())["host"]["script"]
    assert [a["do"] for a in script][-1] == "end" and len(script) <= 4, script  # shrunk: start, a prompt, end
    code = cli.main(["host", "--impl", f"pi-host:{mutant.parent}", "--scenarios", str(saved[0]), "--no-export",
                     "--json", str(tmp_path / "r.json")])
    assert code == 1, capsys.readouterr()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stats"]["failed"] == 1
    assert {f["clause"] for f in report["findings"] if f["kind"] == "host-system-prompt"} == {"S-INJECT-5"}


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_EXTENSION"), reason="MEMCONFORM_PI_EXTENSION names no openpi extension folder")
def test_session_machine_drives_the_real_openpi_extension(unbound: None, tmp_path: Path) -> None:
    pi_or_skip()
    ext = Path(os.environ["MEMCONFORM_PI_EXTENSION"])
    print(f"session machine on pi + openpi: seed {SEED}")
    bind("session", HostSpec("pi-host", ext / "index.ts" if ext.is_dir() else ext, DEFAULT_PI), frozenset())
    stats = run_machine(load("session"), profile="host", seed_value=SEED, export_to=tmp_path, max_examples=3)
    assert stats.steps and stats.executed == stats.steps


def test_fuzz_refuses_a_host_without_its_extension_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fuzz", "--machine", "session", "--impl", "pi-host:/nonexistent"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no extension at" in err and len(err.splitlines()) == 1 and err.startswith("memconform fuzz: ")
