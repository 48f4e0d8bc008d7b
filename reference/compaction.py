"""The post-compaction decision and the consolidation prompts (S-COMPACT-1..4)."""

from __future__ import annotations

import re

from .config import Rules
from .index import require_string
from .text import is_truthy, js_lower

_INCOMPLETE = re.compile(
    r"\b(?:need to|waiting for|next step|pending|not done|incomplete|unfinished)\b",
    re.ASCII | re.IGNORECASE,
)

CONSOLIDATE, CONTINUE, NONE = "consolidate", "continue", "none"


def detect_incomplete_task(text: object) -> bool:
    """S-COMPACT-1: ASCII word-bounded keywords after ECMAScript lowercasing."""
    lowered = js_lower(require_string(text, "handoffText"))
    return _INCOMPLETE.search(lowered) is not None


def decide_compaction_action(rules: Rules, handoff: object) -> dict[str, str]:
    """S-COMPACT-2: consolidate > auto-resume > unfinished handoff > nothing."""
    if is_truthy(rules.consolidate_on_compact):
        return {"action": CONSOLIDATE}
    if is_truthy(rules.auto_resume_after_threshold):
        return {"action": CONTINUE}
    if is_truthy(handoff) and detect_incomplete_task(handoff):
        return {"action": CONTINUE}
    return {"action": NONE}


_INSTRUCTIONS = """\
For each item worth keeping, call write_memory with topic, content, summary and mode \
("replace" for known state, "append" for new facts).

- Skip anything already present in the ## Global Memory index.
- Skip ephemeral or session-specific items that will not matter next session.
- Skip large code blocks: summarise them or reference the file path instead.
- Combine closely related facts into one topic instead of many small ones.
- Do not write a session recap. Never write a topic whose slug is last-session-recap: \
session orientation is managed in HANDOFF.md, not in memory topics."""


def _with_rules(text: str, rules_markdown: str) -> str:
    return f"{text}\n\n{rules_markdown}" if rules_markdown else text


def build_consolidation_prompt(rules_markdown: str) -> str:
    """S-COMPACT-3 (wording ours; required and forbidden texts per the clause)."""
    head = _with_rules(
        "Review the conversation history above and persist to long-term memory only what "
        "belongs there under the current Memory Rules.",
        rules_markdown,
    )
    return f"{head}\n\n{_INSTRUCTIONS}"


def build_compaction_consolidation_prompt(summary: str, rules_markdown: str) -> str:
    """S-COMPACT-4: the compaction summary, then the same instructions."""
    head = _with_rules(
        "The following is the session summary that pi generated during context compaction:\n\n"
        f"{summary}\n\n"
        "Review this summary and persist to long-term memory only what belongs there under "
        "the current Memory Rules.",
        rules_markdown,
    )
    return f"{head}\n\n{_INSTRUCTIONS}"
