"""Play a host scenario on a real host and judge what it showed the model and left on disk.

The host runs in a sandbox of its own against the fake model; the reference's session model
runs the same script (``expected``); ``judge`` turns every difference into a ``Finding``.
A scenario that could not run (host missing, host error) is an outcome with a reason, not a
pass.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..drivers.actions import place_given
from ..drivers.sandbox import Sandbox
from ..gate.scenarios import Scenario
from ..oracles.findings import HAZARD, VIOLATION, Finding
from .expected import expected
from .judge import Observed, judge
from .judge_opencode import judge_opencode
from .pi import HostError
from .play import Player
from .script import PROMPT, HostScript


@dataclass(frozen=True)
class HostSpec:
    """``pi-host:EXTDIR`` (the folder holding the extension's ``index.ts``) on a pi version."""

    kind: str
    path: Path
    host: str

    @property
    def name(self) -> str:
        """As ``--impl`` names it (rerun commands)."""
        return f"{self.kind}:{self.path.parent if self.path.name == 'index.ts' else self.path}"

    @property
    def label(self) -> str:
        """Host and extension as they name themselves (a ``package.json`` up to three
        folders up), never the path of the machine that ran it."""
        return f"{self.kind} {self.host} + {extension_name(self.path)}"


def extension_name(path: Path) -> str:
    for folder in list(path.parents)[:3]:
        meta = folder / "package.json"
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("name"):
            return f"{data['name']} {data.get('version', '')}".strip()
    return f"{path.parent.name}/{path.name}"


@dataclass
class HostOutcome:
    scenario: Scenario
    status: str  # pass | hazard | fail | skip | error
    seconds: float
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""


def status_of(found: list[Finding]) -> str:
    """``fail`` on a violation, ``hazard`` when only hazards (SPEC allows them: shown, exit 0
    unless ``--fail-on hazard``), else ``pass``: a FAIL line and exit 0 never meet (issue 31
    item 9)."""
    if any(f.severity == VIOLATION for f in found):
        return "fail"
    return "hazard" if any(f.severity == HAZARD for f in found) else "pass"


def run_scenario(spec: HostSpec, scenario: Scenario, *, timeout: float = 90.0, keep: bool = False) -> HostOutcome:
    """One scenario on one host: play, predict, judge."""
    script = HostScript.of(scenario)
    started = time.monotonic()
    if spec.kind not in script.hosts:
        return HostOutcome(scenario, "skip", 0.0, reason=f"not a {spec.kind} scenario")
    if scenario.data["host"].get("cross"):
        return HostOutcome(scenario, "skip", 0.0, reason="a cross-host script: give --impl pi-host:… and --impl opencode-host:…")
    if not any(a.do == PROMPT for a in script.actions):
        return HostOutcome(scenario, "error", 0.0, reason="the script has no prompt: nothing would be checked")
    timeout = float(script.timeout or timeout)
    sandbox = Sandbox.create()
    try:
        place_given(sandbox, scenario.given)
        if spec.kind == "opencode-host":
            mirror_for_opencode(sandbox)
        try:
            seen = _play(spec, script, sandbox, timeout)
        except HostError as e:
            stopped = [host_failure(spec, scenario, e)]
            return HostOutcome(scenario, status_of(stopped), time.monotonic() - started, stopped, str(e))
        want = expected(scenario, script, seen.summaries)
        judged = judge_opencode if spec.kind == "opencode-host" else judge
        found = judged(want, seen, impl=spec.label, scenario=scenario.id)
        return HostOutcome(scenario, status_of(found), time.monotonic() - started, found)
    finally:
        if not keep:
            sandbox.remove()


def host_failure(spec: HostSpec, scenario: Scenario, error: HostError) -> Finding:
    """A host that did not finish a step: stuck (it never settled: a hazard, the user's agent
    hangs) or broken (it exited or refused: a violation)."""
    stuck = "within" in str(error)
    return Finding("host-stuck" if stuck else "host-error", HAZARD if stuck else VIOLATION, "", spec.label,
                   "script", evidence=f"{scenario.id}: {error}",
                   reproduce=f"memconform host --impl {spec.kind}:… --run {scenario.id}")


def _play(spec: HostSpec, script: HostScript, sandbox: Sandbox, timeout: float) -> Observed:
    with Player(spec.kind, spec.path, spec.host, sandbox, timeout,
                model_lifetime=timeout * (len(script.actions) + 2)) as player:
        for action in script.actions:
            player.do(action)
        player.end()
        return player.observed()


def mirror_for_opencode(sandbox: Sandbox) -> None:
    """The scenario's local store and configuration where OpenCode keeps its own
    (``$XDG_CONFIG_HOME/opencode/``): the same store, each tool's local location."""
    target = sandbox.home / ".config" / "opencode"
    config = sandbox.agent_dir / "memory.jsonc"
    if config.is_file():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(config, target / "memory.jsonc")
    local = sandbox.agent_dir / "memory"
    if local.is_dir():
        shutil.copytree(local, target / "memory", symlinks=True, dirs_exist_ok=True)
