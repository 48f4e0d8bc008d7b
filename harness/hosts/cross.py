"""One shared store, two real hosts: a pi session and an OpenCode session take turns.

Why: the co-writer contract (docs/SHARED_STORE.md) is about what users run, two agents on
one ``~/.agents/memory``; here each prompt of a cross script (``"cross": true``, each
prompt ``"on"`` a host) runs in that host with its extension, and after every prompt the
co-writer oracle (``oracles.coexist``) judges what each tool call kept of what it did not
aim at; over the whole script, flip-flops and split topics.  Problems are hazards, as in
``memconform conformance --with``.
"""

from __future__ import annotations

import time

from ..drivers.actions import place_given
from ..drivers.sandbox import Sandbox
from ..gate.scenarios import Scenario
from ..oracles import coexist
from ..oracles.coexist import store_files
from ..oracles.findings import HAZARD, VIOLATION, Finding
from .fake_model import FakeModel
from .opencode import OpenCodeSession
from .pi import HostError, PiSession
from .run import HostOutcome, HostSpec, host_failure, mirror_for_opencode, status_of
from .script import PROMPT, SESSION, HostScript


def is_cross(scenario: Scenario) -> bool:
    return bool(scenario.data.get("host", {}).get("cross"))


def run_cross(pi: HostSpec, opencode: HostSpec, scenario: Scenario, *, timeout: float = 120.0) -> HostOutcome:
    script = HostScript.of(scenario)
    started = time.monotonic()
    sandbox = Sandbox.create()
    marks: list[coexist.Mark] = []
    unchanged: list[Finding] = []
    try:
        place_given(sandbox, scenario.given)
        mirror_for_opencode(sandbox)
        work = sandbox.root / "work"
        work.mkdir()
        stderr = sandbox.root / "host-stderr.txt"
        with FakeModel(lifetime=timeout * (len(script.actions) + 2)) as model:
            sessions: dict[str, PiSession | OpenCodeSession] = {
                "pi-host": PiSession(pi.path, sandbox.agent_dir, sandbox.home, work, model.base_url, host=pi.host,
                                     timeout=timeout),
                "opencode-host": OpenCodeSession(opencode.path, sandbox.home, work, model.base_url, timeout=timeout),
            }
            try:
                for s in sessions.values():
                    s.start(stderr)
                on = "pi-host"
                for number, (on, action) in enumerate(zip(_hosts(scenario), script.actions, strict=True), 1):
                    if action.do == SESSION:
                        sessions[on].end()
                        sessions[on].start(stderr)
                    if action.do != PROMPT:
                        continue
                    before = store_files(sandbox.snapshot())
                    model.queue(list(action.turns))
                    sessions[on].prompt(action.text)
                    after = store_files(sandbox.snapshot())
                    label = pi.label if on == "pi-host" else opencode.label
                    if any(t.tool_calls for t in action.turns) and before == after:
                        unchanged.append(Finding("host-no-effect", VIOLATION, "S-TOOLS-5", label, f"prompt {number}",
                                                 evidence=f"{scenario.id}: the prompt's tool call left the store unchanged"))
                    for name, args in (c for t in action.turns for c in t.tool_calls):
                        marks.append(coexist.Mark(number, "A" if on == "pi-host" else "B", label, name, args,
                                                  before, after, True))
            except HostError as e:
                stopped = [host_failure(pi if on == "pi-host" else opencode, scenario, e)]
                return HostOutcome(scenario, status_of(stopped), time.monotonic() - started, stopped, str(e))
            finally:
                for s in sessions.values():
                    s.end()
        problems = [p for m in marks for p in coexist.check_step(m)] + coexist.flip_flops(marks) \
            + coexist.split_topics(marks)
        found = [Finding(p.kind, HAZARD, p.clause, f"{pi.label} with {opencode.label}", p.where,
                         evidence=f"{scenario.id}: expected {p.expected}; got {p.actual}"[:500],
                         reproduce=f"memconform host --impl pi-host:… --impl opencode-host:… --run {scenario.id}")
                 for p in problems] + unchanged
        return HostOutcome(scenario, status_of(found) if marks else "error", time.monotonic() - started, found,
                           reason="" if marks else "no tool call ran")
    finally:
        sandbox.remove()


def _hosts(scenario: Scenario) -> list[str]:
    return [str(a.get("on", "pi-host")) for a in scenario.data["host"]["script"]]

