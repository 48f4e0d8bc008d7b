"""The ``session`` machine on a real host: generated sessions run through the host and its
extension, judged against the reference's session model after every step (issue 23 item 7).

Why: the host scenarios pin the orders we thought of; Hypothesis draws prompts (with tool
calls), manual and threshold compactions, new sessions (a restarted process, or pi's ``/new``
inside the running one) and configuration edits, and finds the orders we did not.  One host
process lives across steps (pi's ``--mode rpc`` takes each step as a command on stdin); the
steps so far are a host script, and after each the reference's session model
(``expected``) runs that script and ``judge`` compares what the host showed the model and
left on disk — one judge for scenarios and machine.  A failure shrinks to a short script
and is exported as a host scenario (``<export dir>/hosts/``) that ``memconform host
--scenarios FILE`` replays.

What is drawn stays what a scripted model can drive without guessing the host: a manual
compaction only after two runs in the session (pi keeps the latest run), a threshold
compaction only after one, and the follow-up runs it queues are scripted as many as the
reference's model predicts (a host that queues others leaves turns unplayed or runs out of
them: a finding).  OpenCode runs as one ``opencode serve`` process (``opencode_serve``) with
the same rules, judged by the OpenCode judge; after its threshold compaction it queues its own
"continue" run unless the plugin's consolidation replaces it (a prompt without a reply), which
is OpenCode's behaviour (SPEC has no handoff or follow-up for the peer, PEER-15), scripted as such.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ..drivers.sandbox import Sandbox
from ..gate.scenarios import Scenario
from ..machines.base import CONFIG, Machine, guarded, note
from ..oracles.findings import VIOLATION, Finding
from .expected import expected
from .judge import judge
from .judge_opencode import judge_opencode
from .play import Player
from .run import HostSpec, mirror_for_opencode
from .script import HostScript, parse_action

REPORTED_USAGE = 125000
"""A threshold turn's reported prompt tokens: past pi's threshold (``THRESHOLD_TOKENS``) and
past OpenCode's overflow for the fake model (context 128000, output 4096), as the scenarios'."""
HOST_STEP_SECONDS = 60.0
"""The least time a host step gets, whatever the per-op ``--timeout`` (pi starts in seconds)."""
CLAUSES = ("S-INJECT-2", "S-INJECT-4", "S-INJECT-9", "S-INJECT-10", "S-INJECT-11", "S-TOOLS-5")
RECAP, PLAIN = "Last Session Recap", "Editor"
TOPICS = ("Build", "Deploy Key", RECAP)  # the recap is refused (S-WRITE-2) and retired by a new session (S-RETIRE-3)
TEXTS = (
    "need to deploy the fix",
    "all work is complete",
    "- waiting for review",
    "* checked the **logs** today",
    "first line\nnext step is the tests",
    "```\ncode\n```",
    "# Heading only",
)
CONFIGS: tuple[dict[str, Any], ...] = (
    {},
    {"inject_every_n_turns": 1},
    {"inject_every_n_turns": 2, "handoff_keep": 1},
    {"handoff_keep": 0},
    {"auto_resume_after_threshold_compaction": True, "inject_every_n_turns": 1},
    {"auto_resume_after_threshold_compaction": True, "handoff_keep": 2},
    {"consolidate_on_compact": True},
    {"always_persist": ["Fixes"], "max_lines": 50},
)
OPENCODE_CONFIG = "home/.config/opencode/memory.jsonc"  # where the plugin reads its local config


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    topic = draw(st.sampled_from(TOPICS))
    kind = draw(st.sampled_from(("write", "write", "pin", "remove")))
    if kind == "write":
        args: dict[str, Any] = {"topic": topic, "content": draw(st.sampled_from(("port 5433", "uses vim", "in the vault"))),
                                "summary": f"about {topic.lower()}"}
        if draw(st.booleans()):
            args["mode"] = draw(st.sampled_from(("append", "replace")))
        if draw(st.booleans()):
            args["pin"] = draw(st.booleans())
        return {"name": "write_memory", "arguments": args}
    if kind == "pin":
        return {"name": "pin_memory", "arguments": {"topic": topic, "pin": draw(st.booleans())}}
    return {"name": "remove_memory", "arguments": {"topic": topic}}


class HostSessionMachine(Machine):
    """Host actions on one live host, the reference's session model after each."""

    NAME = "session"
    CLAUSES = CLAUSES
    EXPORT_UNDER = "hosts"
    spec: ClassVar[HostSpec | None] = None
    timeout: ClassVar[float] = HOST_STEP_SECONDS

    @classmethod
    def bind(cls, spec: HostSpec, timeout: float) -> type[HostSessionMachine]:
        cls.spec, cls.timeout = spec, max(timeout, HOST_STEP_SECONDS)
        return cls

    def __init__(self) -> None:
        super().__init__()
        if type(self).spec is None:
            raise RuntimeError("the host session machine runs only when bound to a host (bind)")
        self.host: HostSpec = type(self).spec  # type: ignore[assignment]
        self.sandbox = Sandbox.create()
        self.given: dict[str, str] = {}
        self.script: list[dict[str, Any]] = []
        self.runs = 0  # runs since the session began or was last compacted
        self.config: dict[str, Any] = {}  # the configuration in force
        self.player = Player(self.host.kind, self.host.path, self.host.host, self.sandbox, type(self).timeout,
                             model_lifetime=3600.0).__enter__()

    def teardown(self) -> None:
        try:
            self.player.__exit__()
        finally:
            self.sandbox.remove()

    # --- the script so far, as a host scenario ----------------------------------------------

    def scenario_data(self, ident: str = "hosts/session-machine") -> dict[str, Any]:
        data: dict[str, Any] = {"id": ident, "clauses": list(CLAUSES),
                                "description": "the session machine's steps on a host",
                                "host": {"hosts": [self.host.kind], "script": list(self.script)}}
        if self.given:
            data["given"] = {"files": dict(self.given)}
        return data

    def _scenario(self, extra: tuple[dict[str, Any], ...] = ()) -> Scenario:
        data = self.scenario_data()
        data["host"]["script"] += list(extra)
        return Scenario.from_data(data, self.sandbox.root / "session-machine.json")

    def _step(self, action: dict[str, Any], rule: str, outcome: str = "ok") -> None:
        """Play one action on the host, then judge everything so far."""
        self.script.append(action)
        self.player.do(parse_action(action))
        if action["do"] in ("session", "new_session"):
            self.player.ready()  # the session's start hooks have run: their effects are judged now
        self._judge()
        self.executed(rule, outcome)

    def _judge(self) -> None:
        scenario = self._scenario()
        want = expected(scenario, HostScript.of(scenario), self.player.summaries)
        judged = judge_opencode if self.host.kind == "opencode-host" else judge
        found: list[Finding] = judged(want, self.player.observed(), impl=self.host.label, scenario=scenario.id)
        for f in found:
            if f.severity != VIOLATION:
                note(f"{f.severity} {f.kind}")
        wrong = [f for f in found if f.severity == VIOLATION]
        if wrong:
            raise AssertionError(f"{self.host.label} differs from the session model after step {len(self.script)} "
                                 f"({self.script[-1]['do']}): " + "; ".join(f"{f.kind} [{f.clause}] {f.op}: {f.evidence}"
                                                                            for f in wrong))

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        """The steps up to the failing one as a host scenario (``memconform host --scenarios``)."""
        defect = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        body = json.dumps([self.given, self.script], sort_keys=True)
        digest = hashlib.sha1(f"{defect}\n{body}".encode()).hexdigest()[:10]
        data = self.scenario_data(f"regressions/session-{self.host.kind}-{digest}")
        data["host"]["script"].append({"do": "end"})
        data["description"] = f"Shrunk failing example of the session machine on {self.host.label} ({defect})."
        data["tags"] = ["regression", "machine:session"]
        data["regression"] = {"defect": defect, "found_in": self.host.label, "model": self.NAME,
                              "command": f"memconform host --impl {self.host.kind}:… --scenarios FILE"}
        if CONFIG.seed is not None:
            data["regression"]["seed"] = CONFIG.seed
        return data

    # --- rules -----------------------------------------------------------------------------

    @initialize(config=st.sampled_from(CONFIGS))
    @guarded
    def start(self, config: dict[str, Any]) -> None:
        """S-INJECT-2: a store with a configuration, and a host process starting a session."""
        self.config = config
        if config:
            text = json.dumps(config) + "\n"
            self.given["agent/memory.jsonc"] = text
            self.sandbox.put("agent/memory.jsonc", text.encode())
            if self.host.kind == "opencode-host":
                mirror_for_opencode(self.sandbox)
        self._step({"do": "session"}, "start", "configured" if config else "defaults")

    @rule(text=st.sampled_from(TEXTS))
    @guarded
    def ask(self, text: str) -> None:
        """A user prompt the model answers with text (S-INJECT-4..8: what it is shown).  (Named
        to sort first of the one-argument rules: Hypothesis shrinks towards it, a cheap step.)"""
        self._prompt([], text)

    @rule(calls=st.lists(tool_calls(), min_size=1, max_size=2), text=st.sampled_from(TEXTS))
    @guarded
    def tool_prompt(self, calls: list[dict[str, Any]], text: str) -> None:
        """A user prompt on which the model calls tools, then answers (S-TOOLS-5)."""
        self._prompt(calls, text)

    def _calls(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tool calls as the host gets them: on OpenCode the recap topic is an ordinary one
        (PEER-12: the plugin does not reserve it, so SPEC's refusal would differ by design)."""
        if self.host.kind != "opencode-host":
            return calls
        return [{**c, "arguments": {**c["arguments"], "topic": PLAIN}} if c["arguments"]["topic"] == RECAP else c
                for c in calls]

    def _prompt(self, calls: list[dict[str, Any]], text: str) -> None:
        turns: list[dict[str, Any]] = [{"tool_calls": [c]} for c in self._calls(calls)] + [{"text": text}]
        self.runs += 1
        self._step({"do": "prompt", "text": f"prompt {len(self.script)}", "model": turns},
                   "tool_prompt" if calls else "prompt", f"{len(calls)} tool calls" if calls else "text")

    @precondition(lambda self: self.runs >= 1)
    @rule(calls=st.lists(tool_calls(), max_size=2), text=st.sampled_from(TEXTS))
    @guarded
    def threshold_prompt(self, calls: list[dict[str, Any]], text: str) -> None:
        """A run whose reported usage passes the threshold: the host compacts after it
        (S-INJECT-9), and the extension may queue a follow-up (S-INJECT-10)."""
        turns: list[dict[str, Any]] = [{"tool_calls": [c]} for c in self._calls(calls)]
        turns.append({"text": text, "prompt_tokens": REPORTED_USAGE})
        action = {"do": "prompt", "text": f"prompt {len(self.script)}", "model": turns}
        if self.host.kind == "opencode-host":  # its own continue, unless the plugin consolidates
            count = 0 if self.config.get("consolidate_on_compact") else 1
        else:
            probe = self._scenario((action,))
            count = len(expected(probe, HostScript.of(probe), self.player.summaries).prompts[-1].followups)
        turns += [{"text": f"follow-up {i + 1} done"} for i in range(count)]
        self.runs = 1 + count
        self._step(action, "threshold_prompt", f"{count} follow-ups")

    @precondition(lambda self: self.runs >= 2)
    @rule()
    @guarded
    def compact(self) -> None:
        """Manual compaction (S-INJECT-9, S-HANDOFF): no follow-up (S-INJECT-10)."""
        self.runs = 1
        self._step({"do": "compact"}, "compact")

    @rule(same_process=st.booleans())
    @guarded
    def new_session(self, same_process: bool) -> None:
        """A new session: the user restarts the host (fresh process state, S-INJECT-1, -2), or
        starts one in the running host (pi's ``/new``, OpenCode's new session: module state kept)."""
        self.runs = 0
        self._step({"do": "new_session" if same_process else "session"}, "new_session",
                   "same process" if same_process else "restart")

    @rule(config=st.sampled_from(CONFIGS))
    @guarded
    def reconfigure(self, config: dict[str, Any]) -> None:
        """The user edits the configuration between prompts: the next hook reads it (S-INJECT-11)."""
        self.config = config
        text = json.dumps(config) + "\n"
        if self.host.kind == "opencode-host":
            self.script.append({"do": "put_file", "path": OPENCODE_CONFIG, "content": text})
            self.player.do(parse_action(self.script[-1]))
        self._step({"do": "put_file", "path": "agent/memory.jsonc", "content": text}, "reconfigure")

