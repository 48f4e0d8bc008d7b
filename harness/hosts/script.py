"""A host scenario's ``host`` block, typed: which hosts it is for, and its script.

A host scenario is a scenario file of the one corpus (``scenarios/hosts/``, the schema's
``host`` block) whose script is a sequence of host actions, each with the model turns it
consumes: ``session`` (a new host process, so a new session), ``new_session`` (a new session
in the running process, pi's ``/new``: module state outlives it), ``prompt`` (a user prompt and
the scripted replies of its run, and of the follow-up runs the extension queues), ``compact``
(manual compaction), ``end`` (the session ends), and the sandbox's file actions (``put_file``,
``mkfifo``, ``plant_lock`` …) between turns (a user editing the store or its configuration).  A
turn reporting ``prompt_tokens`` over the host's threshold makes the host compact by
itself after that run (threshold compaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..gate.scenarios import FILE_ACTIONS as SANDBOX_ACTIONS
from ..gate.scenarios import Scenario
from .fake_model import Turn

HOST_KINDS = ("pi-host", "opencode-host")
SESSION, NEW_SESSION, PROMPT, COMPACT, END = "session", "new_session", "prompt", "compact", "end"
FILE_ACTIONS = SANDBOX_ACTIONS - {"advance_clock"}
# pi compacts when the context passes contextWindow - reserveTokens (128000 - 16384).
THRESHOLD_TOKENS = 111616


@dataclass(frozen=True)
class Action:
    """One step of a host script."""

    do: str
    text: str = ""
    turns: tuple[Turn, ...] = ()
    args: dict[str, Any] | None = None

    @property
    def threshold_at(self) -> int | None:
        """The index of the turn whose reported usage triggers a threshold compaction."""
        for i, t in enumerate(self.turns):
            if t.prompt_tokens >= THRESHOLD_TOKENS:
                return i
        return None


@dataclass(frozen=True)
class HostScript:
    """The typed ``host`` block of a scenario."""

    hosts: tuple[str, ...]
    actions: tuple[Action, ...]
    timeout: float | None = None  # seconds per host step, when the scenario sets its own

    @classmethod
    def of(cls, scenario: Scenario) -> HostScript:
        block = scenario.data.get("host", {})
        actions = tuple(parse_action(a) for a in block.get("script", ()))
        return cls(tuple(block.get("hosts", HOST_KINDS)), actions, block.get("timeout"))


def parse_action(data: dict[str, Any]) -> Action:
    do = str(data["do"])
    turns = tuple(Turn.from_json(t) for t in data.get("model", ()))
    args = {k: v for k, v in data.items() if k not in ("do", "text", "model")} if do in FILE_ACTIONS else None
    return Action(do, str(data.get("text", "")), turns, args)


def is_host_scenario(scenario: Scenario) -> bool:
    return "host" in scenario.data
