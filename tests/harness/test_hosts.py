"""The real hosts (issue 23): the scripted model, the judge, and host scenarios run in pi.

The scripted model and the judge are tested on their own (fast, no host).  The host scenarios
run in the real pi with our example extension (harness/hosts/example, over the reference
facade) whenever the pinned pi is in the cache (``make hosts``); CI installs it and sets
``MEMCONFORM_REQUIRE_HOSTS=1`` so that a missing host fails instead of skipping.  The real
openpi extension runs when ``MEMCONFORM_PI_EXTENSION`` names its folder.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PEERS_DIR
from memconform.harness.gate.scenarios import SCENARIOS_DIR, discover
from memconform.harness.hosts.cache import DEFAULT_PI, HOSTS, HostMissing, node_bin_dir, pi_cli
from memconform.harness.hosts.fake_model import EXHAUSTED, FakeModel, Turn
from memconform.harness.hosts.judge import schema_shape, tool_differences
from memconform.harness.hosts.run import HostSpec, run_scenario
from memconform.harness.hosts.script import HostScript
from memconform.reference.tools import TOOLS

EXAMPLE = Path(__file__).resolve().parents[2] / "harness" / "hosts" / "example" / "index.ts"
HOST_SCENARIOS = [sc for sc in discover(SCENARIOS_DIR / "hosts")]
PI_SCENARIOS = [sc for sc in HOST_SCENARIOS if "pi-host" in HostScript.of(sc).hosts and not sc.data["host"].get("cross")]
OC_SCENARIOS = [sc for sc in HOST_SCENARIOS
                if "opencode-host" in HostScript.of(sc).hosts and not sc.data["host"].get("cross")]


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as answer:
        data: dict[str, object] = json.loads(answer.read())
        return data


def test_the_fake_model_plays_its_script_and_records_every_request() -> None:
    """S-TOOLS-5 on the wire: a scripted tool call goes out, its result comes back recorded;
    a request without tools (a title, a summary) consumes no scripted turn."""
    tools = [{"type": "function", "function": {"name": "write_memory", "parameters": {"type": "object"}}}]
    with FakeModel([Turn(tool_calls=(("write_memory", {"topic": "t"}),)), Turn(text="done")]) as model:
        first = _post(model.base_url, {"messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": "hi"}],
                                       "tools": tools})
        side = _post(model.base_url, {"messages": [{"role": "user", "content": "title?"}]})
        second = _post(model.base_url, {"messages": [{"role": "tool", "content": "Saved."}], "tools": tools})
        third = _post(model.base_url, {"messages": [{"role": "user", "content": "more"}], "tools": tools})
    call = first["choices"][0]["message"]["tool_calls"][0]  # type: ignore[index]
    assert call["function"]["name"] == "write_memory" and json.loads(call["function"]["arguments"]) == {"topic": "t"}
    assert side["choices"][0]["message"]["content"] == model.side_text  # type: ignore[index]
    assert second["choices"][0]["message"]["content"] == "done"  # type: ignore[index]
    assert third["choices"][0]["message"]["content"] == EXHAUSTED  # type: ignore[index]
    assert [r.scripted for r in model.requests] == [True, False, True, True]
    assert model.requests[0].system == "SYS" and model.requests[2].tool_results() == ["Saved."]
    assert model.requests[0].tools[0]["name"] == "write_memory"


def test_a_tool_schema_the_model_cannot_call_is_a_difference() -> None:
    """S-TOOLS-2: a missing ``summary`` or a free-text ``mode`` is what the judge reports."""
    want = {n: dict(t["parameters"]) for n, t in TOOLS.items()}
    good = [{"name": n, "parameters": s} for n, s in want.items()]
    assert tool_differences(want, good) == []
    broken = json.loads(json.dumps(good))
    del broken[0]["parameters"]["properties"]["summary"]
    broken[0]["parameters"]["required"].remove("summary")
    broken[0]["parameters"]["properties"]["mode"] = {"type": "string"}
    found = tool_differences(want, broken[:2])
    assert [c for c, _ in found] == ["S-TOOLS-2", "S-TOOLS-1"]
    assert schema_shape({"properties": {"mode": {"anyOf": [{"const": "append"}, {"const": "replace"}]}}}) == {
        "properties": {"mode": "one of append|replace"}, "required": []}


def test_every_host_scenario_has_a_script_for_a_known_host() -> None:
    assert len(HOST_SCENARIOS) >= 8
    for sc in HOST_SCENARIOS:
        script = HostScript.of(sc)
        assert script.actions and set(script.hosts) <= {"pi-host", "opencode-host"}, sc.id
        assert sc.id == "hosts/" + sc.path.stem


def opencode_or_skip() -> None:
    from memconform.harness.hosts.cache import opencode_binary, opencode_plugin_deps

    try:
        opencode_binary()
        opencode_plugin_deps()
    except HostMissing as e:
        pytest.skip(str(e))


def pi_or_skip(host: str = DEFAULT_PI) -> None:
    try:
        node_bin_dir(HOSTS[host])
        pi_cli(HOSTS[host])
    except HostMissing as e:
        if os.environ.get("MEMCONFORM_REQUIRE_HOSTS") == "1":
            pytest.fail(f"MEMCONFORM_REQUIRE_HOSTS=1 but {e}")
        pytest.skip(str(e))


def mutant_extension(folder: Path) -> Path:
    """The example extension without S-INJECT-5's last sentence, as ``folder/index.ts``."""
    source = EXAMPLE.read_text(encoding="utf-8")
    mutant = source.replace("'../../drivers/node/reference-core.mjs'", repr(str(PEERS_DIR / "reference-core.mjs")))
    mutant = mutant.replace("Topic files referenced here can be read on-demand for detail.", "")
    assert mutant != source
    (folder / "index.ts").write_text(mutant, encoding="utf-8")
    return folder / "index.ts"


