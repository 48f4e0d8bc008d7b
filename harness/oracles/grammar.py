"""The store's text grammar, written from SPEC.md: index lines, safe filenames, dates, slugs.

Every oracle parses stores with these, never with ``reference.index``: the reference is one
implementation under test, and a defect in its grammar must fail an oracle, not pass it.
``tests/harness/test_oracle_grammar.py`` holds each function to the reference's on generated
inputs; a difference means one of the two is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from reference.text import WS_CLASS, js_lower

_WS = WS_CLASS[1:-1]
_ENTRY = re.compile(f"([{_WS}]*-[{_WS}]+\\[)([^\\]]+)(\\]\\(([^)]+)\\))([^\\n\\r\\u2028\\u2029]*)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2})?")
_UNSAFE = re.compile("[\\\\/\\[\\]()\x00-\x1f\x7f]")


def safe_filename(name: str) -> bool:
    low = js_lower(name)
    return (
        low.endswith(".md") and low != "memory.md" and not name.startswith(".")
        and ".." not in name and _UNSAFE.search(name) is None
    )


@dataclass(frozen=True)
class Line:
    prefix: str
    name: str
    mid: str
    filename: str
    rest: str

    @property
    def pinned(self) -> bool:
        return "[pin]" in self.rest

    def render(self, rest: str | None = None) -> str:
        return self.prefix + self.name + self.mid + (self.rest if rest is None else rest)


def parse(line: str) -> Line | None:
    m = _ENTRY.match(line)
    if m is None or not safe_filename(m.group(4)):
        return None
    return Line(m.group(1), m.group(2), m.group(3), m.group(4), m.group(5))


def first_date(rest: str) -> str | None:
    m = _DATE.search(rest)
    return m.group(0) if m else None


def date_ms(text: str) -> int | None:
    """Valid dates only; the machines plant no roll-over or hour-24 forms (S-FMT-11)."""
    try:
        if len(text) == 10:
            d = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        else:
            d = datetime.fromisoformat(text)
    except ValueError:
        return None
    return int(d.timestamp() * 1000)


def to_slug(topic: str) -> str:
    """S-FMT-8 (to be written from SPEC; the reference's slug until then)."""
    from reference.index import to_slug as reference_slug

    return reference_slug(topic)
