"""One host in a sandbox, played one script action at a time, and what it showed so far.

Why step by step: a whole scenario (``run.run_scenario``) and the ``session`` machine
(``hosts.machine``), which judges after every step, play actions the same way; the machine
keeps one host process across its steps and asks ``observed()`` after each.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..drivers.actions import perform
from ..drivers.sandbox import Sandbox
from ..gate.scenarios import Step
from .fake_model import FakeModel, Request
from .judge import Observed, PromptSeen
from .opencode import OpenCodeSession
from .opencode_serve import OpenCodeServer
from .pi import HostError, PiSession
from .script import COMPACT, END, FILE_ACTIONS, NEW_SESSION, PROMPT, SESSION, Action

HostSession = PiSession | OpenCodeSession


class Player:
    """The fake model, the host's session (started on demand) and the record of both.

    ``kind`` and ``path`` are a ``HostSpec``'s; use as a context manager (the model stops and
    the host process ends on exit, the sandbox stays its owner's)."""

    def __init__(self, kind: str, path: Path, host: str, sandbox: Sandbox, timeout: float, *,
                 model_lifetime: float) -> None:
        self.kind, self.path, self.host, self.sandbox, self.timeout = kind, path, host, sandbox, timeout
        self.model = FakeModel(lifetime=model_lifetime)
        self.session: HostSession | None = None
        self.prompts: list[PromptSeen] = []
        self.summaries: list[str] = []
        self.stderr = sandbox.root / "host-stderr.txt"
        self.work = sandbox.root / "work"
        self.work.mkdir(exist_ok=True)

    def __enter__(self) -> Player:
        self.model.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.end()
        finally:
            self.model.__exit__()

    def _start(self) -> HostSession:
        s: HostSession
        if self.kind == "opencode-host":
            s = OpenCodeServer(self.path, self.sandbox.home, self.work, self.model.base_url, timeout=self.timeout)
        else:
            s = PiSession(self.path, self.sandbox.agent_dir, self.sandbox.home, self.work, self.model.base_url,
                          host=self.host, timeout=self.timeout)
        s.start(self.stderr)
        return s

    def end(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.end()

    def do(self, action: Action) -> None:
        """One action; a host that does not finish it raises ``HostError``."""
        if action.do == SESSION:
            self.end()
            self.session = self._start()
        elif action.do == NEW_SESSION:
            self.session = self.session or self._start()
            self.session.new_session()
        elif action.do == PROMPT:
            session = self.session = self.session or self._start()
            self.model.queue(list(action.turns))
            first, seen_before = len(self.model.requests), len(session.events)
            session.prompt(action.text)
            self.prompts.append(PromptSeen(action.text, self.model.requests[first:]))
            self.summaries += [_summary(e) for e in session.events[seen_before:]
                               if e.get("type") in ("compaction_end", "auto_compaction_end")]
        elif action.do == COMPACT:
            session = self.session = self.session or self._start()
            answer = session.compact()
            self.summaries.append(str((answer.get("data") or {}).get("summary", "")))
        elif action.do == END:
            self.end()
        elif action.do in FILE_ACTIONS:
            perform(self.sandbox, Step(action.do, dict(action.args or {})), lambda: int(time.time() * 1000), 0)
        else:
            raise HostError(f"unknown host action {action.do!r}")

    def ready(self) -> None:
        """Wait until the running host has finished starting its session (its hooks ran)."""
        if self.session is not None:
            self.session.ready()

    def observed(self) -> Observed:
        stderr = self.stderr.read_text(encoding="utf-8", errors="replace") if self.stderr.exists() else ""
        return Observed(list(self.prompts), list(self.summaries), stderr, self.sandbox.snapshot(),
                        str(self.sandbox.root), self.model.pending(), _all_tools(self.model.requests))


def _summary(event: dict[str, Any]) -> str:
    result = event.get("result") or {}
    return str(result.get("summary", "")) if isinstance(result, dict) else ""


def _all_tools(requests: list[Request]) -> list[dict[str, Any]]:
    scripted = [r for r in requests if r.scripted]
    return scripted[0].tools if scripted else []
