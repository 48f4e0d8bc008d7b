"""Registered tools, their parameter validation and results, and the ``/memory`` command.

S-TOOLS-1..14.  The host validates tool parameters against the schemas before calling; we give
the schemas and a validator for them.  The command talks to the user through a ``CommandUi``
(notify, confirm, send a message, browse), so it runs headless in tests and in the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .compaction import build_consolidation_prompt
from .config import render_rules_to_markdown
from .store import IndexEntry, Store
from .text import UNDEFINED, js_lower, trim

WRITE_DESCRIPTION = (
    "Create or append to a long-term memory topic file; the MEMORY.md index is updated "
    "automatically. Use this instead of raw write/edit tools for memory."
)
TOOLS: dict[str, dict[str, Any]] = {
    "write_memory": {
        "label": "Write Memory",
        "description": WRITE_DESCRIPTION,
        "promptSnippet": "Persist facts, preferences, configs, fixes and discoveries to "
        "long-term memory",
        "promptGuidelines": [
            "Call write_memory when a bug is fixed, the user explicitly states a preference, "
            "or you learn configs, commands or environment facts.",
            "Consult ## Memory Rules for what to persist; when in doubt, persist.",
            'Use mode: "replace" for known state (hardware, config, preferences) and the '
            "default append for new facts.",
        ],
        "parameters": {
            "type": "object",
            "properties": {
                "topic": {"type": "string"},
                "content": {"type": "string"},
                "summary": {"type": "string"},
                "pin": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["append", "replace"]},
            },
            "required": ["topic", "content", "summary"],
        },
    },
    "remove_memory": {
        "label": "Remove Memory",
        "description": "Remove a memory index entry (by name or partial match). Pinned entries "
        "are refused; the topic file is kept on disk.",
        "parameters": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    },
    "pin_memory": {
        "label": "Pin Memory",
        "description": "Pin or unpin a memory index entry. Pinned entries are never cleanup "
        "candidates and never flagged stale.",
        "parameters": {
            "type": "object",
            "properties": {"topic": {"type": "string"}, "pin": {"type": "boolean"}},
            "required": ["topic", "pin"],
        },
    },
}
COMMAND_NAME = "memory"
COMMAND_DESCRIPTION = (
    "Memory: show the index, store text, consolidate, pin <topic>, unpin <topic>, "
    "remove <topic>, search <query>"
)


def validate_params(tool: str, params: object) -> list[str]:
    """Schema errors the host would report (S-TOOLS-2..4); empty when valid."""
    if tool not in TOOLS:
        return [f"unknown tool {tool}"]
    if not isinstance(params, dict):
        return ["parameters must be an object"]
    schema = TOOLS[tool]["parameters"]
    errors = [f"{key}: required" for key in schema["required"] if key not in params]
    for key, rule in schema["properties"].items():
        if key not in params:
            continue
        value = params[key]
        wanted = {"string": str, "boolean": bool}[rule["type"]]
        if not isinstance(value, wanted):
            errors.append(f"{key}: must be {rule['type']}")
        elif "enum" in rule and value not in rule["enum"]:
            errors.append(f"{key}: must be one of {', '.join(rule['enum'])}")
    return errors


def tool_result(text: str) -> dict[str, Any]:
    """S-TOOLS-5."""
    return {"content": [{"type": "text", "text": text}], "details": {}}


def execute_tool(store: Store, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run a tool after validation; raised errors propagate as tool failures."""
    errors = validate_params(tool, params)
    if errors:
        raise ValueError("; ".join(errors))
    if tool == "write_memory":
        text = store.execute_write_memory(
            params["topic"],
            params["content"],
            params["summary"],
            params.get("pin", False),
            params.get("mode", "append"),
            params.get("overwrite", UNDEFINED),
        )
    elif tool == "remove_memory":
        text = store.execute_remove_memory(params["topic"])
    else:
        text = store.execute_pin_memory(params["topic"], params["pin"])
    return tool_result(text)


# --- the /memory command ------------------------------------------------------------------


class CommandUi(Protocol):
    """What the command needs from the host's UI."""

    def notify(self, text: str, level: str) -> None: ...

    def confirm(self, title: str, hint: str, choices: tuple[str, str]) -> bool: ...

    def send_user_message(self, text: str, follow_up: bool) -> None: ...

    def is_idle(self) -> bool: ...

    def browse(self, title: str, items: list[tuple[str, str]]) -> tuple[str, int] | None:
        """Show ``(label, description)`` items; return ``(key, index)`` or None on escape."""

    def detail(self, title: str, body: str, metadata: str, actions: list[str]) -> str | None:
        """Show an entry; return the chosen action key or None for Back."""


@dataclass(frozen=True)
class Dispatch:
    """Which verb ``/memory «args»`` selects, and its argument (S-TOOLS-6)."""

    verb: str
    arg: str


def dispatch(args: str) -> Dispatch:
    a = trim(args)
    lowered = js_lower(a)
    if a == "":
        return Dispatch("browse", "")
    for prefix in ("remove ", "pin ", "unpin ", "search "):
        if lowered.startswith(prefix):
            return Dispatch(prefix.strip(), trim(a[len(prefix) :]))
    if lowered == "consolidate":
        return Dispatch("consolidate", "")
    return Dispatch("store", a)


def _severity(result: str) -> str:
    return "warning" if "pinned" in js_lower(result) else "info"


def entry_description(entry: IndexEntry) -> str:
    parts = [entry.date]
    if entry.pinned:
        parts.append("pinned")
    if entry.stale:
        parts.append("stale")
    return " · ".join(parts)


