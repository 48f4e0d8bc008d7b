"""The peer-protocol server: JSON Lines over stdin/stdout (docs/ARCHITECTURE.md §3).

``python -m memconform.reference serve`` answers every op of the protocol table against the store that its
environment names, exactly like the node drivers do for the JS cores, so the harness can drive
the reference and a peer through one interface.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import IO, Any

from . import facade_ops
from .clock import CLOCK_MODES, Clock, ControlledClock, SystemClock, parse_instant, stamp_own_locks
from .compaction import (
    build_compaction_consolidation_prompt,
    build_consolidation_prompt,
    decide_compaction_action,
    detect_incomplete_task,
)
from .config import Rules, render_rules_to_markdown
from .edge import edge_store
from .errors import describe
from .index import parse_index_line, require_string, to_slug
from .jsjson import json_parse, to_js_json
from .session import Session
from .store import Store
from .text import UNDEFINED, to_string
from .tools import ScriptedUi, execute_tool, run_command, validate_params

IMPL = "memconform-reference"
VERSION = "0.1.0"

Args = Mapping[str, Any]


def _arg(args: Args, key: str, default: object = UNDEFINED) -> object:
    return args.get(key, default)


def _rules(store: Store, args: Args) -> Rules:
    given = args.get("rules", UNDEFINED)
    return store.parse_rules() if given is UNDEFINED else Rules.from_js(dict(given))


def memory_command(store: Store, args: Args) -> list[dict[str, Any]]:
    """``/memory «args»`` against a scripted UI; the interactions, in order (S-TOOLS-6..13)."""
    ui = ScriptedUi(
        idle=bool(args.get("idle", True)),
        confirms=[bool(x) for x in args.get("confirm", [])],
        browses=[None if x is None else (str(x[0]), int(x[1])) for x in args.get("browse", [])],
        details=[None if x is None else str(x) for x in args.get("detail", [])],
    )
    run_command(store, ui, to_string(_arg(args, "args", "")))
    return ui.events


class Server:
    """One store, one session, one clock: the state of one loaded implementation.

    ``reset`` keeps what the server was built over (environment, ``Fs``, diagnostics, index
    engine) and, as the JS drivers do, puts the clock back to real time: ``new_clock`` makes
    that clock (the wall clock unless an in-process user wants another).
    """

    def __init__(self, store: Store, *, new_clock: Callable[[], Clock] = SystemClock) -> None:
        self.store = store
        self._new_clock = new_clock
        self._env_set: set[str] = set()  # variables the last ``reset`` set
        self._env_base: dict[str, str | None] = {}  # their values before
        self.session = Session(store)
        self.ops: dict[str, Callable[[Args], object]] = {
            "hello": self.hello,
            "reset": self.reset,
            "set_clock": self.set_clock,
            "advance_clock": self.advance_clock,
            "parse_index_line": self.parse_index_line,
            # S-ERR-8: a non-string raises as the JS core's topic.toLowerCase() does
            "to_slug": lambda a: to_slug(require_string(_arg(a, "topic"), "topic")),
            "detect_incomplete_task": lambda a: detect_incomplete_task(_arg(a, "text")),
            "build_consolidation_prompt": lambda a: build_consolidation_prompt(
                to_string(_arg(a, "rulesMarkdown", ""))
            ),
            "build_compaction_consolidation_prompt": lambda a: (
                build_compaction_consolidation_prompt(
                    to_string(_arg(a, "summary")), to_string(_arg(a, "rulesMarkdown", ""))
                )
            ),
            "hook": self.hook,
            "validate_tool": lambda a: validate_params(str(a["name"]), a.get("params")),
            "exit": lambda a: None,
        }
        self.ops.update(self._store_ops())

    def _store_ops(self) -> dict[str, Callable[[Args], object]]:
        """Ops bound to the current store (rebuilt by ``reset``)."""
        store = self.store
        return {
            "write_memory": lambda a: store.execute_write_memory(
                _arg(a, "topic"),
                _arg(a, "content"),
                _arg(a, "summary"),
                _arg(a, "pin", False),
                _arg(a, "mode", "append"),
                _arg(a, "overwrite"),
            ),
            "remove_memory": lambda a: store.execute_remove_memory(_arg(a, "topic")),
            "pin_memory": lambda a: store.execute_pin_memory(_arg(a, "topic"), _arg(a, "pin")),
            "retire_recaps": lambda a: store.retire_recap_entries(),
            "read_index": lambda a: store.read_memory_index(_arg(a, "maxLines")),
            "index_entries": lambda a: [asdict(e) for e in store.read_index_entries()],
            "topic_content": lambda a: store.read_topic_content(_arg(a, "filename")),
            "search": lambda a: [h.to_js() for h in store.search_memory(_arg(a, "query"))],
            "parse_rules": lambda a: store.parse_rules().to_js(),
            "render_rules": lambda a: render_rules_to_markdown(_rules(store, a)),
            "write_handoff": lambda a: store.write_handoff(
                _arg(a, "messages"), _arg(a, "reason"), _arg(a, "keep")
            ),
            "replace_latest_handoff": lambda a: (
                store.replace_latest_handoff_with_compaction_summary(
                    _arg(a, "summary"), _arg(a, "reason"), _arg(a, "keep")
                )
            ),
            "read_handoff": lambda a: store.read_handoff(),
            "decide_compaction": lambda a: decide_compaction_action(
                _rules(store, a), _arg(a, "handoff")
            ),
            "memory_dir": lambda a: store.get_memory_dir(),
            "get_memory_index": lambda a: store.get_memory_index(),
            "reset_carry_over": lambda a: store.reset_carry_over(),
            "tool": lambda a: execute_tool(store, str(a["name"]), dict(a.get("params", {}))),
            "memory_command": lambda a: memory_command(store, a),
            **facade_ops.ops(store),
        }

    def hello(self, args: Args) -> object:
        return {"impl": IMPL, "version": VERSION, "pid": os.getpid(), "ops": sorted(self.ops),
                "clock_modes": list(CLOCK_MODES), "reset_env": True}

    def reset(self, args: Args) -> None:
        """Forget all process-global state, as a fresh process would (S-INV-10, C-8).

        ``env``: variables the fresh process would have been started with on top of this one's
        first environment (the store's paths are captured anew from them); without it every
        variable an earlier ``reset`` set is back as it was."""
        overrides = {str(k): str(v) for k, v in dict(args.get("env") or {}).items()}
        for key in self._env_set | overrides.keys():
            if key in overrides:
                self._env_base.setdefault(key, os.environ.get(key))
                os.environ[key] = overrides[key]
            elif (old := self._env_base.pop(key, None)) is not None:
                os.environ[key] = old
            else:
                os.environ.pop(key, None)
        self._env_set = set(overrides)
        self.store = self.store.renewed(self._new_clock())
        self.session = Session(self.store)
        self.ops.update(self._store_ops())

    def set_clock(self, args: Args) -> None:
        if "tz" in args:
            os.environ["TZ"] = str(args["tz"])
            time.tzset()
        mode = str(args.get("mode", "frozen"))
        if mode not in CLOCK_MODES:
            raise ValueError(f"unknown clock mode {mode}")
        self.store.clock = ControlledClock(parse_instant(str(args["now"])), mode)
        if mode == "virtual":
            stamp_own_locks(self.store.fs, self.virtual_now)

    def virtual_now(self) -> int | None:
        """The clock's time when it is virtual (what answers report as ``clock_ms``)."""
        clock = self.store.clock
        return clock.now_ms() if isinstance(clock, ControlledClock) and clock.virtual else None

    def advance_clock(self, args: Args) -> None:
        clock = self.store.clock
        if not isinstance(clock, ControlledClock):
            raise ValueError("advance_clock needs set_clock first")
        clock.advance(round(float(args.get("seconds", 0)) * 1000))

    def parse_index_line(self, args: Args) -> object:
        p = parse_index_line(require_string(_arg(args, "line"), "line", "match"))  # S-ERR-8
        if p is None:
            return None
        return {"prefix": p.prefix, "name": p.name, "mid": p.mid, "filename": p.filename, "rest": p.rest}

    def hook(self, args: Args) -> object:
        before = len(self.session.sent)
        result = self.session.handle(str(args["name"]), dict(args.get("event") or {}))
        sent = [asdict(m) for m in self.session.sent[before:]]
        return {"result": result, "sent": sent}

    def answer(self, line: str) -> tuple[dict[str, Any], bool]:
        """One request line → one answer, and whether to stop."""
        try:
            request = json_parse(line)
        except ValueError as e:
            return {"id": None, "ok": False, "error": {"kind": "protocol", "message": str(e)}}, False
        if not isinstance(request, dict):
            return {"id": None, "ok": False, "error": {"kind": "protocol", "message": "not an object"}}, False
        rid = to_js_json(request.get("id"))
        op = request.get("op")
        args = request.get("args") or {}
        if not isinstance(op, str) or op not in self.ops:
            error = {"kind": "unsupported", "message": f"unsupported op: {op}"}
            return {"id": rid, "ok": False, "error": error}, False
        try:
            result = self.ops[op](args)
        except Exception as e:
            failed = {"id": rid, "ok": False, "error": to_js_json(describe(e))}
            if (now := self.virtual_now()) is not None:
                failed["clock_ms"] = now
            return failed, False
        answer = {"id": rid, "ok": True, "result": to_js_json(result)}
        if (now := self.virtual_now()) is not None:
            answer["clock_ms"] = now
        return answer, op == "exit"


def serve(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    server = Server(edge_store())
    for line in stdin:
        if not line.strip():
            continue
        answer, stop = server.answer(line)
        stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        stdout.flush()
        if stop:
            break
    return 0
