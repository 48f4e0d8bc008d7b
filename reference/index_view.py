"""An index text parsed once and indexed for the questions a write asks (S-IDX-3..8, S-WRITE-6).

A write asks of ``MEMORY.md``: which file holds this topic name (S-WRITE-6), where is the
first entry for a filename (S-IDX-3), and what does maintenance change (S-IDX-4..6).  Asking
each by scanning every line made a write cost Python work per entry.  A view answers them
from maps, and the view of the text a write publishes is *derived* from the one it read (one
line replaced or appended), so the next operation that reads that text back finds it ready.

Every answer equals the scan's: the scans in ``index`` stay the definition, anything unusual
(a repeated filename, an orphan, a renamed entry, a line removed) falls back to them, and
the tests compare the two on random indexes.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from .index import (
    DAY_MS,
    PIN_TOKEN,
    STALE_TOKEN,
    IndexLine,
    find_date,
    maintain_index,
    parse_date_ms,
    parse_index_line,
    render_entry,
    restamp,
)
from .text import js_lower

_HEALABLE = " " + STALE_TOKEN


@dataclass
class _Stamps:
    """Where restamping (S-IDX-6) can change a line, by the line's first date.

    ``unmarked`` lines gain ``[stale?]`` once old; ``marked`` lines lose it while young;
    ``healing`` lines (an invalid first date) always lose it; ``cut`` lines carry text after
    REST, which maintenance always drops.  "Old" is monotone in the date, so the lines that
    change at a given time are a prefix of ``unmarked`` and a suffix of ``marked``.
    """

    unmarked: list[tuple[float, int]] = field(default_factory=list)
    marked: list[tuple[float, int]] = field(default_factory=list)
    healing: set[int] = field(default_factory=set)
    cut: set[int] = field(default_factory=set)

    def copy(self) -> _Stamps:
        return _Stamps(list(self.unmarked), list(self.marked), set(self.healing), set(self.cut))

    def add(self, pos: int, line: str, entry: IndexLine) -> None:
        if len(line) != entry.length:
            self.cut.add(pos)
        key = self._key(entry)
        if key is None:
            return
        kind, ms = key
        if kind == "healing":
            self.healing.add(pos)
        else:
            insort(self.unmarked if kind == "unmarked" else self.marked, (ms, pos))

    def discard(self, pos: int, entry: IndexLine) -> None:
        self.cut.discard(pos)
        key = self._key(entry)
        if key is None:
            return
        kind, ms = key
        if kind == "healing":
            self.healing.discard(pos)
            return
        held = self.unmarked if kind == "unmarked" else self.marked
        del held[bisect_left(held, (ms, pos))]

    def shifted(self, pos: int, entry: IndexLine | None) -> _Stamps:
        """These stamps after deleting the line at ``pos`` (holding ``entry``)."""
        out = self.copy()
        if entry is not None:
            out.discard(pos, entry)

        def down(p: int) -> int:
            return p - 1 if p > pos else p

        out.unmarked = [(ms, down(p)) for ms, p in out.unmarked]
        out.marked = [(ms, down(p)) for ms, p in out.marked]
        out.healing = {down(p) for p in out.healing}
        out.cut = {down(p) for p in out.cut}
        return out

    @staticmethod
    def _key(entry: IndexLine) -> tuple[str, float] | None:
        rest = entry.rest
        if PIN_TOKEN in rest:
            return None
        date = find_date(rest)
        if date is None:
            return None
        ms = parse_date_ms(date)
        if ms is None:
            return ("healing", 0.0) if _HEALABLE in rest else None
        if STALE_TOKEN not in rest:
            return ("unmarked", ms)
        return ("marked", ms) if _HEALABLE in rest else None

    def changing(self, stale_after_days: float, now_ms: int) -> set[int]:
        """Positions whose line maintenance rewrites at ``now_ms``."""
        out = set(self.cut)
        if not stale_after_days > 0:
            return out  # maintenance does not restamp (S-IDX-6): only cut lines change

        def old(ms: float) -> bool:
            return math.floor((now_ms - ms) / DAY_MS) > stale_after_days

        out |= self.healing
        n = _first_false(self.unmarked, old)  # old ones are a prefix
        out.update(pos for _, pos in self.unmarked[:n])
        n = _first_false(self.marked, old)  # young ones are a suffix
        out.update(pos for _, pos in self.marked[n:])
        return out


def _first_false(items: list[tuple[float, int]], holds: Callable[[float], bool]) -> int:
    """First index where ``holds`` is false, for a predicate true on a prefix."""
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(items[mid][0]):
            lo = mid + 1
        else:
            hi = mid
    return lo


class IndexView:
    """The LF-split pieces of one index text, parsed, with the maps a write consults.

    Treat a view as immutable: derived views copy what they change, because the text a view
    was read from can come back (a rollback republishes it) and must find the same view.
    """

    __slots__ = (
        "_text",
        "entries",
        "exact",
        "first_at",
        "last_named",
        "lines",
        "parsed",
        "stamps",
    )

    def __init__(self, lines: list[str], text: str | None = None) -> None:
        self.lines = lines
        self._text = text
        self.parsed: list[IndexLine | None] = list(map(parse_index_line, lines))
        self.first_at: dict[str, int] = {}
        self.last_named: dict[str, str] = {}
        self.exact: dict[str, int] = {}
        self.stamps = _Stamps()
        self.entries = 0
        for pos, (line, entry) in enumerate(zip(lines, self.parsed, strict=True)):
            if entry is not None:
                self._index(pos, line, entry)

    def _index(self, pos: int, line: str, entry: IndexLine) -> None:
        """Register an entry that follows every entry already registered."""
        self.entries += 1
        self.first_at.setdefault(entry.filename, pos)
        self.last_named[entry.name_lower] = entry.filename
        self.exact.setdefault(entry.name_lower, pos)
        self.exact.setdefault(js_lower(entry.filename), pos)
        self.stamps.add(pos, line, entry)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self.lines)
        return self._text

    @property
    def unique_filenames(self) -> bool:
        return len(self.first_at) == self.entries

    # --- derivation -----------------------------------------------------------------------

    def patched(self, changes: dict[int, str], appended: str | None = None) -> IndexView:
        """The view of these lines with ``changes`` applied and one line appended.

        Cheap when every changed entry keeps its filename and name; otherwise rebuilt.
        """
        lines = list(self.lines)
        for pos, line in changes.items():
            lines[pos] = line
        if appended is not None:
            lines.append(appended)
        olds = [self.parsed[pos] for pos in changes]
        news = [parse_index_line(line) for line in changes.values()]
        for old, new in zip(olds, news, strict=True):
            if (old is None) != (new is None) or (
                old is not None
                and new is not None
                and (old.filename != new.filename or old.name_lower != new.name_lower)
            ):
                return IndexView(lines)
        view = IndexView.__new__(IndexView)
        view.lines, view._text = lines, None
        view.parsed = list(self.parsed)
        view.first_at, view.entries = self.first_at, self.entries
        view.last_named, view.exact = self.last_named, self.exact
        view.stamps = self.stamps.copy() if changes or appended is not None else self.stamps
        for (pos, line), old, new in zip(changes.items(), olds, news, strict=True):
            view.parsed[pos] = new
            if old is not None and new is not None:
                view.stamps.discard(pos, old)
                view.stamps.add(pos, line, new)
        if appended is not None:
            entry = parse_index_line(appended)
            view.parsed.append(entry)
            if entry is not None:
                view.first_at, view.last_named = dict(self.first_at), dict(self.last_named)
                view.exact = dict(self.exact)
                view._index(len(lines) - 1, appended, entry)
        return view

    def without(self, pos: int) -> IndexView:
        """The view with the line at ``pos`` deleted (S-REMOVE-3).

        Later positions shift down by one; when names, filenames or lookup keys repeat, which
        entry a key answers may change, so the view is rebuilt.
        """
        lines = self.lines[:pos] + self.lines[pos + 1 :]
        entry = self.parsed[pos]
        if entry is not None and not (
            self.unique_filenames
            and len(self.last_named) == self.entries
            and len(self.exact) == 2 * self.entries
        ):
            return IndexView(lines)

        def shift(d: dict[str, int]) -> dict[str, int]:
            return {k: (v - 1 if v > pos else v) for k, v in d.items()}

        view = IndexView.__new__(IndexView)
        view.lines, view._text = lines, None
        view.parsed = self.parsed[:pos] + self.parsed[pos + 1 :]
        view.first_at, view.exact = shift(self.first_at), shift(self.exact)
        view.last_named, view.entries = self.last_named, self.entries
        view.stamps = self.stamps.shifted(pos, entry)
        if entry is not None:
            view.entries -= 1
            del view.first_at[entry.filename]
            del view.exact[entry.name_lower], view.exact[js_lower(entry.filename)]
            view.last_named = dict(self.last_named)
            del view.last_named[entry.name_lower]
        return view

    # --- the questions --------------------------------------------------------------------

    def upserted(self, filename: str, name: str, summary: str, pin: bool, timestamp: str) -> IndexView:
        """S-IDX-3 (``upsert_index_line``) on the view."""
        pos = self.first_at.get(filename)
        if pos is None:
            return self.patched({}, render_entry(name, filename, pin, timestamp, summary))
        held = self.parsed[pos]
        assert held is not None
        line = render_entry(name, filename, held.pinned or pin, timestamp, summary)
        return self.patched({pos: line})

    def maintained(
        self, stale_after_days: float, now_ms: int, regular: Container[str] | Callable[[str], bool]
    ) -> IndexView:
        """S-IDX-4..6 (``maintain_index``) on the view.

        With a set of regular names and no repeated filename or orphan, only the lines that
        restamping changes are rebuilt; anything else runs the full maintenance.
        """
        if isinstance(regular, (set, frozenset)) and self.unique_filenames and self.first_at.keys() <= regular:
            stamping = stale_after_days > 0
            changes: dict[int, str] = {}
            for pos in sorted(self.stamps.changing(stale_after_days, now_ms)):
                entry = self.parsed[pos]
                assert entry is not None
                rest = restamp(entry.rest, stale_after_days, now_ms) if stamping else entry.rest
                line = self.lines[pos]
                if rest != entry.rest or len(line) != entry.length:
                    changes[pos] = entry.prefix + entry.name + entry.mid + rest
            return self.patched(changes) if changes else self
        is_regular = regular.__contains__ if isinstance(regular, (set, frozenset)) else regular
        assert callable(is_regular)
        return IndexView(maintain_index(self.lines, stale_after_days, now_ms, is_regular))

    def find(self, search_lower: str) -> IndexLine | None:
        """The first entry named or filed exactly as ``search_lower`` (S-IDX-8 exact step)."""
        pos = self.exact.get(search_lower)
        return None if pos is None else self.parsed[pos]


# --- the cache ------------------------------------------------------------------------------

_VIEWS: list[IndexView] = []
_VIEWS_LOCK = threading.Lock()
_KEEP = 8


def view_of(text: str) -> IndexView:
    """The view of an index text, reused when this process has seen (or written) the text."""
    with _VIEWS_LOCK:
        for i, view in enumerate(_VIEWS):
            if view._text is not None and len(view._text) == len(text) and view._text == text:
                if i:
                    _VIEWS.insert(0, _VIEWS.pop(i))
                return view
    view = IndexView(text.split("\n"), text)
    remember(view)
    return view


def remember(view: IndexView) -> None:
    """Keep a view whose text is about to be published, for the next read of that text."""
    view.text  # noqa: B018 - the join happens once, here
    with _VIEWS_LOCK:
        _VIEWS.insert(0, view)
        del _VIEWS[_KEEP:]