@pytest.mark.parametrize("scenario", PI_SCENARIOS, ids=[sc.id for sc in PI_SCENARIOS])
def test_example_extension_in_pi_matches_the_session_model(scenario: object) -> None:
    """S-INJECT-2..10, S-HANDOFF, S-TOOLS through the real pi with our example extension."""
    pi_or_skip()
    outcome = run_scenario(HostSpec("pi-host", EXAMPLE, DEFAULT_PI), scenario)  # type: ignore[arg-type]
    assert outcome.status in ("pass", "hazard"), outcome.reason + "\n" + "\n".join(f.line() for f in outcome.findings)


def test_a_broken_extension_fails_its_host_scenario(tmp_path: Path) -> None:
    """S-INJECT-5: an extension whose Global Memory block lacks its last sentence is caught."""
    pi_or_skip()
    sc = next(s for s in HOST_SCENARIOS if s.id == "hosts/write-then-inject")
    outcome = run_scenario(HostSpec("pi-host", mutant_extension(tmp_path), DEFAULT_PI), sc)
    assert outcome.status == "fail"
    assert {f.clause for f in outcome.findings if f.kind == "host-system-prompt"} == {"S-INJECT-5"}


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_EXTENSION"), reason="MEMCONFORM_PI_EXTENSION names no openpi extension folder")
@pytest.mark.parametrize("scenario", PI_SCENARIOS, ids=[sc.id for sc in PI_SCENARIOS])
def test_real_openpi_extension_in_pi(scenario: object) -> None:
    pi_or_skip()
    ext = Path(os.environ["MEMCONFORM_PI_EXTENSION"])
    outcome = run_scenario(HostSpec("pi-host", ext / "index.ts" if ext.is_dir() else ext, DEFAULT_PI), scenario)  # type: ignore[arg-type]
    if getattr(scenario, "id", "") == "hosts/hostile-fifo-handoff":
        # A-3: openpi 0.3.9 reads HANDOFF.md blocking, so pi hangs at the first prompt
        assert [f.kind for f in outcome.findings] == ["host-stuck"], outcome.reason
        return
    assert outcome.status in ("pass", "hazard"), outcome.reason + "\n" + "\n".join(f.line() for f in outcome.findings)


def _netns_or_skip() -> None:
    import shutil
    import subprocess

    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode:
        pytest.skip("this machine does not allow a network namespace (unshare -n)")


def test_offline_namespace_reaches_nothing_but_loopback() -> None:
    """Inside ``--offline``'s namespace a public address is unreachable and loopback works:
    a host that tried the network would fail its step there."""
    import subprocess
    import sys

    _netns_or_skip()
    code = ("from memconform.harness.hosts import offline;"
            "from memconform.harness.hosts.fake_model import FakeModel;"
            "import urllib.request;"
            "m = FakeModel().__enter__();"
            "print(offline.probe());"
            "print(urllib.request.urlopen(m.base_url + '/models', timeout=5).status)")
    done = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["Network is unreachable", "200"]


