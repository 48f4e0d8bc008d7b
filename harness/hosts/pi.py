"""The pi coding agent, headless in ``--mode rpc``, with one extension loaded by ``-e``.

Why rpc: one process is one pi session (``session_start`` once), prompts and manual
compaction are commands on stdin, and the JSONL events on stdout say when a prompt has
settled (``agent_settled`` on 1.x, ``agent_end`` on 0.74) and how a compaction went.
Everything pi reads or writes lives under the sandbox: ``PI_CODING_AGENT_DIR`` holds the
fake provider (``models.json``) and ``settings.json`` beside the store, ``HOME`` and the XDG
dirs are the sandbox's, ``PI_OFFLINE=1`` and ``PI_TELEMETRY=0``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .cache import DEFAULT_PI, HOSTS, node_bin_dir, pi_cli

# Files pi itself keeps in the agent dir: not the store's.
PI_OWN_FILES = ("models.json", "settings.json", "auth.json", "sessions/*", "bin/*", "tools/*")
SETTLED_1X, SETTLED_074 = "agent_settled", "agent_end"
CONTEXT_WINDOW = 128000


def pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """A host's stdout into ``lines`` by a reader thread (None at its end), so a wait for a
    line can time out."""

    def run() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=run, daemon=True).start()


class HostError(Exception):
    """The host did not do what a step asked (exit, timeout, refused command)."""


@dataclass
class PiSession:
    """One pi process (one session) with the extension at ``extension`` loaded."""

    extension: Path
    agent_dir: Path
    home: Path
    workdir: Path
    base_url: str
    host: str = DEFAULT_PI
    timeout: float = 90.0
    extra_env: dict[str, str] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _stderr: IO[str] | None = None

    def configure(self) -> None:
        """The fake provider and settings that make a short session compactable."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        provider = {"baseUrl": self.base_url, "api": "openai-completions", "apiKey": "fake-key",
                    "models": [{"id": "fake-model", "contextWindow": CONTEXT_WINDOW, "maxTokens": 4096}]}
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        (self.agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))

    def env(self) -> dict[str, str]:
        spec = HOSTS[self.host]
        node = node_bin_dir(spec)
        path = (f"{node}:" if node else "") + os.environ.get("PATH", "/usr/bin:/bin")
        env = {
            "PATH": path, "HOME": str(self.home), "TZ": "UTC", "LANG": "C.UTF-8",
            "PI_CODING_AGENT_DIR": str(self.agent_dir), "PI_SHARED_MEMORY_HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"), "XDG_STATE_HOME": str(self.home / ".local/state"),
            "OCL_SHARED_MEMORY_HOME": str(self.home), "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
        }
        # the example extension's facade serves the store with this python (harness/drivers/node)
        env["MEMCONFORM_PYTHON"] = os.environ.get("MEMCONFORM_PYTHON") or sys.executable
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env | self.extra_env

    def start(self, stderr_path: Path) -> None:
        self.configure()
        cmd = ["node", str(pi_cli(HOSTS[self.host])), "--mode", "rpc", "--model", "fake/fake-model",
               "--no-session", "--no-extensions", "-e", str(self.extension), "--no-skills",
               "--no-prompt-templates", "--no-context-files"]
        self._stderr = stderr_path.open("a", encoding="utf-8")
        self._proc = subprocess.Popen(cmd, cwd=self.workdir, env=self.env(), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        assert self._proc.stdout is not None
        pump(self._proc.stdout, self._lines)

    def _send(self, obj: dict[str, Any]) -> None:
        if self._proc is None or self._proc.stdin is None:
            raise HostError("pi is not running")
        try:
            self._proc.stdin.write(json.dumps(obj) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise HostError(f"pi exited (status {self._proc.poll()})") from None

    def _until(self, done: Any, what: str) -> dict[str, Any]:
        """Events until ``done(event)`` holds; a timeout or exit is a HostError."""
        end = time.monotonic() + self.timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise HostError(f"pi: no {what} within {self.timeout:.0f} s") from None
            if line is None:
                status = self._proc.wait() if self._proc else None
                raise HostError(f"pi exited (status {status}) before {what}")
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            self.events.append(event)
            if event.get("type") == "response" and event.get("success") is False:
                raise HostError(f"pi refused {event.get('command')}: {event.get('error')}")
            if done(event):
                return event

    def _settled(self, event: dict[str, Any]) -> bool:
        wanted = SETTLED_074 if self.host == "pi-0.74.2" else SETTLED_1X
        return event.get("type") == wanted

    def prompt(self, text: str, runs: int = 1) -> None:
        """Send a prompt and wait until pi settles ``runs`` times (a follow-up the extension
        queued runs as a further settled run)."""
        self._send({"id": f"p{len(self.events)}", "type": "prompt", "message": text})
        for i in range(runs):
            self._until(self._settled, f"settled run {i + 1} of {runs} after the prompt")

    def _command(self, kind: str, what: str) -> dict[str, Any]:
        rid = f"{kind}{len(self.events)}"
        self._send({"id": rid, "type": kind})
        return self._until(lambda e: e.get("type") == "response" and e.get("id") == rid, what)

    def ready(self) -> None:
        """pi reads stdin only once its session has started (the extension's ``session_start``
        has run), so the answer to a ``get_state`` says the start is over."""
        self._command("get_state", "answer to get_state after the start")

    def new_session(self) -> None:
        """pi's ``/new``: a new session in the same process (module state kept)."""
        self._command("new_session", "new_session response")

    def compact(self) -> dict[str, Any]:
        return self._command("compact", "compact response")

    def end(self) -> int:
        """Close stdin (pi ends the session) and wait for the exit status."""
        proc, self._proc = self._proc, None
        if proc is None:
            return 0
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            status = proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = proc.wait()
        if self._stderr is not None:
            self._stderr.close()
        return status

    def compactions(self) -> list[dict[str, Any]]:
        """The compaction end events seen (``reason`` is absent on 0.74)."""
        return [e for e in self.events if e.get("type") in ("compaction_end", "auto_compaction_end")]
