"""The injection state machine under random hook sequences (S-INJECT-1..11, S-HANDOFF, S-COMPACT).

``reference.session.Session`` receives ``session_start``, ``before_agent_start`` (user prompts
with and without ``messageType``, and custom-message runs), ``session_before_compact`` and
``session_compact`` (threshold or manual, with and without ``willRetry``), interleaved with
memory writes and configuration changes.  The machine predicts the four state values, the
exact system prompt of every injected turn, the follow-up messages and the last section of
``HANDOFF.md``.  Invariants: injected turns are 1, N, 2N … after each reset; the handoff is
injected once per compaction; custom-message runs change neither state nor files.

The reference runs in process: the machine calls the session's hooks.  A peer's core driver
has no hook (the injection state machine lives in the pi extension and in the plugin's
system transform, not in the module the drivers load), so ``pi:``/``opencode:`` are refused
with that reason; the extension itself is driven through its real host: ``bind`` with
``pi-host:EXTDIR`` or ``opencode-host:PLUGIN`` makes ``session`` the host variant
(``harness.hosts.machine``), whose rules are host actions judged against this same
reference ``Session`` after each step.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from memconform.reference.clock import ControlledClock
from memconform.reference.session import (
    CONTINUE_MESSAGE,
    GLOBAL_MEMORY_HEADER,
    HANDOFF_HEADER,
    NO_HANDOFF_LINE,
    RULES_HEADER,
    Session,
)
from memconform.reference.store import Store

from ..drivers.peers import PeerSpec
from ..drivers.sandbox import Sandbox, snapshot
from ..gate.scenarios import DEFAULT_NOW_MS
from ..hosts.run import HostSpec
from ..hosts.script import HOST_KINDS
from ..oracles.shadow import stamp
from ..oracles.spec import INITIAL_INDEX
from .base import Machine, guarded

NOW_MS = DEFAULT_NOW_MS
BASE_PROMPT = "BASE_PROMPT"
ASSISTANT_TEXTS = (
    "need to deploy the fix",
    "all work is complete",
    "- waiting for review",
    "* checked the **logs** today",
    "```",
    "# Heading only",
    "first line\nnext step is the tests",
    "",
)
RECAP_LINE = "\n- [Last Session Recap](last-session-recap.md) 2026-08-01 -- recap"
SUMMARIES = ("Summary: tests still pending", "Everything is done.", "")
_INCOMPLETE = re.compile(r"\b(?:need to|waiting for|next step|pending|not done|incomplete|unfinished)\b", re.ASCII | re.I)
_SECTION = re.compile(r"(?:^|(?<=[\n\r\u2028\u2029]))(?=## )")


def _bullets(texts: list[str]) -> list[str]:
    """S-HANDOFF-3 for the texts this machine sends."""
    out: list[str] = []
    for text in texts[-3:]:
        for piece in text.split("\n"):
            p = piece.strip()
            if len(out) >= 15 or not p or p.startswith("```") or re.match(r"#{1,6}\s", p):
                continue
            p = re.sub(r"^[-*]\s+", "", p)
            out.append("- " + re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", p))
    return out


def _sections(text: str) -> list[str]:
    return [p for p in _SECTION.split(text) if p.strip()]


@dataclass
class Config:
    every: int = 5
    keep: int = 3
    auto_resume: bool = False
    consolidate: bool = False
    rules: bool = True

    def text(self) -> str:
        return json.dumps({
            "always_persist": ["Fixes"] if self.rules else [],
            "never_persist": [], "always_ask": [],
            "inject_every_n_turns": self.every, "handoff_keep": self.keep,
            "auto_resume_after_threshold_compaction": self.auto_resume,
            "consolidate_on_compact": self.consolidate,
        })

    def rules_md(self) -> str:
        return "## Always persist\n- Fixes" if self.rules else ""


DRIVES_HOSTS = True
_bound: type[Machine] | None = None


def bind(spec: PeerSpec | HostSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """The reference in process; a host runs the host variant; a core driver is refused."""
    global _bound
    if spec.kind in HOST_KINDS:
        from ..hosts.machine import HostSessionMachine

        assert isinstance(spec, HostSpec)
        _bound = HostSessionMachine.bind(spec, timeout)
        return None
    if spec.kind == "python":
        return None
    return ("the driver loads the core module, which has no hooks (S-INJECT lives in the extension): "
            "drive the extension in its host with --impl pi-host:EXTDIR or opencode-host:PLUGIN")


def bound_machine() -> type[Machine] | None:
    """The host variant ``bind`` chose, else None (the reference machine below)."""
    return _bound


def unbind() -> None:
    global _bound
    _bound = None


class SessionMachine(Machine):
    """Hook events against ``Session``: exact prompts, follow-ups, state and HANDOFF.md."""

    NAME = "session"
    CLAUSES = ("S-INJECT-3", "S-INJECT-4", "S-INJECT-7", "S-INJECT-10")
    EXAMPLES_SCALE = 1.5

    def __init__(self) -> None:
        super().__init__()
        self.sandbox = Sandbox.create()
        self.clock = ControlledClock(NOW_MS)
        self.diagnostics: list[str] = []
        self.store = Store(self.sandbox.env(), clock=self.clock, diagnostics=self.diagnostics.append)
        self.session = Session(self.store)
        self.config = Config()
        # the prediction: S-INJECT-1 state, the handoff file's sections, messages sent so far
        self.injected, self.turn, self.consumed = False, 0, False
        self.last_summary: object = None
        self.sections: list[str] = []
        self.expected_diags: list[str] = []

    def teardown(self) -> None:
        shutil.rmtree(self.sandbox.root, ignore_errors=True)

    @property
    def root(self) -> Path:
        return self.sandbox.root

    def _names(self, value: Any) -> Any:
        """Sandbox paths as scenario placeholders, for exported expectations."""
        text = json.dumps(value)
        text = text.replace(str(self.sandbox.local_dir), "${LOCAL}").replace(str(self.sandbox.agent_dir), "${AGENT}")
        return json.loads(text)

    def _hook(self, name: str, event: dict[str, Any], expected: object, sent: list[dict[str, str]]) -> None:
        before = len(self.session.sent)
        result = self.session.handle(name, event)
        got_sent = [asdict(m) for m in self.session.sent[before:]]
        step = self.recorder.step("hook", {"name": name, "event": event})
        if all(m["text"] == CONTINUE_MESSAGE for m in sent):
            step["expect"] = {"result": self._names({"result": expected, "sent": sent})}
        else:
            step["expect"] = {"result_contains": ["last-session-recap"]}
        assert result == expected, f"{name} {event!r}:\n  model:     {expected!r}\n  reference: {result!r}"
        if sent and sent[0]["text"] != CONTINUE_MESSAGE:  # consolidation prompt: wording is ours
            assert len(got_sent) == 1 and got_sent[0]["deliver_as"] == "followUp", got_sent
            assert "last-session-recap" in got_sent[0]["text"], got_sent[0]["text"]
            summary = sent[0]["text"]
            if summary:
                assert summary in got_sent[0]["text"], "the compaction summary is not in the prompt"
        else:
            assert got_sent == sent, f"{name}: follow-ups {got_sent!r}, expected {sent!r}"

    # --- setup and outside changes --------------------------------------------------------

    @initialize(every=st.sampled_from((5, 1, 2, 3)), keep=st.sampled_from((3, 1, 0)), auto=st.booleans(), cons=st.booleans(), rules=st.booleans())
    @guarded
    def configure(self, every: int, keep: int, auto: bool, cons: bool, rules: bool) -> None:
        self.config = Config(every, keep, auto, cons, rules)
        data = self.config.text().encode()
        (self.root / "agent/memory.jsonc").write_bytes(data)
        self.recorder.given_file("agent/memory.jsonc", data)
        self.executed("configure")

    @rule(field=st.sampled_from(("every", "keep", "auto_resume", "consolidate", "rules")), data=st.data())
    @guarded
    def reconfigure(self, field: str, data: st.DataObject) -> None:
        """S-INJECT-11: configuration changes apply on the next hook call."""
        choices: dict[str, Any] = {
            "every": st.sampled_from((1, 2, 5)), "keep": st.sampled_from((0, 1, 3)),
        }
        setattr(self.config, field, data.draw(choices.get(field, st.booleans())))
        text = self.config.text().encode()
        (self.root / "agent/memory.jsonc").write_bytes(text)
        self.recorder.put_file("agent/memory.jsonc", text)
        self.executed("reconfigure", field)

    @rule(topic=st.sampled_from(("Alpha", "Beta", "Gamma")))
    @guarded
    def write_memory(self, topic: str) -> None:
        """A memory written between prompts shows at the next injected prompt (S-INJECT-11)."""
        result = self.store.execute_write_memory(topic, "body", f"summary of {topic}")
        self.recorder.step("write_memory", {"topic": topic, "content": "body", "summary": f"summary of {topic}"}, result=result)
        self.executed("write_memory")

    # --- hooks ------------------------------------------------------------------------------

    @rule(recap=st.booleans())
    @guarded
    def session_start(self, recap: bool) -> None:
        """S-INJECT-2; with ``recap`` a retired recap entry waits in the index (S-RETIRE-3)."""
        index = self.root / "agent/memory/MEMORY.md"
        if recap:
            index.parent.mkdir(parents=True, exist_ok=True)
            old = index.read_bytes() if index.exists() else INITIAL_INDEX.encode()
            data = old + RECAP_LINE.encode()
            index.write_bytes(data)
            self.recorder.put_file("agent/memory/MEMORY.md", data)
        self._hook("session_start", {}, None, [])
        self.injected, self.turn, self.consumed, self.last_summary = False, 0, False, None
        if index.exists():
            assert RECAP_LINE.strip() not in index.read_text(), "session_start kept a recap entry"
        self.executed("session_start", "recap" if recap else "plain")

    @rule(kind=st.sampled_from(("plain", "user", "custom", "other")))
    @guarded
    def before_agent_start(self, kind: str) -> None:
        event: dict[str, Any] = {"systemPrompt": BASE_PROMPT, "prompt": "hello"}
        if kind != "plain":
            event["messageType"] = kind
        if kind in ("custom", "other"):  # S-INJECT-3: an extension's custom-message run
            files = snapshot(self.root)
            self._hook("before_agent_start", event, None, [])
            assert snapshot(self.root) == files, "a custom-message run changed files"
            return self.executed("before_agent_start", "custom run")
        self.turn += 1
        if self.injected and self.turn % self.config.every != 0:
            self._hook("before_agent_start", event, None, [])
            return self.executed("before_agent_start", "not injected")
        index = self.root / "agent/memory/MEMORY.md"
        content = index.read_bytes().decode("utf-8", "replace") if index.exists() else INITIAL_INDEX
        self.injected = True
        extra = GLOBAL_MEMORY_HEADER + str(self.sandbox.local_dir) + "\n\n" + content
        if self.config.rules_md():
            extra += RULES_HEADER.format(path=self.sandbox.agent_dir / "memory.jsonc") + self.config.rules_md()
        handoff = "" if self.consumed else self._last()
        if handoff:
            self.consumed = True
            extra += HANDOFF_HEADER + handoff
        self._hook("before_agent_start", event, {"systemPrompt": BASE_PROMPT + extra}, [])
        self.executed("before_agent_start", "injected" + (" +handoff" if handoff else ""))

    @rule(texts=st.lists(st.sampled_from(ASSISTANT_TEXTS), max_size=4), reason=st.sampled_from(("threshold", "manual")), tool_only=st.booleans())
    @guarded
    def session_before_compact(self, texts: list[str], reason: str, tool_only: bool) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "please do it"}]}]
        if tool_only:
            messages.append({"role": "assistant", "content": [{"type": "toolCall", "name": "bash"}]})
        messages += [{"role": "assistant", "content": [{"type": "text", "text": t}]} for t in texts]
        self.injected, self.turn, self.consumed = False, 0, False
        bullets = _bullets([t.strip() for t in texts if t.strip()])
        if self.config.keep > 0:
            if bullets:
                entry = f"## {stamp(self.clock.now_ms())} ({reason})\n\n" + "\n".join(bullets) + "\n"
                self.sections = [*self.sections, entry][-self.config.keep :]
            else:
                self.expected_diags.append(NO_HANDOFF_LINE)
        self._hook("session_before_compact", {"reason": reason, "preparation": {"messagesToSummarize": messages}}, None, [])
        self.executed("session_before_compact", "written" if bullets and self.config.keep else "no handoff")

    @rule(reason=st.sampled_from(("threshold", "manual")), retry=st.sampled_from((None, False, True)), summary=st.sampled_from(SUMMARIES))
    @guarded
    def session_compact(self, reason: str, retry: bool | None, summary: str) -> None:
        event: dict[str, Any] = {"reason": reason, "compactionEntry": {"summary": summary}}
        if retry is not None:
            event["willRetry"] = retry
        self.last_summary = summary
        sent: list[dict[str, str]] = []
        outcome = "stop"
        if reason == "threshold" and not retry:
            handoff = self._last()
            if self.config.consolidate:
                outcome = "consolidate"
                if summary and self.config.keep > 0:
                    entry = f"## {stamp(self.clock.now_ms())} Consolidation ({reason})\n\n{summary.strip()}\n"
                    self.sections = ([*self.sections[:-1], entry] if self.sections else [entry])[-self.config.keep :]
                    self.consumed = True
                sent = [{"text": summary, "deliver_as": "followUp"}]  # checked by containment
                self.last_summary = None
            elif self.config.auto_resume or (handoff and _INCOMPLETE.search(handoff.lower())):
                outcome = "continue"
                sent = [{"text": CONTINUE_MESSAGE, "deliver_as": "followUp"}]
            else:
                outcome = "none"
        self._hook("session_compact", event, None, sent)
        self.executed("session_compact", outcome)

    def _last(self) -> str:
        return self.sections[-1].strip() if self.sections else ""

    # --- after every step ---------------------------------------------------------------

    @invariant()
    @guarded
    def state_matches(self) -> None:
        s = self.session
        got = (s.injected, s.turn, s.handoff_consumed, s.last_summary)
        want = (self.injected, self.turn, self.consumed, self.last_summary)
        assert got == want, f"session state (injected, turn, consumed, last summary) {got}, model {want}"
        handoff = self.root / "agent/HANDOFF.md"
        text = handoff.read_bytes().decode("utf-8") if handoff.exists() else ""
        sections = [x.strip() for x in _sections(text)]
        assert sections[-1:] == [x.strip() for x in self.sections][-1:], (
            f"HANDOFF.md last section {sections[-1:]!r}, model {self.sections[-1:]!r}"
        )
        assert len(sections) == len(self.sections), f"HANDOFF.md has {len(sections)} sections, model {len(self.sections)}"
        assert self.diagnostics == self.expected_diags, f"stderr {self.diagnostics!r}, model {self.expected_diags!r}"
        assert not (self.root / "home/.agents").exists(), "the shared store appeared"