def _remove_confirmed(store: Store, ui: CommandUi, label: str, topic: str) -> None:
    if ui.confirm(
        f'Remove "{label}"?',
        "The index entry is removed. The topic file is preserved on disk.",
        ("Cancel", "Yes, remove"),
    ):
        result = store.execute_remove_memory(topic)
        ui.notify(result, _severity(result))


def run_command(store: Store, ui: CommandUi, args: str) -> None:
    """S-TOOLS-6..12."""
    d = dispatch(args)
    if d.verb == "browse":
        entries = store.read_index_entries()
        if not entries:
            ui.notify("Memory index is empty. Use /memory <text> to store something.", "info")
            return
        browse(store, ui, "Memory", entries)
    elif d.verb == "remove":
        _remove_confirmed(store, ui, d.arg, d.arg)
    elif d.verb in ("pin", "unpin"):
        ui.notify(store.execute_pin_memory(d.arg, d.verb == "pin"), "info")
    elif d.verb == "search":
        search(store, ui, d.arg)
    elif d.verb == "consolidate":
        prompt = build_consolidation_prompt(render_rules_to_markdown(store.parse_rules()))
        _send(ui, prompt, "Agent is busy — consolidation queued as follow-up.")
    else:
        message = (
            "Store the following as a memory entry. Decide the topic name, summary, and whether "
            f"to pin it, then call write_memory:\n\n{d.arg}"
        )
        _send(ui, message, "Agent is busy — queued as follow-up.")


def _send(ui: CommandUi, text: str, busy_note: str) -> None:
    if ui.is_idle():
        ui.send_user_message(text, follow_up=False)
    else:
        ui.notify(busy_note, "info")
        ui.send_user_message(text, follow_up=True)


def search(store: Store, ui: CommandUi, query: str) -> None:
    """S-TOOLS-10: only indexed results are shown (B-16)."""
    if query == "":
        ui.notify("Usage: /memory search <query>", "info")
        return
    hits = store.search_memory(query)
    if not hits:
        ui.notify(f'No matches for "{query}"', "info")
        return
    by_file = {e.filename: e for e in store.read_index_entries()}
    shown = list({h.filename: by_file[h.filename] for h in hits if h.filename in by_file}.values())
    noun = "match" if len(shown) == 1 else "matches"
    browse(store, ui, f"Search: {query}  ({len(shown)} {noun})", shown)


def _title(name: str) -> str:
    words = name.split(" ")
    return " ".join(words[:6]) + ("…" if len(words) > 6 else "")


def browse(store: Store, ui: CommandUi, title: str, initial: list[IndexEntry]) -> None:
    """S-TOOLS-13: re-read each round, act by filename, drop vanished entries."""
    wanted = [e.filename for e in initial]
    while True:
        current = {e.filename: e for e in store.read_index_entries()}
        entries = [current[f] for f in wanted if f in current]
        if not entries:
            ui.notify("No entries to display.", "info")
            return
        choice = ui.browse(title, [(e.name, entry_description(e)) for e in entries])
        if choice is None:
            return
        key, i = choice
        entry = entries[i]
        if key == "enter":
            key = _detail(store, ui, entry) or ""
        if key in ("p", "r") and entry.filename not in _indexed_filenames(store):
            continue  # the entry vanished while the UI was open: drop the pending action
        if key == "p":
            ui.notify(store.execute_pin_memory(entry.filename, not entry.pinned), "info")
        elif key == "r":
            _remove_confirmed(store, ui, entry.name, entry.filename)


def _indexed_filenames(store: Store) -> set[str]:
    return {e.filename for e in store.read_index_entries()}


def _detail(store: Store, ui: CommandUi, entry: IndexEntry) -> str | None:
    lines = store.read_topic_content(entry.filename).split("\n")
    body = "\n".join(lines[:6])
    if len(lines) > 6:
        body += f"\n\n*… {len(lines) - 6} more lines ({entry.filename})*"
    meta = [entry.summary, entry.date]
    if entry.pinned:
        meta.append("pinned")
    if entry.stale:
        meta.append("stale")
    actions = ["unpin" if entry.pinned else "pin", "remove", "Back"]
    return ui.detail(_title(entry.name), body, " · ".join(meta), actions)


@dataclass
class ScriptedUi:
    """A ``CommandUi`` that answers from a script and records every interaction.

    Drives ``/memory`` headless (the peer protocol's ``memory_command`` op, tests): answers are
    consumed in order; a missing confirm answer is a dismissal (cancel), a missing browse or
    detail answer is escape/back.
    """

    idle: bool = True
    confirms: list[bool] = field(default_factory=list)
    browses: list[tuple[str, int] | None] = field(default_factory=list)
    details: list[str | None] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def notify(self, text: str, level: str) -> None:
        self.events.append({"notify": text, "level": level})

    def confirm(self, title: str, hint: str, choices: tuple[str, str]) -> bool:
        answer = self.confirms.pop(0) if self.confirms else False
        self.events.append({"confirm": title, "hint": hint, "choices": list(choices), "answer": answer})
        return answer

    def send_user_message(self, text: str, follow_up: bool) -> None:
        self.events.append({"send": text, "followUp": follow_up})

    def is_idle(self) -> bool:
        return self.idle

    def browse(self, title: str, items: list[tuple[str, str]]) -> tuple[str, int] | None:
        answer = self.browses.pop(0) if self.browses else None
        self.events.append(
            {"browse": title, "items": [list(i) for i in items], "answer": list(answer) if answer else None}
        )
        return answer

    def detail(self, title: str, body: str, metadata: str, actions: list[str]) -> str | None:
        answer = self.details.pop(0) if self.details else None
        self.events.append(
            {"detail": title, "body": body, "metadata": metadata, "actions": actions, "answer": answer}
        )
        return answer
