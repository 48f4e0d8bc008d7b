"""``memory.jsonc``: JSONC stripping, field extraction and clamps, rendering (S-CFG-1..11).

Pure functions only; bootstrap and reading (which touch the disk) live in ``Store``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

from .jsjson import json_parse
from .text import WS_CLASS, is_js_number, to_string

MAX_LINES = 300
DEFAULT_STALE_DAYS = 180
DEFAULT_INJECT_INTERVAL = 5
DEFAULT_HANDOFF_KEEP = 3
DEFAULT_AUTO_RESUME_AFTER_THRESHOLD = False
DEFAULT_CONSOLIDATE_ON_COMPACT = False
DEFAULT_SHARED_DIR = False


@dataclass
class Rules:
    """The parsed configuration record (S-CFG-1 fallbacks as defaults)."""

    always_persist: list[Any] = field(default_factory=list)
    never_persist: list[Any] = field(default_factory=list)
    always_ask: list[Any] = field(default_factory=list)
    max_lines: float = MAX_LINES
    stale_after_days: float = DEFAULT_STALE_DAYS
    inject_every_n_turns: float = DEFAULT_INJECT_INTERVAL
    handoff_keep: float = DEFAULT_HANDOFF_KEEP
    auto_resume_after_threshold: bool = DEFAULT_AUTO_RESUME_AFTER_THRESHOLD
    consolidate_on_compact: bool = DEFAULT_CONSOLIDATE_ON_COMPACT
    shared_dir: bool = DEFAULT_SHARED_DIR

    def to_js(self) -> dict[str, Any]:
        """The record with the JS core's camelCase keys, in its order."""
        return {_CAMEL[f.name]: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_js(cls, record: dict[str, Any]) -> Rules:
        """A record given as JS keys (e.g. through the peer protocol); absent keys fall back."""
        base = cls()
        for f in fields(cls):
            key = _CAMEL[f.name]
            if key in record:
                setattr(base, f.name, record[key])
        return base


_CAMEL = {
    "always_persist": "alwaysPersist",
    "never_persist": "neverPersist",
    "always_ask": "alwaysAsk",
    "max_lines": "maxLines",
    "stale_after_days": "staleAfterDays",
    "inject_every_n_turns": "injectEveryNTurns",
    "handoff_keep": "handoffKeep",
    "auto_resume_after_threshold": "autoResumeAfterThreshold",
    "consolidate_on_compact": "consolidateOnCompact",
    "shared_dir": "sharedDir",
}

# S-CFG-3: the default file.  Key order and values are normative; comment wording is ours.
DEFAULT_CONFIG_TEXT = """{
  // What to persist to long-term memory without asking.
  "always_persist": [
    "Any issue solved or fixed",
    "User preferences explicitly stated by the user",
    "Server or infrastructure configuration discovered or changed",
    "Reusable commands or workflows identified",
    "Hardware, model, or environment facts learned"
  ],
  // What never belongs in long-term memory.
  "never_persist": [
    "Code patterns derivable from the codebase or git history",
    "Debugging fix recipes — the fix is in the commit, not in memory",
    "Ephemeral task state that won't apply next session",
    "Things already documented in AGENTS.md or CLAUDE.md",
    "Large code blocks — summarize or link to the file path instead"
  ],
  // What to ask the user about before persisting.
  "always_ask": [
    "Credentials, tokens, API keys",
    "Personal data",
    "Anything the user marks as private or ephemeral"
  ],
  // Lines of MEMORY.md injected into the prompt (valid range 50-1000).
  "max_lines": 300,
  // Entries older than this many days are flagged [stale?]; 0 disables stale flagging.
  "stale_after_days": 180,
  // Re-inject the memory index every N prompts; 1 means every prompt.
  "inject_every_n_turns": 5,
  // Compaction handoff sections kept in HANDOFF.md; 0 disables handoffs.
  "handoff_keep": 3,
  // After a threshold compaction, send "Continue." so the agent resumes on its own.
  "auto_resume_after_threshold_compaction": false,
  // After a threshold compaction, ask the agent to consolidate the summary into memory.
  "consolidate_on_compact": false,
  // Keep the index and topics in ~/.agents/memory, shared with OpenCode.
  // Only MEMORY.md and topic files move; this file and HANDOFF.md stay here.
  "shared_dir": false
}
"""


# A JSON string literal as the JSONC stripper sees it: ``"`` opens and closes, a backslash
# escapes the next character, an unterminated literal runs to the end of the text.
_STRING = r'"(?:[^"\\]|\\[\s\S])*"?'
_COMMENTS = re.compile(_STRING + r"|//[^\n]*\n?")
_TRAILING_COMMAS = re.compile(_STRING + "|," + r"(?=" + WS_CLASS + r"*[}\]])")


def strip_jsonc(text: str) -> str:
    """S-CFG-5: drop ``//`` comments (each with its LF → one LF), then trailing commas.

    Both passes skip string literals, so ``//`` and ``,]`` inside strings survive.  A comma
    is trailing when its next non-whitespace character (S-FMT-2 set) is ``}`` or ``]``.
    """
    if "/" in text:
        text = _COMMENTS.sub(lambda m: m.group() if m.group().startswith('"') else "\n", text)
    return _TRAILING_COMMAS.sub(lambda m: m.group() if m.group().startswith('"') else "", text)


class ConfigParseError(Exception):
    """A parse or extraction failure; its text becomes the S-CFG-8 diagnostic."""


Values = tuple[tuple[list[Any], list[Any], list[Any]], tuple[Any, ...]]


def rules_from_text(text: str) -> Rules:
    """S-CFG-5..7: strip, parse as ``JSON.parse``, extract with clamps; a fresh record."""
    values, error = _extracted(text)
    if error is not None:
        raise ConfigParseError(error)
    if values is None:
        return Rules()
    (persist, never, ask), rest = values
    return Rules(list(persist), list(never), list(ask), *rest)  # fresh lists per record, as JS


@lru_cache(maxsize=8)
def _extracted(text: str) -> tuple[Values | None, str | None]:
    """The record's values for a configuration text (None: all fallbacks), or the failure.

    The file is still read on every call (S-CFG-9); only the work on identical text is
    remembered, since every write reads the same configuration twice.
    """
    try:
        data = json_parse(strip_jsonc(text))
    except ValueError as e:
        return None, str(e)
    if data is None:
        return None, "Cannot read properties of null (reading 'always_persist')"
    if not isinstance(data, dict):
        return None, None
    arrays = (
        _array(data.get("always_persist")),
        _array(data.get("never_persist")),
        _array(data.get("always_ask")),
    )
    return (arrays, (
        _clamped(data.get("max_lines"), MAX_LINES, 50, 1000),
        _clamped(data.get("stale_after_days"), DEFAULT_STALE_DAYS, 0, None),
        _clamped(data.get("inject_every_n_turns"), DEFAULT_INJECT_INTERVAL, 1, None),
        _clamped(data.get("handoff_keep"), DEFAULT_HANDOFF_KEEP, 0, None),
        data.get("auto_resume_after_threshold_compaction") is True,
        data.get("consolidate_on_compact") is True,
        data.get("shared_dir") is True,
    )), None


def _array(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []  # a fresh list per record


def _clamped(value: object, fallback: int, low: float, high: float | None) -> float:
    if not is_js_number(value):
        return fallback
    v = float(value)  # type: ignore[arg-type]
    v = max(float(low), v) if not math.isnan(v) else v
    if high is not None:
        v = min(float(high), v)
    return 0.0 if v == 0 else v


def render_rules_to_markdown(rules: Rules) -> str:
    """S-CFG-10: one block per non-empty array, items by ECMAScript ToString."""
    blocks = []
    for heading, items in (
        ("## Always persist", rules.always_persist),
        ("## Never persist", rules.never_persist),
        ("## Always ask before persisting", rules.always_ask),
    ):
        if isinstance(items, list) and items:
            blocks.append("\n".join([heading, *(f"- {to_string(item)}" for item in items)]))
    return "\n\n".join(blocks)
