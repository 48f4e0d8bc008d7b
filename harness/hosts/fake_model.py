"""A scripted OpenAI-compatible model on 127.0.0.1: plays turns, records every request.

Why a fake of our own: the hosts must run offline and deterministically, and what a host
shows the model (system prompt, tools and their schemas, tool results) is what we judge, so
the model end of the wire is where we listen.  It serves ``POST …/chat/completions`` (JSON
or SSE) and ``GET …/models``.  A request that carries tools and does not end in a tool
result consumes the next scripted turn; a request ending in a tool result consumes the next
turn too (the scenario scripts the model's reply to each result); a request without tools
(a title or a compaction summary) is answered with ``side_text`` and consumes nothing.  The
server stops itself after ``lifetime`` seconds if its owner forgets it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXHAUSTED = "(script exhausted)"
DEFAULT_SIDE_TEXT = "Summary: the session worked on the scripted task; next step is to continue it."


@dataclass(frozen=True)
class Turn:
    """One scripted model reply: text, or tool calls, with the usage it reports."""

    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    prompt_tokens: int = 10

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Turn:
        calls = tuple((str(c["name"]), dict(c.get("arguments", {}))) for c in data.get("tool_calls", ()))
        return cls(str(data.get("text", "")), calls, int(data.get("prompt_tokens", 10)))


@dataclass(frozen=True)
class Request:
    """What the host sent: the body as received, and whether it consumed a scripted turn."""

    body: dict[str, Any]
    scripted: bool

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [t.get("function", t) for t in self.body.get("tools") or []]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system(self) -> str:
        """The system (or developer) messages' text, joined by LF."""
        return "\n".join(text_of(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer"))

    def tool_results(self) -> list[str]:
        """The texts of the trailing tool-result messages (the results of the last calls)."""
        out: list[str] = []
        for m in reversed(self.messages):
            if m.get("role") != "tool":
                break
            out.insert(0, text_of(m.get("content")))
        return out

    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return text_of(users[-1].get("content")) if users else ""


def text_of(content: object) -> str:
    """A message content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


@dataclass
class FakeModel:
    """The server, its script and its record; use as a context manager."""

    turns: list[Turn] = field(default_factory=list)
    side_text: str = DEFAULT_SIDE_TEXT
    lifetime: float = 600.0
    requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _count: int = 0

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake model is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, turns: list[Turn]) -> None:
        """Append turns to the script (the runner queues each prompt's turns before it)."""
        with self._lock:
            self.turns.extend(turns)

    def pending(self) -> int:
        with self._lock:
            return len(self.turns)

    def __enter__(self) -> FakeModel:
        owner = self

        class Handler(_Handler):
            model = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        timer = threading.Timer(self.lifetime, self.stop)
        timer.daemon = True
        timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[Turn, int]:
        """The turn for one request (recorded), and its number."""
        with self._lock:
            self._count += 1
            if not body.get("tools"):
                self.requests.append(Request(body, False))
                return Turn(text=self.side_text), self._count
            self.requests.append(Request(body, True))
            turn = self.turns.pop(0) if self.turns else Turn(text=EXHAUSTED)
            return turn, self._count


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: FakeModel

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the record is ``FakeModel.requests``."""

    def _json(self, code: int, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b"{}"
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
            self._json(404, {"error": "only /chat/completions is served"})
            return
        turn, number = self.model.answer(body)
        self._reply(body, turn, number)

    def _reply(self, body: dict[str, Any], turn: Turn, number: int) -> None:
        rid, model, created = f"chatcmpl-fake-{number}", str(body.get("model", "fake-model")), int(time.time())
        calls = [
            {"index": i, "id": f"call_{number}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(turn.tool_calls)
        ]
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": turn.prompt_tokens, "completion_tokens": 5, "total_tokens": turn.prompt_tokens + 5}
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": None if calls else turn.text}
            if calls:
                msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            self._json(200, {"id": rid, "object": "chat.completion", "created": created, "model": model,
                             "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            obj = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": choices, **extra}
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

        def delta(d: dict[str, Any], fr: str | None = None) -> None:
            event([{"index": 0, "delta": d, "finish_reason": fr}])

        delta({"role": "assistant", "content": ""})
        if calls:
            for c in calls:
                delta({"tool_calls": [c]})
        else:
            delta({"content": turn.text})
        delta({}, finish)
        event([], usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True
