"""Jepsen-style histories: every op as invoke / ok / fail / info, saved as JSON Lines.

``ok``: acknowledged with a result; ``fail``: definitely had no effect (a "busy" answer);
``info``: unknown (the process was killed, hung or answered garbage) — it may or may not have
happened.  Times are monotonic nanoseconds from one clock shared by all writers' threads.

A nemesis run (issue 13) also records its faults, each as the events of its own process
``nemesis-<id>`` (``invoke`` when the fault starts, ``ok`` when it ends), and its schedule in
``meta`` (the file's first line, ``{"meta": …}``), so the run can be replayed from its history.
``ops()`` gives the client ops only, ``faults()`` the nemesis ones.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TYPES = ("invoke", "ok", "fail", "info")
NEMESIS = "nemesis"
"""The process-name prefix of fault events (``nemesis-3``): never a client."""
TICK = 10_000
"""Events or ops between two progress ticks of a long pass over a history."""


def is_fault(process: str) -> bool:
    return process == NEMESIS or process.startswith(NEMESIS + "-")


class HistoryError(Exception):
    """A malformed history file, with the line number."""


@dataclass(frozen=True)
class Event:
    process: str
    type: str
    op: str
    args: dict[str, Any]
    time: int
    result: Any = None


@dataclass
class Op:
    """An invocation paired with its completion (``end`` is None for ``info``)."""

    id: int
    process: str
    op: str
    args: dict[str, Any]
    start: int
    end: int | None
    type: str  # ok | fail | info
    result: Any = None


@dataclass
class History:
    events: list[Event] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, process: str, type_: str, op: str, args: dict[str, Any], result: Any = None) -> Event:
        ev = Event(process, type_, op, args, time.monotonic_ns(), result)
        with self._lock:
            self.events.append(ev)
        return ev

    def save(self, path: Path, tick: Callable[[int], None] | None = None) -> None:
        """Write the history as JSON Lines; ``tick(n)`` after every ``TICK`` events written.

        Each event is one flat dict (``dataclasses.asdict`` deep-copies every argument and
        result first: most of the time a 800,000-event history took to save)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        encode = json.JSONEncoder(ensure_ascii=False).encode
        with path.open("w", encoding="utf-8") as f:
            if self.meta:
                f.write(encode({"meta": self.meta}) + "\n")
            for n, ev in enumerate(self.events, 1):
                f.write(encode({"process": ev.process, "type": ev.type, "op": ev.op, "args": ev.args,
                                "time": ev.time, "result": ev.result}) + "\n")
                if tick is not None and n % TICK == 0:
                    tick(TICK)
            if tick is not None:
                tick(len(self.events) % TICK)

    @classmethod
    def load(cls, path: Path) -> History:
        h = cls()
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                    if isinstance(d, dict) and set(d) == {"meta"} and isinstance(d["meta"], dict):
                        h.meta = d["meta"]
                        continue
                    ev = Event(str(d["process"]), str(d["type"]), str(d["op"]), dict(d.get("args") or {}), int(d["time"]), d.get("result"))
                except (ValueError, KeyError, TypeError) as e:
                    raise HistoryError(f"{path}:{n}: malformed event: {e}") from None
                if ev.type not in TYPES:
                    raise HistoryError(f"{path}:{n}: unknown event type {ev.type!r}")
                h.events.append(ev)
        return h

    def ops(self) -> list[Op]:
        """The clients' ops: invocations paired with completions per process; an unfinished
        op is ``info``.  Nemesis faults are left out (``faults``)."""
        return pair(ev for ev in self.events if not is_fault(ev.process))

    def faults(self) -> list[Op]:
        """The nemesis faults as ops: ``start`` when injected, ``end`` when lifted."""
        return pair(ev for ev in self.events if is_fault(ev.process))


def pair(events: Iterable[Event]) -> list[Op]:
    pending: dict[str, Op] = {}
    out: list[Op] = []
    for ev in sorted(events, key=lambda e: e.time):
        if ev.type == "invoke":
            if ev.process in pending:
                raise HistoryError(f"process {ev.process} invoked {ev.op} with an op outstanding")
            op = Op(len(out), ev.process, ev.op, ev.args, ev.time, None, "info")
            pending[ev.process] = op
            out.append(op)
            continue
        op_ = pending.pop(ev.process, None)
        if op_ is None:
            raise HistoryError(f"process {ev.process}: {ev.type} without an invocation")
        op_.type, op_.result = ev.type, ev.result
        op_.end = None if ev.type == "info" else ev.time
    return out
