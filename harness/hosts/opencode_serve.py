"""OpenCode as one server process (``opencode serve``) across the steps of a session.

Why besides ``opencode run``: ``run`` is one process per prompt and has no manual
compaction; the server keeps the plugin loaded across prompts (as a user's OpenCode does),
compacts on ``POST /session/{id}/summarize`` (the ``/compact`` command), compacts by itself
when a reply reports a usage past the model's context, and starts a new session in the same
process on ``POST /session``.  A prompt is ``POST /session/{id}/message``, answered when the
run, and any follow-up run OpenCode queues after a compaction, is over.  The server listens
on 127.0.0.1 at the port it chose (``--port 0``), read from its first lines.  Measured on
1.18.33: start 7-8 s, a prompt 1-3 s (10 s for the first under load), a compaction 1-2 s.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import opencode_binary
from .opencode import OpenCodeSession
from .pi import HostError, pump

_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:[0-9]+)")
MODEL = {"providerID": "fake", "modelID": "fake-model"}


@dataclass
class OpenCodeServer(OpenCodeSession):
    """The same configuration and environment as ``opencode run``; one server, one session."""

    _proc: subprocess.Popen[str] | None = None
    _base: str = ""
    _session: str = ""
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def start(self, stderr_path: Path) -> None:
        self.configure()
        self._stderr = stderr_path.open("a", encoding="utf-8")
        self._proc = subprocess.Popen([str(opencode_binary()), "serve", "--port", "0", "--hostname", "127.0.0.1"],
                                      cwd=self.workdir, env=self.env(), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        assert self._proc.stdout is not None
        pump(self._proc.stdout, self._lines)
        while not self._base:
            try:
                line = self._lines.get(timeout=self.timeout)
            except queue.Empty:
                raise HostError(f"opencode serve: not listening within {self.timeout:.0f} s") from None
            if line is None:
                raise HostError(f"opencode serve exited (status {self._proc.wait()}) before listening")
            found = _LISTENING.search(line)
            self._base = found.group(1) if found else ""
        self.new_session()

    def _call(self, path: str, body: dict[str, Any], what: str) -> Any:
        request = urllib.request.Request(self._base + path, json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                raw = answer.read()
        except TimeoutError:
            raise HostError(f"opencode: {what} did not finish within {self.timeout:.0f} s") from None
        except (urllib.error.URLError, ConnectionError) as e:
            raise HostError(f"opencode: {what} failed: {e}") from None
        data = json.loads(raw) if raw else None
        self.events.append({"type": what, "answer": data})
        return data

    def new_session(self) -> None:
        """A new session in the running server (the plugin's module state kept)."""
        created = self._call("/session", {}, "new session")
        if not isinstance(created, dict) or not created.get("id"):
            raise HostError(f"opencode: POST /session answered {created!r}")
        self._session = str(created["id"])

    def ready(self) -> None:
        """The session exists once ``POST /session`` answered; nothing runs in between."""

    def prompt(self, text: str) -> None:
        self._call(f"/session/{self._session}/message", {"parts": [{"type": "text", "text": text}]}, "prompt")

    def compact(self) -> dict[str, Any]:
        """Manual compaction (``/compact``): OpenCode writes its summary as a message; the
        answer is ``true``, so the summary text is not in it."""
        done = self._call(f"/session/{self._session}/summarize", dict(MODEL), "compact")
        if done is not True:
            raise HostError(f"opencode: summarize answered {done!r}")
        return {"data": {}}

    def end(self) -> int:
        proc, self._proc = self._proc, None
        status = 0
        if proc is not None:
            proc.terminate()
            try:
                status = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
        super().end()
        return status
