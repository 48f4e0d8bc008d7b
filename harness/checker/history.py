"""Jepsen-style histories: every op as invoke / ok / fail / info, saved as JSON Lines.

``ok``: acknowledged with a result; ``fail``: definitely had no effect (a "busy" answer);
``info``: unknown (the process was killed, hung or answered garbage) — it may or may not have
happened.  Times are monotonic nanoseconds from one clock shared by all writers' threads.

A completion also records the op's **outcome** (issue 30 item 2: ``ok:created``, ``busy``,
``not-found`` …, docs/IMPLEMENTING.md §2): what a driver declaring outcome kinds said, or
what a JS peer's text says through its family's table (``oracles.outcome_kind``).  The
checkers read the outcome, never the text, so a tool in its own words is judged like the
others.  A history saved before outcomes were recorded gets them from its texts on load.

A nemesis run (issue 13) also records its faults, each as the events of its own process
``nemesis-<id>`` (``invoke`` when the fault starts, ``ok`` when it ends), and its schedule in
``meta`` (the file's first line, ``{"meta": …}``), so the run can be replayed from its history.
``ops()`` gives the client ops only, ``faults()`` the nemesis ones.
"""

from __future__ import annotations

import json
import operator
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..oracles.kind_model import recorded_outcome

TYPES = ("invoke", "ok", "fail", "info")
NEMESIS = "nemesis"
"""The process-name prefix of fault events (``nemesis-3``): never a client."""
TICK = 10_000
"""Events or ops between two progress ticks of a long pass over a history."""


_time = operator.attrgetter("time")


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
    outcome: str | None = None


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
    outcome: str | None = None  # ``ok:created``, ``busy`` … (``kind_model.recorded_outcome``)


@dataclass
class History:
    events: list[Event] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, process: str, type_: str, op: str, args: dict[str, Any], result: Any = None,
               outcome: str | None = None) -> Event:
        ev = Event(process, type_, op, args, time.monotonic_ns(), result, outcome)
        with self._lock:
            self.events.append(ev)
        return ev

    def save(self, path: Path, tick: Callable[[int], None] | None = None) -> None:
        """Write the history as JSON Lines; ``tick(n)`` after every ``TICK`` events written.

        Each event is one flat object, put together from pieces encoded once: the process,
        type and op names are a handful of strings, and an op's completion carries the very
        arguments its invocation did (encoding every event whole took 6.3 s of CPU for
        800,000 events, ``dataclasses.asdict`` twice that before)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        encode = json.JSONEncoder(ensure_ascii=False).encode
        names: dict[str, str] = {}  # a name -> its JSON text

        def name(text: str) -> str:
            out = names.get(text)
            if out is None:
                out = names[text] = encode(text)
            return out

        last: dict[str, tuple[dict[str, Any], str]] = {}  # a process -> its last arguments, encoded
        with path.open("w", encoding="utf-8") as f:
            if self.meta:
                f.write(encode({"meta": self.meta}) + "\n")
            lines: list[str] = []
            for n, ev in enumerate(self.events, 1):
                seen = last.get(ev.process)
                if seen is not None and seen[0] is ev.args:
                    args = seen[1]
                else:
                    args = encode(ev.args)
                    last[ev.process] = (ev.args, args)
                t, r = ev.time, ev.result
                kind = "" if ev.outcome is None else f', "outcome": {name(ev.outcome)}'
                lines.append(f'{{"process": {name(ev.process)}, "type": {name(ev.type)}, "op": {name(ev.op)}, '
                             f'"args": {args}, "time": {t if type(t) is int else encode(t)}, '
                             f'"result": {"null" if r is None else encode(r)}{kind}}}\n')
                if n % TICK == 0:
                    f.writelines(lines)
                    lines.clear()
                    if tick is not None:
                        tick(TICK)
            f.writelines(lines)
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
                    ev = Event(str(d["process"]), str(d["type"]), str(d["op"]), dict(d.get("args") or {}), int(d["time"]),
                               d.get("result"), _outcome(d))
                except (ValueError, KeyError, TypeError) as e:
                    raise HistoryError(f"{path}:{n}: malformed event: {e}") from None
                if ev.type not in TYPES:
                    raise HistoryError(f"{path}:{n}: unknown event type {ev.type!r}")
                h.events.append(ev)
        return h

    def ops(self) -> list[Op]:
        """The clients' ops: invocations paired with completions per process; an unfinished
        op is ``info``.  Nemesis faults are left out (``faults``)."""
        return pair(self._of(faults=False))

    def faults(self) -> list[Op]:
        """The nemesis faults as ops: ``start`` when injected, ``end`` when lifted."""
        return pair(self._of(faults=True))

    def _of(self, faults: bool) -> list[Event]:
        """The events of the nemesis or of the clients; each process name judged once (a
        history has a few processes and up to a million events)."""
        nemesis = {p for p in {ev.process for ev in self.events} if is_fault(p)}
        if not nemesis:
            return [] if faults else self.events
        return [ev for ev in self.events if (ev.process in nemesis) == faults]


def _outcome(d: dict[str, Any]) -> str | None:
    got = d.get("outcome")
    return got if isinstance(got, str) else None


def pair(events: Iterable[Event]) -> list[Op]:
    pending: dict[str, Op] = {}
    out: list[Op] = []
    for ev in sorted(events, key=_time):
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
        op_.outcome = None if is_fault(ev.process) else recorded_outcome(ev.op, ev.type, ev.result, ev.outcome)
        op_.end = None if ev.type == "info" else ev.time
    return out
