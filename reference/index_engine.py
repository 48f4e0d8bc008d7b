"""The index engine seam: what a ``Store`` asks of ``MEMORY.md``, and the plain answers.

A ``Store`` asks an index text a handful of questions (S-WRITE-6, S-IDX-3..8, S-REMOVE-3,
S-PIN-3, S-RETIRE-3, S-DISP-2) and derives the text it publishes from the one it read.  An
``IndexEngine`` turns a text into an ``Index`` that answers them; the ``Store`` asks only
through it, so every operation sees one representation of the index.

``PlainEngine`` answers with the scans of ``reference.index``: the definition, and what a
``Store`` runs unless an entry point injects a faster engine (``reference.index_view``).
Property tests drive a ``Store`` with both engines and compare every byte.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Protocol

from .index import (
    Ambiguous,
    Found,
    IndexLine,
    find_index_entry,
    maintain_index,
    parse_index_line,
    upsert_index_line,
)
from .text import js_lower

# Which filenames are regular files (S-IO-1): a set of names from one listing, or a probe
# for a directory that cannot be listed.
Regular = Container[str] | Callable[[str], bool]


class Index(Protocol):
    """One index text as an engine holds it; derived indexes never change the one they came from."""

    @property
    def lines(self) -> Sequence[str]:
        """The LF-split pieces of the text."""

    @property
    def text(self) -> str:
        """The pieces joined by LF: what publishing this index writes."""

    def entries(self) -> list[IndexLine]:
        """S-DISP-2: every entry line, parsed, in order."""

    def find(self, search: object) -> Found | Ambiguous | None:
        """S-IDX-8 (``find_index_entry``)."""

    def first_pos(self, filename: str) -> int | None:
        """S-IDX-3: the position of the first entry for ``filename``, if any."""

    def file_named(self, name: str) -> str | None:
        """S-WRITE-6: the filename of the last entry whose name equals ``name`` ignoring case."""

    def upserted(self, filename: str, name: str, summary: str, pin: bool, timestamp: str) -> Index:
        """S-IDX-3 (``upsert_index_line``)."""

    def maintained(self, stale_after_days: float, now_ms: int, regular: Regular) -> Index:
        """S-IDX-4..6 (``maintain_index``)."""

    def without(self, pos: int) -> Index:
        """S-REMOVE-3: the line at ``pos`` deleted."""

    def replaced(self, pos: int, line: str) -> Index:
        """S-PIN-3: the line at ``pos`` replaced by ``line``."""

    def dropping(self, filename: str, drop: Callable[[IndexLine], bool]) -> Index:
        """S-RETIRE-3: every entry for ``filename`` that ``drop`` holds for deleted."""


class IndexEngine(Protocol):
    """Turns index texts into ``Index`` values, and hears which ones are about to be published."""

    def read(self, text: str) -> Index:
        """The index of ``text`` (read from disk, or the initial index)."""

    def publishing(self, index: Index) -> str:
        """The text to publish for ``index``; the engine may keep it for the next read."""


def as_predicate(regular: Regular) -> Callable[[str], bool]:
    """``regular`` as the predicate ``maintain_index`` takes."""
    if callable(regular):
        return regular
    return regular.__contains__


class PlainIndex:
    """An index as its list of lines: every question a scan (``reference.index``)."""

    __slots__ = ("_text", "lines")

    def __init__(self, lines: list[str], text: str | None = None) -> None:
        self.lines = lines
        self._text = text

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self.lines)
        return self._text

    def entries(self) -> list[IndexLine]:
        return [entry for entry in map(parse_index_line, self.lines) if entry is not None]

    def find(self, search: object) -> Found | Ambiguous | None:
        return find_index_entry(self.lines, search)

    def first_pos(self, filename: str) -> int | None:
        for pos, line in enumerate(self.lines):
            entry = parse_index_line(line)
            if entry is not None and entry.filename == filename:
                return pos
        return None

    def file_named(self, name: str) -> str | None:
        lowered, found = js_lower(name), None
        for entry in self.entries():
            if entry.name_lower == lowered:
                found = entry.filename
        return found

    def upserted(self, filename: str, name: str, summary: str, pin: bool, timestamp: str) -> PlainIndex:
        return PlainIndex(upsert_index_line(self.lines, filename, name, summary, pin, timestamp))

    def maintained(self, stale_after_days: float, now_ms: int, regular: Regular) -> PlainIndex:
        return PlainIndex(maintain_index(self.lines, stale_after_days, now_ms, as_predicate(regular)))

    def without(self, pos: int) -> PlainIndex:
        return PlainIndex(self.lines[:pos] + self.lines[pos + 1 :])

    def replaced(self, pos: int, line: str) -> PlainIndex:
        lines = list(self.lines)
        lines[pos] = line
        return PlainIndex(lines)

    def dropping(self, filename: str, drop: Callable[[IndexLine], bool]) -> PlainIndex:
        def dropped(line: str) -> bool:
            entry = parse_index_line(line)
            return entry is not None and entry.filename == filename and drop(entry)

        return PlainIndex([line for line in self.lines if not dropped(line)])


class PlainEngine:
    """The plain S-IDX scans: a fresh ``PlainIndex`` per text, nothing kept."""

    def read(self, text: str) -> PlainIndex:
        return PlainIndex(text.split("\n"), text)

    def publishing(self, index: Index) -> str:
        return index.text
