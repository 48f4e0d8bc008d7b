"""What SPEC says the model is shown and the store holds: the reference's session model
(``reference/session.py``) and tools run on the same host script, in a sandbox of their own.

The host's part is modelled as pi runs it (observed on pi 0.74.2 and 1.6.0, and what S-INJECT
describes): a new process is a new session (``session_start``, process state afresh); each
prompt is one ``before_agent_start`` with an empty host prompt, so the returned prompt is the
extension's addition; a follow-up the extension queues runs as a custom-message run
(S-INJECT-3); compaction with ``keepRecentTokens: 1`` summarises every run of the session
since the last compaction but the latest, so ``messagesToSummarize`` holds their assistant
texts.  The compaction summary is the host's own text, an input here (``summaries``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memconform.reference.session import Session
from memconform.reference.store import Store
from memconform.reference.tools import TOOLS, execute_tool

from ..drivers.actions import perform, place_given
from ..drivers.sandbox import Sandbox, snapshot
from ..gate.scenarios import Scenario, Step
from .script import COMPACT, END, FILE_ACTIONS, NEW_SESSION, PROMPT, SESSION, Action, HostScript


@dataclass
class PromptExpect:
    """One prompt: the extension's addition to the system prompt (None: no change), the
    result text of each tool call in order (None: the tool raised), the follow-ups sent."""

    number: int
    text: str
    extra: str | None
    results: list[tuple[str, str | None]] = field(default_factory=list)
    followups: list[str] = field(default_factory=list)
    compacted: bool = False
    index: str = ""  # the index text a read at the prompt returned (what a host shows of it)


@dataclass
class Expected:
    prompts: list[PromptExpect]
    diagnostics: list[str]
    tools: dict[str, dict[str, Any]]
    files: dict[str, bytes]
    root: str


@dataclass
class _Run:
    user: str
    texts: list[str] = field(default_factory=list)


class _Model:
    """The reference extension in one process, and the runs of its session."""

    def __init__(self, sandbox: Sandbox, diagnostics: list[str]) -> None:
        self.sandbox, self.diagnostics = sandbox, diagnostics
        self.store: Store | None = None
        self.session: Session | None = None
        self.runs: list[_Run] = []

    def start(self) -> Session:
        self.store = Store(self.sandbox.env(), diagnostics=self.diagnostics.append)
        self.session = Session(self.store)
        self.session.session_start({})
        self.runs = []
        return self.session

    def compact(self, reason: str, summary: str | None) -> list[str]:
        """Both compaction hooks; the follow-ups they queued."""
        session = self.session or self.start()
        summarised, self.runs = self.runs[:-1], self.runs[-1:]
        messages = [{"role": "assistant", "content": [{"type": "text", "text": t}]} for r in summarised for t in r.texts]
        sent_before = len(session.sent)
        session.session_before_compact({"reason": reason, "preparation": {"messagesToSummarize": messages}})
        event: dict[str, Any] = {"reason": reason, "willRetry": False}
        if summary is not None:
            event["compactionEntry"] = {"summary": summary}
        session.session_compact(event)
        return [m.text for m in session.sent[sent_before:]]

    def play(self, turns: Iterator[Any], run: _Run, expect: PromptExpect, count: int) -> None:
        """``count`` turns of one run: tool calls executed, texts kept for the handoff."""
        assert self.store is not None
        for _ in range(count):
            turn = next(turns)
            if turn.text:
                run.texts.append(turn.text)
            for name, args in turn.tool_calls:
                try:
                    result = execute_tool(self.store, name, dict(args))
                    expect.results.append((name, str(result["content"][0]["text"])))
                except Exception:
                    expect.results.append((name, None))


def expected(scenario: Scenario, script: HostScript, summaries: list[str], parent: str | None = None) -> Expected:
    """Run the script on the reference; the sandbox is removed afterwards."""
    sandbox = Sandbox.create(parent)
    diagnostics: list[str] = []
    try:
        place_given(sandbox, scenario.given)
        model = _Model(sandbox, diagnostics)
        prompts: list[PromptExpect] = []
        pending_summaries = iter(summaries)
        for action in script.actions:
            if action.do in (SESSION, NEW_SESSION):
                model.start()
            elif action.do == PROMPT:
                prompts.append(_prompt(model, action, len(prompts) + 1, pending_summaries))
            elif action.do == COMPACT:
                model.compact("manual", next(pending_summaries, None))
            elif action.do == END:
                model.session = None
            elif action.do in FILE_ACTIONS:
                perform(sandbox, Step(action.do, dict(action.args or {})), lambda: int(time.time() * 1000), 0)
        return Expected(prompts, diagnostics, {n: dict(t["parameters"]) for n, t in TOOLS.items()},
                        snapshot(sandbox.root), str(sandbox.root))
    finally:
        sandbox.remove()


def _prompt(model: _Model, action: Action, number: int, summaries: Iterator[str]) -> PromptExpect:
    session = model.session or model.start()
    try:
        answer = session.before_agent_start({"systemPrompt": ""})
    except Exception:  # the handler fails (e.g. S-IO refuses a FIFO): the host keeps its prompt
        answer = None
    expect = PromptExpect(number, action.text, answer["systemPrompt"] if answer else None)
    assert model.store is not None
    expect.index = model.store.read_memory_index(model.store.parse_rules().max_lines) or ""
    run = _Run(action.text)
    model.runs.append(run)
    turns = iter(action.turns)
    cut = action.threshold_at
    model.play(turns, run, expect, len(action.turns) if cut is None else cut + 1)
    if cut is None:
        return expect
    expect.compacted = True
    followups = model.compact("threshold", next(summaries, None))
    expect.followups = followups
    for text in followups:
        session.before_agent_start({"systemPrompt": "", "messageType": "custom"})
        follow = _Run(text)
        model.runs.append(follow)
        model.play(turns, follow, expect, _run_length(action.turns[cut + 1:]))
    return expect


def _run_length(rest: tuple[Any, ...]) -> int:
    """The turns of one run: up to and including the first text-only turn."""
    for i, t in enumerate(rest):
        if not t.tool_calls:
            return i + 1
    return len(rest)


TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})")
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def normalise(text: str, root: str) -> str:
    """A text with its sandbox root as ``${ROOT}`` and every stamp as ``${TS}``/``${DATE}``:
    the host and the reference ran in two sandboxes, seconds apart."""
    return DATE.sub("${DATE}", TS.sub("${TS}", text.replace(root, "${ROOT}")))