def test_host_scenario_runs_offline(tmp_path: Path) -> None:
    """``memconform host --offline``: the pi host and the example extension need no network."""
    import subprocess
    import sys

    _netns_or_skip()
    pi_or_skip()
    done = subprocess.run([sys.executable, "-m", "memconform.harness", "host", "--impl", f"pi-host:{EXAMPLE.parent}",
                           "--offline", "--no-export", "--run", "hosts/write-then-inject", "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "offline: only loopback" in done.stdout
    assert json.loads((tmp_path / "r.json").read_text())["stats"]["passed"] == 1


@pytest.mark.skipif(not os.environ.get("MEMCONFORM_OPENCODE_PLUGIN"), reason="MEMCONFORM_OPENCODE_PLUGIN names no openclaude plugin")
@pytest.mark.parametrize("scenario", OC_SCENARIOS, ids=[sc.id for sc in OC_SCENARIOS])
def test_real_openclaude_plugin_in_opencode(scenario: object) -> None:
    opencode_or_skip()
    plugin = Path(os.environ["MEMCONFORM_OPENCODE_PLUGIN"])
    outcome = run_scenario(HostSpec("opencode-host", plugin, "opencode-1.18.33"), scenario, timeout=180)  # type: ignore[arg-type]
    assert outcome.status in ("pass", "hazard"), outcome.reason + "\n" + "\n".join(f.line() for f in outcome.findings)


@pytest.mark.skipif(not (os.environ.get("MEMCONFORM_OPENCODE_PLUGIN") and os.environ.get("MEMCONFORM_PI_EXTENSION")),
                    reason="MEMCONFORM_PI_EXTENSION and MEMCONFORM_OPENCODE_PLUGIN must both name the real peers")
def test_cross_host_shared_store_keeps_each_others_entries() -> None:
    """SS-IDX-3, SS-FMT-3: pi and OpenCode take turns on one shared store; the co-writer
    oracle finds nothing either tool broke of the other's."""
    from memconform.harness.hosts.cross import run_cross

    pi_or_skip()
    ext = Path(os.environ["MEMCONFORM_PI_EXTENSION"])
    sc = next(s for s in HOST_SCENARIOS if s.id == "hosts/cross-pi-opencode-shared")
    outcome = run_cross(HostSpec("pi-host", ext / "index.ts" if ext.is_dir() else ext, DEFAULT_PI),
                        HostSpec("opencode-host", Path(os.environ["MEMCONFORM_OPENCODE_PLUGIN"]), "opencode-1.18.33"), sc)
    assert outcome.status == "pass" and not outcome.findings, outcome.reason + "\n".join(f.line() for f in outcome.findings)


@pytest.mark.parametrize(("argv", "words"), [
    ([], "name a host"),
    (["--impl", "bogus:/x"], "expected pi-host:EXTDIR"),
    (["--impl", "pi-host:/nonexistent"], "no extension at"),
])
def test_host_command_refuses_bad_input_in_one_line(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    from memconform.harness import cli

    assert cli.main(["host", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and err.startswith("memconform host: ")


def test_a_missing_host_says_the_command_that_installs_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31 item 9: a wheel has no Makefile, so "run `make hosts`" told a wheel user nothing."""
    from memconform.harness import cli

    monkeypatch.setenv("MEMCONFORM_HOSTS_CACHE", str(tmp_path))
    for argv in (["host", "--impl", f"pi-host:{EXAMPLE.parent}"],
                 ["fuzz", "--machine", "session", "--impl", f"pi-host:{EXAMPLE.parent}", "--minutes", "0.01"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "python -m memconform.harness.hosts.cache install pi-1.6.0" in err and "make hosts" not in err, err


def test_a_hazard_only_outcome_is_not_a_fail_line_unless_hazards_gate() -> None:
    """Issue 31 item 9: ``host`` printed FAIL for a scenario whose only finding is a hazard
    (a host stuck) and exited 0: a FAIL line and exit 0 must not meet."""
    import argparse

    from memconform.harness.commands.host import _label
    from memconform.harness.hosts.run import HostOutcome, status_of
    from memconform.harness.oracles.findings import HAZARD, VIOLATION, Finding, exit_code, verdict

    stuck = Finding("host-stuck", HAZARD, "", "pi 1.6.0", "script", evidence="x: no answer within 90 s")
    broken = Finding("host-error", VIOLATION, "", "pi 1.6.0", "script", evidence="x: exited 1")
    assert status_of([]) == "pass" and status_of([stuck]) == "hazard" and status_of([stuck, broken]) == "fail"
    sc = HOST_SCENARIOS[0]
    for gate, label, code in (("violation", "HAZARD", 0), ("hazard", "FAIL", 1)):
        args = argparse.Namespace(fail_on=gate)
        assert _label(HostOutcome(sc, status_of([stuck]), 1.0, [stuck]), args) == label
        assert exit_code(verdict([stuck], executed=1, fail_on_hazard=gate == "hazard"),
                         fail_on_hazard=gate == "hazard") == code
