"""``ViewEngine``: index texts parsed once and indexed for the questions a write asks (S-IDX-3..8).

A write asks of ``MEMORY.md``: which file holds this topic name (S-WRITE-6), where is the
first entry for a filename (S-IDX-3), and what does maintenance change (S-IDX-4..6).  Asking
each by scanning every line made a write cost Python work per entry.  A view answers them
from maps, and the view of the text a write publishes is *derived* from the one it read (a
line replaced, appended or removed), so the next operation that reads that text back finds it
ready.

Every answer equals the scan's: the scans in ``index`` stay the definition (``PlainEngine``
in ``index_engine`` runs them), anything unusual (a repeated filename or name, an orphan, an
entry renamed by an edit) falls back to them, and the tests compare the two on random indexes
and edit sequences, and a ``Store`` driven by each engine on random operations.  A speed path,
so a choice made at the edge: ``serve``, the CLI and the bench inject a ``ViewEngine``.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field

from .index import (
    DAY_MS,
    PIN_TOKEN,
    STALE_TOKEN,
    Ambiguous,
    Found,
    IndexLine,
    find_date,
    find_index_entry,
    maintain_index,
    parse_date_ms,
    parse_index_line,
    render_entry,
    require_string,
    restamp,
)
from .index_engine import Index, Regular
from .text import js_lower

_HEALABLE = " " + STALE_TOKEN


@dataclass
class _Stamps:
    """Which lines (by id) restamping (S-IDX-6) can change, by the line's first date.

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

    def add(self, line_id: int, line: str, entry: IndexLine) -> None:
        if len(line) != entry.length:
            self.cut.add(line_id)
        key = self._key(entry)
        if key is None:
            return
        kind, ms = key
        if kind == "healing":
            self.healing.add(line_id)
        else:
            insort(self.unmarked if kind == "unmarked" else self.marked, (ms, line_id))

    def discard(self, line_id: int, entry: IndexLine) -> None:
        self.cut.discard(line_id)
        key = self._key(entry)
        if key is None:
            return
        kind, ms = key
        if kind == "healing":
            self.healing.discard(line_id)
            return
        held = self.unmarked if kind == "unmarked" else self.marked
        del held[bisect_left(held, (ms, line_id))]

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
        """Ids of the lines maintenance rewrites at ``now_ms``."""
        out = set(self.cut)
        if not stale_after_days > 0:
            return out  # maintenance does not restamp (S-IDX-6): only cut lines change

        def old(ms: float) -> bool:
            return math.floor((now_ms - ms) / DAY_MS) > stale_after_days

        out |= self.healing
        n = _first_false(self.unmarked, old)  # old ones are a prefix
        out.update(line_id for _, line_id in self.unmarked[:n])
        n = _first_false(self.marked, old)  # young ones are a suffix
        out.update(line_id for _, line_id in self.marked[n:])
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

    Lines carry stable ids, ascending in line order, and the maps hold ids, so deleting a
    line shifts nothing: a position is found by bisecting ``ids``.  Treat a view as
    immutable: derived views copy what they change, because the text a view was read from
    can come back (a rollback republishes it) and must find the same view.
    """

    __slots__ = (
        "_text",
        "entry_count",
        "exact",
        "first_at",
        "ids",
        "last_named",
        "lines",
        "parsed",
        "stamps",
    )

    def __init__(self, lines: list[str], text: str | None = None) -> None:
        self.lines = lines
        self._text = text
        self.ids = list(range(len(lines)))
        self.parsed: list[IndexLine | None] = list(map(parse_index_line, lines))
        self.first_at: dict[str, int] = {}  # filename -> id of its first entry
        self.last_named: dict[str, str] = {}  # lowered name -> filename of its last entry
        self.exact: dict[str, int] = {}  # lowered name or filename -> id of the first entry
        self.stamps = _Stamps()
        self.entry_count = 0
        for line_id, (line, entry) in enumerate(zip(lines, self.parsed, strict=True)):
            if entry is not None:
                self._index(line_id, line, entry)

    def _index(self, line_id: int, line: str, entry: IndexLine) -> None:
        """Register an entry that follows every entry already registered."""
        self.entry_count += 1
        self.first_at.setdefault(entry.filename, line_id)
        self.last_named[entry.name_lower] = entry.filename
        self.exact.setdefault(entry.name_lower, line_id)
        self.exact.setdefault(js_lower(entry.filename), line_id)
        self.stamps.add(line_id, line, entry)

    def pos(self, line_id: int) -> int:
        """The position of the line with this id."""
        return bisect_left(self.ids, line_id)

    def first_pos(self, filename: str) -> int | None:
        """Position of the first entry for ``filename`` (S-IDX-3), if any."""
        line_id = self.first_at.get(filename)
        return None if line_id is None else self.pos(line_id)

    def exact_pos(self, search_lower: str) -> int | None:
        """Position of the first entry named or filed exactly so (S-IDX-8 exact step)."""
        line_id = self.exact.get(search_lower)
        return None if line_id is None else self.pos(line_id)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self.lines)
        return self._text

    @property
    def unique_filenames(self) -> bool:
        return len(self.first_at) == self.entry_count

    def _derived(self, lines: list[str], ids: list[int], parsed: list[IndexLine | None]) -> IndexView:
        """A view sharing this one's maps (copy any map before changing it)."""
        view = IndexView.__new__(IndexView)
        view.lines, view.ids, view.parsed, view._text = lines, ids, parsed, None
        view.first_at, view.last_named, view.exact = self.first_at, self.last_named, self.exact
        view.stamps, view.entry_count = self.stamps, self.entry_count
        return view

    # --- derivation -----------------------------------------------------------------------

    def patched(self, changes: dict[int, str], appended: str | None = None) -> IndexView:
        """The view of these lines with ``changes`` (by position) applied and one line appended.

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
        ids = self.ids
        view = self._derived(lines, ids, list(self.parsed))
        if changes or appended is not None:
            view.stamps = self.stamps.copy()
        for (pos, line), old, new in zip(changes.items(), olds, news, strict=True):
            view.parsed[pos] = new
            if old is not None and new is not None:
                view.stamps.discard(ids[pos], old)
                view.stamps.add(ids[pos], line, new)
        if appended is not None:
            entry = parse_index_line(appended)
            new_id = ids[-1] + 1 if ids else 0
            view.ids = [*ids, new_id]
            view.parsed.append(entry)
            if entry is not None:
                view.first_at, view.last_named = dict(self.first_at), dict(self.last_named)
                view.exact = dict(self.exact)
                view._index(new_id, appended, entry)
        return view

    def without(self, pos: int) -> IndexView:
        """The view with the line at ``pos`` deleted (S-REMOVE-3).

        When names, filenames or lookup keys repeat, which entry a key answers may change, so
        the view is rebuilt.
        """
        lines = self.lines[:pos] + self.lines[pos + 1 :]
        entry = self.parsed[pos]
        if entry is not None and not (
            self.unique_filenames
            and len(self.last_named) == self.entry_count
            and len(self.exact) == 2 * self.entry_count
        ):
            return IndexView(lines)
        view = self._derived(lines, self.ids[:pos] + self.ids[pos + 1 :], self.parsed[:pos] + self.parsed[pos + 1 :])
        if entry is not None:
            view.entry_count -= 1
            view.first_at, view.last_named, view.exact = dict(self.first_at), dict(self.last_named), dict(self.exact)
            del view.first_at[entry.filename], view.last_named[entry.name_lower]
            del view.exact[entry.name_lower], view.exact[js_lower(entry.filename)]
            view.stamps = self.stamps.copy()
            view.stamps.discard(self.ids[pos], entry)
        return view

    # --- the questions --------------------------------------------------------------------

    def find(self, search: object) -> Found | Ambiguous | None:
        """S-IDX-8 (``find_index_entry``) on the view: an exact key from the map, else the scan."""
        pos = self.exact_pos(js_lower(require_string(search, "search")))
        if pos is None:
            return find_index_entry(self.lines, search)
        entry = self.parsed[pos]
        assert entry is not None
        return Found(pos, entry)

    def entries(self) -> list[IndexLine]:
        """S-DISP-2: the entries, parsed when the view was built."""
        return [entry for entry in self.parsed if entry is not None]

    def file_named(self, name: str) -> str | None:
        """S-WRITE-6: the filename of the last entry with this name, from the map."""
        return self.last_named.get(js_lower(name))

    def replaced(self, pos: int, line: str) -> IndexView:
        """S-PIN-3: one line changed."""
        return self.patched({pos: line})

    def dropping(self, filename: str, drop: Callable[[IndexLine], bool]) -> IndexView:
        """S-RETIRE-3: with no entry for ``filename`` nothing changes; one entry, one deletion."""
        pos = self.first_pos(filename)
        if pos is None:
            return self
        if self.unique_filenames:
            entry = self.parsed[pos]
            assert entry is not None
            return self.without(pos) if drop(entry) else self
        kept = [
            line
            for line, entry in zip(self.lines, self.parsed, strict=True)
            if entry is None or entry.filename != filename or not drop(entry)
        ]
        return self if len(kept) == len(self.lines) else IndexView(kept)

    def upserted(self, filename: str, name: str, summary: str, pin: bool, timestamp: str) -> IndexView:
        """S-IDX-3 (``upsert_index_line``) on the view."""
        pos = self.first_pos(filename)
        if pos is None:
            return self.patched({}, render_entry(name, filename, pin, timestamp, summary))
        held = self.parsed[pos]
        assert held is not None
        line = render_entry(name, filename, held.pinned or pin, timestamp, summary)
        return self.patched({pos: line})

    def maintained(self, stale_after_days: float, now_ms: int, regular: Regular) -> IndexView:
        """S-IDX-4..6 (``maintain_index``) on the view.

        With a set of regular names and no repeated filename or orphan, only the lines that
        restamping changes are rebuilt; anything else runs the full maintenance.
        """
        if isinstance(regular, (set, frozenset)) and self.unique_filenames and self.first_at.keys() <= regular:
            stamping = stale_after_days > 0
            changes: dict[int, str] = {}
            for pos in sorted(map(self.pos, self.stamps.changing(stale_after_days, now_ms))):
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


# --- the engine ---------------------------------------------------------------------------

_KEEP = 8


class ViewEngine:
    """Views of the texts this process read or published lately, so a read finds its view ready.

    Views are immutable, so one engine may serve several stores and threads; the text a view
    was read from can come back (a rollback republishes it) and finds the same view.
    """

    def __init__(self, keep: int = _KEEP) -> None:
        self._views: list[IndexView] = []
        self._lock = threading.Lock()
        self._keep = keep

    def read(self, text: str) -> IndexView:
        """The view of an index text, reused when this engine has seen (or published) it."""
        with self._lock:
            for i, view in enumerate(self._views):
                if view._text is not None and len(view._text) == len(text) and view._text == text:
                    if i:
                        self._views.insert(0, self._views.pop(i))
                    return view
        view = IndexView(text.split("\n"), text)
        self._remember(view)
        return view

    def publishing(self, index: Index) -> str:
        """The text of a view about to be published, kept for the next read of that text."""
        if isinstance(index, IndexView):
            self._remember(index)
        return index.text

    def _remember(self, view: IndexView) -> None:
        view.text  # noqa: B018 - the join happens once, here
        if not view.lines:
            # no pieces publishes "", which reads back as one empty piece (S-FMT-5): a write
            # into it appends after that piece (S-IDX-3), so this view must not stand for ""
            return
        with self._lock:
            self._views.insert(0, view)
            del self._views[self._keep :]
