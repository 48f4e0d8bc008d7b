"""Topic files: frontmatter recognition and merge, bodies, the collision name probe.

Pure text functions for S-FMT-9, S-FMT-10, S-WRITE-7 (name probe), S-WRITE-9 and S-WRITE-10.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .jsjson import json_parse
from .text import LINE_START, WS_CLASS, js_lower, json_string, trim, trim_start

DEFAULT_FRONTMATTER = "metadata:\n  node_type: memory"

_BLOCK = re.compile("---\\r?\\n([\\s\\S]*?)\\r?\\n---\\r?\\n")
_PROBE = re.compile("---\\r?\\n([\\s\\S]*?)\\r?\\n---")
_NAME_LINE = re.compile(LINE_START + "name:" + WS_CLASS + "*([^\\n\\r\\u2028\\u2029]+)")


@dataclass(frozen=True)
class Parsed:
    """A topic text split at its frontmatter block (S-FMT-10 a)."""

    frontmatter: str | None  # G, or None when the text has no block
    body: str  # the text after the block, or the whole text


def split_block(text: str) -> Parsed:
    m = _BLOCK.match(text)
    if m is None:
        return Parsed(None, text)
    return Parsed(m.group(1), text[m.end() :])


def probe_name(text: str) -> str | None:
    """S-WRITE-7: the frontmatter ``name:`` value of a collision candidate, decoded."""
    m = _PROBE.match(text)
    if m is None:
        return None
    found = _NAME_LINE.search(m.group(1))
    if found is None:
        return None
    value = trim(found.group(1))
    if value.startswith('"'):
        try:
            decoded = json_parse(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, str) else value
    if value.startswith("'"):
        value = value[1:]
    if value.endswith("'"):
        value = value[:-1]
    return value


def names_topic(text: str, topic: str) -> bool:
    name = probe_name(text)
    return name is not None and js_lower(name) == js_lower(topic)


@lru_cache(maxsize=64)
def _line_pattern(key: str) -> re.Pattern[str]:
    return re.compile(LINE_START + re.escape(key) + ":[^\\n\\r\\u2028\\u2029]*")


def set_field(frontmatter: str, key: str, value: str) -> str:
    """Replace the first ``key:`` line (literally), or append one."""
    replacement = f"{key}: {value}"
    pattern = _line_pattern(key)
    if pattern.search(frontmatter):
        return pattern.sub(lambda _m: replacement, frontmatter, count=1)
    return f"{frontmatter}\n{replacement}"


def has_field(frontmatter: str, key: str) -> bool:
    return _line_pattern(key).search(frontmatter) is not None


def merge_frontmatter(previous: str | None, topic: str, summary: str, timestamp: str) -> str:
    """S-WRITE-9: refresh name, description, last_updated; add created only if absent.

    Whether ``created`` is needed is decided on the frontmatter as it was, before any field
    is set (as the JS core does: B-18, a topic holding U+2028 + ``created:``).
    """
    fm = DEFAULT_FRONTMATTER if previous is None else previous.replace("\r\n", "\n")
    needs_created = not has_field(fm, "created")
    fm = set_field(fm, "name", json_string(topic))
    fm = set_field(fm, "description", json_string(summary))
    fm = set_field(fm, "last_updated", timestamp)
    if needs_created:
        fm = set_field(fm, "created", timestamp)
    return fm


def compose_topic(
    previous_text: str | None,
    topic: str,
    summary: str,
    content: str,
    replace: bool,
    timestamp: str,
    utc_day: str,
) -> str:
    """S-WRITE-9/10: the complete new text of a topic file."""
    parsed = split_block(previous_text) if previous_text is not None else Parsed(None, "")
    fm = merge_frontmatter(parsed.frontmatter, topic, summary, timestamp)
    if previous_text is None or replace:
        body = f"\n{content}\n"
    else:
        body = f"{parsed.body}\n## {utc_day}\n\n{content}\n"
    return f"---\n{fm}\n---\n{body}"


def display_body(text: str) -> str:
    """S-DISP-3: the body after a block with leading whitespace removed, else the text."""
    parsed = split_block(text)
    if parsed.frontmatter is None:
        return text
    return trim_start(parsed.body)
